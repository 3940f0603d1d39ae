"""One derivative rule per opcode, written once against the recordable vocabulary.

Contract: :func:`express` replays an opcode over any :class:`Recordable` (tensors compute,
recording values record); :func:`vjp` returns one cotangent per operand, or ``None`` for a
data operand (a selection, the operands of ``Step``, the mask of ``Select``, the operand of
``StopGradient``). Rules never accumulate: the scans that
call them do. Every expansion a rule speaks has a rule of its own, so a recorded gradient
can be differentiated again.

:func:`batch_rule` is the batching rule: the node of an opcode over operands some of which
carry a new leading batch axis, spelled in the same vocabulary, so that each example's slice
of the result is, bit for bit, the node over that example alone (see
:mod:`topos.stages.batching`).

The tables are keyed by opcode class (a test checks each covers every opcode); behind each
is one ``match`` over the closed opcode union ending in ``assert_never``, so mypy proves every
opcode handled and type-checks each rule's body against :class:`Recordable`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, NoReturn, Protocol, Self, TypeVar, assert_never

import attrs

from topos.errors import InvalidArgumentError
from topos.ir import ops
from topos.ir.ops import MapOperation
from topos.ir.shape import Shape

__all__ = [
    "BATCH", "EXPRESS", "READS", "VJP", "Batcher", "Expression", "Reads", "Recordable", "Rule", "batch_rule", "express",
    "vjp",
]


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
    def select(self, on_true: Self, on_false: Self, /) -> Self: ...
    def stop_gradient(self) -> Self: ...


R = TypeVar("R", bound=Recordable)


class Expression(Protocol):
    """How an opcode replays over operands of any one recordable type."""

    def __call__(self, op: ops.Op, x: Sequence[R], /) -> R: ...


class Rule(Protocol):
    """A derivative rule: one cotangent per operand (None for data) from the output's."""

    def __call__(self, op: ops.Op, x: Sequence[R], out: R, g: R, /) -> tuple[R | None, ...]: ...


def _source(op: ops.Leaf | ops.Parameter | ops.Input, what: str) -> NoReturn:
    raise InvalidArgumentError(f"{op.name} is a source: {what}")


def _express(op: ops.Op, x: Sequence[R]) -> R:
    match op:
        case ops.Leaf() | ops.Parameter() | ops.Input():
            _source(op, "its payload is supplied, not expressed")
        case ops.Add():
            return x[0] + x[1]
        case ops.Sub():
            return x[0] - x[1]
        case ops.Mul():
            return x[0] * x[1]
        case ops.Div():
            return x[0] / x[1]
        case ops.Neg():
            return -x[0]
        case ops.Map():
            return x[0].map(op.operation)
        case ops.MatMul():
            return x[0].matmul(x[1])
        case ops.Sum():
            return x[0].sum()
        case ops.SumAlong():
            return x[0].sum_along(op.axis)
        case ops.Broadcast():
            return x[0].broadcast(op.shape)
        case ops.BroadcastAlong():
            return x[0].broadcast_along(op.axis, op.extent)
        case ops.Reshape():
            return x[0].reshape(op.shape)
        case ops.Permute():
            return x[0].permute(op.order)
        case ops.Narrow():
            return x[0].narrow(op.axis, op.start, op.length)
        case ops.Pad():
            return x[0].pad(op.axis, op.start, op.extent)
        case ops.Unfold():
            return x[0].unfold(op.axis, op.size, op.step, op.dilation)
        case ops.Fold():
            return x[0].fold(op.axis, op.size, op.step, op.dilation, op.extent)
        case ops.Gather():
            return x[0].gather(x[1])
        case ops.Scatter():
            return x[0].scatter(x[1])
        case ops.LogSoftmax():
            return x[0].log_softmax(op.axis)
        case ops.LogSumExp():
            return x[0].logsumexp(op.axis)
        case ops.Powf():
            return x[0].powf(x[1])
        case ops.Maximum():
            return x[0].maximum(x[1])
        case ops.Step():
            return x[0].step(x[1])
        case ops.Select():
            return x[0].select(x[1], x[2])
        case ops.StopGradient():
            return x[0].stop_gradient()
        case _:
            assert_never(op)


EXPRESS: Final[dict[type, Expression]] = dict.fromkeys(ops.OPCODES, _express)
"""Per opcode, its replay over any recordable type (one exhaustive match serves them all)."""


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
    return _express(op, operands)


# --------------------------------------------------------------------------- rules
Cotangents = tuple[R | None, ...]


def _transpose_last(x: R) -> R:
    rank = len(x.shape)
    order = list(range(rank))
    order[-1], order[-2] = order[-2], order[-1]
    return x.permute(tuple(order))


def _map_rule(op: ops.Map, x: Sequence[R], out: R, g: R) -> Cotangents[R]:
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
            # exp(x), not expm1(x) + 1: that sum cancels for negative x (an ulp of 1, not of the
            # result), which made the gradients of elu, selu and celu lose every digit by x = -17.
            return (g * a.map(MapOperation.EXP),)
        case MapOperation.ERF:
            return (g * a.map(MapOperation.ERF_DERIVATIVE),)
        case MapOperation.ERF_DERIVATIVE:
            return (-(g * (a + a) * out),)
        case MapOperation.ATAN:
            return (g / (a.one_like() + a * a),)
        case _:
            assert_never(op.operation)


def _log_softmax_rule(op: ops.LogSoftmax, x: Sequence[R], out: R, g: R) -> Cotangents[R]:
    extent = out.shape[op.axis]
    total = g.sum_along(op.axis).broadcast_along(op.axis, extent)
    return (g - out.map(MapOperation.EXP) * total,)


def _logsumexp_rule(op: ops.LogSumExp, x: Sequence[R], out: R, g: R) -> Cotangents[R]:
    extent = x[0].shape[op.axis]
    spread = g.broadcast_along(op.axis, extent)
    return (spread * (x[0] - out.broadcast_along(op.axis, extent)).map(MapOperation.EXP),)


def _is_zero(x: R) -> R:
    """1 where x is ±0, else 0 (NaN included): ``0 >= x`` and ``x >= 0``, both Steps."""
    zero = x.zero_like()
    return zero.step(x) * x.step(zero)


def _powf_rule(x: Sequence[R], out: R, g: R) -> Cotangents[R]:
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


def _maximum_rule(x: Sequence[R], g: R) -> Cotangents[R]:
    left_wins = x[0].step(x[1])
    return (g * left_wins, g * (left_wins.one_like() - left_wins))


def _inverse(order: Sequence[int]) -> tuple[int, ...]:
    inverse = [0] * len(order)
    for position, axis in enumerate(order):
        inverse[axis] = position
    return tuple(inverse)


def _vjp(op: ops.Op, x: Sequence[R], out: R, g: R) -> Cotangents[R]:
    match op:
        case ops.Leaf() | ops.Parameter() | ops.Input():
            _source(op, "it has no derivative rule")
        case ops.Add():
            return (g, g)
        case ops.Sub():
            return (g, -g)
        case ops.Mul():
            return (g * x[1], g * x[0])
        case ops.Div():
            return (g / x[1], -(g * out / x[1]))
        case ops.Neg():
            return (-g,)
        case ops.Map():
            return _map_rule(op, x, out, g)
        case ops.MatMul():
            return (g.matmul(_transpose_last(x[1])), _transpose_last(x[0]).matmul(g))
        case ops.Sum():
            return (g.broadcast(x[0].shape),)
        case ops.SumAlong():
            return (g.broadcast_along(op.axis, x[0].shape[op.axis]),)
        case ops.Broadcast():
            return (g.sum().reshape(x[0].shape),)
        case ops.BroadcastAlong():
            return (g.sum_along(op.axis),)
        case ops.Reshape():
            return (g.reshape(x[0].shape),)
        case ops.Permute():
            return (g.permute(_inverse(op.order)),)
        case ops.Narrow():
            return (g.pad(op.axis, op.start, x[0].shape[op.axis]),)
        case ops.Pad():
            return (g.narrow(op.axis, op.start, x[0].shape[op.axis]),)
        case ops.Unfold():
            return (g.fold(op.axis, op.size, op.step, op.dilation, x[0].shape[op.axis]),)
        case ops.Fold():
            return (g.unfold(op.axis, op.size, op.step, op.dilation),)
        case ops.Gather():
            return (g.scatter(x[1]), None)
        case ops.Scatter():
            return (g.gather(x[1]), None)
        case ops.LogSoftmax():
            return _log_softmax_rule(op, x, out, g)
        case ops.LogSumExp():
            return _logsumexp_rule(op, x, out, g)
        case ops.Powf():
            return _powf_rule(x, out, g)
        case ops.Maximum():
            return _maximum_rule(x, g)
        case ops.Step():
            return (None, None)
        case ops.Select():
            # The mask routes the seed; the other side gets an exact zero, never g * 0.
            zero = g.zero_like()
            return (None, x[0].select(g, zero), x[0].select(zero, g))
        case ops.StopGradient():
            return (None,)
        case _:
            assert_never(op)


VJP: Final[dict[type, Rule]] = dict.fromkeys(ops.OPCODES, _vjp)
"""Per opcode, its derivative rule (one exhaustive match serves them all)."""


def vjp(op: ops.Op, operands: Sequence[R], output: R, seed: R) -> tuple[R | None, ...]:
    """One cotangent per operand (None for data operands), given the output's cotangent.

    Example:
        >>> from topos import Tensor
        >>> from topos.ir import ops
        >>> a, b = Tensor(3.0), Tensor(4.0)
        >>> [c.scalar() for c in vjp(ops.Mul(), [a, b], a * b, Tensor(1.0))]
        [4.0, 3.0]
    """
    return _vjp(op, operands, output, seed)


class Reads:
    """What a rule reads besides the seed: which operand payloads, and the node's output."""

    __slots__ = ("operands", "output")

    def __init__(self, operands: tuple[int, ...] = (), output: bool = False) -> None:
        self.operands = operands
        self.output = output


def _map_reads(op: ops.Map) -> Reads:
    reads_operand = {
        MapOperation.LN, MapOperation.SIN, MapOperation.COS, MapOperation.LOG1P, MapOperation.ERF, MapOperation.ATAN,
        MapOperation.EXPM1,
    }
    if op.operation in reads_operand:
        return Reads((0,))
    if op.operation is MapOperation.ERF_DERIVATIVE:
        return Reads((0,), True)
    return Reads((), True)


_NONE = Reads()


def _reads(op: ops.Op) -> Reads:
    match op:
        case ops.Mul() | ops.MatMul() | ops.Maximum():
            return Reads((0, 1))
        case ops.Div():
            return Reads((1,), True)
        case ops.Map():
            return _map_reads(op)
        case ops.Gather() | ops.Scatter():
            return Reads((1,))
        case ops.Select():
            return Reads((0,))
        case ops.LogSoftmax():
            return Reads((), True)
        case ops.LogSumExp():
            return Reads((0,), True)
        case ops.Powf():
            return Reads((0, 1), True)
        case (
            ops.Leaf() | ops.Parameter() | ops.Input() | ops.Add() | ops.Sub() | ops.Neg() | ops.Sum()
            | ops.SumAlong() | ops.Broadcast() | ops.BroadcastAlong() | ops.Reshape() | ops.Permute()
            | ops.Narrow() | ops.Pad() | ops.Unfold() | ops.Fold() | ops.Step() | ops.StopGradient()
        ):
            return _NONE
        case _:
            assert_never(op)


READS: Final[dict[type, Callable[[ops.Op], Reads]]] = dict.fromkeys(ops.OPCODES, _reads)
"""Per-opcode read contract of the rules (drives what a backward-capable plan retains).

Operands read only for their shape are not listed: a placeholder of the right shape serves.
"""


class Batcher(Protocol):
    """A batching rule: the node over operands of which ``batched`` carry a leading axis."""

    def __call__(self, op: ops.Op, x: Sequence[R], batched: Sequence[bool], size: int, /) -> R: ...


# Each rule below is data movement around the opcode itself, so every output element is
# the same fold over the same operand elements, in the same order, as in the example alone:
# sums keep their ascending order, products fold the same inner terms whatever rows share
# the product, and stacking per-example selections only adds an exact +0 to each element.


def _rows(x: R, size: int) -> tuple[R, tuple[int, ...]]:
    """``[B, n, *rest]`` as ``[n, B * volume(rest)]``: the examples side by side as columns."""
    n, rest = x.shape[1], x.shape.axes[2:]
    width = Shape(rest).volume
    flat = x.reshape(Shape((size, n, width))).permute((1, 0, 2))
    return flat.reshape(Shape((n, size * width))), rest


def _unrows(x: R, size: int, rest: tuple[int, ...]) -> R:
    """The inverse of :func:`_rows` for a result of ``m`` rows: ``[B, m, *rest]``."""
    m, width = x.shape[0], x.shape[1] // size
    return x.reshape(Shape((m, size, width))).permute((1, 0, 2)).reshape(Shape((size, m, *rest)))


def _stacked(pieces: list[R]) -> R:
    """Examples ``[1, *rest]`` each, in order, as one ``[B, *rest]``.

    Pairs are padded into place and added, level by level, so each level costs one pass over
    the batch (``B log B`` in all, not ``B^2``). Every position adds an exact +0 to one
    example's element; the pieces here come from a selection, which folds from +0 and so
    never holds a -0 that the addition would turn into +0.
    """
    while len(pieces) > 1:
        paired: list[R] = []
        for left, right in zip(pieces[0::2], pieces[1::2], strict=False):
            extent = left.shape[0] + right.shape[0]
            paired.append(left.pad(0, 0, extent) + right.pad(0, left.shape[0], extent))
        if len(pieces) % 2:
            paired.append(pieces[-1])
        pieces = paired
    return pieces[0]


def _selected_batched(op: ops.Gather | ops.Scatter, x: Sequence[R], batched: Sequence[bool], size: int) -> R:
    values, selection = x
    if not batched[1]:
        # One selection for every example: the examples ride along as columns.
        columns, rest = _rows(values, size)
        return _unrows(columns.gather(selection) if isinstance(op, ops.Gather) else columns.scatter(selection), size, rest)
    if isinstance(op, ops.Gather) and not batched[0]:
        count, vocab = selection.shape[1], selection.shape[2]
        rows = values.gather(selection.reshape(Shape((size * count, vocab))))
        return rows.reshape(Shape((size, count, *values.shape.axes[1:])))
    # Each example selects from its own values: one selection per example, stacked. A
    # block-diagonal selection would do the same in one node, but its masked product
    # visits B^2 blocks of which B hold terms (measured: slower than a Python loop on the
    # small GPT at batch 16).
    pieces: list[R] = []
    for example in range(size):
        own = selection.narrow(0, example, 1).reshape(Shape(selection.shape.axes[1:]))
        rows = values.narrow(0, example, 1).reshape(Shape(values.shape.axes[1:])) if batched[0] else values
        out = rows.gather(own) if isinstance(op, ops.Gather) else rows.scatter(own)
        pieces.append(out.reshape(Shape((1, *out.shape.axes))))
    return _stacked(pieces)


def _matmul_batched(x: Sequence[R], batched: Sequence[bool], size: int) -> R:
    """A product with one batched side; rows of the examples fold into one product.

    Every output element stays the fold over the same inner terms in ascending order, so
    merging the examples' rows (or columns) into one product changes no bit, and the
    shared weight is read once instead of repeated per example.
    """
    a, b = x
    if batched[0] and not batched[1] and b.shape.rank == 2:
        inner = a.shape.axes[-1]
        merged = a.reshape(Shape((a.shape.volume // inner, inner))).matmul(b)
        return merged.reshape(Shape((*a.shape.axes[:-1], b.shape.axes[-1])))
    if batched[1] and not batched[0] and a.shape.rank == 2:
        inner, width = b.shape.axes[1], b.shape.axes[2]
        columns = b.permute((1, 0, 2)).reshape(Shape((inner, size * width)))
        merged = a.matmul(columns).reshape(Shape((a.shape.axes[0], size, width)))
        return merged.permute((1, 0, 2))
    return _express(ops.MatMul(), [v if k else v.broadcast_along(0, size) for v, k in zip(x, batched, strict=True)])


def _batched(op: ops.Op, x: Sequence[R], batched: Sequence[bool], size: int) -> R:
    match op:
        case ops.Leaf() | ops.Parameter() | ops.Input():
            _source(op, "it gains the batch axis in its payload, not by a rule")
        case (
            ops.Add() | ops.Sub() | ops.Mul() | ops.Div() | ops.Neg() | ops.Map() | ops.Powf()
            | ops.Maximum() | ops.Step() | ops.Select() | ops.StopGradient()
        ):
            # An unbatched operand is repeated along the new axis: the opcode then meets,
            # at every example, exactly the operands it met alone.
            return _express(op, [v if b else v.broadcast_along(0, size) for v, b in zip(x, batched, strict=True)])
        case ops.MatMul():
            return _matmul_batched(x, batched, size)
        case ops.Sum():
            rows = x[0] if x[0].shape.rank == 2 else x[0].reshape(Shape((size, x[0].shape.volume // size)))
            return rows.sum_along(1)
        case (
            ops.SumAlong() | ops.LogSoftmax() | ops.LogSumExp() | ops.BroadcastAlong() | ops.Narrow() | ops.Pad()
            | ops.Unfold() | ops.Fold()
        ):
            return _express(attrs.evolve(op, axis=op.axis + 1), x)
        case ops.Broadcast():
            out = x[0].reshape(Shape((size,)))
            for axis, extent in enumerate(op.shape.axes):
                out = out.broadcast_along(axis + 1, extent)
            return out
        case ops.Reshape():
            return x[0].reshape(Shape((size, *op.shape.axes)))
        case ops.Permute():
            return x[0].permute((0, *(axis + 1 for axis in op.order)))
        case ops.Gather() | ops.Scatter():
            return _selected_batched(op, x, batched, size)
        case _:
            assert_never(op)


BATCH: Final[dict[type, Batcher]] = dict.fromkeys(ops.OPCODES, _batched)
"""Per opcode, its batching rule (one exhaustive match serves them all)."""


def batch_rule(op: ops.Op, operands: Sequence[R], batched: Sequence[bool], size: int) -> R:
    """The node of ``op`` over ``operands`` of which ``batched`` carry a leading axis of ``size``.

    At least one operand is batched; the result always is.

    Example:
        >>> from topos import Tensor
        >>> from topos.ir import ops
        >>> rows = Tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> batch_rule(ops.Sum(), [rows], [True], 2).tolist()
        [3.0, 7.0]
    """
    return _batched(op, operands, batched, size)
