"""The spec reading: recording.

Contract: ``Tape.record(build)`` calls ``build(tape)``, records one node per opcode call
(composites record several), infers each node's shape at the user's recording line, seals
the tape into an immutable :class:`~topos.ir.network.Network`, and returns the network with
the symbols of whatever ``build`` returned, in the same structure. Nothing broadcasts
implicitly. A literal operand records a fresh leaf: a Python number becomes a constant of
its partner's shape (stored as one number), an array or tensor becomes a leaf of its own
shape. Every failure raises a :class:`~topos.errors.RecordingError` naming the user's line.
A refused call records nothing: each append reports to the journal of
:func:`topos.vocabulary.all_or_nothing`, so a composite word that fails partway rolls back
every tape it grew (its own, and a second one an operand came from).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, Union, final, overload

import numpy as np

from topos._collector import paused
from topos.composites import Composites
from topos.errors import (
    ElementError,
    InvalidArgumentError,
    MixedTapesError,
    RecordingError,
    SealedTapeError,
    ShapeMismatchError,
    ToposError,
    user_site,
)
from topos.ir import ops
from topos.ir.checks import is_integer
from topos.ir.element import ElementType, f32
from topos.ir.infer import infer
from topos.ir.network import Lineage, Network, new_family
from topos.ir.node import Node, Symbol
from topos.ir.shape import Shape
from topos.tensor import Tensor, TensorLike
from topos.vocabulary import journal

if TYPE_CHECKING:
    from topos.stages.gradient import Adjoints

__all__ = ["Literal", "Tape", "TapeMark", "Value", "detach"]

Literal = Union["Value", Tensor, float, int, Sequence[Any], np.ndarray[Any, Any]]
T = TypeVar("T")
# Generic on purpose: mypy infers a lambda's parameters as Any before it picks an overload,
# and two matching overloads whose callable parameters differ then collapse to Any. Solved
# type variables make these formals equal to the exact overloads', so the first match wins.
_Built = TypeVar("_Built")
_Values = TypeVar("_Values", bound="tuple[Value, ...]")


@final
class TapeMark:
    """A point on one tape to roll back to (see :meth:`Tape.mark`); opaque to callers."""

    __slots__ = ("_length", "_lineage", "_tape")

    def __init__(self, tape: Tape, length: int, lineage: Lineage) -> None:
        self._tape = tape
        self._length = length
        self._lineage = lineage

    @property
    def length(self) -> int:
        """How many nodes the tape held when the mark was taken."""
        return self._length

    def __repr__(self) -> str:
        return f"TapeMark({self._length} nodes)"


class Tape:
    """The recording phase: an append-only node list.

    Example:
        >>> from topos import Tape, f64
        >>> def square(tape: Tape) -> tuple[Value, Value]:
        ...     w = tape.parameter(3.0)
        ...     return w, w * w
        >>> network, (w, loss) = Tape.record(square, element=f64)
        >>> len(network)
        2
    """

    __slots__ = ("_element", "_family", "_inputs", "_lineage", "_nodes", "_parameters", "_sealed", "_sources")

    def __init__(self, element: ElementType = f32) -> None:
        if not isinstance(element, ElementType):
            raise ElementError(f"element must be an ElementType, got {type(element).__name__}")
        self._element = element
        self._family = new_family()
        self._nodes: list[Node] = []
        self._sources: dict[int, Tensor] = {}
        self._parameters: list[int] = []
        self._inputs: list[int] = []
        self._lineage = Lineage(((self._family, 0, 0),))
        self._sealed = False

    @classmethod
    def _reopen(cls, network: Network) -> Tape:
        tape = cls(network.element)
        tape._nodes = list(network.nodes_)
        tape._sources = dict(network.sources)
        tape._parameters = list(network.parameter_nodes)
        tape._inputs = list(network.input_nodes)
        tape._lineage = network.lineage.extended(tape._family, len(network))
        return tape

    # ----------------------------------------------------------------- recording
    @overload
    @staticmethod
    def record(build: Callable[[Tape], Value], element: ElementType = ...) -> tuple[Network, Symbol]: ...
    @overload
    @staticmethod
    def record(
        build: Callable[[Tape], tuple[Value]], element: ElementType = ...
    ) -> tuple[Network, tuple[Symbol]]: ...
    @overload
    @staticmethod
    def record(
        build: Callable[[Tape], tuple[Value, Value]], element: ElementType = ...
    ) -> tuple[Network, tuple[Symbol, Symbol]]: ...
    @overload
    @staticmethod
    def record(
        build: Callable[[Tape], tuple[Value, Value, Value]], element: ElementType = ...
    ) -> tuple[Network, tuple[Symbol, Symbol, Symbol]]: ...
    @overload
    @staticmethod
    def record(
        build: Callable[[Tape], tuple[Value, Value, Value, Value]], element: ElementType = ...
    ) -> tuple[Network, tuple[Symbol, Symbol, Symbol, Symbol]]: ...
    @overload
    @staticmethod
    def record(
        build: Callable[[Tape], tuple[Value, Value, Value, Value, Value]], element: ElementType = ...
    ) -> tuple[Network, tuple[Symbol, Symbol, Symbol, Symbol, Symbol]]: ...
    @overload
    @staticmethod
    def record(
        build: Callable[[Tape], tuple[Value, Value, Value, Value, Value, Value]], element: ElementType = ...
    ) -> tuple[Network, tuple[Symbol, Symbol, Symbol, Symbol, Symbol, Symbol]]: ...
    @overload
    @staticmethod
    def record(build: Callable[[Tape], list[Value]], element: ElementType = ...) -> tuple[Network, list[Symbol]]: ...
    @overload
    @staticmethod
    def record(
        build: Callable[[Tape], dict[str, Value]], element: ElementType = ...
    ) -> tuple[Network, dict[str, Symbol]]: ...
    @overload
    @staticmethod
    def record(
        build: Callable[[Tape], _Values], element: ElementType = ...
    ) -> tuple[Network, tuple[Symbol, ...]]: ...
    @overload
    @staticmethod
    def record(build: Callable[[Tape], _Built], element: ElementType = ...) -> tuple[Network, Any]: ...

    @staticmethod
    def record(build: Callable[[Tape], object], element: ElementType = f32) -> tuple[Network, Any]:
        """Record ``build(tape)``, seal, and return ``(network, symbols)``.

        ``symbols`` mirrors what ``build`` returned: a value becomes its symbol; tuples,
        lists and dicts keep their structure.
        """
        tape = Tape(element)
        with paused():
            returned = build(tape)
            detached = detach(returned)
            return tape.seal(), detached

    def seal(self) -> Network:
        """Freeze the recording into a Network; this tape's values die here."""
        network = self.seal_view()
        self._sealed = True
        return network

    def seal_view(self) -> Network:
        """A network of the nodes recorded so far, leaving this tape open."""
        self._alive()
        return Network(
            tuple(self._nodes),
            dict(self._sources),
            tuple(self._parameters),
            tuple(self._inputs),
            self._lineage,
            self._element,
        )

    def _alive(self, site: str | None = None) -> None:
        if self._sealed:
            raise SealedTapeError(
                f"{site or user_site()}: this tape is sealed; its values cannot record any more "
                "(reopen the network with network.reopen() and tape.resolve(symbol))"
            )

    @property
    def element(self) -> ElementType:
        return self._element

    def __len__(self) -> int:
        return len(self._nodes)

    def _append(self, op: ops.Op, operands: tuple[int, ...], shape: Shape, site: str) -> Value:
        # Every node passes here, so a word that fails partway can roll back each tape it grew.
        journal(self)
        index = len(self._nodes)
        self._nodes.append(Node(op, operands, shape, self._element, site))
        self._lineage = self._lineage.extended(self._family, index + 1)
        return Value(self, index, shape)

    def _truncate(self, length: int) -> None:
        """Take back every node from ``length`` on (a refused recording changes nothing)."""
        if length >= len(self._nodes):
            return
        del self._nodes[length:]
        for index in [i for i in self._sources if i >= length]:
            del self._sources[index]
        self._parameters = [i for i in self._parameters if i < length]
        self._inputs = [i for i in self._inputs if i < length]
        self._lineage = self._lineage.extended(self._family, length)

    # ----------------------------------------------------------------- transactions
    def mark(self) -> TapeMark:
        """A point to :meth:`rollback` to: the node count and every side table as they are now.

        Example:
            >>> tape = Tape()
            >>> mark = tape.mark()
            >>> _ = tape.leaf(1.0) + 2.0
            >>> tape.rollback(mark)
            >>> len(tape)
            0
        """
        return TapeMark(self, len(self._nodes), self._lineage)

    def rollback(self, mark: TapeMark) -> None:
        """Take back every node recorded since ``mark``, with its payloads and slots."""
        if not isinstance(mark, TapeMark) or mark._tape is not self:
            raise RecordingError(f"rollback() takes a mark of this tape (from tape.mark()), got {mark!r}")
        if mark._length > len(self._nodes):
            raise RecordingError(
                f"rollback() to {mark._length} nodes, but this tape holds {len(self._nodes)}: "
                "the mark is from a later point than an earlier rollback"
            )
        self._truncate(mark._length)
        self._lineage = mark._lineage

    @contextmanager
    def transaction(self) -> Iterator[TapeMark]:
        """Record a block all or nothing: if it raises, the tape is rolled back to its start.

        Example:
            >>> tape = Tape()
            >>> try:
            ...     with tape.transaction():
            ...         _ = tape.leaf([1.0, 2.0]) + tape.leaf([1.0, 2.0, 3.0])
            ... except ShapeMismatchError:
            ...     pass
            >>> len(tape)
            0
        """
        mark = self.mark()
        try:
            yield mark
        except BaseException:
            self.rollback(mark)
            raise

    def _payload(self, data: Any, site: str, what: str) -> Tensor:
        if isinstance(data, Value):
            raise RecordingError(f"{site}: {what} takes data (a number, array or Tensor), not a recorded value")
        if not isinstance(data, Tensor):
            try:
                kind = np.asarray(data).dtype.kind
            except Exception as error:
                raise RecordingError(f"{site}: {what}: cannot convert {type(data).__name__} to {self._element}: {error}") from None
            if kind not in "fiuV":
                raise RecordingError(
                    f"{site}: {what}: cannot convert {type(data).__name__} {data!r} to {self._element}: "
                    f"it holds numpy dtype {np.asarray(data).dtype}, not numbers"
                )
        try:
            tensor = data if isinstance(data, Tensor) else Tensor(data, element=self._element)
        except ToposError as error:
            # e.g. an empty array, a value beyond the element: keep the specific class.
            raise type(error)(f"{site}: {what}: {error.detail}") from None
        except Exception as error:
            raise RecordingError(f"{site}: {what}: cannot convert {type(data).__name__} to {self._element}: {error}") from None
        if tensor.element != self._element:
            # One element per tape: constants and selections convert keeping their storage.
            try:
                tensor = tensor.convert(self._element)
            except ToposError as error:
                raise type(error)(f"{site}: {what}: {error.detail}") from None
        return tensor

    def _source(self, op: ops.Op, data: Any, what: str) -> Value:
        site = user_site()
        self._alive(site)
        tensor = self._payload(data, site, what)
        value = self._append(op, (), tensor.shape, site)
        self._sources[value.index] = tensor
        if isinstance(op, ops.Parameter):
            self._parameters.append(value.index)
        elif isinstance(op, ops.Input):
            self._inputs.append(value.index)
        return value

    def leaf(self, data: TensorLike) -> Value:
        """Record a constant."""
        return self._source(ops.Leaf(), data, "leaf")

    def parameter(self, data: TensorLike) -> Value:
        """Record a trainable slot; ``data`` is its initial payload."""
        return self._source(ops.Parameter(), data, "parameter")

    def input(self, default: TensorLike) -> Value:
        """Record a per-run feed; ``default`` fixes its shape and unfed value."""
        return self._source(ops.Input(), data=default, what="input")

    def constant(self, shape: Sequence[int] | Shape, value: float) -> Value:
        """Record a leaf holding one number over ``shape`` (stored as one number)."""
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise RecordingError(f"constant() takes a number for the value, got {value!r}")
        return self.leaf(Tensor.filled(Shape.of(shape), value, self._element))

    def resolve(self, symbol: Symbol) -> Value:
        """Bind a symbol of this tape's network (or of what it reopened) to a recording value."""
        self._alive()
        index = self._lineage.locate(symbol, "resolve() argument", "this tape")
        return Value(self, index, self._nodes[index].shape)

    def record_op(self, op: ops.Op, operands: Sequence[Value]) -> Value:
        """Record one node of ``op`` over ``operands`` (shape inferred here)."""
        site = user_site()
        self._alive(site)
        if not isinstance(op, ops.OPCODES):
            raise RecordingError(f"{site}: record_op takes an opcode (topos.ir.ops), got {op!r}")
        for operand in operands:
            if not isinstance(operand, Value):
                raise RecordingError(
                    f"{site}: {op.name} takes recorded values as operands, got {type(operand).__name__}"
                )
            if operand.tape is not self:
                if operand.tape._sealed:
                    raise SealedTapeError(
                        f"{site}: %{operand.index} belongs to a sealed tape; resolve its symbol on the "
                        "reopened tape instead"
                    )
                raise MixedTapesError(f"{site}: values of two different tapes meet in {op.name}")
        shapes = tuple(o.shape for o in operands)
        try:
            shape = infer(op, shapes)
        except (ShapeMismatchError, InvalidArgumentError) as error:
            names = ", ".join(f"%{o.index}{o.shape}" for o in operands)
            raise type(error)(f"{site}: {error.detail} (operands {names})") from None
        return self._append(op, tuple(o.index for o in operands), shape, site)

    def node(self, symbol: Symbol) -> Node:
        return self.resolve(symbol).node

    def describe(self) -> str:
        from topos.stages.describe import describe_nodes

        return describe_nodes(self._nodes, "tape")

    # ----------------------------------------------------------------- derivatives
    def differentiate(self, loss: Value | Symbol, wrt: Sequence[Value | Symbol]) -> Adjoints:
        """Record reverse mode of a rank-0 ``loss`` as ordinary nodes; returns Adjoints."""
        from topos.stages.gradient import record_vjp

        return record_vjp(self, loss, None, wrt)

    def vjp(self, target: Value | Symbol, seed: Value | Symbol, wrt: Sequence[Value | Symbol]) -> Adjoints:
        """Record a vector-Jacobian product with an explicit seed of the target's shape."""
        from topos.stages.gradient import record_vjp

        return record_vjp(self, target, seed, wrt)


class Value(Composites[Literal]):
    """A recording proxy for one node; it records new nodes and dies when its tape seals.

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: (t.input([1.0, 2.0]) * 2.0).sum())
        >>> network.forward(network.parameters()).of(y).scalar()
        6.0
    """

    __slots__ = ("index", "shape", "tape")

    index: int
    shape: Shape
    tape: Tape

    # numpy must defer to our reflected operators: without this, ``array + value`` would
    # loop over the array and record one leaf and one Add per element.
    __array_ufunc__ = None

    def __init__(self, tape: Tape, index: int, shape: Shape) -> None:
        self.tape = tape
        self.index = index
        self.shape = shape

    # ----------------------------------------------------------------- identity
    @property
    def symbol(self) -> Symbol:
        return self.tape._lineage.symbol(self.index)

    @property
    def node(self) -> Node:
        return self.tape._nodes[self.index]

    @property
    def element(self) -> ElementType:
        return self.tape.element

    def payload(self) -> Tensor | None:
        """The recorded payload of a source value; None for computed values."""
        return self.tape._sources.get(self.index)

    def __repr__(self) -> str:
        return f"Value(%{self.index} {self.node.name}{self.shape})"

    def __bool__(self) -> bool:
        raise RecordingError(
            f"%{self.index}{self.shape}: a recorded value has no truth value; compare payloads after a run"
        )

    # ----------------------------------------------------------------- vocabulary hooks
    def _name(self) -> str:
        return f"%{self.index}{self.shape}"

    def _apply(self, op: ops.Op, *others: Value) -> Value:
        return self.tape.record_op(op, (self, *others))

    def _constant(self, shape: Shape | Sequence[int], value: float) -> Value:
        return self.tape.constant(shape, value)

    def _selection(self, indices: Any, vocab: int) -> Value:
        return self.tape.leaf(Tensor.selection(indices, vocab, self.element))

    def _data(self, array: Any) -> Value:
        return self.tape.leaf(Tensor(np.ascontiguousarray(array), element=self.element))

    def _binary(self, op: ops.Op, other: Literal, reverse: bool = False) -> Value:
        """Record ``op`` beside a partner that may be a literal (recorded here as a fresh leaf).

        If the opcode refuses the pair, the fresh leaf is taken back: bad input changes nothing.
        """
        tape = self.tape
        mark = len(tape._nodes)
        partner = self._operand(other)
        try:
            return partner._apply(op, self) if reverse else self._apply(op, partner)
        except RecordingError:
            if partner is not other:
                tape._truncate(mark)
            raise

    def _operand(self, other: Literal) -> Value:
        if isinstance(other, Value):
            return other
        self.tape._alive()
        if isinstance(other, (bool, np.bool_)):
            raise RecordingError(
                f"%{self.index}{self.shape} meets the bool {other!r}: bools are refused as operands "
                "(write 1.0 or 0.0; build masks with step())"
            )
        if isinstance(other, (int, float, np.floating, np.integer)):
            try:
                number = float(other)
            except OverflowError:
                raise RecordingError(
                    f"%{self.index}{self.shape} meets an integer of {len(str(abs(int(other))))} digits, "
                    f"beyond every element (largest f64 is {float(np.finfo(np.float64).max)!r})"
                ) from None
            return self.tape.constant(self.shape, number)
        return self.tape.leaf(other)

    def _checked(self, build: Callable[[], ops.Op]) -> ops.Op:
        try:
            return build()
        except ToposError as error:
            raise type(error)(f"{user_site()}: {error.detail} (operand %{self.index}{self.shape})") from None
        except (ValueError, TypeError) as error:
            raise InvalidArgumentError(f"{user_site()}: {error} (operand %{self.index}{self.shape})") from None

    def broadcast_along(self, axis: int, extent: int) -> Value:
        if is_integer(axis) and axis < 0:
            axis += self.rank + 1
        return super().broadcast_along(axis, extent)


def detach(returned: Any) -> Any:
    """Replace every Value in a (nested) tuple, list or dict by its symbol."""
    if isinstance(returned, Value):
        return returned.symbol
    if isinstance(returned, tuple):
        return tuple(detach(item) for item in returned)
    if isinstance(returned, list):
        return [detach(item) for item in returned]
    if isinstance(returned, Mapping):
        return {key: detach(item) for key, item in returned.items()}
    return returned
