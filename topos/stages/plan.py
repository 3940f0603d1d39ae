"""The plan reading: entries, lowering, liveness and fused elections (runs: :mod:`topos.stages.execute`).

Contract:
- :class:`Entry` is the declared reading of a network (``roots``, ``observe``, a
  ``backward`` memory posture, ``numerics``; ``Numerics.FAST`` by default): a frozen value,
  independent of any network. ``network.entry(roots)`` binds one (:class:`BoundEntry`).
- ``plan(network, entry) -> Plan`` is pure. The readable set is roots plus observes; the
  results are the roots in declared order then the observes, first occurrence kept. Only the
  ancestor closure of the readable set is scheduled (``Plan.scheduled``, ascending). The
  pattern catalog (:mod:`topos.stages.fusion`) is searched over the scheduled nodes
  (``Plan.candidates()``); forward-only plans elect home kernels from it
  (``Plan.patterns()``; empty on engine-backward plans).
- Liveness: a value is released after its last scheduled consumer (an elected root counts
  as a consumer of every slot its kernel reads) unless it is readable. Forward-only runs
  execute the releases. Engine-backward plans hold every value (so ``run.backward`` can
  read whatever :data:`topos.stages.rules.READS` says a rule reads) and ``describe`` reports
  the release floor: ``retained`` for values the rules read, ``releasable after N`` for the
  rest. Forward-only plans also lend buffers, assigned here (:mod:`topos.kernels.arena`):
  a step whose kernel can write into one (``binding.kernel_into``) gets a storage that every
  value aliasing it (views included) has finished with, unless a value the run hands back
  may alias it; so a run in steady state allocates little and the values it returns are
  never written again.
- ``Plan.forward(parameters, feeds) -> Run`` installs the plan's numerics for the run.
  Under ``Numerics.EXACT`` every result is bit-identical to the interpreter's; under
  ``Numerics.FAST`` the native products and sums may serve (envelope, see
  :mod:`topos.kernels.native`, settled at lowering), an ``Add`` of a recorded zero constant
  passes its other operand through (it differs from the reference only in the sign of a
  zero), and arithmetic reads broadcast operands as views (only which NaN payload survives
  may differ). The run's
  provenance is ``observed`` (forward-only: reading beyond the declaration raises and
  ``backward`` is refused) or ``training`` (engine-backward posture).
- Lowering settles what it can once: each scheduled position becomes one typed step of
  :mod:`topos.stages.execute` (each opcode a kernel closure over raw arrays, from the
  binding table :data:`topos.kernels.binding.KERNELS`, the one the tensor computes
  through; each elected root its match's home kernel), and values
  computed from recorded constants alone are computed at lowering with the same kernels
  under the plan's posture (so the same bits). A node that repeats an earlier scheduled
  node's opcode over the same operands (a *twin*: a recorded gradient often recomputes a
  forward value) is handed that value and counts as its reader; kernels are functions of
  their operands' values, so the bits are the same. How the steps run (one generated
  straight-line function, or the step loop for large plans) is the execution module's.
- A plan is self-contained and stateless: it keeps the sealed network it was lowered from,
  so it runs unchanged after parameters change and after the network is reopened
  (parameters of a longer network may cover more slots than it needs).

The interface other readings build on: ``Plan.network``, ``Plan.scheduled``,
``Plan.results()`` (symbols), ``Plan.numerics``, ``Plan.entry``, ``Plan.candidates()`` and
``Plan.patterns()`` (lists of :class:`~topos.stages.fusion.base.PatternMatch`: ``kind``, ``root``,
``nodes``, ``interiors``, ``named_results``, the idiom's typed fields and their ``fields`` view).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, NamedTuple, final

import attrs
import numpy as np

from topos._collector import pausing
from topos.errors import DeclarationError
from topos.ir import ops
from topos.ir.graph import ancestors
from topos.ir.network import Network, as_symbols
from topos.ir.node import Node, Symbol
from topos.ir.numerics import Numerics, numerics_scope
from topos.kernels.arena import Layout, Request, assign
from topos.kernels.binding import KERNELS, kernel_into, plan_kernel
from topos.kernels.dispatch import Backend
from topos.stages.describe import describe_plan
from topos.stages.execute import (
    ConstantStep,
    FusedStep,
    InputStep,
    KernelStep,
    ParameterStep,
    PassStep,
    Payload,
    Program,
    SkipStep,
    Step,
    execute,
    raw,
)
from topos.stages.fusion import CATALOG, PatternMatch, consumers_of, discover, elect
from topos.stages.interpret import interpret
from topos.stages.remat import Budget, Rematerialized, schedule
from topos.stages.rules import READS
from topos.state import Parameters, Run
from topos.tensor import TensorLike

__all__ = ["BoundEntry", "Budget", "Entry", "Plan", "execute", "plan"]


def _as_roots(value: object) -> tuple[Symbol, ...]:
    return as_symbols(value, "roots")


def _as_observes(value: object) -> tuple[Symbol, ...]:
    return as_symbols(value, "observe")


def _a_posture(instance: object, attribute: attrs.Attribute[Numerics], value: object) -> None:
    if not isinstance(value, Numerics):
        postures = ", ".join(f"Numerics.{n.name}" for n in Numerics)
        raise DeclarationError(f"numerics must be a Numerics posture ({postures}), got {value!r}")


def _a_budget(instance: object, attribute: attrs.Attribute[Budget | None], value: object) -> None:
    if value is not None and not isinstance(value, Budget):
        raise DeclarationError(f"budget must be a Budget or None, got {type(value).__name__}")


def _a_bool(instance: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if not isinstance(value, bool):
        raise DeclarationError(f"{attribute.name} must be True or False, got {value!r}")


@final
@attrs.frozen(slots=True)
class Entry:
    """A declared reading of a network: what to compute, what to keep, how to compute it.

    ``roots`` are the results; ``observe`` adds values to read without making them roots;
    ``backward`` keeps what the engine's reverse scan reads; ``numerics`` is the posture;
    ``budget`` bounds the live volume of a forward-only plan's own values by recomputing some
    of them (:mod:`topos.stages.remat`; no bit changes).

    Example:
        >>> from topos import Tape
        >>> network, (w, y) = Tape.record(lambda t: (lambda w: (w, w * w))(t.parameter(2.0)))
        >>> entry = Entry.of([y]).with_numerics(Numerics.EXACT)
        >>> entry.numerics
        <Numerics.EXACT: 'exact'>
    """

    roots: tuple[Symbol, ...] = attrs.field(converter=_as_roots)
    observe: tuple[Symbol, ...] = attrs.field(default=(), converter=_as_observes)
    backward: bool = attrs.field(default=False, validator=_a_bool)
    numerics: Numerics = attrs.field(default=Numerics.FAST, validator=_a_posture)
    budget: Budget | None = attrs.field(default=None, validator=_a_budget)

    @staticmethod
    def of(roots: Symbol | Iterable[Symbol]) -> Entry:
        return Entry(as_symbols(roots, "roots"))

    def with_observe(self, *symbols: Symbol) -> Entry:
        """Add observed values (accumulates)."""
        return attrs.evolve(self, observe=(*self.observe, *as_symbols(symbols, "observe")))

    def with_backward(self) -> Entry:
        """Ask for the engine-backward memory posture."""
        return attrs.evolve(self, backward=True)

    def with_numerics(self, numerics: Numerics) -> Entry:
        if not isinstance(numerics, Numerics):
            raise DeclarationError(f"numerics must be a Numerics posture, got {numerics!r}")
        return attrs.evolve(self, numerics=numerics)

    def with_budget(self, budget: Budget | None) -> Entry:
        """Bound the plan's live volume (see :class:`~topos.stages.remat.Budget`); None lifts it."""
        return attrs.evolve(self, budget=budget)

    def readable(self) -> tuple[Symbol, ...]:
        """Roots then observes, first occurrence kept (the plan's result order)."""
        seen: dict[Symbol, None] = {}
        for symbol in (*self.roots, *self.observe):
            seen.setdefault(symbol, None)
        return tuple(seen)


def _check_declaration(network: Network, entry: Entry) -> tuple[list[int], list[int]]:
    if not entry.roots:
        raise DeclarationError(
            "an entry needs at least one root: pass the symbols to compute, e.g. network.entry([loss])"
        )
    roots = [network.index(s, "root") for s in entry.roots]
    observes = [network.index(s, "observe") for s in entry.observe]
    return roots, observes


@final
@attrs.frozen(slots=True)
class BoundEntry:
    """An :class:`Entry` bound to its network; returned by ``network.entry(roots)``.

    Example:
        >>> from topos import Tape, Numerics
        >>> network, (w, h, y) = Tape.record(
        ...     lambda t: (lambda w: (lambda h: (w, h, h * h))(w * 3.0))(t.parameter(2.0)))
        >>> plan = network.entry([y]).observe(h).numerics(Numerics.EXACT).lower()
        >>> plan.forward(network.parameters()).of(h).scalar()
        6.0
    """

    network: Network
    entry: Entry

    def __attrs_post_init__(self) -> None:
        _check_declaration(self.network, self.entry)

    def observe(self, *symbols: Symbol) -> BoundEntry:
        """Also make these values readable (accumulates)."""
        return BoundEntry(self.network, self.entry.with_observe(*symbols))

    def backward(self) -> BoundEntry:
        """Keep what the rules read so ``run.backward`` works on this entry's runs."""
        return BoundEntry(self.network, self.entry.with_backward())

    def numerics(self, numerics: Numerics) -> BoundEntry:
        return BoundEntry(self.network, self.entry.with_numerics(numerics))

    def budget(
        self, bytes: int | None = None, *, elements: int | None = None, fraction: float | None = None
    ) -> BoundEntry:
        """Keep the plan's own live values within a memory budget by recomputing some of them.

        Give exactly one of ``bytes``, ``elements`` or ``fraction`` (of the unbudgeted plan's
        peak). Lowering chooses which values to free early and compute again before a later
        reader (``plan.recomputed()``), so the results are bit for bit the unbudgeted plan's;
        a budget below the smallest the plan can reach raises a DeclarationError naming it.

        Example:
            >>> from topos import Tape, gradient
            >>> def layers(t):
            ...     w, h = t.parameter([[0.5] * 4] * 4), t.input([[0.1] * 4] * 64)
            ...     for _ in range(3):
            ...         h = (h @ w).tanh()
            ...     return w, h.sum()
            >>> network, (w, loss) = Tape.record(layers)
            >>> longer, adjoints = gradient(network, loss, [w])
            >>> longer.entry(adjoints.roots()).budget(fraction=0.8).lower().memory_budget()
            'elements: at most 1041 (0.8 of the unbudgeted peak), unbudgeted 1313'
        """
        return BoundEntry(self.network, self.entry.with_budget(Budget(bytes=bytes, elements=elements, fraction=fraction)))

    def into_entry(self) -> Entry:
        """The unbound entry, to keep across a reopen."""
        return self.entry

    def interpret(self, parameters: Parameters, feeds: Mapping[Symbol, TensorLike] | None = None) -> Run:
        """The oracle over the declared ancestor closure, under the entry's numerics."""
        return interpret(
            self.network, parameters, feeds or {}, roots=self.entry.readable(), numerics=self.entry.numerics
        )

    def lower(self) -> Plan:
        """The plan of this entry (see :func:`plan`)."""
        return plan(self.network, self.entry)


@final
@attrs.frozen(slots=True, eq=False, repr=False)
class Plan:
    """A lowered entry: what to run, what to keep and free, and which kernels to fuse.

    Example:
        >>> from topos import Tape, Numerics
        >>> network, (w, y) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([1.0, 2.0])))
        >>> plan = network.entry(y).numerics(Numerics.EXACT).lower()
        >>> plan.forward(network.parameters()).of(y).scalar()
        5.0
    """

    network: Network
    entry: Entry
    scheduled: tuple[int, ...]
    readable_: tuple[bool, ...]
    results_: tuple[int, ...]
    candidates_: tuple[PatternMatch, ...]
    patterns_: tuple[PatternMatch, ...]
    last_use: tuple[int, ...]
    required: tuple[bool, ...]
    interior: tuple[bool, ...]
    named: tuple[bool, ...]
    releases: tuple[tuple[int, ...], ...]
    scheduled_set: frozenset[int]
    _program: Program
    remat: Rematerialized | None = None
    """What the entry's memory budget changed (None: no budget, or the plan already fit it)."""

    # ----------------------------------------------------------------- reads
    @property
    def numerics(self) -> Numerics:
        return self.entry.numerics

    def can_backward(self) -> bool:
        return self.entry.backward

    def __len__(self) -> int:
        return len(self.scheduled)

    def results(self) -> tuple[Symbol, ...]:
        """Roots in declared order, then observes; duplicates dropped."""
        return self.network.symbols_of(self.results_)

    def nodes(self) -> tuple[Node, ...]:
        """The scheduled nodes, in allocation order (positions: ``scheduled``)."""
        return tuple(self.network.nodes_[i] for i in self.scheduled)

    def node(self, symbol: Symbol) -> Node:
        index = self.network.index(symbol)
        if index not in self.scheduled_set:
            raise DeclarationError(f"{self.network.describe_symbol(index)} is not scheduled by this plan")
        return self.network.nodes_[index]

    def candidates(self) -> list[PatternMatch]:
        """Every legal pattern match over the scheduled nodes (posture-blind)."""
        return list(self.candidates_)

    def patterns(self) -> list[PatternMatch]:
        """The matches a forward run of this plan fuses (empty on engine-backward plans)."""
        return list(self.patterns_)

    # ----------------------------------------------------------------- liveness
    def _volume(self, index: int) -> int:
        # Sources are borrowed (the caller's parameters and feeds, the network's leaves):
        # a run never allocates or frees them, so the plan's accounting leaves them out.
        node = self.network.nodes_[index]
        return 0 if node.is_source else node.shape.volume

    def _evaluated(self) -> list[int]:
        return [i for i in self.scheduled if not self.interior[i] and not self.named[i]]

    def _series(self, release: bool) -> list[tuple[int, int]]:
        live = 0
        series: list[tuple[int, int]] = []
        produced_at = self._produced()
        for index in self._evaluated():
            for value in produced_at.get(index, (index,)):
                live += self._volume(value)
            if release:
                for value in self.releases[index] if self.releases else ():
                    live -= self._volume(value)
            series.append((index, live))
        return series

    def _produced(self) -> dict[int, tuple[int, ...]]:
        return {m.root: (*m.named_results, m.root) for m in self.patterns_}

    def live_series(self) -> list[int]:
        """Live elements after each evaluated node (this plan's own accounting).

        Sources (parameters, inputs, leaves) count zero: the run borrows them. Forward-only
        plans count their releases; engine-backward plans hold everything, so their series
        only grows. A budgeted plan's series is its budget's accounting, one entry per step
        (see :meth:`memory_series`).
        """
        if self.remat is not None:
            return list(self.remat.series)
        return [live for _, live in self._series(not self.entry.backward)]

    def memory_series(self) -> list[int]:
        """Live elements while each step runs: its operands, its result and every value still
        to be read, sources excluded (the accounting a memory budget bounds).

        Example:
            >>> from topos import Tape
            >>> network, y = Tape.record(lambda t: (t.parameter([1.0, 2.0]) * 3.0).sum())
            >>> network.entry(y).lower().memory_series()
            [0, 0, 2, 3]
        """
        if self.remat is not None:
            return list(self.remat.series)
        from topos.stages.remat import live_during

        return live_during(self.network, self._program.steps, self.readable_)

    def memory_peak(self) -> int:
        """The maximum of :meth:`memory_series`, in elements."""
        return max(self.memory_series(), default=0)

    def recomputed(self) -> dict[int, int]:
        """Node position -> how many extra times a budgeted plan computes it (empty without one)."""
        return dict(self.remat.recomputed) if self.remat is not None else {}

    def memory_budget(self) -> str:
        """One line: the budget, the peak it reached and the unbudgeted peak (elements)."""
        stated = self.entry.budget
        if stated is None:
            return f"elements: no budget, peak {self.memory_peak()}"
        if self.remat is None:
            return f"elements: no recomputation needed ({stated.describe()}), peak {self.memory_peak()}"
        r = self.remat
        return f"elements: at most {r.peak} ({stated.describe()}), unbudgeted {r.unbudgeted}"

    def retain_all(self) -> int:
        """Elements held if nothing were ever released."""
        produced = self._produced()
        return sum(self._volume(v) for i in self._evaluated() for v in produced.get(i, (i,)))

    def peak(self) -> tuple[int, int]:
        """``(elements, node position)`` at the peak of the release-floor series (for a budgeted
        plan, of its budget's series: the position is the node of the step at the peak)."""
        if self.remat is not None:
            at = int(np.argmax(self.remat.series))
            return self.remat.series[at], self.remat.steps[at].index
        series = self._series(True)
        index, live = max(series, key=lambda pair: (pair[1], -pair[0]))
        return live, index

    def label(self, index: int) -> str:
        """The liveness of one scheduled position, as ``describe`` prints it."""
        if self.readable_[index]:
            return "kept"
        if self.interior[index]:
            return "fused"
        if self.named[index]:
            return f"written back, freed after {self.last_use[index]}"
        if self.entry.backward:
            if self.required[index]:
                return "retained"
            return f"releasable after {self.last_use[index]}"
        return f"freed after {self.last_use[index]}"

    def describe(self) -> str:
        """One line per scheduled node with its liveness, then a summary; byte-stable."""
        return describe_plan(self)

    def to_dot(self) -> str:
        """Graphviz text: fused regions as clusters, released values dashed (byte-stable)."""
        from topos.render import plan_dot

        return plan_dot(self)

    def _repr_html_(self) -> str:
        from topos.render import plan_html

        return plan_html(self)

    # ----------------------------------------------------------------- doors
    def forward(self, parameters: Parameters, feeds: Mapping[Symbol, TensorLike] | None = None) -> Run:
        """Run the plan (see :func:`topos.stages.execute.execute`)."""
        return execute(self, parameters, feeds or {})

    def emit_stablehlo(self) -> str:
        """The plan as StableHLO text (the emission reading raises every catalog match)."""
        from topos.stages.emission import emission

        return emission(self)

    def __repr__(self) -> str:
        posture = "retain" if self.entry.backward else "forward"
        return (
            f"Plan({posture}, {self.numerics.value}, {len(self.scheduled)} of {len(self.network)} nodes, "
            f"{len(self.patterns_)} fused)"
        )


def _zero_leaf(network: Network, index: int) -> bool:
    if not isinstance(network.nodes_[index].op, ops.Leaf):
        return False
    payload = network.sources.get(index)
    return payload is not None and payload.fill == 0.0


class _Election(NamedTuple):
    """The elected groups, as flags per position and the match at each elected root."""

    elected: list[PatternMatch]
    interior: list[bool]
    named: list[bool]
    roots: dict[int, PatternMatch]


def _elect(
    network: Network, entry: Entry, candidates: list[PatternMatch], fuse: bool, wanted: Sequence[bool]
) -> _Election:
    """Forward-only plans elect the home kernels their posture admits (first wins)."""
    count = len(network)
    elected: list[PatternMatch] = []
    if fuse and not entry.backward:
        demand = entry.numerics.fidelity()
        repertoire = [
            idiom.kind
            for idiom in CATALOG
            if idiom.match.has_home_kernel and Backend.FUSED.coverage(idiom.kind).meets(demand)
        ]
        elected = elect(candidates, repertoire, consumers_of(network, wanted))
    interior = [False] * count
    named = [False] * count
    roots: dict[int, PatternMatch] = {}
    for match in elected:
        for index in (*match.interiors, *match.shared):
            interior[index] = True
        for index in match.named_results:
            named[index] = True
        roots[match.root] = match
    return _Election(elected, interior, named, roots)


def _handed_on(network: Network, entry: Entry, scheduled: Sequence[int], election: _Election) -> dict[int, int]:
    """Each position whose run hands on an earlier position's value instead of computing one.

    A *twin* repeats an earlier scheduled node's opcode over the same operands: a recorded
    gradient often recomputes a forward value (the exponential of a log-softmax, the square
    of a tanh). Every kernel is a function of its operands' values, so the bits are the same
    either way. Under ``Numerics.FAST`` an ``Add`` of a recorded zero hands on its other operand.
    """
    fast, nodes = entry.numerics is Numerics.FAST, network.nodes_
    first: dict[tuple[ops.Op, tuple[int, ...]], int] = {}
    handed: dict[int, int] = {}
    for index in scheduled:
        node = nodes[index]
        if node.is_source or election.interior[index] or election.named[index] or index in election.roots:
            continue
        operands = tuple(handed.get(o, o) for o in node.operands)
        if fast and isinstance(node.op, ops.Add) and any(_zero_leaf(network, o) for o in node.operands):
            handed[index] = operands[1] if _zero_leaf(network, node.operands[0]) else operands[0]
        elif (earlier := first.setdefault((node.op, operands), index)) != index:
            handed[index] = earlier
    return handed


def _last_use(
    network: Network, scheduled: Sequence[int], election: _Election, handed: Mapping[int, int]
) -> list[int]:
    """Who reads each value last, counting an elected root as the reader of its kernel's
    inputs and a position that hands a value on as that value's reader."""
    nodes = network.nodes_
    last_use = [-1] * len(nodes)
    for index in scheduled:
        if election.interior[index] or election.named[index]:
            continue
        elected_here = election.roots.get(index)
        other = handed.get(index)
        reads = (other,) if other is not None else elected_here.reads() if elected_here is not None else nodes[index].operands
        for operand in reads:
            last_use[operand] = max(last_use[operand], index)
        if elected_here is not None:
            for result in elected_here.named_results:
                last_use[result] = max(last_use[result], index)
    for index in (i for i in scheduled if last_use[i] < 0):  # its readers all hand on another value
        last_use[index] = index
    return last_use


def _required(network: Network, scheduled: Sequence[int], entry: Entry) -> list[bool]:
    """What the engine's reverse scan reads (engine-backward plans only)."""
    nodes = network.nodes_
    required = [False] * len(nodes)
    if entry.backward:
        for index in scheduled:
            node = nodes[index]
            contract = READS[type(node.op)](node.op)
            for slot in contract.operands:
                required[node.operands[slot]] = True
            if contract.output:
                required[index] = True
    return required


def _releases(
    scheduled: Sequence[int], entry: Entry, readable: Sequence[bool], interior: Sequence[bool], last_use: Sequence[int]
) -> list[list[int]]:
    """Forward-only plans free each value after its last use (engine-backward ones hold all)."""
    releases: list[list[int]] = [[] for _ in range(len(readable))]
    if not entry.backward:
        for index in scheduled:
            if readable[index] or interior[index]:
                continue
            # A named result outside the readable set is released like any value.
            if last_use[index] >= 0:
                releases[last_use[index]].append(index)
    return releases


def _steps(
    network: Network,
    entry: Entry,
    scheduled: Sequence[int],
    election: _Election,
    releases: Sequence[tuple[int, ...]],
    writers: set[int],
    handed: Mapping[int, int],
) -> list[Step]:
    """One typed step per scheduled position (see :mod:`topos.stages.execute`); ``writers``
    collects the positions whose kernel can write into a lent buffer."""
    nodes = network.nodes_
    element = network.element
    steps: list[Step] = []
    # Values computed from recorded constants alone are computed once, here, with the same
    # kernel under the plan's posture: the same bits as computing them every run.
    constant: dict[int, Payload] = {}
    # Where a selection can flow (sources, and what hands one on): elsewhere every operand is
    # an array, and kernels need not check.
    selective: set[int] = set()
    for index in scheduled:
        node = nodes[index]
        op = node.op
        release = releases[index]
        if election.interior[index] or election.named[index]:
            steps.append(SkipStep(index, release))
        elif index in election.roots:
            steps.append(FusedStep(index, release, election.roots[index], element))
        elif isinstance(op, ops.Parameter):
            selective.add(index)
            steps.append(ParameterStep(index, release))
        elif isinstance(op, ops.Input):
            selective.add(index)
            steps.append(InputStep(index, release))
        elif isinstance(op, ops.Leaf):
            constant[index] = raw(network.sources[index])
            if not isinstance(constant[index], np.ndarray):
                selective.add(index)
            steps.append(ConstantStep(index, release, constant[index]))
        elif index in handed:
            other = handed[index]
            if other in selective:
                selective.add(index)
            if other in constant:
                constant[index] = constant[other]
            steps.append(ConstantStep(index, release, constant[index]) if other in constant else PassStep(index, release, other))
        elif node.shape.volume <= _FOLD_LIMIT and all(o in constant for o in node.operands):
            kernel = KERNELS[type(op)](op, element)
            with numerics_scope(entry.numerics), np.errstate(all="ignore"):
                constant[index] = np.asarray(kernel(*[constant[o] for o in node.operands]))
            steps.append(ConstantStep(index, release, constant[index]))
        else:
            shapes = [nodes[o].shape.axes for o in node.operands]
            dense = selective.isdisjoint(node.operands)
            # Rank-0 arithmetic keeps the table's kernel (a ufunc over rank-0 operands takes
            # another path); sums into a scalar may take the settled native one.
            settled = node.shape.rank or isinstance(op, (ops.Sum, ops.SumAlong))
            into = kernel_into(op, element, entry.numerics, shapes, dense) if settled else None
            if into is not None:
                writers.add(index)
            kernel = into or plan_kernel(op, element, dense)
            steps.append(KernelStep(index, release, kernel, node.operands, scalar=node.shape.rank == 0))
    return steps


@pausing
def plan(network: Network, entry: Entry, *, fuse: bool = True) -> Plan:
    """Lower ``entry`` over ``network`` (``fuse=False`` elects no home kernel)."""
    if not isinstance(network, Network):
        raise DeclarationError(f"plan() needs a Network, got {type(network).__name__}")
    if not isinstance(entry, Entry):
        raise DeclarationError(f"plan() needs an Entry, got {type(entry).__name__}")
    roots, observes = _check_declaration(network, entry)
    count = len(network)
    readable = [False] * count
    for index in (*roots, *observes):
        readable[index] = True
    results = tuple(dict.fromkeys((*roots, *observes)))
    wanted = ancestors(network, results)
    scheduled = tuple(i for i in range(count) if wanted[i])

    candidates = discover(network, wanted, readable)
    election = _elect(network, entry, candidates, fuse, wanted)
    handed = _handed_on(network, entry, scheduled, election)
    last_use = _last_use(network, scheduled, election, handed)
    # One tuple per position, shared by its step and the plan (most are the empty tuple).
    releases = tuple(tuple(r) for r in _releases(scheduled, entry, readable, election.interior, last_use))
    writers: set[int] = set()
    steps = _steps(network, entry, scheduled, election, releases, writers, handed)
    remat: Rematerialized | None = None
    if entry.budget is not None:
        if entry.backward:
            raise DeclarationError(
                "a memory budget applies to forward-only plans (a recorded gradient's entry, e.g. "
                "network.entry(adjoints.roots())); an engine-backward plan holds every value for run.backward"
            )
        remat = schedule(network, steps, readable, entry.budget)
    if remat is not None:
        # The budget's steps free and redo values on their own schedule; lent buffers are
        # assigned against the unbudgeted one, so a budgeted plan allocates its values.
        steps, layout = list(remat.steps), None
    else:
        steps, layout = _lend(network, entry, steps, writers, last_use)
    return Plan(
        network=network,
        entry=entry,
        scheduled=scheduled,
        readable_=tuple(readable),
        results_=results,
        candidates_=tuple(candidates),
        patterns_=tuple(election.elected),
        last_use=tuple(last_use),
        required=tuple(_required(network, scheduled, entry)),
        interior=tuple(election.interior),
        named=tuple(election.named),
        releases=releases,
        scheduled_set=frozenset(scheduled),
        program=Program(network, steps, layout),
        remat=remat,
    )


_FOLD_LIMIT: Final = 4096
"""Constant subgraphs are folded at lowering only up to this many elements per value."""


# Kernels whose result never shares memory with an operand; any other step may hand on a
# view of one (reshapes, permutes, broadcasts, identities, home kernels).
_FRESH: Final = frozenset({
    ops.Add, ops.Sub, ops.Mul, ops.Div, ops.Powf, ops.Maximum, ops.Step, ops.Neg, ops.Map, ops.Sum, ops.SumAlong,
    ops.LogSumExp, ops.LogSoftmax, ops.Select, ops.Pad, ops.Fold, ops.Gather, ops.Scatter,
})  # fmt: skip


def _lend(
    network: Network, entry: Entry, steps: list[Step], writers: set[int], last_use: Sequence[int]
) -> tuple[list[Step], Layout | None]:
    """Lend a buffer of the run's arena to each writer that nothing outside the run observes.

    A value observes the buffers of the writers it may alias; what the run hands back (its
    readable values, whatever it never frees; every value of an engine-backward plan) must
    never alias one, since a later run writes there again. A buffer is free again after
    the last read of every value aliasing it.
    """
    if entry.backward or not writers:
        return steps, None
    nodes = network.nodes_
    fresh = network.element.gemm is None
    # The writers each non-writer position may alias, only where there is one: a writer
    # holds its own buffer implicitly, and a view hands on its operand's tuple itself. A set
    # per position was the largest thing alive while a large plan lowered.
    holds: dict[int, tuple[int, ...]] = {}

    def held(position: int) -> tuple[int, ...]:
        return (position,) if position in writers else holds.get(position, ())

    for step in steps:
        if step.index in writers:
            continue
        reads = (
            step.match.reads() if isinstance(step, FusedStep)
            else (step.other,) if isinstance(step, PassStep)
            else nodes[step.index].operands if isinstance(step, KernelStep)
            else ()
        )  # fmt: skip
        kind = type(nodes[step.index].op)
        if isinstance(step, KernelStep) and kind in _FRESH and (fresh or kind is not ops.MatMul):
            reads = ()
        parts = [h for h in map(held, reads) if h]
        shared = parts[0] if parts and all(h == parts[0] for h in parts) else tuple(sorted(set().union(*parts)))
        for position in step.writes():
            if shared:
                holds[position] = shared
            else:
                holds.pop(position, None)
    released = {gone for step in steps for gone in step.release}
    observed = {w for w in writers if w not in released}
    for position, aliased in holds.items():
        if position not in released:
            observed.update(aliased)
    dies = {w: max(w, last_use[w]) for w in writers}
    for position, aliased in holds.items():
        for writer in aliased:
            dies[writer] = max(dies[writer], last_use[position])
    lent = sorted(writers - observed)
    element = network.element.dtype
    layout = assign([Request(w, nodes[w].shape.axes, element, dies[w]) for w in lent])
    slot = {w: i for i, w in enumerate(lent)}
    return [
        attrs.evolve(step, out=slot[step.index]) if isinstance(step, KernelStep) and step.index in slot else step
        for step in steps
    ], layout

