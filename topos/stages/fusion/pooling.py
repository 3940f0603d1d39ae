"""Pooling: max-pool (a reduce window) and its source gradient, their home kernels and raises.

Contract:
- Matches (both share :class:`PoolMatch`'s geometry):

  - :class:`ReduceWindow` (max-pool): two square unfolds, permutation ``(0,1,2,4,3,5)``, a
    reshape to lanes, a left-associated ``maximum`` over ``narrow`` of each lane in lane
    order, and a squeezing reshape. Balanced folds and permuted lanes are not matched. The
    lanes and every running maximum but the last are shared (a training step's maximum
    rule reads them).
  - :class:`ReduceWindowGradient` (a max-pool's source gradient, the training plan's): the
    maximum rule the gradient stage records at each ``maximum(m, lane_k)``, last lane first
    (``G * step(m, lane_k)`` to ``m``, ``G * (1 - step(m, lane_k))`` to the lane), the lane
    cotangents padded back and summed, the reshape to windows, the permutation and the folds
    along 4 then 2; each cotangent may sit in an ``Add(+0, ·)``. Its steps must read the
    forward's lanes and running maxima, which it shares with :class:`ReduceWindow`.

- Home kernels:

  - :func:`max_pooled` walks the pooling lanes in the recorded lane order with the same
    elementwise maximum (fidelity *bit-identical*: maximum never rounds).
  - :func:`max_pool_gradient` is the maximum rule the gradient stage records (``G *
    step(m, lane)`` to the running maximum ``m``, ``G * (1 - step(m, lane))`` to the lane,
    last lane first, so a tie sends the cotangent to the earliest lane) with the same
    kernels in the same order (the step as a comparison cast to exact 1.0 and 0.0, the
    reference step's values), then the two reference folds (fidelity *composed*); where the
    windows tile the source (stride equal to size) each position has one term and the folds
    reduce to placing it. Two recorded steps are left out as identities: the padded lane
    cotangents summed into one ``[..., lanes]`` array (each slot gets one value and ``+0``
    elsewhere), and the ``+0`` additions around the folds. Both hold because every lane
    cotangent comes out of a recorded ``+0 + v`` (never ``-0``), and a fold starts from ``+0``.

- Raises: the max-pool becomes one ``stablehlo.reduce_window`` (a maximum region from
  ``-inf``); its gradient one ``stablehlo.select_and_scatter`` whose ``GE`` selection sends
  a tie to the earliest lane, as the recorded maximum rule does.

Example:
    >>> import numpy as np
    >>> from topos import f32
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> max_pooled(x, 2, 2, f32).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar, final

import attrs
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from topos.ir import ops
from topos.ir.element import ElementType
from topos.kernels import dispatch, reference
from topos.kernels.dispatch import Backend, Formula
from topos.stages.fusion.base import Array, Idiom, PatternMatch, RaiseWriter, View
from topos.stages.fusion.shared import (
    below_zero_add,
    flattened_windows,
    narrowed,
    unflattened_windows,
    wide_operands,
)
from topos.stages.stablehlo import i64_array

__all__ = [
    "REDUCE_WINDOW",
    "REDUCE_WINDOW_GRADIENT",
    "PoolMatch",
    "ReduceWindow",
    "ReduceWindowGradient",
    "max_pool_gradient",
    "max_pooled",
]


@attrs.frozen(slots=True)
class PoolMatch(PatternMatch):
    """The geometry the max-pool idioms share: square ``size`` windows at ``stride`` over a
    ``[batch, channels, height, width]`` ``source``."""

    source: int
    size: int
    stride: int
    batch: int
    channels: int
    height: int
    width: int


@final
@attrs.frozen(slots=True)
class ReduceWindow(PoolMatch):
    """A max-pool over square ``size`` windows recorded as lanes folded by ``maximum``."""

    kind: ClassVar[Formula] = Formula.REDUCE_WINDOW

    def reads(self) -> tuple[int, ...]:
        return (self.source,)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        (source,) = arrays
        return (max_pooled(source, self.size, self.stride, element),)


@final
@attrs.frozen(slots=True)
class ReduceWindowGradient(PoolMatch):
    """A max-pool's source gradient from ``gradient``: the maximum rule over the lanes, folded back."""

    kind: ClassVar[Formula] = Formula.REDUCE_WINDOW_GRADIENT

    gradient: int

    def reads(self) -> tuple[int, ...]:
        return (self.source, self.gradient)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        source, gradient = arrays
        return (max_pool_gradient(source, gradient, self.size, self.stride, element),)


# --------------------------------------------------------------------------- matchers


def _lane(view: View, index: int, position: int) -> int | None:
    """The lanes ``narrow(lanes, 4, position, 1)`` reads at ``index``, else None."""
    op = view.op(index)
    if isinstance(op, ops.Narrow) and op.axis == 4 and op.start == position and op.length == 1:
        return view.node(index).operands[0]
    return None


def _pool_lanes(view: View, index: int) -> tuple[list[int], int, int, int] | None:
    """``reshape(permute(unfold(unfold(x))))`` at ``index``: a max-pool's lanes, each window
    flattened along axis 4. Returns (the chain, its source, the window size, the stride)."""
    lanes = view.node(index)
    found = flattened_windows(view, index, 5, (0, 1, 2, 4, 3, 5))
    if found is None:
        return None
    permute, inner, outer, inner_op, outer_op = found
    size = outer_op.size
    source = view.node(outer).operands[0]
    if inner_op.size != size or lanes.shape[4] != size * size or view.node(source).shape.rank != 4:
        return None
    return [index, permute, inner, outer], source, size, outer_op.step


def _match_reduce_window(view: View, index: int) -> ReduceWindow | None:
    squeeze = view.node(index)
    if not isinstance(squeeze.op, ops.Reshape):
        return None
    fold = squeeze.operands[0]
    fold_shape = view.node(fold).shape
    if fold_shape.rank != 5 or fold_shape[4] != 1 or squeeze.shape.axes != fold_shape.axes[:4]:
        return None
    maxima: list[int] = []
    lanes: list[int] = []
    current = fold
    while isinstance(view.op(current), ops.Maximum):
        maxima.append(current)
        left, right = view.node(current).operands
        lanes.append(right)
        current = left
    lanes.append(current)
    lanes.reverse()
    if not maxima:
        return None
    lane_source = _lane(view, lanes[0], 0)
    if lane_source is None or any(_lane(view, lane, k) != lane_source for k, lane in enumerate(lanes)):
        return None
    pool = _pool_lanes(view, lane_source)
    if pool is None or len(lanes) != pool[2] * pool[2]:
        return None
    chain, source, size, stride = pool
    batch, channels, height, width = view.node(source).shape.axes
    # The lanes and all but the last running maximum are shared: the maximum rule of a
    # training step reads them, and its gradient match recomputes them from the source.
    return ReduceWindow(
        index, [fold], shared=[*chain, *lanes, *maxima[1:]], source=source, size=size, stride=stride,
        batch=batch, channels=channels, height=height, width=width,
    )  # fmt: skip


def _match_reduce_window_gradient(view: View, index: int) -> ReduceWindowGradient | None:
    """The maximum rule over a max-pool's lanes, as the gradient stage records it, folded back.

    From the root down: fold(2), fold(4), the permutation, the reshape to windows, the sum of
    ``pad(c_k, 4, k)`` (lane 0 last, the first one over ``+0``), and per lane ``k >= 1`` the
    rule at ``maximum(m, lane_k)``: ``c_k = G * (1 - step(m, lane_k))`` and
    ``G * step(m, lane_k)`` the cotangent of ``m``, down to ``reshape(g)``; each cotangent
    may sit in the gradient stage's ``Add(+0, ·)``.
    """
    fold_h = view.node(index)
    if not (isinstance(fold_h.op, ops.Fold) and fold_h.op.axis == 2 and fold_h.op.dilation == 1):
        return None
    size, stride = fold_h.op.size, fold_h.op.step
    interiors: list[int] = []
    fold_w = below_zero_add(view, fold_h.operands[0], interiors)
    fold_w_op = view.op(fold_w)
    if not (isinstance(fold_w_op, ops.Fold) and fold_w_op.axis == 4 and fold_w_op.dilation == 1):
        return None
    if (fold_w_op.size, fold_w_op.step) != (size, stride):
        return None
    unflattened = unflattened_windows(view, view.node(fold_w).operands[0], (0, 1, 2, 4, 3, 5), interiors)
    if unflattened is None:
        return None
    permute, windows = unflattened
    interiors += [fold_w, permute, windows]
    total = view.node(windows).operands[0]
    pads: list[int] = []
    while isinstance(view.op(total), ops.Add) and below_zero_add(view, total, []) == total:
        interiors.append(total)
        total, pad = view.node(total).operands
        pads.append(pad)
    first = below_zero_add(view, total, interiors)
    if first == total or size < 2 or len(pads) + 1 != size * size:
        return None
    pads.append(first)
    cotangents: list[int] = []
    for position, pad in enumerate(pads):
        pad_op = view.op(pad)
        if not (isinstance(pad_op, ops.Pad) and pad_op.axis == 4 and pad_op.start == position):
            return None
        cotangents.append(view.node(pad).operands[0])
    interiors += pads
    steps: list[tuple[int, ...]] = []
    cotangent = cotangents[0]
    for position in range(1, size * size):
        kept = below_zero_add(view, cotangent, interiors)
        lost = below_zero_add(view, cotangents[position], interiors)
        kept_node, lost_node = view.node(kept), view.node(lost)
        if not (isinstance(kept_node.op, ops.Mul) and isinstance(lost_node.op, ops.Mul)):
            return None
        cotangent, wins = kept_node.operands
        complement = lost_node.operands[1]
        complement_node = view.node(complement)
        if lost_node.operands[0] != cotangent or not isinstance(view.op(wins), ops.Step):
            return None
        if not isinstance(complement_node.op, ops.Sub) or complement_node.operands[1] != wins:
            return None
        if view.constant(complement_node.operands[0]) != 1.0:
            return None
        interiors += [kept, lost, wins, complement]
        steps.append(view.node(wins).operands)
    reshaped = below_zero_add(view, cotangent, interiors)
    if not isinstance(view.op(reshaped), ops.Reshape):
        return None
    interiors.append(reshaped)
    gradient = view.node(reshaped).operands[0]
    # The steps must compare the forward's running maxima with its lanes, in lane order.
    lanes = _lane(view, steps[0][0], 0)
    pool = None if lanes is None else _pool_lanes(view, lanes)
    if lanes is None or pool is None or pool[2:] != (size, stride):
        return None
    chain, source, _, _ = pool
    shared = [steps[0][0]]
    for position, (running, lane) in enumerate(steps, start=1):
        if _lane(view, lane, position) != lanes:
            return None
        if position > 1 and not (isinstance(view.op(running), ops.Maximum) and view.node(running).operands == steps[position - 2]):
            return None
        shared += [running, lane]
    shape = view.node(source).shape.axes
    image = view.node(lanes).shape.axes[:4]
    if fold_h.shape.axes != shape or view.node(gradient).shape.axes != image:
        return None
    if view.node(reshaped).shape.axes != (*image, 1) or view.node(windows).shape.axes != (*image, size, size):
        return None
    batch, channels, height, width = shape
    return ReduceWindowGradient(
        index, interiors, shared=[*chain, *shared], source=source, gradient=gradient, size=size, stride=stride,
        batch=batch, channels=channels, height=height, width=width,
    )  # fmt: skip


# --------------------------------------------------------------------------- home kernels


def max_pooled(source: Array, size: int, stride: int, element: ElementType) -> Array:
    """Max-pool ``[B, C, H, W]`` over square windows, folding lanes left to right."""
    dispatch.record_service(Formula.REDUCE_WINDOW, element, Backend.FUSED)
    windows = sliding_window_view(source, (size, size), axis=(2, 3))[:, :, ::stride, ::stride]
    running = windows[..., 0, 0]
    for lane in range(1, size * size):
        running = reference.maximum(running, windows[..., lane // size, lane % size], element)
    return np.ascontiguousarray(running)


def max_pool_gradient(source: Array, gradient: Array, size: int, stride: int, element: ElementType) -> Array:
    """The ``[B, C, H, W]`` gradient of :func:`max_pooled` ``source`` from ``gradient`` ``[B, C, OH, OW]``.

    Example:
        >>> from topos import f64
        >>> x = np.array([[[[1.0, 3.0, 3.0], [0.0, 2.0, 3.0]]]])
        >>> max_pool_gradient(x, np.array([[[[10.0, 20.0]]]]), 2, 1, f64)[0, 0].tolist()
        [[0.0, 30.0, 0.0], [0.0, 0.0, 0.0]]
    """
    dispatch.record_service(Formula.REDUCE_WINDOW_GRADIENT, element, Backend.FUSED)
    batch, channels, out_rows, out_columns = gradient.shape
    windows = sliding_window_view(source, (size, size), axis=(2, 3))[:, :, ::stride, ::stride]
    # Lane-major and contiguous (one copy): each lane is one run for the elementwise kernels.
    lanes = np.ascontiguousarray(windows.transpose(4, 5, 0, 1, 2, 3)).reshape(size * size, *gradient.shape)
    running = [lanes[0]]
    for later in lanes[1:-1]:
        running.append(reference.maximum(running[-1], later, element))
    zero, one = np.zeros(gradient.shape, element.dtype), np.ones(gradient.shape, element.dtype)
    rows, columns = source.shape[2:]
    # Every lane cotangent comes out of a ``+0 + v``, so it is never -0 and a fold's own
    # ``+0 + v`` leaves it as it is. Windows that tile the source exactly give each position
    # one term: the lane cotangents are then written straight into the result, whose
    # [B, C, OH, kh, OW, kw] view is the layout the folds would read.
    tiles = stride == size and (rows, columns) == (out_rows * size, out_columns * size)
    result = np.empty(source.shape, element.dtype) if tiles else None
    spread_shape = (batch, channels, out_rows, size, out_columns, size)
    spread = result.reshape(spread_shape) if result is not None else np.empty(spread_shape, element.dtype)
    cotangent = reference.add(zero, gradient, element)
    for lane in range(size * size - 1, 0, -1):
        # The reference step's exact 1.0 and 0.0, without its float64 detour.
        wins = np.greater_equal(running[lane - 1], lanes[lane]).astype(element.dtype)
        lost = reference.mul(cotangent, reference.sub(one, wins, element), element)
        spread[:, :, :, lane // size, :, lane % size] = reference.add(zero, lost, element)
        cotangent = reference.add(zero, reference.mul(cotangent, wins, element), element)
    spread[:, :, :, 0, :, 0] = cotangent
    if result is not None:
        return result
    if stride == size:
        # Tiles with a remainder the windows never reach: the tiled region as above, zeros past it.
        out = np.zeros(source.shape, element.dtype)
        out[:, :, : out_rows * size, : out_columns * size] = spread.reshape(
            batch, channels, out_rows * size, out_columns * size
        )
        return out
    across = reference.fold(spread, 4, size, stride, 1, columns, element)
    return reference.fold(across, 2, size, stride, 1, rows, element)


# --------------------------------------------------------------------------- raises


def _raise_reduce_window(e: RaiseWriter, match: ReduceWindow) -> None:
    """The max-pool composition -> one reduce_window with a maximum region, init -inf."""
    root = match.root
    size, stride = match.size, match.stride
    source_shape = (match.batch, match.channels, match.height, match.width)
    out_shape = e.network.nodes_[root].shape
    init = e.scalar_constant(-math.inf, e.mlir, "init")
    scalar = f"tensor<{e.mlir}>"
    # Region values are not isolated from the function body: their names must be unique too.
    a, b, m = e.temp("a"), e.temp("b"), e.temp("max")
    e.lines.append(
        f'    %v{root} = "stablehlo.reduce_window"({e.names[match.source]}, {init}) '
        f"<{{window_dimensions = {i64_array((1, 1, size, size))}, window_strides = {i64_array((1, 1, stride, stride))}}}> ({{\n"
        f"    ^bb0({a}: {scalar}, {b}: {scalar}):\n"
        f"      {m} = stablehlo.maximum {a}, {b} : {scalar}\n"
        f"      stablehlo.return {m} : {scalar}\n"
        f"    }}) : ({e.ty(source_shape)}, {scalar}) -> {e.ty(out_shape)}"
    )
    e.names[root] = f"%v{root}"


def _raise_reduce_window_gradient(e: RaiseWriter, match: ReduceWindowGradient) -> None:
    """The max-pool's source gradient -> one select_and_scatter, summing where windows overlap.

    Its selection keeps the held element while it is ``GE`` the next one in row-major
    window order, so a tie goes to the earliest lane, as the recorded maximum rule sends it.
    """
    root, size, stride = match.root, match.size, match.stride
    shape, image = (match.batch, match.channels, match.height, match.width), e.network.nodes_[match.gradient].shape
    x, g = wide_operands(e, [(e.names[match.source], shape), (e.names[match.gradient], image)], "pool")
    zero, scalar, target = e.scalar_constant(0.0, e.wide, "init"), f"tensor<{e.wide}>", e.temp("scattered")
    a, b, hit, total = e.temp("a"), e.temp("b"), e.temp("ge"), e.temp("sum")
    window = f"window_dimensions = {i64_array((1, 1, size, size))}, window_strides = {i64_array((1, 1, stride, stride))}"
    e.lines.append(
        f'    {target} = "stablehlo.select_and_scatter"({x}, {g}, {zero}) <{{{window}}}> ({{\n'
        f"    ^bb0({a}: {scalar}, {b}: {scalar}):\n"
        f"      {hit} = stablehlo.compare GE, {a}, {b}, FLOAT : ({scalar}, {scalar}) -> tensor<i1>\n"
        f"      stablehlo.return {hit} : tensor<i1>\n"
        f"    }}, {{\n    ^bb0({a}_: {scalar}, {b}_: {scalar}):\n"
        f"      {total} = stablehlo.add {a}_, {b}_ : {scalar}\n"
        f"      stablehlo.return {total} : {scalar}\n"
        f"    }}) : ({e.ty(shape, e.wide)}, {e.ty(image, e.wide)}, {scalar}) -> {e.ty(shape, e.wide)}"
    )
    widens = e.wide != e.mlir
    e.names[root] = narrowed(e, target, shape, f"%v{root}") if widens else e.reshape(target, shape, shape, f"%v{root}")


# --------------------------------------------------------------------------- catalog entries

REDUCE_WINDOW: Idiom[ReduceWindow] = Idiom(ReduceWindow, _match_reduce_window, _raise_reduce_window)
"""A max-pool: matched as lanes folded by ``maximum``, raised as one reduce_window."""

REDUCE_WINDOW_GRADIENT: Idiom[ReduceWindowGradient] = Idiom(
    ReduceWindowGradient, _match_reduce_window_gradient, _raise_reduce_window_gradient
)
"""A max-pool's source gradient: matched as the recorded maximum rule, raised as one select_and_scatter."""
