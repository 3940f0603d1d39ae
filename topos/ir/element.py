"""Element types: what the whole stack needs to know about a number.

An :class:`ElementType` names its numpy storage dtype, the dtype arithmetic is computed
in, the dtype sums and products accumulate in, and how StableHLO spells it. One element
type governs a whole tape; numbers and arrays are converted to it when recorded or fed.

``bf16`` stores bfloat16 (ml-dtypes), computes every operation in f32 and rounds to
nearest-even once per operation; its sums and products accumulate in f32 and round once.

Element types are an open seam: a plugin may register its own (see :mod:`topos.plugins`).
What the stack asks of one beyond the four dtypes: ``zero()``/``one()``, ``sample(x)``
(one rounding from an f64 sample, for seeded initializers), ``literal(x)`` (an exact IEEE
hex literal for StableHLO), ``emittable`` and an optional ``gemm`` hook. The hook is offered
every matrix product of this element (``gemm(a, b, element)``, operands in storage dtype)
and may answer with the product or decline with ``None``; an answer must have the product's
shape and is stored in the element's dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, final

import attrs
import ml_dtypes
import numpy as np

from topos.errors import ElementError, ElementRangeError

__all__ = ["ElementType", "GemmHook", "bf16", "f32", "f64"]

GemmHook = Callable[[np.ndarray[Any, Any], np.ndarray[Any, Any], "ElementType"], "np.ndarray[Any, Any] | None"]
"""``gemm(a, b, element) -> product or None``: a custom element's offer for matrix products."""

# ml_dtypes.finfo is untyped; its bound name gives mypy the signature we rely on.
_finfo: Callable[[np.dtype[Any]], object] = ml_dtypes.finfo
_MLIR_NAMES = {"float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16"}


def _dtype(value: Any) -> np.dtype[Any]:
    # np.dtype(None) means float64; an element without a dtype must be loud, not f64.
    if value is None:
        raise ElementError("an element type needs a numpy dtype (storage, compute, accumulator); got None")
    try:
        dtype: np.dtype[Any] = np.dtype(value)
        _finfo(dtype)
    except (TypeError, ValueError) as error:
        raise ElementError(f"an element type needs a floating numpy dtype; {value!r} is not one ({error})") from None
    return dtype


def _largest(dtype: np.dtype[Any]) -> float:
    """The largest finite magnitude a numeric dtype holds."""
    if dtype.kind in "iu":
        return float(np.iinfo(dtype).max)
    info: Any = _finfo(dtype)
    return float(info.max)


def _f32_rounded_to_odd(wide: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """f64 to f32 rounding to odd: inexact results are truncated and keep a sticky low bit.

    f32 carries far more bits than bf16 needs, so a second rounding (to nearest-even) of
    this value equals rounding the f64 value once.
    """
    with np.errstate(over="ignore"):
        narrow = wide.astype(np.float32)
    back = narrow.astype(np.float64)
    inexact = (back != wide) & ~np.isnan(wide)
    rounded_away = inexact & (np.abs(back) > np.abs(wide))
    truncated = np.where(rounded_away, np.nextafter(narrow, np.float32(0.0)), narrow).astype(np.float32)
    bits = truncated.view(np.uint32) | inexact.astype(np.uint32)
    odd: np.ndarray[Any, Any] = bits.view(np.float32)
    return odd


@final
@attrs.frozen(slots=True, repr=False)
class ElementType:
    """A number type for tapes, tensors and emitted modules.

    Example:
        >>> f32.dtype
        dtype('float32')
        >>> bf16.accumulator
        dtype('float32')
    """

    name: str
    dtype: np.dtype[Any] = attrs.field(converter=_dtype)
    compute: np.dtype[Any] = attrs.field(converter=_dtype)
    accumulator: np.dtype[Any] = attrs.field(converter=_dtype)
    mlir: str
    emittable: bool = True
    gemm: GemmHook | None = None

    def zero(self) -> np.ndarray[Any, Any]:
        """Rank-0 zero in storage dtype."""
        return np.zeros((), dtype=self.dtype)

    def one(self) -> np.ndarray[Any, Any]:
        """Rank-0 one in storage dtype."""
        return np.ones((), dtype=self.dtype)

    def sample(self, value: float) -> np.ndarray[Any, Any]:
        """An f64 sample (from a seeded initializer) rounded once to storage."""
        return self.convert(np.asarray(np.float64(value)))

    def literal(self, value: float) -> str:
        """The value rounded to storage, as the exact IEEE hex literal StableHLO accepts.

        Example:
            >>> f32.literal(1.0), bf16.literal(-0.0)
            ('0x3F800000', '0x8000')
        """
        stored = np.ascontiguousarray(self.sample(value).reshape(1))
        width = stored.dtype.itemsize
        bits = int(stored.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[width])[0])
        return f"0x{bits:0{2 * width}X}"

    @property
    def accumulator_mlir(self) -> str:
        """StableHLO spelling of the accumulator dtype (bf16 and f16 accumulate in f32)."""
        if self.accumulator == self.dtype:
            return self.mlir
        name = _MLIR_NAMES.get(self.accumulator.name)
        if name is None:
            raise ElementError(f"{self.name}: no StableHLO name for accumulator dtype {self.accumulator}")
        return name

    def offer_gemm(self, a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any] | None:
        """Offer a matrix product to this element's ``gemm`` hook; None when none answers."""
        if self.gemm is None:
            return None
        answer = self.gemm(a, b, self)
        if answer is None:
            return None
        product = np.asarray(answer)
        expected = a.shape[:-1] + b.shape[-1:]
        if product.shape != expected:
            raise ElementError(
                f"{self.name}: the gemm hook answered shape {list(product.shape)} for a product "
                f"of shape {list(expected)}"
            )
        return product if product.dtype == self.dtype else product.astype(self.dtype)

    @property
    def largest(self) -> float:
        """The largest finite value of the storage dtype.

        Example:
            >>> f32.largest
            3.4028234663852886e+38
        """
        limits: Any = _finfo(self.dtype)
        return float(limits.max)

    @property
    def widens(self) -> bool:
        """True when arithmetic runs in a wider dtype than storage (bf16 through f32)."""
        return self.compute != self.dtype

    @property
    def accumulates_wider(self) -> bool:
        return self.accumulator != self.dtype

    def convert(self, value: Any) -> np.ndarray[Any, Any]:
        """Convert a number or array-like to this element's storage dtype (one rounding)."""
        array = np.asarray(value)
        if array.dtype == self.dtype:
            return array
        if array.dtype.kind not in "fiub" and array.dtype != ml_dtypes.bfloat16 and array.dtype.kind != "V":
            raise TypeError(f"cannot convert values of dtype {array.dtype} to {self.name}")
        source = array
        if self.dtype == ml_dtypes.bfloat16 and array.dtype.kind in "fiu" and array.dtype.itemsize > 4:
            # ml_dtypes narrows f64 through f32, rounding twice; rounding to odd on the
            # way makes the final rounding the one correct rounding.
            array = _f32_rounded_to_odd(array.astype(np.float64))
        with np.errstate(over="ignore"):
            out = array.astype(self.dtype)
        if source.dtype.kind in "fiu" and _largest(source.dtype) > _largest(self.dtype):
            self._refuse_overflow(source, out)
        return out

    def _refuse_overflow(self, source: np.ndarray[Any, Any], out: np.ndarray[Any, Any]) -> None:
        """A finite value that rounds to an infinity is a mistake; inf and nan given as such pass."""
        wide = out.astype(np.float64)
        overflow = np.isinf(wide) & np.isfinite(source)
        if overflow.any():
            value = float(source[overflow].reshape(-1)[0])
            raise ElementRangeError(
                f"the finite value {value!r} does not fit {self.name} (largest finite "
                f"{_largest(self.dtype)!r}); pass inf explicitly if an infinity is meant"
            )

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name


f32 = ElementType("f32", np.float32, np.float32, np.float32, "f32")
"""IEEE single precision: stored, computed and accumulated in float32."""
f64 = ElementType("f64", np.float64, np.float64, np.float64, "f64")
"""IEEE double precision: stored, computed and accumulated in float64."""
bf16 = ElementType("bf16", ml_dtypes.bfloat16, np.float32, np.float32, "bf16")
"""bfloat16 storage; computed and accumulated in float32, rounded once to storage."""
