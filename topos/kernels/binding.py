"""The binding: each opcode bound once to the kernel that computes it.

Contract: ``KERNELS[type(op)](op, element)`` returns a function from operand payloads to
the node's payload, where a payload is a read-only numpy array in the element's storage
dtype, or a selection (a :class:`~topos.tensor.Tensor` kept whole so gathers and scatters
use its indices). This is the one table that says which kernel an opcode runs: a lowered
plan calls it per step, and ``Tensor`` (so the interpreter, which computes through tensors)
calls it per operation, so both roads run the same kernel by construction and a plan under
``Numerics.EXACT`` reproduces the interpreter bit for bit. Both call the kernels with
floating-point warnings silenced.

Products and sums go through :mod:`topos.kernels.dispatch` (a posture may admit a faster
backend); everything else is a reference kernel. Where a closure calls a ufunc directly
(elements whose storage is their compute dtype), it calls it through
:func:`topos.kernels.reference.by_value`, the reference's own layout rule, which is the
reference kernel's whole body for those elements. What the closures skip is the per-call
bookkeeping of the public tensor API (shape inference, element coercion, wrapper objects).

This module sits under ``topos.tensor`` and never imports it: a selection is recognised as
the payload that is not a numpy array.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeVar, cast

import numpy as np

from topos.ir import ops
from topos.ir.element import ElementType
from topos.ir.numerics import Numerics
from topos.ir.shape import Shape
from topos.kernels import dispatch, libm, native, reference
from topos.kernels.dispatch import Backend, Formula

__all__ = ["KERNELS", "NUMPY_MAPS", "Kernel", "Selection", "kernel_into", "plan_kernel"]

Array = np.ndarray[Any, Any]
Kernel = Callable[..., Array]
"""A kernel: a function from operand payloads (arrays, or selection tensors) to the result."""


class Selection(Protocol):
    """What a kernel reads of a selection payload (``Tensor`` is one)."""

    @property
    def shape(self) -> Shape: ...
    @property
    def indices(self) -> Array | None: ...
    @property
    def selection_one(self) -> float: ...
    def numpy(self) -> Array: ...


Payload = Array | Selection
"""What a kernel reads and hands on: an array, or a selection kept whole."""
Factory = Callable[[ops.Op, ElementType], Kernel]
"""A kernel factory: an opcode (of the class it is bound to) and an element to a kernel."""
_O = TypeVar("_O", bound=ops.Op)


def _dense(payload: Payload) -> Array:
    return payload if isinstance(payload, (np.ndarray, np.generic)) else payload.numpy()


def _rows(payload: Payload) -> Selection | None:
    """The payload as a selection stored as indices, or None when it is dense."""
    if isinstance(payload, (np.ndarray, np.generic)) or payload.indices is None:
        return None
    selection: Selection = payload
    return selection


def _binary(
    kernel: Callable[[Array, Array, ElementType], Array], ufunc: np.ufunc | None = None
) -> Factory:
    def factory(op: ops.Op, element: ElementType) -> Kernel:
        if ufunc is not None and not element.widens:
            # Storage is the compute dtype: the reference kernel is this ufunc over the
            # reference's layout rule and nothing else (callers silence floating-point
            # warnings around the call).
            return lambda a, b: reference.by_value(ufunc, _dense(a), _dense(b))
        return lambda a, b: kernel(_dense(a), _dense(b), element)

    return factory


# numpy's own map loops: their bits are the CPU's and the numpy build's, so only the Fast
# posture's kernels (``kernel_into``) call them; every exact kernel maps through libm.
NUMPY_MAPS: Final = {
    ops.MapOperation.EXP: np.exp,
    ops.MapOperation.LN: np.log,
    ops.MapOperation.SQRT: np.sqrt,
    ops.MapOperation.TANH: np.tanh,
    ops.MapOperation.SIN: np.sin,
    ops.MapOperation.COS: np.cos,
    ops.MapOperation.LOG1P: np.log1p,
    ops.MapOperation.EXPM1: np.expm1,
    ops.MapOperation.ATAN: np.arctan,
}
"""numpy's ufunc for each map that has one (``ERF`` and ``ERF_DERIVATIVE`` have none): the
one spelling of that pairing, which the Fast posture's kernels call and the maps benchmark
(``benchmarks/bench_maps.py``) times the portable maps against."""


def _map(op: ops.Map, element: ElementType) -> Kernel:
    operation = op.operation
    if not element.widens:
        # Storage is the compute dtype: the reference kernel is the portable map itself.
        return lambda a: libm.evaluate(operation, _dense(a))
    return lambda a: reference.map_operation(operation, _dense(a), element)


def _neg(op: ops.Neg, element: ElementType) -> Kernel:
    if not element.widens:
        return lambda a: reference.by_value(np.negative, _dense(a))
    return lambda a: reference.neg(_dense(a), element)


def _gather(op: ops.Gather, element: ElementType) -> Kernel:
    def gather(table: Payload, selection: Payload) -> Array:
        rows = _rows(selection)
        if rows is not None and rows.indices is not None:
            return reference.gather_rows(_dense(table), rows.indices, rows.selection_one, element)
        return reference.gather_dense(_dense(table), _dense(selection), element)

    return gather


def _scatter(op: ops.Scatter, element: ElementType) -> Kernel:
    def scatter(gradient: Payload, selection: Payload) -> Array:
        rows = _rows(selection)
        if rows is not None and rows.indices is not None:
            vocab = rows.shape[1]
            return reference.scatter_rows(_dense(gradient), rows.indices, vocab, rows.selection_one, element)
        return reference.scatter_dense(_dense(gradient), _dense(selection), element)

    return scatter


def _log_softmax(op: ops.LogSoftmax, element: ElementType) -> Kernel:
    axis = op.axis
    if not element.widens:
        # The reference kernel's own ufunc sequence without its per-call wrappers (storage
        # is the compute dtype and callers silence floating-point warnings).
        def lean(a: Payload) -> Array:
            x = _dense(a)
            peak = reference.max_along(x, axis)
            centred = reference.by_value(np.subtract, x, peak)
            total = dispatch.offer_sum_along(libm.evaluate(ops.MapOperation.EXP, centred), axis, element)
            return reference.by_value(np.subtract, centred, libm.evaluate(ops.MapOperation.LN, total).reshape(peak.shape))

        return lean
    return lambda a: reference.log_softmax(_dense(a), axis, element, dispatch.offer_sum_along)


def _source(op: ops.Op, element: ElementType) -> Kernel:
    raise AssertionError(f"{op.name} is a source: its payload is supplied")  # pragma: no cover


def _bound(kind: type[_O], factory: Callable[[_O, ElementType], Kernel]) -> tuple[type[_O], Factory]:
    # The table calls a factory only with opcodes of the class it is bound to (its key is
    # ``type(op)``), which is what makes the narrower factory safe to hold as a ``Factory``.
    return kind, cast(Factory, factory)


KERNELS: Final[dict[type, Factory]] = dict(
    [
        _bound(ops.Leaf, _source),
        _bound(ops.Parameter, _source),
        _bound(ops.Input, _source),
        _bound(ops.Add, _binary(reference.add, np.add)),
        _bound(ops.Sub, _binary(reference.sub, np.subtract)),
        _bound(ops.Mul, _binary(reference.mul, np.multiply)),
        _bound(ops.Div, _binary(reference.div, np.divide)),
        _bound(ops.Powf, _binary(reference.powf)),
        _bound(ops.Maximum, _binary(reference.maximum, np.maximum)),
        _bound(ops.Step, _binary(reference.step)),
        _bound(ops.Neg, _neg),
        _bound(ops.Map, _map),
        _bound(ops.MatMul, lambda op, el: lambda a, b: dispatch.offer_gemm(_dense(a), _dense(b), el)),
        _bound(ops.Sum, lambda op, el: lambda a: dispatch.offer_sum(_dense(a), el)),
        _bound(ops.SumAlong, lambda op, el: lambda a: dispatch.offer_sum_along(_dense(a), op.axis, el)),
        _bound(ops.LogSumExp, lambda op, el: lambda a: reference.logsumexp(_dense(a), op.axis, el, dispatch.offer_sum_along)),
        _bound(ops.LogSoftmax, _log_softmax),
        _bound(ops.Broadcast, lambda op, el: lambda a: reference.broadcast(_dense(a), op.shape.axes)),
        _bound(ops.BroadcastAlong, lambda op, el: lambda a: reference.broadcast_along(_dense(a), op.axis, op.extent)),
        _bound(ops.Reshape, lambda op, el: lambda a: reference.reshape(_dense(a), op.shape.axes)),
        _bound(ops.Permute, lambda op, el: lambda a: reference.permute(_dense(a), op.order)),
        _bound(ops.Narrow, lambda op, el: lambda a: reference.narrow(_dense(a), op.axis, op.start, op.length)),
        _bound(ops.Pad, lambda op, el: lambda a: reference.pad(_dense(a), op.axis, op.start, op.extent, el)),
        _bound(ops.Unfold, lambda op, el: lambda a: reference.unfold(_dense(a), op.axis, op.size, op.step, op.dilation)),
        _bound(
            ops.Fold,
            lambda op, el: lambda a: reference.fold(_dense(a), op.axis, op.size, op.step, op.dilation, op.extent, el),
        ),
        _bound(ops.Gather, _gather),
        _bound(ops.Scatter, _scatter),
        _bound(ops.Select, lambda op, el: lambda m, a, b: reference.select(_dense(m), _dense(a), _dense(b), el)),
        # The payload is immutable, so the identity hands the operand's array on unchanged.
        _bound(ops.StopGradient, lambda op, el: lambda a: _dense(a)),
    ]
)
"""Each opcode class to its kernel factory: ``KERNELS[type(op)](op, element)`` gives the kernel."""

_BOUND: Final = dict(KERNELS)

# The table's kernels with operands known to be arrays (a plan knows where selections can
# flow): the same calls without converting each operand. A test holds each to the table's bits.
_DENSE: Final[dict[type, Factory]] = dict(
    [
        _bound(ops.MatMul, lambda op, el: lambda a, b: dispatch.offer_gemm(a, b, el)),
        _bound(ops.Sum, lambda op, el: lambda a: dispatch.offer_sum(a, el)),
        _bound(ops.SumAlong, lambda op, el: lambda a: dispatch.offer_sum_along(a, op.axis, el)),
        _bound(ops.Broadcast, lambda op, el: lambda a: reference.broadcast(a, op.shape.axes)),
        _bound(ops.BroadcastAlong, lambda op, el: lambda a: reference.broadcast_along(a, op.axis, op.extent)),
        _bound(ops.Reshape, lambda op, el: lambda a: reference.reshape(a, op.shape.axes)),
        _bound(ops.Permute, lambda op, el: lambda a: reference.permute(a, op.order)),
        _bound(ops.Narrow, lambda op, el: lambda a: reference.narrow(a, op.axis, op.start, op.length)),
        _bound(ops.StopGradient, lambda op, el: lambda a: a),
    ]
)


def _dense_kernel(op: ops.Op, element: ElementType) -> Kernel | None:
    """The table's kernel over array operands, where one is spelled (None: use the table's)."""
    kind = type(op)
    if not element.widens:
        # The table's kernel is the reference's layout rule over this ufunc and nothing else.
        ufunc = _UFUNC_BINARIES.get(kind)
        if kind is ops.Neg:
            ufunc = np.negative
        if ufunc is not None:
            return functools.partial(reference.by_value, ufunc)
    dense = _DENSE.get(kind)
    return None if dense is None else dense(op, element)

# Opcodes whose kernel hands back a view of its operand (a reshape may copy instead).
_VIEWS: Final = frozenset({ops.Broadcast, ops.BroadcastAlong, ops.Reshape, ops.Permute, ops.Narrow, ops.StopGradient})


def plan_kernel(op: ops.Op, element: ElementType, dense: bool = False) -> Kernel:
    """The table's kernel for one plan step; a view opcode's remembers its last view.

    ``dense`` says no operand is a selection (the plan knows where selections can flow):
    the kernel then makes the table's calls without converting its operands.

    A plan runs many times over the same long-lived operands (parameters, recorded leaves
    and views of them), and rebuilding a view of one costs more than the arithmetic of a
    small step. Given the very operand object of its last call, the kernel hands back the
    view it made then: the same object, so the same memory, shape and strides. Only
    read-only operands and views are remembered (a copy, or an array a kernel may write
    into, is made afresh), and holding one keeps nothing alive that its view would not.

    Example:
        >>> from topos import f32
        >>> view = plan_kernel(ops.Permute((1, 0)), f32)
        >>> a = np.ones((2, 3), np.float32); a.flags.writeable = False
        >>> view(a) is view(a)
        True
    """
    kind = type(op)
    if KERNELS.get(kind) is not _BOUND.get(kind):
        # A rebound opcode computes through its rebinding alone.
        return KERNELS[kind](op, element)
    kernel = (_dense_kernel(op, element) if dense else None) or KERNELS[kind](op, element)
    if kind not in _VIEWS:
        return kernel
    last: tuple[Payload | None, Array | None] = (None, None)

    def view(a: Payload) -> Array:
        nonlocal last
        seen, made = last  # one tuple, read and replaced whole: safe across threads
        if seen is a and made is not None:  # seen is set only together with made
            return made
        made = kernel(a)
        if isinstance(a, np.ndarray) and not a.flags.writeable and not made.flags.writeable:
            last = (a, made)
        return made

    return view


_UFUNC_BINARIES: Final[dict[type[ops.Op], np.ufunc]] = {
    ops.Add: np.add,
    ops.Sub: np.subtract,
    ops.Mul: np.multiply,
    ops.Div: np.divide,
    ops.Maximum: np.maximum,
}
# For these, an operand's layout decides only which of two NaN payloads survives, never a
# value; Numerics.FAST lets numpy read zero-stride (broadcast) operands in place.
_SPREAD_IN_PLACE: Final = frozenset({ops.Add, ops.Sub, ops.Mul, ops.Div, ops.Maximum})


def _row_fold(shapes: Sequence[tuple[int, ...]]) -> int | None:
    """For two ``[N, w]`` operands with short rows, how many rows to read as one (``k`` with
    ``k * w <= 1024`` dividing ``N``), or None where numpy's own loop serves well."""
    if len(shapes) != 2 or shapes[0] != shapes[1] or len(shapes[0]) != 2:
        return None
    count, width = shapes[0]
    if not 0 < width < 64 or count * width < 16_384:
        return None
    rows = 1024 // width
    while count % rows:
        rows -= 1
    return rows if rows > 1 else None


def _short_rows(ufunc: np.ufunc, fold: int) -> Kernel:
    """A Fast binary kernel for ``[N, w]`` operands where one is a row spread along axis 0.

    numpy walks such a pair a row at a time (w elements per inner loop: a BatchNorm's
    statistics over a convolution's ``[B*H*W, C]`` rows); read as ``[N/k, k*w]`` against
    the row repeated ``k`` times, the same elementwise results come in long runs.
    """

    def kernel(a: Payload, b: Payload, out: Array | None = None) -> Array:
        x, y = _dense(a), _dense(b)
        if out is not None:
            wide = (out.shape[0] // fold, out.shape[1] * fold)
            if y.strides[0] == 0 and x.flags.c_contiguous:
                ufunc(x.reshape(wide), np.tile(y[0], fold), out=out.reshape(wide))  # a view of out
                return out
            if x.strides[0] == 0 and y.flags.c_contiguous:
                ufunc(np.tile(x[0], fold), y.reshape(wide), out=out.reshape(wide))
                return out
        result: Array = ufunc(x, y, out=out)
        return result

    return kernel


def kernel_into(
    op: ops.Op, element: ElementType, posture: Numerics, shapes: Sequence[tuple[int, ...]], dense: bool = False
) -> Kernel | None:
    """``op``'s kernel taking an optional argument ``out`` (by keyword), or None where it has none.

    ``out`` is a C-contiguous buffer of the result's shape and dtype overlapping no operand;
    the kernel writes its result there and returns it. ``shapes`` are the operands' shapes;
    ``dense`` says no operand is a selection (the plan knows where selections can flow), so
    the kernel reads its operands as they are (a ufunc's kernel is then the ufunc, or the
    reference's layout rule over it, called directly). Under ``Numerics.EXACT`` the kernel
    is the table's (same layout rule, same bits). Under ``Numerics.FAST`` the decisions an
    offer makes per call are settled here, once: products and sums the native backend
    accepts at these shapes call numpy directly (still tallied), and addition, subtraction,
    products, quotients and maxima read broadcast operands as views (numpy spreads them;
    only which NaN payload survives may differ), a row spread over short ``[N, w]`` rows in
    long runs (``_short_rows``), and maps and powers are numpy's own loops (the CPU's bits,
    within the Fast envelope) instead of the portable kernels.

    Example:
        >>> from topos import f32
        >>> add = kernel_into(ops.Add(), f32, Numerics.FAST, [(2,), (2,)])
        >>> out = np.empty(2, np.float32)
        >>> add(np.ones(2, np.float32), np.ones(2, np.float32), out=out) is out
        True
    """
    kind = type(op)
    if element.widens or KERNELS.get(kind) is not _BOUND.get(kind):
        # A rebound opcode computes through its rebinding alone: there is no second binding.
        return None
    ufunc: np.ufunc | None = _UFUNC_BINARIES.get(kind)
    if kind is ops.Neg:
        ufunc = np.negative
    elif posture is Numerics.FAST and isinstance(op, ops.Map):
        ufunc = NUMPY_MAPS.get(op.operation)
    elif posture is Numerics.FAST and kind is ops.Powf:
        ufunc = np.power
    if ufunc is not None:
        if posture is Numerics.FAST and kind in _SPREAD_IN_PLACE and (fold := _row_fold(shapes)) is not None:
            return _short_rows(ufunc, fold)
        if posture is Numerics.FAST and kind in _SPREAD_IN_PLACE:
            if dense:
                return ufunc
            return lambda a, b, out=None: ufunc(_dense(a), _dense(b), out=out)
        by_value = reference.by_value
        if dense:
            return functools.partial(by_value, ufunc)
        if kind in _UFUNC_BINARIES or kind is ops.Powf:
            return lambda a, b, out=None: by_value(ufunc, _dense(a), _dense(b), out=out)
        return lambda a, out=None: by_value(ufunc, _dense(a), out=out)
    if isinstance(op, ops.Pad):
        def pad(a: Payload, out: Array | None = None) -> Array:
            x = _dense(a)
            if out is None:
                return reference.pad(x, op.axis, op.start, op.extent, element)
            out.fill(0)  # no copy or arithmetic: the reference's zeros and values, written in place
            out[(slice(None),) * op.axis + (slice(op.start, op.start + x.shape[op.axis]),)] = x
            return out

        return pad
    if element.accumulates_wider:
        return None
    tally = dispatch._TALLY
    if kind is ops.MatMul and dispatch.native_first(Formula.GEMM, element, posture) and native.gemm_pays(*shapes):
        def gemm(a: Any, b: Any, out: Array | None = None) -> Array:
            if tally.get() is not None:
                dispatch.record_service(Formula.GEMM, element, Backend.NATIVE)
            x: Array = a if dense else _dense(a)
            y: Array = b if dense else _dense(b)
            return np.matmul(x, y, out=out)

        return gemm
    summing = isinstance(op, (ops.Sum, ops.SumAlong))
    if summing and dispatch.native_first(Formula.REDUCE, element, posture) and math.prod(shapes[0]) >= 8:
        along = op.axis if isinstance(op, ops.SumAlong) else None  # None: every axis

        def sum_along(a: Any, out: Array | None = None) -> Array:
            if tally.get() is not None:
                dispatch.record_service(Formula.REDUCE, element, Backend.NATIVE)
            x: Array = a if dense else _dense(a)
            if along is None:
                return np.add.reduce(x, axis=None, out=out)
            return native.sum_along(x, along, element, out)

        return sum_along
    if isinstance(op, ops.LogSoftmax) and dispatch.native_first(Formula.REDUCE, element, posture):
        axis, served = op.axis, Backend.NATIVE if math.prod(shapes[0]) >= 8 else None

        def log_softmax(a: Any, out: Array | None = None) -> Array:
            # The lean kernel's steps, with numpy spreading the kept axis and a native sum
            # (below eight terms numpy's sum is the reference fold).
            if tally.get() is not None:
                dispatch.record_service(Formula.REDUCE, element, served)
            # The exponentials go where the result will, so no temporary is allocated.
            x: Array = a if dense else _dense(a)
            peak = np.maximum.reduce(x, axis=axis, keepdims=True)
            shifted = np.subtract(x, peak, out=out)
            spread = np.exp(shifted, out=shifted)
            total = np.log(np.add.reduce(spread, axis=axis, keepdims=True))
            centred = np.subtract(x, peak, out=spread)
            return np.subtract(centred, total, out=centred)

        return log_softmax
    return None
