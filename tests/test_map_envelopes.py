"""Per-map envelopes of the StableHLO reference interpreter and XLA:CPU against the portable
maps (the interpreter's exact bits), and XLA:CPU's bits at one and at two threads.

``benchmarks/map_envelopes.py`` measures them (its table is in docs/acceleration.md, "Numerics:
what agrees with what"); these tests hold each road to the bounds below on a smaller sample of
the same recipes (512 arguments per case and format). Errors are in ulps of the element at the
exact result (``map_envelopes.ulps``). Each bound is the largest error measured on 2026-12-01
(jaxlib 0.10.2, x86-64 with AVX-512, glibc 2.36; 200,000 arguments per case, every normal
bf16 argument of each domain, and dense grids of 200,001 points per map), rounded up, with
the reason it has that size:

- sqrt is IEEE's correctly rounded square root on every road: 0.
- bf16: every road computes the map in f32 and rounds once to bf16, and f32 results a few f32
  ulps apart round to bf16 neighbours at most: 1 (measured 0, and 1 on 2 lanes of pow).
- The reference interpreter's maps are the host's C++ libm: f32 measured 0 against our
  correctly rounded maps, bound 2 for a host libm within about 1.5 ulp; f64 at most 1 (tanh 2)
  against our maps' 0.513, bound 2 (tanh 3). Its erf is chlo's expansion: f32 7 ulp, plus an
  absolute error up to 37 ulps of the smallest binade for |x| < 2**-122 (an intermediate
  underflows gradually), bound 8 plus 2**-143 absolute; f64 3, bound 4.
- XLA:CPU's own kernels: f32 exp 6 (near overflow), erf 6, expm1 5, atan 5, tanh 4, log1p 2,
  log, sin, cos and pow 1; f64 tanh 6, expm1 4, atan 3, exp 2, log1p 128 at 1/sqrt(2) - 1
  falling to 3 at -0.34 (bound 160 there) and 2 elsewhere, log, sin, cos, erf and pow 1.
  Bounds: the measured figure with at least one ulp to spare, rounded up to 2, 3, 4, 6 or 8.
- erf_derivative is emitted as ``exp(ln(2/sqrt(pi)) - x*x)`` with ``x*x`` in two words and
  the exponent's rounding fed back (topos/stages/stablehlo.py): measured 1 ulp on both roads in
  f32, 1 (reference) and 2 (XLA) in f64; bound 3, the exponential's own error plus the
  correction's. (Emitted as ``2/sqrt(pi) * exp(-(x*x))`` it measured 65 and 510 ulp, and XLA
  flushed the f32 results for 9.3454 <= |x| <= 9.3518 to 0.)
- atan on XLA:CPU (``stablehlo.atan2``) rounds one way in its vectorized loop and another in
  the loop's remainder lanes, which is also what every lane of a 100,003-element array gets
  when split across two threads (arrays of 3, 7 and 15 elements give the two-thread bits on
  every argument): 24% of f32 lanes apart, 19% of f64; the bound covers both. Every other
  map gave the same bits at one and two threads, and in any position.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from benchmarks import map_envelopes as me
from topos import xla
from topos.stages.emission import emit_network

Array = np.ndarray[Any, Any]

COUNT = 512
"""Arguments per case and format here (before rounding, de-duplication and domain)."""

GLIBC_F32 = 2.0
GLIBC_F64 = 2.0

REFERENCE: dict[str, dict[str, float]] = {
    "f32": {
        "exp": GLIBC_F32, "log": GLIBC_F32, "sqrt": 0.0, "tanh": GLIBC_F32, "sin": GLIBC_F32,
        "cos": GLIBC_F32, "log1p": GLIBC_F32, "expm1": GLIBC_F32, "erf": 8.0, "atan": GLIBC_F32,
        "pow": GLIBC_F32,
    },
    "f64": {
        "exp": GLIBC_F64, "log": GLIBC_F64, "sqrt": 0.0, "tanh": 3.0, "sin": GLIBC_F64,
        "cos": GLIBC_F64, "log1p": GLIBC_F64, "expm1": GLIBC_F64, "erf": 4.0, "atan": GLIBC_F64,
        "pow": GLIBC_F64,
    },
}  # fmt: skip
"""The StableHLO reference interpreter's bound per map, in ulps (erf_derivative: per lane)."""

XLA: dict[str, dict[str, float]] = {
    "f32": {
        "exp": 8.0, "log": 2.0, "sqrt": 0.0, "tanh": 6.0, "sin": 2.0, "cos": 2.0, "log1p": 3.0,
        "expm1": 8.0, "erf": 8.0, "atan": 8.0, "pow": 2.0,
    },
    "f64": {
        "exp": 3.0, "log": 2.0, "sqrt": 0.0, "tanh": 8.0, "sin": 2.0, "cos": 2.0, "log1p": 3.0,
        "expm1": 6.0, "erf": 2.0, "atan": 4.0, "pow": 2.0,
    },
}  # fmt: skip
"""XLA:CPU's bound per map, in ulps (erf_derivative and f64 log1p: per lane)."""

ERF_DERIVATIVE = 3.0
"""Both roads' bound for erf_derivative, in ulps, in f32 and f64."""

LOG1P_F64_BAND = (-0.41422, -0.34)
"""Where XLA:CPU's f64 log1p loses up to 7 bits (129 ulp at 1/sqrt(2) - 1, 3 at -0.34; 2 elsewhere)."""


def bound(road: str, case: str, dtype: str, arguments: Array, want: Array) -> Array:
    """The envelope of ``road`` ("evaluate" or "xla") per lane, in ulps of the exact result."""
    x: Array = arguments[0].astype(np.float64)
    if dtype == "bf16":
        return np.full(x.shape, 0.0 if case == "sqrt" else 1.0)
    if case == "erf_derivative":
        return np.full(x.shape, ERF_DERIVATIVE)
    if road == "evaluate" and case == "erf" and dtype == "f32":
        # 8 ulp, plus 2**-143 absolute: 64 ulps of the smallest binade, 8 of the fourth.
        absolute: Array = 8.0 + 2.0**-143 / me.ulp_of(want.astype(np.float64), dtype)
        return absolute
    if road == "xla" and case == "log1p" and dtype == "f64":
        inside = (x >= LOG1P_F64_BAND[0]) & (x <= LOG1P_F64_BAND[1])
        banded: Array = np.where(inside, 160.0, XLA[dtype][case])
        return banded
    return np.full(x.shape, (REFERENCE if road == "evaluate" else XLA)[dtype][case])


KEYS = [(case, dtype) for dtype in me.ELEMENTS for case in me.CASES]


@functools.cache
def prepared(case: str, dtype: str) -> me.Measured:
    return me.prepare(case, dtype, me.sample(case, dtype, COUNT))


def check(road: str, case: str, dtype: str, arguments: Array, want: Array, got: Array) -> None:
    errors = me.ulps(got, want, dtype)
    limits = bound(road, case, dtype, arguments, want)
    outside = errors > limits
    if outside.any():
        i = int(np.argmax(errors - limits))
        raise AssertionError(
            f"{road} {case} {dtype}: {np.count_nonzero(outside)} lanes outside the envelope; worst at "
            f"{arguments[:, i].tolist()}: {errors[i]} ulp, bound {limits[i]}"
        )


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Array]:
    """Every case on the reference interpreter, in one subprocess (it can kill its process)."""
    folder = tmp_path_factory.mktemp("map_envelopes_evaluate")
    staged = [me.Staged(me.key_of(c, d), d, prepared(c, d).text, tuple(prepared(c, d).arguments)) for c, d in KEYS]
    me.stage(folder, staged)
    return me.run_worker(folder, "evaluate", "evaluate", timeout=300)


@pytest.mark.parametrize(("case", "dtype"), KEYS, ids=[f"{c}-{d}" for c, d in KEYS])
def test_the_reference_interpreter_keeps_each_map_within_its_envelope(case: str, dtype: str, evaluated: dict[str, Array]) -> None:
    m = prepared(case, dtype)
    assert m.lanes >= 200, f"{case} {dtype}: only {m.lanes} lanes"
    check("evaluate", case, dtype, m.arguments, m.exact_bits, evaluated[me.key_of(case, dtype)])


@pytest.mark.parametrize(("case", "dtype"), KEYS, ids=[f"{c}-{d}" for c, d in KEYS])
def test_xla_keeps_each_map_within_its_envelope(case: str, dtype: str) -> None:
    m = prepared(case, dtype)
    (got,) = xla.run_module(m.text, *m.arguments)
    check("xla", case, dtype, m.arguments, m.exact_bits, got)


def test_erf_derivative_keeps_its_envelope_where_exp_of_minus_x_squared_is_subnormal() -> None:
    """f32 |x| in [9.3454, 9.3518]: exp(-x*x) is subnormal and the result normal. XLA:CPU
    flushes subnormals, so the emission never forms exp(-x*x) alone: within the envelope,
    never 0."""
    m = me.prepare("erf_derivative", "f32", me.flush_band_arguments()[:, ::16])
    (got,) = xla.run_module(m.text, *m.arguments)
    errors = me.ulps(got, m.exact_bits, "f32")
    assert np.all(errors <= bound("xla", "erf_derivative", "f32", m.arguments, m.exact_bits)), errors.max()
    assert not np.any(got == 0)


@pytest.fixture(scope="module")
def threads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every case over ``me.LARGE`` arguments on XLA:CPU at one and at two threads."""
    folder = tmp_path_factory.mktemp("map_envelopes_threads")
    staged = []
    indices = {}
    for case, dtype in KEYS:
        m = prepared(case, dtype)
        arguments, index = me.large_arguments(m)
        network, root = me.record(case, me.ELEMENTS[dtype], arguments)
        staged.append(me.Staged(me.key_of(case, dtype), dtype, emit_network(network, [root]), tuple(arguments)))
        indices[me.key_of(case, dtype)] = (arguments, index)
    me.stage(folder, staged)
    one, two = me.thread_pair()
    return {
        "1": me.run_worker(folder, "xla", "threads1", one, me.THREAD_FLAGS.format(threads=1), timeout=300),
        "2": me.run_worker(folder, "xla", "threads2", two, me.THREAD_FLAGS.format(threads=2), timeout=300),
        "indices": indices,
        "workers": [me.worker_report(folder, tag) for tag in ("threads1", "threads2")],
    }


def test_xla_gives_each_map_the_same_bits_at_one_and_two_threads(threads: dict[str, Any]) -> None:
    workers = threads["workers"]
    assert len(workers[0]["cpus"]) == 1
    assert workers[0]["xla_flags"].endswith("intra_op_parallelism_threads=1")
    differing = {}
    for case, dtype in KEYS:
        key = me.key_of(case, dtype)
        arguments, index = threads["indices"][key]
        want = prepared(case, dtype).exact_bits[index]  # the interpreter's bits depend on values alone
        for tag in ("1", "2"):
            check("xla", case, dtype, arguments, want, threads[tag][key])
        count = int(np.count_nonzero(me.bits(threads["1"][key]) != me.bits(threads["2"][key])))
        if count:
            differing[key] = count
    # atan (stablehlo.atan2) is the known exception: its scalar loop, which a two-thread split
    # of a large array runs for every lane, rounds differently from its vectorized loop.
    assert set(differing) <= {"atan.f32", "atan.f64"}, differing
