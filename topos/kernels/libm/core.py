"""Exact building blocks of the portable maps: bits, powers of two, error-free sums and products.

Contract:
- every function here is built from operations IEEE 754 rounds exactly and every machine
  computes alike: ``+ - * /``, ``sqrt``, comparisons, selections, conversions between
  float64 and int64 of values that fit, and integer operations on the bits. No SIMD
  transcendental, no platform libm, no fused multiply-add (numpy never contracts
  ``a * b + c``: each ufunc call rounds once);
- arguments are float64 (or int64 where named) numpy arrays of one shape; results are new
  arrays of that shape, never views of the arguments;
- the error-free transformations are exact when nothing overflows: ``two_sum`` always,
  ``fast_two_sum`` when ``|a| >= |b|`` (or ``a`` is zero), ``two_prod`` when
  ``|a|, |b| < 2**995`` and the product does not underflow below ``2**-969``.

Callers silence floating-point warnings around a whole map (``np.errstate(all="ignore")``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np

__all__ = [
    "BLOCK",
    "EXPONENT_MASK",
    "F64",
    "SPLITTER",
    "TWO_OVER_SQRTPI_HI",
    "TWO_OVER_SQRTPI_LO",
    "as_bits",
    "blockwise",
    "exponent_of",
    "fast_two_sum",
    "from_bits",
    "pow2",
    "scale",
    "split",
    "two_prod",
    "two_sum",
]

Array = np.ndarray[Any, Any]

F64 = np.float64
EXPONENT_MASK = np.uint64(0x7FF0_0000_0000_0000)
# Veltkamp's constant 2**27 + 1: splits a double into two halves of at most 26 bits each,
# whose pairwise products are exact.
SPLITTER = F64(134217729.0)


# 2/sqrt(pi) as a double-double (mpmath at 300 bits, each word rounded to nearest; the
# tests derive it again): erf's slope at 0 and erf_derivative's factor.
TWO_OVER_SQRTPI_HI: Final = float.fromhex("0x1.20dd750429b6dp+0")
TWO_OVER_SQRTPI_LO: Final = float.fromhex("0x1.1ae3a914fed80p-56")

BLOCK: Final = 8192
"""Lanes per block in :func:`blockwise`: a map's few dozen temporaries stay in cache."""


def blockwise(kernel: Callable[..., Array], *args: Array) -> Array:
    """``kernel`` over the flattened (broadcast) float64 arguments, block by block, reshaped back.

    Each kernel is elementwise, so the blocks change no bit of the result (a lane runs the
    same operations whatever block it falls in); they make large maps about twice as fast
    as whole-array passes. Floating-point warnings are silenced for the whole map.

    Example:
        >>> import numpy as np
        >>> blockwise(lambda a: a * 2.0, np.arange(3.0)).tolist()
        [0.0, 2.0, 4.0]
    """
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=F64) for a in args))
    shape = arrays[0].shape
    flats = [np.ascontiguousarray(a.reshape(-1)) for a in arrays]
    size = flats[0].size
    with np.errstate(all="ignore"):
        if size <= BLOCK:
            out = kernel(*flats)
        else:
            out = np.empty(size, dtype=F64)
            for start in range(0, size, BLOCK):
                stop = min(start + BLOCK, size)
                out[start:stop] = kernel(*(f[start:stop] for f in flats))
    return np.asarray(out, dtype=F64).reshape(shape)


def as_bits(x: Array) -> Array:
    """The IEEE bits of float64 ``x`` as int64 (a copy, so callers may shift it freely)."""
    return np.ascontiguousarray(x, dtype=F64).view(np.int64).copy()


def from_bits(bits: Array) -> Array:
    """The float64 whose IEEE bits are the int64 (or uint64) ``bits``."""
    return np.ascontiguousarray(bits).astype(np.int64, copy=True).view(F64)


def exponent_of(x: Array) -> Array:
    """The biased exponent field of float64 ``x`` (0 for zeros and subnormals, 2047 for inf/NaN)."""
    return (as_bits(x) >> 52) & 0x7FF


def pow2(k: Array) -> Array:
    """``2**k`` exactly, for int64 ``k`` in [-1022, 1023] (built from its exponent bits)."""
    return from_bits((np.asarray(k, dtype=np.int64) + 1023) << 52)


def scale(x: Array, k: Array) -> Array:
    """``x * 2**k`` rounded once, for ``|x|`` in [2**-8, 2**8] and int64 ``k`` in [-1200, 1200].

    Two factors, chosen so that only the second multiplication can round (into the
    subnormals) or overflow: a result that underflows is rounded once, not twice.

    Example:
        >>> import numpy as np
        >>> scale(np.array([1.5, 1.5]), np.array([-1074, 1023])).tolist()
        [1e-323, 1.348269851146737e+308]
    """
    k = np.asarray(k, dtype=np.int64)
    first = np.where(k > 1000, 1000, np.where(k < -1000, k + 600, k))
    return (x * pow2(first)) * pow2(k - first)


def two_sum(a: Array, b: Array) -> tuple[Array, Array]:
    """``(s, e)`` with ``s = fl(a + b)`` and ``a + b = s + e`` exactly (Knuth)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def fast_two_sum(a: Array, b: Array) -> tuple[Array, Array]:
    """``(s, e)`` with ``a + b = s + e`` exactly, given ``|a| >= |b|`` (Dekker)."""
    s = a + b
    e = b - (s - a)
    return s, e


def split(a: Array) -> tuple[Array, Array]:
    """``(hi, lo)`` with ``a = hi + lo`` and both halves 26 bits or fewer (Veltkamp)."""
    t = SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_prod(a: Array, b: Array) -> tuple[Array, Array]:
    """``(p, e)`` with ``p = fl(a * b)`` and ``a * b = p + e`` exactly (Dekker, no FMA)."""
    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e
