"""Portable maps: the exact posture's transcendentals, the same bits on every machine.

Contract:
- :func:`evaluate` computes one :class:`~topos.ir.ops.MapOperation` over an array of a
  floating dtype and :func:`power` computes ``pow``; both return a new array of the
  argument's dtype and shape. Their bits are a function of the argument's values alone:
  never of the CPU's instruction set, the numpy version, the platform's libm, the array's
  layout or the thread count. They are built only from operations IEEE 754 rounds exactly
  (see :mod:`topos.kernels.libm.core`), and ``tests/test_libm_allowed.py`` holds every
  module here to that list.
- float64: each map is within 1 ulp of the true value (each family module states its
  measured bound in ``ERROR_BOUND_ULP``); the results are deterministic, not correctly
  rounded.
- float32 (and bfloat16, which computes through float32): correctly rounded. The float64
  map is evaluated on the (exactly widened) argument; where the interval of its error
  bound around that value rounds to one float32, that float32 is the correctly rounded
  result. The few lanes whose interval straddles a float32 rounding boundary are settled
  by :func:`topos.kernels.libm.exact.settle_f32` with mpmath at 160 bits (once per
  distinct argument, so a tensor of repeated hard arguments costs one evaluation).
- other floating dtypes (a plugin's float16) compute through float32 and round once more.
- ``sqrt`` is IEEE's own correctly rounded square root.

Example:
    >>> import numpy as np
    >>> from topos.ir.ops import MapOperation
    >>> evaluate(MapOperation.EXP, np.array([0.0, 1.0], np.float32)).tolist()
    [1.0, 2.7182817459106445]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

import numpy as np

from topos.ir.ops import MapOperation
from topos.kernels.libm import exact

__all__ = ["ERROR_BOUND_ULP", "NAMES", "evaluate", "f32_settled", "power", "scalar"]

Array = np.ndarray[Any, Any]
Unary = Callable[[Array], Array]

NAMES: Final[dict[MapOperation, str]] = {
    MapOperation.EXP: "exp",
    MapOperation.LN: "log",
    MapOperation.SQRT: "sqrt",
    MapOperation.TANH: "tanh",
    MapOperation.SIN: "sin",
    MapOperation.COS: "cos",
    MapOperation.LOG1P: "log1p",
    MapOperation.EXPM1: "expm1",
    MapOperation.ERF: "erf",
    MapOperation.ERF_DERIVATIVE: "erf_derivative",
    MapOperation.ATAN: "atan",
}
"""Each map's name in the family modules, in ``ERROR_BOUND_ULP`` and in mpmath's terms."""


@functools.cache
def _families() -> tuple[dict[MapOperation, Unary], Callable[[Array, Array], Array]]:
    """The float64 maps by operation, and the module holding ``pow`` (imported on first use,
    so that the family modules may import :mod:`topos.kernels.libm.core` freely)."""
    from topos.kernels.libm import expfamily, logfamily, trig

    maps: dict[MapOperation, Unary] = {
        MapOperation.EXP: expfamily.exp,
        MapOperation.LN: logfamily.log,
        MapOperation.SQRT: np.sqrt,
        MapOperation.TANH: expfamily.tanh,
        MapOperation.SIN: trig.sin,
        MapOperation.COS: trig.cos,
        MapOperation.LOG1P: logfamily.log1p,
        MapOperation.EXPM1: expfamily.expm1,
        MapOperation.ERF: trig.erf,
        MapOperation.ERF_DERIVATIVE: expfamily.erf_derivative,
        MapOperation.ATAN: logfamily.atan,
    }
    ERROR_BOUND_ULP.update(expfamily.ERROR_BOUND_ULP)
    ERROR_BOUND_ULP.update(logfamily.ERROR_BOUND_ULP)
    ERROR_BOUND_ULP.update(trig.ERROR_BOUND_ULP)
    return maps, logfamily.pow


ERROR_BOUND_ULP: Final[dict[str, float]] = {"sqrt": 0.5}
"""Each float64 map's error bound in ulps of the true value, as its family module states it
(filled in when the maps are first used)."""

# The float32 decision widens each float64 bound twice over: a relative measure
# (|y| * 2**-52 is at least one ulp of y, and at least half an ulp of a true value in the
# next binade) and the rounding of the interval's own ends.
_WIDENING: Final = 2.0**-51 * 2.0


def _f64_map(operation: MapOperation, x: Array) -> Array:
    with np.errstate(all="ignore"):
        return _families()[0][operation](np.ascontiguousarray(x, dtype=np.float64))


def f32_settled(wide: Array, bound_ulp: float) -> tuple[Array, Array]:
    """``(rounded, unsettled)``: ``wide`` rounded to float32, and where that rounding is not
    proven by an error bound of ``bound_ulp`` float64 ulps around each value.

    Zeros, infinities and NaNs are settled as they are: the float64 maps return them only
    where the true value is one (or rounds to one in float32 as well).

    Example:
        >>> rounded, unsettled = f32_settled(np.array([1.0, 1.0 + 2.0**-24]), 0.5)
        >>> rounded.tolist(), unsettled.tolist()
        ([1.0, 1.0], [False, True])
    """
    with np.errstate(all="ignore"):
        radius = np.abs(wide) * (bound_ulp * _WIDENING) + bound_ulp * 2.0**-1073
        below = (wide - radius).astype(np.float32)
        above = (wide + radius).astype(np.float32)
        rounded = wide.astype(np.float32)
    settled = (below.view(np.uint32) == above.view(np.uint32)) | (wide == 0) | ~np.isfinite(wide)
    return rounded, ~settled


def _f32_map(operation: MapOperation, x: Array) -> Array:
    name = NAMES[operation]
    wide = _f64_map(operation, x)
    if operation is MapOperation.SQRT:
        # sqrt of a float32 in float64 rounds to nearest within 2**-29 ulp: rounding it to
        # float32 is the correctly rounded float32 square root (the double rounding is
        # innocuous for +, -, *, / and sqrt when the wide format has 2p + 2 bits).
        return wide.astype(np.float32)
    rounded, unsettled = f32_settled(wide, ERROR_BOUND_ULP[name])
    return exact.settle_f32(name, (x,), rounded, unsettled)


def evaluate(operation: MapOperation, x: Array) -> Array:
    """``operation`` over ``x`` (float64, float32, or another float dtype through float32).

    Example:
        >>> evaluate(MapOperation.LN, np.array([1.0, np.e])).tolist()
        [0.0, 1.0]
    """
    dtype = x.dtype
    if dtype == np.float64:
        return _f64_map(operation, x).reshape(x.shape)
    if dtype == np.float32:
        return _f32_map(operation, np.ascontiguousarray(x)).reshape(x.shape)
    through = np.ascontiguousarray(x, dtype=np.float32)
    return _f32_map(operation, through).reshape(x.shape).astype(dtype)


def power(a: Array, b: Array) -> Array:
    """``a ** b`` elementwise with IEEE's special cases; operands of one shape and dtype.

    Example:
        >>> power(np.array([2.0, -8.0, 0.0]), np.array([10.0, 1.0 / 3.0, -1.0])).tolist()
        [1024.0, nan, inf]
    """
    dtype = a.dtype
    if a.shape != b.shape:
        raise ValueError(f"power: operands of one shape, got {a.shape} and {b.shape}")
    with np.errstate(all="ignore"):
        if dtype == np.float64:
            return _families()[1](np.ascontiguousarray(a), np.ascontiguousarray(b)).reshape(a.shape)
        x = np.ascontiguousarray(a, dtype=np.float32)
        y = np.ascontiguousarray(b, dtype=np.float32)
        wide = _families()[1](x.astype(np.float64), y.astype(np.float64))
    rounded, unsettled = f32_settled(wide, ERROR_BOUND_ULP["pow"])
    settled = exact.settle_f32("pow", (x, y), rounded, unsettled).reshape(a.shape)
    return settled if dtype == np.float32 else settled.astype(dtype)


def scalar(operation: MapOperation, value: float) -> float:
    """One float64 map of a Python number: for constants computed outside a graph (rotary
    angles, schedules, initializers) that must be the same on every machine too.

    Example:
        >>> scalar(MapOperation.COS, 0.0)
        1.0
    """
    return float(evaluate(operation, np.array([float(value)], dtype=np.float64))[0])
