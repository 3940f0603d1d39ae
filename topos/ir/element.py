"""Element types: what the whole stack needs to know about a number.

An :class:`ElementType` names its numpy storage dtype, the dtype arithmetic is computed
in, the dtype sums and products accumulate in, and how StableHLO spells it. One element
type governs a whole tape; numbers and arrays are converted to it when recorded or fed.

``bf16`` stores bfloat16 (ml-dtypes), computes every operation in f32 and rounds to
nearest-even once per operation; its sums and products accumulate in f32 and round once.
"""

from __future__ import annotations

from typing import Any, final

import attrs
import ml_dtypes
import numpy as np

__all__ = ["ElementType", "bf16", "f32", "f64"]


def _dtype(value: Any) -> np.dtype[Any]:
    dtype: np.dtype[Any] = np.dtype(value)
    return dtype


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
        return array.astype(self.dtype)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name


f32 = ElementType("f32", np.float32, np.float32, np.float32, "f32")
f64 = ElementType("f64", np.float64, np.float64, np.float64, "f64")
bf16 = ElementType("bf16", ml_dtypes.bfloat16, np.float32, np.float32, "bf16")
