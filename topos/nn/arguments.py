"""Argument checks and small recordings the functional idioms share.

Contract: each check refuses a bad argument with an :class:`~topos.InvalidArgumentError`
(a bias of the wrong shape with a :class:`~topos.ShapeMismatchError`) naming the caller's
line, the argument and the value, before anything is recorded; the recordings
(:func:`pad_zeros`, :func:`pad_constant`) use :class:`~topos.Value` methods only, like every facade.
"""

from __future__ import annotations

import math

import numpy as np

from topos import InvalidArgumentError, ShapeMismatchError, Value
from topos.errors import user_site

__all__ = [
    "Padding2d",
    "Pair",
    "check_bias",
    "epsilon_of",
    "int_pair",
    "pad_constant",
    "pad_zeros",
    "padding2d",
    "positive_integer",
    "recorded_values",
]


def positive_integer(name: str, value: object, minimum: int = 1) -> None:
    """Refuse anything but an integer (not a bool) of at least ``minimum``.

    Example:
        >>> positive_integer("stride", 2)
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InvalidArgumentError(f"{user_site()}: {name} must be an integer >= {minimum}, got {value!r}")


def recorded_values(what: str, **named: Value | None) -> None:
    """Refuse anything but recorded values (``None`` where the argument is optional).

    Example:
        >>> recorded_values("conv2d", bias=None)
    """
    for name, value in named.items():
        if value is not None and not isinstance(value, Value):
            raise InvalidArgumentError(
                f"{user_site()}: {what}: {name} must be a recorded Value, got {type(value).__name__}; "
                "record data first with tape.input(...) or tape.leaf(...)"
            )


def check_bias(what: str, bias: Value | None, filters: int) -> None:
    """Refuse a bias that is not ``[filters]``; ``None`` (no bias) passes.

    Example:
        >>> from topos import Tape
        >>> check_bias("conv2d", Tape().input([0.0, 1.0]), 2)
        >>> check_bias("conv2d", None, 2)
    """
    if bias is not None and bias.shape.axes != (filters,):
        raise ShapeMismatchError(f"{user_site()}: {what} bias %{bias.index}{bias.shape} must be [{filters}]")


def epsilon_of(epsilon: object, what: str) -> float:
    """A norm's epsilon as a float: a finite, non-negative real number (not a bool or text).

    Example:
        >>> epsilon_of(1e-5, "LayerNorm")
        1e-05
    """
    if isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, (int, float, np.integer, np.floating)):
        raise InvalidArgumentError(f"{user_site()}: {what}: epsilon must be a number, got {epsilon!r}")
    value = float(epsilon)
    if not math.isfinite(value) or value < 0.0:
        raise InvalidArgumentError(f"{user_site()}: {what}: epsilon must be finite and >= 0, got {epsilon!r}")
    return value


Pair = int | tuple[int, int]
Padding2d = int | tuple[int, int] | tuple[tuple[int, int], tuple[int, int]]


def int_pair(name: str, value: object, minimum: int) -> tuple[int, int]:
    """An int or a pair of ints, each an integer >= ``minimum``, as a pair.

    Example:
        >>> int_pair("stride", 2, 1)
        (2, 2)
    """
    pair = (value, value) if not isinstance(value, tuple) else value
    if len(pair) != 2:
        raise InvalidArgumentError(f"{user_site()}: {name} must be an int or a pair of ints, got {value!r}")
    first, second = pair
    positive_integer(name, first, minimum)
    positive_integer(name, second, minimum)
    return int(first), int(second)


def padding2d(value: object) -> tuple[tuple[int, int], tuple[int, int]]:
    """``p``, ``(ph, pw)`` or ``((top, bottom), (left, right))`` as the last form.

    Example:
        >>> padding2d((1, 2))
        ((1, 1), (2, 2))
    """
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(side, tuple) for side in value):
        return int_pair("padding", value[0], 0), int_pair("padding", value[1], 0)
    ph, pw = int_pair("padding", value, 0)
    return (ph, ph), (pw, pw)


def pad_zeros(x: Value, axis: int, before: int, after: int) -> Value:
    """``x`` with ``before`` and ``after`` zeros along ``axis`` (itself when both are 0).

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: pad_zeros(t.input([1.0, 2.0]), 0, 1, 0))
        >>> network.forward(network.parameters(), {}).of(y).numpy().tolist()
        [0.0, 1.0, 2.0]
    """
    if before == 0 and after == 0:
        return x
    return x.pad(axis, before, x.shape[axis] + before + after)


def pad_constant(x: Value, pairs: list[tuple[int, int]], value: float) -> Value:
    """``x`` with ``pairs[axis] = (before, after)`` positions of ``value`` around it, per axis.

    The border is chosen by a Select on a padded mask, never added: ``x + (c - c)`` would turn
    the interior into NaN for an infinite or NaN ``c`` and a ``-0`` into ``+0`` for any ``c``.
    A border of ``+0`` is the Pad opcode alone. The gradient reaches the interior untouched.

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: pad_constant(t.input([1.0, -0.0]), [(1, 1)], float("-inf")))
        >>> network.forward(network.parameters(), {}).of(y).numpy().tolist()
        [-inf, 1.0, -0.0, -inf]
    """
    padded = x
    for axis, (before, after) in enumerate(pairs):
        padded = pad_zeros(padded, axis, before, after)
    if padded.shape == x.shape or (value == 0.0 and not math.copysign(1.0, value) < 0.0):
        return padded
    inside = x.one_like()
    for axis, (before, after) in enumerate(pairs):
        inside = pad_zeros(inside, axis, before, after)
    return inside.select(padded, value)
