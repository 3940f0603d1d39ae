"""Optimizers as pure functions: ``init(parameters) -> state`` and
``update(gradients, state, parameters) -> (parameters, state)``.

The built-ins (:class:`Sgd`, :class:`Adam`, :class:`AdamW`) are chains of the built-in
transforms (:func:`chain`, optax's composition: ``AdamW`` is ``chain(scale_by_adam(...),
add_decayed_weights(...), scale_by_learning_rate(...))``), each formula written once in
:class:`SlotOps` and read by the numpy road and by :func:`compiled`'s XLA road. They are
registered in the plugin registry under ``sgd``, ``adam`` and ``adamw``; a third-party
optimizer registered through the ``topos_optimizers`` hook stands beside them (see
``docs/plugins.md``), and may itself be a chain (``docs/optimizers.md``).

Example:
    >>> from topos import Tape, f64
    >>> from topos.optim import Adam
    >>> network, (w, loss) = Tape.record(
    ...     lambda t: (lambda w: (w, (w - 3.0) * (w - 3.0)))(t.parameter(0.0)), element=f64)
    >>> parameters, optimizer = network.parameters(), Adam(learning_rate=0.1)
    >>> state = optimizer.init(parameters)
    >>> for _ in range(300):
    ...     gradients = network.forward(parameters).backward(loss).parameters(parameters)
    ...     parameters, state = optimizer.update(gradients, state, parameters)
    >>> round(parameters.of(w).scalar(), 3)
    3.0
"""

from topos.optim import schedules
from topos.optim.base import (
    LearningRate,
    Optimizer,
    OptimizerError,
    OptimizerFactory,
    OptimizerState,
    Schedule,
    learning_rate_at,
    zeros_like,
)
from topos.optim.chain import Chain, Prelude, SlotOps, Transform, chain
from topos.optim.clipping import (
    add_weight_decay,
    clip_by_global_norm,
    decay_mask,
    global_norm,
    masked,
)
from topos.optim.jitted import CompiledUpdate, compiled
from topos.optim.optimizers import Adam, AdamW, Sgd
from topos.optim.transforms import (
    DecayPolicy,
    add_decayed_weights,
    rank_at_least_two,
    scale_by_adam,
    scale_by_learning_rate,
    trace,
)

__all__ = [
    "Adam",
    "AdamW",
    "Chain",
    "CompiledUpdate",
    "DecayPolicy",
    "LearningRate",
    "Optimizer",
    "OptimizerError",
    "OptimizerFactory",
    "OptimizerState",
    "Prelude",
    "Schedule",
    "Sgd",
    "SlotOps",
    "Transform",
    "add_decayed_weights",
    "add_weight_decay",
    "chain",
    "clip_by_global_norm",
    "compiled",
    "decay_mask",
    "global_norm",
    "learning_rate_at",
    "masked",
    "rank_at_least_two",
    "scale_by_adam",
    "scale_by_learning_rate",
    "schedules",
    "trace",
    "zeros_like",
]
