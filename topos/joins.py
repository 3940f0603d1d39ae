"""Joining recorded values: :func:`concat` and :func:`stack`, composites of pad, add and reshape.

Both check every value before recording anything (one live tape, shapes that agree off the
axis) and record all or nothing, so a refused join leaves the tape as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

from topos.errors import (
    InvalidArgumentError,
    MixedTapesError,
    RecordingError,
    ShapeMismatchError,
    user_site,
)
from topos.stages.spec import Tape, Value
from topos.vocabulary import normal_axis

__all__ = ["concat", "stack"]


def concat(values: Sequence[Value], axis: int) -> Value:
    """Join values along ``axis``: each is padded to the combined extent and the pads summed."""
    given: object = values
    if isinstance(given, Value) or not isinstance(given, Sequence):
        raise InvalidArgumentError(f"{user_site()}: concat takes a sequence of values, got {type(given).__name__}")
    if not values:
        raise InvalidArgumentError(f"{user_site()}: concat needs at least one value")
    first = values[0]
    _one_live_tape(values, "concat")
    axis = normal_axis(axis, first.rank, "concat", user_site())
    for value in values[1:]:
        if value.rank != first.rank or value.shape.without_axis(axis) != first.shape.without_axis(axis):
            raise ShapeMismatchError(
                f"{user_site()}: concat along axis {axis}: {first.shape} and {value.shape} differ off that axis"
            )
    if len(values) == 1:
        return first
    extent = sum(v.shape[axis] for v in values)
    offset = 0
    total: Value | None = None
    with first.tape.transaction():
        for value in values:
            padded = value.pad(axis, offset, extent)
            offset += value.shape[axis]
            total = padded if total is None else total + padded
    assert total is not None
    return total


def stack(values: Sequence[Value], axis: int = 0) -> Value:
    """Stack values along a new ``axis`` (unsqueeze, then concat)."""
    given: object = values
    if isinstance(given, Value) or not isinstance(given, Sequence):
        raise InvalidArgumentError(f"{user_site()}: stack takes a sequence of values, got {type(given).__name__}")
    if not values:
        raise InvalidArgumentError(f"{user_site()}: stack needs at least one value")
    tape = _one_live_tape(values, "stack")
    mark = len(tape)
    try:
        return concat([v.unsqueeze(axis) for v in values], axis)
    except RecordingError:
        # The unsqueezes recorded before concat refused the shapes are taken back.
        tape._truncate(mark)
        raise


def _one_live_tape(values: Sequence[Value], what: str) -> Tape:
    """The one open tape all ``values`` belong to; checked before anything is recorded."""
    for position, value in enumerate(values):
        if not isinstance(value, Value):
            raise RecordingError(
                f"{user_site()}: {what} takes recorded values, got {type(value).__name__} "
                f"{value!r} at position {position}"
            )
    tape = values[0].tape
    for value in values:
        if value.tape is not tape:
            raise MixedTapesError(f"{user_site()}: {what} mixes values of two different tapes")
    tape._alive()
    return tape
