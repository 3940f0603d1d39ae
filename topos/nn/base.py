"""What the layer families share: payload shapes, parameter recording, and the checks that
run before anything is recorded.

Contract, kept by every layer of :mod:`topos.nn`: the constructor records the layer's
parameters (or inputs) on the tape it is handed and keeps only their symbols; calling the
layer records its formula onto the tape of its input, unfused, as a user would spell it by
hand (the equivalence tests compare the spec text byte for byte). Every check runs before
the first recording, so a refused layer leaves its tape as it found it, and the error names
the layer, the user's line and the shapes involved. Layers choose no distributions,
learning rates or float constants: initial payloads, epsilons and masks are the caller's.

The helpers below are how the layer modules keep that contract, and a plugin's layer
written against the public surface may use them too. :class:`Weighted` is the base of the
layers holding ``weights`` and an optional ``bias``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from topos import (
    InvalidArgumentError,
    Shape,
    ShapeMismatchError,
    Symbol,
    Tape,
    Tensor,
    ToposError,
    Value,
)
from topos.errors import user_site
from topos.nn.module import Visitor

__all__ = [
    "Init",
    "Payload",
    "Weighted",
    "check_input",
    "check_tape",
    "count_option",
    "draw",
    "flag_option",
    "pair_option",
    "parameter_symbol",
    "shape_of",
    "spread",
]

Payload = Any
"""A Tensor, a numpy array, nested lists or a number; or a recorded parameter Value to share."""

Init = Callable[[Shape], Tensor]
"""An initializer: given a shape, a Tensor of exactly that shape (see :mod:`topos.init`)."""


def shape_of(data: Payload, layer: str = "a layer") -> Shape:
    """The shape a payload (or a recorded value) will have once recorded.

    Example:
        >>> shape_of([[1.0, 2.0, 3.0]])
        Shape([1, 3])
    """
    if isinstance(data, (Tensor, Value)):
        return data.shape
    try:
        return Shape(tuple(int(a) for a in np.shape(data)))
    except (ToposError, TypeError, ValueError):
        raise ShapeMismatchError(
            f"{user_site()}: {layer}: impossible payload shape {list(np.shape(data))}"
        ) from None


def check_tape(tape: Tape, layer: str) -> None:
    """Refuse a first argument that is not the :class:`~topos.Tape` to record on.

    Example:
        >>> from topos import InvalidArgumentError
        >>> check_tape(Tape(), "Linear")
        >>> try:
        ...     check_tape([[1.0]], "Linear")
        ... except InvalidArgumentError as error:
        ...     "must be the Tape" in str(error)
        True
    """
    if not isinstance(tape, Tape):
        raise InvalidArgumentError(f"{user_site()}: {layer}: the first argument must be the Tape to record on, got {type(tape).__name__}")


def parameter_symbol(tape: Tape, data: Payload, layer: str) -> Symbol:
    """Record ``data`` as a parameter, or reuse a recorded value (weight sharing).

    Example:
        >>> tape = Tape()
        >>> shared = tape.parameter([1.0, 2.0])
        >>> parameter_symbol(tape, shared, "Linear") == shared.symbol
        True
    """
    if isinstance(data, Value):
        if data.tape is not tape:
            raise InvalidArgumentError(f"{user_site()}: {layer}: a shared parameter must live on the layer's tape")
        return data.symbol
    return tape.parameter(data).symbol


def spread(value: Value, like: Shape) -> Value:
    """Broadcast a ``[D]`` value over the leading axes of ``like`` (``[..., D]``), one node per axis.

    Example:
        >>> tape = Tape()
        >>> spread(tape.input([1.0, 2.0]), Shape((4, 3, 2))).shape
        Shape([4, 3, 2])
    """
    for axis in range(like.rank - value.rank):
        value = value.broadcast_along(axis, like[axis])
    return value


def check_input(layer: str, x: Value, expected: str, ok: Callable[[], bool]) -> None:
    """Refuse an input that is not a recorded Value, or one whose shape ``ok`` rejects.

    ``ok`` is asked only once ``x`` is known to be a Value (it reads x's shape);
    ``expected`` describes the shape wanted, for the message.

    Example:
        >>> from topos import ShapeMismatchError
        >>> x = Tape().input([1.0, 2.0])
        >>> check_input("RmsNorm", x, "[..., 2]", lambda: x.shape[-1] == 2)
        >>> try:
        ...     check_input("RmsNorm", x, "[..., 3]", lambda: x.shape[-1] == 3)
        ... except ShapeMismatchError as error:
        ...     "RmsNorm expects input [..., 3]" in str(error)
        True
    """
    if not isinstance(x, Value):
        raise InvalidArgumentError(
            f"{user_site()}: {layer} takes a recorded Value {expected}, got {type(x).__name__}; "
            "record data first with tape.input(...) or tape.leaf(...)"
        )
    if not ok():
        raise ShapeMismatchError(f"{user_site()}: {layer} expects input {expected}; got %{x.index}{x.shape}")


def draw(init: Init, shape: Shape, layer: str, name: str) -> Tensor:
    """Draw ``shape`` from ``init`` and check the answer is a Tensor of exactly that shape.

    Example:
        >>> from topos.init import xavier
        >>> draw(xavier(seed=0), Shape((3, 2)), "Linear", "weights").shape
        Shape([3, 2])
    """
    if not callable(init):
        raise InvalidArgumentError(f"{user_site()}: {layer}: init must be callable (Shape -> Tensor), got {init!r}")
    drawn = init(shape)
    if not isinstance(drawn, Tensor):
        raise InvalidArgumentError(
            f"{user_site()}: {layer}: init returned {type(drawn).__name__} for {name} {shape}, not a Tensor"
        )
    if drawn.shape != shape:
        raise ShapeMismatchError(
            f"{user_site()}: {layer}: init returned shape {drawn.shape} for {name}, which was "
            f"requested as {shape} (an init must honour the shape it is given)"
        )
    return drawn


def count_option(layer: str, name: str, value: object, least: int) -> int:
    """An integer option of a layer (not a bool), at least ``least``.

    Example:
        >>> count_option("Conv2d", "groups", 2, 1)
        2
    """
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)) or value < least:
        raise InvalidArgumentError(f"{user_site()}: {layer}: {name} must be an integer >= {least}; got {value!r}")
    return int(value)


def pair_option(layer: str, name: str, value: object, least: int) -> tuple[int, int]:
    """An int or a pair of ints, each at least ``least``, as a pair.

    Example:
        >>> pair_option("Conv2d", "stride", 2, 1), pair_option("Conv2d", "padding", (1, 0), 0)
        ((2, 2), (1, 0))
    """
    if isinstance(value, tuple):
        if len(value) != 2:
            raise InvalidArgumentError(f"{user_site()}: {layer}: {name} must be an int or a pair of ints; got {value!r}")
        return count_option(layer, name, value[0], least), count_option(layer, name, value[1], least)
    single = count_option(layer, name, value, least)
    return single, single


def flag_option(layer: str, name: str, value: object) -> bool:
    """A boolean option of a layer: ``True`` or ``False`` (numpy's included), nothing truthy.

    Example:
        >>> flag_option("AvgPool2d", "ceil_mode", False)
        False
    """
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{user_site()}: {layer}: {name} must be True or False; got {value!r}")
    return bool(value)


class Weighted:
    """What every weighted layer shares: ``weights``, an optional ``bias``, and visiting them
    under those names (weights first).

    Example:
        >>> from topos.nn import Linear, named_parameters
        >>> [str(path) for path, _ in named_parameters(Linear(Tape(), [[1.0]], [0.0]))]
        ['weights', 'bias']
    """

    __slots__ = ("_bias", "_shape", "_weights")

    _bias: Symbol | None
    _shape: Shape
    _weights: Symbol

    def _take(self, tape: Tape, weights: Payload, bias: Payload | None, layer: str, shape: Shape) -> None:
        self._shape = shape
        self._weights = parameter_symbol(tape, weights, layer)
        self._bias = None if bias is None else parameter_symbol(tape, bias, layer)

    @property
    def weights(self) -> Symbol:
        """The weights parameter."""
        return self._weights

    @property
    def bias(self) -> Symbol | None:
        """The bias parameter, or ``None`` for a layer built without one."""
        return self._bias

    def visit(self, visitor: Visitor) -> None:
        visitor.parameter("weights", self._weights)
        if self._bias is not None:
            visitor.parameter("bias", self._bias)
