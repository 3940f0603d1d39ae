"""The recordable vocabulary, spelled once: the opcode methods.

:class:`Vocabulary` defines arithmetic and one method per opcode over a few hooks; the
composites built from them (activations, the common math, reductions, indexing) are
:class:`topos.composites.Composites`, a subclass. ``Tensor`` implements the hooks by
computing (``Vocabulary._apply`` runs the opcode's kernel from
:data:`topos.kernels.binding.KERNELS`); ``Value`` implements them by recording a node. So
both speak the same vocabulary by construction, and a composite such as ``relu`` records
exactly the nodes whose kernels a tensor runs.

The hooks a subclass supplies:

- ``_apply(op, *others)``: the opcode over ``self`` and ``others`` (already of this type);
- ``_binary(op, other, reverse)``: the same for a partner that may be a literal (a number,
  or whatever else the subclass accepts), brought to this type first;
- ``_constant(shape, value)``: one number filling ``shape``;

and, where the subclass checks its arguments its own way, ``_axis`` (normalise an axis),
``_checked`` (build an opcode, wrapping its errors) and ``_name`` (the operand in messages).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar, cast

import numpy as np

from topos.errors import (
    InvalidArgumentError,
    ShapeMismatchError,
    user_site,
)
from topos.ir import ops
from topos.ir.checks import integer, is_integer
from topos.ir.element import ElementType
from topos.ir.shape import Shape

__all__ = ["Vocabulary", "all_or_nothing", "flag", "infer_extent", "journal", "normal_axis", "reshape_target"]

Other = TypeVar("Other")
"""The literals a subclass accepts beside itself (numbers for tensors; arrays too for values)."""

_Word = TypeVar("_Word", bound=Callable[..., Any])


class _Journal(threading.local):
    # Per thread, so two threads recording on their own tapes never roll back each other.
    def __init__(self) -> None:
        self.marks: dict[int, tuple[Any, Any]] | None = None


_JOURNAL = _Journal()


def journal(recording: Any) -> None:
    """Note that ``recording`` (a tape: ``mark()`` and ``rollback(mark)``) is about to grow
    inside a word: mark it the first time only.

    A tape calls this before each append; outside a word it costs one attribute read.
    """
    marks = _JOURNAL.marks
    if marks is not None and id(recording) not in marks:
        marks[id(recording)] = (recording, recording.mark())


def all_or_nothing(word: _Word) -> _Word:
    """``word`` made atomic: if it raises, every tape it recorded on is rolled back.

    A word spelled from several opcodes can fail after some of them recorded (a shape
    refused at the last node, an operand of another tape); the journal remembers the first
    mark of each tape touched, on any tape, so a refused call leaves every tape as it was.
    Words called inside a word share the outermost journal.
    """

    @functools.wraps(word)
    def atomic(*args: Any, **kwargs: Any) -> Any:
        if _JOURNAL.marks is not None:
            return word(*args, **kwargs)
        marks: dict[int, tuple[Any, Any]] = {}
        _JOURNAL.marks = marks
        try:
            return word(*args, **kwargs)
        except BaseException:
            for recording, mark in marks.values():
                recording.rollback(mark)
            raise
        finally:
            _JOURNAL.marks = None

    return cast(_Word, atomic)


def normal_axis(axis: object, rank: int, what: str, site: str) -> int:
    """``axis`` counted from the front: ``-1`` is the last axis; out of range is refused."""
    if not is_integer(axis):
        kind = "a bool" if isinstance(axis, (bool, np.bool_)) else type(axis).__name__
        raise InvalidArgumentError(f"{site}: {what} axis must be an integer, got {axis!r} ({kind})")
    given = int(axis)  # type: ignore[call-overload]
    normalized: int = given + rank if given < 0 else given
    if not 0 <= normalized < max(rank, 1):
        raise InvalidArgumentError(f"{site}: {what} axis {given} is out of range for rank {rank}")
    return normalized


def flag(value: object, what: str) -> bool:
    """``value`` as a switch: a bool (numpy's too); anything else is refused, never read as truthy.

    An array would raise numpy's own ambiguity error, and a string would switch on silently.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{user_site()}: {what} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def infer_extent(shape: Sequence[Any], volume: int, what: str) -> list[Any]:
    """``shape`` with its one ``-1`` replaced by the extent that makes the volume ``volume``."""
    extents = list(shape)
    unknown = [i for i, e in enumerate(extents) if is_integer(e) and int(e) == -1]
    if not unknown:
        return extents
    if len(unknown) > 1:
        raise InvalidArgumentError(f"{what} {extents!r}: at most one extent may be -1")
    known = 1
    for i, extent in enumerate(extents):
        if i != unknown[0]:
            known *= integer(extent, f"{what}: extent", minimum=1)
    if volume % known:
        raise ShapeMismatchError(f"{what} {extents!r}: volume {volume} is not a multiple of {known}")
    extents[unknown[0]] = volume // known
    return extents


def reshape_target(shape: Any, source: Shape) -> Shape:
    """The Shape a reshape asks for; one ``-1`` takes the extent that keeps the volume."""
    if not isinstance(shape, Shape) and isinstance(shape, Sequence) and not isinstance(shape, (str, bytes)):
        shape = infer_extent(shape, source.volume, "reshape")
    elif is_integer(shape) and shape == -1:
        shape = (source.volume,)
    target = Shape.of(shape)
    if target.volume != source.volume:
        raise ShapeMismatchError(
            f"reshape: cannot reshape {source} (volume {source.volume}) to {target} (volume {target.volume})"
        )
    return target


class Vocabulary(Generic[Other]):
    """Arithmetic and one method per opcode, over the hooks of a subclass.

    Example:
        >>> from topos import Tensor, f64
        >>> x = Tensor([-2.0, 0.5, 3.0], element=f64)
        >>> x.maximum(0.0).tolist(), (x * 2.0).sum().scalar(), x.exp2().tolist()
        ([0.0, 0.5, 3.0], 3.0, [0.25, 1.4142135623730951, 8.0])
    """

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def shape(self) -> Shape: ...
        @property
        def element(self) -> ElementType: ...

    # ----------------------------------------------------------------- hooks
    def _apply(self, op: ops.Op, *others: Self) -> Self:
        raise NotImplementedError  # pragma: no cover

    def _binary(self, op: ops.Op, other: Self | Other | float, reverse: bool = False) -> Self:
        raise NotImplementedError  # pragma: no cover

    def _constant(self, shape: Shape | Sequence[int], value: float) -> Self:
        raise NotImplementedError  # pragma: no cover

    def _axis(self, axis: int, what: str) -> int:
        return normal_axis(axis, self.rank, what, user_site())

    def _selection(self, indices: Any, vocab: int) -> Self:
        """A one-hot selection ``[len(indices), vocab]`` of this type (a recorded leaf for values)."""
        raise NotImplementedError  # pragma: no cover

    def _data(self, array: Any) -> Self:
        """A constant of this type holding ``array`` (a recorded leaf for values)."""
        raise NotImplementedError  # pragma: no cover

    def _checked(self, build: Callable[[], ops.Op]) -> ops.Op:
        return build()

    def _name(self) -> str:
        return f"a value of shape {self.shape}"

    @property
    def rank(self) -> int:
        return self.shape.rank

    # ----------------------------------------------------------------- arithmetic
    def __add__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Add(), other)

    def __radd__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Add(), other, reverse=True)

    def __sub__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Sub(), other)

    def __rsub__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Sub(), other, reverse=True)

    def __mul__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Mul(), other)

    def __rmul__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Mul(), other, reverse=True)

    def __truediv__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Div(), other)

    def __rtruediv__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Div(), other, reverse=True)

    def __neg__(self) -> Self:
        return self._apply(ops.Neg())

    def __pow__(self, exponent: Self | Other | float) -> Self:
        return self.powf(exponent)

    def __rpow__(self, base: Self | Other | float) -> Self:
        return self._binary(ops.Powf(), base, reverse=True)

    def __matmul__(self, other: Self | Other | float) -> Self:
        return self.matmul(other)

    def __rmatmul__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.MatMul(), other, reverse=True)

    def powf(self, exponent: Self | Other | float) -> Self:
        return self._binary(ops.Powf(), exponent)

    def maximum(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Maximum(), other)

    def step(self, threshold: Self | Other | float) -> Self:
        return self._binary(ops.Step(), threshold)

    def map(self, operation: ops.MapOperation) -> Self:
        return self._apply(self._checked(lambda: ops.Map(operation)))

    def exp(self) -> Self:
        return self.map(ops.MapOperation.EXP)

    def ln(self) -> Self:
        return self.map(ops.MapOperation.LN)

    def sqrt(self) -> Self:
        return self.map(ops.MapOperation.SQRT)

    def tanh(self) -> Self:
        return self.map(ops.MapOperation.TANH)

    def sin(self) -> Self:
        return self.map(ops.MapOperation.SIN)

    def cos(self) -> Self:
        return self.map(ops.MapOperation.COS)

    def log1p(self) -> Self:
        return self.map(ops.MapOperation.LOG1P)

    def expm1(self) -> Self:
        return self.map(ops.MapOperation.EXPM1)

    def erf(self) -> Self:
        return self.map(ops.MapOperation.ERF)

    def erf_derivative(self) -> Self:
        return self.map(ops.MapOperation.ERF_DERIVATIVE)

    def atan(self) -> Self:
        """The arctangent (the ``Atan`` map): odd, ±π/2 at ±inf, derivative ``1 / (1 + x²)``.

        Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([1.0], element=f64).atan().scalar() * 4, 12)
            3.14159265359
        """
        return self.map(ops.MapOperation.ATAN)

    # ----------------------------------------------------------------- products and sums
    def matmul(self, other: Self | Other | float) -> Self:
        return self._binary(ops.MatMul(), other)

    @all_or_nothing
    def sum(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Self:
        """The sum over ``axis`` (an axis, several, or None for all); ``keepdims`` keeps them as 1.

        With no arguments this is the one ``Sum`` opcode; over axes it is one ``SumAlong`` per
        axis, last axis first.

        Example:
            >>> from topos import Tensor, f64
            >>> Tensor([[1.0, 2.0], [3.0, 4.0]], element=f64).sum(axis=-1, keepdims=True).tolist()
            [[3.0], [7.0]]
        """
        keepdims = flag(keepdims, f"sum of {self._name()}: keepdims")
        if axis is None and not keepdims:
            return self._apply(ops.Sum())
        axes = self._axes(axis, "sum")
        total = self
        if axis is None:
            total = self._apply(ops.Sum())
        else:
            for each in reversed(axes):
                total = total.sum_along(each)
        return self._kept(total, axes, keepdims)

    def sum_along(self, axis: int) -> Self:
        return self._apply(ops.SumAlong(self._axis(axis, "sum_along")))

    def logsumexp(self, axis: int) -> Self:
        return self._apply(ops.LogSumExp(self._axis(axis, "logsumexp")))

    def log_softmax(self, axis: int) -> Self:
        return self._apply(ops.LogSoftmax(self._axis(axis, "log_softmax")))

    # ----------------------------------------------------------------- layout
    def broadcast(self, shape: Sequence[int] | Shape) -> Self:
        return self._apply(self._checked(lambda: ops.Broadcast(Shape.of(shape))))

    def broadcast_along(self, axis: int, extent: int) -> Self:
        return self._apply(self._checked(lambda: ops.BroadcastAlong(axis, extent)))

    def reshape(self, shape: Sequence[int] | Shape) -> Self:
        return self._apply(self._checked(lambda: ops.Reshape(reshape_target(shape, self.shape))))

    def permute(self, order: Sequence[int]) -> Self:
        rank = self.rank
        if isinstance(order, Sequence) and not isinstance(order, (str, bytes)):
            # Negative axes count from the back, as everywhere else; the opcode checks the rest.
            order = [int(a) + rank if is_integer(a) and int(a) < 0 else a for a in order]
        return self._apply(self._checked(lambda: ops.Permute(order)))

    def narrow(self, axis: int, start: int, length: int) -> Self:
        axis = self._axis(axis, "narrow")
        return self._apply(self._checked(lambda: ops.Narrow(axis, start, length)))

    def pad(self, axis: int, start: int, extent: int) -> Self:
        axis = self._axis(axis, "pad")
        return self._apply(self._checked(lambda: ops.Pad(axis, start, extent)))

    def unfold(self, axis: int, size: int, step: int, dilation: int = 1) -> Self:
        axis = self._axis(axis, "unfold")
        return self._apply(self._checked(lambda: ops.Unfold(axis, size, step, dilation)))

    def fold(self, axis: int, size: int, step: int, dilation: int, extent: int) -> Self:
        axis = self._axis(axis, "fold")
        return self._apply(self._checked(lambda: ops.Fold(axis, size, step, dilation, extent)))

    def gather(self, selection: Self | Other | float) -> Self:
        return self._binary(ops.Gather(), selection)

    def scatter(self, selection: Self | Other | float) -> Self:
        return self._binary(ops.Scatter(), selection)

    # ----------------------------------------------------------------- identities
    def zero_like(self) -> Self:
        return self._constant(self.shape, 0.0)

    def one_like(self) -> Self:
        return self._constant(self.shape, 1.0)

    # ----------------------------------------------------------------- axes
    def _axes(self, axis: int | Sequence[int] | None, what: str) -> tuple[int, ...]:
        """``axis`` as sorted distinct axes from the front (None: every axis)."""
        if axis is None:
            return tuple(range(self.rank))
        given: object = axis
        if is_integer(given):
            return (self._axis(axis, what),)  # type: ignore[arg-type]
        if not isinstance(given, Sequence) or isinstance(given, (str, bytes)):
            raise InvalidArgumentError(f"{user_site()}: {what} takes an axis, a sequence of axes or None, got {axis!r}")
        axes = tuple(self._axis(a, what) for a in given)
        if len(set(axes)) != len(axes):
            raise InvalidArgumentError(f"{user_site()}: {what} names an axis twice in {list(given)!r} of {self.shape}")
        return tuple(sorted(axes))

    def _kept(self, reduced: Self, axes: Sequence[int], keepdims: bool) -> Self:
        if not keepdims:
            return reduced
        return reduced.reshape(tuple(1 if a in axes else e for a, e in enumerate(self.shape)))

    # ----------------------------------------------------------------- masks and selection
    def __ge__(self, other: Self | Other | float) -> Self:
        """1 where ``x >= other``, else 0 (NaN compares false); a mask carries no gradient."""
        return self.step(other)

    def __le__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Step(), other, reverse=True)

    def _partner(self, other: Self | float, role: str) -> float | None:
        """Check a partner of this mask for ``select``: None for a value of its shape, else the number.

        Only checks, so both partners are judged before either records a constant.
        """
        if isinstance(other, type(self)):
            if other.shape != self.shape:
                raise ShapeMismatchError(
                    f"{user_site()}: where: {role} of shape {other.shape} does not match the mask {self.shape} "
                    "(nothing broadcasts implicitly; use broadcast_to)"
                )
            return None
        if isinstance(other, (bool, np.bool_)) or not isinstance(other, (int, float, np.integer, np.floating)):
            raise InvalidArgumentError(f"{user_site()}: where: {role} must be a value or a number, got {other!r}")
        return float(other)

    @all_or_nothing
    def select(self, on_true: Self | float, on_false: Self | float) -> Self:
        """This mask choosing elementwise: ``on_true`` where nonzero (NaN too), else ``on_false``.

        The side not chosen is never read into the result, so an inf or NaN there stays out
        (``m * a + (1 - m) * b`` would give NaN); its gradient there is an exact zero.

        Example:
            >>> from topos import Tensor, f64
            >>> x = Tensor([0.0, 4.0], element=f64)
            >>> (x > 0.0).select(x.ln(), 0.0).tolist()
            [0.0, 1.3862943611198906]
        """
        if isinstance(on_true, type(self)) and isinstance(on_false, type(self)) and on_true.shape == on_false.shape == self.shape:
            return self._apply(ops.Select(), on_true, on_false)
        true_number, false_number = self._partner(on_true, "on_true"), self._partner(on_false, "on_false")
        chosen = on_true if true_number is None else self._constant(self.shape, true_number)
        other = on_false if false_number is None else self._constant(self.shape, false_number)
        return self._apply(ops.Select(), chosen, other)  # type: ignore[arg-type]

    def stop_gradient(self) -> Self:
        """The same value, through which no gradient flows (JAX's stop_gradient, PyTorch's detach).

        Not :func:`topos.detach`, which turns recorded values into symbols.
        """
        return self._apply(ops.StopGradient())

    # ----------------------------------------------------------------- literal bases
    def exp2(self) -> Self:
        """``2 ** x`` (one Powf): exact at integers, gradient ``ln 2 * 2 ** x``."""
        return self._binary(ops.Powf(), 2.0, reverse=True)
