"""Tensor: the immutable payload every reading computes with.

A tensor is numpy-backed and read-only. It is stored one of three ways:

- dense: a read-only array (views such as permute, narrow and broadcast stay views);
- constant: one number filling a shape (stored as a zero-stride view, costs one element);
- selection: one-hot rows ``[count, vocab]`` stored as ``count`` indices, so gathering
  from a 50k-row table costs what its indices cost.

Tensors implement the recordable vocabulary (arithmetic plus one method per opcode), the
same vocabulary recording proxies implement; the derivative rules are written once against
it. Under ``Numerics.EXACT`` every method runs the reference kernels; under ``FAST`` the
products and sums are offered through ``topos.backends.dispatch`` (native BLAS may serve).

A Python number, or a tensor made from one without an element, is *weak*: it adopts the
element of the tensor it meets, and spreads over that tensor's shape.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NoReturn, Union

import numpy as np
import numpy.typing as npt

from topos.backends import dispatch, reference
from topos.errors import (
    CapacityError,
    ElementError,
    FrozenError,
    InvalidArgumentError,
    ShapeMismatchError,
    UnsupportedError,
    user_site,
)
from topos.ir import ops
from topos.ir.checks import integer, is_integer
from topos.ir.element import ElementType, element_storing, f32, f64
from topos.ir.infer import infer
from topos.ir.shape import Shape

__all__ = ["Operand", "Tensor", "TensorLike"]

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


class Tensor:
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
            source = np.asarray(value)
            weak = False
            if element is None:
                # Python numbers and lists carry no element of their own: they adopt one.
                native_dtype = isinstance(value, (np.ndarray, np.generic))
                element = _element_of_dtype(source.dtype) if native_dtype else None
                if element is None:
                    element, weak = f64, True
        try:
            array = element.convert(source)
        except (TypeError, ValueError) as error:
            raise ElementError(f"cannot convert {type(value).__name__} to {element}: {error}") from None
        if array is source:
            array = array.copy()
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
            array.flags.writeable = False
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
    def from_numpy(cls, array: npt.ArrayLike, element: ElementType | None = None) -> Tensor:
        """Copy a numpy array (converted once to ``element``, or its own dtype's element)."""
        return cls(np.array(array), element)

    @classmethod
    def filled(cls, shape: Sequence[int] | Shape, value: float, element: ElementType = f32) -> Tensor:
        """A constant: one number filling ``shape``, stored as one element."""
        extent = Shape.of(shape)
        one = element.convert(value).reshape(())
        tensor = cls._wrap(np.broadcast_to(one, extent.axes), element)
        tensor._fill = float(one.astype(np.float64))
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
            dense = np.zeros(self.shape.axes, dtype=self.element.dtype)
            dense[np.arange(self._indices.size), self._indices] = self._one
            self._array = _freeze(dense)
        return self._array

    def scalar(self) -> float:
        """The single element as a Python float (any shape of volume 1)."""
        if self.shape.volume != 1:
            raise ShapeMismatchError(f"scalar() needs a single element, tensor has shape {self.shape}")
        return float(self.numpy().reshape(()).astype(np.float64))

    def tolist(self) -> Any:
        return self.numpy().astype(np.float64).tolist()

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

    @property
    def rank(self) -> int:
        return self.shape.rank

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
    def _same(self, array: Any) -> Tensor:
        return Tensor._wrap(array, self.element, self.weak)

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

    def _binary(self, op: ops.Op, other: Operand, kernel: Any, reverse: bool = False) -> Tensor:
        left, right = self._coerce(other)
        if reverse:
            left, right = right, left
        shape = infer(op, (left.shape, right.shape))
        element = left.element
        weak = left.weak and right.weak
        if left._fill is not None and right._fill is not None:
            # Constants stay constants: the kernel on a length-1 contiguous run is the same
            # bits as on the dense spread (the reference's layout rule; rank 0 would not be).
            one = kernel(left._fill_array().reshape(1), right._fill_array().reshape(1), element).reshape(())
            out = Tensor._wrap(np.broadcast_to(one, shape.axes), element, weak)
            out._fill = float(one.astype(np.float64))
            return out
        return Tensor._wrap(kernel(left.numpy(), right.numpy(), element), element, weak)

    # ----------------------------------------------------------------- arithmetic
    def __add__(self, other: Operand) -> Tensor:
        return self._binary(ops.Add(), other, reference.add)

    def __radd__(self, other: Operand) -> Tensor:
        return self._binary(ops.Add(), other, reference.add, reverse=True)

    def __sub__(self, other: Operand) -> Tensor:
        return self._binary(ops.Sub(), other, reference.sub)

    def __rsub__(self, other: Operand) -> Tensor:
        return self._binary(ops.Sub(), other, reference.sub, reverse=True)

    def __mul__(self, other: Operand) -> Tensor:
        return self._binary(ops.Mul(), other, reference.mul)

    def __rmul__(self, other: Operand) -> Tensor:
        return self._binary(ops.Mul(), other, reference.mul, reverse=True)

    def __truediv__(self, other: Operand) -> Tensor:
        return self._binary(ops.Div(), other, reference.div)

    def __rtruediv__(self, other: Operand) -> Tensor:
        return self._binary(ops.Div(), other, reference.div, reverse=True)

    def __neg__(self) -> Tensor:
        if self._fill is not None:
            return Tensor.filled(self.shape, -self._fill, self.element)
        return self._same(reference.neg(self.numpy(), self.element))

    def __matmul__(self, other: Tensor) -> Tensor:
        return self.matmul(other)

    def powf(self, exponent: Operand) -> Tensor:
        return self._binary(ops.Powf(), exponent, reference.powf)

    def maximum(self, other: Operand) -> Tensor:
        return self._binary(ops.Maximum(), other, reference.maximum)

    def step(self, threshold: Operand) -> Tensor:
        return self._binary(ops.Step(), threshold, reference.step)

    def map(self, operation: ops.MapOperation) -> Tensor:
        return self._same(reference.map_operation(operation, self.numpy(), self.element))

    def exp(self) -> Tensor:
        return self.map(ops.MapOperation.EXP)

    def ln(self) -> Tensor:
        return self.map(ops.MapOperation.LN)

    def sqrt(self) -> Tensor:
        return self.map(ops.MapOperation.SQRT)

    def tanh(self) -> Tensor:
        return self.map(ops.MapOperation.TANH)

    def sin(self) -> Tensor:
        return self.map(ops.MapOperation.SIN)

    def cos(self) -> Tensor:
        return self.map(ops.MapOperation.COS)

    def log1p(self) -> Tensor:
        return self.map(ops.MapOperation.LOG1P)

    def expm1(self) -> Tensor:
        return self.map(ops.MapOperation.EXPM1)

    def erf(self) -> Tensor:
        return self.map(ops.MapOperation.ERF)

    def erf_derivative(self) -> Tensor:
        return self.map(ops.MapOperation.ERF_DERIVATIVE)

    # ----------------------------------------------------------------- products and sums
    def matmul(self, other: Tensor) -> Tensor:
        left, right = self._coerce(other)
        infer(ops.MatMul(), (left.shape, right.shape))
        return left._same(dispatch.offer_gemm(left.numpy(), right.numpy(), left.element))

    def sum(self) -> Tensor:
        if self._fill == 0.0:
            return Tensor.filled((), 0.0, self.element)
        return self._same(dispatch.offer_sum(self.numpy(), self.element))

    def sum_along(self, axis: int) -> Tensor:
        shape = infer(ops.SumAlong(axis), (self.shape,))
        if self._fill == 0.0:
            return Tensor.filled(shape, 0.0, self.element)
        return self._same(dispatch.offer_sum_along(self.numpy(), axis, self.element))

    def logsumexp(self, axis: int) -> Tensor:
        infer(ops.LogSumExp(axis), (self.shape,))
        return self._same(reference.logsumexp(self.numpy(), axis, self.element, dispatch.offer_sum_along))

    def log_softmax(self, axis: int) -> Tensor:
        infer(ops.LogSoftmax(axis), (self.shape,))
        return self._same(reference.log_softmax(self.numpy(), axis, self.element, dispatch.offer_sum_along))

    # ----------------------------------------------------------------- layout
    def _layout(self, array: Any) -> Tensor:
        """A view or rearrangement of this payload: a constant stays a constant."""
        out = self._same(array)
        if self._fill is not None:
            out._fill = self._fill
        return out

    def broadcast(self, shape: Sequence[int] | Shape) -> Tensor:
        target = Shape.of(shape)
        infer(ops.Broadcast(target), (self.shape,))
        return self._layout(reference.broadcast(self.numpy(), target.axes))

    def broadcast_along(self, axis: int, extent: int) -> Tensor:
        op = ops.BroadcastAlong(axis, extent)
        infer(op, (self.shape,))
        return self._layout(reference.broadcast_along(self.numpy(), axis, extent))

    def reshape(self, shape: Sequence[int] | Shape) -> Tensor:
        op = ops.Reshape(reshape_target(shape, self.shape))
        target = infer(op, (self.shape,))
        return self._layout(reference.reshape(self.numpy(), target.axes))

    def permute(self, order: Sequence[int]) -> Tensor:
        op = ops.Permute(order)
        infer(op, (self.shape,))
        return self._layout(reference.permute(self.numpy(), op.order))

    def narrow(self, axis: int, start: int, length: int) -> Tensor:
        op = ops.Narrow(axis, start, length)
        infer(op, (self.shape,))
        return self._layout(reference.narrow(self.numpy(), axis, start, length))

    def pad(self, axis: int, start: int, extent: int) -> Tensor:
        op = ops.Pad(axis, start, extent)
        infer(op, (self.shape,))
        return self._same(reference.pad(self.numpy(), axis, start, extent, self.element))

    def unfold(self, axis: int, size: int, step: int, dilation: int = 1) -> Tensor:
        op = ops.Unfold(axis, size, step, dilation)
        infer(op, (self.shape,))
        return self._layout(reference.unfold(self.numpy(), axis, size, step, dilation))

    def fold(self, axis: int, size: int, step: int, dilation: int, extent: int) -> Tensor:
        op = ops.Fold(axis, size, step, dilation, extent)
        infer(op, (self.shape,))
        return self._same(reference.fold(self.numpy(), axis, size, step, dilation, extent, self.element))

    def gather(self, selection: Tensor) -> Tensor:
        _, selection = self._coerce(selection)
        infer(ops.Gather(), (self.shape, selection.shape))
        if selection._indices is not None:
            rows = reference.gather_rows(self.numpy(), selection._indices, selection._one, self.element)
            return self._same(rows)
        return self._same(reference.gather_dense(self.numpy(), selection.numpy(), self.element))

    def scatter(self, selection: Tensor) -> Tensor:
        _, selection = self._coerce(selection)
        infer(ops.Scatter(), (self.shape, selection.shape))
        if selection._indices is not None:
            out = reference.scatter_rows(
                self.numpy(), selection._indices, selection._vocab, selection._one, self.element
            )
            return self._same(out)
        return self._same(reference.scatter_dense(self.numpy(), selection.numpy(), self.element))

    # ----------------------------------------------------------------- identities
    def zero_like(self) -> Tensor:
        return Tensor.filled(self.shape, 0.0, self.element)

    def one_like(self) -> Tensor:
        return Tensor.filled(self.shape, 1.0, self.element)

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

    # ----------------------------------------------------------------- not yet in the vocabulary
    def __lt__(self, other: object) -> NoReturn:
        _no_comparison(self.shape, "<")

    def __le__(self, other: object) -> NoReturn:
        _no_comparison(self.shape, "<=")

    def __gt__(self, other: object) -> NoReturn:
        _no_comparison(self.shape, ">")

    def __ge__(self, other: object) -> NoReturn:
        _no_comparison(self.shape, ">=")

    def __getitem__(self, index: object) -> NoReturn:
        _no_indexing(self.shape, index)

    def bits(self) -> Array:
        """The raw bit pattern, for bitwise comparisons (uint16/32/64 by width)."""
        array = np.ascontiguousarray(self.numpy())
        return array.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[array.dtype.itemsize])

    def _repr_html_(self) -> str:
        from topos.render import tensor_html

        return tensor_html(self)


def reshape_target(shape: Any, source: Shape) -> Shape:
    """The Shape a reshape asks for; ``-1`` (infer an extent) is refused with the volume to use."""
    if not isinstance(shape, Shape) and isinstance(shape, Sequence) and not isinstance(shape, (str, bytes)):
        if any(is_integer(extent) and int(extent) == -1 for extent in shape):
            raise InvalidArgumentError(
                f"reshape {list(shape)!r}: -1 (an inferred extent) is not supported yet; spell every "
                f"extent out (the source {source} has volume {source.volume})"
            )
    target = Shape.of(shape)
    if target.volume != source.volume:
        raise ShapeMismatchError(
            f"reshape: cannot reshape {source} (volume {source.volume}) to {target} (volume {target.volume})"
        )
    return target


def _no_comparison(shape: Shape, symbol: str) -> NoReturn:
    raise UnsupportedError(
        f"comparison '{symbol}' on a value of shape {shape} is not built yet; use "
        "x.step(threshold) for a 0/1 mask (1 where x >= threshold) or x.maximum(y)"
    )


def _no_indexing(shape: Shape, index: object) -> NoReturn:
    raise UnsupportedError(
        f"indexing [{index!r}] on a value of shape {shape} is not built yet; use "
        "narrow(axis, start, length) to keep a range, then reshape to drop the axis"
    )


def _within_memory(method: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """Turn numpy's MemoryError inside a computing method into a named CapacityError."""

    @functools.wraps(method)
    def wrapper(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        try:
            return method(self, *args, **kwargs)
        except MemoryError:
            name = method.__name__.lstrip("_")
            raise CapacityError(
                f"Tensor.{name} on a {self.element} tensor of shape {self.shape}: the result does "
                "not fit in memory"
            ) from None

    return wrapper


# Only the methods that allocate a result of their own: views and reads stay unwrapped.
for _name in (
    "_binary", "__neg__", "map", "matmul", "sum", "sum_along", "logsumexp", "log_softmax",
    "pad", "fold", "gather", "scatter", "convert",
):  # fmt: skip
    setattr(Tensor, _name, _within_memory(getattr(Tensor, _name)))
