"""The composites: every vocabulary word spelled from other words, none an opcode of its own.

:class:`Composites` adds to :class:`topos.vocabulary.Vocabulary` the activations, the common
math (``tan``, ``sinh``, ``asinh``, ...), masks, reductions built by halving, shape helpers
and numpy-style indexing; :func:`where` and :func:`einsum` are the free functions over them.
Each is written once against the vocabulary's methods and hooks, so ``Tensor`` computes and
``Value`` records the same nodes, and every reading (interpretation, derivatives, fusion,
emission) covers a composite through the opcodes it is made of. Both concrete types inherit
this class; nothing here builds an opcode directly.

Size: over 800 lines on purpose. Composites is one class that Tensor and Value both
inherit, so every word is spelled once for computing and recording alike; cutting it into
mixins would add a layer of bases for a reader to chase without removing a line.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any, Generic, NoReturn, Self, TypeVar

import numpy as np

from topos.errors import (
    CapacityError,
    InvalidArgumentError,
    MixedTapesError,
    ShapeMismatchError,
    ToposError,
    UnsupportedError,
    user_site,
)
from topos.ir.checks import integer, is_integer
from topos.ir.element import ElementType
from topos.ir.shape import Shape
from topos.vocabulary import Other, Vocabulary, all_or_nothing, flag, infer_extent, normal_axis

__all__ = ["SELECTION_LIMIT", "Composites", "arange", "einsum", "eye", "stop_gradient", "where"]

SELECTION_LIMIT = 2**30
"""The most positions one index may name through a Gather or an ``.at`` update: each is held
as an int64, so this is 8 GiB of indices, beyond which a selection is refused, not attempted."""


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


_EXP_CAPS: dict[str, float] = {}


def _exp_cap(element: ElementType) -> float:
    """The largest integer c with ``exp(c)`` finite in ``element`` (88 for f32, 709 for f64)."""
    cap = _EXP_CAPS.get(element.name)
    if cap is None:
        cap = float(math.floor(math.log(element.largest)))
        _EXP_CAPS[element.name] = cap
    return cap


class Composites(Vocabulary[Other]):
    """The vocabulary's composites, over its opcode methods; ``Tensor`` and ``Value`` inherit it.

    Example:
        >>> from topos import Tensor, f64
        >>> x = Tensor([-2.0, 0.5, 3.0], element=f64)
        >>> x.relu().tolist(), x.clip(-1.0, 1.0).tolist(), x.mean().scalar()
        ([0.0, 0.5, 3.0], [-1.0, 0.5, 1.0], 0.5)
    """

    __slots__ = ()

    # ----------------------------------------------------------------- activations
    def _sign(self, zero: Self) -> Self:
        return self.step(zero) - zero.step(self)

    def sign(self) -> Self:
        """``step(x, 0) - step(0, x)``: -1, 0 or 1, with no gradient (both Steps are data).

        NaN has sign 0 (neither comparison holds), unlike numpy's NaN; ±0 has sign 0.
        """
        return self._sign(self.zero_like())

    def abs(self) -> Self:
        """``x * sign(x) + 0``: the magnitude, with gradient 0 at ±0 (as PyTorch).

        ``sign`` is spelled with two Steps, so it carries no gradient and the derivative is
        ``sign(x)``. The trailing ``+ 0`` turns ``-0 * 0`` into ``+0``, so ``|-0|`` is ``+0``;
        ``|NaN|`` is NaN.
        """
        zero = self.zero_like()
        return self * self._sign(zero) + zero

    def clip(self, low: Self | float, high: Self | float) -> Self:
        """``x`` held within ``[low, high]``: ``-maximum(-maximum(x, low), -high)``.

        Maximum gives ties to its left operand, so at either bound the gradient flows to
        ``x`` (as PyTorch's clamp). Maximum propagates NaN: a NaN in ``x`` or in a bound
        gives NaN. With ``low > high`` the result is ``high``. A zero result at a zero bound
        may carry either sign (numpy's maximum keeps its second operand on ties).
        """
        for role, bound in (("low", low), ("high", high)):
            if not isinstance(bound, Vocabulary) and not _is_number(bound):
                raise InvalidArgumentError(
                    f"{user_site()}: clip of {self._name()}: {role} must be a {type(self).__name__} or a number, "
                    f"got {type(bound).__name__} {bound!r}"
                )
        return -((-self.maximum(low)).maximum(-high))

    def relu(self) -> Self:
        """maximum(0, x) against a zero of the same shape.

        The zero stands on the left because Maximum gives ties wholly to its left operand:
        at x == 0 the gradient is 0, as in JAX and PyTorch.
        """
        return self.zero_like().maximum(self)

    def softplus(self) -> Self:
        """``relu(x) + log1p(exp(-|x|))``, finite for every finite x.

        ``|x|`` is spelled ``maximum(-x, x)`` here, so the tie at 0 goes to ``-x``: with
        relu's zero-on-the-left tie, the derivative at 0 comes out as sigmoid(0) = 1/2.
        """
        return self.relu() + (-((-self).maximum(self))).exp().log1p()

    def gelu(self, approximate: bool = False) -> Self:
        """x * (1 + erf(x / sqrt 2)) / 2; with ``approximate`` the tanh form.

        Constants are constant leaves; sqrt 2 is computed from a constant 2.
        """
        if flag(approximate, f"gelu of {self._name()}: approximate"):
            cube = self * self * self
            inner = (self + cube * 0.044715) * float(np.sqrt(2.0 / np.pi))
            return self * (inner.tanh() + 1.0) * 0.5
        two = self._constant(self.shape, 2.0)
        return self * ((self / two.sqrt()).erf() + 1.0) / two

    def _negated_for_exp(self) -> Self:
        """``-maximum(x, -c)`` with ``exp(c)`` finite in this element.

        ``1 / (1 + exp(-x))`` has the right value for every x, but once ``exp(-x)``
        overflows, the chain rule multiplies ``0 * inf`` and the gradient is NaN where the
        true one is 0. Capping ``-x`` at c keeps every value above the cap bit-identical
        and moves the result below it by less than ``exp(-c)`` (under the smallest normal
        number of the element); the cap's Maximum sends the (vanishing) gradient there to
        the constant.
        """
        cap = self._constant(self.shape, -_exp_cap(self.element))
        return -self.maximum(cap)

    def silu(self) -> Self:
        """x / (1 + exp(-x)), with the exponent capped so the gradient stays finite."""
        return self / (self._negated_for_exp().exp() + 1.0)

    def sigmoid(self) -> Self:
        """``1 / (1 + exp(-x))`` for x >= 0 and ``exp(x) / (1 + exp(x))`` below, joined by Select.

        Each side exponentiates only a non-positive number (``max(x, 0)`` and ``min(x, 0)``),
        so nothing overflows, and the gradient keeps its digits down to where ``exp(x)``
        itself underflows: one quotient over ``1 + exp(-x)`` would square a denominator of
        ``exp(-x)`` and lose the gradient to subnormals past x = -44 in f32.

        Example:
            >>> from topos import Tape, f32
            >>> network, (x, y) = Tape.record(lambda t: (lambda x: (x, x.sigmoid().sum()))(t.input([-200.0, 0.0])), element=f32)
            >>> network.forward(network.parameters()).backward(y).of(x).tolist()
            [0.0, 0.25]
        """
        small = self._negative_part().exp()
        above = self.one_like() / ((-self.maximum(self.zero_like())).exp() + 1.0)
        return (self >= 0.0).select(above, small / (small + 1.0))

    def softmax(self, axis: int) -> Self:
        return self.log_softmax(axis).exp()

    def mean_along(self, axis: int) -> Self:
        axis = self._axis(axis, "mean_along")
        total = self.sum_along(axis)
        return total / self._constant(total.shape, float(self.shape[axis]))

    def mean(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Self:
        """The sum over ``axis`` divided by the number of elements summed.

        See :meth:`~topos.vocabulary.Vocabulary.sum` for ``axis`` and ``keepdims``.
        """
        axes = self._axes(axis, "mean")
        total = self.sum(axis, flag(keepdims, f"mean of {self._name()}: keepdims"))
        return total / self._constant(total.shape, float(self._count(axes)))

    def _reference(self, reference: object, what: str) -> Shape:
        if not isinstance(reference, Vocabulary):
            raise InvalidArgumentError(
                f"{user_site()}: {what} of {self._name()}: the reference must be a value or tensor whose shape "
                f"to take, got {type(reference).__name__} {reference!r}"
            )
        return reference.shape

    def broadcast_like(self, reference: Self) -> Self:
        return self.broadcast(self._reference(reference, "broadcast_like"))

    def broadcast_along_like(self, axis: int, reference: Self) -> Self:
        shape = self._reference(reference, "broadcast_along_like")
        return self.broadcast_along(axis, shape[normal_axis(axis, shape.rank, "broadcast_along_like", user_site())])

    def broadcast_to(self, shape: Sequence[int] | Shape) -> Self:
        """NumPy's right-aligned broadcasting, spelled with explicit nodes."""
        site = user_site()
        try:
            target = Shape.of(shape)
        except ToposError as error:
            raise type(error)(f"{site}: broadcast_to: {error.detail} (operand {self._name()})") from None
        if self.shape == target:
            return self
        if self.shape.volume == 1:
            return self.broadcast(target)
        if self.rank > target.rank:
            raise ShapeMismatchError(f"{site}: cannot broadcast {self.shape} to {target}")
        lead = target.rank - self.rank
        kept: list[int] = []
        for axis, extent in enumerate(self.shape):
            if extent != 1 and extent != target[lead + axis]:
                raise ShapeMismatchError(f"{site}: cannot broadcast {self.shape} to {target}")
            if extent != 1:
                kept.append(lead + axis)
        value = self.reshape(tuple(target[a] for a in kept))
        for axis in range(target.rank):
            if axis not in kept:
                value = value.broadcast_along(axis, target[axis])
        return value

    def transpose(self, first: int | None = None, second: int | None = None) -> Self:
        """``transpose(a, b)`` swaps two axes at any rank; ``transpose()`` reverses rank <= 2."""
        if first is None and second is None:
            if self.rank > 2:
                raise InvalidArgumentError(
                    f"{user_site()}: transpose() is for rank <= 2; name the two axes to swap (transpose(a, b)) "
                    f"or use permute for {self.shape}"
                )
            return self.permute(tuple(reversed(range(self.rank))))
        if first is None or second is None:
            raise InvalidArgumentError(f"{user_site()}: transpose takes two axes or none, got {first!r} and {second!r}")
        a, b = self._axis(first, "transpose"), self._axis(second, "transpose")
        order = list(range(self.rank))
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    def unsqueeze(self, axis: int) -> Self:
        axis = integer(axis, f"unsqueeze of {self._name()}: axis")
        if axis < 0:
            axis += self.rank + 1
        if not 0 <= axis <= self.rank:
            raise InvalidArgumentError(f"{user_site()}: unsqueeze axis {axis} out of range for {self.shape}")
        return self.reshape(self.shape.with_axis(axis, 1))

    def squeeze(self, axis: int) -> Self:
        axis = self._axis(axis, "squeeze")
        if self.shape[axis] != 1:
            raise ShapeMismatchError(f"{user_site()}: squeeze axis {axis} of {self.shape} has extent {self.shape[axis]}, not 1")
        return self.reshape(self.shape.without_axis(axis))

    # ----------------------------------------------------------------- axes and shapes
    def _count(self, axes: Sequence[int]) -> int:
        return math.prod(self.shape[a] for a in axes)

    def _spread_back(self, reduced: Self, axes: Sequence[int]) -> Self:
        """A reduction over ``axes`` (axes removed) repeated back to this value's shape."""
        for axis in sorted(axes):
            reduced = reduced.broadcast_along(axis, self.shape[axis])
        return reduced

    def flatten(self, start: int = 0, end: int = -1) -> Self:
        """Axes ``start`` through ``end`` (inclusive) merged into one, row-major."""
        first, last = self._axis(start, "flatten"), self._axis(end, "flatten")
        if first > last:
            raise InvalidArgumentError(f"{user_site()}: flatten start {start} comes after end {end} in {self.shape}")
        axes = self.shape.axes
        return self.reshape((*axes[:first], math.prod(axes[first:last + 1]), *axes[last + 1:]))

    def unflatten(self, axis: int, sizes: Sequence[int]) -> Self:
        """Axis ``axis`` split into ``sizes`` (one of them may be -1), row-major."""
        at = self._axis(axis, "unflatten")
        site = user_site()
        if not isinstance(sizes, Sequence) or isinstance(sizes, (str, bytes)) or not all(
            is_integer(size) and (int(size) == -1 or int(size) >= 1) for size in sizes
        ):
            raise InvalidArgumentError(
                f"{site}: unflatten of {self._name()}: sizes must be a sequence of positive extents (one may be "
                f"-1), got {type(sizes).__name__} {sizes!r}"
            )
        try:
            extents = infer_extent(sizes, self.shape[at], "unflatten")
        except ToposError as error:
            raise type(error)(f"{site}: {error.detail} (axis {at} of {self.shape})") from None
        if math.prod(extents) != self.shape[at]:
            raise ShapeMismatchError(f"{site}: unflatten {list(sizes)!r} does not multiply to axis {at} of {self.shape}")
        axes = self.shape.axes
        return self.reshape((*axes[:at], *extents, *axes[at + 1:]))

    def expand(self, *shape: int) -> Self:
        """PyTorch's expand: extents of 1 repeat, ``-1`` keeps an extent, new axes lead."""
        given: object = shape[0] if len(shape) == 1 else shape
        if not isinstance(given, Sequence) or isinstance(given, (str, bytes)):
            given = shape
        sizes = list(given)
        for size in sizes:
            if not is_integer(size):
                raise InvalidArgumentError(
                    f"{user_site()}: expand of {self._name()}: extents must be integers (-1 keeps one), got "
                    f"{size!r} in {sizes!r}"
                )
        lead = len(sizes) - self.rank
        if lead < 0:
            raise ShapeMismatchError(f"{user_site()}: expand to {sizes!r} has fewer axes than {self.shape}")
        target = [self.shape[i - lead] if e == -1 and i >= lead else e for i, e in enumerate(sizes)]
        return self.broadcast_to(target)

    # ----------------------------------------------------------------- masks and selection
    def __gt__(self, other: Self | Other | float) -> Self:
        """``(x >= y) * (1 - (y >= x))``: 1 only where strictly greater (0 for NaN)."""
        below = self.__le__(other)
        return self.step(other) * (below.one_like() - below)

    def __lt__(self, other: Self | Other | float) -> Self:
        above = self.step(other)
        return self.__le__(other) * (above.one_like() - above)

    def eq(self, other: Self | Other | float) -> Self:
        """1 where ``x == other`` (so 0 at NaN), else 0; a method because ``==`` is identity.

        Values and tensors key dicts and sets by identity, so the ``==`` operator keeps
        Python's meaning and the elementwise comparison is spelled ``eq``.
        """
        return self.step(other) * self.__le__(other)

    def ne(self, other: Self | Other | float) -> Self:
        """1 where ``x != other`` (so 1 at NaN), else 0; the complement of :meth:`eq`."""
        same = self.eq(other)
        return same.one_like() - same

    def isnan(self) -> Self:
        return self.ne(self)

    def isfinite(self) -> Self:
        """1 where ``-largest <= x <= largest`` (so 0 at ±inf and NaN)."""
        largest = self._constant(self.shape, self.element.largest)
        return self.step(-largest) * largest.step(self)

    def isinf(self) -> Self:
        finite = self.isfinite()
        return finite.one_like() - finite - self.isnan()

    # ----------------------------------------------------------------- reductions
    def var(self, axis: int | Sequence[int] | None = None, correction: int = 0, keepdims: bool = False) -> Self:
        """Mean squared deviation over ``axis``, dividing by ``count - correction`` (1: Bessel)."""
        axes = self._axes(axis, "var")
        keepdims = flag(keepdims, f"var of {self._name()}: keepdims")
        divisor = self._count(axes) - integer(correction, "var: correction", minimum=0)
        if divisor <= 0:
            raise InvalidArgumentError(
                f"{user_site()}: var over {self._count(axes)} elements with correction {correction} divides by {divisor}"
            )
        centred = self - self._spread_back(self.mean(axes), axes)
        total = (centred * centred).sum(axes, keepdims)
        return total / self._constant(total.shape, float(divisor))

    def std(self, axis: int | Sequence[int] | None = None, correction: int = 0, keepdims: bool = False) -> Self:
        """``sqrt(var(axis, correction))``; its gradient is inf/NaN where the spread is 0."""
        return self.var(axis, correction, flag(keepdims, f"std of {self._name()}: keepdims")).sqrt()

    def _gathered_last(self, axes: Sequence[int]) -> Self:
        """``axes`` moved last (in order) and merged: row-major order over them is kept."""
        kept = [a for a in range(self.rank) if a not in axes]
        moved = self if list(axes) == list(range(self.rank - len(axes), self.rank)) else self.permute([*kept, *axes])
        return moved.reshape((*(self.shape[a] for a in kept), self._count(axes)))

    def _pairwise(self, combine: Callable[[Self, Self], Self], fill: float) -> Self:
        """Reduce the last axis by halving: adjacent pairs combine, left before right.

        Each level keeps contiguous runs in order, so a combiner whose ties go to its left
        operand gives ties to the earliest element overall. An odd extent is evened with one
        ``fill`` chosen by Select (never by arithmetic, so no sign of zero or NaN changes).
        Depth is ``ceil(log2 n)`` levels of a few nodes each.
        """
        value = self
        while value.shape[-1] > 1:
            last = value.rank - 1
            extent = value.shape[-1]
            if extent % 2:
                real = value.one_like().pad(last, 0, extent + 1)
                value = real.select(value.pad(last, 0, extent + 1), fill)
                extent += 1
            lead = value.shape.axes[:-1]
            pairs = value.reshape((*lead, extent // 2, 2))
            left = pairs.narrow(last + 1, 0, 1).reshape((*lead, extent // 2))
            right = pairs.narrow(last + 1, 1, 1).reshape((*lead, extent // 2))
            value = combine(left, right)
        return value.reshape(value.shape.axes[:-1])

    def max(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Self:
        """The largest element over ``axis``; NaN if any is NaN.

        Ties: the whole gradient goes to the first maximal element in row-major order over
        the reduced axes (JAX splits it evenly among ties; PyTorch's max(dim) also picks one).
        """
        axes = self._axes(axis, "max")
        keepdims = flag(keepdims, f"max of {self._name()}: keepdims")
        if not axes:
            return self
        out = self._gathered_last(axes)._pairwise(lambda a, b: a.maximum(b), -math.inf)
        return self._kept(out, axes, keepdims)

    def min(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Self:
        """``-max(-x)``: the smallest element; ties give the gradient to the first minimal one."""
        return -((-self).max(axis, flag(keepdims, f"min of {self._name()}: keepdims")))

    def prod(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Self:
        """The product over ``axis`` by pairwise halving (exact gradient with zeros present)."""
        axes = self._axes(axis, "prod")
        keepdims = flag(keepdims, f"prod of {self._name()}: keepdims")
        if not axes:
            return self
        out = self._gathered_last(axes)._pairwise(lambda a, b: a * b, 1.0)
        return self._kept(out, axes, keepdims)

    def _arg(self, axis: int | None, keepdims: bool, what: str, largest: bool) -> Self:
        keepdims = flag(keepdims, f"{what} of {self._name()}: keepdims")
        if axis is None:
            flat = self.reshape((self.shape.volume,))
            out = flat._arg(0, False, what, largest)
            return out.reshape((1,) * self.rank) if keepdims else out
        at = self._axis(axis, what)
        source = self if largest else -self
        moved = source._gathered_last((at,))
        extent = moved.shape[-1]
        last = moved.rank - 1
        peak = moved.max(-1).broadcast_along(last, extent)
        # NaN is the maximum whenever one is present (as numpy and JAX): mark NaNs too.
        hit = moved.eq(peak).maximum(moved.isnan())
        # One row of positions, spread by the recording: a constant of the whole volume
        # would cost what the input costs.
        positions = self._data(np.arange(extent, dtype=np.float64)).broadcast_to(moved.shape)
        first = hit.select(positions, float(extent)).min(-1)
        return self._kept(first, (at,), keepdims)

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> Self:
        """The index (as a number) of the first maximal element along ``axis`` (None: flattened).

        Data, not a differentiable value: it is built from Steps and Selects, so no gradient
        reaches ``x``. The first NaN counts as the maximum.
        """
        return self._arg(axis, keepdims, "argmax", True)

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> Self:
        """The index of the first minimal element along ``axis``; see :meth:`argmax`."""
        return self._arg(axis, keepdims, "argmin", False)

    def cumsum(self, axis: int) -> Self:
        """Running sums along ``axis``: pad n-1 zeros in front, unfold n windows, sum each.

        Four nodes whatever n; O(n^2) work. Output ``j`` is the window's sum in position order
        from an exact zero (the leading zeros add nothing), as the SumAlong kernel orders it.
        """
        at = self._axis(axis, "cumsum")
        extent = self.shape[at]
        windows = self.pad(at, extent - 1, 2 * extent - 1).unfold(at, extent, 1)
        return windows.sum_along(at + 1)

    def logcumsumexp(self, axis: int) -> Self:
        """``log(cumsum(exp(x)))`` computed stably: windows as in :meth:`cumsum`, padded with
        -inf by Select, each reduced by the LogSumExp opcode."""
        at = self._axis(axis, "logcumsumexp")
        extent = self.shape[at]
        real = self.one_like().pad(at, extent - 1, 2 * extent - 1)
        padded = real.select(self.pad(at, extent - 1, 2 * extent - 1), -math.inf)
        return padded.unfold(at, extent, 1).logsumexp(at + 1)

    # ----------------------------------------------------------------- indexing
    def _selected(self, index: object, site: str) -> tuple[int, ...]:
        """The shape of ``self[index]``, checked by numpy's own indexing and nothing allocated.

        numpy indexes an array of zero-byte elements of this value's shape, so every rule of
        its basic and integer-array indexing holds (bounds, masks, ``None``, ``...``) at no
        cost whatever the volume; indices must be known when recording.
        """
        parts = index if isinstance(index, tuple) else (index,)
        for part in parts:
            if isinstance(part, Vocabulary):
                raise UnsupportedError(
                    f"{site}: indexing {self._name()} by a value or tensor; indices must be known when "
                    "recording (ints, slices, None, ..., or integer arrays); use gather with a selection"
                )
            if isinstance(part, (float, np.floating)):
                raise InvalidArgumentError(f"{site}: index {part!r} of {self._name()} is not an integer")
            if part is None or part is Ellipsis or isinstance(part, slice) or is_integer(part):
                continue
            # Zero-byte elements are a structured dtype, which would read a string as a field name.
            try:
                array = np.asarray(part)
                kind = array.dtype.kind if array.size else "i"
            except (TypeError, ValueError):
                kind = "O"
            if kind not in "iub":
                raise InvalidArgumentError(
                    f"{site}: index {part!r} of {self._name()}: indices are ints, slices, None, ..., or arrays "
                    f"of integers or bools; got {type(part).__name__}"
                )
        probe = np.empty(self.shape.axes, dtype=np.dtype([]))
        try:
            shape: tuple[int, ...] = probe[index].shape  # type: ignore[call-overload]
        except (IndexError, TypeError, ValueError) as error:
            raise InvalidArgumentError(f"{site}: index {index!r} of {self._name()}: {error}") from None
        count = math.prod(shape)
        if count == 0:
            raise InvalidArgumentError(f"{site}: index {index!r} of {self._name()} selects no element")
        return shape

    def _positions(self, index: object, site: str) -> np.ndarray[Any, Any]:
        """Which flat positions ``self[index]`` reads, laid out in the result's shape.

        The same numbers as indexing ``arange(volume)``, built from one vector per axis (its
        coordinates times its stride, spread without copying), so the cost is the
        selection's, never the volume's.
        """
        shape = self._selected(index, site)
        count = math.prod(shape)
        if count > SELECTION_LIMIT:
            raise CapacityError(
                f"{site}: index {index!r} of {self._name()} names {count} positions (shape {list(shape)}), "
                f"more than a selection holds (2**30 = {SELECTION_LIMIT}); narrow or reshape instead"
            )
        axes = self.shape.axes
        try:
            positions = np.zeros(shape, dtype=np.int64)
            stride = 1
            for axis in reversed(range(len(axes))):
                # Coordinates along one axis times its stride (the axis's extent in memory, in
                # place), spread over the full shape without copying.
                offsets = np.arange(axes[axis], dtype=np.int64)
                offsets *= stride
                spread = np.lib.stride_tricks.as_strided(
                    offsets, axes, tuple(8 if a == axis else 0 for a in range(len(axes))), writeable=False
                )
                positions += spread[index]  # type: ignore[call-overload]
                stride *= axes[axis]
                del offsets, spread  # one axis's vector alive at a time
        except MemoryError:
            raise CapacityError(
                f"{site}: index {index!r} of {self._name()} names {count} positions; their {count * 8} bytes "
                "of indices do not fit in memory"
            ) from None
        return positions

    def _basic(self, index: object) -> list[object] | None:
        """The index as one entry per axis (ints and positive-step slices), or None if not basic."""
        parts = list(index) if isinstance(index, tuple) else [index]
        consumed = sum(1 for p in parts if p is not None and p is not Ellipsis)
        entries: list[object] = []
        for part in parts:
            if part is None:
                continue
            if part is Ellipsis:
                entries.extend([slice(None)] * (self.rank - consumed))
            elif is_integer(part) or (isinstance(part, slice) and (part.step is None or (is_integer(part.step) and int(part.step) > 0))):
                entries.append(part)
            else:
                return None
        return entries + [slice(None)] * (self.rank - len(entries))

    def __getitem__(self, index: object) -> Self:
        """numpy's indexing: ints, negative ints, slices with steps, None, ``...`` and integer arrays.

        Basic indices record Narrow (with Unfold for a step) and one Reshape; anything else
        (a negative step, integer arrays) records one Gather of the positions read. The
        result is differentiable; an index that selects nothing is refused.

        Example:
            >>> from topos import Tensor, f64
            >>> x = Tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], element=f64)
            >>> x[-1, ::2].tolist(), x[:, [2, 0]].tolist(), x[None, 0].shape
            ([4.0, 6.0], [[3.0, 1.0], [6.0, 4.0]], Shape([1, 3]))
        """
        site = user_site()
        shape = self._selected(index, site)
        entries = self._basic(index)
        if entries is None:
            positions = self._positions(index, site)
            flat = self.reshape((self.shape.volume, 1))
            picked = flat.gather(self._selection(positions.reshape(-1), self.shape.volume))
            return picked.reshape(positions.shape)
        value, axis = self, 0
        for extent, entry in zip(self.shape, entries, strict=True):
            if isinstance(entry, slice):
                start, _, step = entry.indices(extent)
                length = len(range(*entry.indices(extent)))
                if step == 1:
                    if length != extent:
                        value = value.narrow(axis, start, length)
                    axis += 1
                else:
                    value = value.narrow(axis, start, (length - 1) * step + 1).unfold(axis, 1, step)
                    axis += 2
            else:
                at = int(entry)  # type: ignore[call-overload]
                value = value.narrow(axis, at + extent if at < 0 else at, 1)
                axis += 1
        return value.reshape(shape) if value.shape.axes != shape else value

    def __iter__(self) -> NoReturn:
        # Without this, Python would iterate through __getitem__ and record one node per
        # element until an index ran out.
        raise UnsupportedError(
            f"{user_site()}: iterating {self._name()} is refused; index it (x[i]) or narrow(axis, start, "
            "length) for the parts you need"
        )

    @property
    def at(self) -> _At[Self]:
        """Functional updates, as JAX spells them: ``x.at[index].set(v)`` and ``.add(v)``.

        Example:
            >>> from topos import Tensor, f64
            >>> x = Tensor([1.0, 2.0, 3.0], element=f64)
            >>> x.at[1].set(9.0).tolist(), x.at[[0, 0]].add(1.0).tolist()
            ([1.0, 9.0, 3.0], [3.0, 2.0, 3.0])
        """
        return _At(self)

    def _update(self, index: object, update: Self | float, accumulate: bool, site: str) -> Self:
        word = "add" if accumulate else "set"
        if type(update) is not type(self) and (isinstance(update, Vocabulary) or not _is_number(update)):
            raise InvalidArgumentError(
                f"{site}: at[{index!r}].{word} on {self._name()} takes a {type(self).__name__} or a number, "
                f"got {type(update).__name__} {update!r}"
            )
        positions = self._positions(index, site)
        flat = positions.reshape(-1)
        count, volume = flat.size, self.shape.volume
        if not accumulate and np.unique(flat).size != count:
            raise InvalidArgumentError(
                f"{site}: at[{index!r}].set on {self._name()} names a position twice (the winner would be "
                "unspecified); use .add, or index each position once"
            )
        # Nothing is left behind on failure: every composite word records all or nothing.
        try:
            if isinstance(update, Composites):
                rows = update.broadcast_to(positions.shape).reshape((count, 1))
            else:
                rows = self._constant((count, 1), float(update))
            selection = self._selection(flat, volume)
            placed = rows.scatter(selection).reshape(self.shape)
            hit = self._constant((count, 1), 1.0).scatter(selection).reshape(self.shape)
            # Select keeps every untouched element's bits (an added zero would turn -0 into +0).
            return hit.select(self + placed if accumulate else placed, self)
        except MixedTapesError:
            raise MixedTapesError(
                f"{site}: at[{index!r}].{word} on {self._name()}: the update {update!r} belongs to another tape "
                "(resolve it on this tape, or record both on one)"
            ) from None
        except ShapeMismatchError as error:
            raise ShapeMismatchError(
                f"{site}: at[{index!r}].{word} on {self._name()} takes an update of shape {Shape.of(positions.shape)} "
                f"(or one that broadcasts to it); got {update!r} ({error.detail})"
            ) from None

    # ----------------------------------------------------------------- the common math (issue 12)
    # Every method here is a composite of the sealed opcodes and maps, so each reading covers it.
    # Piecewise formulas use ``_pick``: both pieces are evaluated on inputs clamped into their
    # own safe domain, so neither is ever inf or NaN where it is not chosen, and ``mask * a +
    # (1 - mask) * b`` is then exact (``1 * a + 0 * b == a``) with a zero gradient into the
    # unchosen piece. A true inf-safe select is a new opcode; these do not need one.
    def _pick(self, mask: Self, chosen: Self, otherwise: Self) -> Self:
        return mask * chosen + (mask.one_like() - mask) * otherwise

    def _minimum_tied_to_self(self, bound: Self | float) -> Self:
        """``min(x, bound)`` whose tie sends the gradient to ``x``."""
        ceiling = bound if isinstance(bound, bool) else -bound
        return -((-self).maximum(ceiling))

    def tan(self) -> Self:
        """``sin(x) / cos(x)``; within a few ulp of libm's tan (cos is accurate near its zeros).

        Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([0.5], element=f64).tan().scalar(), 12)
            0.546302489844
        """
        return self.sin() / self.cos()

    def _sinh_cosh_half(self) -> tuple[Self, Self]:
        """``(sinh(x / 2), cosh(x / 2))`` from expm1 (no cancellation near 0) and exp."""
        half = self * 0.5
        sinh = (half.expm1() - (-half).expm1()) * 0.5
        cosh = (half.exp() + (-half).exp()) * 0.5
        return sinh, cosh

    def sinh(self) -> Self:
        """``2 sinh(x/2) cosh(x/2)``, each half from exp and expm1.

        The half angle keeps the value finite wherever sinh is (``exp(x)`` alone overflows
        just below sinh's own limit), and expm1 keeps small ``x`` relatively accurate; the
        sign of zero is kept.

        Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([1.0], element=f64).sinh().scalar(), 12)
            1.175201193644
        """
        sinh, cosh = self._sinh_cosh_half()
        return sinh * cosh * 2.0

    def cosh(self) -> Self:
        """``1 + 2 sinh(x/2)²``: finite wherever cosh is, gradient relatively accurate near 0.

        Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([1.0], element=f64).cosh().scalar(), 12)
            1.543080634815
        """
        sinh, _ = self._sinh_cosh_half()
        return sinh * sinh * 2.0 + 1.0

    def asinh(self) -> Self:
        """Inverse hyperbolic sine, in two clamped pieces (see ``_pick``).

        ``|x| <= 1``: ``log1p(x + x² / (1 + sqrt(x² + 1)))``, accurate near 0 and odd.
        ``|x| > 1``: ``sign(x) (ln|x| + ln(1 + sqrt(1 + 1/x²)))``, which never squares a large
        ``x`` (no overflow up to the largest float) and gives ±inf at ±inf.

        Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([-2.0], element=f64).asinh().scalar(), 12)
            -1.443635475179
        """
        one = self.one_like()
        inner = self.clip(-1.0, 1.0)
        near = (inner + inner * inner / ((inner * inner + 1.0).sqrt() + 1.0)).log1p()
        magnitude = self.abs().maximum(one)
        reciprocal = one / magnitude
        far = magnitude.ln() + ((reciprocal * reciprocal + 1.0).sqrt() + 1.0).ln()
        return self._pick(one.step(self.abs()), near, self.sign() * far)

    def acosh(self) -> Self:
        """Inverse hyperbolic cosine for ``x >= 1`` (NaN below), in two clamped pieces.

        ``x <= 2``: ``log1p(t + sqrt(t) sqrt(t + 2))`` with ``t = x - 1`` (exact there), accurate
        near 1; ``x > 2``: ``ln x + ln(1 + sqrt(1 - 1/x²))``. The derivative at 1 is +inf, as
        ``1 / sqrt(x² - 1)``.

        Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([2.5], element=f64).acosh().scalar(), 12)
            1.566799236972
        """
        t = self._minimum_tied_to_self(2.0) - 1.0
        # sqrt(t) sqrt(t + 2), not sqrt(t (t + 2)): at t = 0 the product rule would meet inf * 0.
        near = (t + t.sqrt() * (t + 2.0).sqrt()).log1p()
        large = self.maximum(self._constant(self.shape, 2.0))
        reciprocal = large.one_like() / large
        far = large.ln() + ((-(reciprocal * reciprocal) + 1.0).sqrt() + 1.0).ln()
        return self._pick(self._constant(self.shape, 2.0).step(self), near, far)

    def atanh(self) -> Self:
        """``(log1p(x) - log1p(-x)) / 2``: odd, accurate near 0 and near ±1, ±inf at ±1.

        Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([0.5], element=f64).atanh().scalar(), 12)
            0.549306144334
        """
        return (self.log1p() - (-self).log1p()) * 0.5

    # -- inverse circular functions over the Atan map (docs/openings/inverse-trigonometry.md)
    def _signbit(self) -> Self:
        """1 where the sign bit is set (-0 and -inf included, NaN not), else 0; no gradient."""
        return (self < 0.0).maximum(self.one_like() / self < 0.0)

    def asin(self) -> Self:
        """Inverse sine, ``2 atan(x / (1 + sqrt(1 - x) sqrt(1 + x)))`` (the half-angle form).

        The arctangent's argument stays within [-1, 1], so ±1 give ±π/2 (``2 atan(1)``) and
        the value is within a few ulp everywhere; outside [-1, 1] it is NaN, as numpy. The
        two square roots are taken apart, so at ±1 the derivative ``1 / sqrt(1 - x²)`` comes
        out +inf rather than ``inf * 0``.

        Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([0.5], element=f64).asin().scalar(), 12)
            0.523598775598
        """
        root = (self.one_like() - self).sqrt() * (self + 1.0).sqrt()
        return (self / (root + 1.0)).atan() * 2.0

    def acos(self) -> Self:
        """Inverse cosine, ``2 atan(sqrt(1 - y) / sqrt(1 + y))`` of ``y = |x|``, reflected below 0.

        For ``x < 0`` the result is ``π - acos(-x)``: the same form meets no cancellation near
        either end, gives 0 at 1 and π at -1, and the derivative ``-1 / sqrt(1 - x²)`` is
        -inf at both (a single form would give ``0 / 0`` at -1). NaN outside [-1, 1].

        Example:
            >>> from topos import Tensor, f64
            >>> Tensor([1.0, -1.0], element=f64).acos().tolist()
            [0.0, 3.141592653589793]
        """
        upper = self >= 0.0
        y = upper.select(self, -self)
        half = ((y.one_like() - y).sqrt() / (y + 1.0).sqrt()).atan() * 2.0
        return upper.select(half, -half + math.pi)

    def atan2(self, x: Self | Other | float) -> Self:
        """The angle of the point ``(x, y)`` with ``y`` this value, in [-π, π], as numpy's arctan2.

        The smaller of ``|y|``, ``|x|`` is divided by the larger: ``atan(y / x)`` (plus ±π by
        the sign of ``y`` when ``x`` has its sign bit set) or ``±π/2 - atan(x / y)``. Each
        piece reads only the elements it answers for (the others see safe stand-ins), and
        ``Select`` joins them, so quotients never overflow and an inf or NaN of the unused
        piece reaches neither value nor gradient. Signed zeros and infinities follow numpy:
        ``atan2(±0, +0) = ±0``, ``atan2(±0, -0) = ±π``, ``atan2(±inf, ±inf) = ±π/4, ±3π/4``.
        The gradient is ``(x, -y) / (x² + y²)`` without squaring, so huge and infinite
        operands give finite limits (0 at infinities); at ``(0, 0)``, where no derivative
        exists, it is 0 (jax gives NaN).

        Example:
            >>> from topos import Tensor, f64
            >>> y, x = Tensor([1.0, 0.0], element=f64), Tensor([-1.0, -0.0], element=f64)
            >>> [round(v, 12) for v in y.atan2(x).tolist()]
            [2.356194490192, 3.14159265359]
        """
        if isinstance(x, type(self)):
            if x.shape != self.shape:
                raise ShapeMismatchError(
                    f"{user_site()}: atan2 of {self._name()} and {x._name()}: shapes differ "
                    "(nothing broadcasts implicitly; use broadcast_to)"
                )
            other = x
        elif isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise InvalidArgumentError(
                f"{user_site()}: atan2 of {self._name()}: x must be a {type(self).__name__} or a number, "
                f"got {type(x).__name__} {x!r}"
            )
        else:
            other = self._constant(self.shape, float(x))
        y = self
        y_negative, x_negative = y._signbit(), other._signbit()
        y_unit, x_unit = y_negative.select(-1.0, 1.0), x_negative.select(-1.0, 1.0)
        both_zero = y.eq(0.0) * other.eq(0.0)
        both_infinite = y.isinf() * other.isinf()
        # |y| <= |x| (both infinite and both zero included): atan(y / x). Two zeros become
        # (±0, ±1) and two infinities (±1, ±1), which have the same angles.
        wide = other.abs() >= y.abs()
        plain = wide - both_zero.maximum(both_infinite)
        numerator = plain.select(y, y_unit * both_infinite)
        denominator = plain.select(other, x_unit)
        inner = (numerator / denominator).atan()
        flat = x_negative.select(inner + y_negative.select(-math.pi, math.pi), inner)
        # |y| > |x| (NaN too): ±π/2 - atan(x / y).
        steep = wide.one_like() - wide
        ratio = steep.select(other, 0.0) / steep.select(y, 1.0)
        upright = y_negative.select(-math.pi / 2, math.pi / 2) - ratio.atan()
        return wide.select(flat, upright)

    def _log_base(self, base: float) -> Self:
        return self.ln() / self._constant(self.shape, base).ln()

    def log2(self) -> Self:
        """``ln(x) / ln(2)``, the same two roundings as jax.numpy.log2."""
        return self._log_base(2.0)

    def log10(self) -> Self:
        """``ln(x) / ln(10)``, the same two roundings as jax.numpy.log10."""
        return self._log_base(10.0)

    def rsqrt(self) -> Self:
        """``1 / sqrt(x)``."""
        return self.one_like() / self.sqrt()

    # -- sorting by compare-exchange (docs/openings/sort-and-topk.md)
    def _exchange(self, order: Self, parity: int, descending: bool) -> tuple[Self, Self]:
        """One round of odd-even transposition along the last axis: pairs from ``parity`` swap when out of order.

        Both the values and ``order`` (the original positions) move by Selects, so every
        value keeps its bits; a pair swaps only when strictly out of order, so ties keep
        their first-come order (a stable sort).
        """
        extent = self.shape[-1]
        pairs = (extent - parity) // 2
        if pairs == 0:
            return self, order
        last = self.rank - 1
        lanes = [*self.shape.axes[:-1], pairs, 2]
        moved: list[Self] = []
        swap: Self | None = None
        for track in (self, order):
            pair = track.narrow(last, parity, 2 * pairs).reshape(lanes)
            first, second = pair.narrow(last + 1, 0, 1), pair.narrow(last + 1, 1, 1)
            if swap is None:
                swap = first < second if descending else second < first
            low, high = swap.select(second, first), swap.select(first, second)
            lane = low.one_like().pad(last + 1, 0, 2)
            merged = lane.select(low.pad(last + 1, 0, 2), high.pad(last + 1, 1, 2)).reshape([*self.shape.axes[:-1], 2 * pairs])
            if 2 * pairs == extent:
                moved.append(merged)
                continue
            inside = merged.one_like().pad(last, parity, extent)
            moved.append(inside.select(merged.pad(last, parity, extent), track))
        return moved[0], moved[1]

    def _sorted_last(self, descending: bool) -> tuple[Self, Self]:
        order = self._data(np.broadcast_to(np.arange(self.shape[-1], dtype=np.float64), self.shape.axes))
        values = self
        for round_ in range(self.shape[-1]):
            values, order = values._exchange(order, round_ % 2, descending)
        return values, order

    def _along_last(self, axis: int, what: str) -> tuple[Self, list[int]]:
        axis = self._axis(axis, what)
        permutation = [a for a in range(self.rank) if a != axis] + [axis]
        return self.permute(permutation), permutation

    def sort(self, axis: int = -1, descending: bool = False) -> tuple[Self, Self]:
        """numpy's stable ``sort`` along ``axis``, and the original positions (``argsort``) as values.

        An odd-even transposition network: ``n`` rounds of compare-exchange, each a few
        Selects over every pair at once, so ``n`` extents cost ``O(n)`` nodes of ``O(n)``
        work. Values keep their bits and the gradient is the cotangent permuted back, exactly.
        NaN compares false, so a NaN stays where the rounds leave it (numpy sorts it last):
        sort only NaN-free data. The positions carry no gradient.

        Example:
            >>> from topos import Tensor, f64
            >>> values, order = Tensor([3.0, -1.0, 2.0, -1.0], element=f64).sort()
            >>> values.tolist(), order.tolist()
            ([-1.0, -1.0, 2.0, 3.0], [1.0, 3.0, 2.0, 0.0])
        """
        if not isinstance(descending, bool):
            raise InvalidArgumentError(f"{user_site()}: sort descending must be a bool, got {descending!r}")
        moved, permutation = self._along_last(axis, "sort")
        values, order = moved._sorted_last(descending)
        back = [permutation.index(a) for a in range(self.rank)]
        return values.permute(back), order.stop_gradient().permute(back)

    def topk(self, k: int, axis: int = -1) -> tuple[Self, Self]:
        """The ``k`` largest along ``axis``, largest first, and their positions (PyTorch's ``topk``).

        The descending :meth:`sort` narrowed to ``k``: ties list the earlier position first.

        Example:
            >>> from topos import Tensor, f64
            >>> values, order = Tensor([1.0, 5.0, 3.0], element=f64).topk(2)
            >>> values.tolist(), order.tolist()
            ([5.0, 3.0], [1.0, 2.0])
        """
        axis = self._axis(axis, "topk")
        if not is_integer(k) or not 1 <= int(k) <= self.shape[axis]:
            raise InvalidArgumentError(f"{user_site()}: topk k must be an integer in [1, {self.shape[axis]}] for {self._name()}, got {k!r}")
        values, order = self.sort(axis, descending=True)
        return values.narrow(axis, 0, int(k)), order.narrow(axis, 0, int(k))

    # -- numpy's and PyTorch's spellings (issue 29)
    def log(self) -> Self:
        """The natural logarithm: :meth:`ln` under numpy's and PyTorch's name, so a port reads as written.

        Example:
            >>> from topos import Tensor, f64
            >>> Tensor([1.0, 4.0], element=f64).log().tolist() == Tensor([1.0, 4.0], element=f64).ln().tolist()
            True
        """
        return self.ln()

    def minimum(self, other: Self | Other | float) -> Self:
        """numpy's ``minimum``, spelled ``-maximum(-x, -other)``: negation is exact, so no rounding.

        NaN in either operand gives NaN (that operand's bits); at a tie the result is
        ``other``'s bits (``minimum(+0, -0)`` is ``-0``, as numpy) and the gradient goes wholly
        to ``x``, the left operand, as :meth:`maximum`'s does.

        Example:
            >>> from topos import Tensor, f64
            >>> Tensor([1.0, 5.0, -0.0], element=f64).minimum(Tensor([3.0, 2.0, 0.0], element=f64)).tolist()
            [1.0, 2.0, 0.0]
        """
        return -((-self).maximum(_negated(other)))

    def signbit(self) -> Self:
        """1 where the sign bit is set (``-0`` and ``-inf`` too), else 0, in this element; no gradient.

        The arithmetic opcodes cannot see a NaN's sign, so NaN gives 0 here where numpy's
        ``signbit`` reads the bit.

        Example:
            >>> from topos import Tensor, f64
            >>> Tensor([-0.0, 0.0, -2.0, float("inf")], element=f64).signbit().tolist()
            [1.0, 0.0, 1.0, 0.0]
        """
        return self._signbit()

    def copysign(self, sign: Self | Other | float) -> Self:
        """numpy's ``copysign``: ``x``'s magnitude with ``sign``'s sign bit (``-0`` counts as negative).

        Spelled as a Select between ``x`` and ``-x`` where the two sign bits differ, so the
        magnitude keeps its exact bits; the gradient is ``±1`` into ``x`` and exactly zero into
        ``sign``. As :meth:`signbit`, a NaN reads as positive: a NaN ``sign`` gives ``|x|``, and
        a NaN ``x`` comes back as ``x`` or ``-x`` by the same rule.

        Example:
            >>> from topos import Tensor, f64
            >>> Tensor([2.0, -3.0, 0.0], element=f64).copysign(Tensor([-1.0, 1.0, -0.0], element=f64)).tolist()
            [-2.0, 3.0, -0.0]
        """
        if isinstance(sign, type(self)):
            source = sign
        elif isinstance(sign, (bool, np.bool_)) or not _is_number(sign):
            raise InvalidArgumentError(f"{user_site()}: copysign takes a value of the same kind or a number as the sign, got {sign!r}")
        else:
            source = self._constant(self.shape, float(sign))  # type: ignore[arg-type]
        if source.shape != self.shape:
            raise ShapeMismatchError(
                f"{user_site()}: copysign: the sign of shape {source.shape} does not match {self._name()} "
                "(nothing broadcasts implicitly; use broadcast_to)"
            )
        flip = self._signbit() - source._signbit()
        return flip.select(-self, self)

    def logaddexp(self, other: Self | Other | float) -> Self:
        """``max(a, b) + log1p(exp(-|a - b|))``: finite for finite inputs, gradients split 1/2 at a tie.

        The maximum gives the tie to ``a`` and ``|a - b|`` is spelled ``maximum(a - b, b - a)``
        with its tie on the left, so at ``a == b`` each side gets 1/2 as in jax. Equal
        infinities give NaN (``inf - inf``), where jax special-cases them.

        Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([0.0], element=f64).logaddexp(0.0).scalar(), 12)
            0.69314718056
        """
        if isinstance(other, Vocabulary) and other.shape != self.shape:
            raise ShapeMismatchError(
                f"{user_site()}: logaddexp of {self._name()} and {other._name()}: shapes differ "
                "(nothing broadcasts implicitly; use broadcast_to)"
            )
        difference = self - other
        larger = self.maximum(other)
        return larger + (-(difference.maximum(-difference))).exp().log1p()

    def logsigmoid(self) -> Self:
        """``-softplus(-x)``: finite for every finite x (no ``log(0)`` for large ``-x``)."""
        return -((-self).softplus())

    def softsign(self) -> Self:
        """``x / (1 + |x|)``, spelled so that its gradient ``1 / (1 + |x|)²`` does not cancel.

        Below 1 in magnitude it is the quotient itself; from 1 on ``sign(x) (1 - 1 / (1 + |x|))``,
        whose derivative is one reciprocal's: the quotient rule's two terms would cancel there,
        losing about ``log2(1 + |x|)`` bits (29 ulp at x = 33 in f32). ±1 at ±inf.

        Example:
            >>> from topos import Tensor, f64
            >>> Tensor([-3.0, 0.5, float("inf")], element=f64).softsign().tolist()
            [-0.75, 0.3333333333333333, 1.0]
        """
        magnitude = self.abs()
        near = self / (magnitude + 1.0)
        far = (-(magnitude.one_like() / (magnitude + 1.0)) + 1.0) * self.sign()
        return (magnitude < 1.0).select(near, far)

    def _finite(self, number: object, what: str, role: str) -> float:
        if not _is_number(number) or not math.isfinite(float(number)):  # type: ignore[arg-type]
            raise InvalidArgumentError(
                f"{user_site()}: {what} of {self._name()}: {role} must be a finite number, got "
                f"{type(number).__name__} {number!r}"
            )
        return float(number)  # type: ignore[arg-type]

    def _negative_part(self) -> Self:
        """``min(x, 0)`` with the tie's gradient on ``x`` (jax's ``where(x > 0, .., x)`` side)."""
        return self._minimum_tied_to_self(self.zero_like())

    def elu(self, alpha: float = 1.0) -> Self:
        """``x`` for ``x > 0``, ``alpha (exp(x) - 1)`` otherwise; the gradient at 0 is ``alpha``.

        Spelled ``relu(x) + alpha * expm1(min(x, 0))``: the exponential never sees a
        positive argument, so nothing overflows.

        Example:
            >>> from topos import Tensor, f64
            >>> Tensor([-1000.0, 2.0], element=f64).elu().tolist()
            [-1.0, 2.0]
        """
        return self.relu() + self._negative_part().expm1() * self._finite(alpha, "elu", "alpha")

    def selu(self) -> Self:
        """``scale * elu(x, alpha)`` with the self-normalising constants (as jax.nn.selu)."""
        alpha = 1.6732632423543772848170429916717
        scale = 1.0507009873554804934193349852946
        return self.elu(alpha) * scale

    def celu(self, alpha: float = 1.0) -> Self:
        """``relu(x) + alpha * expm1(min(x, 0) / alpha)``; the gradient at 0 is 1."""
        alpha = self._finite(alpha, "celu", "alpha")
        return self.relu() + (self._negative_part() / alpha).expm1() * alpha

    def leaky_relu(self, negative_slope: float = 0.01) -> Self:
        """``x`` for ``x >= 0``, ``negative_slope * x`` below; the gradient at 0 is 1.

        For slopes in ``[0, 1]`` this is ``maximum(x, slope * x)`` (one rounding, as jax),
        above 1 the matching minimum; negative slopes are refused.

        Example:
            >>> from topos import Tensor, f64
            >>> Tensor([-2.0, 3.0], element=f64).leaky_relu(0.5).tolist()
            [-1.0, 3.0]
        """
        if isinstance(negative_slope, bool) or not isinstance(negative_slope, (int, float)) or not (
            math.isfinite(negative_slope) and negative_slope >= 0.0
        ):
            raise InvalidArgumentError(
                f"{user_site()}: leaky_relu of {self._name()}: negative_slope must be a finite number >= 0, "
                f"got {negative_slope!r}"
            )
        if negative_slope == 0.0:
            return self.maximum(self.zero_like())
        if negative_slope <= 1.0:
            return self.maximum(self * float(negative_slope))
        return self._minimum_tied_to_self(self * float(negative_slope))

    def _relu6(self) -> Self:
        """``min(max(x, 0), 6)`` with both ties on the constants (gradient 0 at 0 and 6, as jax)."""
        six = self._constant(self.shape, -6.0)
        return -(six.maximum(-self.relu()))

    def hardsigmoid(self) -> Self:
        """``relu6(x + 3) / 6``; gradient 1/6 strictly inside (-3, 3), 0 elsewhere (as jax)."""
        return (self + 3.0)._relu6() / 6.0

    def hardswish(self) -> Self:
        """``x * hardsigmoid(x)``."""
        return self * self.hardsigmoid()

    def mish(self) -> Self:
        """``x * tanh(softplus(x))``."""
        return self * self.softplus().tanh()



# Every word spelled here records all or nothing: one that fails partway (a shape refused
# at its last node, an operand of another tape) takes back what it recorded, on every tape.
for _name, _word in list(vars(Composites).items()):
    if inspect.isfunction(_word):
        setattr(Composites, _name, all_or_nothing(_word))


V = TypeVar("V", bound=Composites[Any])


class _At(Generic[V]):
    """``x.at``: indexing it names the positions an update writes."""

    __slots__ = ("_value",)

    def __init__(self, value: V) -> None:
        self._value = value

    def __getitem__(self, index: object) -> _Update[V]:
        return _Update(self._value, index)


class _Update(Generic[V]):
    """``x.at[index]``: ``set``, ``add`` or ``get`` give a new value; ``x`` is unchanged."""

    __slots__ = ("_index", "_value")

    def __init__(self, value: V, index: object) -> None:
        self._value = value
        self._index = index

    def set(self, update: V | float) -> V:
        """``x`` with the indexed positions replaced by ``update`` (each position named once)."""
        return self._value._update(self._index, update, False, user_site())

    def add(self, update: V | float) -> V:
        """``x`` with ``update`` added at the indexed positions (repeated positions accumulate)."""
        return self._value._update(self._index, update, True, user_site())

    def get(self) -> V:
        return self._value[self._index]


def where(mask: V, on_true: V | float, on_false: V | float) -> V:
    """``on_true`` where ``mask`` is nonzero, else ``on_false``; see :meth:`~topos.vocabulary.Vocabulary.select`.

    Example:
        >>> from topos import Tensor, f64, where
        >>> x = Tensor([-1.0, 0.0, 4.0], element=f64)
        >>> where(x > 0.0, x.sqrt(), 0.0).tolist()
        [0.0, 0.0, 2.0]
    """
    if not isinstance(mask, Vocabulary):
        raise InvalidArgumentError(f"{user_site()}: where takes a recorded value or tensor as the mask, got {mask!r}")
    return mask.select(on_true, on_false)


def stop_gradient(x: V) -> V:
    """``x`` unchanged, with no gradient flowing back through it.

    See :meth:`~topos.vocabulary.Vocabulary.stop_gradient`.
    """
    if not isinstance(x, Vocabulary):
        raise InvalidArgumentError(f"{user_site()}: stop_gradient takes a recorded value or tensor, got {x!r}")
    return x.stop_gradient()


@all_or_nothing
def einsum(subscripts: str, *operands: V) -> V:
    """Contractions written as ``"ij,jk->ik"``, lowered to permute, reshape, sums and matmul.

    Each label names one axis; a label in two operands is multiplied over, and summed
    unless the output keeps it (then it is a batch axis). Without ``->`` the output is the
    labels used once, sorted. Ellipses and repeated labels within one operand (diagonals)
    are refused. Three or more operands contract left to right.

    Example:
        >>> from topos import Tensor, f64, einsum
        >>> a = Tensor([[1.0, 2.0], [3.0, 4.0]], element=f64)
        >>> einsum("ij,j->i", a, Tensor([1.0, 1.0], element=f64)).tolist()
        [3.0, 7.0]
    """
    site = user_site()
    if not isinstance(subscripts, str):
        raise InvalidArgumentError(f"{site}: einsum takes the subscripts string first, got {subscripts!r}")
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise UnsupportedError(f"{site}: einsum {subscripts!r}: ellipses are not supported; name every axis")
    given, arrow, wanted = spec.partition("->")
    inputs = given.split(",")
    if len(inputs) != len(operands) or not operands:
        raise InvalidArgumentError(f"{site}: einsum {subscripts!r} names {len(inputs)} operands, got {len(operands)}")
    extents: dict[str, int] = {}
    for labels, operand in zip(inputs, operands, strict=True):
        if not isinstance(operand, Vocabulary):
            raise InvalidArgumentError(f"{site}: einsum operands are values or tensors, got {operand!r}")
        if not all(c.isalpha() for c in labels) or len(labels) != operand.rank:
            raise ShapeMismatchError(f"{site}: einsum {subscripts!r}: labels {labels!r} do not name the axes of {operand.shape}")
        if len(set(labels)) != len(labels):
            raise UnsupportedError(f"{site}: einsum {subscripts!r}: a label repeated in {labels!r} (a diagonal) is not supported")
        for label, extent in zip(labels, operand.shape, strict=True):
            if extents.setdefault(label, extent) != extent:
                raise ShapeMismatchError(f"{site}: einsum {subscripts!r}: label {label!r} has extents {extents[label]} and {extent}")
    if not arrow:
        wanted = "".join(sorted(c for c in extents if given.count(c) == 1))
    if len(set(wanted)) != len(wanted) or any(c not in extents for c in wanted):
        raise InvalidArgumentError(f"{site}: einsum {subscripts!r}: output {wanted!r} repeats or invents a label")
    value, labels = operands[0], inputs[0]
    for position in range(1, len(operands)):
        later = wanted + "".join(inputs[position + 1:])
        value, labels = _contract(value, labels, operands[position], inputs[position], later)
    # Sum what the output drops, then order the rest as the output asks.
    dropped = [i for i, c in enumerate(labels) if c not in wanted]
    if dropped:
        value = value.sum(dropped)
        labels = "".join(c for c in labels if c in wanted)
    if labels != wanted:
        value = value.permute([labels.index(c) for c in wanted])
    return value


def _contract(a: V, left: str, b: V, right: str, later: str) -> tuple[V, str]:
    """One pairwise contraction: labels only one side holds and nothing later needs are summed
    first; then ``[batch, free_a, summed] @ [batch, summed, free_b]``."""
    only_left = [i for i, c in enumerate(left) if c not in right and c not in later]
    if only_left:
        a = a.sum(only_left)
        left = "".join(c for c in left if c in right or c in later)
    only_right = [i for i, c in enumerate(right) if c not in left and c not in later]
    if only_right:
        b = b.sum(only_right)
        right = "".join(c for c in right if c in left or c in later)
    batch = [c for c in left if c in right and c in later]
    summed = [c for c in left if c in right and c not in later]
    free_a = [c for c in left if c not in right]
    free_b = [c for c in right if c not in left]
    size = {c: a.shape[i] for i, c in enumerate(left)} | {c: b.shape[i] for i, c in enumerate(right)}

    def extent(labels: list[str]) -> int:
        return math.prod(size[c] for c in labels)

    a = a.permute([left.index(c) for c in (*batch, *free_a, *summed)])
    b = b.permute([right.index(c) for c in (*batch, *summed, *free_b)])
    a = a.reshape((extent(batch), extent(free_a), extent(summed)))
    b = b.reshape((extent(batch), extent(summed), extent(free_b)))
    out = a.matmul(b).reshape(tuple(size[c] for c in (*batch, *free_a, *free_b)))
    return out, "".join((*batch, *free_a, *free_b))


def atan2(y: V, x: V | float) -> V:
    """numpy's ``arctan2(y, x)``: the angle of ``(x, y)`` in [-π, π]; see :meth:`Composites.atan2`.

    Example:
        >>> from topos import Tensor, atan2, f64
        >>> round(atan2(Tensor([1.0], element=f64), -1.0).scalar(), 12)
        2.356194490192
    """
    if not isinstance(y, Composites):
        raise InvalidArgumentError(f"{user_site()}: atan2 takes a recorded value or tensor as y, got {y!r}")
    return y.atan2(x)


def _like(like: object, what: str) -> Composites[Any]:
    if not isinstance(like, Composites):
        raise InvalidArgumentError(
            f"{user_site()}: {what} takes a recorded value or tensor first (the result joins its tape and element), got {like!r}"
        )
    return like


def arange(like: V, start: float, stop: float | None = None, step: float = 1.0) -> V:
    """numpy's ``arange`` as a constant on ``like``'s tape, in ``like``'s element (``like`` is not read).

    ``arange(like, n)`` counts ``0 .. n-1``; the values are numpy's float64 ``arange``
    rounded once to the element. The constant carries no gradient. An empty range is
    refused: a tensor is never empty.

    Example:
        >>> from topos import Tensor, arange, f64
        >>> x = Tensor([0.0], element=f64)
        >>> arange(x, 3).tolist(), arange(x, 1.0, 2.0, 0.25).tolist()
        ([0.0, 1.0, 2.0], [1.0, 1.25, 1.5, 1.75])
    """
    site = user_site()
    origin = _like(like, "arange")
    first, last = (0.0, start) if stop is None else (start, stop)
    bounds = {"start": first, "stop": last, "step": step}
    for name, number in bounds.items():
        if not _is_number(number) or not math.isfinite(float(number)):
            raise InvalidArgumentError(f"{site}: arange {name} must be a finite number, got {number!r}")
    if float(step) == 0.0:
        raise InvalidArgumentError(f"{site}: arange step must not be zero")
    values = np.arange(float(first), float(last), float(step), dtype=np.float64)
    if values.size == 0:
        raise InvalidArgumentError(
            f"{site}: arange({first!r}, {last!r}, {step!r}) is empty (shape [0]); tensors are never empty"
        )
    if values.size > SELECTION_LIMIT:
        raise CapacityError(f"{site}: arange({first!r}, {last!r}, {step!r}) holds {values.size} values, over {SELECTION_LIMIT}")
    return origin._data(values)  # type: ignore[return-value]


def eye(like: V, rows: int, columns: int | None = None) -> V:
    """The ``rows x columns`` identity (ones on the diagonal) as a constant on ``like``'s tape and element.

    As numpy's ``eye``; ``columns`` defaults to ``rows``. Both must be at least 1.

    Example:
        >>> from topos import Tensor, eye, f64
        >>> eye(Tensor([0.0], element=f64), 2, 3).tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    site = user_site()
    origin = _like(like, "eye")
    try:
        height = integer(rows, "eye rows", 1)
        width = height if columns is None else integer(columns, "eye columns", 1)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(f"{site}: {error.detail}") from None
    if height * width > SELECTION_LIMIT:
        raise CapacityError(f"{site}: eye({height}, {width}) holds {height * width} values, over {SELECTION_LIMIT}")
    return origin._data(np.eye(height, width, dtype=np.float64))  # type: ignore[return-value]


def _negated(other: Any) -> Any:
    """``-other`` for minimum's operand: numbers, arrays, nested lists, tensors and values.

    What does not negate as a number (a bool, a string) is handed on unchanged, so that
    ``maximum`` refuses it with its own message naming it; negation is exact, and rounding to
    the element afterwards commutes with it.
    """
    if isinstance(other, (bool, np.bool_)):
        return other
    try:
        if isinstance(other, (list, tuple)):
            return -np.asarray(other, dtype=np.float64)
        return -other
    except (TypeError, ValueError):
        return other
