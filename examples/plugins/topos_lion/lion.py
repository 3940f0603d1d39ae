"""Lion: the sign of an interpolated momentum, as a topos optimizer.

Per slot, with gradient ``g`` and momentum ``m``::

    c = b1 * m + (1 - b1) * g
    p <- p - lr * (sign(c) + decay * p)
    m <- b2 * m + (1 - b2) * g

Written against the public surface only: ``init`` and ``update`` are pure functions, and the
momentum table is the state's ``momentum`` entry, so it checkpoints by name.
"""

from __future__ import annotations

from typing import ClassVar, final

import attrs

from topos import OptimizerState, Parameters, Tensor
from topos.optim import LearningRate, OptimizerError, learning_rate_at, zeros_like

__all__ = ["Lion"]


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 per element, from the step opcode (step(x) is 1 where x >= 0)."""
    return x.step(0.0) - (-x).step(0.0)


@final
@attrs.frozen(slots=True)
class Lion:
    """The Lion optimizer (Chen et al., 2023).

    Example:
        >>> from topos import Tape, f64
        >>> network, w = Tape.record(lambda t: t.parameter(1.0), element=f64)
        >>> p = network.parameters()
        >>> lion = Lion(learning_rate=0.125)
        >>> p, state = lion.update(p.map(lambda w: w * 2.0), lion.init(p), p)
        >>> p.of(w).scalar()
        0.875
    """

    kind: ClassVar[str] = "lion"
    learning_rate: LearningRate
    b1: float = 0.9
    b2: float = 0.99
    decay: float = 0.0

    def __attrs_post_init__(self) -> None:
        for name, value in (("b1", self.b1), ("b2", self.b2)):
            if not 0.0 <= value < 1.0:
                raise OptimizerError(f"lion: {name} must lie in [0, 1), got {value!r}")
        if not self.decay >= 0.0:
            raise OptimizerError(f"lion: decay must be >= 0, got {self.decay!r}")

    def init(self, parameters: Parameters) -> OptimizerState:
        return OptimizerState.start(self.kind, parameters, {"momentum": zeros_like(parameters)})

    def update(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters
    ) -> tuple[Parameters, OptimizerState]:
        state.check(self.kind, gradients, parameters)
        lr = learning_rate_at(self.kind, self.learning_rate, state.step)
        b1, b2, decay = self.b1, self.b2, self.decay
        momentum = state.table("momentum")
        mixed = momentum.step(gradients, lambda m, g: m * b1 + g * (1.0 - b1))
        if decay:
            new = parameters.step(mixed, lambda p, c: p - (sign(c) + p * decay) * lr)
        else:
            new = parameters.step(mixed, lambda p, c: p - sign(c) * lr)
        following = momentum.step(gradients, lambda m, g: m * b2 + g * (1.0 - b2))
        return new, state.advanced(tables={"momentum": following})
