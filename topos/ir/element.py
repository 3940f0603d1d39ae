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

Everything else the stack knows about an element is derived here from its dtypes, so a
plugin's element is served exactly like a built-in:

- names on other roads: :attr:`ElementType.safetensors` (checkpoints) and
  :func:`stablehlo_name` (``compute_mlir``/``accumulator_mlir``; ``mlir`` is given). An IEEE
  binary dtype of ``n`` bits is ``Fn``/``fn``, bfloat16 is ``BF16``/``bf16``; other dtypes
  have no name there.
- :attr:`ElementType.roundoff`, the unit roundoff ``u`` (half the storage dtype's epsilon),
  and from it the gradient checker's numbers (with ``c`` the cube root of ``u``, the scale
  at which a central difference balances truncation against cancellation):

  - :attr:`ElementType.gradcheck_step`: the largest power of ten not above ``c``
    (f64 1e-6, f32 1e-3, f16 1e-2, bf16 1e-1);
  - :meth:`ElementType.gradcheck_tolerance` against f64 differences: ``c / 3`` rounded down
    to the 1-2-5 ladder (f64 1e-6, f32 1e-3, f16 2e-2, bf16 5e-2): what the analytic
    side's own rounding may cost;
  - on the native road (differences in the element itself) the evaluations' own rounding
    is divided by the step too: the f64-road value, widened towards ``1024 u / h`` (``h``
    the step; rounded down to the ladder) but by this widening never past 2e-2, beyond
    which a difference check vouches for little and the noise floor marks the entry
    inconclusive instead (f64 1e-6, f32 2e-2, f16 2e-2, bf16 5e-2).
- :func:`element_storing` finds the element for a numpy dtype (built-ins first, then the
  plugin registry), which is how ``Tensor(array)`` and a foreign checkpoint pick one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final, Literal, Protocol, SupportsFloat, final

import attrs
import ml_dtypes
import numpy as np
import numpy.typing as npt

from topos.errors import ElementError, ElementRangeError

__all__ = ["ElementType", "GemmHook", "bf16", "element_storing", "f32", "f64", "stablehlo_name", "stablehlo_storage"]

GemmHook = Callable[[np.ndarray[Any, Any], np.ndarray[Any, Any], "ElementType"], "np.ndarray[Any, Any] | None"]
"""``gemm(a, b, element) -> product or None``: a custom element's offer for matrix products."""

class _Limits(Protocol):
    """What topos reads of a dtype's ``finfo``."""

    @property
    def max(self) -> SupportsFloat: ...
    @property
    def eps(self) -> SupportsFloat: ...


# ml_dtypes.finfo is untyped; its bound name gives mypy the signature we rely on.
_finfo: Callable[[np.dtype[Any]], _Limits] = ml_dtypes.finfo

# Past this a difference check vouches for little; the noise floor takes over (see above).
_WIDEST_NATIVE_TOLERANCE = 2e-2
# Rounding of a whole evaluation, in unit roundoffs, that the native road allows per step.
_NATIVE_ROUNDINGS = 1024.0


def _ieee_bits(dtype: np.dtype[Any]) -> int | None:
    """Width of an IEEE binary float dtype (numpy's float16/32/64); None for any other."""
    # longdouble is x87 extended on most hosts, not an IEEE interchange format.
    if dtype.kind == "f" and dtype.itemsize in (2, 4, 8) and dtype.name == f"float{8 * dtype.itemsize}":
        return 8 * dtype.itemsize
    return None


# The two one-byte formats the safetensors format names; the other FP8 variants it does not.
_SAFETENSORS_FP8 = {"float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}


def bit_view(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A contiguous array's storage read as unsigned integers of the same width (1, 2, 4 or 8 bytes).

    Every width numpy can store an element in has its unsigned twin, so one-byte formats
    (the FP8 types of ml_dtypes) read as ``uint8`` just as f32 reads as ``uint32``.

    Example:
        >>> bit_view(np.array([1.0], np.float32)), bit_view(np.zeros(1, ml_dtypes.float8_e4m3fn)).dtype
        (array([1065353216], dtype=uint32), dtype('uint8'))
    """
    return array.view(np.dtype(f"u{array.dtype.itemsize}"))


def stablehlo_name(dtype: npt.DTypeLike) -> str | None:
    """How StableHLO spells a numpy dtype's numbers (``f16``, ``f32``, ``f64``, ``bf16``); None if it can't.

    Example:
        >>> stablehlo_name(np.float16), stablehlo_name(ml_dtypes.bfloat16), stablehlo_name(np.int32)
        ('f16', 'bf16', None)
    """
    found = np.dtype(dtype)
    if found == ml_dtypes.bfloat16:
        return "bf16"
    bits = _ieee_bits(found)
    return None if bits is None else f"f{bits}"


def stablehlo_storage(name: str) -> np.dtype[Any] | None:
    """The numpy dtype holding StableHLO's floating type ``name``; the inverse of :func:`stablehlo_name`.

    Example:
        >>> stablehlo_storage("f16"), stablehlo_storage("bf16"), stablehlo_storage("i32")
        (dtype('float16'), dtype(bfloat16), None)
    """
    if name == "bf16":
        half: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
        return half
    if name.startswith("f") and name[1:].isdigit():
        try:
            found: np.dtype[Any] = np.dtype(f"float{name[1:]}")
        except TypeError:
            return None
        return found if stablehlo_name(found) == name else None
    return None


def _power_of_ten_at_most(value: float) -> int:
    """The exponent ``k`` of the largest ``10**k`` not above ``value``, decided on exact decimals."""
    k = math.floor(math.log10(value))
    while float(f"1e{k}") > value:
        k -= 1
    while float(f"1e{k + 1}") <= value:
        k += 1
    return k


def _ladder_down(value: float) -> float:
    """The largest of ..., 0.1, 0.2, 0.5, 1, 2, 5, ... not above ``value`` (parsed from decimal)."""
    k = _power_of_ten_at_most(value)
    return max(float(f"{m}e{k}") for m in (1, 2, 5) if float(f"{m}e{k}") <= value)


def _dtype(value: npt.DTypeLike) -> np.dtype[Any]:
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
    info = _finfo(dtype)
    return float(info.max)


ALIGNED_FROM: Final = 4096
"""Arrays of this many bytes or more that a conversion or a tensor's own copy makes start on
a 64-byte boundary: XLA:CPU reads such an argument in place and copies any other on every
call. Smaller ones keep numpy's placement: XLA's copy of them costs less than aligning."""


def aligned_cast(array: np.ndarray[Any, Any], dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """``array.astype(dtype)``, the result C-ordered on a 64-byte boundary when it holds
    ``ALIGNED_FROM`` bytes or more. The cast is numpy's either way, so are the bits.

    Example:
        >>> import numpy as np
        >>> out = aligned_cast(np.arange(2048.0), np.dtype(np.float32))
        >>> out.ctypes.data % 64, out.dtype.name, float(out[-1])
        (0, 'float32', 2047.0)
    """
    size = array.size * dtype.itemsize
    if size < ALIGNED_FROM:
        return array.astype(dtype)
    raw = np.empty(size + 64, np.uint8)
    start = -raw.ctypes.data % 64
    out = raw[start : start + size].view(dtype).reshape(array.shape)
    np.copyto(out, array, casting="unsafe")
    return out


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

    def literal(self, value: npt.ArrayLike) -> str:
        """The value rounded once to storage, as the exact IEEE hex literal StableHLO accepts.

        A value already stored in this element's dtype keeps its bits (a NaN its payload).

        Example:
            >>> f32.literal(1.0), bf16.literal(-0.0)
            ('0x3F800000', '0x8000')
        """
        stored = np.ascontiguousarray(self.convert(np.asarray(value)).reshape(1))
        width = stored.dtype.itemsize
        bits = int(bit_view(stored)[0])
        return f"0x{bits:0{2 * width}X}"

    def _spelling(self, dtype: np.dtype[Any], role: str) -> str:
        if dtype == self.dtype:
            return self.mlir
        name = stablehlo_name(dtype)
        if name is None:
            raise ElementError(f"{self.name}: no StableHLO name for {role} dtype {dtype}")
        return name

    @property
    def accumulator_mlir(self) -> str:
        """StableHLO spelling of the accumulator dtype (bf16 and f16 accumulate in f32)."""
        return self._spelling(self.accumulator, "accumulator")

    @property
    def compute_mlir(self) -> str:
        """StableHLO spelling of the compute dtype (bf16 and f16 compute in f32)."""
        return self._spelling(self.compute, "compute")

    @property
    def safetensors(self) -> str | None:
        """The safetensors dtype name of the storage (``F16``, ``F32``, ``F64``, ``BF16``); None if none.

        Example:
            >>> f32.safetensors, bf16.safetensors
            ('F32', 'BF16')
        """
        if self.dtype == ml_dtypes.bfloat16:
            return "BF16"
        if self.dtype.name in _SAFETENSORS_FP8:
            return _SAFETENSORS_FP8[self.dtype.name]
        bits = _ieee_bits(self.dtype)
        return None if bits is None else f"F{bits}"

    @property
    def disk_unit(self) -> np.dtype[Any]:
        """The little-endian unsigned integer a file stores one element's bits in."""
        return np.dtype(f"<u{self.dtype.itemsize}")

    @property
    def roundoff(self) -> float:
        """The unit roundoff of storage: half its machine epsilon (f32: 2**-24).

        Example:
            >>> f32.roundoff == 2.0**-24, bf16.roundoff == 2.0**-8
            (True, True)
        """
        limits = _finfo(self.dtype)
        return float(limits.eps) / 2.0

    @property
    def gradcheck_step(self) -> float:
        """The gradient checker's relative step for differences taken in this element (module docstring).

        Example:
            >>> f64.gradcheck_step, f32.gradcheck_step, bf16.gradcheck_step
            (1e-06, 0.001, 0.1)
        """
        return float(f"1e{_power_of_ten_at_most(self.roundoff ** (1.0 / 3.0))}")

    def gradcheck_tolerance(self, road: Literal["f64", "native"] = "f64") -> float:
        """The gradient checker's pass threshold for gradients in this element (module docstring).

        ``road`` is where the differences are taken: ``"f64"`` (the default) or ``"native"``
        (in this element).

        Example:
            >>> [e.gradcheck_tolerance() for e in (f64, f32, bf16)]
            [1e-06, 0.001, 0.05]
            >>> [e.gradcheck_tolerance("native") for e in (f64, f32, bf16)]
            [1e-06, 0.02, 0.05]
        """
        if road not in ("f64", "native"):
            raise ElementError(f"{self.name}: the gradient check road is 'f64' or 'native', not {road!r}")
        own = _ladder_down(self.roundoff ** (1.0 / 3.0) / 3.0)
        if road == "f64":
            return own
        cancellation = _ladder_down(_NATIVE_ROUNDINGS * self.roundoff / self.gradcheck_step)
        return max(own, min(cancellation, _WIDEST_NATIVE_TOLERANCE))

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
        limits = _finfo(self.dtype)
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
            out = aligned_cast(array, self.dtype)
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


def element_storing(dtype: npt.DTypeLike) -> ElementType | None:
    """The element whose storage is ``dtype``: a built-in first, then a registered plugin's.

    The plugin registry is consulted only when no built-in matches (imported here, lazily,
    because the registry itself is built from element types).

    Example:
        >>> element_storing(np.float32), element_storing(np.int8)
        (f32, None)
    """
    try:
        wanted = np.dtype(dtype)
    except TypeError:
        return None
    for builtin in (f32, f64, bf16):
        if builtin.dtype == wanted:
            return builtin
    if wanted.kind not in "fVc":
        return None
    from topos.plugins import element_types

    for element in element_types().values():
        if element.dtype == wanted:
            return element
    return None
