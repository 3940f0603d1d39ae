"""Shape rules: the one place that says what shape each opcode produces.

``infer`` is a pure function of an opcode and its operand shapes. Recording calls it at
the user's line (and adds that line to the message); host-side tensor arithmetic calls it
too, so a payload can never disagree with the shape its node recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from topos.errors import InvalidArgumentError, ShapeMismatchError
from topos.ir import ops
from topos.ir.shape import Shape

__all__ = ["infer", "unfold_count"]


def unfold_count(extent: int, size: int, step: int, dilation: int) -> int:
    """How many windows fit; 0 when none does."""
    span = dilation * (size - 1) + 1
    if span > extent:
        return 0
    return (extent - span) // step + 1


def _axis(op: ops.Op, axis: int, rank: int, shape: Shape) -> None:
    if axis >= rank:
        raise InvalidArgumentError(f"{op.name}: axis {axis} is out of range for shape {shape}")


def _same(op: ops.Op, shapes: Sequence[Shape]) -> Shape:
    first, second = shapes
    if first != second:
        raise ShapeMismatchError(
            f"{op.name}: operand shapes {first} and {second} differ "
            "(nothing broadcasts implicitly; use broadcast, broadcast_along or broadcast_to)"
        )
    return first


def _selected(op: ops.Op, shapes: Sequence[Shape], meets: int, wanted: str) -> Shape:
    """Gather's and Scatter's rule, one the other's adjoint: axis ``meets`` of the selection
    ``[count, vocab]`` (vocab for Gather, count for Scatter) must equal the first axis of the
    values, which the selection's other axis replaces. ``wanted`` words the match for the message."""
    values, selection = shapes
    if values.rank < 1 or selection.rank != 2 or selection[meets] != values[0]:
        raise ShapeMismatchError(f"{op.name}: selection {selection} must be [count, vocab] with {wanted} {values}")
    return Shape((selection[1 - meets], *values.axes[1:]))


def infer(op: ops.Op, shapes: Sequence[Shape]) -> Shape:
    """The result shape of ``op`` over operands of ``shapes``; raises on a bad combination."""
    if len(shapes) != op.arity:
        raise InvalidArgumentError(f"{op.name} takes {op.arity} operands, got {len(shapes)}")
    match op:
        case ops.Leaf() | ops.Parameter() | ops.Input():
            raise InvalidArgumentError(f"{op.name} is a source: its shape comes from its payload")
        case ops.Add() | ops.Sub() | ops.Mul() | ops.Div() | ops.Powf() | ops.Maximum() | ops.Step():
            return _same(op, shapes)
        case ops.Neg() | ops.Map() | ops.StopGradient():
            return shapes[0]
        case ops.Select():
            mask, on_true, on_false = shapes
            if not mask == on_true == on_false:
                raise ShapeMismatchError(
                    f"Select: mask {mask}, on_true {on_true} and on_false {on_false} must have one shape "
                    "(nothing broadcasts implicitly; use broadcast_to)"
                )
            return mask
        case ops.MatMul():
            left, right = shapes
            if left.rank < 2 or right.rank != left.rank:
                raise ShapeMismatchError(
                    f"MatMul: operands must have equal rank >= 2, got {left} and {right}"
                )
            if left.axes[:-2] != right.axes[:-2]:
                raise ShapeMismatchError(
                    f"MatMul: batch axes of {left} and {right} differ (no broadcast batching)"
                )
            if left[-1] != right[-2]:
                raise ShapeMismatchError(
                    f"MatMul: inner extents differ: {left} has {left[-1]} columns, "
                    f"{right} has {right[-2]} rows"
                )
            return Shape((*left.axes[:-1], right[-1]))
        case ops.Sum():
            return Shape.scalar()
        case ops.SumAlong(axis=axis) | ops.LogSumExp(axis=axis):
            _axis(op, axis, shapes[0].rank, shapes[0])
            return shapes[0].without_axis(axis)
        case ops.LogSoftmax(axis=axis):
            _axis(op, axis, shapes[0].rank, shapes[0])
            return shapes[0]
        case ops.Broadcast(shape=shape):
            if shapes[0].volume != 1:
                raise ShapeMismatchError(
                    f"Broadcast: operand {shapes[0]} must hold exactly one element "
                    f"(use broadcast_along or broadcast_to for {shape})"
                )
            return shape
        case ops.BroadcastAlong(axis=axis, extent=extent):
            if axis > shapes[0].rank:
                raise InvalidArgumentError(
                    f"BroadcastAlong: axis {axis} is out of range for shape {shapes[0]}"
                )
            return shapes[0].with_axis(axis, extent)
        case ops.Reshape(shape=shape):
            if shape.volume != shapes[0].volume:
                raise ShapeMismatchError(
                    f"Reshape: {shapes[0]} ({shapes[0].volume} elements) cannot become "
                    f"{shape} ({shape.volume} elements)"
                )
            return shape
        case ops.Permute(order=order):
            if sorted(order) != list(range(shapes[0].rank)):
                raise InvalidArgumentError(
                    f"Permute: order {list(order)} is not a permutation of the axes of {shapes[0]}"
                )
            return Shape(tuple(shapes[0][axis] for axis in order))
        case ops.Narrow(axis=axis, start=start, length=length):
            _axis(op, axis, shapes[0].rank, shapes[0])
            if start + length > shapes[0][axis]:
                raise InvalidArgumentError(
                    f"Narrow: window start={start} length={length} does not fit axis {axis} "
                    f"of {shapes[0]}"
                )
            return shapes[0].replace(axis, length)
        case ops.Pad(axis=axis, start=start, extent=extent):
            _axis(op, axis, shapes[0].rank, shapes[0])
            if start + shapes[0][axis] > extent:
                raise InvalidArgumentError(
                    f"Pad: operand {shapes[0]} placed at start={start} does not fit "
                    f"extent={extent} on axis {axis}"
                )
            return shapes[0].replace(axis, extent)
        case ops.Unfold(axis=axis, size=size, step=step, dilation=dilation):
            _axis(op, axis, shapes[0].rank, shapes[0])
            count = unfold_count(shapes[0][axis], size, step, dilation)
            if count == 0:
                raise InvalidArgumentError(
                    f"Unfold: a window of size={size} dilation={dilation} does not fit axis "
                    f"{axis} of {shapes[0]}"
                )
            return Shape((*shapes[0].axes[:axis], count, size, *shapes[0].axes[axis + 1:]))
        case ops.Fold(axis=axis, size=size, step=step, dilation=dilation, extent=extent):
            shape = shapes[0]
            count = unfold_count(extent, size, step, dilation)
            if axis + 1 >= shape.rank or count == 0 or shape[axis] != count or shape[axis + 1] != size:
                raise ShapeMismatchError(
                    f"Fold: operand {shape} is not what unfolding an axis of extent={extent} "
                    f"with size={size} step={step} dilation={dilation} at axis {axis} produces"
                )
            return Shape((*shape.axes[:axis], extent, *shape.axes[axis + 2:]))
        case ops.Gather():
            return _selected(op, shapes, 1, "vocab equal to the first axis of table")
        case ops.Scatter():
            return _selected(op, shapes, 0, "count equal to the rows of gradient")
        case _:
            assert_never(op)
