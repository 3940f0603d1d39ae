"""The pattern catalog: fusion as an offer, found by structure, never a rewrite.

Contract:
- :data:`CATALOG` is the one list of idioms: one :class:`~topos.stages.fusion.base.Idiom`
  per line, in matcher order. Its order is the pool's, so it decides which of two
  overlapping matches a first-wins election takes.
- :func:`discover` runs every matcher over every wanted node in recording order and returns
  the *legal* matches (the candidate pool), catalog order first, then recording order.
  Matching reads only the recorded structure (opcodes, parameters, shapes, constant leaves),
  so a hand-rolled recording of an idiom matches exactly like the facade's; it is blind to
  the numerics posture and to which consumer will elect.
- Legality (:func:`~topos.stages.fusion.base.legal_match`): every unnamed interior is
  wanted, not declared readable, and consumed (by wanted nodes) only inside its group; a
  *shared* node (the patch chain of a convolution, which its kernel gradient recomputes too;
  a max-pool's lanes, which its gradient's steps read) is wanted and not readable, and its
  readers are checked at election; a named result (batch-norm mean and variance) may be
  readable and may feed nodes after the group's root, because the group writes it back. A
  declared readable value inside a match therefore blocks it unless it is a named result.
- :func:`elect` lets one consumer choose its catalog from the pool: first wins, a match is
  taken only if its kind is in the consumer's repertoire and none of its nodes is taken
  (shared nodes may be taken by several groups that share them). Given the consumers, it
  then drops every match one of whose shared nodes is read by a node outside the elected
  groups, or read by an elected home kernel (both would need the value materialized),
  and elects again without it, until the election is closed.
  Unelected regions simply run their recorded primitives, which is always sound.
- :func:`idiom_of` gives a match's catalog entry: plans run its home kernel, emission its
  raise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from topos.ir.network import Network
from topos.kernels.dispatch import Formula
from topos.stages.fusion import normalization, pooling, windows
from topos.stages.fusion.base import Idiom, PatternMatch, View, legal_match

__all__ = ["CATALOG", "discover", "elect", "idiom_of"]

CATALOG: Final[tuple[Idiom[Any], ...]] = (
    windows.WINDOW_PRODUCT,
    windows.WINDOW_INPUT_GRADIENT,
    windows.WINDOW_KERNEL_GRADIENT,
    pooling.REDUCE_WINDOW,
    pooling.REDUCE_WINDOW_GRADIENT,
    normalization.BATCH_NORM_TRAINING,
    normalization.BATCH_NORM_INFERENCE,
)
"""Every idiom, one entry each, in matcher order (which is pool order)."""

_BY_CLASS: Final[Mapping[type[PatternMatch], Idiom[Any]]] = MappingProxyType({idiom.match: idiom for idiom in CATALOG})


def idiom_of(match: PatternMatch) -> Idiom[Any] | None:
    """The catalog entry whose match class ``match`` is, or None for a foreign class.

    Example:
        >>> from topos.stages.fusion import ReduceWindow
        >>> match = ReduceWindow(4, [3], source=0, size=2, stride=2, batch=1, channels=1, height=4, width=4)
        >>> idiom_of(match).kind.value
        'reduce_window'
    """
    return _BY_CLASS.get(type(match))


def discover(network: Network, wanted: Sequence[bool], readable: Sequence[bool]) -> list[PatternMatch]:
    """Every legal match over the wanted nodes: catalog order first, then recording order.

    Example:
        >>> import numpy as np
        >>> from topos import Tape
        >>> from topos.nn import max_pool
        >>> network, y = Tape.record(lambda t: max_pool(t.input(np.zeros((1, 1, 4, 4))), 2))
        >>> everything = [True] * len(network)
        >>> [m.kind.value for m in discover(network, everything, [False] * len(network))]
        ['reduce_window']
    """
    view = View(network, wanted, readable)
    pool: list[PatternMatch] = []
    candidates = [index for index, node in enumerate(network.nodes_) if wanted[index] and not node.is_source]
    for idiom in CATALOG:
        for index in candidates:
            match = idiom.matcher(view, index)
            if match is not None and legal_match(view, match):
                pool.append(match)
    return pool


def elect(
    pool: Iterable[PatternMatch],
    repertoire: Iterable[Formula],
    consumers: Sequence[Sequence[int]] | None = None,
) -> list[PatternMatch]:
    """First-wins election of non-overlapping matches whose kind the consumer supports.

    Shared nodes may be held by several elected groups. With ``consumers`` (one list of
    wanted readers per position, :func:`~topos.stages.fusion.base.consumers_of`) the
    election is closed: a match whose shared node would still be read as a value is dropped
    and the rest elected again. Without them, a match with shared nodes is never elected.

    Example:
        >>> import numpy as np
        >>> from topos import Tape
        >>> from topos.kernels.dispatch import Formula
        >>> from topos.nn import max_pool
        >>> network, y = Tape.record(lambda t: max_pool(t.input(np.zeros((1, 1, 4, 4))), 2))
        >>> pool = network.entry(y).lower().candidates()
        >>> elect(pool, [Formula.REDUCE_WINDOW])  # its lanes are shared: closed elections only
        []
    """
    kinds = set(repertoire)
    candidates = [match for match in pool if match.kind in kinds and (consumers is not None or not match.shared)]
    while True:
        elected = _first_wins(candidates)
        if consumers is None:
            return elected
        open_ = _unclosed(elected, consumers)
        if not open_:
            return elected
        candidates = [match for match in candidates if match not in open_]


def _first_wins(candidates: Iterable[PatternMatch]) -> list[PatternMatch]:
    exclusive: set[int] = set()
    shared: set[int] = set()
    elected: list[PatternMatch] = []
    for match in candidates:
        own = match.exclusive
        if exclusive.isdisjoint(own) and shared.isdisjoint(own) and exclusive.isdisjoint(match.shared):
            elected.append(match)
            exclusive.update(own)
            shared.update(match.shared)
    return elected


def _unclosed(elected: Sequence[PatternMatch], consumers: Sequence[Sequence[int]]) -> list[PatternMatch]:
    """The elected matches with a shared node that something would still read as a value."""
    inside: set[int] = set()
    reads_at: dict[int, tuple[int, ...]] = {}
    for match in elected:
        inside.update(match.nodes)
        reads_at[match.root] = match.reads()
    unclosed: list[PatternMatch] = []
    for match in elected:
        for index in match.shared:
            if any(reader not in inside or index in reads_at.get(reader, ()) for reader in consumers[index]):
                unclosed.append(match)
                break
    return unclosed
