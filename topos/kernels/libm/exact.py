"""The float32 lanes an error bound leaves open, settled exactly: mpmath and integers.

Contract: :func:`settle_f32` replaces the given lanes of a float32 result with the
correctly rounded float32 of the named map (or ``pow``) at those arguments. The true value
is evaluated with mpmath at 160 bits, which is pure Python integer arithmetic and so the
same on every machine, and rounded to the nearest float32 (ties to even) by comparing
exact distances. The only exact halfway cases are pow's, settled in integers
(``_exact_pow_midpoint``). Each distinct argument is evaluated once, so a tensor of
repeated hard arguments costs one evaluation; the lanes arrive here only where a float64
map's error interval straddles a float32 rounding boundary, a few in 2**26.

Unlike the float64 kernels, this module may raise to powers and use Python's exact
integers and fractions (``tests/test_libm_allowed.py`` holds it to that, and to no float
transcendental).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["settle_f32"]

Array = np.ndarray[Any, Any]


@functools.cache
def _mpmath() -> Any:
    import mpmath

    return mpmath


def _true_value(name: str, arguments: tuple[float, ...]) -> Any:
    mp = _mpmath()
    x = [mp.mpf(a) for a in arguments]
    if name == "exp":
        return mp.exp(x[0])
    if name == "log":
        return mp.log(x[0])
    if name == "tanh":
        return mp.tanh(x[0])
    if name == "sin":
        return mp.sin(x[0])
    if name == "cos":
        return mp.cos(x[0])
    if name == "log1p":
        return mp.log1p(x[0])
    if name == "expm1":
        return mp.expm1(x[0])
    if name == "erf":
        return mp.erf(x[0])
    if name == "erf_derivative":
        return 2 / mp.sqrt(mp.pi) * mp.exp(-x[0] * x[0])
    if name == "atan":
        return mp.atan(x[0])
    if name == "pow":
        return mp.power(x[0], x[1])
    raise AssertionError(name)  # pragma: no cover - the callers pass the names above


def _nearest_f32(value: Any) -> np.float32:
    """The float32 nearest an mpmath value (ties to even), subnormals and overflow included."""
    mp = _mpmath()
    largest = mp.mpf(2**128 - 2**103)  # halfway from float32's largest to 2**128
    if abs(value) >= largest:
        return np.float32(np.inf) if value > 0 else np.float32(-np.inf)
    guess = np.float32(float(value))  # within one float32 step of the answer
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    best = min(candidates, key=lambda c: (abs(value - mp.mpf(float(c))), int(np.array(c).view(np.uint32)) & 1))
    return np.float32(best)


def _exact_pow_midpoint(arguments: tuple[float, ...]) -> np.float32 | None:
    """``x ** y`` rounded to even when it is exactly halfway between two float32, else None.

    Only pow has exact halfway results (``(1 + 2**-12) ** 2``, ``66049 ** 1.5``), where a
    160-bit evaluation could land on either side. With ``y = p / 2**k`` in lowest terms,
    ``x ** y`` is rational only if ``x`` is a perfect ``2**k``-th power; a halfway value has
    a 25-bit odd part and ``x`` at most a 24-bit one, which leaves ``k <= 4`` and
    ``|p| <= 512`` to try, exactly, in integers.
    """
    x, y = arguments
    if not (np.isfinite(x) and np.isfinite(y)) or x == 0 or y != y:
        return None
    exponent = Fraction(y)
    if exponent.denominator > 16 or abs(exponent.numerator) > 512:
        return None
    base = Fraction(abs(x)) ** exponent.numerator
    root = _integer_root(base, exponent.denominator)
    if root is None:
        return None
    value = root if x > 0 or exponent.numerator % 2 == 0 else -root
    lower = np.float32(float(value))  # exact when value fits; else a neighbour of the pair
    for low in (np.nextafter(lower, np.float32(-np.inf)), lower):
        high = np.nextafter(low, np.float32(np.inf))
        if np.isfinite(low) and np.isfinite(high) and Fraction(float(low)) + Fraction(float(high)) == 2 * value:
            return low if int(np.array(low).view(np.uint32)) & 1 == 0 else high
    return None


def _integer_root(value: Fraction, degree: int) -> Fraction | None:
    """The rational ``degree``-th root (``degree`` a power of two) of a positive Fraction, or
    None where it is irrational: square roots taken in integers, each checked exactly."""

    def root_of(n: int) -> int | None:
        for _ in range(degree.bit_length() - 1):
            root = math.isqrt(n)
            if root * root != n:
                return None
            n = root
        return n

    top, bottom = root_of(value.numerator), root_of(value.denominator)
    return None if top is None or bottom is None else Fraction(top, bottom)


def settle_f32(name: str, arguments: tuple[Array, ...], rounded: Array, unsettled: Array) -> Array:
    """Replace the unsettled lanes of ``rounded`` with the correctly rounded float32."""
    lanes = np.flatnonzero(unsettled.reshape(-1))
    if lanes.size == 0:
        return rounded
    flat = rounded.reshape(-1).copy()
    mp = _mpmath()
    # Indexed before widening, so a signalling NaN elsewhere never meets the cast.
    keys = np.stack([np.asarray(a).reshape(-1)[lanes].astype(np.float64) for a in arguments], axis=1)
    distinct, where = np.unique(keys.view(np.uint64), axis=0, return_inverse=True)
    answers = np.empty(len(distinct), np.float32)
    with mp.workprec(160):
        for row, bits in enumerate(distinct):
            values = tuple(float(v) for v in np.asarray(bits, dtype=np.uint64).view(np.float64))
            tie = _exact_pow_midpoint(values) if name == "pow" else None
            answers[row] = tie if tie is not None else _nearest_f32(_true_value(name, values))
    flat[lanes] = answers[where.reshape(-1)]
    return flat.reshape(rounded.shape)
