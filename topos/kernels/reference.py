"""Reference kernels: the bits every other road must reproduce under ``Numerics.EXACT``.

Contract:
- inputs and outputs are numpy arrays in the element's storage dtype;
- elementwise arithmetic runs in the element's compute dtype and rounds once to storage
  (bf16 computes in f32 and rounds to nearest-even);
- every sum folds from an exact zero, element by element, in ascending row-major order
  of the reduced positions, in the element's accumulator dtype, and rounds once;
- a matrix product accumulates each output over the inner index in ascending order,
  multiplying then adding (never a fused multiply-add), from an exact zero;
- maps and ``powf`` are the portable kernels of :mod:`topos.kernels.libm` (float32 and
  bfloat16 correctly rounded, float64 within 1 ulp): the same bits on every machine.

This order is the one the StableHLO reference interpreter uses, so emitted modules of the
non-transcendental opcodes evaluate to these same bits (its maps are C++'s libm, not ours).

Bits depend on values alone, never on storage. A payload may be dense, a constant (a
zero-stride view), a selection, or a strided view (permute, narrow, broadcast), and numpy
picks its inner loop per layout: ``np.add`` and ``np.multiply`` with a zero-stride second
operand commute it, so of two NaNs the other one's payload survives. So every elementwise
ufunc (arithmetic, ``maximum``) runs through :func:`by_value`, which
lays each operand out as one C-contiguous run of the result's volume (no zero stride, no
rank 0) first; folds and products read C-contiguous operands (``_settled``), and
``maximum.reduce`` does too (:func:`max_along`). The interpreter, plans and home kernels
all call these same helpers, and a test probes on each machine that this layout's bits are
a function of each element's values alone (a dense run, a length-1 run, any position).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from topos.ir.element import ElementType
from topos.ir.ops import MapOperation
from topos.kernels import libm

__all__ = [
    "add",
    "broadcast",
    "broadcast_along",
    "by_value",
    "div",
    "fold",
    "gather_dense",
    "gather_rows",
    "log_softmax",
    "logsumexp",
    "map_operation",
    "matmul",
    "max_along",
    "maximum",
    "mul",
    "narrow",
    "neg",
    "pad",
    "permute",
    "powf",
    "reshape",
    "scatter_dense",
    "scatter_rows",
    "step",
    "sub",
    "sum_all",
    "sum_along",
    "unfold",
]

Array = np.ndarray[Any, Any]



def _up(a: Array, element: ElementType) -> Array:
    return a.astype(element.compute, copy=False) if element.widens else a


def _down(a: Any, element: ElementType) -> Array:
    array = np.asarray(a)
    if array.dtype != element.dtype:
        array = array.astype(element.dtype)
    return array


def _settled(a: Array) -> Array:
    """``a`` itself when it is C-contiguous without zero strides, else a C-ordered copy."""
    if a.flags.c_contiguous and 0 not in a.strides:
        return a
    return np.array(a, order="C")


def by_value(ufunc: Any, *operands: Array, out: Array | None = None) -> Array:
    """``ufunc`` over ``operands`` laid out so its bits are a function of their values alone.

    Each operand is spread to the result's shape and brought to one C-contiguous 1-d run
    (copied only when it is a view with other strides, a zero stride or rank 0), so numpy
    takes its dense contiguous loop whatever the storage was. ``out``, a C-contiguous array
    of the result's shape and dtype that overlaps no operand, receives the result (the same
    loop, so the same bits).

    Example:
        >>> x = np.linspace(0.1, 3.0, 5, dtype=np.float32)
        >>> half = np.broadcast_to(np.float32(0.5), x.shape)
        >>> (by_value(np.power, x, half) == by_value(np.power, x, half.copy())).all()
        np.True_
    """
    shape = operands[0].shape
    for other in operands[1:]:
        if other.shape != shape:
            shape = np.broadcast(*operands).shape
            break
    runs = []
    for operand in operands:
        if operand.shape != shape or not operand.flags.c_contiguous or 0 in operand.strides:
            # A plain copy (no arithmetic, so no rounding and every NaN payload kept).
            laid = np.empty(shape, operand.dtype)
            laid[...] = operand
            operand = laid
        runs.append(operand.reshape(-1))
    if out is not None:
        ufunc(*runs, out=out.reshape(-1))
        return out
    result: Array = ufunc(*runs)
    return result.reshape(shape)


def add(a: Array, b: Array, element: ElementType) -> Array:
    return _down(by_value(np.add, _up(a, element), _up(b, element)), element)


def sub(a: Array, b: Array, element: ElementType) -> Array:
    return _down(by_value(np.subtract, _up(a, element), _up(b, element)), element)


def mul(a: Array, b: Array, element: ElementType) -> Array:
    return _down(by_value(np.multiply, _up(a, element), _up(b, element)), element)


def div(a: Array, b: Array, element: ElementType) -> Array:
    with np.errstate(divide="ignore", invalid="ignore"):
        return _down(by_value(np.divide, _up(a, element), _up(b, element)), element)


def neg(a: Array, element: ElementType) -> Array:
    return _down(by_value(np.negative, a), element)


def powf(a: Array, b: Array, element: ElementType) -> Array:
    x, y = np.broadcast_arrays(_up(a, element), _up(b, element))
    return _down(libm.power(x, y), element)


def maximum(a: Array, b: Array, element: ElementType) -> Array:
    return _down(by_value(np.maximum, a, b), element)


def step(a: Array, threshold: Array, element: ElementType) -> Array:
    """1 where ``a >= threshold``, else 0 (NaN compares false), in the element's storage."""
    above = np.greater_equal(a, threshold)
    if element.dtype.kind in "fiu":
        # The comparison cast straight to storage: the same exact 1 and 0, one pass and no
        # float64 temporary.
        return above.astype(element.dtype)
    return _down(np.where(above, 1.0, 0.0), element)


def select(mask: Array, on_true: Array, on_false: Array, element: ElementType) -> Array:
    """``on_true`` where ``mask`` is nonzero (NaN included), else ``on_false``: no arithmetic."""
    return _down(np.where(mask != 0, on_true, on_false), element)


def map_operation(operation: MapOperation, a: Array, element: ElementType) -> Array:
    """One map in the element's compute dtype by the portable kernels, rounded to storage."""
    x = _up(a, element)
    return _down(libm.evaluate(operation, x), element)


def matmul(a: Array, b: Array, element: ElementType) -> Array:
    """Batched product; each output folds its inner terms in ascending order from zero."""
    accumulator = element.accumulator
    left = _settled(a.astype(accumulator, copy=False))
    right = _settled(b.astype(accumulator, copy=False))
    inner = left.shape[-1]
    out = np.zeros(left.shape[:-1] + right.shape[-1:], dtype=accumulator)
    for k in range(inner):
        out += left[..., :, k : k + 1] * right[..., k : k + 1, :]
    return _down(out, element)


def sum_all(a: Array, element: ElementType) -> Array:
    """Fold every element, row-major, from an exact zero."""
    flat = _settled(a).reshape(-1).astype(element.accumulator, copy=False)
    running = np.add.accumulate(flat, dtype=element.accumulator)
    # accumulate starts from the first element; adding zero once reproduces a fold from +0.
    total = running[-1] + element.accumulator.type(0.0)
    return _down(np.asarray(total, dtype=element.accumulator), element)


def sum_along(a: Array, axis: int, element: ElementType) -> Array:
    wide = _settled(a.astype(element.accumulator, copy=False))
    extent = wide.shape[axis]
    inner = 1
    for size in wide.shape[axis + 1 :]:
        inner *= size
    if inner >= 64:
        # Wide contiguous slices: one vectorized add per position beats a running sum
        # (numpy's accumulate along a leading axis is slow). x0 + 0 equals 0 + x0 bit for
        # bit, so this is still the fold from an exact zero.
        index: list[slice | int] = [slice(None)] * wide.ndim
        index[axis] = 0
        total = wide[tuple(index)] + element.accumulator.type(0.0)
        for position in range(1, extent):
            index[axis] = position
            total = total + wide[tuple(index)]
        return _down(total, element)
    running = np.add.accumulate(wide, axis=axis, dtype=element.accumulator)
    last = running[(slice(None),) * axis + (-1,)]
    return _down(last + element.accumulator.type(0.0), element)


def _spread(a: Array, shape: tuple[int, ...], strides: tuple[int, ...]) -> Array:
    """A read-only zero-stride view of ``a`` (np.broadcast_to's checks cost several times more)."""
    if not a.flags.c_contiguous and 0 in a.strides:
        # A spread of a spread: its zero-stride axes cut to extent 1 leave an array over the
        # same first element that is often contiguous, and a view of that is cheap to make.
        a = a[tuple(slice(0, 1) if stride == 0 else slice(None) for stride in a.strides)]
    if a.flags.c_contiguous:
        view: Array = np.ndarray(shape, a.dtype, a, 0, strides)
        if view.flags.writeable:  # a view of a read-only buffer is read-only already
            view.flags.writeable = False
        return view
    return as_strided(a, shape=shape, strides=strides, writeable=False)


def broadcast(a: Array, shape: tuple[int, ...]) -> Array:
    return _spread(a, shape, (0,) * len(shape))


def broadcast_along(a: Array, axis: int, extent: int) -> Array:
    shape = (*a.shape[:axis], extent, *a.shape[axis:])
    return _spread(a, shape, (*a.strides[:axis], 0, *a.strides[axis:]))


def reshape(a: Array, shape: tuple[int, ...]) -> Array:
    return a.reshape(shape)


def permute(a: Array, order: tuple[int, ...]) -> Array:
    return a.transpose(order)


def narrow(a: Array, axis: int, start: int, length: int) -> Array:
    index = (slice(None),) * axis + (slice(start, start + length),)
    return a[index]


def pad(a: Array, axis: int, start: int, extent: int, element: ElementType) -> Array:
    shape = (*a.shape[:axis], extent, *a.shape[axis + 1:])
    out = np.zeros(shape, dtype=element.dtype)
    out[(slice(None),) * axis + (slice(start, start + a.shape[axis]),)] = a
    return out


def unfold(a: Array, axis: int, size: int, step_: int, dilation: int) -> Array:
    extent = a.shape[axis]
    count = (extent - (dilation * (size - 1) + 1)) // step_ + 1
    strides = a.strides
    shape = (*a.shape[:axis], count, size, *a.shape[axis + 1:])
    new_strides = (
        (*strides[:axis], strides[axis] * step_, strides[axis] * dilation, *strides[axis + 1:])
    )
    return as_strided(a, shape=shape, strides=new_strides, writeable=False)


def fold(
    g: Array, axis: int, size: int, step_: int, dilation: int, extent: int, element: ElementType
) -> Array:
    """Sum windows back onto their positions; each position adds its windows in order."""
    accumulator = element.accumulator
    count = g.shape[axis]
    wide = _settled(g.astype(accumulator, copy=False))
    out = np.zeros((*g.shape[:axis], extent, *g.shape[axis + 2:]), dtype=accumulator)
    lead = (slice(None),) * axis
    reach = (count - 1) * step_ + 1
    # A position p is reached by windows w with p = w*step + s*dilation: the larger the
    # lane s, the smaller the window w. Walking lanes from last to first therefore adds
    # each position's windows in ascending order, one vectorized add per lane.
    for lane in range(size - 1, -1, -1):
        start = lane * dilation
        index: tuple[slice | int, ...] = (*lead, slice(None), lane)
        out[(*lead, slice(start, start + reach, step_))] += wide[index]
    return _down(out, element)


def _masked_product(selection: Array, values: Array, element: ElementType) -> Array:
    """``out[i] = sum over v of s[i, v] * values[v]``, ascending in v from an exact zero,
    where a term whose selection entry is exactly zero contributes nothing.

    This is Gather's and Scatter's one semantics: an unselected row of the table never
    reaches the result, so an inf or NaN row that nobody selects cannot turn 0 * inf into
    NaN. Skipping a term is the same as adding +0: a fold that starts at +0 never holds -0
    (x + -x and +0 + -0 are both +0 under round-to-nearest), and +0 added to anything
    else leaves it unchanged.
    """
    accumulator = element.accumulator
    left = selection.astype(accumulator, copy=False)
    right = values.reshape(values.shape[0], -1).astype(accumulator, copy=False)
    out = np.zeros((left.shape[0], right.shape[1]), dtype=accumulator)
    term = np.empty_like(out)
    for v in range(left.shape[1]):
        column = left[:, v : v + 1]
        term.fill(0.0)
        np.multiply(column, right[v : v + 1, :], out=term, where=column != 0)
        out += term
    return _down(out, element)


def gather_rows(table: Array, indices: Array, one: float, element: ElementType) -> Array:
    """Rows by index with :func:`gather_dense`'s bits: ``0 + one * row`` in the accumulator.

    A selection row holds ``one`` at its index and exact zeros elsewhere, so only the chosen
    row is a term; the leading zero turns a -0 row into +0, as the fold does. A selection
    whose ``one`` is itself zero selects nothing.
    """
    accumulator = element.accumulator
    if one == 0.0:
        return np.zeros((indices.size, *table.shape[1:]), dtype=element.dtype)
    rows = table[indices].astype(accumulator, copy=False)
    if one != 1.0:
        rows = rows * accumulator.type(one)
    return _down(accumulator.type(0.0) + rows, element)


def gather_dense(table: Array, selection: Array, element: ElementType) -> Array:
    """Rows of ``table`` picked by a dense one-hot ``selection``: the masked product's bits."""
    out = _masked_product(selection, table, element)
    return out.reshape((selection.shape[0], *table.shape[1:]))


def scatter_rows(
    gradient: Array, indices: Array, vocab: int, one: float, element: ElementType
) -> Array:
    accumulator = element.accumulator
    out = np.zeros((vocab, *gradient.shape[1:]), dtype=accumulator)
    if one == 0.0:
        return _down(out, element)
    rows = gradient.astype(accumulator, copy=False)
    if one != 1.0:
        rows = rows * accumulator.type(one)
    # add.at is unbuffered: repeated indices accumulate in row order.
    np.add.at(out, indices, rows)
    return _down(out, element)


def scatter_dense(gradient: Array, selection: Array, element: ElementType) -> Array:
    out = _masked_product(selection.T, gradient, element)
    return out.reshape((selection.shape[1], *gradient.shape[1:]))


def max_along(a: Array, axis: int) -> Array:
    """The maximum along ``axis`` (kept, length 1), read from a C-contiguous layout.

    numpy's reduction order follows the layout, and with both zeros or several NaN payloads
    in a row the order decides which one survives; one layout gives one answer.
    """
    peak: Array = np.maximum.reduce(_settled(a), axis=axis, keepdims=True)
    return peak


Summer = Callable[[Array, int, ElementType], Array]


def logsumexp(a: Array, axis: int, element: ElementType, summer: Summer | None = None) -> Array:
    """max + ln(sum(exp(x - max))), each step rounded like the primitive it mirrors.

    ``summer`` computes the inner sum (default: this module's ordered fold); a plan under
    ``Numerics.FAST`` passes the dispatcher so a native sum may serve.
    """
    total_of = summer or sum_along
    peak = max_along(a, axis)
    # numpy spreads the kept axis itself: the same elementwise subtraction, no view built.
    centred = sub(a, peak, element)
    total = total_of(map_operation(MapOperation.EXP, centred, element), axis, element)
    return add(np.squeeze(peak, axis), map_operation(MapOperation.LN, total, element), element)


def log_softmax(a: Array, axis: int, element: ElementType, summer: Summer | None = None) -> Array:
    """(x - max) - ln(sum(exp(x - max))), each step rounded like the primitive it mirrors."""
    total_of = summer or sum_along
    peak = max_along(a, axis)
    centred = sub(a, peak, element)
    total = total_of(map_operation(MapOperation.EXP, centred, element), axis, element)
    normalizer = map_operation(MapOperation.LN, total, element).reshape(peak.shape)
    return sub(centred, normalizer, element)
