"""Helpers several idioms share: recorded shapes they all walk, and how their raises convert.

Contract:
- :func:`window_unfolds` recognizes both spatial axes cut into windows, the step im2col and
  max-pool record alike.
- :func:`below_zero_add` steps under the gradient stage's ``Add(+0 leaf, value)``, which
  wraps each cotangent a training plan records (the convolution's input gradient and the
  max-pool's gradient both take it into their group).
- :func:`wide_operands` and :func:`narrowed` are the raises' conversions: a bf16 raise
  computes in f32 like the reference, converting its operands up once and its result back
  once; for an element that computes in its own type both write nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from topos.ir import ops
from topos.ir.shape import Shape
from topos.stages.fusion.base import View
from topos.stages.stablehlo import FunctionWriter

__all__ = ["below_zero_add", "narrowed", "positive_zero", "wide_operands", "window_unfolds"]


def window_unfolds(view: View, index: int) -> tuple[int, int, ops.Unfold, ops.Unfold] | None:
    """``unfold(unfold(x, axis 2), axis 4)`` at ``index``, undilated and at one step: both
    spatial axes cut into windows (im2col's and max-pool's). Returns (inner, outer, their ops)."""
    inner_op = view.op(index)
    if not isinstance(inner_op, ops.Unfold) or inner_op.axis != 4 or inner_op.dilation != 1:
        return None
    outer = view.node(index).operands[0]
    outer_op = view.op(outer)
    if not isinstance(outer_op, ops.Unfold) or outer_op.axis != 2 or outer_op.dilation != 1:
        return None
    return None if outer_op.step != inner_op.step else (index, outer, inner_op, outer_op)


def positive_zero(view: View, index: int) -> bool:
    """Whether ``index`` is a constant leaf filled with ``+0`` (never ``-0``)."""
    fill = view.constant(index)
    return fill is not None and fill == 0.0 and math.copysign(1.0, fill) > 0


def below_zero_add(view: View, index: int, interiors: list[int]) -> int:
    """Step under the gradient stage's ``Add(+0 leaf, value)`` at ``index``, if it is one
    (appending the addition to ``interiors``); else ``index`` itself."""
    node = view.node(index)
    if isinstance(node.op, ops.Add):
        zero, value = node.operands
        if positive_zero(view, zero) and view.node(zero).shape == node.shape:
            interiors.append(index)
            return value
    return index


def wide_operands(e: FunctionWriter, values: Sequence[tuple[str, Shape | Sequence[int]]], suffix: str) -> list[str]:
    """Convert operands up to the compute type (bf16 raises run in f32, like the reference).

    Example:
        >>> from topos import bf16
        >>> writer = FunctionWriter(bf16)
        >>> wide_operands(writer, [("%a", (2,))], "conv")
        ['%v0_conv0_wide']
        >>> writer.lines
        ['    %v0_conv0_wide = stablehlo.convert %a : (tensor<2xbf16>) -> tensor<2xf32>']
    """
    return [e.convert(v, s, e.mlir, e.wide, f"{suffix}{i}_wide") for i, (v, s) in enumerate(values)]


def narrowed(e: FunctionWriter, value: str, shape: Shape | Sequence[int], name: str) -> str:
    """``value`` converted back from the compute type to storage as ``name`` (or ``value``
    itself when the element computes in its own type)."""
    if e.wide == e.mlir:
        return value
    return e.convert_named(value, shape, e.wide, e.mlir, name)
