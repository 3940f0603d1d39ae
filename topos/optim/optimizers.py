"""The built-in optimizers: Sgd (with optional momentum), Adam and AdamW, as chains.

Each is a frozen value holding its hyperparameters and the :class:`~topos.optim.Chain` of
built-in transforms they describe; ``init`` and ``update`` are the chain's, pure (see
:mod:`topos.optim.base`), and ``topos.optim.compiled`` runs the same chain on XLA:

- ``Sgd``: ``chain(scale_by_learning_rate(lr))``, with momentum ``chain(trace(mu, nesterov), ...)``;
- ``Adam``: ``chain(scale_by_adam(b1, b2, eps), scale_by_learning_rate(lr))``;
- ``AdamW``: Adam's chain with ``add_decayed_weights(decay, decay_where)`` before the rate.

They are registered under ``sgd``, ``adam`` and ``adamw`` through the same plugin hook a
third-party optimizer uses, and pass the same conformance suite. Arithmetic runs in the
parameters' element type: a Python number beside a tensor adopts that element, exactly like
``w - g * 0.02`` written by hand, so ``Sgd(0.02)`` reproduces a hand-written step bit for
bit (``tests/test_optim_fast.py`` holds the tensor formulas and compares bits, f32, f64 and
bf16).
"""

from __future__ import annotations

from typing import ClassVar, final

import attrs

from topos.optim.base import (
    LearningRate,
    OptimizerError,
    OptimizerState,
    check_learning_rate,
    check_unit,
)
from topos.optim.chain import Chain
from topos.optim.transforms import (
    DecayPolicy,
    add_decayed_weights,
    check_non_negative,
    check_positive,
    rank_at_least_two,
    scale_by_adam,
    scale_by_learning_rate,
    trace,
)
from topos.state import Parameters

__all__ = ["Adam", "AdamW", "Sgd"]


class _Chained:
    """``init`` and ``update`` of an optimizer that holds its chain in the field ``chain``.

    The chain is built in ``__attrs_post_init__`` from the hyperparameters and left out of
    ``eq`` and ``repr``, so an optimizer compares and prints by what the user wrote.
    """

    __slots__ = ()
    chain: Chain

    def init(self, parameters: Parameters) -> OptimizerState:
        """The state before the first update (the chain's tables at zero, step 0)."""
        return self.chain.init(parameters)

    def update(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters
    ) -> tuple[Parameters, OptimizerState]:
        """One step on the numpy road: new parameters and the state for the next update."""
        return self.chain.update(gradients, state, parameters)


@final
@attrs.frozen(slots=True)
class Sgd(_Chained):
    """Stochastic gradient descent, optionally with (Nesterov) momentum.

    Without momentum: ``p <- p - lr * g``. With momentum ``mu``: ``v <- mu * v + g`` and
    ``p <- p - lr * v`` (Nesterov: ``p <- p - lr * (g + mu * v)``); the velocity table is
    named ``velocity`` in the state.

    Example:
        >>> from topos import Tape, f64
        >>> network, w = Tape.record(lambda t: t.parameter(1.0), element=f64)
        >>> p = network.parameters()
        >>> g = p.map(lambda w: w * 2.0)          # d(w^2)/dw
        >>> sgd = Sgd(learning_rate=0.25)
        >>> p, state = sgd.update(g, sgd.init(p), p)
        >>> p.of(w).scalar()
        0.5
    """

    kind: ClassVar[str] = "sgd"
    learning_rate: LearningRate
    momentum: float = 0.0
    nesterov: bool = False
    chain: Chain = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        check_learning_rate(self.kind, self.learning_rate)
        check_unit(self.kind, "momentum", self.momentum)
        if not isinstance(self.nesterov, bool):
            raise OptimizerError(f"sgd: nesterov must be True or False, got {self.nesterov!r}")
        if self.nesterov and self.momentum == 0.0:
            raise OptimizerError("sgd: nesterov needs a momentum > 0")
        rate = scale_by_learning_rate(self.learning_rate)
        steps = (trace(self.momentum, self.nesterov), rate) if self.momentum else (rate,)
        object.__setattr__(self, "chain", Chain(self.kind, steps))


def _check_adam(kind: str, learning_rate: LearningRate, b1: float, b2: float, epsilon: float) -> None:
    check_learning_rate(kind, learning_rate)
    check_unit(kind, "b1", b1)
    check_unit(kind, "b2", b2)
    check_positive(kind, "epsilon", epsilon)


@final
@attrs.frozen(slots=True)
class Adam(_Chained):
    """Adam (Kingma and Ba) with bias correction by carried powers.

    ``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g^2``, and
    ``p <- p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``, where ``b1^t`` and
    ``b2^t`` are state scalars multiplied by ``b`` each step. The moment tables are
    ``first`` and ``second``.

    Example:
        >>> from topos import Tape, f64
        >>> network, w = Tape.record(lambda t: t.parameter(1.0), element=f64)
        >>> p = network.parameters()
        >>> adam = Adam(learning_rate=0.1)
        >>> p, state = adam.update(p.map(lambda w: w * 2.0), adam.init(p), p)
        >>> round(p.of(w).scalar(), 6)   # the first Adam step moves by about lr
        0.9
    """

    kind: ClassVar[str] = "adam"
    learning_rate: LearningRate
    b1: float = 0.9
    b2: float = 0.999
    epsilon: float = 1e-8
    chain: Chain = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        _check_adam(self.kind, self.learning_rate, self.b1, self.b2, self.epsilon)
        steps = (scale_by_adam(self.b1, self.b2, self.epsilon), scale_by_learning_rate(self.learning_rate))
        object.__setattr__(self, "chain", Chain(self.kind, steps))


@final
@attrs.frozen(slots=True)
class AdamW(_Chained):
    """Adam with decoupled weight decay (Loshchilov and Hutter).

    The Adam direction ``d`` of a decayed slot becomes ``d + decay * p``, so the step is
    ``p <- p - lr * (d + decay * p)``. Which slots decay is a policy over the slot's symbol
    and payload; the default decays rank >= 2 payloads only (weights, not biases or norm
    scales). Pass ``decay_where`` to choose otherwise.

    Example:
        >>> from topos import Tape, f64
        >>> network, (w, b) = Tape.record(
        ...     lambda t: (t.parameter([[1.0]]), t.parameter([1.0])), element=f64)
        >>> p = network.parameters()
        >>> zero = p.map(lambda x: x * 0.0)
        >>> opt = AdamW(learning_rate=0.5, decay=0.1)
        >>> p, _ = opt.update(zero, opt.init(p), p)
        >>> p.of(w).tolist(), p.of(b).tolist()   # only the matrix decays
        ([[0.95]], [1.0])
    """

    kind: ClassVar[str] = "adamw"
    learning_rate: LearningRate
    b1: float = 0.9
    b2: float = 0.999
    epsilon: float = 1e-8
    decay: float = 0.01
    decay_where: DecayPolicy = rank_at_least_two
    chain: Chain = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        _check_adam(self.kind, self.learning_rate, self.b1, self.b2, self.epsilon)
        check_non_negative(self.kind, "decay", self.decay)
        if not callable(self.decay_where):
            raise OptimizerError(f"adamw: decay_where must be a predicate (symbol, payload) -> bool, got {self.decay_where!r:.60}")
        decay = add_decayed_weights(self.decay, self.decay_where)
        steps = (scale_by_adam(self.b1, self.b2, self.epsilon), decay, scale_by_learning_rate(self.learning_rate))
        object.__setattr__(self, "chain", Chain(self.kind, steps))
