"""The one error hierarchy of topos.

Every failure a user can provoke raises a subclass of :class:`ToposError`. Messages name
the user's source line (``file:line``) where one is known, the symbols involved and their
shapes, so a failure can be traced back to the recording that caused it.

Example:
    >>> from topos import Tape, ToposError
    >>> try:
    ...     Tape.record(lambda t: t.input([1.0, 2.0]) + t.input([1.0, 2.0, 3.0]))
    ... except ToposError as error:
    ...     print(type(error).__name__)
    ShapeMismatchError
"""

from __future__ import annotations

import os
import sys
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from topos.finiteness import NonFiniteReport

__all__ = [
    "BackwardTargetError",
    "CapacityError",
    "CheckpointError",
    "DataFileError",
    "DeclarationError",
    "ElementError",
    "ElementRangeError",
    "EmissionError",
    "FeedError",
    "ForeignSymbolError",
    "FrozenError",
    "InvalidArgumentError",
    "MixedTapesError",
    "NonFiniteError",
    "NotDifferentiableError",
    "ParametersError",
    "PluginValidationError",
    "RecordingError",
    "SealedTapeError",
    "ShapeMismatchError",
    "SymbolError",
    "ToposError",
    "UnknownSymbolError",
    "UnsupportedError",
    "XlaUnavailableError",
    "user_site",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class ToposError(Exception):
    """Root of every error topos raises on purpose.

    A message that does not already name the user's line gets it as a prefix, so every
    error points at the line outside the package that provoked it, wherever it was raised.
    """

    def __init__(self, *args: object) -> None:
        self.detail = str(args[0]) if len(args) == 1 else ""
        if len(args) == 1 and isinstance(args[0], str):
            site = user_site()
            message = args[0]
            if message.startswith(site + ": "):
                self.detail = message[len(site) + 2 :]
            elif site not in message:
                args = (f"{site}: {message}",)
        super().__init__(*args)

    detail: str
    """The message without its leading ``file:line:`` prefix (for re-raising with more context)."""


class RecordingError(ToposError):
    """A recording expression was malformed; raised at the user's recording line."""


class ShapeMismatchError(RecordingError):
    """Operand shapes do not satisfy an opcode's shape rule (nothing broadcasts implicitly)."""


class InvalidArgumentError(RecordingError):
    """An opcode parameter (axis, permutation, window, extent) is out of range."""


class UnsupportedError(ToposError, TypeError):
    """The operation is not part of the vocabulary yet (comparisons, indexing); says what to use."""


class SealedTapeError(RecordingError):
    """A recording proxy was used after its tape was sealed."""


class MixedTapesError(RecordingError):
    """Values of two different tapes met in one expression."""


class SymbolError(ToposError):
    """A symbol was used where it does not belong."""


class ForeignSymbolError(SymbolError):
    """The symbol belongs to another network family."""


class UnknownSymbolError(SymbolError):
    """The run, field or table does not hold a value for this symbol."""


class NotDifferentiableError(SymbolError):
    """A derivative was asked with respect to a constant leaf, which has no gradient slot."""


class DeclarationError(SymbolError):
    """A value outside an entry's declared roots and observes was read."""


class FeedError(ToposError):
    """A feed names a non-input, has the wrong shape, or cannot convert."""


class BackwardTargetError(ToposError):
    """A backward target or seed has the wrong shape or provenance."""


class ParametersError(ToposError):
    """A parameter table does not fit the network or slot it is used with."""


class ElementError(ToposError):
    """An element type is unknown, malformed, or mixed with another."""


class ElementRangeError(ElementError):
    """A finite number is beyond what the element holds (it would silently become inf)."""


class EmissionError(ToposError):
    """A plan could not be written as StableHLO; names the node and the operation."""


class XlaUnavailableError(ToposError):
    """The optional XLA road was asked for but jax/jaxlib are not importable."""


class CheckpointError(ToposError):
    """A checkpoint file is corrupt, foreign or does not fit its template."""


class DataFileError(InvalidArgumentError):
    """A data file (IDX, CIFAR) is not a regular file, is malformed, or holds more or less than it says."""


class FrozenError(ToposError, AttributeError):
    """An immutable object (a Tensor, a sealed table) was asked to change an attribute."""


class CapacityError(ToposError):
    """A shape or result is too large to represent or allocate; names the op and the shape."""


class NonFiniteError(ToposError, ArithmeticError):
    """A checked run returned a NaN or an infinity; ``report`` says which node it came from
    (see :func:`topos.finiteness.checked`)."""

    def __init__(self, message: str, report: NonFiniteReport) -> None:
        super().__init__(message)
        self.report = report


class PluginValidationError(ToposError):
    """A plugin registered something malformed or clashing; names the plugin."""


_INSIDE: dict[str, bool] = {}


def _inside_package(filename: str) -> bool:
    inside = _INSIDE.get(filename)
    if inside is None:
        # Code that attrs generates for our classes, and the straight-line programs plans
        # compile, are ours too: the user's line is further out.
        inside = filename.startswith(("<attrs generated", "<topos")) or os.path.abspath(
            filename
        ).startswith(_PACKAGE_DIR + os.sep)
        _INSIDE[filename] = inside
    return inside


def user_site() -> str:
    """Return ``file:line`` of the innermost caller frame outside the topos package.

    Recording stores this on every node so errors can point at the line that recorded it.
    """
    frame: FrameType | None = sys._getframe(1)
    last = sys._getframe(1)
    while frame is not None:
        last = frame
        if not _inside_package(frame.f_code.co_filename):
            break
        frame = frame.f_back
    return f"{last.f_code.co_filename}:{last.f_lineno}"
