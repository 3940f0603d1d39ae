"""Portable float64 logarithms, arctangent and power: ``log``, ``log_dd``, ``log1p``, ``atan``, ``pow``.

Contract:
- each map takes a float64 array of any shape (0-d included) and returns a new float64 array
  of that shape (``log_dd``: a pair of them); ``pow`` takes two arrays of one shape. The
  result bits depend on the input bits alone: every lane runs the same fixed sequence of
  IEEE 754 operations that round exactly (``+ - * /``, comparisons, selections, integer work
  on the bits, table look-ups), so no SIMD kernel, libm or CPU feature can change them;
- special values follow C99 Annex F: ``log(±0) = -inf``, ``log(x < 0) = nan``,
  ``log(inf) = inf``, ``log(1) = +0``; ``log1p(-1) = -inf``, ``log1p(x < -1) = nan``,
  ``log1p(±0) = ±0``; ``atan(±0) = ±0``, ``atan(±inf) = ±pi/2`` (correctly rounded);
  ``pow`` has every case of C99 ``pow`` (see its docstring). NaN in gives a quiet NaN out
  (except ``pow(nan, 0) = pow(1, nan) = 1``);
- error bounds (``ERROR_BOUND_ULP``, in ulps of the float64 binade of the true value) are
  a measured maximum plus margin and an error analysis that agrees with it; the
  measurements, their inputs and commands are in ``docs/libm-logfamily.md``.

Method:
- log: ``x = 2**k * m`` read off the bits with ``m`` in [sqrt(1/2), sqrt(2)) (subnormals
  first scaled by 2**54). Rounding ``m`` at its 8th fraction bit picks one of 257 centres
  ``c`` (steps of 2**-9 below 1 and 2**-8 above, the centre 1 shared by both sides); a table
  holds ``r ~ 1/c`` rounded to 24 bits and ``-log(r)`` as a pair whose high part lies on
  the 2**-42 grid. ``z = r*m - 1`` (``|z| <= 2**-9``) is formed exactly as ``zh + zl``:
  ``zh = fl(r*m) - 1`` (Sterbenz) and ``zl`` the product's rounding error, exact from the
  26-bit head of ``m`` because ``r`` is short. ``log(x) = k*ln2 + (-log r) + log1p(z)``
  with ``log1p(z)`` from its Taylor series (the quadratic term exactly in ``log_dd``) and
  ``ln2 = LN2_HI + LN2_LO``, ``LN2_HI`` of 42 bits, so ``k*LN2_HI + hi(-log r)`` is
  exact. The centre 1 has ``r = 1``, so near ``x = 1`` nothing cancels. The rest is summed
  with error-free additions; the result is the rounded sum, so the error is half an ulp
  plus ~2**-62 relative (``log``) or the pair itself within 2**-68 relative (``log_dd``).
- log1p: ``1 + x = s + t`` exactly (``two_sum``); ``log(s + t)`` is the same reduction with
  ``z = r*m - 1 + r*t*2**-k``, which is exact where it matters (``r = 1``, ``k = 0``:
  ``z = x``). ``|x| < 2**-54`` returns ``x``.
- atan: odd; ``a = |x|``; for ``a <= 1`` the breakpoint ``c = rint(64a)/64`` and
  ``atan(a) = atan(c) + atan((a - c)/(1 + a*c))``; for ``a > 1`` with ``c = rint(64/a)/64``,
  ``-atan(a) = (atan(c) - pi/2) + atan((1 - a*c)/(a + c))`` (the final ``copysign`` takes
  the magnitude). Numerator and denominator are formed exactly (``c`` has 7 bits, ``a`` is
  split into a 26-bit head and the rest), the quotient ``t`` as the 26-bit head of the
  rounded quotient plus (residual / denominator), the residual exact to ~2**-78;
  ``atan(t)`` for ``|t| <= 2**-7`` is its Taylor series to ``t**9``. Tables hold
  ``atan(c)`` and ``atan(c) - pi/2`` as double-doubles. ``a < 2**-27``: ``atan(x) = x``;
  ``a >= 2**60``: ``±pi/2`` rounded.
- pow: the C99 special cases on a gathered subset; elsewhere
  ``exp_dd(y * log_dd(|x|))`` with the product a double-double
  (``topos.kernels.libm.expfamily.exp_dd``), negated for a negative base and odd ``y``.

Tables and constants are ``float.fromhex`` literals generated offline with mpmath at
200 bits: ``r`` = 1/c rounded to 24 significant bits; ``-log(r)`` as high = nearest
multiple of 2**-42, low = nearest double to the rest; ``atan(i/64)`` and
``atan(i/64) - pi/2`` as high = nearest double, low = nearest double to the rest; the
Taylor coefficients ``±1/k`` rounded to nearest. ``tests/test_libm_logfamily.py``
re-derives every entry.

Work proceeds in slices of 8192 lanes (temporaries stay in cache); every lane runs the same
operations whatever the slicing, so no bit depends on it.

Callers need not silence floating-point warnings: every map runs under
``np.errstate(all="ignore")``.

Size: over 800 lines on purpose. log, log1p and pow share one double-word logarithm
  (``log_dd``) and its table, and atan sits with them as the other table-driven map; the
  exhaustive float32 proof fingerprints the sources by file name, so a split would send
  every proved slice back to be checked again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np

from topos.kernels.libm.core import F64, fast_two_sum, pow2, two_prod, two_sum
from topos.kernels.libm.expfamily import ERROR_BOUND_ULP as _EXP_BOUND
from topos.kernels.libm.expfamily import exp_dd

__all__ = ["ERROR_BOUND_ULP", "LOG_DD_RELATIVE_BOUND", "atan", "log", "log1p", "log_dd", "pow"]

Array = np.ndarray[Any, Any]

# log, log1p, atan: the result is a double-double rounded once, with a relative error
# below ~2**-62 before the rounding (0.5 + 2**-9 ulp); measured at most 0.5005 (log,
# log1p) and 0.5000 (atan), to the long double reference's ~0.0005 ulp. pow: exp_dd's
# bound plus what log_dd's error becomes through exp (at most 2**-58.5 relative, < 0.025
# ulp); measured 0.512, all of it exp_dd's.
ERROR_BOUND_ULP: Final[dict[str, float]] = {
    "log": 0.51,
    "log1p": 0.51,
    "atan": 0.51,
    "pow": _EXP_BOUND["exp_dd"] + 0.03,
}
# The relative error of ``log_dd``'s ``hi + lo`` (measured 2**-71; see its docstring).
LOG_DD_RELATIVE_BOUND: Final[float] = float.fromhex("0x1p-68")


def _table(*entries: str) -> Array:
    return np.array([float.fromhex(s) for s in entries], dtype=F64)


# ln2 = LN2_HI + LN2_LO: LN2_HI is ln2 rounded to 42 bits, so k * LN2_HI is exact for
# |k| < 2**11 (every exponent, subnormals included).
_LN2_HI = float.fromhex("0x1.62e42fefa38p-1")
_LN2_LO = float.fromhex("0x1.ef35793c7673p-45")
# pi/2 as a double-double (mpmath): the high part is pi/2 correctly rounded.
_PIO2_HI = float.fromhex("0x1.921fb54442d18p+0")

# The bits of sqrt(1/2) rounded: subtracting them before reading the exponent puts the
# significand in [sqrt(1/2), sqrt(2)).
_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD
_NORMAL_MIN_BITS = 0x0010_0000_0000_0000
_INF_BITS = 0x7FF0_0000_0000_0000
_ONE_BITS = 0x3FF0_0000_0000_0000
# Rounding the significand's bits at bit 44 (the 8th fraction bit) gives the index of the
# nearest centre; the smallest reachable value is 0x3FE00 + 106 (for m = sqrt(1/2)), taken
# off in the same addition.
_FRACTION_MASK = (1 << 52) - 1
_J_OFFSET = (1 << 43) - ((0x3FE00 + 106) << 44)
_TWO54 = float.fromhex("0x1p54")

# Taylor coefficients of log1p(z) = z - z**2/2 + z**3 (c3 + c4 z + ...), c_k = (-1)**(k+1)/k
# rounded to double (mpmath). With |z| <= 2**-9 the first omitted term is below 2**-75 |z|
# (log_dd, to c8) or 2**-66 |z| (log and log1p, to c7).
_C3 = float.fromhex("0x1.5555555555555p-2")
_C4 = -0.25
_C5 = float.fromhex("0x1.999999999999ap-3")
_C6 = float.fromhex("-0x1.5555555555555p-3")
_C7 = float.fromhex("0x1.2492492492492p-3")
_C8 = -0.125

# Taylor coefficients of atan(t) = t + t**3 (a3 + a5 t**2 + a7 t**4 + a9 t**6),
# a_k = (-1)**((k-1)/2)/k rounded (mpmath); |t| <= 2**-7 leaves t**11/11 < 2**-73 |t|.
_A3 = float.fromhex("-0x1.5555555555555p-2")
_A5 = float.fromhex("0x1.999999999999ap-3")
_A7 = float.fromhex("-0x1.2492492492492p-3")
_A9 = float.fromhex("0x1.c71c71c71c71cp-4")

# |x| below this: log1p(x) = x (x**2/2 is under a quarter ulp of x).
_TINY_LOG1P = float.fromhex("0x1p-54")
# atan: below, atan(x) = x (x**3/3 under a quarter ulp); at or above, pi/2 rounded.
_TINY_ATAN = float.fromhex("0x1p-27")
_TINY_ATAN_BITS = 0x3E40_0000_0000_0000
_HUGE_ATAN_BITS = 0x43B0_0000_0000_0000
# pow: |y| is clamped here; beyond it |y*log|x|| > 2**11 for every x != 1, so exp over- or
# underflows either way.
_Y_CLAMP = float.fromhex("0x1p64")
_TWO53 = float.fromhex("0x1p53")

# Index j (0..256) <-> centre c_j, the double with bits (j + 0x3FE00 + 106) << 44: steps of 2**-9 on
# [0.70703125, 1) and 2**-8 on [1, 1.4140625]; c_150 = 1.
# _LOG_R[j]: 1/c_j rounded to 24 significant bits (1 at j = 150).
# _LOG_T_HI[j] + _LOG_T_LO[j]: -log(_LOG_R[j]), the high part rounded to the 2**-42 grid
# (so that k*LN2_HI + _LOG_T_HI[j] is exact), the low part the nearest double to the rest.
_LOG_R = _table(
    '0x1.6a13cep+0', '0x1.691474p+0', '0x1.681682p+0', '0x1.6719f4p+0',
    '0x1.661ec6p+0', '0x1.6524f8p+0', '0x1.642c86p+0', '0x1.63356cp+0',
    '0x1.623fa8p+0', '0x1.614b36p+0', '0x1.605816p+0', '0x1.5f6644p+0',
    '0x1.5e75bcp+0', '0x1.5d867cp+0', '0x1.5c9882p+0', '0x1.5babccp+0',
    '0x1.5ac056p+0', '0x1.59d62p+0', '0x1.58ed24p+0', '0x1.58056p+0',
    '0x1.571ed4p+0', '0x1.56397cp+0', '0x1.555556p+0', '0x1.54725ep+0',
    '0x1.539094p+0', '0x1.52aff6p+0', '0x1.51d07ep+0', '0x1.50f22ep+0',
    '0x1.501502p+0', '0x1.4f38f6p+0', '0x1.4e5e0ap+0', '0x1.4d843cp+0',
    '0x1.4cab88p+0', '0x1.4bd3eep+0', '0x1.4afd6ap+0', '0x1.4a27fap+0',
    '0x1.49539ep+0', '0x1.488052p+0', '0x1.47ae14p+0', '0x1.46dce4p+0',
    '0x1.460cbcp+0', '0x1.453d9ep+0', '0x1.446f86p+0', '0x1.43a274p+0',
    '0x1.42d662p+0', '0x1.420b52p+0', '0x1.414142p+0', '0x1.40782ep+0',
    '0x1.3fb014p+0', '0x1.3ee8f4p+0', '0x1.3e22ccp+0', '0x1.3d5d9ap+0',
    '0x1.3c995ap+0', '0x1.3bd60ep+0', '0x1.3b13b2p+0', '0x1.3a5244p+0',
    '0x1.3991c2p+0', '0x1.38d22ep+0', '0x1.381382p+0', '0x1.3755bep+0',
    '0x1.3698ep+0', '0x1.35dce6p+0', '0x1.3521dp+0', '0x1.34679ap+0',
    '0x1.33ae46p+0', '0x1.32f5cep+0', '0x1.323e34p+0', '0x1.318776p+0',
    '0x1.30d19p+0', '0x1.301c82p+0', '0x1.2f684cp+0', '0x1.2eb4eap+0',
    '0x1.2e025cp+0', '0x1.2d50ap+0', '0x1.2c9fb4p+0', '0x1.2bef98p+0',
    '0x1.2b404ap+0', '0x1.2a91cap+0', '0x1.29e412p+0', '0x1.293726p+0',
    '0x1.288b02p+0', '0x1.27dfa4p+0', '0x1.27350cp+0', '0x1.268b38p+0',
    '0x1.25e228p+0', '0x1.2539d8p+0', '0x1.24924ap+0', '0x1.23eb7ap+0',
    '0x1.234568p+0', '0x1.22a012p+0', '0x1.21fb78p+0', '0x1.215798p+0',
    '0x1.20b47p+0', '0x1.201202p+0', '0x1.1f7048p+0', '0x1.1ecf44p+0',
    '0x1.1e2ef4p+0', '0x1.1d8f56p+0', '0x1.1cf06ap+0', '0x1.1c523p+0',
    '0x1.1bb4a4p+0', '0x1.1b17c6p+0', '0x1.1a7b96p+0', '0x1.19e012p+0',
    '0x1.194538p+0', '0x1.18ab08p+0', '0x1.181182p+0', '0x1.1778a2p+0',
    '0x1.16e068p+0', '0x1.1648d6p+0', '0x1.15b1e6p+0', '0x1.151b9ap+0',
    '0x1.1485fp+0', '0x1.13f0e8p+0', '0x1.135c82p+0', '0x1.12c8b8p+0',
    '0x1.12358ep+0', '0x1.11a302p+0', '0x1.111112p+0', '0x1.107fbcp+0',
    '0x1.0fef02p+0', '0x1.0f5eep+0', '0x1.0ecf56p+0', '0x1.0e4066p+0',
    '0x1.0db20ap+0', '0x1.0d2446p+0', '0x1.0c9714p+0', '0x1.0c0a78p+0',
    '0x1.0b7e6ep+0', '0x1.0af2f8p+0', '0x1.0a681p+0', '0x1.09ddbap+0',
    '0x1.0953f4p+0', '0x1.08cabcp+0', '0x1.08421p+0', '0x1.07b9f2p+0',
    '0x1.07326p+0', '0x1.06ab5ap+0', '0x1.0624dep+0', '0x1.059eeap+0',
    '0x1.05198p+0', '0x1.04949cp+0', '0x1.041042p+0', '0x1.038c6cp+0',
    '0x1.03091cp+0', '0x1.02865p+0', '0x1.020408p+0', '0x1.018244p+0',
    '0x1.010102p+0', '0x1.00804p+0', '0x1p+0', '0x1.fe01fep-1',
    '0x1.fc07fp-1', '0x1.fa11cap-1', '0x1.f81f82p-1', '0x1.f6310ap-1',
    '0x1.f4465ap-1', '0x1.f25f64p-1', '0x1.f07c2p-1', '0x1.ee9c8p-1',
    '0x1.ecc07cp-1', '0x1.eae808p-1', '0x1.e9131ap-1', '0x1.e741aap-1',
    '0x1.e573acp-1', '0x1.e3a918p-1', '0x1.e1e1e2p-1', '0x1.e01e02p-1',
    '0x1.de5d6ep-1', '0x1.dca01ep-1', '0x1.dae608p-1', '0x1.d92f22p-1',
    '0x1.d77b66p-1', '0x1.d5cac8p-1', '0x1.d41d42p-1', '0x1.d272cap-1',
    '0x1.d0cb58p-1', '0x1.cf26e6p-1', '0x1.cd8568p-1', '0x1.cbe6dap-1',
    '0x1.ca4b3p-1', '0x1.c8b266p-1', '0x1.c71c72p-1', '0x1.c5894ep-1',
    '0x1.c3f8fp-1', '0x1.c26b54p-1', '0x1.c0e07p-1', '0x1.bf583ep-1',
    '0x1.bdd2b8p-1', '0x1.bc4fd6p-1', '0x1.bacf92p-1', '0x1.b951e2p-1',
    '0x1.b7d6c4p-1', '0x1.b65e2ep-1', '0x1.b4e81cp-1', '0x1.b37484p-1',
    '0x1.b20364p-1', '0x1.b094b4p-1', '0x1.af286cp-1', '0x1.adbe88p-1',
    '0x1.ac5702p-1', '0x1.aaf1d2p-1', '0x1.a98ef6p-1', '0x1.a82e66p-1',
    '0x1.a6d01ap-1', '0x1.a5741p-1', '0x1.a41a42p-1', '0x1.a2c2a8p-1',
    '0x1.a16d4p-1', '0x1.a01a02p-1', '0x1.9ec8eap-1', '0x1.9d79f2p-1',
    '0x1.9c2d14p-1', '0x1.9ae24ep-1', '0x1.99999ap-1', '0x1.9852fp-1',
    '0x1.970e5p-1', '0x1.95cbbp-1', '0x1.948b1p-1', '0x1.934c68p-1',
    '0x1.920fb4p-1', '0x1.90d4f2p-1', '0x1.8f9c18p-1', '0x1.8e6528p-1',
    '0x1.8d3018p-1', '0x1.8bfce8p-1', '0x1.8acb9p-1', '0x1.899c1p-1',
    '0x1.886e6p-1', '0x1.87427cp-1', '0x1.861862p-1', '0x1.84f00cp-1',
    '0x1.83c978p-1', '0x1.82a4ap-1', '0x1.818182p-1', '0x1.806018p-1',
    '0x1.7f406p-1', '0x1.7e2256p-1', '0x1.7d05f4p-1', '0x1.7beb3ap-1',
    '0x1.7ad22p-1', '0x1.79baa6p-1', '0x1.78a4c8p-1', '0x1.779082p-1',
    '0x1.767dcep-1', '0x1.756cacp-1', '0x1.745d18p-1', '0x1.734f0cp-1',
    '0x1.724288p-1', '0x1.713786p-1', '0x1.702e06p-1', '0x1.6f2602p-1',
    '0x1.6e1f76p-1', '0x1.6d1a62p-1', '0x1.6c16c2p-1', '0x1.6b149p-1',
    '0x1.6a13cep-1',
)
_LOG_T_HI = _table(
    '-0x1.6300334babp-2', '-0x1.602d09a709p-2', '-0x1.5d5bdfa596p-2',
    '-0x1.5a8caf83eep-2', '-0x1.57bf73648dp-2', '-0x1.54f430c7bep-2',
    '-0x1.522ae1b38ap-2', '-0x1.4f638013aap-2', '-0x1.4c9e0b8173p-2',
    '-0x1.49da7dbfccp-2', '-0x1.4718dc171cp-2', '-0x1.4459202d3ap-2',
    '-0x1.419b438d5fp-2', '-0x1.3edf458417p-2', '-0x1.3c25255333p-2',
    '-0x1.396ce231bcp-2', '-0x1.36b67563e1p-2', '-0x1.3401e3eaedp-2',
    '-0x1.314f20fd36p-2', '-0x1.2e9e2b8e12p-2', '-0x1.2bef087dc9p-2',
    '-0x1.2941b0b987p-2', '-0x1.269623134ep-2', '-0x1.23ec584decp-2',
    '-0x1.21445520ecp-2', '-0x1.1e9e183c8ap-2', '-0x1.1bf99425a7p-2',
    '-0x1.1956d385bcp-2', '-0x1.16b5ced2dp-2', '-0x1.14167e6767p-2',
    '-0x1.1178e6c27ep-2', '-0x1.0edd064378p-2', '-0x1.0c42d51616p-2',
    '-0x1.09aa57a26cp-2', '-0x1.071385f4d6p-2', '-0x1.047e5e31e8p-2',
    '-0x1.01eae4aa6cp-2', '-0x1.feb22276ap-3', '-0x1.f991c3cb3cp-3',
    '-0x1.f474b5c4ep-3', '-0x1.ef5adb2ddp-3', '-0x1.ea4448d84ap-3',
    '-0x1.e530edde72p-3', '-0x1.e020d27236p-3', '-0x1.db13d8bd48p-3',
    '-0x1.d60a157104p-3', '-0x1.d10383e656p-3', '-0x1.cc001295b4p-3',
    '-0x1.c6ffbc8fp-3', '-0x1.c20289a18p-3', '-0x1.bd0874c3bep-3',
    '-0x1.b81178d382p-3', '-0x1.b31d83a5bcp-3', '-0x1.ae2ca9be72p-3',
    '-0x1.a93ed8c8aep-3', '-0x1.a4540b3e6ap-3', '-0x1.9f6c3b808ap-3',
    '-0x1.9a877e06bap-3', '-0x1.95a5b2ef7p-3', '-0x1.90c6e177ccp-3',
    '-0x1.8beb03b39p-3', '-0x1.8712139d0ep-3', '-0x1.823c18551ap-3',
    '-0x1.7d68fe72f6p-3', '-0x1.7898da4444p-3', '-0x1.73cb8adcfep-3',
    '-0x1.6f01247756p-3', '-0x1.6a39a0a3bep-3', '-0x1.6574eb68c2p-3',
    '-0x1.60b30b830ap-3', '-0x1.5bf407b544p-3', '-0x1.5737cbb818p-3',
    '-0x1.527e5e2a1cp-3', '-0x1.4dc7b817bcp-3', '-0x1.4913d2733cp-3',
    '-0x1.4462b3bc9cp-3', '-0x1.3fb454c992p-3', '-0x1.3b08bc0d8p-3',
    '-0x1.365fc6c15ap-3', '-0x1.31b996aba4p-3', '-0x1.2d16169868p-3',
    '-0x1.28753ef11ap-3', '-0x1.23d715e49cp-3', '-0x1.1f3b93bf26p-3',
    '-0x1.1aa2bea24p-3', '-0x1.160c80c4b2p-3', '-0x1.1178ee227ep-3',
    '-0x1.0ce7f0c4ccp-3', '-0x1.08598e99e4p-3', '-0x1.03cdbf7d1ep-3',
    '-0x1.fe89129dbcp-4', '-0x1.f57bc799p-4', '-0x1.ec738d30ap-4',
    '-0x1.e3708b5304p-4', '-0x1.da72783844p-4', '-0x1.d1797ba218p-4',
    '-0x1.c885845bc4p-4', '-0x1.bf9680f9fcp-4', '-0x1.b6ac7c9ad4p-4',
    '-0x1.adc78265bp-4', '-0x1.a4e763cb1cp-4', '-0x1.9c0c2ba4d4p-4',
    '-0x1.9335e4d594p-4', '-0x1.8a647d391cp-4', '-0x1.8197e2741p-4',
    '-0x1.78d01f23d8p-4', '-0x1.700d3deeacp-4', '-0x1.674f0ee364p-4',
    '-0x1.5e959c5978p-4', '-0x1.55e10e20ep-4', '-0x1.4d31165208p-4',
    '-0x1.4485dc8dbcp-4', '-0x1.3bdf4d7d2p-4', '-0x1.333d734184p-4',
    '-0x1.2aa058047p-4', '-0x1.2207ac8784p-4', '-0x1.1973b63464p-4',
    '-0x1.10e4612cbp-4', '-0x1.08599959e4p-4', '-0x1.ffa694dab8p-5',
    '-0x1.eea3384068p-5', '-0x1.dda8b7c68p-5', '-0x1.ccb7265dd8p-5',
    '-0x1.bbced3a69p-5', '-0x1.aaef1ccfbp-5', '-0x1.9a188df74p-5',
    '-0x1.894a8349f8p-5', '-0x1.7885892358p-5', '-0x1.67c937ed48p-5',
    '-0x1.5715df404p-5', '-0x1.466ad942ep-5', '-0x1.35c8b2ca1p-5',
    '-0x1.252f4078dp-5', '-0x1.149e568008p-5', '-0x1.0415c89e78p-5',
    '-0x1.e72bccc14p-6', '-0x1.c63d06c15p-6', '-0x1.a55f624c6p-6',
    '-0x1.8492858c9p-6', '-0x1.63d615c69p-6', '-0x1.432ab2598p-6',
    '-0x1.228f827eap-6', '-0x1.0205a3893p-6', '-0x1.c3177b4c8p-7',
    '-0x1.8244e0388p-7', '-0x1.4192bb968p-7', '-0x1.01014f588p-7',
    '-0x1.8121bb458p-8', '-0x1.008153958p-8', '-0x1.003fd55d8p-9',
    '0x0p+0', '0x1.ff00ac2bp-9', '0x1.fe02b6b1p-8',
    '0x1.7dc49e782p-7', '0x1.fc0a890fcp-7', '0x1.3cea5df47p-6',
    '0x1.7b91acfd6p-6', '0x1.b9fc0afbp-6', '0x1.f82990e78p-6',
    '0x1.1b0d90924p-5', '0x1.39e86e1fe8p-5', '0x1.58a5b57c9p-5',
    '0x1.77459be33p-5', '0x1.95c836cc9p-5', '0x1.b42de09198p-5',
    '0x1.d276b22dbp-5', '0x1.f0a30a0118p-5', '0x1.075982499p-4',
    '0x1.1653710a38p-4', '0x1.253f6120ap-4', '0x1.341d7461bcp-4',
    '0x1.42edcd9a64p-4', '0x1.51b06dd06p-4', '0x1.60658ad374p-4',
    '0x1.6f0d272e58p-4', '0x1.7da76907bp-4', '0x1.8c3465e318p-4',
    '0x1.9ab4225204p-4', '0x1.a926d8a4acp-4', '0x1.b78c7d2b1p-4',
    '0x1.c5e54bf5bcp-4', '0x1.d4313a96ccp-4', '0x1.e27074e2bp-4',
    '0x1.f0a3039118p-4', '0x1.fec9141dcp-4', '0x1.06714f3ca6p-3',
    '0x1.0d77e8cd08p-3', '0x1.14785c6e74p-3', '0x1.1b72b012f6p-3',
    '0x1.2266f328a6p-3', '0x1.29552c42p-3', '0x1.303d74c648p-3',
    '0x1.371fc161e8p-3', '0x1.3dfc2c26ccp-3', '0x1.44d2b38cb8p-3',
    '0x1.4ba37269a6p-3', '0x1.526e5e5a1cp-3', '0x1.5933896982p-3',
    '0x1.5ff3060a7ap-3', '0x1.66acd4072ap-3', '0x1.6d60fce19ep-3',
    '0x1.740f93fc04p-3', '0x1.7ab890410ep-3', '0x1.815c059c36p-3',
    '0x1.87fa08620cp-3', '0x1.8e92902886p-3', '0x1.9525a80f46p-3',
    '0x1.9bb36547ep-3', '0x1.a23bbffe2cp-3', '0x1.a8becdf082p-3',
    '0x1.af3c91880cp-3', '0x1.b5b51740fcp-3', '0x1.bc286be2d8p-3',
    '0x1.c2968890c2p-3', '0x1.c8ff7a79aap-3', '0x1.cf6359209cp-3',
    '0x1.d5c21434fcp-3', '0x1.dc1bcdcabep-3', '0x1.e27075e2bp-3',
    '0x1.e8c0250aa6p-3', '0x1.ef0adfddc6p-3', '0x1.f550a0ecb8p-3',
    '0x1.fb918bd5e4p-3', '0x1.00e6c38ad5p-2', '0x1.04025b6b4dp-2',
    '0x1.071b860cd6p-2', '0x1.0a3250a739p-2', '0x1.0d46b3d9abp-2',
    '0x1.1058bd1ae5p-2', '0x1.13686fa13bp-2', '0x1.1675c97abap-2',
    '0x1.1980d34542p-2', '0x1.1c898b369ap-2', '0x1.1f8ffa248ap-2',
    '0x1.22941e6cf8p-2', '0x1.2596011df7p-2', '0x1.2895a0bde8p-2',
    '0x1.2b9301378ap-2', '0x1.2e8e2bee12p-2', '0x1.31871a4144p-2',
    '0x1.347ddb2988p-2', '0x1.37726827fep-2', '0x1.3a64c59694p-2',
    '0x1.3d54f7e81fp-2', '0x1.404309206ap-2', '0x1.432ef2f84fp-2',
    '0x1.4618ba21c6p-2', '0x1.490068ec01p-2', '0x1.4be5f93778p-2',
    '0x1.4ec97582p-2', '0x1.51aad7c2ep-2', '0x1.548a2aa6ddp-2',
    '0x1.5767736c56p-2', '0x1.5a42ac334dp-2', '0x1.5d1bda5581p-2',
    '0x1.5ff308ea79p-2', '0x1.62c82c939cp-2',
)
_LOG_T_LO = _table(
    '0x1.e21c7e70325c5p-45', '-0x1.ea08976e418afp-46', '0x1.ac16a087123dcp-47',
    '0x1.95dbb0a7f5b78p-48', '-0x1.f4125ee3bd379p-46', '-0x1.a6d34c08ca452p-46',
    '-0x1.ea5708169fcafp-45', '0x1.fcfcacb2de886p-44', '0x1.e4ac91aff674fp-45',
    '-0x1.06992cdaaef3ap-44', '-0x1.06c10fb4c14bp-44', '0x1.812e892274dc8p-47',
    '0x1.cf141226ae02cp-44', '0x1.f0a9e297faafcp-44', '-0x1.7aad4b5d39007p-46',
    '0x1.5d92c5673e352p-47', '-0x1.0eac5b0c4c512p-46', '0x1.1b8f355526e72p-44',
    '0x1.966bad2e1de0ep-45', '-0x1.42f0c128d1317p-45', '-0x1.a956a4a50e2c9p-45',
    '0x1.21944b72f6c33p-44', '0x1.1d61f10477b7ap-44', '0x1.6e8b4c8a5991dp-44',
    '0x1.cc5cc28bd90e3p-44', '0x1.8479f53c15f98p-44', '0x1.1ce915767d3e5p-44',
    '-0x1.7d24e3ad1a45cp-45', '0x1.255ab042137cdp-44', '-0x1.e09a3024d7322p-44',
    '-0x1.1e058ce29909cp-44', '-0x1.016a52d84528bp-47', '-0x1.6fa4b1635fc3ep-45',
    '-0x1.b4efd61736304p-44', '0x1.e763a4e912b2cp-44', '-0x1.d51000d0a1e6dp-45',
    '-0x1.a3fbafade06fp-44', '-0x1.f31a7de006adbp-45', '0x1.91f04cd814834p-44',
    '0x1.bd7ebf1cfa71bp-44', '0x1.1f28ab4234c5ep-50', '-0x1.5e6b1e372f262p-44',
    '0x1.fe4e3b1411582p-44', '0x1.5be04ad6ece1fp-45', '-0x1.275b884731843p-44',
    '0x1.5e3b0efc4c134p-44', '0x1.9b37e7528118fp-47', '0x1.e8a5a5cc9ecfap-46',
    '-0x1.ee130d3a69d58p-44', '0x1.93292e55ce12p-45', '0x1.d520459536c0bp-45',
    '-0x1.d85063c1da89ep-46', '-0x1.c72bc562965bdp-44', '-0x1.7995d2e588b3ep-44',
    '0x1.8d643502c76bep-45', '-0x1.5f7b5c8243af3p-44', '0x1.3689b4be14f16p-44',
    '-0x1.43bcdbf159cafp-44', '-0x1.64de859547ac4p-47', '0x1.a47277693cd71p-46',
    '0x1.8cd54aa428226p-47', '-0x1.328dec2f9af9fp-44', '-0x1.deddb9a6873d8p-46',
    '0x1.532a417f5df39p-45', '-0x1.8def9e3dce591p-44', '0x1.da53d8d1d318ap-44',
    '-0x1.553190d2523bap-44', '0x1.90ad56665b947p-44', '0x1.98c9d34f0f9b7p-44',
    '0x1.73d67499879a4p-44', '0x1.27823eb67ed71p-46', '-0x1.9b93b26b86e55p-44',
    '0x1.4e6138d4b4132p-44', '-0x1.c75b60ae1d464p-47', '0x1.5806355a0d419p-44',
    '0x1.89360a737fc77p-44', '-0x1.15931c0ae35ecp-44', '0x1.aec7d7275f517p-44',
    '0x1.ff7c0afc6347p-44', '-0x1.f02c263a6137bp-44', '-0x1.180dccc878a6p-47',
    '-0x1.734fc359868aep-44', '-0x1.f71471fd5840ep-47', '0x1.6066e9b067a88p-46',
    '0x1.20758ddb07166p-44', '-0x1.ec142a900b313p-45', '-0x1.15f78ce7507f2p-45',
    '-0x1.3eb1bac2710cdp-46', '0x1.8101d6ffe1ed7p-45', '-0x1.817f07169ba68p-44',
    '-0x1.56514d82f752cp-44', '-0x1.76a4c9ea8aff8p-46', '-0x1.0e34ba7f12265p-44',
    '-0x1.05bd3e6c69521p-45', '-0x1.a81401fa7c1dep-46', '-0x1.35f51b5f061bp-44',
    '-0x1.634c1c65ddfa9p-45', '-0x1.3f81b8d7724dep-45', '-0x1.ad0d7f4dbd9b1p-44',
    '0x1.579d209c2345ap-44', '0x1.e42f6b9440873p-47', '0x1.ad1951e8b42b6p-44',
    '-0x1.3105c3abd3d2fp-45', '-0x1.c19482f9f6ccdp-44', '0x1.c100460d200ecp-44',
    '-0x1.6711794b0e70cp-47', '-0x1.1258dafacba84p-49', '-0x1.a65accca2708bp-44',
    '-0x1.1a75ce1c4a61cp-44', '-0x1.922500e0afb3bp-47', '0x1.53c2582f4d745p-48',
    '-0x1.fa67a68d15f4bp-44', '0x1.1f050ad401deap-44', '0x1.ff3b6ace50af5p-49',
    '-0x1.74603a8e7f3d7p-44', '-0x1.472c4fc004aa9p-44', '-0x1.54f2f54f26bap-44',
    '0x1.7e109a845d805p-44', '0x1.96ddd6f24e582p-46', '-0x1.2fd08983860dfp-45',
    '-0x1.bda1636418ebep-44', '0x1.1caac64d4aed9p-45', '-0x1.9267b6dec4c3ep-44',
    '0x1.885088bdfb456p-46', '-0x1.0ba1635255ad3p-45', '0x1.0ed8aceb405d4p-44',
    '-0x1.9311a8ba3266p-44', '0x1.0d92d084f92a2p-46', '-0x1.d688e825c0f54p-44',
    '0x1.8e055df93ffbep-44', '0x1.c7a7375e7a7d3p-45', '-0x1.820c4def45c63p-44',
    '-0x1.8110ae02e86fbp-45', '0x1.3030c9a1c45fap-44', '0x1.dfdc7f46c6fcp-44',
    '0x1.93062499a534bp-45', '0x1.5759ce0457bdcp-44', '0x1.dec419f2b5285p-45',
    '0x1.b434a3203afb4p-45', '-0x1.7ab2f895961afp-47', '-0x1.8813992db8d53p-47',
    '-0x1.686df2803cc03p-45', '-0x1.599b27cdc18c1p-44', '0x1.44245fce37d0bp-44',
    '-0x1.41b7c12df6675p-44', '-0x1.95f4755d3a613p-46', '-0x1.bcda51998afb1p-44',
    '-0x1.a1bbb82e18d5cp-46', '-0x1.06aabcbd8792p-45', '0x1.3bd10c7cc9b33p-44',
    '0x0p+0', '0x1.0bc05a086b56ap-45', '0x1.9e43f0dda563ap-46',
    '-0x1.ea453db5aedfap-44', '0x1.f207cf6d3a147p-50', '-0x1.68e0bb2d11538p-44',
    '-0x1.3b8f3b602b076p-44', '-0x1.b97bf0ae65efdp-44', '0x1.9c0267c68b48fp-45',
    '-0x1.3381e9ae9df1p-44', '0x1.ec69c80a727d5p-44', '-0x1.b23e395718b0ep-45',
    '-0x1.16e54e58198f4p-44', '-0x1.c0be197c4f058p-45', '-0x1.c555ae5cd81f7p-46',
    '0x1.6b943c787885bp-46', '-0x1.d589e8336993cp-45', '-0x1.b8e3f64b59fedp-44',
    '-0x1.47356768ed653p-46', '0x1.4189d7b69873fp-44', '0x1.1dd129980db66p-44',
    '0x1.bc6a0ea7d0151p-46', '0x1.8522b27899ee8p-44', '0x1.0c3b9dee9c50dp-44',
    '-0x1.4b3441b665813p-44', '0x1.2cee8c481006fp-44', '0x1.b4515acc0f5bbp-44',
    '-0x1.8a2072678cdf7p-45', '0x1.56fe50bd4c547p-44', '-0x1.24f7f3c3d1dd4p-44',
    '0x1.d1e575861fe06p-46', '-0x1.93d5a79144461p-45', '-0x1.a302c2af05591p-45',
    '-0x1.d36060343122ep-44', '-0x1.544d5d1ae60b1p-44', '-0x1.a38539cde76e2p-45',
    '0x1.cb4cd2ee31f2cp-44', '0x1.5ed771057a4a1p-46', '0x1.e9ee418189241p-45',
    '-0x1.4c7e1b83f8e84p-45', '-0x1.5a447f44cd6a7p-44', '-0x1.15295ccdb166fp-50',
    '0x1.ee93f9b2d8052p-44', '0x1.8abf362b930e7p-45', '-0x1.6b841614c5ae7p-46',
    '-0x1.420f9b3ecb41dp-44', '-0x1.790b237fc5223p-44', '0x1.2eb88b6918e2p-48',
    '-0x1.8566f183c169cp-44', '0x1.aa1c5bfc6c77p-44', '-0x1.bc2035713ea29p-44',
    '-0x1.08b1018f0b768p-44', '-0x1.bdb8072534a2dp-45', '-0x1.00262792efc78p-44',
    '0x1.229a240137954p-44', '0x1.a8b74b13f58d5p-44', '-0x1.290f37d9ffa39p-44',
    '-0x1.1dc18a1c998d1p-45', '-0x1.531cd91ddf46p-44', '0x1.e38524f20ae63p-44',
    '-0x1.c331a31ae832p-55', '-0x1.4a9066c043ed5p-44', '0x1.9d71bf3ad8f32p-44',
    '-0x1.cd402ded86c9bp-45', '-0x1.7694f68a22edfp-45', '0x1.7b9639a216c06p-45',
    '-0x1.1a191bbcf9d71p-45', '0x1.916e1a63196c6p-44', '-0x1.a322c2af02ae7p-44',
    '-0x1.6804b80e8e72ap-45', '-0x1.affa79c7c82f9p-45', '-0x1.2d402a0afc21ep-45',
    '-0x1.bc72aaaf291dcp-47', '0x1.e188d52b24cadp-50', '0x1.278b89fc0e2d5p-48',
    '-0x1.bcb83a3e019fbp-44', '0x1.dfbee7f9aadb9p-47', '0x1.d41a1f63b293bp-44',
    '-0x1.4799d81922822p-44', '-0x1.d3c4299d6a45p-44', '0x1.8448e731cbb19p-44',
    '0x1.b7dde7a364a5fp-45', '-0x1.80df0e5c70faap-44', '0x1.7956c040cc921p-45',
    '-0x1.a5baef5ee0d23p-44', '0x1.8e7c4224ea3f8p-44', '0x1.a8f7ad24be946p-44',
    '-0x1.67ac9d6e70e7ep-45', '-0x1.67a1e99b7212dp-45', '0x1.8fd1d948b82f3p-46',
    '-0x1.5354dd4bc8092p-45', '-0x1.e74b62c4944f9p-44', '0x1.7a79cbcd73b26p-44',
    '0x1.c6e41598fe6f7p-44', '0x1.f9316304a769p-44', '-0x1.fb037931707cfp-44',
    '-0x1.3582f48772f77p-46', '-0x1.8b63dfe19117ep-44', '-0x1.d7c72cd9ad8cfp-44',
    '0x1.3a68baf27d709p-45', '-0x1.f4810db0aebacp-44', '0x1.33e5762fda1e4p-45',
    '-0x1.62fab951aab22p-44', '-0x1.bc98f2d791854p-50', '-0x1.8c19dc9cd7ae3p-44',
    '0x1.ed6839f21e439p-45', '0x1.e8a8fbd65467bp-44',
)

# _ATAN_HI[i] + _ATAN_LO[i]: atan(i/64) for i in 0..64, then atan((i-65)/64) - pi/2 for i in
# 65..129 (negative: the a > 1 branch computes -atan(a)), as double-doubles.
_ATAN_HI = _table(
    '0x0p+0', '0x1.fff555bbb729bp-7', '0x1.ffd55bba97625p-6',
    '0x1.7fb818430da2ap-5', '0x1.ff55bb72cfdeap-5', '0x1.3f59f0e7c559dp-4',
    '0x1.7ee182602f10fp-4', '0x1.be39ebe6f07c3p-4', '0x1.fd5ba9aac2f6ep-4',
    '0x1.1e1fafb043727p-3', '0x1.3d6eee8c6626cp-3', '0x1.5c9811e3ec26ap-3',
    '0x1.7b97b4bce5b02p-3', '0x1.9a6a8e96c8626p-3', '0x1.b90d7529260a2p-3',
    '0x1.d77d5df205736p-3', '0x1.f5b75f92c80ddp-3', '0x1.09dc597d86362p-2',
    '0x1.18bf5a30bf178p-2', '0x1.278372057ef46p-2', '0x1.362773707ebccp-2',
    '0x1.44aa436c2af0ap-2', '0x1.530ad9951cd4ap-2', '0x1.614840309cfe2p-2',
    '0x1.6f61941e4def1p-2', '0x1.7d5604b63b3f7p-2', '0x1.8b24d394a1b25p-2',
    '0x1.98cd5454d6b18p-2', '0x1.a64eec3cc23fdp-2', '0x1.b3a911da65c6cp-2',
    '0x1.c0db4c94ec9fp-2', '0x1.cde53432c1351p-2', '0x1.dac670561bb4fp-2',
    '0x1.e77eb7f175a34p-2', '0x1.f40dd0b541418p-2', '0x1.0039c73c1a40cp-1',
    '0x1.0657e94db30dp-1', '0x1.0c6145b5b43dap-1', '0x1.1255d9bfbd2a9p-1',
    '0x1.1835a88be7c13p-1', '0x1.1e00babdefeb4p-1', '0x1.23b71e2cc9e6ap-1',
    '0x1.2958e59308e31p-1', '0x1.2ee628406cbcap-1', '0x1.345f01cce37bbp-1',
    '0x1.39c391cd4171ap-1', '0x1.3f13fb89e96f4p-1', '0x1.445065b795b56p-1',
    '0x1.4978fa3269ee1p-1', '0x1.4e8de5bb6ec04p-1', '0x1.538f57b89061fp-1',
    '0x1.587d81f732fbbp-1', '0x1.5d58987169b18p-1', '0x1.6220d115d7b8ep-1',
    '0x1.66d663923e087p-1', '0x1.6b798920b3d99p-1', '0x1.700a7c5784634p-1',
    '0x1.748978fba8e0fp-1', '0x1.78f6bbd5d315ep-1', '0x1.7d528289fa093p-1',
    '0x1.819d0b7158a4dp-1', '0x1.85d69576cc2c5p-1', '0x1.89ff5ff57f1f8p-1',
    '0x1.8e17aa99cc05ep-1', '0x1.921fb54442d18p-1', '-0x1.921fb54442d18p+0',
    '-0x1.8e1fca98cb633p+0', '-0x1.8a205fd55874p+0', '-0x1.8621f4822a647p+0',
    '-0x1.82250768ac529p+0', '-0x1.7e2a1635c67bep+0', '-0x1.7a319d1e3fe07p+0',
    '-0x1.763c1685d3c9cp+0', '-0x1.7249faa996a21p+0', '-0x1.6e5bbf4e3a633p+0',
    '-0x1.6a71d772b60cbp+0', '-0x1.668cb307c54cbp+0', '-0x1.62acbeaca61b8p+0',
    '-0x1.5ed2637169c54p+0', '-0x1.5afe069f1e104p+0', '-0x1.5730098602231p+0',
    '-0x1.5368c951e9cfdp+0', '-0x1.4fa89ee4e144p+0', '-0x1.4befdeb8130bap+0',
    '-0x1.483ed8c2e3147p+0', '-0x1.4495d86823225p+0', '-0x1.40f5246938156p+0',
    '-0x1.3d5cfedefb9c6p+0', '-0x1.39cda5381b92p+0', '-0x1.3647503caf55cp+0',
    '-0x1.32ca3416b401ap+0', '-0x1.2f56805f1a64fp+0', '-0x1.2bec602f0d252p+0',
    '-0x1.288bfa3512419p+0', '-0x1.253570cda95fdp+0', '-0x1.21e8e21f07a9cp+0',
    '-0x1.1ea6683792844p+0', '-0x1.1b6e192ebbe44p+0', '-0x1.18400747e568bp+0',
    '-0x1.151c4116f2812p+0', '-0x1.1202d1a635b12p+0', '-0x1.0ef3c09d694bp+0',
    '-0x1.0bef126968b2bp+0', '-0x1.08f4c864643c4p+0', '-0x1.0604e0fe4ef0fp+0',
    '-0x1.031f57e54adbep+0', '-0x1.0044262dddde3p+0', '-0x1.fae684f57ccp-1',
    '-0x1.f559424818e66p-1', '-0x1.efe068bba2275p-1', '-0x1.ea7bd8bb44317p-1',
    '-0x1.e52b6efe9c33cp-1', '-0x1.dfef04d0efedbp-1', '-0x1.dac670561bb4fp-1',
    '-0x1.d5b184cd16e2cp-1', '-0x1.d0b012cff5412p-1', '-0x1.cbc1e89152a76p-1',
    '-0x1.c6e6d2171bf18p-1', '-0x1.c21e9972adea3p-1', '-0x1.bd6906f6479aap-1',
    '-0x1.b8c5e167d1c98p-1', '-0x1.b434ee31013fdp-1', '-0x1.afb5f18cdcc22p-1',
    '-0x1.ab48aeb2b28d2p-1', '-0x1.a6ece7fe8b99dp-1', '-0x1.a2a25f172cfe4p-1',
    '-0x1.9e68d511b976bp-1', '-0x1.9a400a9306839p-1', '-0x1.9627bfeeb99d3p-1',
    '-0x1.921fb54442d18p-1',
)
_ATAN_LO = _table(
    '0x0p+0', '-0x1.220c39d4dff5p-61', '-0x1.5ec431444912cp-60',
    '-0x1.86ef8f794f105p-63', '-0x1.c934d86d23f1dp-60', '0x1.ac4ce285df847p-58',
    '-0x1.cfb654c0c3d98p-58', '0x1.f7b8f29a05987p-58', '-0x1.cd37686760c17p-59',
    '-0x1.b485914dacf8cp-59', '0x1.61a3b0ce9281bp-57', '-0x1.054ab2c010f3dp-58',
    '0x1.347b0b4f881cap-58', '0x1.cf601e7b4348ep-59', '0x1.17b10d2e0e5abp-61',
    '0x1.c648d1534597ep-57', '0x1.8ab6e3cf7afbdp-57', '0x1.62e47390cb865p-56',
    '0x1.30ca4748b1bf9p-57', '-0x1.077cdd36dfc81p-56', '-0x1.963a544b672d8p-57',
    '-0x1.5d5e43c55b3bap-56', '-0x1.2566480884082p-57', '-0x1.a725715711fp-56',
    '-0x1.c63aae6f6e918p-56', '0x1.69c885c2b249ap-56', '0x1.b6d0ba3748fa8p-56',
    '0x1.9e6c988fd0a77p-56', '-0x1.24dec1b50b7ffp-56', '0x1.ae187b1ca504p-56',
    '-0x1.cc1ce70934c34p-56', '-0x1.a2cfa4418f1adp-56', '0x1.a2b7f222f65e2p-56',
    '0x1.0e53dc1bf3435p-56', '-0x1.a3992dc382a23p-57', '-0x1.b32c949c9d593p-55',
    '-0x1.d5b495f6349e6p-56', '0x1.974fa13b5404fp-58', '-0x1.2bdaee1c0ee35p-58',
    '0x1.c621cec00c301p-55', '-0x1.928df287a668fp-58', '0x1.c421c9f38224ep-57',
    '-0x1.09e73b0c6c087p-56', '0x1.c5d5e9ff0cf8dp-55', '0x1.1021137c71102p-55',
    '-0x1.2304331d8bf46p-55', '0x1.ecf8b492644fp-56', '-0x1.f76d0163f79c8p-56',
    '0x1.2419a87f2a458p-56', '0x1.4a33dbeb3796cp-55', '-0x1.1bb74abda520cp-55',
    '-0x1.5e5c9d8c5a95p-56', '0x1.0028e4bc5e7cap-57', '-0x1.2b785350ee8c1p-57',
    '-0x1.6ea6febe8bbbap-56', '-0x1.a80386188c50ep-55', '-0x1.8c34d25aadef6p-56',
    '0x1.7b2a6165884a1p-59', '0x1.406a08980374p-55', '0x1.560821e2f3aa9p-55',
    '-0x1.bf76229d3b917p-56', '0x1.6b66e7fc8b8c3p-57', '-0x1.55b9a5e177a1bp-55',
    '-0x1.ec182ab042f61p-56', '0x1.1a62633145c07p-55', '-0x1.1a62633145c07p-54',
    '-0x1.1299ee93be016p-56', '0x1.30228c09a91b4p-54', '0x1.26d12837ecc05p-57',
    '0x1.e78c96d05afcbp-58', '-0x1.bf9d9508e7c82p-54', '-0x1.775dc87d51fep-54',
    '-0x1.d736a03d2b373p-57', '-0x1.a8cc1e7480c68p-54', '-0x1.a8068fbbb3283p-54',
    '0x1.11d212e88c8fdp-54', '-0x1.55b872ea367d6p-57', '-0x1.c6ac9f134fa91p-60',
    '0x1.f4189dc29459ep-54', '-0x1.8330116e9a3b9p-58', '-0x1.e1994906dd0d7p-54',
    '0x1.96f47948a99f1p-54', '0x1.3e56b9b2ed212p-54', '-0x1.e89234905f11p-55',
    '0x1.477ccb02049b2p-55', '-0x1.4d29adbab2a62p-54', '0x1.1c8c17bac6e15p-55',
    '0x1.81e1a79b537d2p-55', '0x1.ef5101e3d70e5p-56', '-0x1.17e21d9a42c9ap-55',
    '-0x1.bff041c0992ep-54', '0x1.4d472d7231f8dp-56', '-0x1.658e7a1aa32d2p-55',
    '-0x1.8e684e7a2281bp-56', '-0x1.5db888d438feep-55', '-0x1.8d699cf392f14p-54',
    '-0x1.062c9883530e4p-55', '-0x1.b1b466a88828ep-54', '-0x1.ad9ad85491df3p-55',
    '-0x1.4ed588e9b614bp-54', '-0x1.f3f8ad7f946d1p-54', '-0x1.8fcf88aed2e8p-54',
    '-0x1.00ed691d90802p-54', '0x1.a5bfdbd9f2a2cp-55', '0x1.c8ae842ec057ap-54',
    '-0x1.338b4259c027p-54', '-0x1.c3bc53e5aaf7ap-55', '0x1.46479c173e7afp-55',
    '-0x1.bbbb718dfa201p-57', '-0x1.24a3b2e61a70bp-55', '0x1.506e0cffd1159p-56',
    '-0x1.3e486c1959596p-55', '0x1.9f0971d6f161cp-56', '-0x1.a2b7f222f65e2p-55',
    '-0x1.d521d4eea7d44p-56', '0x1.5f07ddbf9ebccp-56', '0x1.1c0cead74734ap-55',
    '-0x1.f4ba8d3373e1bp-55', '0x1.805d24c938dc2p-55', '0x1.13e7ba3e2ea15p-55',
    '0x1.19bd9c274172p-58', '0x1.0520d0701d877p-55', '0x1.e2eddfb3cd03cp-55',
    '-0x1.e8b57b951019bp-56', '-0x1.bd7948ff2fac9p-56', '0x1.d700509dad6cep-56',
    '-0x1.d9eb0c63689ddp-55', '0x1.d6064eeff375dp-57', '0x1.aa5e488aa6084p-56',
    '-0x1.1a62633145c07p-55',
)

# Work is done in slices of this many lanes so that a kernel's temporaries stay in cache;
# every lane's result is the same whatever the slicing.
_CHUNK = 8192
# Clearing the low 27 fraction bits of a double leaves its leading 26 significant bits
# (truncated); the rest, v - head, has at most 27 bits and is exact.
_HEAD26_MASK = ~((1 << 27) - 1)


def _head26(v: Array) -> Array:
    """``v`` truncated to its leading 26 significant bits (sign kept): ``v - head`` is exact
    and, like the head, short enough that its product with a 26-bit factor is exact."""
    return (np.ascontiguousarray(v).view(np.int64) & _HEAD26_MASK).view(F64)


def _flat(x: Array) -> Array:
    return np.ascontiguousarray(x, dtype=F64).reshape(-1)


def _chunked(fn: Callable[..., tuple[Array, ...]], *args: Array) -> tuple[Array, ...]:
    """``fn`` over equal flat arrays, slice by slice, into fresh outputs."""
    n = args[0].size
    if n <= _CHUNK:
        return fn(*args)
    outs: tuple[Array, ...] | None = None
    for start in range(0, n, _CHUNK):
        parts = fn(*(a[start : start + _CHUNK] for a in args))
        if outs is None:
            outs = tuple(np.empty(n, dtype=F64) for _ in parts)
        for o, p in zip(outs, parts, strict=True):
            o[start : start + _CHUNK] = p
    assert outs is not None
    return outs


def _reduce_positive(flat: Array) -> tuple[Array, Array | None, Array]:
    """Bits ready for the kernel: normal lanes as they are, subnormal lanes scaled by 2**54
    (their shift returned), every other lane (zero, negative, inf, nan) replaced by 1.0 and
    listed in the third result for the caller to overwrite."""
    bits = flat.view(np.int64)
    # One unsigned comparison: positive normal <=> bits - min in [0, inf - min).
    odd = np.flatnonzero(
        (bits - _NORMAL_MIN_BITS).view(np.uint64) >= np.uint64(_INF_BITS - _NORMAL_MIN_BITS)
    )
    if not odd.size:
        return bits, None, odd
    bits = bits.copy()
    ob = bits[odd]
    # Negative floats have negative int64 bits, so (0, 2**52) is the positive subnormals.
    sub = odd[(ob > 0) & (ob < _NORMAL_MIN_BITS)]
    bad = odd[(ob <= 0) | (ob >= _INF_BITS)]
    shift: Array | None = None
    if sub.size:
        bits[sub] = (flat[sub] * _TWO54).view(np.int64)
        shift = np.zeros(flat.shape, dtype=F64)
        shift[sub] = 54.0
    bits[bad] = _ONE_BITS
    return bits, shift, bad


def _log_kernel(
    bits: Array, shift: Array | None, t: Array | None, precise: bool
) -> tuple[Array, Array]:
    """``log(v + t)`` for the positive normal doubles ``v`` with IEEE ``bits`` (times
    ``2**-shift``), ``|t| <= ulp(v)/2`` or None, as a pair ``(hi, lo)``.

    ``precise``: the quadratic term exactly, one more Taylor term and ``hi = fl(hi + lo)``
    (``log_dd``); otherwise about 2**-62 relative, ample for the rounded ``hi + lo``."""
    tmp = bits - _SQRT_HALF_BITS
    k = tmp >> 52
    mbits = (tmp & _FRACTION_MASK) + _SQRT_HALF_BITS
    j = (mbits + _J_OFFSET) >> 44
    m = mbits.view(F64)
    e = k.astype(F64)
    if shift is not None:
        e = e - shift
    r = _LOG_R[j]
    # z = r*m - 1 exactly as zh + zl: p - 1 is exact (Sterbenz), and with r of 24 bits
    # and m = mh + ml (26 + 27 bits) the rounding error of p is (r*mh - p) + r*ml, each
    # step exact. At the centre 1 (r = 1) p = m and zl = 0.
    p = r * m
    zh = p - 1.0
    mh = _head26(m)
    zl = (r * mh - p) + r * (m - mh)
    if t is not None:
        # z += r*t*2**-k. Exact where it decides the result (r = 1 and k = 0, i.e. 1 + x
        # near 1); elsewhere its rounding is far below the result's ulp. The clamp only
        # bites for 1 + x above 2**1022, where the term is below 2**-1000 anyway.
        v = (r * t) * pow2(-np.minimum(k, 1022))
        zh, w = two_sum(zh, v)
        zl = w + zl
    # e*LN2_HI + T_HI is exact (both on the 2**-42 grid, below 2**10). |e*ln2| > 0.69 >
    # |log r| when e != 0, and |log r| > |z| when r != 1, so the larger term comes first
    # in the fast_two_sum below (or the first is zero).
    s1 = e * _LN2_HI + _LOG_T_HI[j]
    small = _LOG_T_LO[j] + e * _LN2_LO
    if precise:
        q, qe = two_prod(zh, zh)
        ah, ae = fast_two_sum(zh, -0.5 * q)
        poly = _C3 + zh * (_C4 + zh * (_C5 + zh * (_C6 + zh * (_C7 + zh * _C8))))
        # zl (up to 2**-53, not 2**-53 |zh|) enters through log1p' = 1 - z + z**2 - ...
        lo_p = (zh * q) * poly + ((ae - 0.5 * qe) + zl * ((1.0 - zh) + q))
        s2, s2e = fast_two_sum(s1, ah)
        return fast_two_sum(s2, lo_p + (s2e + small))
    poly = _C3 + zh * (_C4 + zh * (_C5 + zh * (_C6 + zh * _C7)))
    # zl + zh*(zh*(zh*poly - 1/2) - zl) = zl - zh*zl - zh**2/2 + zh**3*poly
    lo_p = zl + zh * (zh * (zh * poly - 0.5) - zl)
    s2, s2e = fast_two_sum(s1, zh)
    return s2, lo_p + (s2e + small)


def _log_special(v: Array) -> Array:
    """log at the lanes the kernel does not take: zeros, negatives, inf, nan."""
    return np.where(v == 0.0, -np.inf, np.where(v > 0.0, v, np.nan))


def _log_slice(flat: Array) -> tuple[Array]:
    bits, shift, bad = _reduce_positive(flat)
    hi, lo = _log_kernel(bits, shift, None, precise=False)
    out = hi + lo
    if bad.size:
        out[bad] = _log_special(flat[bad])
    return (out,)


def log(x: Array) -> Array:
    """Natural logarithm, within ``ERROR_BOUND_ULP["log"]`` ulp.

    Example:
        >>> import numpy as np
        >>> log(np.array([1.0, 2.0, 0.0, -1.0, np.inf])).tolist()
        [0.0, 0.6931471805599453, -inf, nan, inf]
    """
    with np.errstate(all="ignore"):
        (out,) = _chunked(_log_slice, _flat(x))
    return out.reshape(np.asarray(x).shape)


def _log_dd_slice(flat: Array) -> tuple[Array, Array]:
    bits, shift, bad = _reduce_positive(flat)
    hi, lo = _log_kernel(bits, shift, None, precise=True)
    if bad.size:
        hi[bad] = _log_special(flat[bad])
        lo[bad] = 0.0
    return hi, lo


def log_dd(x: Array) -> tuple[Array, Array]:
    """``log(x)`` as a double-double ``(hi, lo)``: ``hi = fl(hi + lo)`` and
    ``|hi + lo - log(x)| <= 2**-68 |log(x)|`` (``LOG_DD_RELATIVE_BOUND``; measured 2**-71
    with mpmath at 113 bits, see ``docs/libm-logfamily.md``). ``hi`` alone is ``log(x)`` within 0.5 + 2**-15 ulp.

    Where ``log(x)`` is not finite, ``hi`` is the special value and ``lo = 0``; ``log_dd(1)``
    is ``(+0, +0)``.

    Example:
        >>> import numpy as np
        >>> hi, lo = log_dd(np.array([10.0]))
        >>> float(hi[0]), float(lo[0])
        (2.302585092994046, -2.170756223382255e-16)
    """
    with np.errstate(all="ignore"):
        hi, lo = _chunked(_log_dd_slice, _flat(x))
    return hi.reshape(np.asarray(x).shape), lo.reshape(np.asarray(x).shape)


def _log1p_slice(flat: Array) -> tuple[Array]:
    s, t = two_sum(np.full_like(flat, 1.0), flat)
    bits = s.view(np.int64)
    # The kernel takes 1 + x in (2**-53, inf) with |x| >= 2**-54; the rest (tiny x,
    # x <= -1, inf, nan) is overwritten below. s is never subnormal.
    odd = np.flatnonzero(
        (np.absolute(flat) < _TINY_LOG1P)
        | ((bits - 1).view(np.uint64) >= np.uint64(_INF_BITS - 1))
    )
    if odd.size:
        bits[odd] = _ONE_BITS
        t[odd] = 0.0
    hi, lo = _log_kernel(bits, None, t, precise=False)
    out = hi + lo
    if odd.size:
        v = flat[odd]
        out[odd] = np.where(
            np.absolute(v) < _TINY_LOG1P,
            v,
            np.where(v == -1.0, -np.inf, np.where(v > -1.0, v, np.nan)),
        )
    return (out,)


def log1p(x: Array) -> Array:
    """``log(1 + x)``, accurate near 0, within ``ERROR_BOUND_ULP["log1p"]`` ulp.

    Example:
        >>> import numpy as np
        >>> log1p(np.array([1e-20, -0.0, -1.0, -2.0, 1.0])).tolist()
        [1e-20, -0.0, -inf, nan, 0.6931471805599453]
    """
    with np.errstate(all="ignore"):
        (out,) = _chunked(_log1p_slice, _flat(x))
    return out.reshape(np.asarray(x).shape)


def _atan_slice(flat: Array) -> tuple[Array]:
    a = np.absolute(flat)
    # a in [2**-27, 2**60) in one unsigned comparison of the bits; the rest (tiny, huge,
    # inf, nan) is overwritten below.
    odd = np.flatnonzero(
        (a.view(np.int64) - _TINY_ATAN_BITS).view(np.uint64)
        >= np.uint64(_HUGE_ATAN_BITS - _TINY_ATAN_BITS)
    )
    if odd.size:
        a[odd] = 0.5
    big = a > 1.0
    # w = min(a, 1/a) in [0, 1]; the breakpoint c = i/64 nearest to it (7 bits).
    w = np.minimum(a, 1.0 / a)
    i = np.rint(w * 64.0)
    c = i * 0.015625
    idx = (i + big * 65.0).astype(np.int64)
    # With u = min(a, 1), v = max(a, 1) (one of them is 1):
    #   a <= 1: atan(a) = atan(c) + atan(t),        t = (a - c) / (1 + a*c) = (u - c*v) / (v + c*u)
    #   a > 1:  -atan(a) = (atan(c) - pi/2) + atan(t), t = (1 - a*c) / (a + c), the same formula,
    # and the final copysign drops the sign of the second. Each of u, v is split into a
    # 26-bit head and an exact rest (zero for the one that is 1), so every product with c
    # (7 bits) is exact, and u - c*vh, v + c*uh are exact or taken by fast_two_sum.
    ah = _head26(a)
    u = np.minimum(a, 1.0)
    v = np.maximum(a, 1.0)
    uh = np.minimum(ah, 1.0)
    vh = np.maximum(ah, 1.0)
    nh = u - c * vh  # exact: Sterbenz (a <= 1) or a short grid (a > 1)
    nl = c * (v - vh)  # to be subtracted
    dh, de = fast_two_sum(v, c * uh)
    dl = de + c * (u - uh)
    # t = th + tl: th = the 26-bit head of N/D; the residual N - th*D is exact to
    # ~2**-78 |N| (the products by th of dh's halves are exact, the first difference is
    # Sterbenz), so tl = residual / D carries the rest of t. (dh + dl is not normalised:
    # dl may reach 2**-27 dh, so the division takes their rounded sum.)
    th = _head26(nh / dh)
    dhh = _head26(dh)
    tl = (((nh - th * dhh) - th * (dh - dhh)) - (nl + th * dl)) / (dh + dl)
    tf = th + tl
    t2 = tf * tf
    tail = tl + (tf * t2) * (_A3 + t2 * (_A5 + t2 * (_A7 + t2 * _A9)))
    # |table| > |t| (or the table entry is 0), so fast_two_sum is exact.
    s, se = fast_two_sum(_ATAN_HI[idx], th)
    out = np.copysign(s + (se + (_ATAN_LO[idx] + tail)), flat)
    if odd.size:
        vv = flat[odd]
        passes = (np.absolute(vv) < _TINY_ATAN) | np.isnan(vv)
        out[odd] = np.where(passes, vv, np.copysign(_PIO2_HI, vv))
    return (out,)


def atan(x: Array) -> Array:
    """Arctangent, odd, within ``ERROR_BOUND_ULP["atan"]`` ulp; ``atan(±inf) = ±pi/2``.

    Example:
        >>> import numpy as np
        >>> atan(np.array([1.0, -np.inf, -0.0, 1e-300])).tolist()
        [0.7853981633974483, -1.5707963267948966, -0.0, 1e-300]
    """
    with np.errstate(all="ignore"):
        (out,) = _chunked(_atan_slice, _flat(x))
    return out.reshape(np.asarray(x).shape)


def _pow_slice(xf: Array, yf: Array) -> tuple[Array]:
    ax = np.absolute(xf)
    y_int = np.floor(yf) == yf  # false for inf and nan
    # Odd: an integer below 2**53 whose half (exact) is not an integer.
    half = yf * 0.5
    y_odd = y_int & (np.absolute(yf) < _TWO53) & (np.floor(half) != half)
    general = (
        (ax > 0.0)
        & (ax < np.inf)
        & (yf != 0.0)
        & (np.absolute(yf) < np.inf)
        & (xf != 1.0)
        & ((xf > 0.0) | y_int)
    )
    odd = np.flatnonzero(~general)
    if odd.size:
        ax[odd] = 2.0  # any positive normal: these lanes are overwritten below
    bits, shift, _ = _reduce_positive(ax)
    hi, lo = _log_kernel(bits, shift, None, precise=True)
    yc = np.minimum(np.maximum(yf, -_Y_CLAMP), _Y_CLAMP)
    ph, pl = two_prod(yc, hi)
    eh, el = fast_two_sum(ph, pl + yc * lo)
    out = exp_dd(eh, el)
    flip = np.flatnonzero((xf < 0.0) & y_odd)
    if flip.size:
        out[flip] = -out[flip]
    if odd.size:
        out[odd] = _pow_special(xf[odd], yf[odd], y_odd[odd])
    return (out,)


def _pow_special(x: Array, y: Array, y_odd: Array) -> Array:
    """pow at the lanes the general path does not take (see ``pow``)."""
    ax = np.absolute(x)
    zero_base = np.where(
        y < 0.0,
        np.where(y_odd, np.copysign(np.inf, x), np.inf),
        np.where(y_odd, x, 0.0),
    )
    inf_base = np.where(
        x > 0.0,
        np.where(y < 0.0, 0.0, np.inf),
        np.where(y < 0.0, np.where(y_odd, -0.0, 0.0), np.where(y_odd, -np.inf, np.inf)),
    )
    inf_exp = np.where(ax == 1.0, 1.0, np.where((ax < 1.0) == (y < 0.0), np.inf, 0.0))
    out = np.where(
        (y == 0.0) | (x == 1.0),
        1.0,
        np.where(
            np.isnan(x) | np.isnan(y),
            np.nan,
            np.where(
                x == 0.0,
                zero_base,
                np.where(np.isinf(x), inf_base, np.where(np.isinf(y), inf_exp, np.nan)),
            ),
        ),
    )
    return np.asarray(out, dtype=F64)


def pow(x: Array, y: Array) -> Array:
    """``x ** y`` (C99 ``pow``) for two float64 arrays of one shape, within
    ``ERROR_BOUND_ULP["pow"]`` ulp where the result is normal.

    Special cases, in order: ``pow(x, ±0) = 1`` (even for nan ``x``); ``pow(1, y) = 1``
    (even for nan ``y``); otherwise nan in gives nan. ``pow(±0, y)``: ``±inf`` for odd
    integer ``y < 0``, ``+inf`` for other ``y < 0``, ``±0`` for odd integer ``y > 0``,
    ``+0`` for other ``y > 0``. ``pow(-inf, y)``: ``-0`` / ``+0`` for odd / other ``y < 0``,
    ``-inf`` / ``+inf`` for odd / other ``y > 0``; ``pow(+inf, y)``: ``+0`` for ``y < 0``,
    ``+inf`` for ``y > 0``. ``pow(-1, ±inf) = 1``; ``pow(x, -inf)`` is ``+inf`` for
    ``|x| < 1`` and ``+0`` for ``|x| > 1``; ``pow(x, +inf)`` the reverse. A finite
    negative ``x`` with a finite non-integer ``y`` gives nan; with an integer ``y`` the
    sign is that of ``x`` for odd ``y`` (every ``|y| >= 2**53`` is even). Results beyond
    the range overflow to ``±inf`` or underflow to subnormals and ``±0``.

    Method: ``exp_dd(y * log_dd(|x|))`` with the product a double-double (``|y|`` clamped
    to 2**64, beyond which the result over- or underflows anyway), negated for odd ``y``.
    ``log_dd``'s 2**-68 relative error becomes at most 2**-58.5 relative in the result
    (``|y*log|x|| < 746`` where it is finite): the error is ``exp_dd``'s plus ~0.02 ulp.

    Example:
        >>> import numpy as np
        >>> pow(np.array([2.0, -2.0, 0.0, np.nan]), np.array([0.5, 3.0, -1.0, 0.0])).tolist()
        [1.4142135623730951, -8.0, inf, 1.0]
    """
    shape = np.asarray(x).shape
    if np.asarray(y).shape != shape:
        raise ValueError(f"pow takes two arrays of one shape, got {shape} and {np.asarray(y).shape}")
    with np.errstate(all="ignore"):
        (out,) = _chunked(_pow_slice, _flat(x), _flat(y))
    return out.reshape(shape)
