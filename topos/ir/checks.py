"""Argument checks shared by every public entry: integers that must really be integers.

Python lets ``True`` stand for 1 and ``2.0`` for 2; an axis, extent or index given that way
is almost always a mistake (``x.sum_along(True)`` summing along axis 1), so every entry that
expects an integer goes through :func:`integer`, which refuses bools, floats and strings
alike and names what it was checking.

Example:
    >>> integer(3, "axis")
    3
    >>> try:
    ...     integer(True, "axis")
    ... except InvalidArgumentError as error:
    ...     print(str(error).split(": ", 1)[1])
    axis must be an integer, got True (a bool)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topos.errors import InvalidArgumentError

__all__ = ["integer", "is_integer"]


def is_integer(value: Any) -> bool:
    """True for Python and numpy integers; False for bools (which are ints to Python)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def integer(value: Any, what: str, minimum: int | None = None) -> int:
    """``value`` as an int, or InvalidArgumentError naming ``what`` and the value given."""
    if not is_integer(value):
        kind = "a bool" if isinstance(value, (bool, np.bool_)) else type(value).__name__
        raise InvalidArgumentError(f"{what} must be an integer, got {value!r} ({kind})")
    number = int(value)
    if minimum is not None and number < minimum:
        raise InvalidArgumentError(f"{what} must be an integer >= {minimum}, got {number}")
    return number
