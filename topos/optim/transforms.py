"""The built-in transforms: every optimizer formula topos ships, each written once.

Contract. Each function returns a :class:`~topos.optim.Transform` for :func:`~topos.optim.chain`
(optax's names, topos's conventions): the update a chain subtracts from the parameters is a
descent direction, so ``scale_by_learning_rate`` multiplies by ``+lr``. Each ``slot`` states
its formula in the order and with the roundings of the tensor arithmetic it was first
written in (``m * b1 + g * (1 - b1)``: one rounding per operation), and both roads read it.

- :func:`scale_by_learning_rate`: ``u * lr`` (a constant or a schedule of the step);
- :func:`trace`: momentum, ``v <- v * mu + u``, passing on ``v`` (Nesterov: ``u + v * mu``);
- :func:`scale_by_adam`: Adam's direction ``(m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``,
  the powers ``b^t`` carried in f64 and multiplied once per step;
- :func:`add_decayed_weights`: decoupled weight decay, ``u + p * rate`` on the slots a
  :data:`DecayPolicy` selects.

Hyperparameters are checked when a transform is built, naming the transform.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar, final

import attrs

from topos.ir.element import f64
from topos.ir.node import Symbol
from topos.optim.base import (
    LearningRate,
    OptimizerError,
    OptimizerState,
    check_learning_rate,
    check_unit,
    learning_rate_at,
    real,
)
from topos.optim.chain import Prelude, SlotOps, Transform
from topos.state import Parameters
from topos.tensor import Tensor

__all__ = [
    "DecayPolicy",
    "add_decayed_weights",
    "check_non_negative",
    "rank_at_least_two",
    "scale_by_adam",
    "scale_by_learning_rate",
    "trace",
]

_V = TypeVar("_V")

DecayPolicy = Callable[[Symbol, Tensor], bool]
"""Which slots weight decay applies to: ``policy(symbol, payload) -> bool``."""


def rank_at_least_two(symbol: Symbol, payload: Tensor) -> bool:
    """The default decay policy: matrices and kernels decay, biases and scales do not."""
    return payload.rank >= 2


def check_positive(kind: str, name: str, value: float) -> float:
    """Refuse a hyperparameter that is not a finite number ``> 0`` (a divisor's guard, such as Adam's epsilon)."""
    check_non_negative(kind, name, value)
    if value == 0:
        raise OptimizerError(
            f"{kind}: {name} must be a finite number > 0 (with 0, a slot whose gradients are all zero "
            f"divides 0 by 0), got {value!r}"
        )
    return float(value)


def check_non_negative(kind: str, name: str, value: float) -> float:
    """Refuse a hyperparameter that is not a finite number ``>= 0``."""
    if not real(value) or value < 0:
        raise OptimizerError(f"{kind}: {name} must be a finite number >= 0, got {value!r}")
    return float(value)


@final
@attrs.frozen(slots=True)
class _ScaleByLearningRate:
    learning_rate: LearningRate

    def tables(self) -> tuple[str, ...]:
        return ()

    def carried(self) -> Mapping[str, float]:
        return {}

    def prelude(self, kind: str, state: OptimizerState, parameters: Parameters) -> Prelude:
        return Prelude((learning_rate_at(kind, self.learning_rate, state.step),))

    def slot(self, ops: SlotOps[_V], numbers: tuple[_V, ...], flag: bool, p: _V, update: _V, tables: tuple[_V, ...]) -> tuple[_V, tuple[_V, ...]]:
        (rate,) = numbers
        return ops.mul(update, rate), ()


def scale_by_learning_rate(learning_rate: LearningRate) -> Transform:
    """``u * lr``: the step length, a constant or a schedule of the step count.

    Example:
        >>> from topos import Tape, f64
        >>> from topos.optim import chain
        >>> network, w = Tape.record(lambda t: t.parameter(1.0), element=f64)
        >>> p = network.parameters()
        >>> sgd = chain(scale_by_learning_rate(0.25), kind="sgd")
        >>> sgd.update(p.map(lambda w: w * 2.0), sgd.init(p), p)[0].of(w).scalar()
        0.5
    """
    return _ScaleByLearningRate(check_learning_rate("scale_by_learning_rate", learning_rate))


@final
@attrs.frozen(slots=True)
class _Trace:
    momentum: float
    nesterov: bool

    def tables(self) -> tuple[str, ...]:
        return ("velocity",)

    def carried(self) -> Mapping[str, float]:
        return {}

    def prelude(self, kind: str, state: OptimizerState, parameters: Parameters) -> Prelude:
        return Prelude((self.momentum,))

    def slot(self, ops: SlotOps[_V], numbers: tuple[_V, ...], flag: bool, p: _V, update: _V, tables: tuple[_V, ...]) -> tuple[_V, tuple[_V, ...]]:
        (mu,) = numbers
        velocity = ops.add(ops.mul(tables[0], mu), update)
        return (ops.add(update, ops.mul(velocity, mu)) if self.nesterov else velocity), (velocity,)


def trace(momentum: float, nesterov: bool = False) -> Transform:
    """Momentum (optax's ``trace``): ``v <- v * mu + u`` in the table ``velocity``, passing on ``v``.

    With ``nesterov`` it passes on ``u + v * mu``, the gradient plus the velocity's next step.

    Example:
        >>> from topos.optim import chain, scale_by_learning_rate
        >>> chain(trace(0.9, nesterov=True), scale_by_learning_rate(0.1)).tables
        ('velocity',)
    """
    if not isinstance(nesterov, bool):
        raise OptimizerError(f"trace: nesterov must be True or False, got {nesterov!r}")
    return _Trace(check_unit("trace", "momentum", momentum), nesterov)


@final
@attrs.frozen(slots=True)
class _ScaleByAdam:
    b1: float
    b2: float
    epsilon: float

    def tables(self) -> tuple[str, ...]:
        return ("first", "second")

    def carried(self) -> Mapping[str, float]:
        return {"first_power": 1.0, "second_power": 1.0}

    def prelude(self, kind: str, state: OptimizerState, parameters: Parameters) -> Prelude:
        b1, b2 = self.b1, self.b2
        # The powers b^t are carried and multiplied once per step in f64: no pow(b, float(t)).
        first_power = state.scalar("first_power") * Tensor(b1, element=f64)
        second_power = state.scalar("second_power") * Tensor(b2, element=f64)
        numbers = (b1, 1.0 - b1, b2, 1.0 - b2, 1.0 - first_power.scalar(), 1.0 - second_power.scalar(), self.epsilon)
        return Prelude(numbers, scalars={"first_power": first_power, "second_power": second_power})

    def slot(self, ops: SlotOps[_V], numbers: tuple[_V, ...], flag: bool, p: _V, update: _V, tables: tuple[_V, ...]) -> tuple[_V, tuple[_V, ...]]:
        b1, rest1, b2, rest2, correction1, correction2, epsilon = numbers
        first = ops.add(ops.mul(tables[0], b1), ops.mul(update, rest1))
        second = ops.add(ops.mul(tables[1], b2), ops.mul(ops.mul(update, update), rest2))
        corrected = ops.div(first, correction1)
        return ops.div(corrected, ops.add(ops.sqrt(ops.div(second, correction2)), epsilon)), (first, second)


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, epsilon: float = 1e-8) -> Transform:
    """Adam's direction (Kingma and Ba), bias-corrected by carried powers.

    ``m <- m * b1 + u * (1 - b1)`` and ``v <- v * b2 + (u * u) * (1 - b2)`` in the tables
    ``first`` and ``second``; it passes on ``(m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``,
    where ``b1^t`` and ``b2^t`` are the carried scalars ``first_power`` and ``second_power``.

    Example:
        >>> from topos.optim import chain, scale_by_learning_rate
        >>> adam = chain(scale_by_adam(b2=0.99), scale_by_learning_rate(1e-3))
        >>> adam.tables
        ('first', 'second')
    """
    kind = "scale_by_adam"
    return _ScaleByAdam(check_unit(kind, "b1", b1), check_unit(kind, "b2", b2), check_positive(kind, "epsilon", epsilon))


@final
@attrs.frozen(slots=True)
class _AddDecayedWeights:
    rate: float
    where: DecayPolicy

    def tables(self) -> tuple[str, ...]:
        return ()

    def carried(self) -> Mapping[str, float]:
        return {}

    def prelude(self, kind: str, state: OptimizerState, parameters: Parameters) -> Prelude:
        rate, where = self.rate, self.where
        return Prelude((rate,), tuple(bool(rate and where(symbol, p)) for symbol, p in parameters))

    def slot(self, ops: SlotOps[_V], numbers: tuple[_V, ...], flag: bool, p: _V, update: _V, tables: tuple[_V, ...]) -> tuple[_V, tuple[_V, ...]]:
        (rate,) = numbers
        return (ops.add(update, ops.mul(p, rate)) if flag else update), ()


def add_decayed_weights(rate: float, where: DecayPolicy = rank_at_least_two) -> Transform:
    """Decoupled weight decay (Loshchilov and Hutter): ``u + p * rate`` on the slots ``where`` selects.

    Placed between a direction and :func:`scale_by_learning_rate`, the decay is scaled by
    the learning rate but not by the direction's statistics, as AdamW does. (For L2 decay
    added to the gradients, see :func:`~topos.optim.add_weight_decay`.)

    Example:
        >>> from topos.optim import chain, scale_by_adam, scale_by_learning_rate
        >>> adamw = chain(scale_by_adam(), add_decayed_weights(0.01), scale_by_learning_rate(3e-4), kind="adamw")
        >>> adamw.kind, adamw.tables
        ('adamw', ('first', 'second'))
    """
    if not callable(where):
        raise OptimizerError(f"add_decayed_weights: where must be a predicate (symbol, payload) -> bool, got {where!r}")
    return _AddDecayedWeights(check_non_negative("add_decayed_weights", "rate", rate), where)
