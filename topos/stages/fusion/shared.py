"""Helpers several idioms share: recorded shapes they all walk, and how their raises convert.

Contract:
- :func:`window_unfolds` recognizes both spatial axes cut into windows, the step im2col and
  max-pool record alike; :func:`flattened_windows`, those windows permuted and reshaped
  (im2col's patch rows, max-pool's lanes); :func:`unflattened_windows`, the gradient's
  way back (a reshape, then a permute), under its ``+0`` additions.
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

__all__ = [
    "below_zero_add",
    "flattened_windows",
    "narrowed",
    "positive_zero",
    "unflattened_windows",
    "wide_operands",
    "window_unfolds",
]


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


def flattened_windows(
    view: View, index: int, rank: int, order: tuple[int, ...]
) -> tuple[int, int, int, ops.Unfold, ops.Unfold] | None:
    """``reshape(permute(unfold(unfold(x)), order))`` of rank ``rank`` at ``index``: the
    windows of :func:`window_unfolds` laid out by ``order`` and flattened. Returns (the
    permute, then what :func:`window_unfolds` returns).

    Example:
        >>> import numpy as np
        >>> from topos import Tape
        >>> from topos.nn import max_pool
        >>> network, y = Tape.record(lambda t: max_pool(t.input(np.zeros((1, 1, 4, 4))), 2))
        >>> every = [True] * len(network.nodes_)
        >>> flattened_windows(View(network, every, every), 4, 5, (0, 1, 2, 4, 3, 5))[:3]
        (3, 2, 1)
    """
    flat = view.node(index)
    if not isinstance(flat.op, ops.Reshape) or flat.shape.rank != rank:
        return None
    permute = flat.operands[0]
    permute_op = view.op(permute)
    if not isinstance(permute_op, ops.Permute) or permute_op.order != order:
        return None
    unfolds = window_unfolds(view, view.node(permute).operands[0])
    return None if unfolds is None else (permute, *unfolds)


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


def unflattened_windows(
    view: View, index: int, order: tuple[int, ...], interiors: list[int]
) -> tuple[int, int] | None:
    """``permute(reshape(y), order)`` at ``index``, each step under :func:`below_zero_add`
    (which appends the additions to ``interiors``): a gradient laying flattened windows
    back out. Returns (the permute, the reshape).

    Example:
        >>> import numpy as np
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: t.input(np.zeros((2, 6))).reshape((2, 2, 3)).permute((0, 2, 1)))
        >>> unflattened_windows(View(network, [True] * 3, [True] * 3), 2, (0, 2, 1), [])
        (2, 1)
    """
    permute = below_zero_add(view, index, interiors)
    permute_op = view.op(permute)
    if not isinstance(permute_op, ops.Permute) or permute_op.order != order:
        return None
    reshape = below_zero_add(view, view.node(permute).operands[0], interiors)
    if not isinstance(view.op(reshape), ops.Reshape):
        return None
    return permute, reshape


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
