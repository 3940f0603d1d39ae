"""Symbols and nodes: the names and the rows of a recorded spec."""

from __future__ import annotations

import sys
from typing import final

import attrs

from topos.ir.element import ElementType
from topos.ir.ops import Op, op_name
from topos.ir.shape import Shape

__all__ = ["Node", "Symbol"]


@final
@attrs.frozen(slots=True, order=True)
class Symbol:
    """A thin, hashable name for one node: the recording family and the node's position.

    Symbols carry no payload. Every API after recording speaks symbols; a symbol of another
    family is refused loudly.

    Example:
        >>> from topos import Tape
        >>> network, w = Tape.record(lambda t: t.parameter(1.0))
        >>> w.index
        0
    """

    family: int
    index: int

    def __repr__(self) -> str:
        return f"Symbol(%{self.index})"


def _interned(site: str) -> str:
    # A loop records thousands of nodes at one line: each would otherwise hold its own copy.
    return sys.intern(site) if type(site) is str else site


@final
@attrs.frozen(slots=True)
class Node:
    """One recorded instruction: opcode, operand positions, shape, element and user site.

    ``site`` is the ``file:line`` of the user code that recorded the node; it is used in
    error messages only and never printed by ``describe``.
    """

    op: Op
    operands: tuple[int, ...]
    shape: Shape
    element: ElementType
    site: str = attrs.field(eq=False, converter=_interned)

    @property
    def name(self) -> str:
        return op_name(self.op)

    @property
    def is_source(self) -> bool:
        return self.op.arity == 0
