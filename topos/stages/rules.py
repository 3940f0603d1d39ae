"""One derivative rule per opcode, written once against the recordable vocabulary.

Contract: :func:`express` replays an opcode over any :class:`Recordable` (tensors compute,
recording values record); :func:`vjp` returns one cotangent per operand, or ``None`` for a
data operand (a selection, the operands of ``Step``). Rules never accumulate: the scans that
call them do. Every expansion a rule speaks has a rule of its own, so a recorded gradient
can be differentiated again.

Both tables are keyed by opcode class; a test checks each covers every opcode.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, Self, TypeVar, cast

from topos.errors import InvalidArgumentError
from topos.ir import ops
from topos.ir.ops import MapOperation
from topos.ir.shape import Shape

__all__ = ["EXPRESS", "READS", "VJP", "Reads", "Recordable", "express", "vjp"]


class Recordable(Protocol):
    """The recordable vocabulary: arithmetic plus one method per opcode.

    ``Tensor`` computes it, ``Value`` records it; a user type (a dual number, say) may
    implement it to give the spec a new reading.
    """

    @property
    def shape(self) -> Shape: ...
    def __add__(self, other: Self, /) -> Self: ...
    def __sub__(self, other: Self, /) -> Self: ...
    def __mul__(self, other: Self, /) -> Self: ...
    def __truediv__(self, other: Self, /) -> Self: ...
    def __neg__(self) -> Self: ...
    def zero_like(self) -> Self: ...
    def one_like(self) -> Self: ...
    def map(self, operation: MapOperation, /) -> Self: ...
    def powf(self, exponent: Self, /) -> Self: ...
    def maximum(self, other: Self, /) -> Self: ...
    def step(self, threshold: Self, /) -> Self: ...
    def matmul(self, other: Self, /) -> Self: ...
    def sum(self) -> Self: ...
    def sum_along(self, axis: int, /) -> Self: ...
    def logsumexp(self, axis: int, /) -> Self: ...
    def log_softmax(self, axis: int, /) -> Self: ...
    def broadcast(self, shape: Shape, /) -> Self: ...
    def broadcast_along(self, axis: int, extent: int, /) -> Self: ...
    def reshape(self, shape: Shape, /) -> Self: ...
    def permute(self, order: Sequence[int], /) -> Self: ...
    def narrow(self, axis: int, start: int, length: int, /) -> Self: ...
    def pad(self, axis: int, start: int, extent: int, /) -> Self: ...
    def unfold(self, axis: int, size: int, step: int, dilation: int, /) -> Self: ...
    def fold(self, axis: int, size: int, step: int, dilation: int, extent: int, /) -> Self: ...
    def gather(self, selection: Self, /) -> Self: ...
    def scatter(self, selection: Self, /) -> Self: ...


R = TypeVar("R", bound=Recordable)
_Express = Callable[[Any, Sequence[Any]], Any]

EXPRESS: dict[type, _Express] = {
    ops.Add: lambda op, x: x[0] + x[1],
    ops.Sub: lambda op, x: x[0] - x[1],
    ops.Mul: lambda op, x: x[0] * x[1],
    ops.Div: lambda op, x: x[0] / x[1],
    ops.Neg: lambda op, x: -x[0],
    ops.Map: lambda op, x: x[0].map(op.operation),
    ops.MatMul: lambda op, x: x[0].matmul(x[1]),
    ops.Sum: lambda op, x: x[0].sum(),
    ops.SumAlong: lambda op, x: x[0].sum_along(op.axis),
    ops.Broadcast: lambda op, x: x[0].broadcast(op.shape),
    ops.BroadcastAlong: lambda op, x: x[0].broadcast_along(op.axis, op.extent),
    ops.Reshape: lambda op, x: x[0].reshape(op.shape),
    ops.Permute: lambda op, x: x[0].permute(op.order),
    ops.Narrow: lambda op, x: x[0].narrow(op.axis, op.start, op.length),
    ops.Pad: lambda op, x: x[0].pad(op.axis, op.start, op.extent),
    ops.Unfold: lambda op, x: x[0].unfold(op.axis, op.size, op.step, op.dilation),
    ops.Fold: lambda op, x: x[0].fold(op.axis, op.size, op.step, op.dilation, op.extent),
    ops.Gather: lambda op, x: x[0].gather(x[1]),
    ops.Scatter: lambda op, x: x[0].scatter(x[1]),
    ops.LogSoftmax: lambda op, x: x[0].log_softmax(op.axis),
    ops.LogSumExp: lambda op, x: x[0].logsumexp(op.axis),
    ops.Powf: lambda op, x: x[0].powf(x[1]),
    ops.Maximum: lambda op, x: x[0].maximum(x[1]),
    ops.Step: lambda op, x: x[0].step(x[1]),
}


def _source(op: Any, x: Sequence[Any]) -> Any:
    raise InvalidArgumentError(f"{op.name} is a source: its payload is supplied, not expressed")


for _op in (ops.Leaf, ops.Parameter, ops.Input):
    EXPRESS[_op] = _source


def express(op: ops.Op, operands: Sequence[R]) -> R:
    """Replay ``op`` over ``operands`` of any recordable type.

    Example:
        >>> from topos import Tensor
        >>> from topos.ir import ops
        >>> express(ops.Add(), [Tensor(1.0), Tensor(2.0)]).scalar()
        3.0
    """
    if len(operands) != op.arity:
        raise InvalidArgumentError(f"{op.name} takes {op.arity} operands, got {len(operands)}")
    return cast(R, EXPRESS[type(op)](op, operands))


# --------------------------------------------------------------------------- rules
_Rule = Callable[[Any, Sequence[Any], Any, Any], tuple[Any, ...]]


def _transpose_last(x: Any) -> Any:
    rank = len(x.shape)
    order = list(range(rank))
    order[-1], order[-2] = order[-2], order[-1]
    return x.permute(tuple(order))


def _map_rule(op: Any, x: Sequence[Any], out: Any, g: Any) -> tuple[Any, ...]:
    a = x[0]
    match op.operation:
        case MapOperation.EXP:
            return (g * out,)
        case MapOperation.LN:
            return (g / a,)
        case MapOperation.SQRT:
            return (g / (out + out),)
        case MapOperation.TANH:
            return (g * (out.one_like() - out * out),)
        case MapOperation.SIN:
            return (g * a.map(MapOperation.COS),)
        case MapOperation.COS:
            return (-(g * a.map(MapOperation.SIN)),)
        case MapOperation.LOG1P:
            return (g / (a.one_like() + a),)
        case MapOperation.EXPM1:
            return (g * (out + out.one_like()),)
        case MapOperation.ERF:
            return (g * a.map(MapOperation.ERF_DERIVATIVE),)
        case MapOperation.ERF_DERIVATIVE:
            return (-(g * (a + a) * out),)
    raise AssertionError(op)  # pragma: no cover


def _log_softmax_rule(op: Any, x: Sequence[Any], out: Any, g: Any) -> tuple[Any, ...]:
    extent = out.shape[op.axis]
    total = g.sum_along(op.axis).broadcast_along(op.axis, extent)
    return (g - out.map(MapOperation.EXP) * total,)


def _logsumexp_rule(op: Any, x: Sequence[Any], out: Any, g: Any) -> tuple[Any, ...]:
    extent = x[0].shape[op.axis]
    spread = g.broadcast_along(op.axis, extent)
    return (spread * (x[0] - out.broadcast_along(op.axis, extent)).map(MapOperation.EXP),)


def _is_zero(x: Any) -> Any:
    """1 where x is ±0, else 0 (NaN included): ``0 >= x`` and ``x >= 0``, both Steps."""
    zero = x.zero_like()
    return zero.step(x) * x.step(zero)


def _powf_rule(op: Any, x: Sequence[Any], out: Any, g: Any) -> tuple[Any, ...]:
    """``g·e·b^(e-1)`` and ``g·b^e·ln b``, with JAX's and PyTorch's conventions at zero.

    An exponent of exactly 0 contributes 0 to the base (``e - 1`` becomes 0 there, so
    ``0 · 0^(-1)`` never forms ``0 · inf``), and a base of exactly 0 contributes
    ``b^e · 0`` to the exponent (ln reads 1 there instead of 0). Elsewhere both factors are
    unchanged bit for bit: ``(e - 1) · 1`` and ``b + 0`` are exact.
    """
    base, exponent = x
    one = exponent.one_like()
    lowered = base.powf((exponent - one) * (one - _is_zero(exponent)))
    safe_base = base + _is_zero(base)
    return (g * exponent * lowered, g * out * safe_base.map(MapOperation.LN))


def _maximum_rule(op: Any, x: Sequence[Any], out: Any, g: Any) -> tuple[Any, ...]:
    left_wins = x[0].step(x[1])
    return (g * left_wins, g * (left_wins.one_like() - left_wins))


def _inverse(order: Sequence[int]) -> tuple[int, ...]:
    inverse = [0] * len(order)
    for position, axis in enumerate(order):
        inverse[axis] = position
    return tuple(inverse)


def _no_rule(op: Any, x: Sequence[Any], out: Any, g: Any) -> tuple[Any, ...]:
    raise InvalidArgumentError(f"{op.name} is a source: it has no derivative rule")


VJP: dict[type, _Rule] = {
    ops.Leaf: _no_rule,
    ops.Parameter: _no_rule,
    ops.Input: _no_rule,
    ops.Add: lambda op, x, out, g: (g, g),
    ops.Sub: lambda op, x, out, g: (g, -g),
    ops.Mul: lambda op, x, out, g: (g * x[1], g * x[0]),
    ops.Div: lambda op, x, out, g: (g / x[1], -(g * out / x[1])),
    ops.Neg: lambda op, x, out, g: (-g,),
    ops.Map: _map_rule,
    ops.MatMul: lambda op, x, out, g: (g.matmul(_transpose_last(x[1])), _transpose_last(x[0]).matmul(g)),
    ops.Sum: lambda op, x, out, g: (g.broadcast(x[0].shape),),
    ops.SumAlong: lambda op, x, out, g: (g.broadcast_along(op.axis, x[0].shape[op.axis]),),
    ops.Broadcast: lambda op, x, out, g: (g.sum().reshape(x[0].shape),),
    ops.BroadcastAlong: lambda op, x, out, g: (g.sum_along(op.axis),),
    ops.Reshape: lambda op, x, out, g: (g.reshape(x[0].shape),),
    ops.Permute: lambda op, x, out, g: (g.permute(_inverse(op.order)),),
    ops.Narrow: lambda op, x, out, g: (g.pad(op.axis, op.start, x[0].shape[op.axis]),),
    ops.Pad: lambda op, x, out, g: (g.narrow(op.axis, op.start, x[0].shape[op.axis]),),
    ops.Unfold: lambda op, x, out, g: (
        g.fold(op.axis, op.size, op.step, op.dilation, x[0].shape[op.axis]),
    ),
    ops.Fold: lambda op, x, out, g: (g.unfold(op.axis, op.size, op.step, op.dilation),),
    ops.Gather: lambda op, x, out, g: (g.scatter(x[1]), None),
    ops.Scatter: lambda op, x, out, g: (g.gather(x[1]), None),
    ops.LogSoftmax: _log_softmax_rule,
    ops.LogSumExp: _logsumexp_rule,
    ops.Powf: _powf_rule,
    ops.Maximum: _maximum_rule,
    ops.Step: lambda op, x, out, g: (None, None),
}


def vjp(op: ops.Op, operands: Sequence[R], output: R, seed: R) -> tuple[R | None, ...]:
    """One cotangent per operand (None for data operands), given the output's cotangent.

    Example:
        >>> from topos import Tensor
        >>> from topos.ir import ops
        >>> a, b = Tensor(3.0), Tensor(4.0)
        >>> [c.scalar() for c in vjp(ops.Mul(), [a, b], a * b, Tensor(1.0))]
        [4.0, 3.0]
    """
    return cast(tuple[R | None, ...], VJP[type(op)](op, operands, output, seed))


class Reads:
    """What a rule reads besides the seed: which operand payloads, and the node's output."""

    __slots__ = ("operands", "output")

    def __init__(self, operands: tuple[int, ...] = (), output: bool = False) -> None:
        self.operands = operands
        self.output = output


def _map_reads(op: ops.Map) -> Reads:
    reads_operand = {MapOperation.LN, MapOperation.SIN, MapOperation.COS, MapOperation.LOG1P, MapOperation.ERF}
    if op.operation in reads_operand:
        return Reads((0,))
    if op.operation is MapOperation.ERF_DERIVATIVE:
        return Reads((0,), True)
    return Reads((), True)


_NONE = Reads()
READS: dict[type, Callable[[Any], Reads]] = {
    ops.Leaf: lambda op: _NONE,
    ops.Parameter: lambda op: _NONE,
    ops.Input: lambda op: _NONE,
    ops.Add: lambda op: _NONE,
    ops.Sub: lambda op: _NONE,
    ops.Mul: lambda op: Reads((0, 1)),
    ops.Div: lambda op: Reads((1,), True),
    ops.Neg: lambda op: _NONE,
    ops.Map: _map_reads,
    ops.MatMul: lambda op: Reads((0, 1)),
    ops.Sum: lambda op: _NONE,
    ops.SumAlong: lambda op: _NONE,
    ops.Broadcast: lambda op: _NONE,
    ops.BroadcastAlong: lambda op: _NONE,
    ops.Reshape: lambda op: _NONE,
    ops.Permute: lambda op: _NONE,
    ops.Narrow: lambda op: _NONE,
    ops.Pad: lambda op: _NONE,
    ops.Unfold: lambda op: _NONE,
    ops.Fold: lambda op: _NONE,
    ops.Gather: lambda op: Reads((1,)),
    ops.Scatter: lambda op: Reads((1,)),
    ops.LogSoftmax: lambda op: Reads((), True),
    ops.LogSumExp: lambda op: Reads((0,), True),
    ops.Powf: lambda op: Reads((0, 1), True),
    ops.Maximum: lambda op: Reads((0, 1)),
    ops.Step: lambda op: _NONE,
}
"""Per-opcode read contract of the rules (drives what a backward-capable plan retains).

Operands read only for their shape are not listed: a placeholder of the right shape serves.
"""
