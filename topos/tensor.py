"""Tensor: the immutable payload every reading computes with.

A tensor is numpy-backed and read-only. It is stored one of three ways:

- dense: a read-only array (views such as permute, narrow and broadcast stay views);
- constant: one number filling a shape (stored as a zero-stride view, costs one element);
- selection: one-hot rows ``[count, vocab]`` stored as ``count`` indices, so gathering
  from a 50k-row table costs what its indices cost.

Tensors speak the recordable vocabulary (:class:`topos.vocabulary.Vocabulary`: arithmetic,
one method per opcode; :class:`topos.composites.Composites` on top), the same vocabulary recording proxies speak; the
derivative rules are written once against it. Every opcode computes with the kernel the
binding table (:data:`topos.kernels.binding.KERNELS`) gives it, the table lowered plans
use: under ``Numerics.EXACT`` the reference kernels; under ``FAST`` the products and sums
are offered through ``topos.kernels.dispatch`` (native BLAS may serve).

A Python number, or a tensor made from one without an element, is *weak*: it adopts the
element of the tensor it meets, and spreads over that tensor's shape.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Final, NoReturn, Union

import numpy as np
import numpy.typing as npt

from topos.composites import Composites
from topos.errors import (
    CapacityError,
    ElementError,
    FrozenError,
    InvalidArgumentError,
    ShapeMismatchError,
    user_site,
)
from topos.ir import ops
from topos.ir.checks import integer
from topos.ir.element import (
    ALIGNED_FROM,
    ElementType,
    aligned_cast,
    bit_view,
    element_storing,
    f32,
    f64,
)
from topos.ir.infer import infer
from topos.ir.shape import Shape
from topos.kernels.binding import KERNELS
from topos.vocabulary import reshape_target

__all__ = ["Operand", "Tensor", "TensorLike", "reshape_target"]

Array = np.ndarray[Any, Any]
Operand = Union["Tensor", float, int]
TensorLike = Union["Tensor", npt.ArrayLike]
"""What becomes a tensor: a Tensor, or anything ``numpy.asarray`` reads (numbers, nested
lists, arrays). Feeds take these values."""


def _element_of_dtype(dtype: np.dtype[Any]) -> ElementType | None:
    """The element storing a numpy array's dtype; None for integers and bools (they adopt one).

    A floating array never silently becomes f64: with no built-in or registered element
    storing its dtype, it is refused.
    """
    if dtype.kind not in "fVc":
        return None
    found = element_storing(dtype)
    if found is not None:
        return found
    # Imported here: the registry imports the optimizers, which import this module.
    from topos.plugins import element_types

    names = ", ".join(sorted({"f32", "f64", "bf16", *element_types()}))
    raise ElementError(
        f"{user_site()}: no element type stores numpy dtype {dtype}; registered elements: {names} "
        "(convert the array first, e.g. array.astype(np.float32), or register an element plugin)"
    )


def _number(value: Any, what: str) -> float:
    """A Python or numpy number as a float; bools and numbers beyond f64 are refused."""
    if isinstance(value, (bool, np.bool_)):
        raise ElementError(
            f"{what}: {value!r} is a bool; topos refuses bools as numbers (write 1.0 or 0.0, or "
            "build a mask with step())"
        )
    try:
        return float(value)
    except OverflowError:
        digits = len(str(abs(int(value)))) if isinstance(value, int) else 0
        raise ElementError(
            f"{what}: the integer with {digits} digits does not fit any element (largest f64 is "
            f"{float(np.finfo(np.float64).max)!r})"
        ) from None


def _too_large(what: str, shape: tuple[int, ...], element: ElementType) -> CapacityError:
    """The error for an allocation numpy could not make, with the bytes it asked for."""
    count = math.prod(shape)
    return CapacityError(
        f"{user_site()}: {what} of shape {list(shape)} needs {count * element.dtype.itemsize} bytes "
        f"({count} {element} elements), which do not fit in memory"
    )


def _element_type(element: object, what: str) -> None:
    if not isinstance(element, ElementType):
        raise ElementError(f"{user_site()}: {what}: element must be an ElementType (f32, f64, bf16, ...), got {element!r}")


def _refuse_set(name: str) -> Any:
    def refuse(self: Tensor, value: object = None) -> NoReturn:
        raise FrozenError(
            f"Tensor.{name} is read-only: tensors are immutable (tensor of shape {self.shape}); "
            "make a new tensor instead"
        )

    return refuse


def _freeze(array: Array) -> Array:
    if array.flags.writeable:
        array.flags.writeable = False
    return array


_ELEMENTWISE: Final = (ops.Add, ops.Sub, ops.Mul, ops.Div, ops.Powf, ops.Maximum, ops.Step)
_VIEWS: Final = (
    ops.Broadcast, ops.BroadcastAlong, ops.Reshape, ops.Permute, ops.Narrow, ops.Unfold, ops.StopGradient,
)
"""Opcodes whose result is a view or rearrangement: a constant's result is that constant."""


class Tensor(Composites[Operand]):
    """An immutable, numpy-backed payload.

    Example:
        >>> from topos import Tensor, f64
        >>> t = Tensor([[1.0, 2.0], [3.0, 4.0]], element=f64)
        >>> t.shape
        Shape([2, 2])
        >>> (t * 2.0).numpy().tolist()
        [[2.0, 4.0], [6.0, 8.0]]
        >>> Tensor(0.5).scalar()
        0.5
    """

    __slots__ = ("_array", "_element", "_fill", "_indices", "_one", "_shape", "_vocab", "_weak")

    _array: Array | None
    _element: ElementType
    _fill: float | None
    _indices: Array | None
    _one: float
    _shape: Shape
    _vocab: int
    _weak: bool

    if TYPE_CHECKING:

        @property
        def element(self) -> ElementType: ...
        @property
        def shape(self) -> Shape: ...
        @property
        def weak(self) -> bool: ...

    else:
        # Read-only views over the slots (C-level getters keep reads cheap); assigning raises.
        element = property(attrgetter("_element"), _refuse_set("element"), _refuse_set("element"))
        shape = property(attrgetter("_shape"), _refuse_set("shape"), _refuse_set("shape"))
        weak = property(attrgetter("_weak"), _refuse_set("weak"), _refuse_set("weak"))

    def __init__(self, value: TensorLike, element: ElementType | None = None) -> None:
        if isinstance(value, Tensor):
            source = value.numpy()
            weak = value.weak and element is None
            element = element or value.element
        else:
            if isinstance(value, (bool, np.bool_)):
                _number(value, "Tensor")
            if isinstance(value, int) and not -(2**1023) < value < 2**1023:
                _number(value, "Tensor")
            if element is not None and not isinstance(element, ElementType):
                raise ElementError(f"Tensor: element must be an ElementType (f32, f64, bf16, ...), got {element!r}")
            try:
                source = np.asarray(value)
            except (TypeError, ValueError) as error:
                # numpy's words for a ragged nested list ("inhomogeneous shape") or an unreadable object.
                raise InvalidArgumentError(
                    f"{user_site()}: Tensor: cannot read {type(value).__name__} as one array of numbers "
                    f"(nested lists must be rectangular): {error}"
                ) from None
            weak = False
            if element is None:
                # Python numbers and lists carry no element of their own: they adopt one.
                native_dtype = isinstance(value, (np.ndarray, np.generic))
                element = _element_of_dtype(source.dtype) if native_dtype else None
                if element is None:
                    element, weak = f64, True
        try:
            array = element.convert(source)
            if array is source:
                # Large copies land on a 64-byte boundary, so feeds and recorded payloads cross to
                # XLA as they are (see ALIGNED_FROM).
                array = array.copy() if array.nbytes < ALIGNED_FROM else aligned_cast(array, array.dtype)
        except (TypeError, ValueError) as error:
            raise ElementError(f"cannot convert {type(value).__name__} to {element}: {error}") from None
        except MemoryError:
            raise _too_large("Tensor (a copy)", source.shape, element) from None
        self._init(array, element, weak)

    def _init(self, array: Array, element: ElementType, weak: bool) -> None:
        if array.size == 0:
            raise InvalidArgumentError(f"tensors are never empty; got shape {list(array.shape)}")
        self._array = _freeze(array)
        self._fill = None
        self._indices = None
        self._one = 1.0
        self._vocab = 0
        self._element = element
        self._shape = Shape(tuple(int(a) for a in array.shape))
        self._weak = weak

    # ----------------------------------------------------------------- constructors
    @classmethod
    def _wrap(cls, array: Any, element: ElementType, weak: bool = False) -> Tensor:
        tensor = cls.__new__(cls)
        tensor._init(np.asarray(array), element, weak)
        return tensor

    @classmethod
    def _trusted(cls, array: Array, element: ElementType, shape: Shape) -> Tensor:
        """Wrap a kernel's result whose shape and dtype a lowered plan already settled."""
        tensor = cls.__new__(cls)
        if array.flags.writeable:
            array.setflags(write=False)
        tensor._array = array
        tensor._fill = None
        tensor._indices = None
        tensor._one = 1.0
        tensor._vocab = 0
        tensor._element = element
        tensor._shape = shape
        tensor._weak = False
        return tensor

    @classmethod
    def adopt(cls, array: Array, element: ElementType) -> Tensor:
        """Take over a fresh array without copying it, clearing its write flag.

        For producers that computed a result into an array nobody else holds (an
        optimizer's fused pass): the copy :class:`Tensor` makes would double the traffic.
        The array must already be in ``element``'s storage dtype, and the caller must keep
        no writable view of it.

        Example:
            >>> import numpy as np
            >>> from topos import f32
            >>> out = np.empty(3, np.float32)
            >>> _ = np.multiply(np.arange(3, dtype=np.float32), np.float32(2.0), out=out)
            >>> t = Tensor.adopt(out, f32)
            >>> t.tolist(), out.flags.writeable
            ([0.0, 2.0, 4.0], False)
        """
        _element_type(element, "Tensor.adopt")
        if not isinstance(array, np.ndarray) or array.dtype != element.dtype:
            kind = array.dtype if isinstance(array, np.ndarray) else type(array).__name__
            raise ElementError(f"{user_site()}: Tensor.adopt needs a numpy array of {element.dtype} for {element}, got {kind}")
        tensor = cls.__new__(cls)
        tensor._init(array, element, False)
        return tensor

    @classmethod
    def from_numpy(cls, array: npt.ArrayLike, element: ElementType | None = None) -> Tensor:
        """Copy a numpy array (converted once to ``element``, or its own dtype's element)."""
        return cls(np.array(array), element)

    @classmethod
    def filled(cls, shape: Sequence[int] | Shape, value: float, element: ElementType = f32) -> Tensor:
        """A constant: one number filling ``shape``, stored as one element."""
        extent = Shape.of(shape)
        _element_type(element, "Tensor.filled")
        try:
            if isinstance(value, (bool, np.bool_, str, bytes)):
                raise TypeError("not a number")
            one = element.convert(value).reshape(())
        except (TypeError, ValueError, AttributeError):
            raise InvalidArgumentError(
                f"{user_site()}: Tensor.filled takes one number to fill {extent} with, got {type(value).__name__} {value!r}"
            ) from None
        tensor = cls._wrap(np.broadcast_to(one, extent.axes), element)
        tensor._fill = float(one.astype(np.float64))
        tensor._shape = extent  # the caller's (often a node's): one Shape per recorded constant less
        return tensor

    @classmethod
    def zeros(cls, shape: Sequence[int] | Shape, element: ElementType = f32) -> Tensor:
        return cls.filled(shape, 0.0, element)

    @classmethod
    def ones(cls, shape: Sequence[int] | Shape, element: ElementType = f32) -> Tensor:
        return cls.filled(shape, 1.0, element)

    @classmethod
    def selection(
        cls, indices: Sequence[int] | Array, vocab: int, element: ElementType = f32, one: float = 1.0
    ) -> Tensor:
        """One-hot rows ``[len(indices), vocab]`` stored as indices (``one`` marks each row)."""
        vocab = integer(vocab, "Tensor.selection: vocab", minimum=1)
        _element_type(element, "Tensor.selection")
        given = np.asarray(indices)
        if given.dtype.kind == "b" or given.dtype.kind not in "iuf":
            raise InvalidArgumentError(
                f"Tensor.selection: indices must be integers, got an array of dtype {given.dtype}"
            )
        if given.dtype.kind == "f":
            fractional = given != np.floor(given)
            if fractional.any() or not np.isfinite(given).all():
                raise InvalidArgumentError(
                    f"Tensor.selection: indices must be integral, got {given.reshape(-1)[fractional.reshape(-1)][:4].tolist()} "
                    "(truncating them would pick other rows)"
                )
        index = given.astype(np.int64).reshape(-1)
        if index.size == 0:
            raise InvalidArgumentError("a selection needs at least one index")
        if vocab < 1 or int(index.min()) < 0 or int(index.max()) >= vocab:
            raise InvalidArgumentError(
                f"selection indices must lie in [0, {vocab}); got range "
                f"[{int(index.min())}, {int(index.max())}]"
            )
        tensor = cls.__new__(cls)
        tensor._array = None
        tensor._fill = None
        tensor._indices = _freeze(index.copy())
        tensor._one = float(element.convert(one).astype(np.float64))
        tensor._vocab = int(vocab)
        tensor._element = element
        tensor._shape = Shape((int(index.size), int(vocab)))
        tensor._weak = False
        return tensor

    # ----------------------------------------------------------------- reads
    def numpy(self) -> Array:
        """The payload as a read-only numpy array (a selection materializes here)."""
        if self._array is None:
            assert self._indices is not None
            try:
                dense = np.zeros(self.shape.axes, dtype=self.element.dtype)
            except MemoryError:
                raise _too_large("Tensor.numpy of a selection", self.shape.axes, self.element) from None
            dense[np.arange(self._indices.size), self._indices] = self._one
            self._array = _freeze(dense)
        return self._array

    def scalar(self) -> float:
        """The single element as a Python float (any shape of volume 1)."""
        if self.shape.volume != 1:
            raise ShapeMismatchError(f"scalar() needs a single element, tensor has shape {self.shape}")
        return float(self.numpy().reshape(()).astype(np.float64))

    def tolist(self) -> Any:
        try:
            return self.numpy().astype(np.float64).tolist()
        except MemoryError:
            raise _too_large("Tensor.tolist", self.shape.axes, f64) from None

    @property
    def is_constant(self) -> bool:
        return self._fill is not None

    @property
    def fill(self) -> float | None:
        """The fill value of a constant payload, else None."""
        return self._fill

    @property
    def selection_one(self) -> float:
        """The value marking each row of a selection payload (1.0 for a plain one-hot)."""
        return self._one

    @property
    def is_selection(self) -> bool:
        return self._indices is not None

    @property
    def indices(self) -> Array | None:
        """The row indices of a selection payload, else None."""
        return self._indices

    _REPR_LIMIT = 64
    """Payloads larger than this print a summary, so a 50k-row table stays one line."""

    def __repr__(self) -> str:
        if self._fill is not None:
            return f"Tensor(filled {self._fill!r}, shape={self.shape}, element={self.element})"
        if self._indices is not None:
            if self._indices.size > self._REPR_LIMIT:
                head = self._indices[:8].tolist()
                return f"Tensor(selection {head!r} ... ({self._indices.size} rows), vocab={self._vocab}, element={self.element})"
            return f"Tensor(selection {self._indices.tolist()!r}, vocab={self._vocab}, element={self.element})"
        if self.shape.volume > self._REPR_LIMIT:
            flat = self.numpy().reshape(-1)
            head = ", ".join(repr(float(v)) for v in flat[:4].astype(np.float64))
            return f"Tensor([{head}, ...], shape={self.shape}, element={self.element})"
        return f"Tensor({self.numpy().astype(np.float64).tolist()!r}, element={self.element})"

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Array:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    # ----------------------------------------------------------------- plumbing
    def _coerce(self, other: Operand) -> tuple[Tensor, Tensor]:
        """Bring a partner to this tensor's element and shape (weak partners adopt)."""
        if not isinstance(other, Tensor):
            if not isinstance(other, (int, float, np.floating, np.integer)) or isinstance(other, (bool, np.bool_)):
                kind = "a bool" if isinstance(other, (bool, np.bool_)) else type(other).__name__
                raise ElementError(
                    f"cannot combine a tensor of shape {self.shape} with {kind} ({other!r}); "
                    "operands are tensors or numbers (bools are refused: write 1.0 or 0.0)"
                )
            number = _number(other, "tensor operand")
            if self.weak:
                return self, Tensor._wrap(np.asarray(number), f64, weak=True)._spread(self.shape)
            return self, Tensor.filled(self.shape, number, self.element)
        left, right = self, other
        # Weakness decides spreading too, so remember it before adopting an element.
        left_weak, right_weak = left.weak, right.weak
        if left.element != right.element:
            if left_weak and not right_weak:
                left = Tensor._wrap(right.element.convert(left.numpy()), right.element)
            elif right_weak and not left_weak:
                right = Tensor._wrap(left.element.convert(right.numpy()), left.element)
            elif not (left_weak and right_weak):
                raise ElementError(f"cannot combine a {left.element} tensor with a {right.element} tensor")
        if left.shape != right.shape:
            if right_weak and right.rank == 0:
                right = right._spread(left.shape)
            elif left_weak and left.rank == 0:
                left = left._spread(right.shape)
        return left, right

    def _fill_array(self) -> Array:
        """The single value of a constant (or single-element) tensor as a rank-0 array."""
        if self._fill is not None:
            return np.asarray(self._fill).astype(self.element.dtype)
        return self.numpy().reshape(())

    def _spread(self, shape: Shape) -> Tensor:
        one = self._fill_array()
        out = Tensor._wrap(np.broadcast_to(one, shape.axes), self.element, self.weak)
        out._fill = float(one.astype(np.float64))
        return out

    def _binary(self, op: ops.Op, other: Operand, reverse: bool = False) -> Tensor:
        left, right = self._coerce(other)
        if isinstance(op, (ops.Gather, ops.Scatter)):
            # Only the selection adopts the table's element; the table stays as given.
            left = self
        if reverse:
            left, right = right, left
        return left._apply(op, right)

    def _constant(self, shape: Shape | Sequence[int], value: float) -> Tensor:
        return Tensor.filled(shape, value, self.element)

    def _selection(self, indices: Any, vocab: int) -> Tensor:
        return Tensor.selection(indices, vocab, self.element)

    def _data(self, array: Any) -> Tensor:
        return Tensor(np.ascontiguousarray(array), element=self.element)

    def _raw(self) -> Any:
        """This tensor as a kernel payload: its array, or itself for a selection."""
        return self if self._indices is not None else self.numpy()

    def _apply(self, op: ops.Op, *others: Tensor) -> Tensor:
        """Compute ``op`` over this tensor and ``others`` with the kernel the binding gives it.

        Storage rules on top of the kernel: elementwise arithmetic of two constants, and the
        negation of a constant, stay constants (the kernel on a length-1 contiguous run is the
        same bits as on the dense spread: the reference's layout rule; rank 0 would not be);
        a sum of a zero constant is a zero constant; views of a constant stay constants.

        Two NaN constants are the exception: which operand's NaN numpy keeps depends on the
        element's position in the run (its vector body keeps the left one, its scalar tail
        the right), so they are spread and computed at the result's shape, as a dense
        operand pair of the same values would be.
        """
        shape = infer(op, (self.shape, *(o.shape for o in others)))
        element = self.element
        kernel = KERNELS[type(op)](op, element)
        weak = self.weak
        fill = self._fill
        with np.errstate(all="ignore"):
            if isinstance(op, _ELEMENTWISE):
                other = others[0]
                weak = weak and other.weak
                if fill is not None and other._fill is not None and not (fill != fill and other._fill != other._fill):
                    one = kernel(self._fill_array().reshape(1), other._fill_array().reshape(1)).reshape(())
                    out = Tensor._wrap(np.broadcast_to(one, shape.axes), element, weak)
                    out._fill = float(one.astype(np.float64))
                    return out
            elif fill is not None and isinstance(op, ops.Neg):
                return Tensor.filled(shape, -fill, element)
            elif fill == 0.0 and isinstance(op, (ops.Sum, ops.SumAlong)):
                return Tensor.filled(shape, 0.0, element)
            out = Tensor._wrap(kernel(self._raw(), *(o._raw() for o in others)), element, weak)
        if fill is not None and isinstance(op, _VIEWS):
            out._fill = fill
        return out

    # ----------------------------------------------------------------- elements
    def convert(self, element: ElementType) -> Tensor:
        """The same values rounded once to another element type.

        Storage is kept: a constant stays one number and a selection stays indices.
        """
        if not isinstance(element, ElementType):
            raise ElementError(f"convert() takes an ElementType (f32, f64, bf16, ...), got {element!r}")
        if self._indices is not None:
            return Tensor.selection(self._indices, self._vocab, element, self._one)
        if self._fill is not None:
            return Tensor.filled(self.shape, self._fill, element)
        return Tensor._wrap(element.convert(self.numpy()), element)

    def bits(self) -> Array:
        """The raw bit pattern, for bitwise comparisons (uint8/16/32/64 by storage width)."""
        try:
            array = np.ascontiguousarray(self.numpy())
        except MemoryError:
            raise _too_large("Tensor.bits", self.shape.axes, self.element) from None
        return bit_view(array)

    def _repr_html_(self) -> str:
        from topos.render import tensor_html

        return tensor_html(self)


def _within_memory(method: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """Turn numpy's MemoryError inside a computing method into a named CapacityError."""

    @functools.wraps(method)
    def wrapper(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        try:
            return method(self, *args, **kwargs)
        except MemoryError:
            name = method.__name__.strip("_")
            raise CapacityError(
                f"Tensor.{name} on a {self.element} tensor of shape {self.shape}: the result does "
                "not fit in memory"
            ) from None

    return wrapper


# Only the methods that allocate a result of their own: views and reads stay unwrapped.
for _name in (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__neg__", "__rpow__", "__rmatmul__", "powf", "maximum", "step", "map",
    "matmul", "sum", "sum_along", "logsumexp", "log_softmax", "pad", "fold", "gather",
    "scatter", "convert",
):  # fmt: skip
    setattr(Tensor, _name, _within_memory(getattr(Tensor, _name)))
