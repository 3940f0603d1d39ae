"""Portable float64 exponentials: ``exp``, ``exp_dd``, ``expm1``, ``tanh``, ``erf_derivative``.

Contract:
- float64 arrays in (any shape, 0-d included), new float64 arrays of that shape out; the
  argument is never written; each result's bits depend on that element's bits alone;
- only operations IEEE 754 rounds exactly (``+ - * /``, comparisons, selections, ``rint``,
  float64 <-> int64 conversions, integer operations on the bits, table look-ups), so every
  machine computes the same bits. No libm, no SIMD transcendental, no fused multiply-add;
- C99 special values: ``exp(+-0) = 1``, ``exp(-inf) = +0``, ``exp(+inf) = +inf``,
  ``expm1(+-0) = +-0``, ``expm1(-inf) = -1``, ``tanh(+-0) = +-0``, ``tanh(+-inf) = +-1``,
  ``erf_derivative(+-inf) = +0``; NaN in gives NaN out; overflow gives ``+inf``; results
  that fall into the subnormals are rounded once (from a double-double), not twice.

Method (Tang's table-driven exponential):
- ``k = rint(x * 64/ln2)``, ``x = k * ln2/64 + r`` with ``|r| <= ln2/128``. ``ln2/64`` is
  held as ``STEP_HI + STEP_LO`` where ``STEP_HI`` has 36 significant bits, so ``k * STEP_HI``
  is exact for ``|k| < 2**17`` (every k that matters: ``|x| <= 800``) and ``x - k * STEP_HI``
  is exact (the two are within a factor of two); ``r`` is kept as a double-double whose
  error is below ``2**-78``.
- ``exp(r) - 1 = r + r*r*q(r)`` with ``q`` of degree 4: the polynomial interpolating
  ``(expm1(r) - r) / r**2`` at the 5 Chebyshev nodes of ``[-0.00542, 0.00542]``, computed
  with mpmath at 200 bits and rounded to doubles (error below ``2**-68`` relative to 1).
- ``2**(j/64)``, ``j = k mod 64``, comes from a 64-entry table of double-doubles
  ``(hi, lo)`` (each the round-to-nearest of ``2**(j/64)`` and of the remainder, from
  mpmath at 300 bits; ``tests/test_libm_expfamily.py`` re-derives it).
- ``exp(x) = 2**(k >> 6) * (T_hi + (T_lo + T_hi * p))``; the power of two goes into the
  exponent bits (exact) and only the last addition rounds noticeably. ``exp_dd`` folds
  the low word of its (exactly renormalized) argument into ``r``.
- ``expm1`` evaluates ``2**n * T * (1 + p) - 1`` as ``2**n * (T * (1 + p) - 2**-n)`` in
  double-double (exact ``T_hi - 2**-n`` and ``T_hi * r``), so there is no cancellation
  loss near 0; below ``|x| < 2**-54`` it returns ``x``.
- ``tanh(|x|) = -E / (2 + E)`` with ``E = expm1(-2|x|) = 2**n * Y`` kept as a double-double,
  computed as ``-Y / (2**(1-n) + Y)`` (exact denominator split, one correction step of a
  double-double division); ``tanh(x) = x`` below ``2**-28``, the sign restored at the end.
- ``erf_derivative(x) = 2/sqrt(pi) * exp(-x*x)``: ``x*x`` is split exactly (``two_prod``),
  its exponential taken as a double-double, and the product with the double-double
  ``2/sqrt(pi)`` rounded once.

Error bounds (``ERROR_BOUND_ULP``; ulp of the float64 binade of the true value, 2**-1074 in
the subnormals): measured on 10**7 arguments per function (mixed distributions: uniform,
log-uniform magnitudes, reduction boundaries, subnormal results, near overflow, random bit
patterns) against x87 long double, the maxima are exp 0.5132, exp_dd 0.5127, expm1 0.5068,
tanh 0.5068, erf_derivative 0.5112 ulp; the error before the final rounding, measured the
same way, stays below 0.015 ulp (a first-order count of the rounding errors allows at most
about 0.03 ulp for exp, exp_dd and erf_derivative, 0.04 for expm1 and tanh). The bounds
add margin to that. Details and commands: ``docs/libm-expfamily.md``.

Every map runs under ``np.errstate(all="ignore")`` and in blocks of 16384 elements (the
kernels are elementwise, so the blocking changes no bit; it keeps temporaries in cache).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from topos.kernels.libm.core import (
    TWO_OVER_SQRTPI_HI,
    TWO_OVER_SQRTPI_LO,
    blockwise,
    fast_two_sum,
    pow2,
    scale,
    two_prod,
    two_sum,
)

__all__ = ["ERROR_BOUND_ULP", "erf_derivative", "exp", "exp_dd", "expm1", "tanh"]

Array = np.ndarray[Any, Any]
F64 = np.float64

# Measured maxima (docs/libm-expfamily.md, 10**7 arguments each): 0.5132, 0.5127, 0.5068,
# 0.5068, 0.5112 ulp; the error before the final rounding stays below 0.015 ulp.
ERROR_BOUND_ULP: Final[dict[str, float]] = {
    "exp": 0.55,
    "exp_dd": 0.55,
    "expm1": 0.55,
    "tanh": 0.6,
    "erf_derivative": 0.55,
}

# 64/ln2 rounded to nearest, and ln2/64 = _STEP_HI + _STEP_LO (mpmath, 300 bits: _STEP_HI is
# ln2/64 rounded to 36 significant bits, _STEP_LO the remainder rounded to nearest; what is
# left over is -1.6e-30).
_INV_STEP: Final = float.fromhex("0x1.71547652b82fep+6")
_STEP_HI: Final = float.fromhex("0x1.62e42fefa0000p-7")
_STEP_LO: Final = float.fromhex("0x1.cf79abc9e3b3ap-46")
_MINUS_STEP_LO: Final = -_STEP_LO

# (expm1(r) - r) / r**2 ~ _Q0 + r*(_Q1 + r*(_Q2 + r*(_Q3 + r*_Q4))) on |r| <= 0.00542
# (interpolation at the 5 Chebyshev nodes, mpmath at 200 bits, rounded to nearest).
_Q0: Final = float.fromhex("0x1.0000000000000p-1")
_Q1: Final = float.fromhex("0x1.5555555554dcep-3")
_Q2: Final = float.fromhex("0x1.5555555555191p-5")
_Q3: Final = float.fromhex("0x1.111120b67c939p-7")
_Q4: Final = float.fromhex("0x1.6c16d111822e8p-10")


# The smallest subnormal, 2**-1074.
_TINY: Final = float.fromhex("0x0.0000000000001p-1022")

# 2**(j/64) for j = 0..63 as (hi, lo): hi = round(2**(j/64)), lo = round(2**(j/64) - hi),
# from mpmath at 300 bits.
_EXP2_TABLE_HEX: Final[tuple[tuple[str, str], ...]] = (
    ("0x1.0000000000000p+0", "0x0.0p+0"),  # j = 0
    ("0x1.02c9a3e778061p+0", "-0x1.19083535b085dp-56"),  # j = 1
    ("0x1.059b0d3158574p+0", "0x1.d73e2a475b465p-55"),  # j = 2
    ("0x1.0874518759bc8p+0", "0x1.186be4bb284ffp-57"),  # j = 3
    ("0x1.0b5586cf9890fp+0", "0x1.8a62e4adc610bp-54"),  # j = 4
    ("0x1.0e3ec32d3d1a2p+0", "0x1.03a1727c57b53p-59"),  # j = 5
    ("0x1.11301d0125b51p+0", "-0x1.6c51039449b3ap-54"),  # j = 6
    ("0x1.1429aaea92de0p+0", "-0x1.32fbf9af1369ep-54"),  # j = 7
    ("0x1.172b83c7d517bp+0", "-0x1.19041b9d78a76p-55"),  # j = 8
    ("0x1.1a35beb6fcb75p+0", "0x1.e5b4c7b4968e4p-55"),  # j = 9
    ("0x1.1d4873168b9aap+0", "0x1.e016e00a2643cp-54"),  # j = 10
    ("0x1.2063b88628cd6p+0", "0x1.dc775814a8495p-55"),  # j = 11
    ("0x1.2387a6e756238p+0", "0x1.9b07eb6c70573p-54"),  # j = 12
    ("0x1.26b4565e27cddp+0", "0x1.2bd339940e9d9p-55"),  # j = 13
    ("0x1.29e9df51fdee1p+0", "0x1.612e8afad1255p-55"),  # j = 14
    ("0x1.2d285a6e4030bp+0", "0x1.0024754db41d5p-54"),  # j = 15
    ("0x1.306fe0a31b715p+0", "0x1.6f46ad23182e4p-55"),  # j = 16
    ("0x1.33c08b26416ffp+0", "0x1.32721843659a6p-54"),  # j = 17
    ("0x1.371a7373aa9cbp+0", "-0x1.63aeabf42eae2p-54"),  # j = 18
    ("0x1.3a7db34e59ff7p+0", "-0x1.5e436d661f5e3p-56"),  # j = 19
    ("0x1.3dea64c123422p+0", "0x1.ada0911f09ebcp-55"),  # j = 20
    ("0x1.4160a21f72e2ap+0", "-0x1.ef3691c309278p-58"),  # j = 21
    ("0x1.44e086061892dp+0", "0x1.89b7a04ef80d0p-59"),  # j = 22
    ("0x1.486a2b5c13cd0p+0", "0x1.3c1a3b69062f0p-56"),  # j = 23
    ("0x1.4bfdad5362a27p+0", "0x1.d4397afec42e2p-56"),  # j = 24
    ("0x1.4f9b2769d2ca7p+0", "-0x1.4b309d25957e3p-54"),  # j = 25
    ("0x1.5342b569d4f82p+0", "-0x1.07abe1db13cadp-55"),  # j = 26
    ("0x1.56f4736b527dap+0", "0x1.9bb2c011d93adp-54"),  # j = 27
    ("0x1.5ab07dd485429p+0", "0x1.6324c054647adp-54"),  # j = 28
    ("0x1.5e76f15ad2148p+0", "0x1.ba6f93080e65ep-54"),  # j = 29
    ("0x1.6247eb03a5585p+0", "-0x1.383c17e40b497p-54"),  # j = 30
    ("0x1.6623882552225p+0", "-0x1.bb60987591c34p-54"),  # j = 31
    ("0x1.6a09e667f3bcdp+0", "-0x1.bdd3413b26456p-54"),  # j = 32
    ("0x1.6dfb23c651a2fp+0", "-0x1.bbe3a683c88abp-57"),  # j = 33
    ("0x1.71f75e8ec5f74p+0", "-0x1.16e4786887a99p-55"),  # j = 34
    ("0x1.75feb564267c9p+0", "-0x1.0245957316dd3p-54"),  # j = 35
    ("0x1.7a11473eb0187p+0", "-0x1.41577ee04992fp-55"),  # j = 36
    ("0x1.7e2f336cf4e62p+0", "0x1.05d02ba15797ep-56"),  # j = 37
    ("0x1.82589994cce13p+0", "-0x1.d4c1dd41532d8p-54"),  # j = 38
    ("0x1.868d99b4492edp+0", "-0x1.fc6f89bd4f6bap-54"),  # j = 39
    ("0x1.8ace5422aa0dbp+0", "0x1.6e9f156864b27p-54"),  # j = 40
    ("0x1.8f1ae99157736p+0", "0x1.5cc13a2e3976cp-55"),  # j = 41
    ("0x1.93737b0cdc5e5p+0", "-0x1.75fc781b57ebcp-57"),  # j = 42
    ("0x1.97d829fde4e50p+0", "-0x1.d185b7c1b85d1p-54"),  # j = 43
    ("0x1.9c49182a3f090p+0", "0x1.c7c46b071f2bep-56"),  # j = 44
    ("0x1.a0c667b5de565p+0", "-0x1.359495d1cd533p-54"),  # j = 45
    ("0x1.a5503b23e255dp+0", "-0x1.d2f6edb8d41e1p-54"),  # j = 46
    ("0x1.a9e6b5579fdbfp+0", "0x1.0fac90ef7fd31p-54"),  # j = 47
    ("0x1.ae89f995ad3adp+0", "0x1.7a1cd345dcc81p-54"),  # j = 48
    ("0x1.b33a2b84f15fbp+0", "-0x1.2805e3084d708p-57"),  # j = 49
    ("0x1.b7f76f2fb5e47p+0", "-0x1.5584f7e54ac3bp-56"),  # j = 50
    ("0x1.bcc1e904bc1d2p+0", "0x1.23dd07a2d9e84p-55"),  # j = 51
    ("0x1.c199bdd85529cp+0", "0x1.11065895048ddp-55"),  # j = 52
    ("0x1.c67f12e57d14bp+0", "0x1.2884dff483cadp-54"),  # j = 53
    ("0x1.cb720dcef9069p+0", "0x1.503cbd1e949dbp-56"),  # j = 54
    ("0x1.d072d4a07897cp+0", "-0x1.cbc3743797a9cp-54"),  # j = 55
    ("0x1.d5818dcfba487p+0", "0x1.2ed02d75b3707p-55"),  # j = 56
    ("0x1.da9e603db3285p+0", "0x1.c2300696db532p-54"),  # j = 57
    ("0x1.dfc97337b9b5fp+0", "-0x1.1a5cd4f184b5cp-54"),  # j = 58
    ("0x1.e502ee78b3ff6p+0", "0x1.39e8980a9cc8fp-55"),  # j = 59
    ("0x1.ea4afa2a490dap+0", "-0x1.e9c23179c2893p-54"),  # j = 60
    ("0x1.efa1bee615a27p+0", "0x1.dc7f486a4b6b0p-54"),  # j = 61
    ("0x1.f50765b6e4540p+0", "0x1.9d3e12dd8a18bp-54"),  # j = 62
    ("0x1.fa7c1819e90d8p+0", "0x1.74853f3a5931ep-55"),  # j = 63
)
_EXP2_HI: Final = np.array([float.fromhex(h) for h, _ in _EXP2_TABLE_HEX], dtype=F64)
_EXP2_LO: Final = np.array([float.fromhex(lo) for _, lo in _EXP2_TABLE_HEX], dtype=F64)

# Elements per block of the blocked evaluation (128 KiB per temporary).
_BLOCK: Final = 16384

# Arguments are clamped to these before the reduction: exp(-760) rounds to +0 and
# exp(720) overflows, and |k| stays below 2**17 so that k * _STEP_HI is exact.
_EXP_LOW: Final = -760.0
_EXP_HIGH: Final = 720.0
# expm1(-45) rounds to -1; expm1(710) overflows.
_EXPM1_LOW: Final = -45.0
_EXPM1_HIGH: Final = 710.0
# Below these magnitudes expm1(x) and tanh(x) round to x.
_EXPM1_TINY: Final = float.fromhex("0x1p-54")
_TANH_TINY: Final = float.fromhex("0x1p-28")
# tanh(20) rounds to 1 (1 - tanh(20) < 2**-56).
_TANH_HIGH: Final = 20.0
# Beyond this 2/sqrt(pi) * exp(-x*x) is below 2**-1075 and rounds to +0.
_ERF_DERIVATIVE_HIGH: Final = 28.0


def _reduce(x: Array, lo: Array | None) -> tuple[Array, Array, Array]:
    """``(k, r, w)`` with ``x + lo = k * ln2/64 + r + rl`` and ``exp(r + rl) - 1 ~ r + w``.

    ``x`` is finite with ``|x| <= 800``; ``lo`` (optional) is at most ``2**-30``. The reduced
    argument is kept as the double-double ``r + rl`` (``expm1`` needs it: its result may be
    as small as ``r``, so a rounded ``r`` would cost half an ulp) and ``rl`` is folded into
    ``w`` (the ``rl * r`` term that drops is below ``2**-66`` relative to 1).
    """
    kf = np.rint(x * _INV_STEP)
    a = x - kf * _STEP_HI
    minus_b = kf * _MINUS_STEP_LO
    r, rl = two_sum(a, minus_b if lo is None else lo + minus_b)
    w = (r * r) * (_Q0 + r * (_Q1 + r * (_Q2 + r * (_Q3 + r * _Q4)))) + rl
    return kf.astype(np.int64), r, w


def _exp_parts(x: Array, lo: Array | None) -> tuple[Array, Array, Array]:
    """``(n, th, s)`` with ``exp(x + lo) ~ 2**n * (th + s)``, ``th`` in [1, 2), ``|s| < 0.02``."""
    k, r, w = _reduce(x, lo)
    j = k & 63
    th = _EXP2_HI[j]
    s = _EXP2_LO[j] + th * (r + w)
    return k >> 6, th, s


def _round_subnormal(n: Array, hi: Array, lo: Array) -> Array:
    """``(hi + lo) * 2**n`` rounded once to the float64 grid, for results below ``2**-1020``.

    ``|hi| >= |lo|``. The value is moved to units of ``2**-1074`` (exact: a power of two that
    keeps it normal), rounded to an integer there with the low word deciding the ties that
    the high word alone would break wrongly, and moved back (exact).
    """
    vh, vl = fast_two_sum(hi, lo)
    unit = pow2(n + 1074)
    vh = vh * unit
    vl = vl * unit
    q = np.rint(vh)
    d = vh - q
    # |d| < 1/2 leaves no room for vl (at most half an ulp of vh) to change the rounding;
    # d = +-1/2 is a tie of vh that rint sent to the even side, which vl may overturn.
    q = q + np.where((d == 0.5) & (vl > 0.0), 1.0, 0.0)
    q = q - np.where((d == -0.5) & (vl < 0.0), 1.0, 0.0)
    result: Array = q * _TINY
    return result


def _finish(n: Array, hi: Array, lo: Array) -> Array:
    """``round(hi + lo) * 2**n`` with ``hi + lo`` in [0.5, 4) and ``|hi| >= |lo|``, rounded once."""
    y = hi + lo
    # y's exponent field is 1022..1024, so for n in [-1021, 1022] adding n to it is exact
    # scaling into the normal range.
    out = np.ascontiguousarray(y).view(np.int64) + (n << 52)
    out = out.view(F64)
    over = np.flatnonzero(n > 1022)
    if over.size:
        out[over] = scale(y[over], n[over])
    under = np.flatnonzero(n < -1021)
    if under.size:
        out[under] = _round_subnormal(n[under], hi[under], lo[under])
    return out


def _with_nans(out: Array, x: Array) -> Array:
    """``out`` with the NaN lanes of ``x`` copied in (rare, so on the gathered few)."""
    nan = np.flatnonzero(np.isnan(x))
    if nan.size:
        out[nan] = x[nan]
    return out


def _exp_block(x: Array) -> Array:
    # NaN fails the comparison and is clamped too (restored at the end).
    xc = np.where(x > _EXP_LOW, np.minimum(x, _EXP_HIGH), _EXP_LOW)
    n, th, s = _exp_parts(xc, None)
    return _with_nans(_finish(n, th, s), x)


def exp(x: Array) -> Array:
    """``e**x``, within ``ERROR_BOUND_ULP["exp"]`` ulp; subnormal results rounded once.

    Example:
        >>> import numpy as np
        >>> exp(np.array([0.0, 1.0, -1.0, 710.0, -745.0])).tolist()
        [1.0, 2.718281828459045, 0.36787944117144233, inf, 5e-324]
    """
    return blockwise(_exp_block, x)


def _exp_dd_block(hi: Array, lo: Array) -> Array:
    # Renormalized (exactly), so that any pair works: afterwards |low| <= ulp(high) / 2,
    # and high is NaN exactly where hi + lo is.
    high, low = two_sum(hi, lo)
    hc = np.where(high > _EXP_LOW, np.minimum(high, _EXP_HIGH), _EXP_LOW)
    # A clamped (NaN, infinite or far out of range) high makes the low word irrelevant.
    lc = np.where(hc == high, low, 0.0)
    n, th, s = _exp_parts(hc, lc)
    return _with_nans(_finish(n, th, s), high)


def exp_dd(hi: Array, lo: Array) -> Array:
    """``e**(hi + lo)`` of the exact sum ``hi + lo`` (a double-double argument), rounded to float64.

    Within ``ERROR_BOUND_ULP["exp_dd"]`` ulp of the exponential of the exact sum, which for
    ``|hi|`` near 700 differs from ``exp(hi)`` by hundreds of ulps. Meant for
    ``|lo| <= ulp(hi)`` (``pow``'s ``y * log(x)``), but any pair works: it is renormalized
    exactly first. The two arguments broadcast. ``exp_dd(x, 0)`` is ``exp(x)`` bit for bit.
    NaN in either word (or ``inf - inf``) gives NaN; otherwise an infinite sum gives
    ``exp(+-inf)``.

    Example:
        >>> import numpy as np
        >>> hi = np.array([700.0, 1.0])
        >>> lo = np.array([2.0**-44, 0.0])
        >>> (exp_dd(hi, lo) == exp(hi)).tolist()
        [False, True]
    """
    return blockwise(_exp_dd_block, hi, lo)


def _expm1_scaled(x: Array) -> tuple[Array, Array, Array]:
    """``(n, yh, yl)`` with ``expm1(x) ~ 2**n * (yh + yl)``, ``|yl| < 2**-7 * |yh|`` (not normalized).

    ``x`` is finite in [-45, 710]. ``T * (1 + p) - 2**-n`` is summed in double-double:
    ``T_hi - 2**-n`` and ``T_hi * r`` are split exactly, so the cancellation for small
    ``x`` (where the two nearly cancel) loses nothing.
    """
    k, r, w = _reduce(x, None)
    j = k & 63
    n = k >> 6
    th = _EXP2_HI[j]
    tl = _EXP2_LO[j]
    # 2**-n; for n > 1000 it is far below T's last bit, so 2**-1000 serves as well.
    c = pow2(np.maximum(-n, -1000))
    ah, al = two_sum(th, -c)
    bh, bl = two_prod(th, r)
    sh, sl = two_sum(ah, bh)
    tail = sl + (al + (bl + (tl * (1.0 + r) + th * w)))
    return n, sh, tail


def _expm1_block(x: Array) -> Array:
    xc = np.where(x > _EXPM1_LOW, np.minimum(x, _EXPM1_HIGH), _EXPM1_LOW)
    n, yh, yl = _expm1_scaled(xc)
    y = yh + yl
    # The result is normal unless it overflows (n = 1024, or n = 1023 and |y| >= 2), so
    # adding n to y's exponent field is the exact scaling everywhere else.
    out = (y.view(np.int64) + (n << 52)).view(F64)
    over = np.flatnonzero(n > 1022)
    if over.size:
        out[over] = scale(y[over], n[over])
    # NaN fails the comparison and is returned as it came, like the tiny arguments.
    return np.where(np.abs(x) >= _EXPM1_TINY, out, x)


def expm1(x: Array) -> Array:
    """``e**x - 1``, within ``ERROR_BOUND_ULP["expm1"]`` ulp, accurate near 0.

    Example:
        >>> import numpy as np
        >>> expm1(np.array([1e-10, -0.0, 1.0, -50.0, 710.0])).tolist()
        [1.00000000005e-10, -0.0, 1.7182818284590453, -1.0, inf]
    """
    return blockwise(_expm1_block, x)


def _tanh_block(x: Array) -> Array:
    ax = np.abs(x)
    a = np.where(ax < _TANH_HIGH, ax, _TANH_HIGH)  # NaN too: restored at the end
    n, sh, tail = _expm1_scaled(-2.0 * a)
    # Normalized, so that the low words below are small enough for one correction step.
    yh, yl = fast_two_sum(sh, tail)
    # With E = expm1(-2a) = 2**n * Y: tanh(a) = -E / (2 + E) = -Y / (2**(1-n) + Y). n is in
    # [-58, 0], so 2**(1-n) is a double and 2**(1-n) + Y is split exactly. The quotient
    # Y / D (negative) is formed as a double-double and rounded once; copysign then gives
    # tanh(x) = sign(x) * tanh(a).
    dh, dl = two_sum(pow2(1 - n), yh)
    dl = dl + yl
    q0 = yh / dh
    ph, pl = two_prod(q0, dh)
    rem = ((yh - ph) - pl) + (yl - q0 * dl)
    t = q0 + rem / dh
    return np.where(ax >= _TANH_TINY, np.copysign(t, x), x)


def tanh(x: Array) -> Array:
    """The hyperbolic tangent, within ``ERROR_BOUND_ULP["tanh"]`` ulp; odd, ``tanh(+-inf) = +-1``.

    Example:
        >>> import numpy as np
        >>> tanh(np.array([0.5, -1e-30, -0.0, 20.0, -np.inf])).tolist()
        [0.46211715726000974, -1e-30, -0.0, 1.0, -1.0]
    """
    return blockwise(_tanh_block, x)


def _erf_derivative_block(x: Array) -> Array:
    ax = np.abs(x)
    near = ax <= _ERF_DERIVATIVE_HIGH  # False for NaN as well
    a = np.where(near, ax, 0.0)
    # a < 28: no overflow; for a < 2**-484 the low word may be inexact, but there the
    # result is 2/sqrt(pi) whatever it is.
    square_hi, square_lo = two_prod(a, a)
    n, th, s = _exp_parts(-square_hi, -square_lo)
    yh, yl = fast_two_sum(th, s)
    ph, pl = two_prod(yh, np.full_like(yh, TWO_OVER_SQRTPI_HI))
    pl = pl + (yh * TWO_OVER_SQRTPI_LO + yl * TWO_OVER_SQRTPI_HI)
    return _with_nans(np.where(near, _finish(n, ph, pl), 0.0), x)


def erf_derivative(x: Array) -> Array:
    """``2/sqrt(pi) * exp(-x*x)``, the derivative of ``erf``, within ``ERROR_BOUND_ULP["erf_derivative"]`` ulp.

    ``x*x`` is kept exact (a double-double) and the product with ``2/sqrt(pi)`` is taken
    before the single rounding, so the bound is that of one correctly-rounded-ish step, not
    of the composition. Underflows (rounded once) through the subnormals to +0 near
    ``|x| = 27.3``.

    Example:
        >>> import numpy as np
        >>> erf_derivative(np.array([0.0, 1.0, -1.0, 27.0, np.inf])).tolist()
        [1.1283791670955126, 0.4151074974205947, 0.4151074974205947, 2.8299433e-317, 0.0]
    """
    return blockwise(_erf_derivative_block, x)
