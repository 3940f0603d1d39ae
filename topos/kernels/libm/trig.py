"""Portable float64 ``sin``, ``cos`` and ``erf``: the same bits on every machine.

Contract:
- ``sin(x)``, ``cos(x)`` and ``erf(x)`` take a float64 array of any shape (0-d included) and
  return a new float64 array of that shape; ``x`` is never written. Each result lane depends on
  the bits of its own input lane only (no sums across lanes, no dependence on layout or length).
- Only operations IEEE 754 rounds exactly are used: ``+ - * /``, comparisons and selections,
  ``rint``, float64/int64 conversions of values that fit, integer arithmetic on bits and 24-bit
  chunks, and look-ups in constant tables. No platform libm, no SIMD transcendental, no FMA.
- Special values follow C99: ``sin(±0) = ±0``, ``sin(x) = x`` for tiny ``x``, ``cos(±0) = 1``,
  ``sin(±inf) = cos(±inf) = NaN``; ``erf(±0) = ±0``, ``erf(±inf) = ±1``; NaN gives NaN.
- Error bounds, in ulps of the float64 binade of the true value, are ``ERROR_BOUND_ULP``
  (sin 0.53, cos 0.53, erf 0.56): the measured maxima over more than 10^7 mixed inputs each
  (sin 0.5034, cos 0.5029, erf 0.5126, worst lanes confirmed with mpmath) plus a margin;
  docs/libm-trig.md gives the inputs, the reference and the command.

Method, sin and cos: ``x = k * (pi/2) + r`` with ``r`` a double-double, ``|r| <= pi/4``.

- ``|x| < 2**20``: Cody-Waite. ``k = rint(x * 2/pi)`` has at most 20 bits and the first three
  pieces of pi/2 have at most 33 bits each, so ``k`` times each of them is exact; the
  subtractions are carried as error-free sums and the fourth piece (a full double) is folded
  into the tail. Absolute error below 2**-125, against a smallest ``|r|`` of 2**-60.5 in this
  range (at x = 45.553093477052, found from the continued fraction of pi/2 per binade).
- ``2**20 <= |x| < inf`` (gathered lanes only): Payne-Hanek in integers. The mantissa, pre-
  shifted by the exponent modulo 24, is cut into four 24-bit digits and multiplied by the
  window of 24-bit digits of 2/pi (1224 bits stored) that lies around the binary point of the
  product; nine columns of int64 products (each below 2**51) are carried, the integer part is
  kept modulo 4 and the 192 fraction bits become a double-double, then ``r = f * pi/2``. The
  fraction ``f`` of any double is above 2**-62 (the closest double to a multiple of pi/2 is
  6381956970095103 * 2**797, with ``|r|`` = 2**-60.9), so more than 80 bits of it survive.
- Kernel: ``r = j/64 + t`` with ``j = rint(64 * r_hi)`` and ``|t| <= 1/128`` (exact). A table of
  ``sin(q*pi/2 + j/64)`` and ``cos(q*pi/2 + j/64)`` as double-doubles (q the quadrant, built
  from sin(j/64), cos(j/64), j = 0..51, derived with mpmath at 300 bits) gives
  ``U + V * t + [V * r_lo + U * (cos t - 1) + V * (sin t - t)]``, with ``V * t`` as an exact
  product and Taylor polynomials of ``cos t - 1`` and ``sin t - t`` through ``t**6`` and ``t**7``.
  Everything after the leading double-double is below 2**-13 of the result, so the only
  sizeable error is the final rounding. ``cos`` is the same kernel one quadrant on.

Method, erf (odd; computed on ``|x|``, the sign copied back):
- ``|x| < 1/8``: ``erf(x) = (2/sqrt(pi)) * x * (1 + x**2 * Q(x**2))`` with the Taylor series of
  ``Q`` through ``x**16`` (coefficients ``(-1)**n / (n! (2n+1))``; the first term left out is
  below 2**-76) and ``2/sqrt(pi) * x`` as an exact product with a double-double constant. The
  correction is at most 0.6% of the result, which is what its roundings can cost. Lanes
  below 2**-900 are scaled by 2**200 first so the product stays exact, and scaled back with a
  single rounding onto the subnormal grid.
- ``1/8 <= |x| < 5.921587195794507`` (the least double whose erf rounds to 1): Taylor expansion
  of degree 8 around the nearest node ``c = j/64``, ``|t| = |x - c| <= 1/128``. ``erf(c)`` and
  ``erf'(c) = 2/sqrt(pi) exp(-c**2)`` are tabulated as double-doubles (mpmath, 200 bits) and
  ``erf(c) + erf'(c) t`` is carried as a double-double (exact product); the coefficients of
  ``t**2 .. t**8`` follow at import from ``(n+1) g[n+1] = -2c g[n] - 2 g[n-1]`` for the series
  ``g`` of ``erf'(c + t)``. The series beyond ``t**8`` is below 2**-67 of erf, and the part
  evaluated in plain double below 2**-12 of it.
- ``|x| >= 5.921587195794507``: ``±1``.

Lanes are processed in blocks of 8192 so that the temporaries stay in cache; a lane's
operations do not depend on its block.

Size: over 800 lines on purpose. sin and cos share the Payne-Hanek reduction and its
  table, and erf shares their polynomial helpers; and the exhaustive float32 proof
  (``tests/libm_exhaustive.py``) fingerprints the sources by file name, so a split would
  send every proved slice back to be checked again.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from topos.kernels.libm.core import (
    TWO_OVER_SQRTPI_HI,
    TWO_OVER_SQRTPI_LO,
    as_bits,
    blockwise,
    fast_two_sum,
    two_prod,
    two_sum,
)

__all__ = ["ERROR_BOUND_ULP", "cos", "erf", "sin"]

Array = np.ndarray[Any, Any]

# Measured maxima (docs/libm-trig.md, 1.15e7 inputs for sin and cos, 1.01e7 for erf, checked
# with mpmath): sin 0.5034, cos 0.5029, erf 0.5126. The analysis above bounds what the final
# rounding does not explain by about 0.01 ulp (sin, cos) and 0.03 ulp (erf below 1/8).
ERROR_BOUND_ULP: Final[dict[str, float]] = {"sin": 0.53, "cos": 0.53, "erf": 0.56}

_F64: Final = np.float64
_DBL_MAX: Final = float.fromhex("0x1.fffffffffffffp+1023")

# ---- sin / cos: constants -----------------------------------------------------------------

# Cody-Waite holds for |x| below this; above it the integer (Payne-Hanek) reduction runs.
_CW_LIMIT: Final = 1048576.0  # 2**20
# sin(x) rounds to x for |x| < 2**-26 (x**2/6 is below half an ulp); 2**-27 leaves room.
_SIN_TINY: Final = float.fromhex("0x1p-27")
# 2/pi rounded to nearest (mpmath): only chooses k, any error shows as |r| slightly over pi/4.
_TWO_OVER_PI: Final = float.fromhex("0x1.45f306dc9c883p-1")
# pi/2 = P1 + P2 + P3 + P4 (mpmath at 2000 bits): P1, P2, P3 are pi/2 rounded in fixed point to
# 2**-32, 2**-65, 2**-98 (33 bits or fewer each), P4 the double nearest the remainder.
_P1: Final = float.fromhex("0x1.921fb54400000p+0")
_NP2: Final = -float.fromhex("0x1.0b4611a600000p-34")
_NP3: Final = -float.fromhex("0x1.3198a2e000000p-69")
_NP4: Final = -float.fromhex("0x1.b839a252049c1p-104")
# pi/2 as a double-double (mpmath).
_PIO2_HI: Final = float.fromhex("0x1.921fb54442d18p+0")
_PIO2_LO: Final = float.fromhex("0x1.1a62633145c07p-54")
# Taylor coefficients of cos t - 1 = t^2 (C2 + t^2 (C4 + t^2 C6)) and
# sin t - t = t^3 (S3 + t^2 (S5 + t^2 S7)): -1/2, 1/24, -1/720, -1/6, 1/120, -1/5040 rounded.
_C2: Final = -0.5
_C4: Final = float.fromhex("0x1.5555555555555p-5")
_C6: Final = float.fromhex("-0x1.6c16c16c16c17p-10")
_S3: Final = float.fromhex("-0x1.5555555555555p-3")
_S5: Final = float.fromhex("0x1.1111111111111p-7")
_S7: Final = float.fromhex("-0x1.a01a01a01a01ap-13")
# The kernel's node index j = rint(64 r) lies in [-51, 51]; 103 nodes per quadrant.
_J_MAX: Final = 51
_J_SPAN: Final = 2 * _J_MAX + 1

_MASK24: Final = np.int64(0xFFFFFF)
_UMASK24: Final = np.uint64(0xFFFFFF)
_UMASK48: Final = np.uint64(0xFFFF_FFFF_FFFF)
_MANT: Final = np.int64(0x000F_FFFF_FFFF_FFFF)
_HIDDEN: Final = np.int64(0x0010_0000_0000_0000)

# ---- erf: constants -----------------------------------------------------------------------

_ERF_SMALL_LIMIT: Final = 0.125
# The least double whose erf rounds to 1 (bisection on the bits with mpmath at 200 bits).
_ERF_ONE: Final = float.fromhex("0x1.7afb48dc96627p+2")
_ERF_TINY: Final = float.fromhex("0x1p-900")
_ERF_TINY_UP: Final = float.fromhex("0x1p200")
_ERF_TINY_DOWN: Final = float.fromhex("0x1p-200")
_ERF_NODE_FIRST: Final = 8  # node c = j/64 for j = 8 .. 380
_ERF_NODE_LAST: Final = 380
_ERF_DEGREE: Final = 8


def sin(x: Array) -> Array:
    """Sine of float64 ``x`` (radians), within ``ERROR_BOUND_ULP["sin"]`` ulp for every finite ``x``.

    Example:
        >>> import numpy as np
        >>> sin(np.array([0.0, -0.0, 0.5, 1e22, np.inf])).tolist()
        [0.0, -0.0, 0.479425538604203, -0.8522008497671888, nan]
    """
    return blockwise(_sin_block, x)


def cos(x: Array) -> Array:
    """Cosine of float64 ``x`` (radians), within ``ERROR_BOUND_ULP["cos"]`` ulp for every finite ``x``.

    Example:
        >>> import numpy as np
        >>> cos(np.array([0.0, 0.5, 1e22, -np.inf])).tolist()
        [1.0, 0.8775825618903728, 0.523214785395139, nan]
    """
    return blockwise(_cos_block, x)


def erf(x: Array) -> Array:
    """Error function of float64 ``x``, within ``ERROR_BOUND_ULP["erf"]`` ulp everywhere.

    Example:
        >>> import numpy as np
        >>> erf(np.array([-0.0, 0.5, 2.0, 6.0, -np.inf])).tolist()
        [-0.0, 0.5204998778130465, 0.9953222650189527, 1.0, -1.0]
    """
    return blockwise(_erf_block, x)


# ---- blockwise driver ---------------------------------------------------------------------

def _sin_block(flat: Array) -> Array:
    """sin on one block of lanes (1-D)."""
    a = np.abs(flat)
    k, rh, rl = _reduce(flat, a)
    res = _kernel(k, rh, rl, 0)
    res = np.where(a < _SIN_TINY, flat, res)
    return np.where(a <= _DBL_MAX, res, np.nan)


def _cos_block(flat: Array) -> Array:
    """cos on one block of lanes (1-D)."""
    a = np.abs(flat)
    k, rh, rl = _reduce(flat, a)
    res = _kernel(k, rh, rl, 1)
    return np.where(a <= _DBL_MAX, res, np.nan)


def _erf_block(flat: Array) -> Array:
    """erf on one block of lanes (1-D)."""
    a = np.abs(flat)
    sh, st = _erf_small(a)
    small = sh + st
    # Lanes outside [1/8, _ERF_ONE) (NaN included) run the table at a harmless 1/8.
    at = np.where(a < _ERF_ONE, a, _ERF_SMALL_LIMIT)
    jf = np.maximum(np.rint(at * 64.0), float(_ERF_NODE_FIRST))
    t = at - jf * 0.015625  # exact: |t| <= 1/128 and j/64 lies on the grid of at
    i = jf.astype(np.int64) - _ERF_NODE_FIRST
    an = _ERF_AN  # a[2..8]
    p = an[-1][i]
    for n in range(len(an) - 2, -1, -1):
        p = an[n][i] + t * p
    # erf(c) + a1 t carried as a double-double: a1 t reaches 1/16 of erf(c) at the first nodes.
    ph, pl = two_prod(_ERF_A1_HI[i], t)
    nh, nl = fast_two_sum(_ERF_E_HI[i], ph)
    near = nh + (nl + (pl + (_ERF_E_LO[i] + (_ERF_A1_LO[i] * t + t * (t * p)))))
    # np.minimum keeps NaN and turns inf (and the saturated lanes) into 1.
    res = np.where(a < _ERF_ONE, near, np.minimum(a, 1.0))
    res = np.where(a < _ERF_SMALL_LIMIT, small, res)
    tiny = np.flatnonzero(a < _ERF_TINY)
    if tiny.size:
        res[tiny] = _erf_tiny(a[tiny])
    return np.copysign(res, flat)


# ---- sin / cos: reduction and kernel ------------------------------------------------------


def _reduce(x: Array, a: Array) -> tuple[Array, Array, Array]:
    """``(k, r_hi, r_lo)`` with ``x = k * pi/2 + r_hi + r_lo`` (k int64, only k mod 4 kept
    for huge lanes), for finite ``x``; other lanes get a harmless (0, 0, 0)."""
    near = a < _CW_LIMIT
    xs = np.where(near, x, 0.0)
    kf = np.rint(xs * _TWO_OVER_PI)
    # |k| < 2**20 and P1 has 33 bits: k * P1 is exact, and so is the subtraction (Sterbenz).
    r1 = xs - kf * _P1
    r2, e2 = two_sum(r1, kf * _NP2)
    r3, e3 = two_sum(r2, kf * _NP3)
    rh, rl = two_sum(r3, (e2 + e3) + kf * _NP4)
    k = kf.astype(np.int64)
    huge = np.flatnonzero(~near & (a <= _DBL_MAX))
    if huge.size:
        hk, hh, hl = _payne_hanek(x[huge])
        k[huge] = hk
        rh[huge] = hh
        rl[huge] = hl
    return k, rh, rl


def _payne_hanek(x: Array) -> tuple[Array, Array, Array]:
    """``(k mod 4, r_hi, r_lo)`` for finite ``x`` with ``|x| >= 2**20``, in integer arithmetic."""
    bits = as_bits(np.abs(x))
    e = (bits >> 52) - 1075  # x = m * 2**e, e in [-32, 971]
    m = ((bits & _MANT) | _HIDDEN).astype(np.uint64)
    q = _PH_Q[e + 32]
    s = _PH_S[e + 32].astype(np.uint64)
    # m * 2**s = d0 + d1 2**24 + d2 2**48 + d3 2**72 (unsigned shifts wrap above bit 63, which
    # only drops bits the masks drop anyway).
    low = (m << s) & _UMASK48
    d = (
        (low & _UMASK24).astype(np.int64),
        (low >> np.uint64(24)).astype(np.int64),
        ((m >> (np.uint64(48) - s)) & _UMASK24).astype(np.int64),
        ((m >> np.uint64(24)) >> (np.uint64(48) - s)).astype(np.int64),
    )
    # Chunk (q + 2 + n) of the zero-padded 2/pi digits meets digit d[a] in column n - a.
    g = [_PH_CHUNKS[q + (2 + n)] for n in range(12)]
    cols = [d[0] * g[c] + d[1] * g[c + 1] + d[2] * g[c + 2] + d[3] * g[c + 3] for c in range(9)]
    for c in range(8, 0, -1):
        cols[c - 1] = cols[c - 1] + (cols[c] >> 24)
        cols[c] = cols[c] & _MASK24
    # Round to the nearest integer: a fraction of 1/2 or more counts one more quadrant and is
    # complemented (1 - F; the 2**-192 this drops is far below what the result can see).
    up = cols[1] >= 0x800000
    k = (cols[0] + up.astype(np.int64)) & 3
    fr = [np.where(up, _MASK24 - cols[c], cols[c]).astype(_F64) for c in range(1, 9)]
    # Pairs of 24-bit digits are exact 48-bit doubles; the leading nonzero one is at least
    # 2**-62 (no double lies closer to a multiple of pi/2), so ~130 bits remain below it.
    p0 = fr[0] * float.fromhex("0x1p-24") + fr[1] * float.fromhex("0x1p-48")
    p1 = fr[2] * float.fromhex("0x1p-72") + fr[3] * float.fromhex("0x1p-96")
    p2 = fr[4] * float.fromhex("0x1p-120") + fr[5] * float.fromhex("0x1p-144")
    p3 = fr[6] * float.fromhex("0x1p-168") + fr[7] * float.fromhex("0x1p-192")
    fh, fl = fast_two_sum(p0, p1)
    fh, fl = fast_two_sum(fh, fl + (p2 + p3))
    fh = np.where(up, -fh, fh)
    fl = np.where(up, -fl, fl)
    ph, pl = two_prod(fh, np.array(_PIO2_HI))
    rh, rl = fast_two_sum(ph, pl + (fh * _PIO2_LO + fl * _PIO2_HI))
    neg = x < 0.0
    return np.where(neg, -k, k), np.where(neg, -rh, rh), np.where(neg, -rl, rl)


def _kernel(k: Array, rh: Array, rl: Array, shift: int) -> Array:
    """``sin((k + shift) * pi/2 + rh + rl)`` for ``|rh + rl| <= pi/4 + 2**-30``."""
    jf = np.rint(rh * 64.0)
    t = rh - jf * 0.015625  # exact: |t| <= 1/128 and j/64 lies on rh's grid
    idx = ((k + shift) & 3) * _J_SPAN + (jf.astype(np.int64) + _J_MAX)
    uh = _U_HI[idx]
    vh = _V_HI[idx]
    t2 = t * t
    cm1 = t2 * (_C2 + t2 * (_C4 + t2 * _C6))
    sm = (t * t2) * (_S3 + t2 * (_S5 + t2 * _S7))
    ph, pl = two_prod(vh, t)
    sh, sl = two_sum(uh, ph)
    tail = ((sl + pl) + (_U_LO[idx] + _V_LO[idx] * t)) + (vh * (rl + sm) + uh * cm1)
    res: Array = sh + tail
    return res


# ---- erf: small arguments -----------------------------------------------------------------


def _erf_small(a: Array) -> tuple[Array, Array]:
    """erf(a) as an unevaluated sum ``(hi, tail)``, for ``0 <= a < 1/8`` with ``a`` zero or
    above 2**-970 (so that the product by 2/sqrt(pi) is exact)."""
    z = a * a
    d = _ERF_SMALL
    q = d[-2] + z * d[-1]
    for n in range(len(d) - 3, -1, -1):
        q = d[n] + z * q
    ph, pl = two_prod(a, np.array(TWO_OVER_SQRTPI_HI))
    return ph, (pl + a * TWO_OVER_SQRTPI_LO) + ph * (z * q)


def _erf_tiny(a: Array) -> Array:
    """erf(a) for ``0 <= a < 2**-900``, rounded once into the subnormals where it falls there."""
    hi, tail = _erf_small(a * _ERF_TINY_UP)
    down = hi * _ERF_TINY_DOWN  # hi rounded to the output grid (exact if normal)
    # The part of hi that rounding dropped is exact; with the tail it is rounded once onto the
    # same grid (both terms are multiples of 2**-1074 there, so the last sum is exact).
    sub = down + ((hi - down * _ERF_TINY_UP) + tail) * _ERF_TINY_DOWN
    return np.where(down >= float.fromhex("0x1p-1022"), (hi + tail) * _ERF_TINY_DOWN, sub)


# ---- tables (derived offline with mpmath; see the module docstring) ----------------------

# 2/pi = sum of chunk[i] * 2**(-24 (i + 1)), i = 0..50: floor(2/pi * 2**1224) cut into 24-bit
# digits (mpmath at 1500 bits).
_TWO_OVER_PI_CHUNKS: Final[tuple[int, ...]] = (
    10680707, 7228996, 1387004, 2578385, 16069853, 12639074, 9804092, 4427841,
    16666979, 11263675, 12935607, 2387514, 4345298, 14681673, 3074569, 13734428,
    16653803, 1880361, 10960616, 8533493, 3062596, 8710556, 7349940, 6258241,
    3772886, 3769171, 3798172, 8675211, 12450088, 3874808, 9961438, 366607,
    15675153, 9132554, 7151469, 3571407, 2607881, 12013382, 4155038, 6285869,
    7677882, 13102053, 15825725, 473591, 9065106, 15363067, 6271263, 9264392,
    5636912, 4652155, 7056368,
)

# sin(j/64) and cos(j/64), j = 0..51, each as a double-double (hi, lo) (mpmath at 300 bits).
_SIN_COS_NODES: Final[tuple[tuple[str, str, str, str], ...]] = (
    ("0x0.0p+0", "0x0.0p+0", "0x1.0000000000000p+0", "0x0.0p+0"),
    ("0x1.fffaaaaeeeed5p-7", "-0x1.2ab639a9f0776p-63", "0x1.fff000155549fp-1", "0x1.28a28a03a5ef3p-55"),
    ("0x1.ffeaaaeeee86fp-6", "-0x1.cd406fb224ae2p-60", "0x1.ffc00155527d3p-1", "-0x1.3b54492d89b5bp-55"),
    ("0x1.7fdc01032fba9p-5", "-0x1.599bdf46e997ap-59", "0x1.ff7006bfdf99fp-1", "-0x1.8b3b560648d5fp-56"),
    ("0x1.ffaaaeeed4edbp-5", "-0x1.2d16d32684b69p-59", "0x1.ff0015549f4d3p-1", "0x1.328387b99426fp-55"),
    ("0x1.3facb12d1755bp-4", "-0x1.921915299468bp-58", "0x1.fe7034129ef6fp-1", "-0x1.cbf4337c96f97p-57"),
    ("0x1.7f701032550e4p-4", "0x1.afc2d1800501ap-60", "0x1.fdc06bf7e6b9bp-1", "0x1.31902b535f8dbp-55"),
    ("0x1.bf1b78568391dp-4", "0x1.e91841dea4cc8p-58", "0x1.fcf0c800e99b1p-1", "0x1.ea3d786d186acp-57"),
    ("0x1.feaaeee86ee36p-4", "-0x1.afcb2bcc6f03bp-59", "0x1.fc015527d5bd3p-1", "0x1.b68f35094efb8p-55"),
    ("0x1.1f0d3d7afceafp-3", "-0x1.6ef95099769a5p-57", "0x1.faf22263c4bd3p-1", "-0x1.52ace133a2769p-58"),
    ("0x1.3eb312c5d66cbp-3", "0x1.47d666b66cb91p-57", "0x1.f9c340a7cc428p-1", "0x1.c5b6b063b7462p-55"),
    ("0x1.5e44fcfa126f3p-3", "-0x1.6f443063f89b6p-57", "0x1.f874c2e1eecf6p-1", "-0x1.c6514e1332b16p-55"),
    ("0x1.7dc102fbaf2b5p-3", "0x1.5ab50e23c97c3p-59", "0x1.f706bdf9ece1cp-1", "-0x1.698c80c36dcb4p-55"),
    ("0x1.9d252d0cec312p-3", "0x1.9c43d80b1137dp-58", "0x1.f57948cff6797p-1", "0x1.e3a0d3e03b1d4p-57"),
    ("0x1.bc6f84edc6199p-3", "0x1.9c1a56a7b0cabp-57", "0x1.f3cc7c3b3d16ep-1", "-0x1.21a3ad28a3494p-57"),
    ("0x1.db9e15fb5a5d0p-3", "-0x1.32e20d6cc6fc2p-57", "0x1.f20073086649fp-1", "0x1.b940416c1984bp-56"),
    ("0x1.faaeed4f31577p-3", "-0x1.15d88508e32b8p-57", "0x1.f01549f7deea1p-1", "0x1.d3c1e99e5cafdp-55"),
    ("0x1.0cd00cef36436p-2", "-0x1.9fb0a0c93e2b4p-56", "0x1.ee0b1fbc0f11cp-1", "-0x1.bfd2380bbc3b1p-59"),
    ("0x1.1c37d64c6b876p-2", "0x1.46076fe0dcff4p-56", "0x1.ebe214f76efa8p-1", "-0x1.02f9f12ba543ep-55"),
    ("0x1.2b8ddc43eb49fp-2", "0x1.1553899f2d807p-57", "0x1.e99a4c3a7cd83p-1", "-0x1.2264b1bc53ce8p-55"),
    ("0x1.3ad129769d3d8p-2", "0x1.03d550487839ap-63", "0x1.e733ea0193d40p-1", "-0x1.6428b3546ce13p-55"),
    ("0x1.4a00c9b0f3d20p-2", "0x1.823ba6bb08eadp-56", "0x1.e4af14b2a449cp-1", "-0x1.68ca02e8a6833p-55"),
    ("0x1.591bc9fa2f597p-2", "0x1.7c74bac3fe0cbp-57", "0x1.e20bf49acd6c1p-1", "-0x1.660aec7ef636bp-58"),
    ("0x1.682138a38d7f7p-2", "-0x1.d889202444aadp-56", "0x1.df4ab3ebd875ep-1", "-0x1.e2d8a7e6736c4p-55"),
    ("0x1.7710255764214p-2", "-0x1.6ead7314bb6cep-57", "0x1.dc6b7eb995912p-1", "0x1.4b364776dcd35p-58"),
    ("0x1.85e7a12826949p-2", "0x1.8a40e9b5face0p-56", "0x1.d96e82f71a9dcp-1", "0x1.ff61bd5d2039dp-55"),
    ("0x1.94a6be9f546c5p-2", "-0x1.69ce13e683f58p-56", "0x1.d653f073e4040p-1", "-0x1.76236434bec37p-55"),
    ("0x1.a34c91cc50ccap-2", "-0x1.a310e3b50cecdp-58", "0x1.d31bf8d8d7c06p-1", "0x1.e60dd3089cbddp-56"),
    ("0x1.b1d8305321617p-2", "-0x1.ae242cb99f519p-56", "0x1.cfc6cfa52ad9fp-1", "0x1.8b5b5508f2a0dp-55"),
    ("0x1.c048b17b140a3p-2", "0x1.19fe6757e9fa7p-57", "0x1.cc54aa2b2972ep-1", "0x1.4ee162ba83a98p-57"),
    ("0x1.ce9d2e3d4a51fp-2", "-0x1.2fc8a12dae298p-57", "0x1.c8c5bf8ce1a84p-1", "0x1.ab3d1a1590123p-56"),
    ("0x1.dcd4c15329c9ap-2", "0x1.0d4c6e171fd9ap-56", "0x1.c51a48b8b175ep-1", "-0x1.1bbb43b9aa880p-57"),
    ("0x1.eaee8744b05f0p-2", "-0x1.789b43c9b027dp-58", "0x1.c1528065b7d50p-1", "-0x1.892111312e828p-55"),
    ("0x1.f8e99e76abc97p-2", "0x1.9d950af2d00a3p-58", "0x1.bd6ea310294f5p-1", "0x1.31bbcc88c109dp-56"),
    ("0x1.0362939c69955p-1", "-0x1.2d8cd78397b01p-55", "0x1.b96eeef58840ep-1", "0x1.45a3cc78fade0p-58"),
    ("0x1.0a4021e9e1001p-1", "-0x1.6f643a13914f6p-55", "0x1.b553a410c104ep-1", "0x1.8ff7947027a15p-58"),
    ("0x1.110d0c4b69c3bp-1", "0x1.d918998809981p-55", "0x1.b11d04162a4c6p-1", "0x1.1dd561efbc0c2p-56"),
    ("0x1.17c8e5f2eedb0p-1", "0x1.35e57102e2488p-57", "0x1.accb526f69de5p-1", "0x1.8fb6a8dd6b6ccp-55"),
    ("0x1.1e7343236574cp-1", "0x1.22a3fa4f41d5ap-56", "0x1.a85ed4373e02dp-1", "0x1.9be06385ec792p-57"),
    ("0x1.250bb93788bbbp-1", "0x1.ea3d02457bccep-56", "0x1.a3d7d0352bdcfp-1", "-0x1.68dbaeca19669p-55"),
    ("0x1.2b91dea88421ep-1", "-0x1.fa371db216ab0p-55", "0x1.9f368ed912f85p-1", "-0x1.1d200c5791606p-55"),
    ("0x1.32054b148bc4fp-1", "0x1.f6b42095a135bp-55", "0x1.9a7b5a36a6514p-1", "0x1.722cfcc9fa7a9p-55"),
    ("0x1.386597456282bp-1", "-0x1.10fada93b07a8p-56", "0x1.95a67e00cb1fdp-1", "-0x1.0befda21f862dp-55"),
    ("0x1.3eb25d36cd53ap-1", "-0x1.be570e1570fc0p-58", "0x1.90b84784ddaf7p-1", "-0x1.0feb10ab93b87p-56"),
    ("0x1.44eb381cf386bp-1", "-0x1.3ed6c1e6a5505p-55", "0x1.8bb105a5dc900p-1", "0x1.863e03e9474c1p-55"),
    ("0x1.4b0fc46aab761p-1", "0x1.0da05738cc59cp-61", "0x1.869108d77a6c6p-1", "0x1.338ffe2bfe9ddp-56"),
    ("0x1.511f9fd7b351cp-1", "-0x1.5c0e861c48831p-55", "0x1.8158a31916d5dp-1", "-0x1.de8b90b8228dep-57"),
    ("0x1.571a6966d59b3p-1", "0x1.c843b4d0fb197p-58", "0x1.7c0827f09e54fp-1", "-0x1.c73d6d72aee68p-57"),
    ("0x1.5cffc16bf8f0dp-1", "0x1.96cb370eb578ap-55", "0x1.769fec655211fp-1", "-0x1.827d5cf8c68c5p-57"),
    ("0x1.62cf49921ac79p-1", "-0x1.edd9855b6241ap-55", "0x1.712046fa77678p-1", "0x1.425b0a5029c81p-55"),
    ("0x1.6888a4e134b2fp-1", "-0x1.6b7d37644d5e6p-55", "0x1.6b898fa9efb5dp-1", "0x1.15ac786ccf4b2p-56"),
    ("0x1.6e2b77c40bde1p-1", "-0x1.0e729857fad53p-56", "0x1.65dc1fdeb8cbap-1", "-0x1.97c1b47337c77p-58"),
)

# erf(j/64) and 2/sqrt(pi) exp(-(j/64)**2), j = 8..380, each as a double-double (hi, lo)
# (mpmath at 200 bits).
_ERF_NODES: Final[tuple[tuple[str, str, str, str], ...]] = (
    ("0x1.1f5e1a35c3b89p-3", "0x1.d0b6d6493e0f4p-57", "0x1.1c62fa1e869b6p+0", "0x1.ce6909ad6a1e7p-55"),
    ("0x1.42d7fc2f64959p-3", "-0x1.86fe607dab55fp-59", "0x1.1b357141d95d5p+0", "-0x1.eb5c545a2a83fp-55"),
    ("0x1.662a0bdf7a89fp-3", "-0x1.ef80fee2b133cp-59", "0x1.19e5e92b964abp+0", "0x1.ccf2a64f45a7cp-57"),
    ("0x1.895010fdbdbfdp-3", "0x1.1ca1f789ebd0cp-57", "0x1.1874ddcdfce24p+0", "0x1.71b8ed48cfc4dp-54"),
    ("0x1.ac45e37fe2526p-3", "0x1.48d48536c61e3p-57", "0x1.16e2d7093cd8cp+0", "0x1.979a52f906b4cp-54"),
    ("0x1.cf076d1233237p-3", "-0x1.bedc0f6f5e5e9p-59", "0x1.153068581b781p+0", "-0x1.4add7ecd404b7p-55"),
    ("0x1.f190aa85540e2p-3", "-0x1.e521a09cb1b7dp-57", "0x1.135e3075d076bp+0", "-0x1.e2c0521bed462p-57"),
    ("0x1.09eed6982b948p-2", "-0x1.530740ab874dfp-56", "0x1.116cd8fd67618p+0", "0x1.3d1539b16fd18p-59"),
    ("0x1.1af54e232d609p-2", "-0x1.bee921fa4172bp-56", "0x1.0f5d1602f7e41p+0", "-0x1.3e41778d4b1eep-55"),
    ("0x1.2bd9db0f7827fp-2", "-0x1.8efaa1b53616fp-60", "0x1.0d2fa5a70c168p+0", "0x1.97bb37c0ec29ep-54"),
    ("0x1.3c9aa8b84bedap-2", "0x1.38e845397242dp-58", "0x1.0ae54fa490723p+0", "-0x1.d0120cee7c261p-54"),
    ("0x1.4d35ef3e5372ep-2", "0x1.7de8a637a1e48p-59", "0x1.087ee4d9ad247p+0", "0x1.570afc1ace74fp-54"),
    ("0x1.5da9f415ff23fp-2", "-0x1.a72e51e19194bp-59", "0x1.05fd3ecbec298p+0", "-0x1.f17d49717adf9p-54"),
    ("0x1.6df50a8dff772p-2", "-0x1.7db7addcf3bf3p-57", "0x1.03613f2812dafp+0", "0x1.df085872855e9p-54"),
    ("0x1.7e15944d9d3e4p-2", "-0x1.95fdc3865d9b7p-57", "0x1.00abcf3e187a9p+0", "0x1.586d03b20db89p-55"),
    ("0x1.8e0a01cab516bp-2", "0x1.365c01309e3eep-59", "0x1.fbbbbef34b4b2p-1", "0x1.4602648974a95p-60"),
    ("0x1.9dd0d2b721f39p-2", "-0x1.1671c021d14c4p-56", "0x1.f5f0cdaf15313p-1", "0x1.dff29f5ad8117p-60"),
    ("0x1.ad68966569a87p-2", "-0x1.be29b0c63c263p-56", "0x1.eff8c4b1375dbp-1", "0x1.2b916b7c50a75p-57"),
    ("0x1.bccfec24855b8p-2", "-0x1.47292aeeaa2fap-56", "0x1.e9d5a8e4c934ep-1", "-0x1.9a164575c836bp-56"),
    ("0x1.cc058392a6d2dp-2", "-0x1.6b16ede97cbecp-56", "0x1.e38988fc46e72p-1", "-0x1.da57c9072d3c2p-58"),
    ("0x1.db081ce6e2a48p-2", "-0x1.7ff0a3296d9ccp-56", "0x1.dd167c4cf9d2ap-1", "0x1.44f2832f90a99p-55"),
    ("0x1.e9d68931ae650p-2", "0x1.d9e2ba90cddd7p-57", "0x1.d67ea1a8b5368p-1", "0x1.6f0933d1e78c7p-57"),
    ("0x1.f86faa9428f9dp-2", "0x1.99988b110a612p-56", "0x1.cfc41e36c7df9p-1", "-0x1.9c06ade438a86p-56"),
    ("0x1.03693a371519cp-1", "0x1.193943b0da1c7p-55", "0x1.c8e91c4d01368p-1", "0x1.4b707ee613f61p-57"),
    ("0x1.0a7ef5c18edd2p-1", "0x1.5e809f1a31a28p-56", "0x1.c1efca49a5011p-1", "0x1.4c081d7f49500p-55"),
    ("0x1.1178930ada115p-1", "-0x1.91f8f313b2165p-56", "0x1.bada596f25436p-1", "-0x1.f56db2552c533p-59"),
    ("0x1.1855a5fd3dd50p-1", "0x1.8f68268624501p-55", "0x1.b3aafcc27502ep-1", "-0x1.a9ec8b5d9d3c9p-56"),
    ("0x1.1f15cb50bc4dep-1", "-0x1.2a28c09752a57p-57", "0x1.ac63e7ecc1411p-1", "0x1.eacb88b665144p-57"),
    ("0x1.25b8a88b6dd7fp-1", "0x1.9534a3b5bd215p-55", "0x1.a5074e2157620p-1", "0x1.fad8c0ef6faecp-56"),
    ("0x1.2c3debfd7d6c1p-1", "-0x1.ce9e980b5af65p-57", "0x1.9d97610879642p-1", "0x1.548711bd1a7a5p-61"),
    ("0x1.32a54cb8db67bp-1", "-0x1.96263537d4d65p-57", "0x1.96164fafd8de3p-1", "0x1.08744251a74ddp-56"),
    ("0x1.38ee8a84beb71p-1", "0x1.7a10cef07bb68p-56", "0x1.8e86458169af8p-1", "0x1.2bae603b080f6p-55"),
    ("0x1.3f196dcd0f135p-1", "-0x1.f25f4f6fdf70bp-56", "0x1.86e9694134b9ep-1", "-0x1.3bda1314b1d68p-55"),
    ("0x1.4525c78dd5966p-1", "-0x1.5a1cdfbe73cccp-55", "0x1.7f41dc12c9e89p-1", "-0x1.7aad2278d2abep-57"),
    ("0x1.4b13713ad3513p-1", "0x1.e941d89557082p-57", "0x1.7791b886e7403p-1", "-0x1.da79bb2a7fe7fp-57"),
    ("0x1.50e24ca35fd2cp-1", "-0x1.1a33759930cefp-55", "0x1.6fdb11b1e0c34p-1", "0x1.c15c08d11c9dep-58"),
    ("0x1.569243d2b3a9bp-1", "0x1.8eef7012e8df5p-56", "0x1.681ff24b4ab04p-1", "-0x1.dba6493354c66p-58"),
    ("0x1.5c2348ecc4dc3p-1", "-0x1.48c279c52cf77p-59", "0x1.60625bd75d07bp-1", "-0x1.46150c604e340p-56"),
    ("0x1.61955607dd15dp-1", "0x1.98fddd4f54897p-55", "0x1.58a445da7c74cp-1", "0x1.08e1a93a8db23p-55"),
    ("0x1.66e86d0312e82p-1", "-0x1.4dc066acffa37p-55", "0x1.50e79d1749ac9p-1", "-0x1.543fdbd6c027fp-58"),
    ("0x1.6c1c9759d0e5fp-1", "0x1.b1432f2cbc455p-55", "0x1.492e42d78d2c5p-1", "-0x1.8bd386a7ba3f6p-55"),
    ("0x1.7131e5f496a5ap-1", "0x1.a197c13b2f9c0p-55", "0x1.417a0c4049fd0p-1", "0x1.b1cdf16f10cb4p-55"),
    ("0x1.762870f720c6fp-1", "0x1.118a1b821cf7cp-55", "0x1.39ccc1b136d5ap-1", "0x1.fa527d7b328bdp-58"),
    ("0x1.7b00578c26037p-1", "-0x1.31713adf981d5p-55", "0x1.32281e2fd1a92p-1", "-0x1.182c64291a641p-55"),
    ("0x1.7fb9bfaed8078p-1", "0x1.66cf14bcad032p-56", "0x1.2a8dcede3673bp-1", "-0x1.7378e2c70325dp-56"),
    ("0x1.8454d5f25760dp-1", "-0x1.a8630743d331dp-58", "0x1.22ff727dd6f7bp-1", "0x1.8c529bd558f96p-58"),
    ("0x1.88d1cd474a2e0p-1", "0x1.6f57a1a45df78p-55", "0x1.1b7e98fe26217p-1", "0x1.9512909c8396ep-56"),
    ("0x1.8d30debfc572ep-1", "-0x1.9011b5cd475adp-56", "0x1.140cc3173f007p-1", "0x1.d87fbf983661ep-55"),
    ("0x1.91724951b8fc6p-1", "-0x1.27912dd352f8bp-55", "0x1.0cab61f084b93p-1", "0x1.098a511a778e7p-56"),
    ("0x1.959651980da31p-1", "0x1.5dcf3f34ee34bp-55", "0x1.055bd6d32e8d7p-1", "0x1.532361fc1e803p-55"),
    ("0x1.999d4192a5715p-1", "-0x1.c8871576d5306p-55", "0x1.fc3ee5d1524b0p-2", "-0x1.28380092328d3p-58"),
    ("0x1.9d8768656cc42p-1", "-0x1.a5c2a77eca9c0p-56", "0x1.edeeee0959518p-2", "0x1.b6166a4f6f435p-59"),
    ("0x1.a1551a16aaeafp-1", "0x1.a558a46df5f67p-57", "0x1.dfca26f5bbf88p-2", "-0x1.ddcbaf85587b9p-57"),
    ("0x1.a506af4cc00f4p-1", "0x1.4cd4280552cd1p-56", "0x1.d1d2cfff91594p-2", "0x1.c6b63e619701dp-59"),
    ("0x1.a89c850b7d54dp-1", "-0x1.e274069b9af78p-55", "0x1.c40b0729ed548p-2", "-0x1.c4d17cf961a6fp-56"),
    ("0x1.ac16fc7143263p-1", "0x1.9bb8daed1b36cp-57", "0x1.b674c8ffc6283p-2", "-0x1.bda1664a10f4dp-57"),
    ("0x1.af767a741088bp-1", "-0x1.c97f778122797p-56", "0x1.a911f096fbc26p-2", "-0x1.086a09f735b33p-56"),
    ("0x1.b2bb679ead19cp-1", "-0x1.236af48ab9811p-55", "0x1.9be437a7de946p-2", "-0x1.270535635d44ep-56"),
    ("0x1.b5e62fce16095p-1", "0x1.bc3da0f1d0e78p-56", "0x1.8eed36b886d93p-2", "0x1.ea809f115c5eep-56"),
    ("0x1.b8f741ef54f83p-1", "0x1.ff2766ba0e81ap-55", "0x1.822e655b417e7p-2", "-0x1.f31e071ef7ab1p-56"),
    ("0x1.bbef0fbde6221p-1", "-0x1.322c1148e0d48p-55", "0x1.75a91a7f4d2edp-2", "0x1.6eb826a9df857p-58"),
    ("0x1.bece0d82d1a5cp-1", "0x1.6a183d67ebde4p-60", "0x1.695e8cd31867ep-2", "0x1.acbe733846e53p-61"),
    ("0x1.c194b1d49a184p-1", "-0x1.6776b69476ba6p-57", "0x1.5d4fd33729015p-2", "-0x1.6db200c4fb75cp-56"),
    ("0x1.c443755820d64p-1", "0x1.3a868ef1aa2eap-55", "0x1.517de540ce2a3p-2", "0x1.73716dbe3db0dp-56"),
    ("0x1.c6dad2829ec62p-1", "-0x1.ab76d4cba3d05p-57", "0x1.45e99bcbb7915p-2", "0x1.7bcd0125a8155p-56"),
    ("0x1.c95b455cce69dp-1", "-0x1.c218e987d92b3p-55", "0x1.3a93b1998736cp-2", "-0x1.2ed999d3f75b1p-56"),
    ("0x1.cbc54b476248dp-1", "0x1.1a504adde06a6p-55", "0x1.2f7cc3fe6f423p-2", "0x1.9fc82d7c248bdp-56"),
    ("0x1.ce1962c0e0d8bp-1", "0x1.18d61bf7e554bp-55", "0x1.24a55399ea239p-2", "0x1.4887c60d2b527p-57"),
    ("0x1.d0580b2cfd249p-1", "0x1.4fca6318dfee9p-55", "0x1.1a0dc51a9934dp-2", "-0x1.ca89d2d78fba4p-57"),
    ("0x1.d281c49d818d0p-1", "-0x1.67986e824be2cp-55", "0x1.0fb6620c550afp-2", "-0x1.173ce0d7ec0adp-56"),
    ("0x1.d4970f9ce00d9p-1", "-0x1.56704fcbdd47dp-56", "0x1.059f59af7a906p-2", "-0x1.0cd88897a63fep-56"),
    ("0x1.d6986cfa798e7p-1", "0x1.ce8e720d2a441p-57", "0x1.f79183b101c5bp-3", "0x1.70357c14f0863p-58"),
    ("0x1.d8865d98abe01p-1", "-0x1.fcec4afb974d9p-55", "0x1.e4652fadcb6b2p-3", "-0x1.e950836901024p-61"),
    ("0x1.da61623cb41e0p-1", "0x1.d6be15480707ep-55", "0x1.d1b982c501370p-3", "0x1.8d5adc05e8827p-57"),
    ("0x1.dc29fb60715afp-1", "0x1.ab00e1d243bb7p-55", "0x1.bf8e1b1ca2279p-3", "0x1.27b706a787720p-65"),
    ("0x1.dde0a90611a0dp-1", "0x1.d44db43b4817ap-55", "0x1.ade26b7fbed95p-3", "-0x1.8460f0d826343p-61"),
    ("0x1.df85ea8db188ep-1", "-0x1.f71e8254d11a9p-55", "0x1.9cb5bd549b111p-3", "-0x1.973e73caa1edep-59"),
    ("0x1.e11a3e8cf4eb8p-1", "0x1.12c03539ceb97p-55", "0x1.8c07329874652p-3", "0x1.5cb962f5499dbp-58"),
    ("0x1.e29e22a89d766p-1", "0x1.bcc9ef4df6e3fp-55", "0x1.7bd5c7df3fe9cp-3", "0x1.48aa7b6eb2d84p-57"),
    ("0x1.e4121370224ccp-1", "0x1.27fbb2c560af3p-59", "0x1.6c205655be720p-3", "-0x1.c7fec74ae69b7p-57"),
    ("0x1.e5768c3b4a3fcp-1", "0x1.8b62674f89890p-57", "0x1.5ce595c455b0ap-3", "0x1.c317415c2c6e1p-59"),
    ("0x1.e6cc0709c8a0dp-1", "0x1.fd5651d20014ep-56", "0x1.4e241e912c305p-3", "0x1.357717b221868p-57"),
    ("0x1.e812fc64db369p-1", "0x1.3c65eda8c4505p-55", "0x1.3fda6bc016994p-3", "0x1.588d87a11b4d0p-57"),
    ("0x1.e94be342e6743p-1", "0x1.fdefd8ddf3918p-55", "0x1.3206dceef5f87p-3", "0x1.2f684b465a756p-61"),
    ("0x1.ea7730ed0bbb9p-1", "0x1.2c5bd7ce1388bp-55", "0x1.24a7b84d38971p-3", "0x1.aa0c5e788ed5fp-57"),
    ("0x1.eb9558e6b42cep-1", "-0x1.d683f37eb7246p-56", "0x1.17bb2c8d41535p-3", "0x1.c3e07886c80bfp-58"),
    ("0x1.eca6ccd709544p-1", "0x1.f3df164d9badap-57", "0x1.0b3f52ce8c383p-3", "0x1.d133fa1bfc57dp-57"),
    ("0x1.edabfc7453e63p-1", "-0x1.8e05e56f8be29p-55", "0x1.fe6460fef4680p-4", "0x1.acceb7db697d0p-58"),
    ("0x1.eea5557137ae0p-1", "-0x1.385e445f2c96dp-55", "0x1.e723726b824a9p-4", "-0x1.2203197eea764p-59"),
    ("0x1.ef93436bc2daap-1", "0x1.835a8cdbebd68p-55", "0x1.d0b7a0f921e7cp-4", "0x1.f73616331ea79p-58"),
    ("0x1.f0762fde45ee6p-1", "0x1.9c3551b59fc73p-55", "0x1.bb1c972f23e50p-4", "0x1.ba894f7b78aa8p-58"),
    ("0x1.f14e8211e8c55p-1", "-0x1.59c8248a0d9a7p-55", "0x1.a64de673e8837p-4", "0x1.541b8d152b162p-59"),
    ("0x1.f21c9f12f0677p-1", "-0x1.7efe429672266p-58", "0x1.92470a61b6965p-4", "0x1.c6acd40cee350p-58"),
    ("0x1.f2e0e9a6a8b09p-1", "0x1.4ef7dec7df292p-56", "0x1.7f036c0107294p-4", "0x1.81b332104ecdbp-58"),
    ("0x1.f39bc242e43e6p-1", "-0x1.dbade2f2295e3p-55", "0x1.6c7e64e7281cbp-4", "0x1.aaa28bbaf7572p-58"),
    ("0x1.f44d870704911p-1", "-0x1.32b632e1fa469p-55", "0x1.5ab342383d178p-4", "-0x1.eba810b8189cfp-58"),
    ("0x1.f4f693b67bd77p-1", "-0x1.3a1ee1406c356p-56", "0x1.499d478bca735p-4", "0x1.31c41d17378e2p-60"),
    ("0x1.f59741b4b97cfp-1", "-0x1.6d774967aac4cp-55", "0x1.3937b1b31925ap-4", "-0x1.c3cc699e5d610p-58"),
    ("0x1.f62fe80272419p-1", "-0x1.b7c25ec8b416fp-55", "0x1.297db960e4f63p-4", "-0x1.22a8c7b295cd1p-58"),
    ("0x1.f6c0db3c34641p-1", "0x1.a58188f60dc79p-55", "0x1.1a6a95b1e786fp-4", "0x1.7e6de0eb94d5fp-61"),
    ("0x1.f74a6d9a38383p-1", "0x1.c33a329423946p-55", "0x1.0bf97e95f2a64p-4", "-0x1.446051f6fef83p-58"),
    ("0x1.f7cceef15d631p-1", "0x1.04499553ea611p-55", "0x1.fc4b5e32d6259p-5", "0x1.c525527aedee5p-60"),
    ("0x1.f848acb544e95p-1", "-0x1.b27a62d67b274p-55", "0x1.e1d4cf1e2450ap-5", "-0x1.78457c52bf816p-59"),
    ("0x1.f8bdf1fb78370p-1", "-0x1.8370b75253118p-55", "0x1.c885df3451a07p-5", "0x1.a3f2ebd11692dp-59"),
    ("0x1.f92d077f8d56dp-1", "0x1.8b55ef493fce7p-56", "0x1.b055303221015p-5", "0x1.cba9ea60ed019p-59"),
    ("0x1.f99633a838a57p-1", "-0x1.4ba6bcb2552a0p-55", "0x1.993979e14fffep-5", "-0x1.aeb2ddc86afbap-59"),
    ("0x1.f9f9ba8d3c733p-1", "0x1.cd57612f5f4f7p-55", "0x1.83298d717210ep-5", "0x1.7409c6881bb2bp-59"),
    ("0x1.fa57ddfe27376p-1", "0x1.e636769e90312p-55", "0x1.6e1c5893c380bp-5", "-0x1.cf5f73faa05a0p-61"),
    ("0x1.fab0dd89d1309p-1", "-0x1.ae61bd9db1babp-55", "0x1.5a08e85af27e0p-5", "0x1.e4f9cfc8c2382p-59"),
    ("0x1.fb04f6868a944p-1", "-0x1.1ae77bb6d5c3bp-55", "0x1.46e66be002240p-5", "-0x1.347c01d677ae1p-59"),
    ("0x1.fb54641aebbc9p-1", "-0x1.79972bf893ddbp-55", "0x1.34ac36ad8dafep-5", "0x1.8e5930c4f73bfp-63"),
    ("0x1.fb9f5f4739170p-1", "0x1.831847ec30c2bp-55", "0x1.2351c2f2d1449p-5", "-0x1.947e85b9c43d7p-59"),
    ("0x1.fbe61eef4cf6ap-1", "0x1.15ded88667618p-55", "0x1.12ceb37ff9bc3p-5", "0x1.a3b0b09d34761p-59"),
    ("0x1.fc28d7e4f9cd0p-1", "-0x1.8608aa10e3372p-55", "0x1.031ad58d56279p-5", "0x1.38171b7ffca7dp-59"),
    ("0x1.fc67bcf2d7b8fp-1", "-0x1.0d273418771a5p-55", "0x1.e85c449e377f3p-6", "-0x1.cbb4d7b51d2d8p-60"),
    ("0x1.fca2fee770c79p-1", "0x1.ecfc67e413f67p-57", "0x1.cc0180af00a8bp-6", "-0x1.4a03cd7434256p-60"),
    ("0x1.fcdacca0bfb73p-1", "-0x1.2c33d88729e43p-55", "0x1.b1160991ff737p-6", "-0x1.d940a504353b9p-61"),
    ("0x1.fd0f5317f582fp-1", "-0x1.c8821e4d91d38p-55", "0x1.978ae8b55ce1bp-6", "-0x1.79276dbe633e9p-62"),
    ("0x1.fd40bd6d7a785p-1", "0x1.60d428f21fbb8p-55", "0x1.7f5188610ddc8p-6", "-0x1.611e85a9228b6p-60"),
    ("0x1.fd6f34f52013ap-1", "-0x1.4fcb2d64cb27ep-55", "0x1.685bb5134ef13p-6", "0x1.88fd8228633a3p-60"),
    ("0x1.fd9ae142795e3p-1", "0x1.972801904b9a3p-56", "0x1.529b9e8cf9a1ep-6", "0x1.b47becf12c4e4p-61"),
    ("0x1.fdc3e835500b3p-1", "0x1.973a36fce663cp-57", "0x1.3e03d891b37dep-6", "-0x1.9784c380c3605p-60"),
    ("0x1.fdea6e062d0c9p-1", "-0x1.64c6b684260bcp-56", "0x1.2a875b5ffab56p-6", "0x1.50c29abdb6bf8p-63"),
    ("0x1.fe0e9552ebdd6p-1", "-0x1.5572f5ba5393dp-55", "0x1.181983e5133ddp-6", "-0x1.09b186e8d68e1p-60"),
    ("0x1.fe307f2b503d0p-1", "-0x1.8a555000387f8p-57", "0x1.06ae13b0d3255p-6", "-0x1.88abd7f4be982p-60"),
    ("0x1.fe504b1d9696cp-1", "0x1.0b21e001c985fp-56", "0x1.ec72615a894c4p-7", "0x1.4efb742ab6b7dp-61"),
    ("0x1.fe6e1742f7cf6p-1", "-0x1.cebcf3e303f16p-55", "0x1.cd5ec93c12432p-7", "-0x1.bc1eceb2a214bp-61"),
    ("0x1.fe8a004c19ae6p-1", "0x1.7fbc7d60c30a3p-55", "0x1.b00b38d6b3575p-7", "0x1.b4c5621491b97p-61"),
    ("0x1.fea4218d6594ap-1", "-0x1.e3333d8f7d98cp-58", "0x1.94624e78e0fafp-7", "-0x1.41864737c78ffp-61"),
    ("0x1.febc950b3fa75p-1", "0x1.a558a6a465ea4p-56", "0x1.7a4f6aca256cbp-7", "-0x1.24c4ced5dfd53p-61"),
    ("0x1.fed37386190fbp-1", "0x1.72b16817d4f0fp-55", "0x1.61beae53b72b7p-7", "0x1.3c1598f200adep-64"),
    ("0x1.fee8d486585eep-1", "0x1.fbded6f2791afp-55", "0x1.4a9cf6bda3f4cp-7", "0x1.89eaf1c252224p-64"),
    ("0x1.fefcce6813974p-1", "-0x1.b27cf5025d1c8p-58", "0x1.34d7dbc76d7e5p-7", "0x1.3780d6e7eb350p-61"),
    ("0x1.ff0f766697c76p-1", "-0x1.8a47b23bc89dcp-55", "0x1.205dac02bd6b9p-7", "0x1.7512fbcc1f51ep-61"),
    ("0x1.ff20e0a7ba8c2p-1", "-0x1.03f8b2fd7d512p-57", "0x1.0d1d69569b82dp-7", "-0x1.a6951522bbeccp-62"),
    ("0x1.ff312046f2339p-1", "0x1.8350a6e2d9893p-60", "0x1.f60d8aa2a88f2p-8", "0x1.12aeb9996a3c2p-62"),
    ("0x1.ff404760319b4p-1", "0x1.f142071432025p-56", "0x1.d4143a9dfe965p-8", "-0x1.6eec3c35c7ed7p-63"),
    ("0x1.ff4e671a85425p-1", "0x1.2bdbbace8536ap-57", "0x1.b430ecf4a83a8p-8", "-0x1.7168f9a282c44p-63"),
    ("0x1.ff5b8fb26f5f6p-1", "-0x1.7e918d19780fdp-55", "0x1.9646f35a76624p-8", "-0x1.f80c4890c9b48p-62"),
    ("0x1.ff67d08401202p-1", "0x1.ad3a5de487c30p-56", "0x1.7a3ade6c8b3e5p-8", "-0x1.f812abd8e53acp-62"),
    ("0x1.ff733814af88cp-1", "0x1.0a87238cea4f9p-56", "0x1.5ff2750fe7820p-8", "-0x1.5f184847ca665p-62"),
    ("0x1.ff7dd41ce2b4dp-1", "-0x1.204535296dacap-55", "0x1.4754abacdf1dcp-8", "-0x1.1f6fd682bccc1p-63"),
    ("0x1.ff87b1913e853p-1", "-0x1.3ca99c8d2cea5p-56", "0x1.30499b503957fp-8", "-0x1.d3cd123992737p-64"),
    ("0x1.ff90dcaba4096p-1", "-0x1.733363896eefdp-56", "0x1.1aba78ba3af89p-8", "-0x1.72773fa547e54p-62"),
    ("0x1.ff9960f3eb327p-1", "-0x1.08b1ca6e97f80p-56", "0x1.06918b6355624p-8", "0x1.21b463b8e3a00p-62"),
    ("0x1.ffa14948549a7p-1", "0x1.12e9bdff1682bp-55", "0x1.e77448fb66bb9p-9", "0x1.70c97ef13c90ap-64"),
    ("0x1.ffa89fe5b3625p-1", "0x1.934b204fa7706p-55", "0x1.c4412bf4b8f0bp-9", "-0x1.c407086bebf70p-67"),
    ("0x1.ffaf6e6f4f5c0p-1", "0x1.16e1b500fbf89p-56", "0x1.a3645330550ffp-9", "-0x1.807c914528f23p-70"),
    ("0x1.ffb5bdf67fe6fp-1", "0x1.4e830346f6e7fp-62", "0x1.84ba3004a50d0p-9", "-0x1.90b93d46321efp-64"),
    ("0x1.ffbb970200110p-1", "0x1.5cfd6e7817468p-59", "0x1.6821000795a03p-9", "0x1.66c5cb38e837ep-63"),
    ("0x1.ffc10194fcb64p-1", "0x1.ea147ac20184fp-55", "0x1.4d78bba8ca5fdp-9", "0x1.4ca8e74a4513ep-65"),
    ("0x1.ffc60535dd7f5p-1", "-0x1.9641a1eaa3051p-55", "0x1.34a305080681fp-9", "-0x1.eba0cd95ec980p-65"),
    ("0x1.ffcaa8f4c9beap-1", "0x1.b0cee160116f9p-55", "0x1.1d83170fbf6fbp-9", "0x1.ea3671efbb74ap-63"),
    ("0x1.ffcef371ea4d7p-1", "0x1.58d3c923481d6p-56", "0x1.07fdb4dafea5fp-9", "-0x1.3f7fb11872800p-64"),
    ("0x1.ffd2eae369a07p-1", "-0x1.83b0b306f73d7p-57", "0x1.e7f232d9e2630p-10", "0x1.a292e0fa8c3cbp-64"),
    ("0x1.ffd6951b33686p-1", "-0x1.6df23234dae46p-55", "0x1.c2b9cf7f893bfp-10", "-0x1.c5647bee5749cp-67"),
    ("0x1.ffd9f78c7524ap-1", "0x1.04ed6ff98e45dp-55", "0x1.a024365f771bdp-10", "0x1.3c8f5202cb3e9p-64"),
    ("0x1.ffdd1750e1220p-1", "0x1.51aaf6f217e39p-55", "0x1.8005f08d6f1efp-10", "-0x1.9465abb5404eep-68"),
    ("0x1.ffdff92db56e5p-1", "-0x1.8aeef06f8b149p-56", "0x1.6235fbd7a4345p-10", "-0x1.10837ea26439ap-65"),
    ("0x1.ffe2a1988857cp-1", "0x1.ead0b1c1f0b33p-56", "0x1.468dadf4080abp-10", "-0x1.97b98afcf3fe5p-68"),
    ("0x1.ffe514bbdc197p-1", "-0x1.cd963345b5c6dp-58", "0x1.2ce898809244ep-10", "0x1.092b45493a9e8p-64"),
    ("0x1.ffe7567b7b5e1p-1", "0x1.cb29afe2aa55fp-55", "0x1.15246dda49d47p-10", "-0x1.37125fc8e8c2ap-66"),
    ("0x1.ffe96a78a04a9p-1", "-0x1.2816fccca0095p-55", "0x1.fe41cd9bb4eeep-11", "0x1.e5a14b8f64344p-66"),
    ("0x1.ffeb5415e7c44p-1", "-0x1.1c1629e52734cp-55", "0x1.d57f524723822p-11", "0x1.886cf55be5075p-66"),
    ("0x1.ffed167b12ac2p-1", "-0x1.ddc0ce3ed8fcbp-55", "0x1.afc85e0f82e12p-11", "0x1.438f22895e01dp-66"),
    ("0x1.ffeeb49896c6dp-1", "0x1.cc5947f9700a7p-55", "0x1.8ce75e9f6f8a0p-11", "0x1.7946481c6f977p-65"),
    ("0x1.fff0312b010b5p-1", "0x1.155deb2d93f68p-55", "0x1.6caa0d3582fe9p-11", "-0x1.91e2207d44bb6p-67"),
    ("0x1.fff18ebe2b0e1p-1", "-0x1.9834155e7a96bp-57", "0x1.4ee1429bf7cc0p-11", "0x1.ce9aa4817ed47p-66"),
    ("0x1.fff2cfb0453d9p-1", "0x1.9a913686042a3p-55", "0x1.3360ccd23db3ap-11", "0x1.39e15444e9dddp-69"),
    ("0x1.fff3f634b79f9p-1", "0x1.cf2d34d60f22dp-55", "0x1.19ff4663ae9dfp-11", "-0x1.a243c686a8b91p-68"),
    ("0x1.fff50456dab8cp-1", "-0x1.a197ab9f52a4fp-58", "0x1.0295ef6591848p-11", "-0x1.23323562ef071p-66"),
    ("0x1.fff5fbfc8a439p-1", "-0x1.a9a615103f56bp-57", "0x1.da01102b5f851p-12", "0x1.932e3c299d12dp-68"),
    ("0x1.fff6dee89352ep-1", "0x1.b96c0ba13851dp-55", "0x1.b23a5a23e4210p-12", "0x1.727bce1bdfffep-67"),
    ("0x1.fff7aebcff755p-1", "0x1.2c7935d06e174p-55", "0x1.8d986a4187285p-12", "-0x1.33c5703337b42p-67"),
    ("0x1.fff86cfd3e657p-1", "-0x1.2e06af13b7209p-56", "0x1.6be02102b3520p-12", "0x1.4fa09ed3d8b75p-68"),
    ("0x1.fff91b102fca8p-1", "0x1.334d3011b602ep-55", "0x1.4cda5374ea275p-12", "-0x1.0fcb46c1154ffp-69"),
    ("0x1.fff9ba420e834p-1", "0x1.1379ec5aa630ep-56", "0x1.30538fbb77ecdp-12", "0x1.8c5e8c1b3532fp-69"),
    ("0x1.fffa4bc63ee9ap-1", "-0x1.195a8f635e90bp-56", "0x1.161be46ad3b50p-12", "0x1.4c2a3ec0bf3f9p-66"),
    ("0x1.fffad0b901755p-1", "0x1.70d5c6bd7b275p-57", "0x1.fc0d55470cf51p-13", "-0x1.6a768f46d3097p-67"),
    ("0x1.fffb4a210b172p-1", "-0x1.5de9acaf58efdp-58", "0x1.cfd4a5adec5c0p-13", "-0x1.b956ec1a75feap-67"),
    ("0x1.fffbb8f1049c6p-1", "0x1.d2c6266b51f27p-56", "0x1.a740684026555p-13", "-0x1.7e24cc3ac5720p-69"),
    ("0x1.fffc1e08f25f5p-1", "0x1.8bac3f38a8547p-56", "0x1.8208bc334a6a5p-13", "-0x1.0c59904e294dap-70"),
    ("0x1.fffc7a37857d2p-1", "-0x1.97b31125dd25ap-56", "0x1.5feada379d8b7p-13", "-0x1.00defec14b26bp-67"),
    ("0x1.fffcce3b57bffp-1", "-0x1.2da4411e7392dp-56", "0x1.40a8c1949f75ep-13", "-0x1.d513cabca0f33p-68"),
    ("0x1.fffd1ac4135f9p-1", "0x1.eeafa1ecd6cefp-55", "0x1.2408e9ba3327fp-13", "-0x1.7e1d81587040cp-67"),
    ("0x1.fffd607387b07p-1", "0x1.ca4422c00e56bp-57", "0x1.09d5f819c9e29p-13", "-0x1.add4454fdb65dp-71"),
    ("0x1.fffd9fdeabccep-1", "0x1.0c43c38b1d741p-55", "0x1.e3bcf436a1a95p-14", "-0x1.567988c8cad0ep-69"),
    ("0x1.fffdd98e903b2p-1", "-0x1.8ca3bc9cb7d36p-55", "0x1.b7e94604479dcp-14", "0x1.055117b62c032p-68"),
    ("0x1.fffe0e0140857p-1", "-0x1.6aa36f86c14ddp-57", "0x1.8fdc1b2dcf7b9p-14", "0x1.7050f50b8f311p-71"),
    ("0x1.fffe3daa95b18p-1", "0x1.5bc316b6f0891p-55", "0x1.6b4702d7d5849p-14", "-0x1.57f1adec34fe5p-68"),
    ("0x1.fffe68f4fa777p-1", "0x1.2f2176070778ep-60", "0x1.49e17724f4d41p-14", "0x1.7f09ed2066a75p-69"),
    ("0x1.fffe904222101p-1", "-0x1.84764877d169bp-56", "0x1.2b6875310f785p-14", "0x1.d0dea0195e148p-68"),
    ("0x1.fffeb3ebb267bp-1", "0x1.e47f697047cbap-57", "0x1.0f9e1b4dd36dfp-14", "-0x1.3fedc80d9c7aep-71"),
    ("0x1.fffed443e2787p-1", "0x1.6c733ffc63d62p-56", "0x1.ec929a665b449p-15", "0x1.ce41339066098p-71"),
    ("0x1.fffef1960d85dp-1", "-0x1.f7cc780a237bap-55", "0x1.be6abbb10a5aap-15", "-0x1.d55324bec8058p-70"),
    ("0x1.ffff0c273bea2p-1", "-0x1.958a61ba7f1c7p-55", "0x1.94637d5bacfdbp-15", "0x1.c71ddec97b4b1p-69"),
    ("0x1.ffff2436a21dcp-1", "-0x1.3607959a29d36p-55", "0x1.6e2367dc27f95p-15", "0x1.d96e6f01510e8p-73"),
    ("0x1.ffff39fe16963p-1", "0x1.dcc9930c544a9p-55", "0x1.4b581b8d170fcp-15", "0x1.bca840dc03999p-72"),
    ("0x1.ffff4db27f146p-1", "0x1.ddecdd6d729f6p-55", "0x1.2bb5cc22e5db6p-15", "0x1.cf310d40124b4p-70"),
    ("0x1.ffff5f8435efcp-1", "-0x1.0f8e142196474p-55", "0x1.0ef6c4c84a0fep-15", "-0x1.bbe314a241bc0p-70"),
    ("0x1.ffff6f9f67e55p-1", "0x1.e1e4483ba034bp-55", "0x1.e9b5e8d00ce77p-16", "-0x1.cbbe2ecd1cfacp-70"),
    ("0x1.ffff7e2c6aea2p-1", "0x1.1fce987763fffp-57", "0x1.ba4f035d60e03p-16", "-0x1.f9311aeeacbacp-70"),
    ("0x1.ffff8b500e77cp-1", "-0x1.1014e1f7cc69bp-56", "0x1.8f4ccca7fc90dp-16", "0x1.abd191ae3a6b6p-70"),
    ("0x1.ffff972be5c59p-1", "-0x1.139d1094c43c2p-56", "0x1.684c227fcacefp-16", "-0x1.c8e4f8caa2a9ep-72"),
    ("0x1.ffffa1de8c582p-1", "0x1.832540129302ap-55", "0x1.44f21e49054f2p-16", "0x1.f338cf40864d8p-71"),
    ("0x1.ffffab83e54b8p-1", "-0x1.c98680d91063cp-56", "0x1.24eb7254ccf83p-16", "-0x1.4980e15cefec3p-73"),
    ("0x1.ffffb43555b5fp-1", "0x1.c17f83c5c2d0ap-55", "0x1.07ebd2a2d2844p-16", "0x1.d4c9601aed79dp-70"),
    ("0x1.ffffbc09fa7cdp-1", "0x1.6b5ff6f51f4dap-55", "0x1.db5ad0b27805cp-17", "0x1.5ec16cae3e090p-73"),
    ("0x1.ffffc316d9ed0p-1", "-0x1.8b32f44f46b3bp-55", "0x1.abe09e9144b5ep-17", "0x1.308300923fe4bp-71"),
    ("0x1.ffffc96f1165ep-1", "0x1.c6ea98bc57de1p-58", "0x1.80f439b4ee04bp-17", "-0x1.90e97c10e404dp-71"),
    ("0x1.ffffcf23ff5fcp-1", "-0x1.b18a8b1c01178p-55", "0x1.5a2adfa0b4bc4p-17", "0x1.ecd7762ee8dc5p-71"),
    ("0x1.ffffd4456a10dp-1", "-0x1.06a8bce07afa3p-56", "0x1.37231085c7d9ap-17", "0x1.20e841344bfa5p-71"),
    ("0x1.ffffd8e1a2f22p-1", "-0x1.c10adf6b19989p-55", "0x1.1783ceac28910p-17", "-0x1.7f19d8ee582e5p-71"),
    ("0x1.ffffdd05a75eap-1", "-0x1.5fd7804d1e0b6p-55", "0x1.f5f7d88472604p-18", "0x1.ecdf562be86a3p-74"),
    ("0x1.ffffe0bd3e852p-1", "-0x1.d7ece48eb2a50p-58", "0x1.c282cd3957edap-18", "0x1.e4da3e366c253p-73"),
    ("0x1.ffffe41314e06p-1", "0x1.4986c4af81b1ap-58", "0x1.94219bfcb4928p-18", "0x1.8fc5436dc0880p-73"),
    ("0x1.ffffe710d565ep-1", "0x1.c9ea52d76dc04p-55", "0x1.6a597219a93dap-18", "-0x1.cbf8fbc2cd5cdp-72"),
    ("0x1.ffffe9bf4098cp-1", "-0x1.4c976a857e98dp-55", "0x1.44ba864670882p-18", "-0x1.28bc96edb220fp-72"),
    ("0x1.ffffec2641a9ep-1", "-0x1.e7ba4fdd8fb93p-55", "0x1.22df298214423p-18", "-0x1.c3cdb97661c84p-74"),
    ("0x1.ffffee4d01cd6p-1", "0x1.b8a91e1c9bdd6p-55", "0x1.046aeabcfcdecp-18", "0x1.bb872234fa8b1p-75"),
    ("0x1.fffff039f9e8fp-1", "-0x1.9d1bcd6174e99p-55", "0x1.d21397ead99cbp-19", "-0x1.6abd9c029cf89p-75"),
    ("0x1.fffff1f302bc1p-1", "0x1.c80524fbfc18ep-58", "0x1.a0df0f0c626dcp-19", "-0x1.46be12a6a34d7p-75"),
    ("0x1.fffff37d63a36p-1", "-0x1.753e324286e6bp-57", "0x1.74adc8f4064d3p-19", "0x1.cc96a70e09a7ep-73"),
    ("0x1.fffff4dde0118p-1", "0x1.e79b243dc294ap-55", "0x1.4d0231928c6f9p-19", "0x1.3bfae1ec6d93ap-73"),
    ("0x1.fffff618c3da6p-1", "-0x1.19309ce23aa3ep-58", "0x1.296a70f414053p-19", "0x1.036e65808a17dp-74"),
    ("0x1.fffff731ee681p-1", "0x1.5e8f005916c79p-55", "0x1.097f6156f32c5p-19", "-0x1.67335d934e0b7p-73"),
    ("0x1.fffff82cdcf1bp-1", "0x1.046bbe9a11838p-55", "0x1.d9c73698fb1dcp-20", "0x1.62bcf64914aeep-74"),
    ("0x1.fffff90cb3c81p-1", "0x1.4f72693547781p-58", "0x1.a6852c6b58392p-20", "-0x1.d276532cb1c57p-76"),
    ("0x1.fffff9d446cccp-1", "-0x1.bb06bab98bc7ep-57", "0x1.789fb715aae95p-20", "-0x1.226d93bf88ff6p-80"),
    ("0x1.fffffa8621251p-1", "0x1.6f6c856a87204p-58", "0x1.4f8c96f26a26ap-20", "0x1.06d0d45276c52p-74"),
    ("0x1.fffffb248c39dp-1", "0x1.9b9a417112087p-55", "0x1.2acee2f5ecdb8p-20", "-0x1.c2bfa5bb67965p-76"),
    ("0x1.fffffbb196132p-1", "0x1.ee2aa361e7befp-61", "0x1.09f5cf4dd2877p-20", "-0x1.c4e07301db64bp-75"),
    ("0x1.fffffc2f171e3p-1", "0x1.85edd0395f475p-55", "0x1.d9371e2ff7c35p-21", "0x1.0aed0951e078dp-75"),
    ("0x1.fffffc9eb76acp-1", "-0x1.7833edaf09bb3p-55", "0x1.a4c89e08ef4f3p-21", "0x1.3302e208d04abp-75"),
    ("0x1.fffffd01f36afp-1", "-0x1.d41915db16d51p-55", "0x1.75fa8dbc84becp-21", "0x1.1dc5af5b9be82p-76"),
    ("0x1.fffffd5a2041fp-1", "0x1.f32dfc3e826fep-56", "0x1.4c37c0394d094p-21", "0x1.9188b4fd67056p-76"),
    ("0x1.fffffda86faa9p-1", "-0x1.d230252d68f25p-56", "0x1.26f9df8519bd7p-21", "-0x1.e339871c01768p-75"),
    ("0x1.fffffdedf37edp-1", "0x1.c96955451d4a7p-55", "0x1.05c803e4831c1p-21", "-0x1.201cd15e465c7p-76"),
    ("0x1.fffffe2ba0ea5p-1", "-0x1.26cd790893493p-55", "0x1.d06ad6ecdf971p-22", "-0x1.79f22c5e2cfe0p-76"),
    ("0x1.fffffe62534d4p-1", "-0x1.0cbbd08333ea2p-55", "0x1.9bc09f112b494p-22", "0x1.1dd46eb2333c5p-78"),
    ("0x1.fffffe92ced93p-1", "-0x1.d2db2ecfe14aep-55", "0x1.6ce1aa3fd7bddp-22", "0x1.bf15b0bc56aabp-80"),
    ("0x1.fffffebdc2ec6p-1", "-0x1.db9f07a079e23p-56", "0x1.43302cc4a0da8p-22", "0x1.537abe3ea9523p-77"),
    ("0x1.fffffee3cc32cp-1", "0x1.e429188c25b27p-56", "0x1.1e1e857adc568p-22", "0x1.7f07f5c70a777p-77"),
    ("0x1.ffffff0576917p-1", "0x1.491891c992670p-55", "0x1.fa5b4f49cc6b2p-23", "-0x1.6dcf7229e0700p-80"),
    ("0x1.ffffff233ee1dp-1", "0x1.db123ed17221dp-55", "0x1.bfd7555a3bd68p-23", "0x1.0151cf177a911p-77"),
    ("0x1.ffffff3d9480fp-1", "0x1.4928d98b29f3dp-55", "0x1.8be4f8f6c951fp-23", "-0x1.d0085063d8ae3p-78"),
    ("0x1.ffffff54dab72p-1", "-0x1.a443df641c094p-55", "0x1.5dcd669f2cd34p-23", "-0x1.8c93c8388eeacp-77"),
    ("0x1.ffffff6969fb8p-1", "-0x1.3d7d710423300p-55", "0x1.34ecf8a3c124ap-23", "0x1.ce402dd5c93b0p-77"),
    ("0x1.ffffff7b91176p-1", "0x1.0b2865615db40p-56", "0x1.10b1488aeb235p-23", "-0x1.cd75b4828c0c0p-81"),
    ("0x1.ffffff8b962bep-1", "0x1.a5738c0ebfeb2p-55", "0x1.e12ee004efc37p-24", "0x1.0d14ee4fd811fp-78"),
    ("0x1.ffffff99b79d2p-1", "-0x1.58ff1c4273d76p-56", "0x1.a854ea14102a8p-24", "0x1.d756dfb96dcb5p-78"),
    ("0x1.ffffffa62ce54p-1", "0x1.9f27ae54af29bp-55", "0x1.7603bac345f65p-24", "0x1.3173659cce12ep-78"),
    ("0x1.ffffffb127525p-1", "0x1.504f382db4102p-55", "0x1.4980cb3c80949p-24", "0x1.7fbdd923f82b7p-78"),
    ("0x1.ffffffbad2affp-1", "-0x1.7a22d4f92b23ap-58", "0x1.2225b12bffc68p-24", "-0x1.acff58d445660p-78"),
    ("0x1.ffffffc355dfdp-1", "0x1.88cb60fd8541cp-57", "0x1.febc107d5efaap-25", "0x1.ed6e77904ae4ap-79"),
    ("0x1.ffffffcad3626p-1", "-0x1.aa7cc1ccf12bfp-55", "0x1.c14b2188bcee4p-25", "-0x1.2f1e8301287cap-79"),
    ("0x1.ffffffd169d0cp-1", "0x1.70a2bfb068e6fp-55", "0x1.8b0cfce0579e0p-25", "-0x1.e8bad9967ec2cp-79"),
    ("0x1.ffffffd7344aap-1", "0x1.aba71432b166dp-59", "0x1.5b2fe547a1340p-25", "-0x1.5d861b903aaf0p-79"),
    ("0x1.ffffffdc4ad7ap-1", "-0x1.d75de78779663p-55", "0x1.30f93c3699078p-25", "0x1.fd6cacd0635f1p-79"),
    ("0x1.ffffffe0c2bf0p-1", "-0x1.9e22663454f4dp-56", "0x1.0bc30c5d52f15p-25", "-0x1.b0139ed872824p-81"),
    ("0x1.ffffffe4aed5ep-1", "0x1.389c0f32ad0f4p-59", "0x1.d5f3a8dea7357p-26", "0x1.fa07c18622d49p-80"),
    ("0x1.ffffffe81fc4ep-1", "0x1.9c9463f1358d1p-56", "0x1.9c3517e789488p-26", "-0x1.70c968eedceeep-80"),
    ("0x1.ffffffeb24467p-1", "0x1.bff89ef337f19p-55", "0x1.6961b8d641d06p-26", "0x1.663e70a0c217fp-81"),
    ("0x1.ffffffedc95e7p-1", "-0x1.efc2e68b9218dp-55", "0x1.3cab1343d18d1p-26", "-0x1.5eb07261e93c8p-81"),
    ("0x1.fffffff01a8b6p-1", "0x1.23370eca5ca6ap-60", "0x1.155a09065d4f7p-26", "-0x1.7c5d6c7140f80p-81"),
    ("0x1.fffffff221f30p-1", "-0x1.160a69e4b8d11p-57", "0x1.e59890b926c78p-27", "-0x1.04aead94841cep-83"),
    ("0x1.fffffff3e8892p-1", "0x1.befbf8d26e5c1p-58", "0x1.a8e405e651ab6p-27", "0x1.689423f4c72d6p-81"),
    ("0x1.fffffff57632dp-1", "0x1.933c09746690ep-59", "0x1.7397c5a66e307p-27", "-0x1.6f5b55a63182cp-81"),
    ("0x1.fffffff6d1e56p-1", "-0x1.64d969b4be4c4p-55", "0x1.44d26de513197p-27", "0x1.76fc20fc4c506p-81"),
    ("0x1.fffffff801c1fp-1", "-0x1.0635441b427abp-57", "0x1.1bcca373b7b43p-27", "0x1.dd1835eaeddefp-82"),
    ("0x1.fffffff90b2e3p-1", "-0x1.d82d94a90edd4p-56", "0x1.efac5187b2863p-28", "0x1.04c8e898d9d83p-82"),
    ("0x1.fffffff9f2e9fp-1", "-0x1.8c4438d4ec525p-55", "0x1.b0a68a2128babp-28", "0x1.6dda4730171dfp-88"),
    ("0x1.fffffffabd229p-1", "-0x1.4dbe49bec3ef2p-57", "0x1.7974e743dea3dp-28", "-0x1.b6101ddd90bdbp-82"),
    ("0x1.fffffffb6d844p-1", "-0x1.c3be81714336cp-55", "0x1.4924a74dec729p-28", "-0x1.fa680b1dbcf23p-82"),
    ("0x1.fffffffc0748fp-1", "0x1.6ef7a9caf1ec9p-57", "0x1.1edfa3c5f5ccap-28", "0x1.c7aed7e43e6aep-82"),
    ("0x1.fffffffc8d462p-1", "0x1.0c956dab6393bp-55", "0x1.f3d2185e047d9p-29", "0x1.115fc3364104ap-85"),
    ("0x1.fffffffd01f89p-1", "-0x1.35e8e39884f62p-56", "0x1.b334fac4b9f99p-29", "0x1.32178ed1a6c0dp-83"),
    ("0x1.fffffffd678edp-1", "-0x1.f4d65c15aa10cp-55", "0x1.7ac2d72fc2c63p-29", "-0x1.a56ac4529c564p-88"),
    ("0x1.fffffffdbff2ap-1", "0x1.49438981074bfp-56", "0x1.4979ac8b28927p-29", "-0x1.bdd799e818c24p-83"),
    ("0x1.fffffffe0cd16p-1", "-0x1.5aae916adb216p-60", "0x1.1e767bce37dd7p-29", "-0x1.b00b63ad7af11p-89"),
    ("0x1.fffffffe4fa30p-1", "0x1.d166bcb681c7bp-57", "0x1.f1e3523b41d7dp-30", "-0x1.7303536c50b37p-84"),
    ("0x1.fffffffe89b0cp-1", "-0x1.b3c67e6ecd407p-55", "0x1.b0778b7b3301bp-30", "-0x1.d0ee5e3456a8cp-84"),
    ("0x1.fffffffebc1a9p-1", "0x1.e0e5facabea72p-56", "0x1.77756ec9f78fap-30", "-0x1.2a127fa4733d0p-85"),
    ("0x1.fffffffee7dc8p-1", "-0x1.7a5e9272ba8a9p-58", "0x1.45ce65699ff6dp-30", "-0x1.0d57eef99332cp-84"),
    ("0x1.ffffffff0dd2bp-1", "0x1.0df73e7d2fc98p-55", "0x1.1a94ff571654fp-30", "0x1.fbf537b47ce6dp-84"),
    ("0x1.ffffffff2ebdap-1", "-0x1.7058639b1a62cp-55", "0x1.e9f1ff8ddd774p-31", "0x1.c4b4548d77f8ep-87"),
    ("0x1.ffffffff4b453p-1", "0x1.59b25048a5adap-55", "0x1.a887bd2b4404dp-31", "0x1.2dbd32d35c344p-88"),
    ("0x1.ffffffff63fc3p-1", "-0x1.6a286d4ff4020p-55", "0x1.6fab63324088ap-31", "0x1.d3b2ece0c8ba3p-85"),
    ("0x1.ffffffff79626p-1", "0x1.5fbc52d650a89p-55", "0x1.3e44e45301b92p-31", "0x1.1a5c00d13a5f2p-85"),
    ("0x1.ffffffff8be77p-1", "0x1.616bae25c2bcdp-60", "0x1.135f28f2d50b4p-31", "0x1.ba867e22d8ad2p-85"),
    ("0x1.ffffffff9bec8p-1", "-0x1.6755054655a1bp-56", "0x1.dc479de0ef001p-32", "0x1.b83cde4e35035p-93"),
    ("0x1.ffffffffa9c63p-1", "0x1.67507826b9369p-55", "0x1.9baed3ed27ab8p-32", "0x1.51026850d38f8p-86"),
    ("0x1.ffffffffb5be5p-1", "-0x1.729d6819c7f34p-56", "0x1.63ac6b4edc88ep-32", "-0x1.c45991834a34fp-88"),
    ("0x1.ffffffffc014ep-1", "0x1.2a586ac34794fp-55", "0x1.332259185f1a0p-32", "-0x1.88fc3436fadefp-86"),
    ("0x1.ffffffffc901cp-1", "0x1.9c951c943881dp-57", "0x1.0916f04b6e18bp-32", "0x1.bbe7caa97f958p-86"),
    ("0x1.ffffffffd0b56p-1", "-0x1.e07628b697d2dp-57", "0x1.c960bf23153e0p-33", "0x1.2808777f6a7e4p-88"),
    ("0x1.ffffffffd759dp-1", "0x1.f7bee7eb23420p-55", "0x1.8a61745ec7d1dp-33", "0x1.9d509f787b50ep-88"),
    ("0x1.ffffffffdd13cp-1", "0x1.e1648f0df215ap-58", "0x1.53e4f7d1666cbp-33", "0x1.2edabee98dca9p-87"),
    ("0x1.ffffffffe202dp-1", "0x1.a54841f5667f2p-55", "0x1.24caf2c32af14p-33", "0x1.8ac2421efcbbdp-93"),
    ("0x1.ffffffffe642ap-1", "0x1.02d3f0eaa59dfp-57", "0x1.f830c0bb41fd7p-34", "-0x1.097e0d6a3fa97p-91"),
    ("0x1.ffffffffe9eb0p-1", "-0x1.ea527e0bef1ecp-58", "0x1.b1e5acf351d87p-34", "0x1.dc96583bc1d87p-90"),
    ("0x1.ffffffffed10ap-1", "0x1.f9b89afb31a32p-62", "0x1.7538c60a04476p-34", "-0x1.2ba6b20e688aep-88"),
    ("0x1.ffffffffefc57p-1", "-0x1.8225a9658f48dp-57", "0x1.40dfd87456f4cp-34", "-0x1.5aa325d2e2aadp-88"),
    ("0x1.fffffffff218fp-1", "-0x1.a8bedc5d782a6p-56", "0x1.13bc07e891491p-34", "-0x1.c21d5b6608401p-90"),
    ("0x1.fffffffff4188p-1", "0x1.7a2cb3d056eacp-55", "0x1.d9a880f306bd8p-35", "-0x1.fbec4689ff1dap-94"),
    ("0x1.fffffffff5cfdp-1", "0x1.3e2f7c50e0e06p-55", "0x1.96a0b33f2c4dap-35", "-0x1.d981d939794fap-91"),
    ("0x1.fffffffff748ep-1", "0x1.ae15e3604479fp-57", "0x1.5ce9ab1670dd2p-35", "0x1.653f146b401aap-89"),
    ("0x1.fffffffff88c5p-1", "0x1.98f6f87e6cbf0p-55", "0x1.2b3e53538ff3fp-35", "0x1.c6645647b37dep-89"),
    ("0x1.fffffffff9a1bp-1", "-0x1.6a87270d2450ep-57", "0x1.0084ff125639dp-35", "-0x1.8ad61debea5dfp-90"),
    ("0x1.fffffffffa8f6p-1", "-0x1.3e4c35b0f6472p-58", "0x1.b7937d1c40c53p-36", "-0x1.fd0e3624d6545p-90"),
    ("0x1.fffffffffb5b0p-1", "-0x1.50fb1911906e4p-55", "0x1.7872d9fa10aadp-36", "-0x1.3a4dd6733fd69p-91"),
    ("0x1.fffffffffc095p-1", "-0x1.f4521a86cdbabp-57", "0x1.423ac0df49a40p-36", "-0x1.708764a12c6d7p-90"),
    ("0x1.fffffffffc9e8p-1", "-0x1.a759f7738935fp-56", "0x1.13af4f04f9998p-36", "-0x1.0532e647cd418p-90"),
    ("0x1.fffffffffd1e1p-1", "0x1.c5dc651ea7d57p-55", "0x1.d77f0c82e7641p-37", "-0x1.3c0e1b157ac24p-92"),
    ("0x1.fffffffffd8b3p-1", "-0x1.5182469c21372p-57", "0x1.92ff33023d5bdp-37", "-0x1.3b885f5219931p-91"),
    ("0x1.fffffffffde86p-1", "0x1.d0167871192e0p-55", "0x1.5847eda620959p-37", "-0x1.26afba522de28p-91"),
    ("0x1.fffffffffe380p-1", "0x1.7ce07114e4fe0p-55", "0x1.25f9ee0b923dcp-37", "-0x1.174c43a738d83p-91"),
    ("0x1.fffffffffe7c0p-1", "-0x1.b5336a8a00d3cp-57", "0x1.f5cc7718082b0p-38", "-0x1.d3bcf13735396p-92"),
    ("0x1.fffffffffeb60p-1", "-0x1.4d3f53e684c68p-56", "0x1.ac0f5f3229372p-38", "0x1.068126c0d1c5ap-93"),
    ("0x1.fffffffffee77p-1", "0x1.dd4e791d69b94p-56", "0x1.6cfa9bcca59dcp-38", "-0x1.17e966768a127p-98"),
    ("0x1.ffffffffff11ap-1", "-0x1.3eafccbc6e8b7p-56", "0x1.370ab8327af5ep-38", "-0x1.1cdf083ee84bcp-92"),
    ("0x1.ffffffffff359p-1", "-0x1.80d81fe53da06p-55", "0x1.08f24085d4597p-38", "-0x1.4825af8f7802dp-93"),
    ("0x1.ffffffffff542p-1", "0x1.b57ed63ed8087p-57", "0x1.c324c20e337dcp-39", "0x1.0c30f0e77a53dp-94"),
    ("0x1.ffffffffff6e3p-1", "-0x1.032fa4c0fcc60p-55", "0x1.7fe903cdf5855p-39", "0x1.8837cdb6471ddp-93"),
    ("0x1.ffffffffff845p-1", "0x1.b0edc5a89ab8fp-56", "0x1.46897d4b69fc6p-39", "0x1.a74852413b364p-93"),
    ("0x1.ffffffffff973p-1", "-0x1.7936adf17a8ccp-55", "0x1.159a386b11517p-39", "-0x1.8cc3efd744649p-95"),
    ("0x1.ffffffffffa73p-1", "-0x1.6fead614b795fp-56", "0x1.d7c593130dd0bp-40", "-0x1.8a4957ba7ce5bp-94"),
    ("0x1.ffffffffffb4cp-1", "0x1.d5c96fa89483dp-55", "0x1.90ae4d3405651p-40", "0x1.b6da6a71949d3p-94"),
    ("0x1.ffffffffffc05p-1", "0x1.07ba96a6b2e1ap-55", "0x1.5422ef5d8949dp-40", "0x1.ff62258857350p-96"),
    ("0x1.ffffffffffca2p-1", "0x1.863ea455102bbp-57", "0x1.20997f73e73ddp-40", "-0x1.dd8848f6b672bp-95"),
    ("0x1.ffffffffffd27p-1", "0x1.19e1a84064c3cp-56", "0x1.e9810295890ecp-41", "0x1.9912b599ae194p-99"),
    ("0x1.ffffffffffd98p-1", "-0x1.ed675ca96bb83p-58", "0x1.9eee068fa7596p-41", "0x1.40dc1a1747ceep-95"),
    ("0x1.ffffffffffdf8p-1", "-0x1.dcf8b10ff973bp-55", "0x1.5f8b87a31bd85p-41", "0x1.65b26542e9e5ap-98"),
    ("0x1.ffffffffffe49p-1", "-0x1.f972f57451ddbp-55", "0x1.29b2933ef4cbcp-41", "0x1.84cadcb156904p-99"),
    ("0x1.ffffffffffe8dp-1", "0x1.e766e2c80135cp-58", "0x1.f7f338086a86bp-42", "-0x1.3ce2352271ce2p-97"),
    ("0x1.ffffffffffec7p-1", "0x1.1e84eafe7e3a3p-57", "0x1.aa577251ae485p-42", "-0x1.c25d785d38cfep-96"),
    ("0x1.ffffffffffef8p-1", "0x1.14be6226402c7p-56", "0x1.68823e52970bep-42", "0x1.24038ae49efbdp-98"),
    ("0x1.fffffffffff22p-1", "-0x1.8b1db5aaab19dp-55", "0x1.30b14dbe876bcp-42", "-0x1.c36573e960393p-99"),
    ("0x1.fffffffffff45p-1", "-0x1.5948eec884dfap-55", "0x1.01647ba798745p-42", "-0x1.c882a4e6915e9p-96"),
    ("0x1.fffffffffff62p-1", "0x1.0ddce7ed0bd09p-55", "0x1.b2a87e86d0c8ap-43", "-0x1.4a9de142e6d8fp-97"),
    ("0x1.fffffffffff7bp-1", "0x1.00fa07f7fb612p-55", "0x1.6ed2f2515e933p-43", "0x1.2bc1802866176p-98"),
    ("0x1.fffffffffff90p-1", "0x1.55c293eaafbfap-55", "0x1.356cd5ce7799ep-43", "-0x1.5d00bec369114p-99"),
    ("0x1.fffffffffffa2p-1", "0x1.d07509a1a9433p-57", "0x1.04e15ecc7f3f6p-43", "-0x1.2eb49b373aeeap-98"),
    ("0x1.fffffffffffb1p-1", "0x1.99f34d0408a44p-57", "0x1.b7b040832f310p-44", "-0x1.085b7c2cc48b6p-98"),
    ("0x1.fffffffffffbep-1", "-0x1.182b326b228dcp-55", "0x1.7258610b3b233p-44", "-0x1.60bc7761ca394p-101"),
    ("0x1.fffffffffffc8p-1", "0x1.6f819e244948bp-55", "0x1.37c92babdc2fdp-44", "-0x1.652a2342609bfp-100"),
    ("0x1.fffffffffffd1p-1", "0x1.3b6fc0b729758p-55", "0x1.065b9616170d4p-44", "0x1.efa64745fee8ep-100"),
    ("0x1.fffffffffffd9p-1", "-0x1.4e7a2ac9fc6c2p-56", "0x1.b950d32467392p-45", "0x1.57f334346411dp-100"),
    ("0x1.fffffffffffdfp-1", "0x1.5669e670f914bp-56", "0x1.72fd93e036cdcp-45", "0x1.1c553d0f2268ep-100"),
    ("0x1.fffffffffffe4p-1", "0x1.f35c4733d45a0p-55", "0x1.37b83c521fe96p-45", "0x1.202c524adea10p-99"),
    ("0x1.fffffffffffe9p-1", "-0x1.5fe91226dd51ap-58", "0x1.05ca50205d26ap-45", "0x1.8d1357ae99b8bp-101"),
    ("0x1.fffffffffffedp-1", "-0x1.294f382eedbdcp-55", "0x1.b7807e294781fp-46", "0x1.d1a257354ca87p-100"),
    ("0x1.ffffffffffff0p-1", "-0x1.20ef3618f2d54p-56", "0x1.70beaf9c7ffb6p-46", "-0x1.b0d0718f5cfd3p-103"),
    ("0x1.ffffffffffff3p-1", "-0x1.ff720da15c121p-55", "0x1.353a6cf7f7fffp-46", "-0x1.115d27673bdcap-101"),
    ("0x1.ffffffffffff5p-1", "-0x1.238f8ed17d9b4p-55", "0x1.0330f0fd69921p-46", "-0x1.0991a941d7ddcp-103"),
    ("0x1.ffffffffffff7p-1", "-0x1.b71952012122fp-55", "0x1.b24a16b4d09aap-47", "0x1.abb1e4afd8b4ep-101"),
    ("0x1.ffffffffffff8p-1", "0x1.0160ef15c497dp-56", "0x1.6ba91ac734786p-47", "-0x1.f81d6faa99c8dp-101"),
    ("0x1.ffffffffffff9p-1", "0x1.b549b8f3e3a41p-55", "0x1.305e9721d0981p-47", "-0x1.a151554c592bfp-101"),
    ("0x1.ffffffffffffbp-1", "-0x1.efa4d64f59f62p-55", "0x1.fd3de10d62855p-48", "-0x1.34eff8863b62cp-102"),
    ("0x1.ffffffffffffbp-1", "0x1.b4f28c97f891bp-55", "0x1.a9cc93c25aca9p-48", "0x1.9a18b3db5649ap-103"),
    ("0x1.ffffffffffffcp-1", "0x1.8115fd1b12786p-56", "0x1.63daf8b4b1e0cp-48", "0x1.f38800a69fe98p-105"),
    ("0x1.ffffffffffffdp-1", "-0x1.6826d9e903415p-56", "0x1.294175802d99ap-48", "-0x1.857ea29dd67e6p-102"),
    ("0x1.ffffffffffffdp-1", "0x1.6be96953fe014p-55", "0x1.f05e82aae2bb9p-49", "-0x1.ac715598d402cp-105"),
    ("0x1.ffffffffffffep-1", "-0x1.9c050c56d0d6fp-56", "0x1.9e39dc5dd2f7cp-49", "0x1.13864eaa9cb0ap-106"),
    ("0x1.ffffffffffffep-1", "0x1.59ab24e589a30p-56", "0x1.5982008db1304p-49", "-0x1.1cf9bdada0bfep-103"),
    ("0x1.ffffffffffffep-1", "0x1.e8c14d22e2039p-55", "0x1.200c898d9ee3ep-49", "-0x1.3d9def9da318cp-103"),
    ("0x1.fffffffffffffp-1", "-0x1.0fecc5ed770dep-55", "0x1.e00e9148a1d25p-50", "0x1.9eb16e219d469p-105"),
    ("0x1.fffffffffffffp-1", "-0x1.a4702e8f38ceap-58", "0x1.8fd4e01891bf8p-50", "-0x1.88867c9b72170p-107"),
    ("0x1.fffffffffffffp-1", "0x1.0439397b5f70ap-56", "0x1.4cd9c04158cd7p-50", "0x1.533947579e54dp-104"),
    ("0x1.fffffffffffffp-1", "0x1.1a2438902abb6p-55", "0x1.14f4890ff2461p-50", "-0x1.6ad3eb0aa15fbp-104"),
    ("0x1.fffffffffffffp-1", "0x1.989c6c5d51227p-55", "0x1.ccaaea71ab0dfp-51", "0x1.1b6a23ea822c6p-105"),
    ("0x1.0000000000000p+0", "-0x1.fe3bcf4629feap-55", "0x1.7eef13b59e96cp-51", "0x1.d260149d4ebf7p-105"),
    ("0x1.0000000000000p+0", "-0x1.a6d7d18831888p-55", "0x1.3e296303b2297p-51", "0x1.68cf6480a3817p-105"),
)

# Taylor coefficients (-1)**n / (n! (2n+1)), n = 1..8, of erf(x) / (2/sqrt(pi) x) in x**2.
_ERF_SMALL: Final[tuple[float, ...]] = (
    float.fromhex("-0x1.5555555555555p-2"),
    float.fromhex("0x1.999999999999ap-4"),
    float.fromhex("-0x1.8618618618618p-6"),
    float.fromhex("0x1.2f684bda12f68p-8"),
    float.fromhex("-0x1.8d3018d3018d3p-11"),
    float.fromhex("0x1.c01c01c01c01cp-14"),
    float.fromhex("-0x1.bbd779334ef0bp-17"),
    float.fromhex("0x1.87a00187a0018p-20"),
)


def _build_trig_tables() -> tuple[Array, Array, Array, Array]:
    """U = sin(q pi/2 + j/64) and V = cos(q pi/2 + j/64) for q = 0..3, j = -51..51, as
    double-doubles laid out at index q * 103 + j + 51 (only negations of the stored nodes)."""
    node = [[float.fromhex(h) for h in row] for row in _SIN_COS_NODES]
    js = range(-_J_MAX, _J_MAX + 1)
    s_hi = [node[j][0] if j >= 0 else -node[-j][0] for j in js]
    s_lo = [node[j][1] if j >= 0 else -node[-j][1] for j in js]
    c_hi = [node[abs(j)][2] for j in js]
    c_lo = [node[abs(j)][3] for j in js]

    def neg(v: list[float]) -> list[float]:
        return [-e for e in v]

    u_hi = np.array(s_hi + c_hi + neg(s_hi) + neg(c_hi), dtype=_F64)
    u_lo = np.array(s_lo + c_lo + neg(s_lo) + neg(c_lo), dtype=_F64)
    v_hi = np.array(c_hi + neg(s_hi) + neg(c_hi) + s_hi, dtype=_F64)
    v_lo = np.array(c_lo + neg(s_lo) + neg(c_lo) + s_lo, dtype=_F64)
    return u_hi, u_lo, v_hi, v_lo


def _build_erf_tables() -> list[Array]:
    """Per node: erf(c) (hi, lo), a[1] (hi, lo) and a[2..8], the Taylor coefficients of
    erf(c + t) in t.

    With g = erf'(c + t) = sum g[n] t**n, g' = -2 (c + t) g gives
    (n + 1) g[n + 1] = -2 c g[n] - 2 g[n - 1], and a[n + 1] = g[n] / (n + 1). Only a[1] = g[0]
    (tabulated as a double-double) weighs as much as 2**-4 of the result; a[2] t**2 is below
    2**-12 of it, so the rounding of the recurrence in a[2..8] stays invisible.
    """
    node = np.array([[float.fromhex(h) for h in row] for row in _ERF_NODES], dtype=_F64)
    c = np.array(range(_ERF_NODE_FIRST, _ERF_NODE_LAST + 1), dtype=_F64) * 0.015625
    g = [node[:, 2], -2.0 * c * node[:, 2]]
    for n in range(1, _ERF_DEGREE - 1):
        g.append((-2.0 * c * g[n] - 2.0 * g[n - 1]) / float(n + 1))
    tables = [node[:, 0].copy(), node[:, 1].copy(), node[:, 2].copy(), node[:, 3].copy()]
    return tables + [g[n] / float(n + 1) for n in range(1, _ERF_DEGREE)]


_U_HI, _U_LO, _V_HI, _V_LO = _build_trig_tables()
_ERF_E_HI, _ERF_E_LO, _ERF_A1_HI, _ERF_A1_LO, *_ERF_AN = _build_erf_tables()
# Payne-Hanek: the exponent e in [-32, 971] as 24 q + s, 0 <= s < 24, and the 2/pi digits with
# three zero digits in front, so that index q + 2 + n never falls below 0.
_PH_Q: Final = np.array([(e + 48) // 24 - 2 for e in range(-32, 972)], dtype=np.int64)
_PH_S: Final = np.array([(e + 48) % 24 for e in range(-32, 972)], dtype=np.int64)
_PH_CHUNKS: Final = np.array((0, 0, 0, *_TWO_OVER_PI_CHUNKS), dtype=np.int64)
