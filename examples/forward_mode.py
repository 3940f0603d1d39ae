"""Forward mode as a payload, not an engine.

topos has no forward-mode engine and needs none. A network is executable IR: every opcode
replays over any type that speaks the recordable vocabulary (``topos.Recordable``). A dual
number, a value with its tangent, is such a type; replaying the spec over duals pushes a
direction forward through the whole network, and the tangent of the loss is the directional
derivative.

Reverse mode computes the same number another way: the gradient, paired with the
direction. On the dyadic graph below every intermediate of both roads is exact in f32, so
the two must agree to the bit, and the script checks that they do (it exits non-zero if
not). On a graph of transcendentals the two roads round differently; there they agree to
a stated tolerance.

Run it with ``python examples/forward_mode.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from topos import (
    ElementType,
    MapOperation,
    Network,
    Numerics,
    Parameters,
    Recordable,
    Shape,
    ShapeMismatchError,
    Symbol,
    Tape,
    Tensor,
    Value,
    express,
    f32,
    f64,
    gradient,
)
from topos.ir import ops


class Dual:
    """A value and its tangent, both tensors of one shape.

    A tangent that is a zero constant stays one, so terms that would multiply it away are
    skipped (this keeps ``ln`` of a non-positive base out of a constant exponent's term).

    Example:
        >>> from topos import Tensor, f64
        >>> x = Dual(Tensor(3.0, element=f64), Tensor(1.0, element=f64))
        >>> (x * x).tangent.scalar()
        6.0
    """

    __slots__ = ("tangent", "value")

    def __init__(self, value: Tensor, tangent: Tensor) -> None:
        if value.shape != tangent.shape:
            raise ShapeMismatchError(f"a dual needs equal shapes, got {value.shape} and {tangent.shape}")
        self.value = value
        self.tangent = tangent

    @staticmethod
    def constant(value: Tensor) -> Dual:
        return Dual(value, value.zero_like())

    @property
    def shape(self) -> Shape:
        return self.value.shape

    @property
    def still(self) -> bool:
        """True when the tangent is a recorded-zero constant."""
        return self.tangent.fill == 0.0

    # ----------------------------------------------------------------- arithmetic
    def __add__(self, other: Dual, /) -> Dual:
        return Dual(self.value + other.value, self.tangent + other.tangent)

    def __sub__(self, other: Dual, /) -> Dual:
        return Dual(self.value - other.value, self.tangent - other.tangent)

    def __mul__(self, other: Dual, /) -> Dual:
        return Dual(self.value * other.value, self.tangent * other.value + self.value * other.tangent)

    def __truediv__(self, other: Dual, /) -> Dual:
        out = self.value / other.value
        return Dual(out, (self.tangent - out * other.tangent) / other.value)

    def __neg__(self) -> Dual:
        return Dual(-self.value, -self.tangent)

    def zero_like(self) -> Dual:
        return Dual.constant(self.value.zero_like())

    def one_like(self) -> Dual:
        return Dual.constant(self.value.one_like())

    # ----------------------------------------------------------------- elementwise
    def map(self, operation: MapOperation, /) -> Dual:
        x, t = self.value, self.tangent
        out = x.map(operation)
        match operation:
            case MapOperation.EXP:
                tangent = t * out
            case MapOperation.LN:
                tangent = t / x
            case MapOperation.SQRT:
                tangent = t / (out + out)
            case MapOperation.TANH:
                tangent = t * (out.one_like() - out * out)
            case MapOperation.SIN:
                tangent = t * x.map(MapOperation.COS)
            case MapOperation.COS:
                tangent = -(t * x.map(MapOperation.SIN))
            case MapOperation.LOG1P:
                tangent = t / (x.one_like() + x)
            case MapOperation.EXPM1:
                tangent = t * (out + out.one_like())
            case MapOperation.ERF:
                tangent = t * x.map(MapOperation.ERF_DERIVATIVE)
            case MapOperation.ERF_DERIVATIVE:
                tangent = -(t * (x + x) * out)
            case MapOperation.ATAN:
                tangent = t / (x.one_like() + x * x)
        return Dual(out, tangent)

    def powf(self, exponent: Dual, /) -> Dual:
        base, power = self.value, exponent.value
        out = base.powf(power)
        tangent = self.tangent * power * base.powf(power - power.one_like())
        if not exponent.still:
            tangent = tangent + exponent.tangent * out * base.map(MapOperation.LN)
        return Dual(out, tangent)

    def maximum(self, other: Dual, /) -> Dual:
        left_wins = self.value.step(other.value)
        tangent = self.tangent * left_wins + other.tangent * (left_wins.one_like() - left_wins)
        return Dual(self.value.maximum(other.value), tangent)

    def step(self, threshold: Dual, /) -> Dual:
        return Dual.constant(self.value.step(threshold.value))

    def select(self, on_true: Dual, on_false: Dual, /) -> Dual:
        # The mask carries no tangent: each position takes the chosen side's pair whole.
        return Dual(self.value.select(on_true.value, on_false.value), self.value.select(on_true.tangent, on_false.tangent))

    def stop_gradient(self) -> Dual:
        return Dual.constant(self.value.stop_gradient())

    # ----------------------------------------------------------------- products and sums
    def matmul(self, other: Dual, /) -> Dual:
        tangent = self.tangent.matmul(other.value) + self.value.matmul(other.tangent)
        return Dual(self.value.matmul(other.value), tangent)

    def sum(self) -> Dual:
        return Dual(self.value.sum(), self.tangent.sum())

    def sum_along(self, axis: int, /) -> Dual:
        return Dual(self.value.sum_along(axis), self.tangent.sum_along(axis))

    def logsumexp(self, axis: int, /) -> Dual:
        out = self.value.logsumexp(axis)
        extent = self.shape[axis]
        weights = (self.value - out.broadcast_along(axis, extent)).map(MapOperation.EXP)
        return Dual(out, (weights * self.tangent).sum_along(axis))

    def log_softmax(self, axis: int, /) -> Dual:
        out = self.value.log_softmax(axis)
        extent = self.shape[axis]
        mean = (out.map(MapOperation.EXP) * self.tangent).sum_along(axis).broadcast_along(axis, extent)
        return Dual(out, self.tangent - mean)

    # ----------------------------------------------------------------- layout (linear)
    def broadcast(self, shape: Shape, /) -> Dual:
        return Dual(self.value.broadcast(shape), self.tangent.broadcast(shape))

    def broadcast_along(self, axis: int, extent: int, /) -> Dual:
        return Dual(self.value.broadcast_along(axis, extent), self.tangent.broadcast_along(axis, extent))

    def reshape(self, shape: Shape, /) -> Dual:
        return Dual(self.value.reshape(shape), self.tangent.reshape(shape))

    def permute(self, order: Sequence[int], /) -> Dual:
        return Dual(self.value.permute(order), self.tangent.permute(order))

    def narrow(self, axis: int, start: int, length: int, /) -> Dual:
        return Dual(self.value.narrow(axis, start, length), self.tangent.narrow(axis, start, length))

    def pad(self, axis: int, start: int, extent: int, /) -> Dual:
        return Dual(self.value.pad(axis, start, extent), self.tangent.pad(axis, start, extent))

    def unfold(self, axis: int, size: int, step: int, dilation: int, /) -> Dual:
        return Dual(
            self.value.unfold(axis, size, step, dilation), self.tangent.unfold(axis, size, step, dilation)
        )

    def fold(self, axis: int, size: int, step: int, dilation: int, extent: int, /) -> Dual:
        return Dual(
            self.value.fold(axis, size, step, dilation, extent),
            self.tangent.fold(axis, size, step, dilation, extent),
        )

    def gather(self, selection: Dual, /) -> Dual:
        # The selection is data: its tangent never flows.
        return Dual(self.value.gather(selection.value), self.tangent.gather(selection.value))

    def scatter(self, selection: Dual, /) -> Dual:
        return Dual(self.value.scatter(selection.value), self.tangent.scatter(selection.value))

    def __repr__(self) -> str:
        return f"Dual({self.value!r}, tangent={self.tangent!r})"


def _conforms(dual: Dual) -> Recordable:
    """mypy checks here that Dual speaks the whole recordable vocabulary."""
    return dual


def push_forward(
    network: Network,
    parameters: Parameters,
    direction: Mapping[Symbol, Tensor],
    feeds: Mapping[Symbol, Tensor] | None = None,
) -> list[Dual]:
    """Replay ``network`` over duals: sources carry ``direction`` (zero where not named)."""
    fed = {network.index(symbol): tensor for symbol, tensor in (feeds or {}).items()}
    moved = {network.index(symbol): tensor for symbol, tensor in direction.items()}
    duals: list[Dual] = []
    with Numerics.exactly():
        for index, node in enumerate(network.nodes_):
            if node.is_source:
                if isinstance(node.op, ops.Parameter):
                    value = parameters.of(network.symbol(index))
                else:
                    value = fed.get(index, network.sources[index])
                tangent = moved.get(index)
                duals.append(Dual(value, tangent) if tangent is not None else Dual.constant(value))
            else:
                duals.append(express(node.op, [duals[j] for j in node.operands]))
    return duals


def directional_derivative(
    network: Network, parameters: Parameters, target: Symbol, direction: Mapping[Symbol, Tensor]
) -> Tensor:
    """Forward mode: the tangent of ``target`` after pushing ``direction`` through."""
    return push_forward(network, parameters, direction)[network.index(target)].tangent


def reverse_inner_product(
    network: Network, parameters: Parameters, target: Symbol, direction: Mapping[Symbol, Tensor]
) -> Tensor:
    """Reverse mode: ``sum over wrt of <gradient, direction>`` from the recorded gradient."""
    wrt = list(direction)
    longer, adjoints = gradient(network, target, wrt)
    run = longer.forward(parameters)
    total: Tensor | None = None
    with Numerics.exactly():
        for symbol in wrt:
            term = (run.of(adjoints.of(symbol)) * direction[symbol]).sum()
            total = term if total is None else total + term
    assert total is not None
    return total


# --------------------------------------------------------------------------- the graphs
def dyadic(tape: Tape) -> tuple[Value, Value, Value, Value]:
    """Values on a grid of quarters through products, sums and piecewise-linear steps: exact."""
    x = tape.input(np.array([[1.0, -0.5], [2.0, 0.25], [-1.5, 1.0]]))
    w = tape.parameter(np.array([[0.5, -0.25], [0.75, 1.0]]))
    b = tape.parameter(np.array([0.25, -0.5]))
    h = x.matmul(w) + b.broadcast_along(0, 3)
    r = h.maximum(h * 0.5)
    squares = (r * r).sum_along(1) * 0.5
    shifted = r.narrow(0, 1, 2).pad(0, 0, 3) * h
    windows = r.permute((1, 0)).unfold(1, 2, 1, 1).fold(1, 2, 1, 1, 3)
    loss = squares.sum() + shifted.sum() - windows.sum() * 0.25
    return x, w, b, loss


def smooth(tape: Tape) -> tuple[Value, Value, Value]:
    """Every map and the softmax family: the roads round differently here."""
    x = tape.input(np.array([[0.3, -0.7, 1.1], [0.45, 0.2, -1.3]]))
    w = tape.parameter(np.array([[0.9, -0.4, 0.35], [0.15, 0.6, -0.8]]))
    z = x * w
    positive = z * z + 1.0
    y = (
        z.tanh() * z.sin()
        + z.cos()
        + z.exp()
        + positive.ln()
        + positive.sqrt()
        + positive.log1p()
        + z.expm1()
        + z.erf()
        + z.erf_derivative()
        + positive.powf(w)
    )
    scores = y.log_softmax(1) + y.logsumexp(0).broadcast_along(0, 2)
    return x, w, (scores * scores).sum()


DYADIC_DIRECTION = {
    "x": np.array([[0.25, 1.0], [-0.5, 0.5], [0.75, -0.25]]),
    "w": np.array([[1.0, 0.5], [-0.25, 0.75]]),
    "b": np.array([-0.5, 0.25]),
}


def check_dyadic(element: ElementType) -> tuple[Tensor, Tensor]:
    network, (x, w, b, loss) = Tape.record(dyadic, element=element)
    direction = {
        x: Tensor(DYADIC_DIRECTION["x"], element=element),
        w: Tensor(DYADIC_DIRECTION["w"], element=element),
        b: Tensor(DYADIC_DIRECTION["b"], element=element),
    }
    parameters = network.parameters()
    forward = directional_derivative(network, parameters, loss, direction)
    reverse = reverse_inner_product(network, parameters, loss, direction)
    return forward, reverse


def check_smooth() -> tuple[float, float]:
    network, (x, w, loss) = Tape.record(smooth, element=f64)
    direction = {
        x: Tensor(np.array([[0.5, 0.25, -1.0], [1.0, -0.5, 0.75]]), element=f64),
        w: Tensor(np.array([[-0.25, 1.0, 0.5], [0.75, 0.25, -1.0]]), element=f64),
    }
    parameters = network.parameters()
    forward = directional_derivative(network, parameters, loss, direction).scalar()
    reverse = reverse_inner_product(network, parameters, loss, direction).scalar()
    return forward, reverse


def main() -> None:
    print("== forward mode as a payload ==")
    for element in (f32, f64):
        forward, reverse = check_dyadic(element)
        same = bool(np.array_equal(forward.bits(), reverse.bits()))
        print(f"dyadic graph, {element}: forward {forward.scalar()!r}  reverse {reverse.scalar()!r}  "
              f"bits {'equal' if same else 'DIFFER'}")
        if not same:
            raise SystemExit(f"forward and reverse mode disagree in {element}")
    forward_value, reverse_value = check_smooth()
    gap = abs(forward_value - reverse_value) / max(1.0, abs(reverse_value))
    print(f"smooth graph, f64: forward {forward_value!r}  reverse {reverse_value!r}  relative gap {gap:.1e}")
    # Same rules, different association of the chain products: a few ulps, not bits.
    if gap > 1e-12:
        raise SystemExit("forward and reverse mode disagree beyond 1e-12 on the smooth graph")


if __name__ == "__main__":
    main()
