"""The sealed spec: an immutable list of nodes with their source payloads.

A :class:`Network` holds structure, shapes, parameter initials and input defaults. It
never holds live weights. Nodes never move: reopening a network appends, so every symbol
of the original stays valid in the longer network.

Symbols are checked through the network's *lineage*: the list of recording families that
wrote its nodes, each with the node range it wrote. Reopening starts a new family, so two
different extensions of one network cannot swap symbols by accident. Every reading asks
the same two questions of what a caller passes, through one place each:
:meth:`Lineage.locate` (is this a Symbol of ours, and which node is it) and
:func:`as_symbols` (is this a Symbol or a sequence of Symbols); both name the caller's role
in what they refuse.

The methods ``parameters``, ``describe``, ``forward``, ``entry``, ``compile``, ``reopen``,
``to_dot`` and ``_repr_html_`` are thin doors onto modules above the IR (``topos.state``,
the readings in ``topos.stages``, ``topos.render``); each imports its module when it is
called, never when the IR is imported. ``tests/test_layering.py`` lists these doors.
"""

from __future__ import annotations

import itertools
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, final

import attrs

from topos.errors import ForeignSymbolError, SymbolError
from topos.ir.element import ElementType
from topos.ir.node import Node, Symbol

if TYPE_CHECKING:
    from topos.ir.numerics import Numerics
    from topos.stages.plan import BoundEntry, Plan
    from topos.stages.spec import Tape
    from topos.state import Parameters, Run
    from topos.tensor import Tensor, TensorLike

__all__ = ["Lineage", "Network", "as_symbols", "new_family"]

_FAMILIES = itertools.count(1)


def _read_only(sources: Mapping[int, Tensor]) -> Mapping[int, Tensor]:
    # A private copy behind a read-only view: the tape that sealed this network (and any
    # caller holding the dict it passed) cannot change what the network records.
    return types.MappingProxyType(dict(sources))


def new_family() -> int:
    """A fresh family token (process-local; never printed)."""
    return next(_FAMILIES)


def as_symbols(value: object, role: str) -> tuple[Symbol, ...]:
    """``value`` as a tuple of symbols: one Symbol, or an iterable of Symbols (never text).

    The one check of a caller's symbol list before any network is at hand (an entry's
    roots and observes, a sharding's inputs); what it refuses names ``role``.

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: t.input([1.0]) * 2.0)
        >>> as_symbols(y, "roots") == (y,)
        True
        >>> from topos import SymbolError
        >>> try:
        ...     as_symbols([y, 3], "roots")
        ... except SymbolError as error:
        ...     print(error.detail)
        roots must hold Symbols, got int
    """
    if isinstance(value, Symbol):
        return (value,)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise SymbolError(f"{role} must be a Symbol or a sequence of Symbols, got {type(value).__name__}")
    items = tuple(value)
    for item in items:
        if not isinstance(item, Symbol):
            raise SymbolError(f"{role} must hold Symbols, got {type(item).__name__}")
    return items


@final
@attrs.frozen(slots=True)
class Lineage:
    """The recording families behind a node list: ``(family, start, end)`` spans in order."""

    spans: tuple[tuple[int, int, int], ...]

    @property
    def family(self) -> int:
        return self.spans[-1][0]

    @property
    def length(self) -> int:
        return self.spans[-1][2]

    def resolve(self, symbol: Symbol) -> int | None:
        """The node position a symbol names here, or None when it is not ours."""
        for family, start, end in self.spans:
            if family == symbol.family:
                return symbol.index if start <= symbol.index < end else None
        return None

    def locate(self, symbol: object, role: str = "symbol", holder: str = "this network") -> int:
        """The node position ``symbol`` names here; refuses anything else, naming ``role``.

        The one check behind every "is this a Symbol of ours, and which node is it": a
        network's :meth:`Network.index`, a tape's ``resolve``, a parameter table's slots and
        the feeds all ask it. ``holder`` says whose nodes these are in the message (``this
        network``, ``this tape``); the error prefixes the caller's line.

        Example:
            >>> from topos import Tape
            >>> network, y = Tape.record(lambda t: t.input([1.0]) * 2.0)
            >>> network.lineage.locate(y, "root")
            2
        """
        if not isinstance(symbol, Symbol):
            raise SymbolError(f"the {role} must be a Symbol of {holder}, got {type(symbol).__name__}")
        index = self.resolve(symbol)
        if index is None:
            raise ForeignSymbolError(
                f"the {role} {symbol!r} belongs to a different network, not to {holder} ({self.length} nodes)"
            )
        return index

    def symbol(self, index: int) -> Symbol:
        for family, start, end in self.spans:
            if start <= index < end:
                return Symbol(family, index)
        raise SymbolError(f"node {index} is outside this network of {self.length} nodes")

    def extended(self, family: int, end: int) -> Lineage:
        last_family, start, _ = self.spans[-1]
        if family == last_family:
            return Lineage((*self.spans[:-1], (family, start, end)))
        return Lineage((*self.spans, (family, self.length, end)))

    def related(self, other: Lineage) -> bool:
        """True when one lineage extends the other (their shared spans agree)."""
        shorter, longer = sorted((self.spans, other.spans), key=len)
        if not shorter:
            return True
        if shorter[:-1] != longer[: len(shorter) - 1]:
            return False
        family, start, end = shorter[-1]
        other_family, other_start, other_end = longer[len(shorter) - 1]
        return family == other_family and start == other_start and end <= other_end


@final
@attrs.frozen(slots=True, eq=False, repr=False)
class Network:
    """A sealed spec: the nodes a tape recorded, and its source payloads.

    Example:
        >>> from topos import Tape
        >>> network, (w, loss) = Tape.record(lambda t: (lambda w: (w, w * w))(t.parameter(3.0)))
        >>> network.forward(network.parameters(), {}).of(loss).scalar()
        9.0
    """

    nodes_: tuple[Node, ...]
    sources: Mapping[int, Tensor] = attrs.field(converter=_read_only)
    parameter_nodes: tuple[int, ...]
    input_nodes: tuple[int, ...]
    lineage: Lineage
    element: ElementType
    _parameter_slot: dict[int, int] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_parameter_slot", {n: i for i, n in enumerate(self.parameter_nodes)})

    # ----------------------------------------------------------------- names
    def index(self, symbol: Symbol, role: str = "symbol") -> int:
        """The node position of ``symbol``; raises ForeignSymbolError if it is not ours
        (see :meth:`Lineage.locate`)."""
        return self.lineage.locate(symbol, role)

    def symbol(self, index: int) -> Symbol:
        """The canonical symbol of node ``index``."""
        return self.lineage.symbol(index)

    def describe_symbol(self, index: int) -> str:
        """``%index Opcode[shape] (recorded at file:line)`` for error messages."""
        node = self.nodes_[index]
        return f"%{index} {node.name}{node.shape} (recorded at {node.site})"

    def parameter_slot(self, index: int) -> int | None:
        return self._parameter_slot.get(index)

    # ----------------------------------------------------------------- reads
    def __len__(self) -> int:
        return len(self.nodes_)

    def node(self, symbol: Symbol) -> Node:
        return self.nodes_[self.index(symbol)]

    def nodes(self) -> Iterator[Node]:
        return iter(self.nodes_)

    def payload(self, symbol: Symbol) -> Tensor | None:
        """The recorded payload of a source (leaf constant, parameter initial, input default)."""
        return self.sources.get(self.index(symbol))

    def parameter_symbols(self) -> tuple[Symbol, ...]:
        return tuple(self.symbol(i) for i in self.parameter_nodes)

    # ----------------------------------------------------------------- doors
    def parameters(self) -> Parameters:
        """A fresh parameter table holding the recorded initials."""
        from topos.state import Parameters

        return Parameters.initial(self)

    def describe(self) -> str:
        """One line per node and a summary; byte-identical across processes."""
        from topos.stages.describe import describe_network

        return describe_network(self)

    def forward(self, parameters: Parameters, feeds: Mapping[Symbol, TensorLike] | None = None) -> Run:
        """Interpret the whole spec under ``Numerics.EXACT`` (the oracle)."""
        from topos.stages.interpret import interpret

        return interpret(self, parameters, {} if feeds is None else feeds)

    def entry(self, roots: Symbol | Iterable[Symbol]) -> BoundEntry:
        """Bind a declared reading of this network; ``.lower()`` makes a plan.

        ``network.entry(roots)`` then ``.observe(...)``, ``.backward()``, ``.numerics(...)``
        and ``.lower()`` is the documented way to lower a plan; :meth:`compile` and
        :func:`topos.plan` are thin aliases of the same lowering.

        Example:
            >>> from topos import Tape
            >>> network, y = Tape.record(lambda t: (t.parameter([1.0, 2.0]) * 2.0).sum())
            >>> network.entry(y).lower().forward(network.parameters()).of(y).scalar()
            6.0
        """
        from topos.stages.plan import BoundEntry, Entry

        return BoundEntry(self, Entry.of(roots))

    def compile(
        self,
        roots: Symbol | Iterable[Symbol],
        observe: Iterable[Symbol] = (),
        backward: bool = False,
        numerics: Numerics | None = None,
    ) -> Plan:
        """A thin alias: ``entry(roots).observe(*observe)``, ``.backward()`` when asked,
        ``.numerics(numerics)``, then ``.lower()``. Prefer spelling that chain: it is the one
        documented way to lower a plan.

        Example:
            >>> from topos import Tape
            >>> network, y = Tape.record(lambda t: (t.parameter([1.0, 2.0]) * 2.0).sum())
            >>> alias = network.compile([y]).describe()
            >>> alias == network.entry([y]).lower().describe()
            True
        """
        from topos.ir.numerics import Numerics
        from topos.stages.plan import BoundEntry, Entry

        given: object = observe
        if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
            raise SymbolError(f"compile(): observe must be a sequence of Symbols, got {observe!r}")
        entry = Entry(Entry.of(roots).roots, tuple(observe), backward, Numerics.FAST if numerics is None else numerics)
        return BoundEntry(self, entry).lower()

    def reopen(self) -> Tape:
        """A tape that records more nodes after these; old symbols stay valid."""
        from topos.stages.spec import Tape

        return Tape._reopen(self)

    def to_dot(self) -> str:
        """Graphviz DOT text of the spec (see :func:`topos.render.network_dot`)."""
        from topos.render import network_dot

        return network_dot(self)

    def _repr_html_(self) -> str:
        from topos.render import network_html

        return network_html(self)

    def symbols_of(self, indices: Sequence[int]) -> tuple[Symbol, ...]:
        return tuple(self.symbol(i) for i in indices)

    def __repr__(self) -> str:
        return (
            f"Network({len(self.nodes_)} nodes, {len(self.parameter_nodes)} parameters, "
            f"{len(self.input_nodes)} inputs, element={self.element})"
        )
