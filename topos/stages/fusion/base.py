"""What every fusion idiom is built on: the match value, the catalog entry, the matcher's view.

Contract:
- :class:`PatternMatch` is the base of every idiom's match class. A match is a frozen value:
  its root, its unnamed interiors, its shared nodes, its named results and the idiom's own
  typed fields (:attr:`PatternMatch.fields`, what ``describe`` prints). ``kind`` names the
  idiom by its :class:`~topos.kernels.dispatch.Formula` member (the one enum of idioms, kept
  on the kernels floor because the tally and the coverage matrix count by it).
- :class:`Idiom` is one catalog entry: a match class, the matcher that finds it and the raise
  that writes it as StableHLO. The catalog (:mod:`topos.stages.fusion.catalog`) lists them.
- A matcher reads a :class:`View` (the frozen columns of one network: nodes, wanted,
  readable, consumers) at one position and returns a match or None; it never judges
  legality, except where a wider match subsumes a narrower one (:func:`legal_match`).
- Legality (:func:`legal_match`): every unnamed interior is wanted, not readable, and
  consumed only inside its group; a shared node is wanted and not readable (its readers are
  the election's to check); a named result is wanted and may feed nodes after the root,
  because the group writes it back when its root runs.
- A raise writes through :class:`RaiseWriter`, a :class:`~topos.stages.stablehlo.FunctionWriter`
  that also knows the network and the SSA name of each node; emission's writer derives from
  it, so no idiom imports emission.

All positions are node positions in the plan's network.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, Generic, TypeVar, final

import attrs
import numpy as np

from topos.ir import ops
from topos.ir.element import ElementType
from topos.ir.network import Network
from topos.ir.node import Node
from topos.kernels.dispatch import Formula
from topos.stages.stablehlo import FunctionWriter

__all__ = [
    "Array",
    "Idiom",
    "PatternMatch",
    "RaiseWriter",
    "View",
    "consumers_of",
    "legal_match",
]

Array = np.ndarray[Any, Any]
"""A dense payload in the element's storage dtype, as the reference kernels take them."""


def _positions(value: Iterable[int]) -> tuple[int, ...]:
    # Interiors are a set of positions: ascending and without repeats, whatever the matcher built.
    return tuple(sorted(set(value)))


@attrs.frozen(slots=True)
class PatternMatch:
    """One match of an idiom: its root, its unnamed interiors, its named results, its fields.

    The base of the catalog's match classes (one per idiom, each named by its ``kind``); a
    value is always of the ``match`` class of one :data:`~topos.stages.fusion.catalog.CATALOG`
    entry.

    Example:
        >>> from topos import Tape, f32
        >>> from topos.nn import max_pool
        >>> import numpy as np
        >>> network, y = Tape.record(lambda t: max_pool(t.input(np.zeros((1, 1, 4, 4))), 2))
        >>> [m.kind.value for m in network.entry(y).lower().candidates()]
        ['reduce_window']
    """

    kind: ClassVar[Formula]
    has_home_kernel: ClassVar[bool] = True
    """Whether plans may elect this idiom (it has a home kernel, and the fused backend declares it)."""

    root: int
    interiors: tuple[int, ...] = attrs.field(converter=_positions)
    shared: tuple[int, ...] = attrs.field(default=(), converter=_positions, kw_only=True)
    """Nodes the group recomputes from its reads that other elected groups may share."""

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The idiom's own typed fields in the order ``describe`` prints them.

        Fields a shared base declares (the window geometry of
        :class:`~topos.stages.fusion.windows.WindowMatch`) follow the idiom's own, so each
        match names its operands first.

        Example:
            >>> from topos.stages.fusion import ReduceWindow
            >>> ReduceWindow.field_names()[:3]
            ('source', 'size', 'stride')
        """
        own = attrs.fields(cls)[len(attrs.fields(PatternMatch)) :]
        return tuple(field.name for field in sorted(own, key=lambda field: field.inherited))

    @property
    def named_results(self) -> tuple[int, ...]:
        """Results inside the group that it writes back (readable by later nodes)."""
        return ()

    @property
    def nodes(self) -> tuple[int, ...]:
        """Every position of the group (interiors, shared, named results, root), ascending."""
        return tuple(sorted({*self.interiors, *self.shared, *self.named_results, self.root}))

    @property
    def exclusive(self) -> tuple[int, ...]:
        """The positions no other elected group may hold (all but the shared ones)."""
        return tuple(sorted((*self.interiors, *self.named_results, self.root)))

    @property
    def fields(self) -> Mapping[str, object]:
        """The idiom's own typed fields, read-only, in :meth:`field_names` order."""
        return MappingProxyType({name: getattr(self, name) for name in self.field_names()})

    def describe(self) -> str:
        """``kind at %root over N nodes: key=value ...`` (byte-stable)."""
        params = " ".join(f"{key}={value}" for key, value in self.fields.items())
        return f"{self.kind.value} at %{self.root} over {len(self.nodes)} nodes: {params}"

    def reads(self) -> tuple[int, ...]:
        """The positions the home kernel reads, in the order :meth:`home_kernel` takes them."""
        raise NotImplementedError(type(self).__name__)

    def outputs(self) -> tuple[int, ...]:
        """The positions the home kernel writes, in the order it returns them."""
        return (self.root,)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        """Run the home kernel over dense arrays for :meth:`reads`; one array per :meth:`outputs`."""
        raise NotImplementedError(f"{self.kind.value} has no home kernel")


class RaiseWriter(FunctionWriter):
    """The writer a raise writes through: one network's function body, ``names[i]`` the SSA
    value of node ``i`` (a raise reads its operands there and binds its root and named results).

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: t.input([1.0, 2.0]).exp())
        >>> writer = RaiseWriter(network)
        >>> writer.names[0] = "%arg0"
        >>> writer.reshape(writer.names[0], (2,), (2, 1), "%v1")
        '%v1'
        >>> writer.lines
        ['    %v1 = stablehlo.reshape %arg0 : (tensor<2xf32>) -> tensor<2x1xf32>']
    """

    def __init__(self, network: Network) -> None:
        super().__init__(network.element)
        self.network = network
        self.names: dict[int, str] = {}


_M = TypeVar("_M", bound=PatternMatch)


@final
@attrs.frozen(slots=True)
class Idiom(Generic[_M]):
    """One catalog entry: the idiom's match class, the matcher finding it, the raise writing it.

    ``matcher(view, index)`` returns the match rooted at ``index`` or None; ``raise_(writer,
    match)`` writes the match as StableHLO operations and binds ``writer.names`` for its root
    and named results. Whether plans may elect it is the match class's ``has_home_kernel``.

    Example:
        >>> from topos.stages.fusion import CATALOG
        >>> [idiom.kind.value for idiom in CATALOG][:2]
        ['window_product', 'window_input_gradient']
    """

    match: type[_M]
    matcher: Callable[[View, int], _M | None]
    raise_: Callable[[RaiseWriter, _M], None]

    @property
    def kind(self) -> Formula:
        """The idiom's one name (its match class's ``kind``)."""
        return self.match.kind


def consumers_of(network: Network, wanted: Sequence[bool]) -> list[list[int]]:
    """For each position, the wanted nodes reading it (once per operand link).

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: (lambda x: x * x)(t.input([1.0])))
        >>> consumers_of(network, [True, True])
        [[1, 1], []]
    """
    consumers: list[list[int]] = [[] for _ in range(len(network))]
    for index, node in enumerate(network.nodes_):
        if wanted[index]:
            for operand in node.operands:
                consumers[operand].append(index)
    return consumers


class View:
    """The frozen columns a matcher reads: the network's nodes, which are wanted and
    readable, and the wanted consumers of each.

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: t.input([1.0, 2.0]) * 2.0)
        >>> view = View(network, [True] * 3, [False, False, True])
        >>> view.constant(1), view.consumers[0]
        (2.0, [2])
    """

    __slots__ = ("consumers", "network", "nodes", "readable", "wanted")

    def __init__(self, network: Network, wanted: Sequence[bool], readable: Sequence[bool]) -> None:
        self.network = network
        self.nodes = network.nodes_
        self.wanted = wanted
        self.readable = readable
        self.consumers = consumers_of(network, wanted)

    def op(self, index: int) -> ops.Op:
        """The opcode at ``index``."""
        return self.nodes[index].op

    def node(self, index: int) -> Node:
        """The node at ``index``."""
        return self.nodes[index]

    def constant(self, index: int) -> float | None:
        """The fill of a constant leaf, else None."""
        if not isinstance(self.op(index), ops.Leaf):
            return None
        payload = self.network.sources.get(index)
        return None if payload is None else payload.fill

    def spread(self, index: int, extent: int) -> int | None:
        """The operand of ``broadcast_along(axis=0, extent)`` at ``index``, else None."""
        op = self.op(index)
        if isinstance(op, ops.BroadcastAlong) and op.axis == 0 and op.extent == extent:
            return self.node(index).operands[0]
        return None


def _legal(
    view: View, root: int, interiors: Iterable[int], named: Sequence[int], shared: Sequence[int] = ()
) -> bool:
    group = {root, *interiors, *named, *shared}
    for index in shared:
        # Readers outside the group are the election's to check (see elect).
        if not view.wanted[index] or view.readable[index]:
            return False
    for index in interiors:
        if not view.wanted[index] or view.readable[index]:
            return False
        if any(consumer not in group for consumer in view.consumers[index]):
            return False
    for index in named:
        if not view.wanted[index]:
            return False
        # The group writes a named result back when its root runs: later readers see it.
        if any(consumer not in group and consumer < root for consumer in view.consumers[index]):
            return False
    return True


def legal_match(view: View, match: PatternMatch) -> bool:
    """Whether ``match`` may stand over ``view`` (see the contract's legality rules)."""
    return _legal(view, match.root, match.interiors, match.named_results, match.shared)
