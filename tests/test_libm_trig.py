"""Accuracy, special values and layout independence of the portable sin, cos and erf.

References: numpy's long double ``sin``/``cos`` (x87 80-bit on x86-64 Linux, about 2**-63
relative, with a correct reduction of huge arguments), a long double series and continued
fraction for ``erf`` (about 2**-62 relative), and mpmath at 1400 bits for the hardest huge arguments (doubles closest to a
multiple of pi/2, found from continued fractions). The long double checks skip where long
double is not wider than double.
"""

from __future__ import annotations

from typing import Any

import mpmath  # type: ignore[import-untyped]  # mpmath ships no type information
import numpy as np
import pytest

from topos.kernels.libm import trig

Array = np.ndarray[Any, Any]
LD = np.longdouble
WIDE_LD = np.finfo(LD).nmant >= 63
needs_wide_ld = pytest.mark.skipif(not WIDE_LD, reason="long double is not wider than double")

DBL_MAX = float.fromhex("0x1.fffffffffffffp+1023")
TWO_OVER_SQRTPI_LD = LD("1.12837916709551257389615890312154517168810125865799771368817144")
SQRTPI_LD = LD("1.77245385090551602729816748334114518279754945612238712821380779")


def ulp_errors(ours: Array, true: Array) -> Array:
    """|ours - true| in ulps of the float64 binade of ``true`` (long double)."""
    true = np.asarray(true, dtype=LD)
    _, e = np.frexp(true)
    ulp = np.ldexp(LD(1), np.maximum(e.astype(np.int64) - 53, -1074))
    err: Array = np.abs(ours.astype(LD) - true) / ulp
    return err


def mp_ulp_error(value: float, true: Any) -> float:
    """Ulp error of ``value`` against the mpmath number ``true``."""
    if true == 0:
        return 0.0 if value == 0 else float("inf")
    exp = int(mpmath.floor(mpmath.log(abs(true), 2)))
    ulp = mpmath.mpf(2) ** max(exp - 52, -1074)
    return float(abs(mpmath.mpf(value) - true) / ulp)


def erf_reference(x: Array) -> Array:
    """erf in long double (about 2**-62 relative, measured against mpmath).

    |x| < 2: (2/sqrt(pi)) exp(-x**2) sum 2**n x**(2n+1) / (2n+1)!!, all terms positive.
    2 <= |x| < 6.5: 1 - erfc(x), erfc from its continued fraction
    exp(-x**2) / sqrt(pi) / (x + (1/2) / (x + (2/2) / (x + ...))) evaluated from 100 levels down.
    x**2 is split exactly (26-bit halves) so that exp sees no rounded argument.
    """
    a = np.abs(x)
    out = np.ones(a.shape, dtype=LD)
    m = a < 6.5
    am = a[m].astype(LD)
    ah = (a[m] * 134217729.0 - (a[m] * 134217729.0 - a[m])).astype(LD)
    al = am - ah
    hi = ah * ah
    lo = 2 * ah * al + al * al
    gauss = np.exp(-hi) * (1 - lo + lo * lo / 2)
    term: Array = am.copy()
    total: Array = am.copy()
    z2 = 2 * am * am
    for n in range(1, 120):
        term = term * z2 / (2 * n + 1)
        total = total + term
    series = TWO_OVER_SQRTPI_LD * gauss * total
    frac: Array = am.copy()
    for n in range(100, 0, -1):
        frac = am + LD(n) / 2 / frac
    fraction = 1 - gauss / frac / SQRTPI_LD
    out[m] = np.where(am < 2, series, fraction)
    tiny = a < 1e-300
    out[tiny] = TWO_OVER_SQRTPI_LD * a[tiny].astype(LD)
    signed: Array = np.copysign(out, x)
    return signed


def hard_reduction_cases(binades: range) -> list[float]:
    """The doubles in each binade ``[2**e, 2**(e+1))`` nearest a multiple of pi/2."""
    mpmath.mp.prec = 1400
    found = []
    for e in binades:
        alpha = mpmath.pi / 2 * mpmath.mpf(2) ** (52 - e)  # m = k alpha with m of 53 bits
        rest = alpha - mpmath.floor(alpha)
        p0, q0, p1, q1 = 1, 0, int(mpmath.floor(alpha)), 1
        best: list[tuple[Any, int]] = []
        for _ in range(120):
            if p1 > 0:
                t = -(-(2**52) // p1)
                m = p1 * t
                if m < 2**53:
                    best.append((abs(m - q1 * t * alpha), m))
            if rest == 0:
                break
            rest = 1 / rest
            digit = int(mpmath.floor(rest))
            rest -= digit
            p0, q0, p1, q1 = p1, q1, digit * p1 + p0, digit * q1 + q0
            if p1 >= 2**53:
                break
        if best:
            best.sort()
            found.append(float(mpmath.ldexp(best[0][1], e - 52)))
    return found


def rng_sample(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def trig_sample(rng: np.random.Generator, n: int = 20_000) -> Array:
    """About 10.5 n inputs for sin and cos, mixed over the ranges that matter."""
    b = max(n // 5, 1)
    parts = [
        rng.uniform(-np.pi, np.pi, n),
        np.exp(rng.uniform(np.log(1e-300), np.log(2.0**20), 2 * n)) * rng.choice([-1.0, 1.0], 2 * n),
        rng.uniform(-(2.0**20), 2.0**20, n),
    ]
    k = rng.integers(1, 667_000, n).astype(np.float64)
    near = k * (np.pi / 2)  # near a multiple of pi/2: large cancellation in the reduction
    parts.append(near + rng.integers(-40, 41, n) * np.spacing(near))
    # Reduction and kernel boundaries: 2**20, pi/4 (quadrant change), j/64 +- 1/128.
    parts.append(2.0**20 + rng.integers(-3000, 3000, b) * np.spacing(2.0**20))
    parts.append(np.pi / 4 * (1 + rng.integers(-200, 200, b) * 2.0**-52))
    mid = (rng.integers(-50, 51, b) + 0.5) / 64
    parts.append(mid + rng.integers(-3, 4, b) * np.spacing(mid))
    parts.append(np.exp(rng.uniform(np.log(2.0**20), np.log(DBL_MAX), n)) * rng.choice([-1.0, 1.0], n))
    bits = rng.integers(0, 2**64, n, dtype=np.uint64).view(np.float64)
    parts.append(bits[np.isfinite(bits)])
    parts.append(rng.integers(1, 2**52, b // 2, dtype=np.int64).view(np.float64))  # subnormals
    return np.concatenate(parts)


def erf_sample(rng: np.random.Generator, n: int = 20_000) -> Array:
    """About 7.9 n inputs for erf, mixed over the ranges that matter."""
    b = max(n // 4, 1)
    parts = [
        rng.uniform(-6.5, 6.5, n),
        rng.normal(0.0, 1.0, n),
        rng.uniform(-0.2, 0.2, n),
        np.exp(rng.uniform(np.log(1e-320), np.log(6.5), n)) * rng.choice([-1.0, 1.0], n),
    ]
    bits = rng.integers(0, 2**64, n, dtype=np.uint64).view(np.float64)
    parts.append(bits[np.isfinite(bits)])
    mid = (rng.integers(8, 381, n) + 0.5) / 64  # between two Taylor nodes
    parts.append(mid + rng.integers(-4, 5, n) * np.spacing(mid))
    parts.append(0.125 + rng.integers(-3000, 3000, b) * np.spacing(0.125))
    sat = float.fromhex("0x1.7afb48dc96627p+2")
    parts.append(sat + rng.integers(-2000, 2000, b) * np.spacing(sat))
    parts.append(rng.integers(1, 2**52, b // 2, dtype=np.int64).view(np.float64))
    parts.append(np.exp(rng.uniform(np.log(2.0**-1022), np.log(2.0**-890), b // 2)))
    return np.concatenate(parts)


def bits_of(values: Array) -> list[int]:
    return [int(b) for b in np.asarray(values, dtype=np.float64).view(np.uint64).reshape(-1)]


def test_error_bounds_declared() -> None:
    assert set(trig.ERROR_BOUND_ULP) == {"sin", "cos", "erf"}
    assert all(0.5 <= v < 1.0 for v in trig.ERROR_BOUND_ULP.values())


@pytest.mark.parametrize(
    ("name", "x", "expected"),
    [
        ("sin", 0.0, 0.0),
        ("sin", -0.0, -0.0),
        ("sin", 5e-324, 5e-324),
        ("sin", -5e-324, -5e-324),
        ("sin", 2.0**-1022, 2.0**-1022),
        ("sin", 1e-10, 1e-10),
        ("sin", -(2.0**-27), -(2.0**-27)),
        ("sin", np.inf, np.nan),
        ("sin", -np.inf, np.nan),
        ("sin", np.nan, np.nan),
        ("sin", np.pi, 1.2246467991473532e-16),
        ("sin", 1e22, -0.8522008497671888),
        ("sin", DBL_MAX, 0.004961954789184062),
        ("cos", 0.0, 1.0),
        ("cos", -0.0, 1.0),
        ("cos", 5e-324, 1.0),
        ("cos", 1e-9, 1.0),
        ("cos", np.inf, np.nan),
        ("cos", -np.inf, np.nan),
        ("cos", np.nan, np.nan),
        ("cos", np.pi / 2, 6.123233995736766e-17),
        ("cos", 1e22, 0.523214785395139),
        ("cos", -DBL_MAX, -0.9999876894265599),
        ("erf", 0.0, 0.0),
        ("erf", -0.0, -0.0),
        ("erf", 5e-324, 5e-324),
        ("erf", -1e-310, -1.1283791670955e-310),
        ("erf", np.inf, 1.0),
        ("erf", -np.inf, -1.0),
        ("erf", np.nan, np.nan),
        ("erf", 1.0, 0.8427007929497149),
        ("erf", -2.0, -0.9953222650189527),
        ("erf", float.fromhex("0x1.7afb48dc96627p+2"), 1.0),
        ("erf", float.fromhex("0x1.7afb48dc96626p+2"), float.fromhex("0x1.fffffffffffffp-1")),
        ("erf", 30.0, 1.0),
        ("erf", -DBL_MAX, -1.0),
    ],
)
def test_special_values(name: str, x: float, expected: float) -> None:
    got = getattr(trig, name)(np.array([x]))
    assert got.dtype == np.float64
    if np.isnan(expected):
        assert np.isnan(got[0])
    else:
        assert bits_of(got) == bits_of(np.array([expected]))


@needs_wide_ld
@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_accuracy(name: str) -> None:
    x = trig_sample(rng_sample(11 if name == "sin" else 12))
    assert x.size >= 100_000
    ours = getattr(trig, name)(x)
    err = ulp_errors(ours, getattr(np, name)(x.astype(LD)))
    worst = int(np.argmax(err))
    assert err[worst] <= trig.ERROR_BOUND_ULP[name], (x[worst], err[worst])


@needs_wide_ld
def test_erf_accuracy() -> None:
    x = erf_sample(rng_sample(13))
    assert x.size >= 100_000
    err = ulp_errors(trig.erf(x), erf_reference(x))
    worst = int(np.argmax(err))
    assert err[worst] <= trig.ERROR_BOUND_ULP["erf"], (x[worst], err[worst])


def test_hard_reductions_and_huge_arguments_against_mpmath() -> None:
    rng = rng_sample(14)
    hard = hard_reduction_cases(range(0, 20)) + hard_reduction_cases(range(20, 1024, 9))
    x = np.array(
        hard
        + [-v for v in hard[::5]]
        + [6381956970095103 * 2.0**797, DBL_MAX]
        + list(np.exp(rng.uniform(np.log(2.0**20), np.log(DBL_MAX), 120)))
    )
    mpmath.mp.prec = 1400
    for name in ("sin", "cos"):
        ours = getattr(trig, name)(x)
        ref = getattr(mpmath, name)
        errors = [mp_ulp_error(float(o), ref(mpmath.mpf(float(v)))) for v, o in zip(x, ours, strict=True)]
        worst = int(np.argmax(errors))
        assert errors[worst] <= trig.ERROR_BOUND_ULP[name], (name, x[worst], errors[worst])


def test_mpmath_spot_checks() -> None:
    """A few hundred lanes of each function against mpmath at 113 bits (no long double)."""
    rng = rng_sample(15)
    x = np.concatenate([rng.uniform(-10.0, 10.0, 150), np.exp(rng.uniform(-40.0, 13.0, 150))])
    xe = np.concatenate([rng.uniform(-6.0, 6.0, 200), np.exp(rng.uniform(-700.0, 1.0, 100))])
    mpmath.mp.prec = 113
    for name, inputs in (("sin", x), ("cos", x), ("erf", xe)):
        ours = getattr(trig, name)(inputs)
        ref = getattr(mpmath, name)
        errors = [mp_ulp_error(float(o), ref(mpmath.mpf(float(v)))) for v, o in zip(inputs, ours, strict=True)]
        assert max(errors) <= trig.ERROR_BOUND_ULP[name], name


@pytest.mark.parametrize("name", ["sin", "cos", "erf"])
def test_layout_independence(name: str) -> None:
    fn = getattr(trig, name)
    rng = rng_sample(16)
    x = np.concatenate(
        [
            rng.uniform(-8.0, 8.0, 12_000),
            np.exp(rng.uniform(-700.0, 700.0, 6_000)),
            np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, DBL_MAX, 1.5e6]),
        ]
    )
    rng.shuffle(x)
    keep = x.copy()
    base = bits_of(fn(x))
    assert bits_of(x) == bits_of(keep)  # the input is never written
    assert bits_of(fn(x[::-1])) == base[::-1]
    assert bits_of(fn(x[1:])) == base[1:]  # lanes move across the internal blocks
    strided = np.repeat(x, 2)[::2]
    assert bits_of(fn(strided)) == base
    square = x[: 100 * 100].reshape(100, 100)
    out = fn(square)
    assert out.shape == (100, 100)
    assert bits_of(out) == base[: 100 * 100]
    assert bits_of(fn(square.T)) == bits_of(out.T)
    for i in (0, 7, 12_345):
        zero_d = fn(np.array(x[i]))
        assert zero_d.shape == ()
        assert bits_of(zero_d) == [base[i]]
    assert fn(np.zeros((0, 3))).shape == (0, 3)


def measure(per_chunk: int, chunks: int, names: tuple[str, ...] = ("sin", "cos", "erf")) -> None:
    """The report's measurement (docs/libm-trig.md): every lane screened against long double,
    then the 40 worst lanes of each magnitude band checked with mpmath (so that one band's
    reference noise cannot hide another band's worst case), then timings against numpy."""
    import time

    for name in names:
        fn = getattr(trig, name)
        if name == "erf":
            bands = np.array([1e-300, 2.0**-27, 0.125, 0.5, 1.0, 2.0, 4.0, 7.0])
        else:
            bands = np.array([2.0**-27, np.pi / 4, 4.0, 2.0**20, 1e100])
        count = 0
        per_band: list[list[tuple[float, float]]] = [[] for _ in range(bands.size + 1)]
        for c in range(chunks):
            rng = rng_sample(1000 + c)
            x = erf_sample(rng, per_chunk) if name == "erf" else trig_sample(rng, per_chunk)
            ref = erf_reference(x) if name == "erf" else getattr(np, name)(x.astype(LD))
            err = ulp_errors(fn(x), ref)
            count += x.size
            band = np.searchsorted(bands, np.abs(x))
            for k in range(bands.size + 1):
                lanes = np.flatnonzero(band == k)
                top = lanes[np.argsort(err[lanes])[-40:]]
                per_band[k] += [(float(err[i]), float(x[i])) for i in top]
        mpmath.mp.prec = 150 if name == "erf" else 1400
        ref_mp = getattr(mpmath, name)
        overall = (-1.0, 0.0, 0.0)
        for k, found in enumerate(per_band):
            if not found:
                continue
            found.sort()
            xs = np.array([v for _, v in found[-40:]])
            ours = fn(xs)
            exact = [mp_ulp_error(float(o), ref_mp(mpmath.mpf(float(v)))) for v, o in zip(xs, ours, strict=True)]
            worst = int(np.argmax(exact))
            lo = 0.0 if k == 0 else float(bands[k - 1])
            hi = float(bands[k]) if k < bands.size else float("inf")
            print(f"  {name} |x| in [{lo:.4g}, {hi:.4g}): long double max {found[-1][0]:.4f}, mpmath max {exact[worst]:.4f} at {xs[worst]!r}")
            if exact[worst] > overall[0]:
                overall = (exact[worst], float(xs[worst]), found[-1][0])
        print(f"{name}: {count} inputs, max {overall[0]:.4f} ulp (mpmath) at x = {overall[1]!r} ({overall[1].hex()})")

    def best_ms(f: Any, x: Array) -> float:
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            f(x)
            times.append(time.perf_counter() - t0)
        return 1000.0 * min(times)

    rng = rng_sample(7)
    x_trig = rng.uniform(-10.0, 10.0, 10**6)
    x_erf = rng.normal(0.0, 1.5, 10**6)
    try:
        from scipy.special import erf as native_erf  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover
        native_erf = None
    for name, x, native in (("sin", x_trig, np.sin), ("cos", x_trig, np.cos), ("erf", x_erf, native_erf)):
        ours_ms = best_ms(getattr(trig, name), x)
        native_ms = best_ms(native, x) if native is not None else float("nan")
        print(f"time {name} 10^6: ours {ours_ms:.1f} ms, native {native_ms:.1f} ms, ratio {ours_ms / native_ms:.1f}")


if __name__ == "__main__":
    import sys

    # python tests/test_libm_trig.py PER_CHUNK CHUNKS [NAMES]: PER_CHUNK=150000 CHUNKS=10 gives
    # about 1.5e7 inputs for sin and cos and 1.0e7 for erf.
    args = sys.argv[1:]
    measure(
        int(args[0]) if args else 150_000,
        int(args[1]) if len(args) > 1 else 10,
        tuple(args[2].split(",")) if len(args) > 2 else ("sin", "cos", "erf"),
    )
