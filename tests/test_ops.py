"""Forward bits of every opcode and every map, against computations written here.

Each expected value is computed independently of ``topos.kernels.reference``: elementwise
ops and transcendentals through numpy's ufuncs in the element's compute dtype (bf16
computes in f32, then rounds once); every order-sensitive kernel (Sum, SumAlong, MatMul,
Fold, Gather, Scatter, the sums inside LogSoftmax/LogSumExp) as a plain Python fold from an
exact zero over numpy scalars, in the order ``design.md`` §5 fixes. The comparison is on
bit patterns, never ``allclose``: the interpreter is the oracle, its bits are the contract.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import libm_reference
import mpmath
import numpy as np
import pytest
from conftest import (
    Array,
    assert_bits,
    each_element,
    forward_op,
    rounded,
    shapes,
    stored,
    up,
    values,
)
from hypothesis import given
from hypothesis import strategies as st

from topos import MapOperation, Numerics, Tape, Tensor, Value, bf16, f32, f64
from topos.ir.element import ElementType
from topos.ir.numerics import numerics_scope
from topos.kernels import libm

# ----------------------------------------------------------------------------- folds


def fold(terms: list[Any], element: ElementType) -> Any:
    """Sequential sum from an exact zero in the accumulator dtype (one rounding per add)."""
    acc = element.accumulator.type
    total = acc(0.0)
    for term in terms:
        total = acc(total + acc(term))
    return total


def fold_along(a: Array, axis: int, element: ElementType) -> Array:
    moved = np.moveaxis(a, axis, 0)
    out = np.empty(moved.shape[1:], dtype=element.accumulator)
    for position in np.ndindex(*moved.shape[1:]):
        out[position] = fold([moved[(k, *position)] for k in range(moved.shape[0])], element)
    return rounded(out, element)


def product(a: Array, b: Array, element: ElementType) -> Array:
    """Batched matmul, each output an ascending fold of rounded products (no FMA)."""
    acc = element.accumulator.type
    out = np.empty((*a.shape[:-1], b.shape[-1]), dtype=element.accumulator)
    for index in np.ndindex(*out.shape):
        *batch, i, j = index
        terms = [
            acc(acc(a[(*batch, i, k)]) * acc(b[(*batch, k, j)])) for k in range(a.shape[-1])
        ]
        out[index] = fold(terms, element)
    return rounded(out, element)


# ----------------------------------------------------------------------------- sources


@each_element
@given(data=st.data())
def test_sources_return_their_payload_bits(element: ElementType, data: st.DataObject) -> None:
    shape = data.draw(shapes())
    leaf, weight, default, fed = (data.draw(values(shape, f64)) for _ in range(4))

    def build(tape: Tape) -> tuple[Value, Value, Value]:
        return tape.leaf(leaf), tape.parameter(weight), tape.input(default)

    network, (lf, pm, ip) = Tape.record(build, element=element)
    run = network.forward(network.parameters())
    # f64 data rounds once to the tape's element when recorded.
    assert_bits(run.of(lf), stored(leaf, element))
    assert_bits(run.of(pm), stored(weight, element))
    assert_bits(run.of(ip), stored(default, element))
    # A feed converts the same way and replaces the default only for that run.
    run = network.forward(network.parameters(), {ip: fed})
    assert_bits(run.of(ip), stored(fed, element))
    assert_bits(network.forward(network.parameters()).of(ip), stored(default, element))


# ----------------------------------------------------------------------------- elementwise

_BINARY: dict[str, tuple[Callable[[Value, Value], Value], Callable[[Array, Array], Array]]] = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
    "powf": (lambda a, b: a.powf(b), lambda a, b: _powered(a, b)),
}


def _powered(a: Array, b: Array) -> Array:
    """powf's bits: float32 correctly rounded (the independent reference), float64 portable."""
    if a.dtype == np.float32:
        return libm_reference.correctly_rounded_pow_f32(a, b)
    return libm.power(a, b)


@each_element
@pytest.mark.parametrize("name", sorted(_BINARY))
@given(data=st.data())
def test_binary_arithmetic(element: ElementType, name: str, data: st.DataObject) -> None:
    shape = data.draw(shapes())
    record, ufunc = _BINARY[name]
    if name == "powf":
        a = data.draw(values(shape, element, 0.05, 4.0))
        b = data.draw(values(shape, element, -3.0, 3.0))
    else:
        a = data.draw(values(shape, element, -1e3, 1e3))
        b = data.draw(values(shape, element, -1e3, 1e3))
    if name == "div":
        b = np.where(np.abs(b.astype(np.float64)) < 0.25, b.dtype.type(0.5), b)
    expected = rounded(ufunc(up(a, element), up(b, element)), element)
    assert_bits(forward_op(element, record, a, b), expected)


@each_element
@given(data=st.data())
def test_neg(element: ElementType, data: st.DataObject) -> None:
    a = data.draw(values(data.draw(shapes()), element))
    assert_bits(forward_op(element, lambda x: -x, a), rounded(-up(a, element), element))


@each_element
@given(data=st.data())
def test_maximum_and_step_with_ties(element: ElementType, data: st.DataObject) -> None:
    shape = data.draw(shapes())
    a = data.draw(values(shape, element))
    b = data.draw(values(shape, element))
    ties = data.draw(st.lists(st.booleans(), min_size=a.size, max_size=a.size))
    b = np.where(np.array(ties).reshape(shape), a, b)
    assert_bits(forward_op(element, lambda x, y: x.maximum(y), a, b), np.maximum(a, b))
    stepped = np.array([1.0 if x >= t else 0.0 for x, t in zip(a.ravel(), b.ravel(), strict=True)])
    assert_bits(forward_op(element, lambda x, y: x.step(y), a, b), rounded(stepped.reshape(shape), element))


@each_element
@given(data=st.data())
def test_select_and_stop_gradient(element: ElementType, data: st.DataObject) -> None:
    """Select copies the chosen side's bits (inf and NaN on the other side never leak); a
    NaN mask counts as nonzero. StopGradient is the identity on bits."""
    shape = data.draw(shapes())
    a = data.draw(values(shape, element))
    b = data.draw(values(shape, element))
    picks = data.draw(st.lists(st.sampled_from([0.0, 1.0, -2.0, float("nan")]), min_size=a.size, max_size=a.size))
    # 0, 1, -2, NaN and inf are exact in every element, so a plain cast stores them.
    mask = np.array(picks).reshape(shape).astype(element.dtype)
    poisoned = np.where(mask != 0, np.full(shape, np.inf).astype(element.dtype), b)
    expected = np.where(mask != 0, a, poisoned)
    assert_bits(forward_op(element, lambda m, x, y: m.select(x, y), mask, a, poisoned), expected)
    assert_bits(forward_op(element, lambda x: x.stop_gradient(), a), a)


# Where each map is drawn from: wide enough to meet every reduction branch of the kernels.
_MAPS: dict[MapOperation, tuple[float, float]] = {
    MapOperation.EXP: (-8.0, 8.0),
    MapOperation.LN: (0.01, 8.0),
    MapOperation.SQRT: (0.0, 8.0),
    MapOperation.TANH: (-5.0, 5.0),
    MapOperation.SIN: (-7.0, 7.0),
    MapOperation.COS: (-7.0, 7.0),
    MapOperation.LOG1P: (-0.9, 8.0),
    MapOperation.EXPM1: (-8.0, 8.0),
    MapOperation.ERF: (-4.0, 4.0),
    MapOperation.ERF_DERIVATIVE: (-4.0, 4.0),
    MapOperation.ATAN: (-1e6, 1e6),
}


def _mapped(operation: MapOperation, a: Array, element: ElementType) -> Array:
    """What the map must store: float32 (and bfloat16, through float32) correctly rounded,
    from the independent reference of tests/libm_reference.py; float64 the portable map,
    which is held to its stated bound against mpmath here as well."""
    if element is f64:
        if operation is MapOperation.SQRT:
            return np.sqrt(a)
        got = libm.evaluate(operation, a)
        name = libm.NAMES[operation]
        with mpmath.workprec(113):
            for x, y in zip(a.reshape(-1).tolist(), got.reshape(-1).tolist(), strict=True):
                truth = libm_reference.true_value(name, (x,))
                if math.isfinite(y) and truth != 0:
                    ulp = mpmath.mpf(2) ** max(int(mpmath.floor(mpmath.log(abs(truth), 2))) - 52, -1074)
                    assert abs(mpmath.mpf(y) - truth) / ulp <= libm.ERROR_BOUND_ULP[name], (name, x, y)
        return got
    wide = up(a, element).astype(np.float32)
    if operation is MapOperation.SQRT:
        return rounded(np.sqrt(wide), element)
    return rounded(libm_reference.correctly_rounded_f32(libm.NAMES[operation], wide), element)


def test_every_map_is_covered() -> None:
    assert set(_MAPS) == set(MapOperation)


@each_element
@pytest.mark.parametrize("operation", list(MapOperation), ids=str)
@given(data=st.data())
def test_map(element: ElementType, operation: MapOperation, data: st.DataObject) -> None:
    low, high = _MAPS[operation]
    a = data.draw(values(data.draw(shapes()), element, low, high))
    expected = _mapped(operation, a, element)
    # The method named after the map records the same Map node.
    method = operation.name.lower()
    assert_bits(forward_op(element, lambda x: getattr(x, method)(), a), expected)
    assert_bits(forward_op(element, lambda x: x.map(operation), a), expected)


# ----------------------------------------------------------------------------- products and sums


@each_element
@given(data=st.data())
def test_matmul_batched(element: ElementType, data: st.DataObject) -> None:
    batch = data.draw(shapes(min_dims=0, max_dims=2, max_side=3))
    m, k, n = (data.draw(st.integers(1, 4)) for _ in range(3))
    a = data.draw(values((*batch, m, k), element, -100.0, 100.0))
    b = data.draw(values((*batch, k, n), element, -100.0, 100.0))
    expected = product(a, b, element)
    assert_bits(forward_op(element, lambda x, y: x.matmul(y), a, b), expected)
    assert_bits(forward_op(element, lambda x, y: x @ y, a, b), expected)


def test_exact_products_ignore_the_ambient_posture() -> None:
    a = np.linspace(-3.0, 7.0, 48).reshape(6, 8).astype(np.float32) ** 3
    b = np.linspace(5.0, -2.0, 40).reshape(8, 5).astype(np.float32) ** 3
    with numerics_scope(Numerics.FAST):
        # Network.forward is always Exact, whatever posture host code runs under.
        out = forward_op(f32, lambda x, y: x.matmul(y), a, b)
    assert_bits(out, product(a, b, f32))
    with Numerics.exactly():
        assert_bits(Tensor(a, element=f32).matmul(Tensor(b, element=f32)), product(a, b, f32))


@each_element
@given(data=st.data())
def test_sum(element: ElementType, data: st.DataObject) -> None:
    a = data.draw(values(data.draw(shapes(max_dims=3, max_side=5)), element, -1e4, 1e4))
    expected = rounded(np.asarray(fold(list(a.ravel()), element)), element)
    assert_bits(forward_op(element, lambda x: x.sum(), a), expected)


@each_element
@given(data=st.data())
def test_sum_along(element: ElementType, data: st.DataObject) -> None:
    shape = data.draw(shapes(max_side=5))
    axis = data.draw(st.integers(0, len(shape) - 1))
    a = data.draw(values(shape, element, -1e4, 1e4))
    assert_bits(forward_op(element, lambda x: x.sum_along(axis), a), fold_along(a, axis, element))


def _log_softmax_parts(a: Array, axis: int, element: ElementType) -> tuple[Array, Array, Array]:
    """(centred, ln of the sum of exps, peak), each rounded as its primitive would be."""
    peak = np.max(a, axis=axis, keepdims=True)
    centred = rounded(up(a, element) - up(peak, element), element)
    exps = rounded(libm.evaluate(MapOperation.EXP, up(centred, element)), element)
    total = fold_along(exps, axis, element)
    ln = rounded(libm.evaluate(MapOperation.LN, up(total, element)), element)
    return centred, ln, peak


@each_element
@given(data=st.data())
def test_log_softmax_and_logsumexp(element: ElementType, data: st.DataObject) -> None:
    shape = data.draw(shapes())
    axis = data.draw(st.integers(0, len(shape) - 1))
    a = data.draw(values(shape, element, -30.0, 30.0))
    centred, ln, peak = _log_softmax_parts(a, axis, element)
    log_softmax = rounded(up(centred, element) - up(np.expand_dims(ln, axis), element), element)
    logsumexp = rounded(up(np.squeeze(peak, axis), element) + up(ln, element), element)
    assert_bits(forward_op(element, lambda x: x.log_softmax(axis), a), log_softmax)
    assert_bits(forward_op(element, lambda x: x.logsumexp(axis), a), logsumexp)


# ----------------------------------------------------------------------------- layout


@each_element
@given(data=st.data())
def test_broadcast(element: ElementType, data: st.DataObject) -> None:
    ones = data.draw(st.integers(0, 2))
    target = data.draw(shapes(max_dims=3))
    a = data.draw(values((1,) * ones, element))
    expected = np.full(target, a.reshape(()), dtype=element.dtype)
    assert_bits(forward_op(element, lambda x: x.broadcast(target), a), expected)


@each_element
@given(data=st.data())
def test_broadcast_along(element: ElementType, data: st.DataObject) -> None:
    shape = data.draw(shapes(min_dims=0))
    axis = data.draw(st.integers(0, len(shape)))
    extent = data.draw(st.integers(1, 4))
    a = data.draw(values(shape, element))
    expected = np.stack([a] * extent, axis=axis)
    assert_bits(forward_op(element, lambda x: x.broadcast_along(axis, extent), a), expected)


@each_element
@given(data=st.data())
def test_reshape_and_permute(element: ElementType, data: st.DataObject) -> None:
    shape = data.draw(shapes())
    a = data.draw(values(shape, element))
    order = data.draw(st.permutations(range(len(shape))))
    target = tuple(shape[i] for i in order)
    assert_bits(forward_op(element, lambda x: x.reshape(target), a), a.reshape(target))
    assert_bits(forward_op(element, lambda x: x.reshape((a.size,)), a), a.ravel())
    assert_bits(forward_op(element, lambda x: x.permute(order), a), np.transpose(a, order))


@each_element
@given(data=st.data())
def test_narrow_and_pad(element: ElementType, data: st.DataObject) -> None:
    shape = data.draw(shapes(max_side=5))
    axis = data.draw(st.integers(0, len(shape) - 1))
    start = data.draw(st.integers(0, shape[axis] - 1))
    length = data.draw(st.integers(1, shape[axis] - start))
    a = data.draw(values(shape, element))
    narrowed = np.take(a, range(start, start + length), axis=axis)
    assert_bits(forward_op(element, lambda x: x.narrow(axis, start, length), a), narrowed)
    before = data.draw(st.integers(0, 3))
    after = data.draw(st.integers(0, 3))
    widths = [(0, 0)] * len(shape)
    widths[axis] = (before, after)
    padded = np.pad(a, widths)
    extent = shape[axis] + before + after
    assert_bits(forward_op(element, lambda x: x.pad(axis, before, extent), a), padded)


def _windows(extent: int, size: int, step: int, dilation: int) -> list[list[int]]:
    windows = []
    start = 0
    while start + dilation * (size - 1) < extent:
        windows.append([start + s * dilation for s in range(size)])
        start += step
    return windows


@st.composite
def _window_geometry(draw: st.DrawFn) -> tuple[tuple[int, ...], int, int, int, int]:
    shape = list(draw(shapes(max_dims=3, max_side=3)))
    axis = draw(st.integers(0, len(shape) - 1))
    size = draw(st.integers(1, 3))
    dilation = draw(st.integers(1, 3))
    step = draw(st.integers(1, 3))
    shape[axis] = draw(st.integers(dilation * (size - 1) + 1, 9))
    return tuple(shape), axis, size, step, dilation


@each_element
@given(data=st.data())
def test_unfold(element: ElementType, data: st.DataObject) -> None:
    shape, axis, size, step, dilation = data.draw(_window_geometry())
    a = data.draw(values(shape, element))
    moved = np.moveaxis(a, axis, 0)
    windows = _windows(shape[axis], size, step, dilation)
    gathered = np.array([[moved[p] for p in window] for window in windows], dtype=element.dtype)
    expected = np.moveaxis(gathered, (0, 1), (axis, axis + 1))
    assert_bits(forward_op(element, lambda x: x.unfold(axis, size, step, dilation), a), expected)


@each_element
@given(data=st.data())
def test_fold(element: ElementType, data: st.DataObject) -> None:
    shape, axis, size, step, dilation = data.draw(_window_geometry())
    extent = shape[axis]
    windows = _windows(extent, size, step, dilation)
    rest = shape[:axis] + shape[axis + 1 :]
    g = data.draw(values((*shape[:axis], len(windows), size, *shape[axis + 1 :]), element, -1e3, 1e3))
    moved = np.moveaxis(g, (axis, axis + 1), (0, 1))
    out = np.empty((extent, *rest), dtype=element.accumulator)
    for position in range(extent):
        for rest_index in np.ndindex(*rest):
            # Each position receives its windows in ascending window order.
            terms = [
                moved[(w, s, *rest_index)]
                for w, window in enumerate(windows)
                for s, p in enumerate(window)
                if p == position
            ]
            out[(position, *rest_index)] = fold(terms, element)
    expected = np.moveaxis(rounded(out, element), 0, axis)
    assert_bits(forward_op(element, lambda x: x.fold(axis, size, step, dilation, extent), g), expected)


def test_unfold_then_fold_counts_window_overlaps() -> None:
    ones = np.ones((7,), dtype=np.float64)
    out = forward_op(f64, lambda x: x.unfold(0, 3, 2, 1).fold(0, 3, 2, 1, 7), ones)
    assert out.tolist() == [1.0, 1.0, 2.0, 1.0, 2.0, 1.0, 1.0]


# ----------------------------------------------------------------------------- gather / scatter


def _one_hot(indices: list[int], vocab: int, element: ElementType) -> Array:
    dense = np.zeros((len(indices), vocab), dtype=element.dtype)
    for row, index in enumerate(indices):
        dense[row, index] = 1.0
    return dense


def _gather_expected(table: Array, selection: Array, element: ElementType) -> Array:
    flat = table.reshape(table.shape[0], -1)
    return product(selection, flat, element).reshape((selection.shape[0], *table.shape[1:]))


def _scatter_expected(gradient: Array, selection: Array, element: ElementType) -> Array:
    flat = gradient.reshape(gradient.shape[0], -1)
    return product(selection.T.copy(), flat, element).reshape((selection.shape[1], *gradient.shape[1:]))


@each_element
@given(data=st.data())
def test_gather(element: ElementType, data: st.DataObject) -> None:
    vocab = data.draw(st.integers(1, 5))
    tail = data.draw(shapes(min_dims=0, max_dims=2, max_side=3))
    table = data.draw(values((vocab, *tail), element))
    indices = data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=6))
    dense = _one_hot(indices, vocab, element)
    expected = _gather_expected(table, dense, element)
    selection = Tensor.selection(indices, vocab, element)
    assert selection.is_selection
    # By indices (never materialized), fed as a dense one-hot, and recorded as a leaf.
    assert_bits(forward_op(element, lambda t, s: t.gather(s), table, selection), expected)
    assert_bits(forward_op(element, lambda t, s: t.gather(s), table, dense), expected)
    assert_bits(forward_op(element, lambda t: t.gather(selection), table), expected)
    assert selection.indices is not None and selection.is_selection


@each_element
@given(data=st.data())
def test_gather_through_a_general_dense_selection(element: ElementType, data: st.DataObject) -> None:
    vocab = data.draw(st.integers(1, 4))
    count = data.draw(st.integers(1, 4))
    table = data.draw(values((vocab, 3), element))
    mixing = data.draw(values((count, vocab), element))
    assert_bits(forward_op(element, lambda t, s: t.gather(s), table, mixing), _gather_expected(table, mixing, element))


@each_element
@given(data=st.data())
def test_scatter_accumulates_repeats_in_row_order(element: ElementType, data: st.DataObject) -> None:
    vocab = data.draw(st.integers(1, 4))
    tail = data.draw(shapes(min_dims=0, max_dims=2, max_side=3))
    indices = data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=7))
    gradient = data.draw(values((len(indices), *tail), element, -1e3, 1e3))
    dense = _one_hot(indices, vocab, element)
    expected = _scatter_expected(gradient, dense, element)
    selection = Tensor.selection(indices, vocab, element)
    assert_bits(forward_op(element, lambda g, s: g.scatter(s), gradient, selection), expected)
    assert_bits(forward_op(element, lambda g, s: g.scatter(s), gradient, dense), expected)


def test_selection_with_a_marker_other_than_one() -> None:
    table = np.array([[1.5, -2.0], [3.0, 0.25]])
    selection = Tensor.selection([1, 0, 1], 2, f64, one=0.5)
    dense = np.array([[0.0, 0.5], [0.5, 0.0], [0.0, 0.5]])
    assert_bits(selection.numpy(), dense)
    assert_bits(forward_op(f64, lambda t: t.gather(selection), table), _gather_expected(table, dense, f64))
    g = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert_bits(forward_op(f64, lambda x: x.scatter(selection), g), _scatter_expected(g, dense, f64))


def test_a_large_vocabulary_gathers_by_index() -> None:
    vocab = 50_000
    selection = Tensor.selection([0, 49_999, 7], vocab, f32)
    table = Tensor(np.arange(vocab * 2, dtype=np.float32).reshape(vocab, 2), element=f32)
    rows = table.gather(selection)
    assert rows.tolist() == [[0.0, 1.0], [99_998.0, 99_999.0], [14.0, 15.0]]
    # Gathering never materialized the [3, 50000] one-hot.
    assert selection.indices is not None
    assert selection._array is None


def test_selection_converts_to_the_tape_element() -> None:
    # A selection made with the default element joins an f64 tape as the same one-hot.
    selection = Tensor.selection([1, 1, 0], 2)
    table = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = forward_op(f64, lambda t: t.gather(selection), table)
    assert out.tolist() == [[3.0, 4.0], [3.0, 4.0], [1.0, 2.0]]


# ----------------------------------------------------------------------------- host tensors


def test_host_arithmetic_uses_the_same_kernels() -> None:
    a = np.array([1.0, 2.5, -3.0], dtype=np.float32)
    b = np.array([0.5, 4.0, 2.0], dtype=np.float32)
    ta, tb = Tensor(a, element=f32), Tensor(b, element=f32)
    assert_bits(ta + tb, a + b)
    assert_bits(ta * 2.0, a * np.float32(2.0))
    assert_bits(2.0 - ta, np.float32(2.0) - a)
    assert_bits((ta / tb).exp(), libm_reference.correctly_rounded_f32("exp", a / b))
    assert Tensor(0.02).scalar() == 0.02
    bf = Tensor(a, element=bf16)
    assert_bits(bf * bf, (a.astype(bf16.dtype).astype(np.float32) ** 2).astype(bf16.dtype))


def test_every_opcode_is_exercised_here() -> None:
    """A reminder that this file's coverage is per opcode: each name appears in a test above."""
    from topos.ir.ops import OPCODES

    source = open(__file__, encoding="utf-8").read()
    spelled = {
        "Leaf": "tape.leaf", "Parameter": "tape.parameter", "Input": "tape.input",
        "Add": "a + b", "Sub": "a - b", "Mul": "a * b", "Div": "a / b", "Neg": "-x",
        "Map": "x.map(", "MatMul": "x.matmul(", "Sum": "x.sum()", "SumAlong": "x.sum_along(",
        "Broadcast": "x.broadcast(", "BroadcastAlong": "x.broadcast_along(",
        "Reshape": "x.reshape(", "Permute": "x.permute(", "Narrow": "x.narrow(",
        "Pad": "x.pad(", "Unfold": "x.unfold(", "Fold": "x.fold(", "Gather": "t.gather(",
        "Scatter": "g.scatter(", "LogSoftmax": "x.log_softmax(", "LogSumExp": "x.logsumexp(",
        "Powf": "a.powf(", "Maximum": "x.maximum(", "Step": "x.step(", "Select": "m.select(",
        "StopGradient": "x.stop_gradient(",
    }  # fmt: skip
    assert {op.name for op in OPCODES} == set(spelled)
    for text in spelled.values():
        assert text in source

