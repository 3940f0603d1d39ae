"""The built-in optimizers: Sgd (with optional momentum), Adam and AdamW.

Each is a frozen value holding its hyperparameters; ``init`` and ``update`` are pure (see
:mod:`topos.optim.base`). They are registered under ``sgd``, ``adam`` and ``adamw`` through
the same plugin hook a third-party optimizer uses, and pass the same conformance suite.

Arithmetic runs in the parameters' element type: a Python number beside a tensor adopts
that element, exactly like ``w - g * 0.02`` written by hand, so ``Sgd(0.02)`` reproduces a
hand-written step bit for bit. Each slot's formula runs as one fused numpy pass
(:class:`topos.optim.passes.SlotPass`): the same operations in the same order with the same
roundings as that tensor arithmetic, without its temporaries (``tests/test_optim_fast.py``
holds today's tensor formulas and compares bits, f32, f64 and bf16).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, TypeVar, final

import attrs
import numpy as np

from topos.ir.element import f64
from topos.ir.node import Symbol
from topos.optim.base import (
    JaxPrelude,
    LearningRate,
    OptimizerError,
    OptimizerState,
    SlotOps,
    check_learning_rate,
    check_state,
    check_unit,
    learning_rate_at,
    zeros_like,
)
from topos.optim.passes import SlotPass
from topos.state import Parameters
from topos.tensor import Tensor

__all__ = ["Adam", "AdamW", "DecayPolicy", "Sgd", "rank_at_least_two"]

_V = TypeVar("_V")
"""The value type a jax formula is traced over (it only combines values through ``SlotOps``)."""

DecayPolicy = Callable[[Symbol, Tensor], bool]
"""Which slots AdamW decays: ``policy(symbol, payload) -> bool``."""


def rank_at_least_two(symbol: Symbol, payload: Tensor) -> bool:
    """AdamW's default decay policy: matrices and kernels decay, biases and scales do not."""
    return payload.rank >= 2


def _finite_positive(kind: str, name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0.0 or value == float("inf"):
        raise OptimizerError(f"{kind}: {name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _rebuilt(table: Parameters, payloads: list[Tensor]) -> Parameters:
    return Parameters(table.lineage, table.symbols, tuple(payloads))


@final
@attrs.frozen(slots=True)
class Sgd:
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

    def __attrs_post_init__(self) -> None:
        check_learning_rate(self.kind, self.learning_rate)
        check_unit(self.kind, "momentum", self.momentum)
        if self.nesterov and self.momentum == 0.0:
            raise OptimizerError("sgd: nesterov needs a momentum > 0")

    def init(self, parameters: Parameters) -> OptimizerState:
        tables = {"velocity": zeros_like(parameters)} if self.momentum else {}
        return OptimizerState.start(self.kind, parameters, tables)

    def update(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters
    ) -> tuple[Parameters, OptimizerState]:
        check_state(self.kind, state).check(self.kind, gradients, parameters)
        lr = learning_rate_at(self.kind, self.learning_rate, state.step)
        if not self.momentum:
            with np.errstate(all="ignore"):  # as tensor arithmetic: IEEE results, no warnings
                news = [_descend(p, g, lr) for p, g in zip(parameters.payloads(), gradients.payloads(), strict=True)]
            return _rebuilt(parameters, news), state.advanced()
        table = state.table("velocity")
        velocities: list[Tensor] = []
        news = []
        with np.errstate(all="ignore"):
            for p, g, v in zip(parameters.payloads(), gradients.payloads(), table.payloads(), strict=True):
                velocity, new = _momentum(p, g, v, self.momentum, self.nesterov, lr)
                velocities.append(velocity)
                news.append(new)
        return _rebuilt(parameters, news), state.advanced(tables={"velocity": _rebuilt(table, velocities)})

    def jax_prelude(self, state: OptimizerState, parameters: Parameters) -> JaxPrelude:
        """The learning rate and momentum for :func:`topos.optim.jitted.compiled`."""
        lr = learning_rate_at(self.kind, self.learning_rate, state.step)
        tables = ("velocity",) if self.momentum else ()
        return JaxPrelude((lr, self.momentum), (False,) * len(parameters.symbols), tables, {})

    def jax_slot(self, ops: SlotOps[_V], flag: bool, p: _V, g: _V, tables: tuple[_V, ...]) -> tuple[_V, tuple[_V, ...]]:
        """The numpy update's formula, operation for operation, in jax."""
        if not self.momentum:
            return ops.sub(p, ops.mul(g, ops.number(0))), ()
        velocity = ops.add(ops.mul(tables[0], ops.number(1)), g)
        direction = ops.add(g, ops.mul(velocity, ops.number(1))) if self.nesterov else velocity
        return ops.sub(p, ops.mul(direction, ops.number(0))), (velocity,)


def _descend(p: Tensor, g: Tensor, lr: float) -> Tensor:
    """``p - g * lr``."""
    run = SlotPass(p.element, p)
    step = run.scratch(0)
    run.binary(np.multiply, run.load(g, 1), run.number(lr), step)
    new = run.target(2)
    run.binary(np.subtract, run.load(p, 3), step, new)
    return run.result(new)


def _momentum(p: Tensor, g: Tensor, v: Tensor, mu: float, nesterov: bool, lr: float) -> tuple[Tensor, Tensor]:
    """``v <- v * mu + g``; ``d`` is ``v`` (Nesterov: ``g + v * mu``); ``p - d * lr``."""
    run = SlotPass(p.element, p)
    grad, momentum = run.load(g, 1), run.number(mu)
    velocity = run.target(2)
    run.binary(np.multiply, run.load(v, 3), momentum, velocity)
    run.binary(np.add, velocity, grad, velocity)
    step = run.scratch(0)
    if nesterov:
        run.binary(np.multiply, velocity, momentum, step)
        run.binary(np.add, grad, step, step)
        run.binary(np.multiply, step, run.number(lr), step)
    else:
        run.binary(np.multiply, velocity, run.number(lr), step)
    new = run.target(4)
    run.binary(np.subtract, run.load(p, 5), step, new)
    return run.result(velocity), run.result(new)


def _check_adam(kind: str, learning_rate: LearningRate, b1: float, b2: float, epsilon: float) -> None:
    check_learning_rate(kind, learning_rate)
    check_unit(kind, "b1", b1)
    check_unit(kind, "b2", b2)
    _finite_positive(kind, "epsilon", epsilon)


def _adam_prelude(
    kind: str, betas: tuple[float, float], epsilon: float, state: OptimizerState, lr: float, flags: tuple[bool, ...]
) -> JaxPrelude:
    b1, b2 = betas
    first_power = state.scalar("first_power") * Tensor(b1, element=f64)
    second_power = state.scalar("second_power") * Tensor(b2, element=f64)
    numbers = (b1, 1.0 - b1, b2, 1.0 - b2, 1.0 - first_power.scalar(), 1.0 - second_power.scalar(), epsilon, lr)
    return JaxPrelude(
        numbers, flags, ("first", "second"), {"first_power": first_power, "second_power": second_power}
    )


def _adam_jax_slot(ops: SlotOps[_V], decay: bool, p: _V, g: _V, tables: tuple[_V, ...]) -> tuple[_V, tuple[_V, ...]]:
    """Adam's slot in the numpy update's order (number 8 is AdamW's decay)."""
    m = ops.add(ops.mul(tables[0], ops.number(0)), ops.mul(g, ops.number(1)))
    v = ops.add(ops.mul(tables[1], ops.number(2)), ops.mul(ops.mul(g, g), ops.number(3)))
    direction = ops.div(ops.div(m, ops.number(4)), ops.add(ops.sqrt(ops.div(v, ops.number(5))), ops.number(6)))
    if decay:
        direction = ops.add(direction, ops.mul(p, ops.number(8)))
    return ops.sub(p, ops.mul(direction, ops.number(7))), (m, v)


def _adam_init(kind: str, parameters: Parameters) -> OptimizerState:
    return OptimizerState.start(
        kind,
        parameters,
        {"first": zeros_like(parameters), "second": zeros_like(parameters)},
        {"first_power": 1.0, "second_power": 1.0},
    )


def _adam_step(
    kind: str,
    betas: tuple[float, float],
    epsilon: float,
    gradients: Parameters,
    state: OptimizerState,
    parameters: Parameters,
    decay: Callable[[Symbol, Tensor], float | None] | None,
    lr: float,
) -> tuple[Parameters, OptimizerState]:
    b1, b2 = betas
    # The powers b^t are carried and multiplied once per step in f64: no pow(b, float(t)).
    first_power = state.scalar("first_power") * Tensor(b1, element=f64)
    second_power = state.scalar("second_power") * Tensor(b2, element=f64)
    correction1 = 1.0 - first_power.scalar()
    correction2 = 1.0 - second_power.scalar()
    first_table, second_table = state.table("first"), state.table("second")
    firsts: list[Tensor] = []
    seconds: list[Tensor] = []
    news: list[Tensor] = []
    numbers = (b1, b2, correction1, correction2, epsilon, lr)
    with np.errstate(all="ignore"):  # as tensor arithmetic: IEEE results, no warnings
        for (symbol, p), g, m, v in zip(
            parameters, gradients.payloads(), first_table.payloads(), second_table.payloads(), strict=True
        ):
            rate = None if decay is None else decay(symbol, p)
            first, second, new = _adam_slot(p, g, m, v, numbers, rate)
            firsts.append(first)
            seconds.append(second)
            news.append(new)
    following = state.advanced(
        tables={"first": _rebuilt(first_table, firsts), "second": _rebuilt(second_table, seconds)},
        scalars={"first_power": first_power, "second_power": second_power},
    )
    return _rebuilt(parameters, news), following


def _adam_slot(
    p: Tensor, g: Tensor, m: Tensor, v: Tensor, numbers: tuple[float, ...], decay: float | None
) -> tuple[Tensor, Tensor, Tensor]:
    """One slot, in the written order: ``m * b1 + g * (1 - b1)``, ``v * b2 + (g * g) * (1 - b2)``,
    ``(m / c1) / (sqrt(v / c2) + eps)``, plus ``p * decay`` when decayed, ``p - d * lr``."""
    b1, b2, correction1, correction2, epsilon, lr = numbers
    run = SlotPass(p.element, p)
    grad = run.load(g, 1)
    first, left, right = run.target(2), run.scratch(3), run.scratch(4)
    run.binary(np.multiply, run.load(m, 5), run.number(b1), first)
    run.binary(np.multiply, grad, run.number(1.0 - b1), left)
    run.binary(np.add, first, left, first)
    second = run.target(6)
    run.binary(np.multiply, run.load(v, 7), run.number(b2), second)
    run.binary(np.multiply, grad, grad, left)
    run.binary(np.multiply, left, run.number(1.0 - b2), left)
    run.binary(np.add, second, left, second)
    run.binary(np.divide, first, run.number(correction1), left)
    run.binary(np.divide, second, run.number(correction2), right)
    run.unary(np.sqrt, right, right)
    run.binary(np.add, right, run.number(epsilon), right)
    run.binary(np.divide, left, right, left)
    current = run.load(p, 8)
    if decay is not None:
        run.binary(np.multiply, current, run.number(decay), right)
        run.binary(np.add, left, right, left)
    run.binary(np.multiply, left, run.number(lr), left)
    new = run.target(9)
    run.binary(np.subtract, current, left, new)
    return run.result(first), run.result(second), run.result(new)


@final
@attrs.frozen(slots=True)
class Adam:
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

    def __attrs_post_init__(self) -> None:
        _check_adam(self.kind, self.learning_rate, self.b1, self.b2, self.epsilon)

    def init(self, parameters: Parameters) -> OptimizerState:
        return _adam_init(self.kind, parameters)

    def update(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters
    ) -> tuple[Parameters, OptimizerState]:
        check_state(self.kind, state).check(self.kind, gradients, parameters)
        lr = learning_rate_at(self.kind, self.learning_rate, state.step)
        return _adam_step(self.kind, (self.b1, self.b2), self.epsilon, gradients, state, parameters, None, lr)

    def jax_prelude(self, state: OptimizerState, parameters: Parameters) -> JaxPrelude:
        """Carried powers, corrections and rate for :func:`topos.optim.jitted.compiled`."""
        lr = learning_rate_at(self.kind, self.learning_rate, state.step)
        flags = (False,) * len(parameters.symbols)
        return _adam_prelude(self.kind, (self.b1, self.b2), self.epsilon, state, lr, flags)

    def jax_slot(self, ops: SlotOps[_V], flag: bool, p: _V, g: _V, tables: tuple[_V, ...]) -> tuple[_V, tuple[_V, ...]]:
        """The numpy update's formula, operation for operation, in jax."""
        return _adam_jax_slot(ops, False, p, g, tables)


@final
@attrs.frozen(slots=True)
class AdamW:
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

    def __attrs_post_init__(self) -> None:
        _check_adam(self.kind, self.learning_rate, self.b1, self.b2, self.epsilon)
        _finite_positive(self.kind, "decay", self.decay)
        if not callable(self.decay_where):
            raise OptimizerError("adamw: decay_where must be a predicate (symbol, payload) -> bool")

    def init(self, parameters: Parameters) -> OptimizerState:
        return _adam_init(self.kind, parameters)

    def update(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters
    ) -> tuple[Parameters, OptimizerState]:
        check_state(self.kind, state).check(self.kind, gradients, parameters)
        lr = learning_rate_at(self.kind, self.learning_rate, state.step)
        decay, policy = self.decay, self.decay_where

        def decayed(symbol: Symbol, payload: Tensor) -> float | None:
            return decay if decay and policy(symbol, payload) else None

        return _adam_step(self.kind, (self.b1, self.b2), self.epsilon, gradients, state, parameters, decayed, lr)

    def jax_prelude(self, state: OptimizerState, parameters: Parameters) -> JaxPrelude:
        """As Adam's, plus the decay rate and the policy's verdict per slot (static flags)."""
        lr = learning_rate_at(self.kind, self.learning_rate, state.step)
        flags = tuple(bool(self.decay and self.decay_where(symbol, p)) for symbol, p in parameters)
        prelude = _adam_prelude(self.kind, (self.b1, self.b2), self.epsilon, state, lr, flags)
        return attrs.evolve(prelude, numbers=(*prelude.numbers, self.decay))

    def jax_slot(self, ops: SlotOps[_V], flag: bool, p: _V, g: _V, tables: tuple[_V, ...]) -> tuple[_V, tuple[_V, ...]]:
        """The numpy update's formula, operation for operation, in jax."""
        return _adam_jax_slot(ops, flag, p, g, tables)
