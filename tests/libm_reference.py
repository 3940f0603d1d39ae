"""Correctly rounded float32 references for the portable maps (a helper of the libm tests).

Contract:
- :func:`correctly_rounded_f32` ``(name, x)``: for ``name`` in :data:`UNARY` and a float32
  array ``x``, a new float32 array of ``x``'s shape holding, in every lane, the float32
  nearest the true ``name(x)`` (ties to even), with IEEE round-to-nearest's overflow to
  ``±inf`` and gradual underflow to subnormals and signed zeros; a NaN (any payload) where
  the true result is undefined. ``erf_derivative(x)`` is ``2/sqrt(pi) * exp(-x*x)`` rounded
  once.
- :func:`correctly_rounded_pow_f32` ``(a, b)``: the same for ``pow`` on two float32 arrays of
  one shape, with C99 / IEEE 754 ``pow``'s special cases.
- :func:`mismatches` ``(got, want)``: the flat lanes whose bits differ, any NaN matching any
  NaN.
- Nothing here imports topos: this is the independent side of every comparison.

Method, and why it cannot be wrong at a rounding boundary:
1. Each lane is evaluated in x87 extended precision (numpy's ``np.longdouble``: a 64-bit
   significand, unit roundoff ``u = 2**-64``) together with a bound ``r`` such that the true
   value lies in ``[y - r, y + r]``:
   - exp, log, sqrt, tanh, sin, cos, log1p, expm1, atan, pow: glibc's long double functions.
     We *assume* each is within 16 long double ulps (relative ``2**-59``); glibc's own
     table (``sysdeps/x86_64/fpu/libm-test-ulps``, round to nearest) lists at most 3 ulps for
     these (tanh and expm1 3, sin, log1p 2, the rest 1). ``r = |y| * 2**-56``, eight times
     the assumption, which also absorbs the rounding of the interval's two ends (``2**-64``
     each) and, for erf_derivative, the long double constant and product (two more ``u``).
   - erf_derivative: ``C * expl(-x*x)``: ``x*x`` of a float32 is exact in a 64-bit
     significand; the bound above applies.
   - erf: our own alternating Taylor series (:func:`_erf_series`) with a bound computed per
     lane from the running sum of the terms' magnitudes (the cancellation is accounted for,
     not assumed away); for ``|x| >= 4`` erf rounds to ``±1`` in float32 (the threshold is
     3.9192058..., :func:`erf_saturation_f32` derives it with mpmath).
   The bound is a statement about glibc, not a proof: ``tests/test_libm_f32.py`` checks the
   long double values against mpmath on a sample, and only a violation far beyond glibc's
   own measured maxima could go unnoticed.
2. Both ends of the interval are rounded to float32 (numpy's long double to float32 cast is
   one x87 rounding, subnormals and overflow included: :func:`cast_is_single_rounding`
   checks it). Rounding is monotonic, so where both ends round to one float32 the true
   value, which lies between them, rounds to it too.
3. Every other lane (a few per million; most maps none) is settled with mpmath at 160 bits,
   once per distinct argument, rounded to float32 in exact integer arithmetic. A value
   within ``2**-100`` of a quantum from a float32 midpoint is re-evaluated at 320 and 1000
   bits; for pow it is first tested for *being* the midpoint exactly (``a ** b`` can be a
   dyadic rational: ``pow(1 + 2**-12, 2)``), which ties to even.

The module refuses to run (:class:`LongDoubleUnavailable`) unless ``np.longdouble`` is the
x87 format working at full precision: on another format the bound in step 1 means nothing.

Example:
    >>> import numpy as np
    >>> correctly_rounded_f32("exp", np.array([0.0, 1.0], np.float32)).tolist()
    [1.0, 2.7182817459106445]
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any, Final

# mpmath ships no type information (pyproject.toml may also say so for all of topos).
import mpmath  # type: ignore[import-untyped, unused-ignore]
import numpy as np

Array = np.ndarray[Any, Any]
LD = np.longdouble

UNARY: Final = (
    "exp",
    "log",
    "sqrt",
    "tanh",
    "sin",
    "cos",
    "log1p",
    "expm1",
    "erf",
    "erf_derivative",
    "atan",
)

ASSUMED_ULPS: Final = 16
"""The long double error the reference assumes of glibc's functions, in long double ulps."""

SETTLE_PRECISIONS: Final = (160, 320, 1000)
"""mpmath working precisions tried in turn for a lane the interval does not settle."""

_RADIUS: Final = LD(2.0**-56)  # relative half-width of the interval; see step 1 above
_NEAR_MIDPOINT: Final = Fraction(1, 2**100)  # in float32 quanta: escalate the precision
_ERF_CUTOFF: Final = 4.0  # |x| at and beyond which erf is ±1 in float32 (checked, >= 3.92)
_ERF_MAX_TERMS: Final = 400


class LongDoubleUnavailable(RuntimeError):
    """numpy's long double is not x87 extended precision working at 64 bits."""


@functools.cache
def require_long_double() -> None:
    """Raise :class:`LongDoubleUnavailable` unless the reference's bound can hold here."""
    nmant = np.finfo(LD).nmant
    if nmant != 63:
        raise LongDoubleUnavailable(
            f"np.longdouble has {nmant} explicit significand bits, not x87's 63: the float32 "
            "reference assumes glibc's x87 long double functions (16 ulps = relative 2**-59); "
            "on IEEE double the assumed bound is below the format's own rounding error, and "
            "on binary128 the functions and their accuracy are different ones"
        )
    # The format alone is not enough: the x87 precision-control field can be set to round
    # every operation to 53 bits (some runtimes do), which nmant does not show.
    one = np.array([1.0], LD)
    if not (one + LD(2.0**-63) > one)[0]:
        raise LongDoubleUnavailable("x87 arithmetic rounds to fewer than 64 bits here")


def _ld_map(name: str, x: Array) -> Array:
    """``name`` of the float32 ``x``, evaluated in long double (not for erf)."""
    wide = x.astype(LD)
    if name == "exp":
        return np.exp(wide)
    if name == "log":
        return np.log(wide)
    if name == "sqrt":
        return np.sqrt(wide)
    if name == "tanh":
        return np.tanh(wide)
    if name == "sin":
        return np.sin(wide)
    if name == "cos":
        return np.cos(wide)
    if name == "log1p":
        return np.log1p(wide)
    if name == "expm1":
        return np.expm1(wide)
    if name == "atan":
        return np.arctan(wide)
    if name == "erf_derivative":
        # x*x is exact (48 significant bits); negation is exact.
        product: Array = _two_over_sqrt_pi() * np.exp(-(wide * wide))
        return product
    raise ValueError(f"no long double evaluation of {name!r}")


@functools.cache
def _two_over_sqrt_pi() -> Any:
    # Two float64 words hold the constant to ~2**-106; their long double sum is one rounding
    # (relative 2**-64). numpy may parse a long double from a string through float64, so the
    # words are summed instead.
    with mpmath.workprec(200):
        exact = 2 / mpmath.sqrt(mpmath.pi)
        high = float(exact)
        low = float(exact - high)
    return LD(high) + LD(low)


def _erf_series(x: Array) -> tuple[Array, Array]:
    """erf of the float32 ``x`` in long double, and a per-lane bound on its absolute error.

    For ``|x| < 4``: ``erf(x) = C * x * S`` with ``C = 2/sqrt(pi)`` and
    ``S = sum_n t_n``, ``t_n = (-z)**n / (n! (2n+1))``, ``z = x*x`` (exact). Terms come from
    ``p_n = p_{n-1} * (-z) / n`` and ``t_n = p_n / (2n+1)``, so ``t_n`` carries at most
    ``2n+1`` roundings (relative ``gamma_{2n+1}``) and the recursive sum of ``N+1`` of them
    adds ``gamma_N * sum |t_n|``: in all ``|S_N - S_hat| <= gamma_{3N+2} * A`` with
    ``A = sum |t_n|``, and ``gamma_{3N+2} < 2**-53`` for ``N <= 400``. The sum stops at a
    term ``t_N`` with ``N >= z`` (from there on the terms shrink, ``|t_{n+1}/t_n| =
    z (2n+1) / ((n+1)(2n+3)) < 1``, and alternate, so the tail is at most ``|t_N|``) and
    ``|t_N| <= 2**-72 |S_hat|``. The product ``C_hat * x * S_hat`` adds three roundings
    (``C_hat`` itself, two products). So

        |erf - y| <= |C x| (2**-53 A + |t_N|) + 2**-61 |y|,

    and the returned bound is twice that (its own evaluation rounds too). At ``|x| = 4`` the
    cancellation is ``A / S ~ 2**20``: the bound is ~``2**-33`` relative, far inside
    float32's ``2**-24``, so only lanes within that of a rounding boundary go to mpmath.

    For ``|x| >= 4`` (and ``±inf``) the value is ``±1`` with bound 0: erf there is within
    ``erfc(4) ~ 1.5e-8 < 2**-25`` of ``±1``, so it rounds to ``±1`` in float32. NaN stays NaN.
    """
    wide = x.astype(LD)
    value = np.sign(wide)  # ±1 beyond the cutoff (±0 and NaN pass through, then overwritten)
    bound = np.zeros(wide.shape, LD)
    inside = np.flatnonzero(np.abs(wide) < _ERF_CUTOFF)
    if inside.size == 0:
        return value, bound
    xs = wide[inside]
    z = xs * xs
    partial = np.ones(xs.shape, LD)  # p_n
    total = np.ones(xs.shape, LD)  # S_hat
    magnitude = np.ones(xs.shape, LD)  # A
    last = np.ones(xs.shape, LD)  # |t_N| of a finished lane
    active = np.arange(xs.size)  # lanes (into xs) still summing
    done_total = np.empty(xs.shape, LD)
    done_magnitude = np.empty(xs.shape, LD)
    for n in range(1, _ERF_MAX_TERMS + 1):
        za = z[active]
        partial = partial * (-za) / LD(n)
        term = partial / LD(2 * n + 1)
        total = total + term
        magnitude = magnitude + np.abs(term)
        finished = (za <= n) & (np.abs(term) <= np.abs(total) * LD(2.0**-72))
        if finished.any():
            lanes = active[finished]
            done_total[lanes] = total[finished]
            done_magnitude[lanes] = magnitude[finished]
            last[lanes] = np.abs(term[finished])
            keep = ~finished
            active, partial, total, magnitude = active[keep], partial[keep], total[keep], magnitude[keep]
        if active.size == 0:
            break
    else:  # pragma: no cover - |x| < 4 needs about 100 terms
        raise ArithmeticError("the erf series did not converge")
    scale = _two_over_sqrt_pi() * xs
    y = scale * done_total
    value[inside] = y
    bound[inside] = 2 * (np.abs(scale) * (LD(2.0**-53) * done_magnitude + last) + np.abs(y) * LD(2.0**-61))
    return value, bound


def _interval_round(y: Array, radius: Array) -> tuple[Array, Array]:
    """``(rounded, unsettled)``: ``y`` rounded to float32, and the lanes where
    ``[y - radius, y + radius]`` does not round to a single float32."""
    with np.errstate(all="ignore"):
        low = (y - radius).astype(np.float32)
        high = (y + radius).astype(np.float32)
        rounded = y.astype(np.float32)
    # Zeros, infinities and NaNs are settled as they are: a long double function returns a
    # zero only for a true zero or for a true value below 2**-16382 (which rounds to a zero
    # of the same sign in float32), an infinity only past long double's range (float32's
    # too), and a NaN only where the value is undefined. (Settling them here also keeps
    # ``-0 + 0 = +0`` from splitting the interval of a negative zero.)
    settled = (low.view(np.uint32) == high.view(np.uint32)) | (y == 0) | ~np.isfinite(y)
    return rounded, ~settled


def correctly_rounded_f32(name: str, x: Array) -> Array:
    """The correctly rounded float32 ``name(x)`` for a float32 array ``x`` (see the module)."""
    require_long_double()
    if name not in UNARY:
        raise ValueError(f"unknown map {name!r}; expected one of {UNARY}")
    if np.asarray(x).dtype != np.float32:
        raise TypeError(f"the reference takes float32 arguments, got {np.asarray(x).dtype}")
    flat = np.ascontiguousarray(x).reshape(-1)
    with np.errstate(all="ignore"):
        if name == "erf":
            y, radius = _erf_series(flat)
        else:
            y = _ld_map(name, flat)
            radius = np.abs(y) * _RADIUS
    rounded, unsettled = _interval_round(y, radius)
    _settle(name, (flat,), rounded, unsettled)
    return rounded.reshape(np.shape(x))


def correctly_rounded_pow_f32(a: Array, b: Array) -> Array:
    """The correctly rounded float32 ``a ** b`` for two float32 arrays of one shape."""
    require_long_double()
    if np.shape(a) != np.shape(b):
        raise ValueError(f"pow takes two arrays of one shape, got {np.shape(a)} and {np.shape(b)}")
    fa = np.ascontiguousarray(a, dtype=np.float32).reshape(-1)
    fb = np.ascontiguousarray(b, dtype=np.float32).reshape(-1)
    with np.errstate(all="ignore"):
        y = np.power(fa.astype(LD), fb.astype(LD))
        radius = np.abs(y) * _RADIUS
    rounded, unsettled = _interval_round(y, radius)
    _settle("pow", (fa, fb), rounded, unsettled)
    return rounded.reshape(np.shape(a))


# --- settling with mpmath -------------------------------------------------------------------


def _settle(name: str, arguments: tuple[Array, ...], rounded: Array, unsettled: Array) -> None:
    """Overwrite the unsettled lanes of ``rounded`` (flat, float32) in place."""
    lanes = np.flatnonzero(unsettled)
    if lanes.size == 0:
        return
    # One row of argument bits per lane; np.unique makes a tensor of repeated hard
    # arguments cost one mpmath evaluation per distinct argument.
    keys = np.stack([a.view(np.uint32)[lanes] for a in arguments], axis=1)
    distinct, where = np.unique(keys, axis=0, return_inverse=True)
    answers = np.empty(len(distinct), np.float32)
    for row, bits in enumerate(distinct):
        values = tuple(float(v) for v in np.asarray(bits, np.uint32).view(np.float32))
        answers[row] = settle_one(name, values)
    rounded[lanes] = answers[where.reshape(-1)]


def true_value(name: str, arguments: tuple[float, ...]) -> Any:
    """``name`` of exact mpmath copies of ``arguments``, at mpmath's current precision."""
    x = [mpmath.mpf(v) for v in arguments]
    if name == "pow":
        return mpmath.power(x[0], x[1])
    if name == "erf_derivative":
        return 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-x[0] * x[0])
    functions = {
        "exp": mpmath.exp,
        "log": mpmath.log,
        "sqrt": mpmath.sqrt,
        "tanh": mpmath.tanh,
        "sin": mpmath.sin,
        "cos": mpmath.cos,
        "log1p": mpmath.log1p,
        "expm1": mpmath.expm1,
        "erf": mpmath.erf,
        "atan": mpmath.atan,
    }
    return functions[name](x[0])


def settle_one(name: str, arguments: tuple[float, ...]) -> np.float32:
    """The correctly rounded float32 of ``name`` at finite ``arguments`` with a finite
    nonzero true value, by mpmath alone (escalating the precision near a midpoint)."""
    for precision in SETTLE_PRECISIONS:
        with mpmath.workprec(precision):
            value = true_value(name, arguments)
            if not isinstance(value, mpmath.mpf) or not mpmath.isfinite(value) or value == 0:
                raise ArithmeticError(f"{name}{arguments} = {value}: not a finite nonzero real")
            mantissa, exponent = _dyadic(value)
        nearest, distance = nearest_f32(mantissa, exponent)
        if distance >= _NEAR_MIDPOINT:
            return nearest
        if name == "pow":
            exact = _pow_dyadic(arguments[0], arguments[1])
            if exact is not None:
                return nearest_f32(*exact)[0]
    raise ArithmeticError(
        f"{name}{arguments} is within 2**-100 quantum of a float32 midpoint at "
        f"{SETTLE_PRECISIONS[-1]} bits and is not known to be exact"
    )


def _dyadic(value: Any) -> tuple[int, int]:
    """``(m, e)`` with ``value == m * 2**e`` exactly, for a finite mpmath number."""
    # mpmath's raw form is (sign, magnitude, exponent, bit count); its ``man_exp`` property
    # drops the sign, so the tuple is read directly.
    sign, magnitude, exponent, _ = value._mpf_
    return (-1 if sign else 1) * int(magnitude), int(exponent)


def nearest_f32(mantissa: int, exponent: int) -> tuple[np.float32, Fraction]:
    """The float32 nearest ``mantissa * 2**exponent`` (ties to even, with overflow and
    gradual underflow), and the distance of that value from the nearest float32 midpoint in
    quanta (0 for an exact tie), all in exact integer arithmetic.

    Example:
        >>> nearest_f32(2**24 + 1, -24)  # 1 + 2**-24: halfway between 1 and 1 + 2**-23
        (np.float32(1.0), Fraction(0, 1))
    """
    if mantissa == 0:
        return np.float32(0.0), Fraction(1, 2)
    negative = mantissa < 0
    magnitude = -mantissa if negative else mantissa
    top = magnitude.bit_length() + exponent  # 2**(top-1) <= |value| < 2**top
    quantum = max(top - 24, -149)  # float32's spacing there, subnormals included
    shift = exponent - quantum
    if shift >= 0:
        whole, rest = magnitude << shift, Fraction(0)
    else:
        whole = magnitude >> -shift
        rest = Fraction(magnitude - (whole << -shift), 1 << -shift)
    offset = rest - Fraction(1, 2)
    count = whole + (1 if offset > 0 or (offset == 0 and whole & 1) else 0)
    if count.bit_length() + quantum > 128:  # count * 2**quantum >= 2**128: overflow
        result = math.inf
    else:
        result = math.ldexp(count, quantum)  # exact: count has at most 25 bits
    return np.float32(-result if negative else result), abs(offset)


def _pow_dyadic(a: float, b: float) -> tuple[int, int] | None:
    """``(m, e)`` with ``a ** b == m * 2**e`` exactly where the value is a dyadic rational
    of modest size, else None (then it is not a float32 midpoint either).

    Write ``|a| = A * 2**k`` with ``A`` odd and ``b = p / 2**j`` with ``p`` odd (or ``j = 0``).
    A midpoint has an odd part of exactly 25 bits, at least ``2**24 + 1``:
    - ``j = 0`` (integer ``b``): ``A**b``; dyadic for ``b < 0`` only if ``A = 1``, and over 25
      bits for ``b > 16`` unless ``A = 1`` (``3**16 > 2**25``);
    - ``j >= 1`` (``a > 0``): ``A`` must be an exact ``2**j``-th power ``r**(2**j)`` with
      ``2**j | k``, and ``r**p`` the odd part; ``r >= 3`` needs ``3**(2**j) <= A < 2**24``,
      so ``j <= 3``; ``r = 1`` gives a power of two.
    """
    fa, fb = Fraction(a), Fraction(b)
    if fa == 0 or fb == 0:
        return None  # exact special cases, settled before mpmath is asked
    odd, k = _odd_part(abs(fa))
    p, e = _odd_part(fb)  # b = p * 2**e
    if e >= 0:  # an integer exponent
        power = int(fb)
        sign = -1 if fa < 0 and power % 2 == 1 else 1
        if odd == 1:
            return sign, k * power
        if power < 0 or power > 16:
            return None
        return sign * odd**power, k * power
    if fa < 0:
        return None  # a negative base with a non-integer exponent: NaN, never settled here
    j = -e
    root = round(odd ** (1.0 / 2**j)) if j <= 3 else 1
    if root ** (2**j) != odd or k % 2**j:
        return None
    scaled = k // 2**j * p
    if root == 1:
        return 1, scaled
    if p < 0 or p > 16:
        return None
    return root**p, scaled


def _odd_part(value: Fraction) -> tuple[int, int]:
    """``(o, e)`` with ``value == o * 2**e`` and ``o`` odd (``value`` a nonzero dyadic)."""
    numerator, denominator = value.numerator, value.denominator
    if denominator & (denominator - 1):
        raise ValueError(f"{value} is not dyadic")
    exponent = -(denominator.bit_length() - 1)
    while numerator % 2 == 0:
        numerator //= 2
        exponent += 1
    return numerator, exponent


# --- the checks the tests run on this module ------------------------------------------------


def mismatches(got: Array, want: Array) -> Array:
    """The flat lanes where float32 ``got`` and ``want`` differ in bits (NaN matches NaN)."""
    g = np.ascontiguousarray(got, np.float32).reshape(-1)
    w = np.ascontiguousarray(want, np.float32).reshape(-1)
    if g.shape != w.shape:
        raise ValueError(f"shapes differ: {np.shape(got)} and {np.shape(want)}")
    differ = (g.view(np.uint32) != w.view(np.uint32)) & ~(np.isnan(g) & np.isnan(w))
    return np.flatnonzero(differ)


@functools.cache
def erf_saturation_f32() -> float:
    """The smallest positive float32 whose erf rounds to 1.0 in float32 (by mpmath).

    erf(x) rounds to 1 once ``1 - erf(x) = erfc(x) <= 2**-25``: half the spacing below 1,
    where the tie goes to 1.0 (even)."""
    with mpmath.workprec(200):
        root = mpmath.findroot(lambda t: mpmath.erfc(t) - mpmath.mpf(2) ** -25, 3.9)
        guess = np.float32(float(root))
        below = np.nextafter(guess, np.float32(0))
        for candidate in (below, guess, np.nextafter(guess, np.float32(np.inf))):
            if mpmath.erfc(mpmath.mpf(float(candidate))) <= mpmath.mpf(2) ** -25:
                return float(candidate)
    raise AssertionError("no float32 near the root saturates")  # pragma: no cover


def cast_is_single_rounding(samples: int = 4096, seed: int = 0) -> list[str]:
    """Failures of numpy's long double to float32 cast against exact rounding, on long
    doubles next to float32 midpoints (normal, subnormal, and at the overflow threshold).

    Each sample is a midpoint ``m`` plus or minus a few long double ulps (or exactly ``m``);
    the exact answer comes from :func:`nearest_f32` on the long double's exact value."""
    require_long_double()
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 0x7F800000, samples, dtype=np.uint64).astype(np.uint32)
    edges = np.array([0x00000000, 0x007FFFFF, 0x007FFFFE, 0x00800000, 0x7F7FFFFF, 0x7F7FFFFE], np.uint32)
    bits[: edges.size] = edges
    lower = bits.view(np.float32).astype(LD)
    with np.errstate(over="ignore"):
        upper = np.nextafter(bits.view(np.float32), np.float32(np.inf)).astype(LD)
    upper[np.isinf(upper)] = LD(2.0**128)  # the next step past the largest float32
    middle = (lower + upper) / 2  # exact: 25 bits, far inside long double's range
    # A few long double ulps either side (the sum rounds to some long double near there;
    # the exact answer below is for whatever value that is).
    nudge = rng.integers(-3, 4, samples).astype(LD) * middle * LD(2.0**-63)
    with np.errstate(all="ignore"):
        values = np.concatenate([middle + nudge, -(middle + nudge), middle])
        cast = values.astype(np.float32)
    failures = []
    for value, got in zip(values, cast.tolist(), strict=True):
        fraction = Fraction(*value.as_integer_ratio())
        if fraction == 0:
            continue
        _, k = _odd_part(abs(fraction))
        odd = fraction * Fraction(2) ** -k
        want = float(nearest_f32(int(odd), k)[0])
        if want != got:
            failures.append(f"{value!r}: cast {got!r}, exact {want!r}")
    return failures
