"""The portable exponentials (:mod:`topos.kernels.libm.expfamily`) against independent references.

- accuracy: samples over the interesting ranges (uniform, log-uniform magnitudes, reduction
  boundaries, subnormal results, near overflow, random bit patterns) measured against x87
  long double (``expl``, ``expm1l``, ``tanhl``: 64-bit significands, a few thousandths of a
  float64 ulp) and, on a smaller sample, against mpmath at 113 bits; the maximum ulp error
  must stay within the module's ``ERROR_BOUND_ULP``;
- special values, bit for bit; purity; results independent of layout;
- the module's constants re-derived with mpmath.

Run as a script for the large measurement in ``docs/libm-expfamily.md``:
``python tests/test_libm_expfamily.py 10000000``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import mpmath  # type: ignore[import-untyped]
import numpy as np
import pytest

from topos.kernels.libm import expfamily as ef
from topos.kernels.libm.core import two_prod

Array = np.ndarray[Any, Any]
LD = np.longdouble
F64 = np.float64

# The long double reference needs x87's 64-bit significand (or better, as quad on aarch64).
LONG_DOUBLE_OK = np.finfo(LD).nmant >= 63
needs_long_double = pytest.mark.skipif(not LONG_DOUBLE_OK, reason="long double is not wider than double here")

LN2_64 = float(mpmath.log(2) / 64)
# (numpy may parse long double strings through float64: build it from the module's two words)
TWO_OVER_SQRTPI_LD = LD(ef.TWO_OVER_SQRTPI_HI) + LD(ef.TWO_OVER_SQRTPI_LO)

FUNCTIONS = ("exp", "exp_dd", "expm1", "tanh", "erf_derivative")


# --- references and ulp errors ------------------------------------------------------------


def _bits(x: Any) -> Array:
    return np.asarray(x, dtype=F64).view(np.uint64)


def ulp_errors(ours: Array, true: Array) -> Array:
    """``|ours - true|`` in ulps of the float64 binade of ``true`` (long double), per element.

    Where ``true`` rounds to an infinity in float64, the error is 0 if ``ours`` is that
    infinity and inf otherwise.
    """
    with np.errstate(over="ignore"):
        rounded = true.astype(F64)
    err = np.zeros(ours.shape, dtype=F64)
    infinite = np.isinf(rounded)
    err[infinite & (ours != rounded)] = np.inf
    finite = ~infinite
    t = true[finite]
    _, e = np.frexp(t)
    ulp = np.ldexp(LD(1), np.maximum(e.astype(np.int64) - 1, -1022) - 52)
    with np.errstate(invalid="ignore", over="ignore"):
        err[finite] = (np.abs(ours[finite].astype(LD) - t) / ulp).astype(F64)
    err[np.isnan(err)] = np.inf
    return err


def reference(name: str, x: Array, lo: Array | None = None) -> Array:
    """The true values in long double."""
    with np.errstate(all="ignore"):
        if name == "exp":
            return np.exp(x.astype(LD))
        if name == "exp_dd":
            assert lo is not None
            return np.exp(x.astype(LD)) * np.exp(lo.astype(LD))
        if name == "expm1":
            return np.expm1(x.astype(LD))
        if name == "tanh":
            return np.tanh(x.astype(LD))
        if name == "erf_derivative":
            a = np.abs(x)
            a = np.where(a > 30.0, 30.0, a)
            sh, sl = two_prod(a, a)  # exact: x*x = sh + sl
            return TWO_OVER_SQRTPI_LD * (np.exp(-sh.astype(LD)) * np.exp(-sl.astype(LD)))
    raise AssertionError(name)


def reference_mpmath(name: str, x: float, lo: float = 0.0) -> Any:
    v = mpmath.mpf(x)
    if name == "exp":
        return mpmath.exp(v)
    if name == "exp_dd":
        return mpmath.exp(v + mpmath.mpf(lo))
    if name == "expm1":
        return mpmath.expm1(v)
    if name == "tanh":
        return mpmath.tanh(v)
    if name == "erf_derivative":
        return 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-v * v)
    raise AssertionError(name)


def long_double_to_mpf(v: Any) -> Any:
    """A long double as an mpmath number, exactly (two float64 words of its scaled significand)."""
    m, e = np.frexp(LD(v))
    hi = float(m)
    lo = float(m - LD(hi))
    return (mpmath.mpf(hi) + mpmath.mpf(lo)) * mpmath.mpf(2) ** int(e)


def ulp_error_mpmath(ours: float, true: Any) -> float:
    if mpmath.isinf(true) or abs(true) >= mpmath.mpf(2) ** 1024 * (1 - mpmath.mpf(2) ** -54):
        return 0.0 if ours == (np.inf if true > 0 else -np.inf) else np.inf
    if true == 0:
        return 0.0 if ours == 0 else np.inf
    e = max(int(mpmath.floor(mpmath.log(abs(true), 2))), -1022)
    # log2 may land one off at a power of two; the exponent is fixed by comparing.
    while abs(true) < mpmath.mpf(2) ** e and e > -1022:
        e -= 1
    while abs(true) >= mpmath.mpf(2) ** (e + 1):
        e += 1
    return float(abs(mpmath.mpf(ours) - true) / mpmath.mpf(2) ** (e - 52))


def evaluate(name: str, x: Array, lo: Array | None = None) -> Array:
    if name == "exp_dd":
        assert lo is not None
        return ef.exp_dd(x, lo)
    fn: Callable[[Array], Array] = getattr(ef, name)
    return fn(x)


# --- samples ------------------------------------------------------------------------------


def _log_uniform(rng: np.random.Generator, n: int, lo_exp: float, hi_exp: float) -> Array:
    mag = np.exp2(rng.uniform(lo_exp, hi_exp, n))
    return np.where(rng.random(n) < 0.5, -mag, mag)


def _random_bits(rng: np.random.Generator, n: int) -> Array:
    x = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False).view(F64)
    return np.where(np.isnan(x), 0.0, x)


def _nudge(rng: np.random.Generator, x: Array, steps: int) -> Array:
    """Each value moved a random number of float64 steps (up to ``steps``) either way."""
    bits = x.view(np.int64)
    move = rng.integers(-steps, steps + 1, x.size)
    moved = np.where(x > 0, bits + move, bits - move).view(F64)
    return np.where(x == 0, x, moved)


def _boundaries(rng: np.random.Generator, n: int, kmin: int, kmax: int) -> Array:
    """Arguments next to the reduction's decision points (k + 1/2) * ln2/64 and its centres."""
    k = rng.integers(kmin, kmax, n).astype(F64)
    half = np.where(rng.random(n) < 0.7, 0.5, 0.0)
    return _nudge(rng, (k + half) * LN2_64, 4)


def sample(name: str, n: int, seed: int = 0) -> tuple[Array, Array | None]:
    """About ``n`` arguments for ``name`` from a mixed distribution (and low words for exp_dd)."""
    rng = np.random.default_rng([seed, FUNCTIONS.index(name)])
    m = max(n // 8, 1)
    parts: list[Array]
    if name in ("exp", "exp_dd"):
        parts = [
            rng.uniform(-745.2, 709.8, 2 * m),
            _log_uniform(rng, m, -60, 9.5),
            _boundaries(rng, m, -68800, 65536),
            rng.uniform(-745.2, -707.0, m),  # subnormal and tiny normal results
            rng.uniform(709.0, 709.79, m // 2),  # near overflow
            rng.uniform(-2.0, 2.0, m),
            _random_bits(rng, m // 2),
            _log_uniform(rng, m // 2, -1074, -1000),  # subnormal arguments
        ]
    elif name == "expm1":
        parts = [
            rng.uniform(-40.0, 709.8, m),
            _log_uniform(rng, 2 * m, -60, 9.5),
            rng.uniform(-0.02, 0.02, m),
            _boundaries(rng, m, -200, 200),
            _nudge(rng, np.full(m // 2, LN2_64 / 2) * np.where(rng.random(m // 2) < 0.5, -1, 1), 2000),
            rng.uniform(-2.0, 2.0, m),
            _random_bits(rng, m // 2),
            _log_uniform(rng, m // 2, -1074, -50),
            rng.uniform(-40.0, -30.0, m // 2),
        ]
    elif name == "tanh":
        parts = [
            rng.uniform(-20.0, 20.0, m),
            _log_uniform(rng, 2 * m, -40, 4.4),
            rng.uniform(-1.0, 1.0, m),
            _boundaries(rng, m, -100, 100) / 2.0,
            _log_uniform(rng, m // 2, -29, -26),  # around the tanh(x) = x cut
            rng.uniform(18.0, 20.5, m // 2),
            _random_bits(rng, m // 2),
            _log_uniform(rng, m // 2, -1074, -30),
            rng.uniform(-0.01, 0.01, m),
        ]
    elif name == "erf_derivative":
        parts = [
            rng.uniform(-28.0, 28.0, 2 * m),
            _log_uniform(rng, 2 * m, -40, 4.8),
            rng.uniform(-3.0, 3.0, m),
            rng.uniform(26.0, 27.5, m) * np.where(rng.random(m) < 0.5, -1, 1),  # subnormal results
            np.sqrt(np.abs(_boundaries(rng, m, -72000, 0))),
            _random_bits(rng, m // 2),
            _log_uniform(rng, m // 2, -1074, -30),
        ]
    else:
        raise AssertionError(name)
    x = np.concatenate(parts)
    if name != "exp_dd":
        return x, None
    x = np.where(np.abs(x) > 800.0, 0.0, x)
    lo = rng.uniform(-1.0, 1.0, x.size) * np.spacing(np.abs(x))
    return x, lo


def measure(name: str, n: int, seed: int = 0, chunk: int = 1_000_000) -> tuple[float, float, float, int]:
    """``(max ulp error, argument, low word, count)`` over ``n`` sampled arguments."""
    worst = (-1.0, 0.0, 0.0)
    count = 0
    c = 0
    while count < n:
        x, lo = sample(name, min(n, chunk), seed=seed * 1000 + c)
        c += 1
        ours = evaluate(name, x, lo)
        err = ulp_errors(ours, reference(name, x, lo))
        i = int(np.argmax(err))
        count += x.size
        if err[i] > worst[0]:
            worst = (float(err[i]), float(x[i]), 0.0 if lo is None else float(lo[i]))
    return worst[0], worst[1], worst[2], count


# --- accuracy -----------------------------------------------------------------------------


@needs_long_double
@pytest.mark.parametrize("name", FUNCTIONS)
def test_accuracy_against_long_double(name: str) -> None:
    x, lo = sample(name, 200_000)
    ours = evaluate(name, x, lo)
    err = ulp_errors(ours, reference(name, x, lo))
    i = int(np.argmax(err))
    assert err[i] <= ef.ERROR_BOUND_ULP[name], (name, float(x[i]), err[i])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_accuracy_against_mpmath(name: str) -> None:
    x, lo = sample(name, 1_600, seed=7)
    ours = evaluate(name, x, lo)
    with mpmath.workprec(113):
        for i in range(x.size):
            low = 0.0 if lo is None else float(lo[i])
            e = ulp_error_mpmath(float(ours[i]), reference_mpmath(name, float(x[i]), low))
            assert e <= ef.ERROR_BOUND_ULP[name], (name, float(x[i]), low, e)


@needs_long_double
def test_long_double_reference_agrees_with_mpmath() -> None:
    """The long double references are good to a few thousandths of an ulp."""
    for name in FUNCTIONS:
        x, lo = sample(name, 400, seed=3)
        ld = reference(name, x, lo)
        with mpmath.workprec(113):
            for i in range(x.size):
                low = 0.0 if lo is None else float(lo[i])
                t = reference_mpmath(name, float(x[i]), low)
                if t == 0 or abs(t) > mpmath.mpf(2) ** 1023:
                    continue
                e = max(int(mpmath.floor(mpmath.log(abs(t), 2))), -1022)
                diff = abs(long_double_to_mpf(ld[i]) - t)
                assert diff / mpmath.mpf(2) ** (e - 52) < 0.005, (name, float(x[i]))


def test_exp_dd_uses_the_low_word() -> None:
    """Near 700 the low word moves the result by hundreds of ulps; exp_dd follows it."""
    rng = np.random.default_rng(11)
    hi = rng.uniform(-745.0, 709.7, 20_000)
    lo = rng.uniform(-1.0, 1.0, hi.size) * np.spacing(np.abs(hi))
    ours = ef.exp_dd(hi, lo)
    with mpmath.workprec(113):
        for i in range(0, hi.size, 40):
            true = mpmath.exp(mpmath.mpf(float(hi[i])) + mpmath.mpf(float(lo[i])))
            assert ulp_error_mpmath(float(ours[i]), true) <= ef.ERROR_BOUND_ULP["exp_dd"]
    np.testing.assert_array_equal(_bits(ef.exp_dd(hi, np.zeros_like(hi))), _bits(ef.exp(hi)))


# --- special values -----------------------------------------------------------------------

INF = np.inf
TINY = 2.0**-1074

SPECIAL: list[tuple[str, float, float]] = [
    ("exp", 0.0, 1.0),
    ("exp", -0.0, 1.0),
    ("exp", INF, INF),
    ("exp", -INF, 0.0),
    ("exp", 709.782712893384, 1.7976931348622732e308),
    ("exp", 709.7827128933841, INF),
    ("exp", 1000.0, INF),
    ("exp", -745.1332191019411, TINY),
    ("exp", -745.1332191019412, 0.0),
    ("exp", -800.0, 0.0),
    ("exp", 1.0, 2.718281828459045),
    ("exp", TINY, 1.0),
    ("exp", -TINY, 1.0),
    ("exp", -708.3964185322641, 2.2250738585072626e-308),
    ("expm1", 0.0, 0.0),
    ("expm1", -0.0, -0.0),
    ("expm1", INF, INF),
    ("expm1", -INF, -1.0),
    ("expm1", TINY, TINY),
    ("expm1", -TINY, -TINY),
    ("expm1", 1e-300, 1e-300),
    ("expm1", -50.0, -1.0),
    ("expm1", 709.782712893384, 1.7976931348622732e308),
    ("expm1", 709.7827128933841, INF),
    ("expm1", 1.0, 1.7182818284590453),
    ("tanh", 0.0, 0.0),
    ("tanh", -0.0, -0.0),
    ("tanh", INF, 1.0),
    ("tanh", -INF, -1.0),
    ("tanh", TINY, TINY),
    ("tanh", -1e-300, -1e-300),
    ("tanh", 19.1, 1.0),
    ("tanh", -19.1, -1.0),
    ("tanh", 1e300, 1.0),
    ("erf_derivative", 0.0, 1.1283791670955126),
    ("erf_derivative", -0.0, 1.1283791670955126),
    ("erf_derivative", INF, 0.0),
    ("erf_derivative", -INF, 0.0),
    ("erf_derivative", 1e-200, 1.1283791670955126),
    ("erf_derivative", 27.3, 0.0),
    ("erf_derivative", 30.0, 0.0),
    ("erf_derivative", 1e300, 0.0),
]


@pytest.mark.parametrize(("name", "x", "expected"), SPECIAL, ids=[f"{n}({x!r})" for n, x, _ in SPECIAL])
def test_special_values(name: str, x: float, expected: float) -> None:
    got = evaluate(name, np.array([x]), np.array([0.0]))
    assert _bits(got)[0] == _bits(expected), (name, x, got[0], expected)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_nan_in_nan_out(name: str) -> None:
    x = np.array([np.nan, -np.nan, np.array(0x7FF0_0000_0000_0001, np.uint64).view(F64)])
    assert np.isnan(evaluate(name, x, np.zeros(3))).all()


def test_exp_dd_special_words() -> None:
    hi = np.array([np.nan, 1.0, np.inf, np.inf, -np.inf, 0.0, -0.0, 1.0, 800.0, 0.5])
    lo = np.array([0.0, np.nan, -np.inf, 0.0, 0.0, -0.0, 0.0, np.inf, -200.0, 0.5])
    got = ef.exp_dd(hi, lo)
    assert np.isnan(got[:3]).all()
    expected = [np.inf, 0.0, 1.0, 1.0, np.inf, ef.exp(np.array(600.0)), ef.exp(np.array(1.0))]
    np.testing.assert_array_equal(_bits(got[3:]), _bits(expected))


def test_odd_and_even() -> None:
    rng = np.random.default_rng(5)
    x = np.concatenate([_log_uniform(rng, 20_000, -1074, 5), _random_bits(rng, 5_000)])
    np.testing.assert_array_equal(_bits(ef.tanh(-x)), _bits(-ef.tanh(x)))
    np.testing.assert_array_equal(_bits(ef.erf_derivative(-x)), _bits(ef.erf_derivative(x)))


def test_subnormal_results_are_rounded_once() -> None:
    """In the subnormals the results are the correctly rounded ones (2**-1074 steps)."""
    rng = np.random.default_rng(9)
    x = rng.uniform(-745.2, -708.0, 3_000)
    ours = ef.exp(x)
    a = rng.uniform(26.5, 27.3, 1_000)
    ours_e = ef.erf_derivative(a)
    with mpmath.workprec(113):
        for i in range(0, x.size, 3):
            true = mpmath.exp(mpmath.mpf(float(x[i])))
            if true < mpmath.mpf(2) ** -1022:
                assert float(ours[i]) == float(mpmath.nint(true * mpmath.mpf(2) ** 1074)) * TINY
        for i in range(a.size):
            v = float(a[i])
            true = 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-mpmath.mpf(v) ** 2)
            if true < mpmath.mpf(2) ** -1022:
                assert float(ours_e[i]) == float(mpmath.nint(true * mpmath.mpf(2) ** 1074)) * TINY


def test_monotone_near_one() -> None:
    x = np.linspace(-1e-3, 1e-3, 20_001)
    for name in ("exp", "expm1", "tanh"):
        y = evaluate(name, x, np.zeros_like(x))
        assert (np.diff(y) >= 0).all(), name


# --- purity and layout --------------------------------------------------------------------


@pytest.mark.parametrize("name", FUNCTIONS)
def test_layout_independent_and_pure(name: str) -> None:
    rng = np.random.default_rng(13)
    x = np.concatenate([rng.uniform(-30.0, 30.0, 600), _random_bits(rng, 200), np.array([-750.0, 0.0, 1e-320])])
    lo = np.zeros_like(x) if name != "exp_dd" else rng.uniform(-1.0, 1.0, x.size) * np.spacing(np.abs(x))
    keep = x.copy()
    flat = evaluate(name, x, lo)
    np.testing.assert_array_equal(_bits(x), _bits(keep))
    assert flat.dtype == F64 and flat.shape == x.shape and not np.shares_memory(flat, x)
    np.testing.assert_array_equal(_bits(evaluate(name, x[::-1], lo[::-1])), _bits(flat[::-1]))
    wide = np.empty(2 * x.size)
    wide[::2] = x
    wide_lo = np.empty(2 * x.size)
    wide_lo[::2] = lo
    np.testing.assert_array_equal(_bits(evaluate(name, wide[::2], wide_lo[::2])), _bits(flat))
    square = evaluate(name, x[:800].reshape(20, 40).T, lo[:800].reshape(20, 40).T)
    assert square.shape == (40, 20)
    np.testing.assert_array_equal(_bits(square.T.reshape(-1)), _bits(flat[:800]))
    for i in (0, 7, 801):
        one = evaluate(name, np.array(x[i]), np.array(lo[i]))
        assert one.shape == () and _bits(one) == _bits(flat[i])


# --- constants ----------------------------------------------------------------------------


def test_constants_rederived() -> None:
    with mpmath.workprec(300):
        ln2_64 = mpmath.log(2) / 64
        assert ef._INV_STEP == float(1 / ln2_64)
        hi = mpmath.mpf(ef._STEP_HI)
        assert abs(hi - ln2_64) < mpmath.mpf(2) ** -43  # rounded to 36 bits
        assert (np.array(ef._STEP_HI).view(np.int64) & ((1 << 17) - 1)) == 0  # 17 low bits clear
        assert ef._STEP_LO == float(ln2_64 - hi)
        assert abs(ln2_64 - hi - mpmath.mpf(ef._STEP_LO)) < mpmath.mpf(2) ** -98
        for j in range(64):
            t = mpmath.mpf(2) ** (mpmath.mpf(j) / 64)
            assert ef._EXP2_HI[j] == float(t), j
            assert ef._EXP2_LO[j] == float(t - mpmath.mpf(float(t))), j
        c = 2 / mpmath.sqrt(mpmath.pi)
        assert ef.TWO_OVER_SQRTPI_HI == float(c)
        assert ef.TWO_OVER_SQRTPI_LO == float(c - mpmath.mpf(ef.TWO_OVER_SQRTPI_HI))


def test_polynomial_rederived() -> None:
    """q interpolates (expm1(r) - r) / r**2 at the 5 Chebyshev nodes of [-0.00542, 0.00542]."""
    with mpmath.workprec(200):
        radius = mpmath.mpf("0.00542")

        def f(r: Any) -> Any:
            return mpmath.fsum(r**k / mpmath.factorial(k + 2) for k in range(40))

        nodes = [radius * mpmath.cos(mpmath.pi * (2 * i + 1) / 10) for i in range(5)]
        a = mpmath.matrix([[t**j for j in range(5)] for t in nodes])
        coefficients = mpmath.lu_solve(a, mpmath.matrix([f(t) for t in nodes]))
        module = (ef._Q0, ef._Q1, ef._Q2, ef._Q3, ef._Q4)
        assert tuple(float(v) for v in coefficients) == module
        worst = max(
            abs(mpmath.fsum(mpmath.mpf(q) * t**j for j, q in enumerate(module)) - f(t))
            for t in mpmath.linspace(-radius, radius, 401)
        )
        assert worst * radius**2 < mpmath.mpf(2) ** -68


# --- the measurement for the docs ---------------------------------------------------------


def _timing(n: int = 1_000_000) -> None:
    rng = np.random.default_rng(1)
    args = {
        "exp": (rng.uniform(-700, 700, n),),
        "exp_dd": (rng.uniform(-700, 700, n), rng.uniform(-1e-14, 1e-14, n)),
        "expm1": (rng.uniform(-5, 5, n),),
        "tanh": (rng.uniform(-5, 5, n),),
        "erf_derivative": (rng.uniform(-6, 6, n),),
    }
    native: dict[str, Callable[..., Array]] = {
        "exp": np.exp,
        "exp_dd": lambda h, lo: np.exp(h + lo),
        "expm1": np.expm1,
        "tanh": np.tanh,
        "erf_derivative": lambda x: 1.1283791670955126 * np.exp(-x * x),
    }
    for name in FUNCTIONS:
        ours_fn: Callable[..., Array] = getattr(ef, name)
        times = []
        for fn in (ours_fn, native[name]):
            best = np.inf
            for _ in range(15):
                t0 = time.process_time()
                fn(*args[name])
                best = min(best, time.process_time() - t0)
            times.append(best)
        print(f"| {name} | {times[0] * 1e3:.1f} ms | {times[1] * 1e3:.2f} ms | {times[0] / times[1]:.0f}x |")


if __name__ == "__main__":
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    names = [a for a in sys.argv[2:] if a != "time"] or list(FUNCTIONS)
    for fname in names:
        err, arg, low, count = measure(fname, total)
        print(f"| {fname} | {err:.4f} | {arg!r} (lo {low!r}) | {count} |", flush=True)
    if "time" in sys.argv[2:] or len(sys.argv) <= 2:
        _timing()
