"""The :class:`Embedding` table: ``[vocab, dim]`` weights gathered by a one-hot selection
``[count, vocab]``, which a Tensor stores as indices so a large vocabulary gathers by index.
The contract every layer keeps is stated in :mod:`topos.nn.base`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from topos import ElementType, Shape, ShapeMismatchError, Symbol, Tape, Tensor, Value, f32
from topos.errors import user_site
from topos.ir.checks import integer
from topos.nn.base import Init, Payload, check_input, check_tape, draw, parameter_symbol, shape_of
from topos.nn.module import Visitor, bind, facade

__all__ = ["Embedding"]


class Embedding:
    """A ``[vocab, dim]`` table; ``embedding(selection)`` gathers rows by a one-hot selection.

    Feed the selection as ``Tensor.selection(indices, vocab)`` (or :meth:`select`), which is
    stored as indices, so a large vocabulary gathers by index. The table is visited as
    ``weights``; :attr:`table` exposes it for tying.

    Example:
        >>> from topos import Tape, Tensor, f64
        >>> def build(t: Tape):
        ...     embed = Embedding(t, [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
        ...     return embed(t.input(Tensor.selection([2, 0], 3, f64)))
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[4.0, 5.0], [0.0, 1.0]]
    """

    __slots__ = ("_shape", "_table")

    @facade
    def __init__(self, tape: Tape, table: Payload) -> None:
        check_tape(tape, "Embedding")
        t = shape_of(table, "Embedding")
        if t.rank != 2:
            raise ShapeMismatchError(f"{user_site()}: Embedding: table must be [vocab, dim]; got {t}")
        self._shape = t
        self._table = parameter_symbol(tape, table, "Embedding")

    @classmethod
    def init(cls, tape: Tape, vocab: int, dim: int, init: Init) -> Embedding:
        check_tape(tape, "Embedding")
        vocab = integer(vocab, "Embedding: vocab")
        dim = integer(dim, "Embedding: dim")
        if vocab < 1 or dim < 1:
            raise ShapeMismatchError(f"{user_site()}: Embedding: extents must be positive; got [{vocab}, {dim}]")
        return cls(tape, draw(init, Shape((vocab, dim)), "Embedding", "weights"))

    @property
    def table(self) -> Symbol:
        """The ``[vocab, dim]`` weights parameter (share it to tie an output projection)."""
        return self._table

    @property
    def vocab(self) -> int:
        return self._shape[0]

    @property
    def dim(self) -> int:
        return self._shape[1]

    def select(self, indices: Sequence[int] | np.ndarray[Any, Any], element: ElementType = f32) -> Tensor:
        """A one-hot selection ``[len(indices), vocab]`` stored as indices (of the tape's element)."""
        return Tensor.selection(indices, self.vocab, element)

    @facade
    def __call__(self, selection: Value) -> Value:
        check_input(
            "Embedding",
            selection,
            f"a selection [count, {self.vocab}]",
            lambda: selection.rank == 2 and selection.shape[1] == self.vocab,
        )
        return bind(selection, self._table).gather(selection)

    def visit(self, visitor: Visitor) -> None:
        visitor.parameter("weights", self._table)
