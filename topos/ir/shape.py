"""Static shapes. A shape is the tuple of axis extents; rank 0 is a scalar.

Extents are positive: topos tensors are never empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import final

import attrs

from topos.errors import CapacityError, InvalidArgumentError
from topos.ir.checks import is_integer

__all__ = ["VOLUME_LIMIT", "Shape"]

VOLUME_LIMIT = 2**59
"""The most elements a shape may hold: far beyond any memory, and small enough that an array
of it in elements of up to 8 bytes stays under numpy's own ceiling of 2**63 bytes. A larger
shape would pass here only to be refused by numpy's raw "array is too big" at allocation;
byte counts and flat offsets computed from a volume never overflow int64."""


def _to_axes(value: Iterable[int]) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidArgumentError(f"a shape is a sequence of positive integers, got {value!r}")
    return tuple(value)


def _check_axes(instance: Shape, attribute: attrs.Attribute[tuple[int, ...]], value: tuple[int, ...]) -> None:
    volume = 1
    for extent in value:
        if type(extent) is not int or extent < 1:
            raise InvalidArgumentError(f"shape extents must be positive integers, got {list(value)}")
        volume *= extent
    if volume > VOLUME_LIMIT:
        raise CapacityError(
            f"shape {list(value)} holds {volume} elements, more than the limit of 2**59 "
            "(no machine can hold it)"
        )


@final
@attrs.frozen(slots=True, repr=False)
class Shape:
    """Extents per axis.

    Example:
        >>> Shape((2, 3)).volume
        6
        >>> str(Shape(()))
        '[]'
    """

    axes: tuple[int, ...] = attrs.field(converter=_to_axes, validator=_check_axes)

    @staticmethod
    def of(axes: Iterable[int] | Shape) -> Shape:
        """Coerce a sequence of extents (or a Shape) to a Shape."""
        if isinstance(axes, Shape):
            return axes
        if isinstance(axes, (str, bytes)) or not isinstance(axes, Iterable):
            raise InvalidArgumentError(f"a shape is a sequence of positive integers, got {axes!r}")
        extents = tuple(axes)
        for extent in extents:
            if not is_integer(extent):
                raise InvalidArgumentError(
                    f"shape extents must be positive integers, got {extent!r} in {list(extents)!r}"
                )
        return Shape(tuple(int(a) for a in extents))

    @staticmethod
    def scalar() -> Shape:
        return _SCALAR

    @property
    def rank(self) -> int:
        return len(self.axes)

    @property
    def volume(self) -> int:
        volume = 1
        for extent in self.axes:
            volume *= extent
        return volume

    def without_axis(self, axis: int) -> Shape:
        return Shape(self.axes[:axis] + self.axes[axis + 1 :])

    def with_axis(self, axis: int, extent: int) -> Shape:
        return Shape((*self.axes[:axis], extent, *self.axes[axis:]))

    def replace(self, axis: int, extent: int) -> Shape:
        return Shape((*self.axes[:axis], extent, *self.axes[axis + 1:]))

    def __getitem__(self, axis: int) -> int:
        return self.axes[axis]

    def __iter__(self) -> Iterator[int]:
        return iter(self.axes)

    def __len__(self) -> int:
        return len(self.axes)

    def __str__(self) -> str:
        return "[" + ", ".join(str(a) for a in self.axes) + "]"

    def __repr__(self) -> str:
        return f"Shape({self})"


_SCALAR = Shape(())
