"""Sealed backends: the coverage matrix, offers that decline, the tally, native envelopes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import Numerics, Tape, Tensor, bf16, f32, f64
from topos.ir import ops
from topos.ir.numerics import Fidelity
from topos.kernels import native, reference
from topos.kernels.binding import kernel_into
from topos.kernels.dispatch import (
    Backend,
    Coverage,
    Dispatch,
    Formula,
    Precision,
    Service,
    chain,
    offer_gemm,
    offer_sum,
    offer_sum_along,
    tallied,
)

Array = np.ndarray[Any, Any]


def test_every_backend_declares_every_formula() -> None:
    for backend in Backend:
        for formula in Formula:
            coverage = backend.coverage(formula)
            assert isinstance(coverage, Coverage)
            if coverage.serves:
                assert coverage.precisions
    assert Backend.NATIVE.dispatch() is Dispatch.OFFERED
    assert Backend.FUSED.dispatch() is Dispatch.ELECTED
    assert Backend.XLA.dispatch() is Dispatch.TRANSLATED


def test_coverage_matrix_cells() -> None:
    assert Backend.NATIVE.coverage(Formula.GEMM).fidelity is Fidelity.ENVELOPE
    assert not Backend.NATIVE.coverage(Formula.GEMM).meets(Fidelity.BIT_IDENTICAL)
    assert Backend.FUSED.coverage(Formula.REDUCE_WINDOW).fidelity is Fidelity.BIT_IDENTICAL
    assert Backend.FUSED.coverage(Formula.WINDOW_PRODUCT).meets(Fidelity.BIT_IDENTICAL)
    assert not Backend.FUSED.coverage(Formula.BATCH_NORM_INFERENCE).serves
    assert Backend.NATIVE.serves(Formula.GEMM, Precision.F64)
    assert not Backend.NATIVE.serves(Formula.MAP, Precision.F32)
    assert chain(Formula.GEMM, Precision.F32) == (Backend.NATIVE,)
    assert chain(Formula.WINDOW_PRODUCT, Precision.F32) == ()
    assert Precision.of(bf16) is Precision.F32 and Precision.of(f64) is Precision.F64


def test_exact_road_tallies_only_reference_rows() -> None:
    a = np.ones((32, 32), np.float32)
    with Numerics.exactly(), tallied() as services:
        offer_gemm(a, a, f32)
        offer_sum(a, f32)
        offer_sum_along(a, 1, f32)
    assert services == [
        Service(Formula.GEMM, Precision.F32, None, 1),
        Service(Formula.REDUCE, Precision.F32, None, 2),
    ]


def test_fast_offers_native_and_small_products_decline() -> None:
    big = np.ones((32, 32), np.float32)
    small = np.ones((2, 2), np.float32)
    with tallied() as services:
        offer_gemm(big, big, f32)
        offer_gemm(small, small, f32)
        offer_sum(np.ones(4, np.float32), f32)
    assert Service(Formula.GEMM, Precision.F32, Backend.NATIVE, 1) in services
    assert Service(Formula.GEMM, Precision.F32, None, 1) in services
    assert Service(Formula.REDUCE, Precision.F32, None, 1) in services
    with tallied() as outside:
        pass
    assert outside == []


def test_exact_plan_tally_has_no_envelope_rows() -> None:
    rng = np.random.default_rng(0)
    network, y = Tape.record(lambda t: t.input(rng.standard_normal((16, 64))).matmul(t.parameter(rng.standard_normal((64, 16)))).sum())
    with tallied() as exact_rows:
        network.entry(y).numerics(Numerics.EXACT).lower().forward(network.parameters())
    assert exact_rows and all(row.backend is None for row in exact_rows)
    with tallied() as fast_rows:
        network.entry(y).lower().forward(network.parameters())
    assert {row.backend for row in fast_rows} == {Backend.NATIVE}


@pytest.mark.parametrize("element", [f32, f64], ids=["f32", "f64"])
@settings(max_examples=20)
@given(m=st.integers(1, 40), k=st.integers(1, 80), n=st.integers(1, 40), seed=st.integers(0, 1000))
def test_native_gemm_within_reassociation_envelope(element: Any, m: int, k: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(element.dtype)
    b = rng.standard_normal((k, n)).astype(element.dtype)
    exact = reference.matmul(a, b, element).astype(np.float64)
    fast = native.matmul(a, b, element).astype(np.float64)
    # Reordering k products (and fusing multiply-add) errs by at most k*eps*sum|a||b| per
    # output, plus one rounding of the output itself.
    eps = float(np.finfo(element.dtype).eps)
    bound = (k + 1) * eps * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(fast - exact) <= bound)


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=["f32", "f64", "bf16"])
@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 30), min_size=1, max_size=3), axis=st.integers(0, 2), seed=st.integers(0, 1000))
def test_native_sum_along_within_reassociation_envelope(element: Any, shape: list[int], axis: int, seed: int) -> None:
    """Every axis of every rank, contiguous or a strided view; a leading axis of a contiguous
    array is served as a product with ones, the rest by numpy's reduce."""
    axis = axis % len(shape)
    rng = np.random.default_rng(seed)
    a = element.convert(rng.standard_normal(shape))
    count = shape[axis]
    accumulator_eps = float(np.finfo(element.accumulator).eps)
    storage_eps = 2 * element.roundoff
    for operand in (a, np.flip(a, axis=0)):
        exact = reference.sum_along(np.ascontiguousarray(operand), axis, element).astype(np.float64)
        fast = native.sum_along(operand, axis, element)
        assert fast.dtype == element.dtype and fast.shape == exact.shape
        # Reassociating ``count`` terms in the accumulator, then one rounding to storage
        # (the reference rounds once too, so twice the storage epsilon between them).
        terms = np.abs(operand.astype(np.float64)).sum(axis=axis)
        bound = (count + 1) * accumulator_eps * terms + 2 * storage_eps * np.abs(exact)
        assert np.all(np.abs(fast.astype(np.float64) - exact) <= bound)
    if not element.accumulates_wider and len(shape) >= 2:
        out = np.full(native.sum_along(a, axis, element).shape, np.nan, element.dtype)
        assert native.sum_along(a, axis, element, out) is out
        assert np.array_equal(out, native.sum_along(a, axis, element))


def test_native_sum_within_envelope_and_tiny_sums_agree() -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal(1000).astype(np.float32)
    exact = float(reference.sum_all(a, f32))
    fast = float(native.sum_all(a, f32))
    assert abs(fast - exact) <= 1000 * float(np.finfo(np.float32).eps) * float(np.abs(a).sum())
    tiny = a[:7]
    assert not native.accepts_reduce(tiny)
    with tallied() as services:
        result = Tensor(tiny, element=f32).sum()
    assert services == [Service(Formula.REDUCE, Precision.F32, None, 1)]
    assert result.bits() == reference.sum_all(tiny, f32).view(np.uint32)


@pytest.mark.parametrize("op", [ops.Add(), ops.Sub(), ops.Mul(), ops.Div(), ops.Maximum()], ids=lambda o: o.name)
@settings(max_examples=15, deadline=None)
@given(count=st.sampled_from([512, 2048, 4096, 6272, 50176]), width=st.integers(1, 63), seed=st.integers(0, 1000))
def test_fast_kernels_over_short_spread_rows_equal_numpy(op: ops.Op, count: int, width: int, seed: int) -> None:
    """A Fast binary kernel reading a row spread along axis 0 (in either operand) in long runs:
    elementwise, so the same bits as numpy's own loop over the same operands."""
    rng = np.random.default_rng(seed)
    dense = rng.standard_normal((count, width)).astype(np.float32)
    row = np.broadcast_to(rng.standard_normal(width).astype(np.float32), (count, width))
    kernel = kernel_into(op, f32, Numerics.FAST, [(count, width), (count, width)], dense=True)
    assert kernel is not None
    ufunc = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Maximum": np.maximum}[op.name]
    for left, right in ((dense, row), (row, dense), (dense, dense)):
        out = np.full((count, width), np.nan, np.float32)
        assert kernel(left, right, out=out) is out
        assert np.array_equal(out.view(np.uint32), ufunc(left, right).view(np.uint32))
        assert np.array_equal(kernel(left, right).view(np.uint32), ufunc(left, right).view(np.uint32))
