"""The portable logarithms, arctangent and power (``topos.kernels.libm.logfamily``).

- special values, bit for bit (signs of zero, infinities, NaN, subnormals, C99 ``pow``);
- the tables re-derived with mpmath;
- accuracy on >= 10**5 inputs per map against x87 long double (``np.longdouble`` ufuncs,
  ~2**-64 relative, so an ulp error is measured to ~2**-11 ulp), asserting the declared
  ``ERROR_BOUND_ULP``; ``log_dd``'s relative error against mpmath at 113 bits;
- results independent of layout (strided views, 0-d, reversed, slices across blocks).
"""

from __future__ import annotations

import itertools
from typing import Any

import mpmath  # type: ignore[import-untyped]
import numpy as np
import pytest

from topos.kernels.libm import logfamily as lf
from topos.kernels.libm.expfamily import ERROR_BOUND_ULP as EXP_BOUND
from topos.kernels.libm.logfamily import ERROR_BOUND_ULP, atan, log, log1p, log_dd

Array = np.ndarray[Any, Any]
LD = np.longdouble
TINY = 5e-324
MIN_NORMAL = 2.2250738585072014e-308
MAX = 1.7976931348623157e308

# The accuracy references are x87 long double (64-bit significand) or better.
pytestmark = pytest.mark.skipif(
    np.finfo(LD).nmant < 63, reason="np.longdouble is not x87 extended (or wider) here"
)


def _bits(a: Array) -> list[int]:
    return np.asarray(a, dtype=np.float64).reshape(-1).view(np.uint64).tolist()


def _same(got: Array, want: Array) -> None:
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    want = np.asarray(want, dtype=np.float64).reshape(-1)
    both_nan = np.isnan(got) & np.isnan(want)
    bad = ~both_nan & (got.view(np.uint64) != want.view(np.uint64))
    assert not bad.any(), list(zip(got[bad].tolist(), want[bad].tolist(), strict=True))[:10]


def _ulp_errors(ours: Array, ref: Array) -> Array:
    """|ours - ref| in ulps of the float64 binade of ``ref`` (2**-1074 in the subnormals)."""
    ref = np.asarray(ref, dtype=LD)
    _, e = np.frexp(ref)
    ulp = np.ldexp(LD(1), np.maximum(e - 53, -1074).astype(np.int32))
    return np.asarray(np.abs(ours.astype(LD) - ref) / ulp, dtype=np.float64)


def _assert_within(name: str, xs: Array, ours: Array, ref: Array) -> float:
    err = _ulp_errors(ours, ref)
    worst = int(np.argmax(err))
    assert err[worst] <= ERROR_BOUND_ULP[name], (name, xs[worst].hex(), err[worst])
    return float(err[worst])


# -- special values ---------------------------------------------------------------------


def test_log_special_values() -> None:
    xs = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -TINY, TINY, MIN_NORMAL, MAX, 2.0, 0.5])
    want = [
        -np.inf, -np.inf, 0.0, np.nan, np.inf, np.nan, np.nan, np.nan,
        -744.4400719213812, -708.3964185322641, 709.782712893384,
        0.6931471805599453, -0.6931471805599453,
    ]
    _same(log(xs), np.array(want))
    assert _bits(log(np.array([1.0]))) == [0]  # +0, not -0
    hi, lo = log_dd(xs)
    _same(hi, np.array(want))
    assert np.all(lo[:8] == 0.0)
    assert _bits(log_dd(np.array([1.0]))[0]) == [0] and _bits(log_dd(np.array([1.0]))[1]) == [0]


def test_log1p_special_values() -> None:
    xs = np.array([0.0, -0.0, -1.0, -2.0, -np.inf, np.inf, np.nan, TINY, -TINY, 1e-300, -1e-17, MAX, -0.5])
    want = [0.0, -0.0, -np.inf, np.nan, np.nan, np.inf, np.nan, TINY, -TINY, 1e-300, -1e-17, 709.782712893384, -0.6931471805599453]
    _same(log1p(xs), np.array(want))


def test_atan_special_values() -> None:
    pio2 = float.fromhex("0x1.921fb54442d18p+0")
    xs = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, TINY, -TINY, 1e-300, 1.0, -1.0, MAX, -MAX, 2.0**60, 2.0**-28])
    want = [0.0, -0.0, pio2, -pio2, np.nan, TINY, -TINY, 1e-300, 0.7853981633974483, -0.7853981633974483, pio2, -pio2, pio2, 2.0**-28]
    _same(atan(xs), np.array(want))


POW_VALUES = [
    0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, np.inf, -np.inf, np.nan,
    TINY, -TINY, 2.0**53, -(2.0**53), 2.0**53 + 2, -(2.0**53 + 2), 2.0**52 + 1, -(2.0**52 + 1), 1e300, -1e300,
    0.25, 1.5, -1.5, 1e-300, 1024.0, -1075.0, 1 - 2.0**-53, 1 + 2.0**-52,
]


def _pow_c99(x: float, y: float) -> float | None:
    """C99 Annex F pow where a special case decides it; None for the general case."""
    def odd(v: float) -> bool:
        return bool(np.isfinite(v) and v == np.floor(v) and abs(v) < 2.0**53 and (v / 2) != np.floor(v / 2))
    if y == 0.0 or x == 1.0:
        return 1.0
    if np.isnan(x) or np.isnan(y):
        return np.nan
    if x == 0.0:
        if y < 0:
            return float(np.copysign(np.inf, x)) if odd(y) else np.inf
        return x if odd(y) else 0.0
    if np.isinf(x):
        if x > 0:
            return 0.0 if y < 0 else np.inf
        if y < 0:
            return -0.0 if odd(y) else 0.0
        return -np.inf if odd(y) else np.inf
    if np.isinf(y):
        if abs(x) == 1.0:
            return 1.0
        return np.inf if (abs(x) < 1.0) == (y < 0) else 0.0
    if x < 0 and y != np.floor(y):
        return np.nan
    return None


def test_pow_special_values_and_the_grid_of_them() -> None:
    xs, ys = (np.array(v) for v in zip(*itertools.product(POW_VALUES, POW_VALUES), strict=True))
    ours = lf.pow(xs, ys)
    mpmath.mp.prec = 200
    for x, y, got in zip(xs.tolist(), ys.tolist(), ours.tolist(), strict=True):
        special = _pow_c99(x, y)
        if special is not None:
            _same(np.array(got), np.array(special))
            continue
        v = mpmath.power(mpmath.mpf(abs(x)), mpmath.mpf(y))
        negative = x < 0 and y / 2 != np.floor(y / 2) and abs(y) < 2.0**53
        assert (got < 0) == negative or got == 0.0, (x, y, got)
        if v >= mpmath.mpf(2) ** 1024:
            assert abs(got) == np.inf, (x, y, got)
        elif v < mpmath.mpf(2) ** -1076:
            assert got == 0.0, (x, y, got)
        elif v >= MIN_NORMAL:
            ulp = mpmath.mpf(2) ** (mpmath.floor(mpmath.log(v, 2)) - 52)
            assert abs(abs(mpmath.mpf(got)) - v) / ulp <= ERROR_BOUND_ULP["pow"], (x, y, got)


def test_pow_named_cases() -> None:
    cases = [
        (np.nan, 0.0, 1.0), (np.nan, -0.0, 1.0), (1.0, np.nan, 1.0), (-1.0, np.inf, 1.0), (-1.0, -np.inf, 1.0),
        (-0.0, -3.0, -np.inf), (0.0, -3.0, np.inf), (-0.0, -2.0, np.inf), (-0.0, -np.inf, np.inf),
        (-0.0, 3.0, -0.0), (-0.0, 2.0, 0.0), (-0.0, 0.5, 0.0), (-np.inf, 3.0, -np.inf), (-np.inf, -3.0, -0.0),
        (-np.inf, 2.0, np.inf), (-np.inf, -2.5, 0.0), (np.inf, -1e-300, 0.0), (np.inf, 1e-300, np.inf),
        (0.5, np.inf, 0.0), (0.5, -np.inf, np.inf), (2.0, np.inf, np.inf), (-2.0, -np.inf, 0.0),
        (-2.0, 0.5, np.nan), (-8.0, 1.0 / 3.0, np.nan), (-2.0, 2.0**53, np.inf), (-2.0, -(2.0**53) - 2, 0.0),
        (-1.0, 2.0**53 + 2, 1.0), (-1.0, 2.0**52 + 1, -1.0), (-2.0, 3.0, -8.0), (-2.0, -3.0, -0.125),
        (10.0, 308.0, 1e308), (10.0, 309.0, np.inf), (10.0, -400.0, 0.0), (-10.0, -401.0, -0.0),
        (2.0, -1074.0, TINY), (2.0, -1075.0, 0.0), (-2.0, -1073.0, -2 * TINY), (TINY, 0.5, 2.2227587494850775e-162),
        (2.0, 1023.0, 8.98846567431158e307), (2.0, 1024.0, np.inf), (1 + 2.0**-52, 2.0**70, np.inf),
        (1 - 2.0**-53, 2.0**80, 0.0), (1 - 2.0**-53, -(2.0**80), np.inf), (3.0, 1e300, np.inf), (3.0, -1e300, 0.0),
    ]
    x, y, want = (np.array(c) for c in zip(*cases, strict=True))
    _same(lf.pow(x, y), want)


def test_pow_rejects_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match="one shape"):
        lf.pow(np.ones(3), np.ones(4))


# -- tables -----------------------------------------------------------------------------


def _round_bits(v: mpmath.mpf, bits: int) -> float:
    m, e = mpmath.frexp(v)
    return float(mpmath.ldexp(mpmath.nint(m * 2**bits), e - bits))


def test_tables_rederived_with_mpmath() -> None:
    mpmath.mp.prec = 200
    assert lf._LOG_R.size == lf._LOG_T_HI.size == lf._LOG_T_LO.size == 257
    for j in range(257):
        c = float(np.array([(j + 0x3FE00 + 106) << 44], dtype=np.int64).view(np.float64)[0])
        r = 1.0 if c == 1.0 else _round_bits(1 / mpmath.mpf(c), 24)
        assert lf._LOG_R[j] == r, j
        v = -mpmath.log(mpmath.mpf(r))
        hi = float(mpmath.nint(v * 2**42) / 2**42)
        assert lf._LOG_T_HI[j] == hi, j
        assert lf._LOG_T_LO[j] == float(v - mpmath.mpf(hi)), j
    assert lf._LOG_R[150] == 1.0 and lf._LOG_T_HI[150] == 0.0 and lf._LOG_T_LO[150] == 0.0
    for i in range(130):
        v = mpmath.atan(mpmath.mpf(i % 65) / 64) - (mpmath.pi / 2 if i >= 65 else 0)
        assert lf._ATAN_HI[i] == float(v), i
        assert lf._ATAN_LO[i] == float(v - mpmath.mpf(float(v))), i
    ln2 = mpmath.log(2)
    assert lf._LN2_HI == _round_bits(ln2, 42)
    assert lf._LN2_LO == float(ln2 - mpmath.mpf(lf._LN2_HI))
    assert lf._PIO2_HI == float(mpmath.pi / 2)
    for k, ck in zip(range(3, 9), (lf._C3, lf._C4, lf._C5, lf._C6, lf._C7, lf._C8), strict=True):
        assert ck == float(mpmath.mpf((-1) ** (k + 1)) / k)
    for k, ak in zip((3, 5, 7, 9), (lf._A3, lf._A5, lf._A7, lf._A9), strict=True):
        assert ak == float(mpmath.mpf((-1) ** ((k - 1) // 2)) / k)


# -- accuracy ---------------------------------------------------------------------------


def _positive_sample(rng: np.random.Generator, n: int) -> Array:
    bits = rng.integers(1, 0x7FF0_0000_0000_0000, n, dtype=np.int64).view(np.float64)
    wide = np.exp2(rng.uniform(-1074.0, 1024.0, n))
    near1 = 1.0 + rng.uniform(-1.0, 1.0, n) * np.exp2(rng.uniform(-53.0, -1.0, n))
    # The centres' edges (m rounding at its 8th fraction bit) and the sqrt(2) fold.
    j = rng.integers(0x3FE00 + 106, 0x3FE00 + 363, n)
    edges = (np.left_shift(j, 44) + (1 << 43) + rng.integers(-3, 3, n)).view(np.float64)
    edges = edges * np.exp2(rng.integers(-60, 60, n).astype(np.float64))
    fold = np.array([0x3FE6A09E667F3BCD + d for d in range(-200, 200)], dtype=np.int64).view(np.float64)
    subnormal = rng.integers(1, 1 << 52, n // 4, dtype=np.int64).view(np.float64)
    return np.concatenate([bits, wide, near1, edges, fold, fold * 2, subnormal])


def test_log_accuracy() -> None:
    xs = _positive_sample(np.random.default_rng(1), 40_000)
    _assert_within("log", xs, log(xs), np.log(xs.astype(LD)))


def test_log_dd_hi_is_log_and_lo_is_small() -> None:
    xs = _positive_sample(np.random.default_rng(2), 20_000)
    hi, lo = log_dd(xs)
    _assert_within("log", xs, hi, np.log(xs.astype(LD)))
    assert np.all((hi + lo) == hi)


def test_log_dd_relative_error_against_mpmath() -> None:
    mpmath.mp.prec = 113
    xs = _positive_sample(np.random.default_rng(3), 600)
    hi, lo = log_dd(xs)
    worst = mpmath.mpf(0)
    for x, h, lw in zip(xs.tolist(), hi.tolist(), lo.tolist(), strict=True):
        t = mpmath.log(mpmath.mpf(x))
        if t != 0:
            worst = max(worst, abs((mpmath.mpf(h) + mpmath.mpf(lw) - t) / t))
    assert worst <= lf.LOG_DD_RELATIVE_BOUND, float(worst)


def test_log1p_accuracy() -> None:
    rng = np.random.default_rng(4)
    n = 25_000
    sign = rng.choice([-1.0, 1.0], n)
    xs = np.concatenate([
        rng.uniform(-1.0, 1.0, n),
        sign * np.exp2(rng.uniform(-60.0, 0.0, n)),
        np.exp2(rng.uniform(-1.0, 1024.0, n)),
        -1.0 + np.exp2(rng.uniform(-53.0, -1.0, n)),  # near -1
        sign * np.exp2(rng.uniform(-56.0, -52.0, n)),  # around the tiny threshold
        rng.integers(1, 0x7FF0_0000_0000_0000, n, dtype=np.int64).view(np.float64),
        -rng.integers(0, 0x3FF0_0000_0000_0000, n, dtype=np.int64).view(np.float64),
    ])
    xs = xs[xs > -1.0]
    _assert_within("log1p", xs, log1p(xs), np.log1p(xs.astype(LD)))


def test_atan_accuracy() -> None:
    rng = np.random.default_rng(5)
    n = 20_000
    sign = rng.choice([-1.0, 1.0], n)
    i = rng.integers(0, 65, n).astype(np.float64)
    xs = np.concatenate([
        rng.uniform(-4.0, 4.0, n),
        sign * np.exp2(rng.uniform(-30.0, 64.0, n)),
        sign * (i + 0.5) / 64 * (1 + rng.uniform(-1e-12, 1e-12, n)),  # breakpoint edges
        sign * 64 / (i + 0.5) * (1 + rng.uniform(-1e-12, 1e-12, n)),
        sign * (1.0 + rng.uniform(-1e-6, 1e-6, n)),
        rng.integers(0, 0x7FF0_0000_0000_0000, n, dtype=np.int64).view(np.float64) * sign,
    ])
    _assert_within("atan", xs, atan(xs), np.arctan(xs.astype(LD)))
    _same(atan(-xs), -atan(xs))


def test_pow_bound_covers_exp_dd() -> None:
    # pow's error is exp_dd's plus the propagated log_dd error (< 0.03 ulp).
    assert ERROR_BOUND_ULP["pow"] >= EXP_BOUND["exp_dd"] + 0.025


def test_pow_accuracy() -> None:
    rng = np.random.default_rng(6)
    n = 30_000
    x1 = np.exp2(rng.uniform(-1074.0, 1024.0, n))
    y1 = rng.uniform(-708.0, 709.0, n) / np.log(x1)
    x2 = 1.0 + rng.uniform(-1.0, 1.0, n) * np.exp2(rng.uniform(-52.0, -1.0, n))
    x2[x2 == 1.0] = 1.5
    y2 = rng.uniform(-700.0, 700.0, n) / np.log(x2)
    x3 = -np.exp2(rng.uniform(-15.0, 15.0, n))
    y3 = np.rint(rng.uniform(-45.0, 45.0, n))
    x4 = rng.uniform(0.0, 10.0, n)
    y4 = rng.uniform(-30.0, 30.0, n)
    xs = np.concatenate([x1, x2, x3, x4])
    ys = np.concatenate([y1, y2, y3, y4])
    ours = lf.pow(xs, ys)
    ref = np.power(xs.astype(LD), ys.astype(LD))
    normal = (np.abs(ref) >= LD(MIN_NORMAL)) & (np.abs(ref) <= LD(MAX))
    assert np.all(np.isfinite(ours[normal]))
    _assert_within("pow", xs[normal], ours[normal], ref[normal])


# -- layout -----------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [log, log1p, atan, lambda v: log_dd(v)[1]], ids=["log", "log1p", "atan", "log_dd"])
def test_results_are_independent_of_layout(fn: Any) -> None:
    rng = np.random.default_rng(7)
    base = np.exp2(rng.uniform(-30.0, 30.0, 3 * 20_000)) * rng.choice([-1.0, 1.0, 0.5], 3 * 20_000)
    base[:7] = [0.0, -0.0, np.inf, np.nan, TINY, -1.0, 1.0]
    full = fn(base)
    _same(fn(base[::3]), full[::3])  # strided view, across block boundaries
    _same(fn(base[::-1]), full[::-1])
    _same(fn(base.reshape(3, -1)), full.reshape(3, -1))
    for k in (0, 5, 8191, 8192, 8193, 30_000):
        got = fn(np.array(base[k]))
        assert got.shape == ()
        _same(got, full[k : k + 1])
    before = base.copy()
    fn(base)
    _same(base, before)  # the argument is never written


def test_pow_is_independent_of_layout() -> None:
    rng = np.random.default_rng(8)
    x = np.exp2(rng.uniform(-20.0, 20.0, 30_000)) * rng.choice([-1.0, 1.0], 30_000)
    y = np.rint(rng.uniform(-20.0, 20.0, 30_000)) + rng.choice([0.0, 0.5], 30_000)
    full = lf.pow(x, y)
    _same(lf.pow(x[::-1], y[::-1]), full[::-1])
    _same(lf.pow(x[1::2], y[1::2]), full[1::2])
    got = lf.pow(np.array(x[9000]), np.array(y[9000]))
    assert got.shape == ()
    _same(got, full[9000:9001])
