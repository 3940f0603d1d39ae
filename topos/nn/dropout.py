"""Dropout as a fed mask: :class:`Dropout` multiplies by an input whose default is all ones.

The mask is an input, not a parameter or a random draw: the graph stays a function, a
training run feeds a seeded mask and an unfed run is inference. Kept apart from the other
families because attention (:mod:`topos.nn.transformer`) applies it to its weights as well.
"""

from __future__ import annotations

from collections.abc import Sequence

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
from topos.nn.base import check_input, check_tape, shape_of
from topos.nn.module import Visitor, bind, facade

__all__ = ["Dropout"]


class Dropout:
    """Multiply by a mask *input* whose default is all ones: unfed, the layer is the identity.

    Training feeds a seeded mask (see :func:`topos.init.dropout`) through :meth:`feed`; an
    unfed run is inference. No randomness enters the graph.

    Example:
        >>> from topos import Tape, f64
        >>> from topos.init import dropout
        >>> tape = Tape(f64)
        >>> layer = Dropout(tape, (1, 4))
        >>> y = layer(tape.input([[1.0, 2.0, 3.0, 4.0]]))
        >>> network = tape.seal()
        >>> network.forward(network.parameters()).of(y.symbol).tolist()
        [[1.0, 2.0, 3.0, 4.0]]
        >>> feeds = layer.feed(dropout(seed=0, keep=0.5, element=f64)((1, 4)))
        >>> sorted(set(network.forward(network.parameters(), feeds).of(y.symbol).tolist()[0]) - {0.0}) != []
        True
    """

    __slots__ = ("_mask", "_shape")

    @facade
    def __init__(self, tape: Tape, shape: Sequence[int] | Shape) -> None:
        check_tape(tape, "Dropout")
        try:
            extent = Shape.of(shape)
        except ToposError as error:
            raise ShapeMismatchError(f"{user_site()}: Dropout: impossible shape {shape!r}: {error.detail}") from None
        except (TypeError, ValueError) as error:
            raise ShapeMismatchError(f"{user_site()}: Dropout: impossible shape {shape!r}: {error}") from None
        if extent.volume < 1:
            raise ShapeMismatchError(f"{user_site()}: Dropout: impossible shape {extent}")
        self._shape = extent
        self._mask = tape.input(Tensor.ones(extent, tape.element)).symbol

    @property
    def mask(self) -> Symbol:
        """The mask input's symbol (feed it, or use :meth:`feed`)."""
        return self._mask

    @property
    def shape(self) -> Shape:
        return self._shape

    def feed(self, mask: Tensor) -> dict[Symbol, Tensor]:
        """``{mask: payload}`` for a run's feeds, after checking the mask's shape."""
        given: object = mask
        if isinstance(given, Value):
            raise InvalidArgumentError(f"{user_site()}: Dropout.feed takes a payload (a Tensor), not a recorded Value")
        got = shape_of(mask, "Dropout")
        if got != self._shape:
            raise ShapeMismatchError(
                f"{user_site()}: Dropout: a mask of shape {got} cannot feed a layer of shape {self._shape}"
            )
        return {self._mask: mask}

    @facade
    def __call__(self, x: Value) -> Value:
        check_input("Dropout", x, str(self._shape), lambda: x.shape == self._shape)
        return x * bind(x, self._mask)

    def visit(self, visitor: Visitor) -> None:
        """The mask is an input, not a parameter: nothing to visit."""
