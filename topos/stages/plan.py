"""The plan reading: entries, lowering, liveness, fused elections, and plan runs.

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
  rest.
- ``Plan.forward(parameters, feeds) -> Run`` installs the plan's numerics for the run.
  Under ``Numerics.EXACT`` every result is bit-identical to the interpreter's; under
  ``Numerics.FAST`` the native products and sums may serve (envelope, see
  :mod:`topos.backends.native`), and an ``Add`` of a recorded zero constant passes its other
  operand through (it differs from the reference only in the sign of a zero). The run's
  provenance is ``observed`` (forward-only: reading beyond the declaration raises and
  ``backward`` is refused) or ``training`` (engine-backward posture).
- Lowering settles what it can once: each opcode becomes a kernel closure over raw arrays
  (:mod:`topos.stages.kernels`), values computed from recorded constants alone are
  computed at lowering with the same kernels under the plan's posture (so the same bits),
  and plans of up to ``STRAIGHT_LINE_LIMIT`` steps become one generated straight-line
  function whose releases are ``del`` statements. Larger plans run the step loop.
- A plan is self-contained and stateless: it keeps the sealed network it was lowered from,
  so it runs unchanged after parameters change and after the network is reopened
  (parameters of a longer network may cover more slots than it needs).

The interface other readings build on: ``Plan.network``, ``Plan.scheduled``,
``Plan.results()`` (symbols), ``Plan.numerics``, ``Plan.entry``, ``Plan.candidates()`` and
``Plan.patterns()`` (lists of :class:`~topos.stages.fusion.PatternMatch`: ``kind``, ``root``,
``nodes``, ``interiors``, ``named_results``, ``fields``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, final

import attrs
import numpy as np

from topos._collector import pausing
from topos.backends import fused
from topos.backends.dispatch import Backend
from topos.errors import CapacityError, DeclarationError, FeedError, ParametersError, SymbolError
from topos.ir import ops
from topos.ir.network import Network
from topos.ir.node import Node, Symbol
from topos.ir.numerics import Numerics, numerics_scope
from topos.stages.describe import node_line
from topos.stages.fusion import PatternKind, PatternMatch, discover, elect
from topos.stages.interpret import Run, ancestors, interpret, resolve_feeds
from topos.stages.kernels import KERNELS, raw
from topos.stages.rules import READS
from topos.state import Parameters, check_payload
from topos.tensor import Tensor, TensorLike

__all__ = ["BoundEntry", "Entry", "Plan", "describe_plan", "execute", "plan"]


def _symbols(value: object, role: str) -> tuple[Symbol, ...]:
    if isinstance(value, Symbol):
        return (value,)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise SymbolError(f"{role} must be a Symbol or a sequence of Symbols, got {type(value).__name__}")
    items = tuple(value)
    for item in items:
        if not isinstance(item, Symbol):
            raise SymbolError(f"{role} must hold Symbols, got {type(item).__name__}")
    return items


def _as_roots(value: object) -> tuple[Symbol, ...]:
    return _symbols(value, "roots")


def _as_observes(value: object) -> tuple[Symbol, ...]:
    return _symbols(value, "observe")


def _a_posture(instance: object, attribute: attrs.Attribute[Numerics], value: object) -> None:
    if not isinstance(value, Numerics):
        postures = ", ".join(f"Numerics.{n.name}" for n in Numerics)
        raise DeclarationError(f"numerics must be a Numerics posture ({postures}), got {value!r}")


def _a_bool(instance: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if not isinstance(value, bool):
        raise DeclarationError(f"{attribute.name} must be True or False, got {value!r}")


@final
@attrs.frozen(slots=True)
class Entry:
    """A declared reading of a network: what to compute, what to keep, how to compute it.

    ``roots`` are the results; ``observe`` adds values to read without making them roots;
    ``backward`` keeps what the engine's reverse scan reads; ``numerics`` is the posture.

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

    @staticmethod
    def of(roots: Symbol | Iterable[Symbol]) -> Entry:
        return Entry(_symbols(roots, "roots"))

    def with_observe(self, *symbols: Symbol) -> Entry:
        """Add observed values (accumulates)."""
        return attrs.evolve(self, observe=(*self.observe, *_symbols(symbols, "observe")))

    def with_backward(self) -> Entry:
        """Ask for the engine-backward memory posture."""
        return attrs.evolve(self, backward=True)

    def with_numerics(self, numerics: Numerics) -> Entry:
        if not isinstance(numerics, Numerics):
            raise DeclarationError(f"numerics must be a Numerics posture, got {numerics!r}")
        return attrs.evolve(self, numerics=numerics)

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


# Step codes: what the run loop does at one scheduled position.
_PARAMETER: Final = 0
_INPUT: Final = 1
_LEAF: Final = 2
_OP: Final = 3
_FUSED: Final = 4
_SKIP: Final = 5
_PASS: Final = 6

_HOME: Final = {
    PatternKind.WINDOW_PRODUCT: True,
    PatternKind.REDUCE_WINDOW: True,
    PatternKind.BATCH_NORM_TRAINING: True,
    PatternKind.BATCH_NORM_INFERENCE: False,
}
"""Which kinds have a home action (batch-norm inference is left to emission)."""


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
    _steps: tuple[tuple[Any, ...], ...]
    _program: Any = None

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
        only grows.
        """
        return [live for _, live in self._series(not self.entry.backward)]

    def retain_all(self) -> int:
        """Elements held if nothing were ever released."""
        produced = self._produced()
        return sum(self._volume(v) for i in self._evaluated() for v in produced.get(i, (i,)))

    def peak(self) -> tuple[int, int]:
        """``(elements, node position)`` at the peak of the release-floor series."""
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
        """Run the plan (see :func:`execute`)."""
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


def _kernel_reads(match: PatternMatch) -> tuple[int, ...]:
    f = match.fields
    if match.kind is PatternKind.WINDOW_PRODUCT:
        return tuple(p for p in (f["source"], f["kernel"], f["bias"]) if p is not None)
    if match.kind is PatternKind.REDUCE_WINDOW:
        return (f["source"],)
    return (f["input"], f["scale"], f["shift"], f["epsilon_leaf"], f["mean_count"], f["variance_count"])


@pausing
def plan(network: Network, entry: Entry, *, fuse: bool = True) -> Plan:
    """Lower ``entry`` over ``network`` (``fuse=False`` elects no home kernel)."""
    if not isinstance(network, Network):
        raise DeclarationError(f"plan() needs a Network, got {type(network).__name__}")
    if not isinstance(entry, Entry):
        raise DeclarationError(f"plan() needs an Entry, got {type(entry).__name__}")
    roots, observes = _check_declaration(network, entry)
    nodes = network.nodes_
    count = len(nodes)
    readable = [False] * count
    for index in (*roots, *observes):
        readable[index] = True
    results = tuple(dict.fromkeys((*roots, *observes)))
    wanted = ancestors(network, results)
    scheduled = tuple(i for i in range(count) if wanted[i])

    candidates = discover(network, wanted, readable)
    elected: list[PatternMatch] = []
    if fuse and not entry.backward:
        demand = entry.numerics.fidelity()
        repertoire = [
            kind
            for kind, home in _HOME.items()
            if home and Backend.FUSED.coverage(kind.formula).meets(demand)
        ]
        elected = elect(candidates, repertoire)

    interior = [False] * count
    named = [False] * count
    fused_root: dict[int, PatternMatch] = {}
    for match in elected:
        for index in match.interiors:
            interior[index] = True
        for index in match.named_results:
            named[index] = True
        fused_root[match.root] = match

    # Liveness: who reads each value, counting an elected root as the reader of its inputs.
    last_use = [-1] * count
    for index in scheduled:
        if interior[index] or named[index]:
            continue
        elected_here = fused_root.get(index)
        reads = _kernel_reads(elected_here) if elected_here is not None else nodes[index].operands
        for operand in reads:
            last_use[operand] = max(last_use[operand], index)
        if elected_here is not None:
            for result in elected_here.named_results:
                last_use[result] = max(last_use[result], index)

    required = [False] * count
    if entry.backward:
        for index in scheduled:
            node = nodes[index]
            contract = READS[type(node.op)](node.op)
            for slot in contract.operands:
                required[node.operands[slot]] = True
            if contract.output:
                required[index] = True

    releases: list[list[int]] = [[] for _ in range(count)]
    if not entry.backward:
        for index in scheduled:
            if readable[index] or interior[index]:
                continue
            # A named result outside the readable set is released like any value.
            if last_use[index] >= 0:
                releases[last_use[index]].append(index)

    steps: list[tuple[Any, ...]] = []
    posture_fast = entry.numerics is Numerics.FAST
    # Values computed from recorded constants alone are computed once, here, with the same
    # kernel under the plan's posture: the same bits as computing them every run.
    constant: dict[int, Any] = {}
    for index in scheduled:
        node = nodes[index]
        op = node.op
        release = tuple(releases[index])
        if interior[index] or named[index]:
            steps.append((_SKIP, index, None, (), release))
        elif index in fused_root:
            steps.append((_FUSED, index, fused_root[index], (), release))
        elif isinstance(op, ops.Parameter):
            steps.append((_PARAMETER, index, None, (), release))
        elif isinstance(op, ops.Input):
            steps.append((_INPUT, index, None, (), release))
        elif isinstance(op, ops.Leaf):
            constant[index] = raw(network.sources[index])
            steps.append((_LEAF, index, constant[index], (), release))
        elif node.shape.volume <= _FOLD_LIMIT and all(o in constant for o in node.operands):
            kernel = KERNELS[type(op)](op, network.element)
            with numerics_scope(entry.numerics), np.errstate(all="ignore"):
                constant[index] = np.asarray(kernel(*[constant[o] for o in node.operands]))
            steps.append((_LEAF, index, constant[index], (), release))
        elif posture_fast and isinstance(op, ops.Add) and any(_zero_leaf(network, o) for o in node.operands):
            left, right = node.operands
            other = right if _zero_leaf(network, left) else left
            steps.append((_PASS, index, other, (), release))
        else:
            kernel = KERNELS[type(op)](op, network.element)
            if node.shape.rank == 0:
                # ufuncs hand back numpy scalars for rank-0 operands; keep payloads arrays.
                kernel = _as_array(kernel)
            steps.append((_OP, index, kernel, node.operands, release))

    return Plan(
        network=network,
        entry=entry,
        scheduled=scheduled,
        readable_=tuple(readable),
        results_=results,
        candidates_=tuple(candidates),
        patterns_=tuple(elected),
        last_use=tuple(last_use),
        required=tuple(required),
        interior=tuple(interior),
        named=tuple(named),
        releases=tuple(tuple(r) for r in releases),
        scheduled_set=frozenset(scheduled),
        steps=tuple(steps),
        program=_straight_line(steps, interior, network.element) if len(steps) <= STRAIGHT_LINE_LIMIT else None,
    )


_FOLD_LIMIT: Final = 4096
"""Constant subgraphs are folded at lowering only up to this many elements per value."""

STRAIGHT_LINE_LIMIT: Final = 20_000
"""Plans of at most this many steps run as one generated function (larger ones loop)."""


def _straight_line(steps: Sequence[tuple[Any, ...]], interior: Sequence[bool], element: Any) -> Any:
    """The steps as one Python function: ``program(P, I) -> kept values by position``.

    The same kernels in the same order as the step loop in :func:`execute`, spelled as
    straight-line code so no dispatch on step codes remains; a release is a ``del``, so the
    function frees exactly what the loop frees. The source depends only on the plan, so it
    is the same in every process.
    """
    names: dict[str, Any] = {}
    body: list[str] = []
    released: set[int] = set()
    defined: list[int] = []
    for code, index, payload, operands, release in steps:
        if code == _OP:
            names[f"k{index}"] = payload
            body.append(f"v{index} = k{index}({', '.join(f'v{j}' for j in operands)})")
            defined.append(index)
        elif code == _PARAMETER:
            body.append(f"v{index} = P[{index}]")
            defined.append(index)
        elif code == _INPUT:
            body.append(f"v{index} = I[{index}]")
            defined.append(index)
        elif code == _LEAF:
            names[f"c{index}"] = payload
            body.append(f"v{index} = c{index}")
            defined.append(index)
        elif code == _PASS:
            body.append(f"v{index} = v{payload}")
            defined.append(index)
        elif code == _FUSED:
            outputs = _fused_outputs(payload)
            names[f"f{index}"] = _fused_function(payload, element)
            reads = ", ".join(f"v{j}" for j in _kernel_reads(payload))
            body.append(f"{', '.join(f'v{o}' for o in outputs)}, = f{index}({reads})")
            defined.extend(outputs)
        for gone in release:
            body.append(f"del v{gone}")
            released.add(gone)
    kept = [i for i in dict.fromkeys(defined) if i not in released and not interior[i]]
    lines = ["def program(P, I):", *(f"    {line}" for line in body)]
    lines.append("    return {" + ", ".join(f"{i}: v{i}" for i in kept) + "}")
    exec(compile("\n".join(lines), "<topos plan>", "exec"), names)
    return names["program"]


def _fused_outputs(match: PatternMatch) -> tuple[int, ...]:
    if match.kind is PatternKind.BATCH_NORM_TRAINING:
        return (match.root, match.fields["mean"], match.fields["variance"])
    return (match.root,)


def _fused_function(match: PatternMatch, element: Any) -> Any:
    reads = _kernel_reads(match)
    outputs = _fused_outputs(match)

    def call(*arrays: Any) -> tuple[Any, ...]:
        scratch: dict[int, Any] = dict(zip(reads, arrays, strict=True))
        _run_fused(match, scratch, element)
        return tuple(scratch[o] for o in outputs)

    return call


def _as_array(kernel: Any) -> Any:
    return lambda *operands: np.asarray(kernel(*operands))


def _parameter_payloads(plan_: Plan, parameters: Parameters) -> dict[int, Tensor]:
    network = plan_.network
    if not isinstance(parameters, Parameters):
        raise ParametersError(f"parameters must be a Parameters table, got {type(parameters).__name__}")
    if not parameters.lineage.related(network.lineage):
        raise ParametersError(
            f"these parameters ({len(parameters)} slots) belong to a different network than the plan's "
            f"{plan_.network!r}; pass the table of the network the plan was lowered from"
        )
    payloads: dict[int, Tensor] = {}
    for index in network.parameter_nodes:
        if index not in plan_.scheduled_set:
            continue
        symbol = network.symbol(index)
        try:
            slot = parameters.slot(symbol)
        except SymbolError:
            raise ParametersError(
                f"parameters are missing the slot {network.describe_symbol(index)} that this plan reads"
            ) from None
        payload = parameters.payloads_[slot]
        check_payload(network, index, payload, "the plan")
        payloads[index] = payload
    return payloads


def execute(plan_: Plan, parameters: Parameters, feeds: Mapping[Symbol, TensorLike]) -> Run:
    """Run ``plan_`` over ``parameters`` and ``feeds``; see the module contract."""
    try:
        return _execute(plan_, parameters, feeds)
    except MemoryError:
        # The generated straight-line program does not say which step failed; the largest
        # value the plan computes is the one to shrink (or to feed in smaller batches).
        network = plan_.network
        largest = max(plan_.scheduled, key=lambda i: network.nodes_[i].shape.volume)
        node = network.nodes_[largest]
        raise CapacityError(
            f"a step of this plan ran out of memory; its largest value is "
            f"{network.describe_symbol(largest)} ({node.shape.volume} elements of {network.element})"
        ) from None


def _execute(plan_: Plan, parameters: Parameters, feeds: Mapping[Symbol, TensorLike]) -> Run:
    network = plan_.network
    payloads = _parameter_payloads(plan_, parameters)
    fed = resolve_feeds(network, feeds)
    for index in fed:
        if index not in plan_.scheduled_set:
            raise FeedError(
                f"this plan does not take the input {network.describe_symbol(index)}: none of its roots "
                "or observes depends on it (declare a root that reads it, or drop the feed)"
            )
    element = network.element
    # The loop works on raw payloads (arrays, or selection tensors); tensors are made once
    # at the end, for the values the run keeps.
    values: list[Any] = [None] * len(network)
    sources = network.sources
    program = plan_._program
    if program is not None:
        inputs = {i: raw(fed.get(i, sources[i])) for i in network.input_nodes if i in plan_.scheduled_set}
        with numerics_scope(plan_.numerics), np.errstate(all="ignore"):
            for index, value in program({i: raw(t) for i, t in payloads.items()}, inputs).items():
                values[index] = value
        return _run_of(plan_, values)
    with numerics_scope(plan_.numerics), np.errstate(all="ignore"):
        for code, index, payload, operands, release in plan_._steps:
            if code == _OP:
                values[index] = payload(*[values[j] for j in operands])
            elif code == _PARAMETER:
                values[index] = raw(payloads[index])
            elif code == _INPUT:
                values[index] = raw(fed.get(index, sources[index]))
            elif code == _LEAF:
                values[index] = payload
            elif code == _PASS:
                values[index] = values[payload]
            elif code == _FUSED:
                _run_fused(payload, values, element)
            for gone in release:
                values[gone] = None
    return _run_of(plan_, values)


def _run_of(plan_: Plan, values: list[Any]) -> Run:
    network = plan_.network
    element = network.element
    nodes = network.nodes_
    kept: list[Tensor | None] = [
        None if v is None else v if isinstance(v, Tensor) else Tensor._trusted(np.asarray(v), element, nodes[i].shape)
        for i, v in enumerate(values)
    ]
    provenance = "training" if plan_.entry.backward else "observed"
    return Run(network, kept, plan_.numerics, plan_.readable_, provenance)


def _array(values: Sequence[Any], index: int) -> Any:
    value = values[index]
    assert value is not None, index
    return value.numpy() if isinstance(value, Tensor) else value


def _run_fused(match: PatternMatch, values: Any, element: Any) -> None:
    f = match.fields
    if match.kind is PatternKind.WINDOW_PRODUCT:
        bias = None if f["bias"] is None else _array(values, f["bias"])
        out = fused.windowed_product(
            _array(values, f["source"]),
            _array(values, f["kernel"]),
            bias,
            f["kernel_height"],
            f["kernel_width"],
            f["stride"],
            f["padding"],
            element,
        )
        values[match.root] = out
    elif match.kind is PatternKind.REDUCE_WINDOW:
        out = fused.max_pooled(_array(values, f["source"]), f["size"], f["stride"], element)
        values[match.root] = out
    elif match.kind is PatternKind.BATCH_NORM_TRAINING:
        out, mean, variance = fused.batch_normalized(
            _array(values, f["input"]),
            _array(values, f["scale"]),
            _array(values, f["shift"]),
            _array(values, f["epsilon_leaf"]),
            _array(values, f["mean_count"]),
            _array(values, f["variance_count"]),
            element,
        )
        values[f["mean"]] = mean
        values[f["variance"]] = variance
        values[match.root] = out
    else:  # pragma: no cover - elections are limited to kinds with a home action
        raise AssertionError(match.kind)


def describe_plan(plan_: Plan) -> str:
    """The plan as text: each scheduled node's spec line and liveness, then a summary."""
    network = plan_.network
    nodes = network.nodes_
    roots = {m.root: m for m in plan_.patterns_}
    specs = [node_line(nodes[i], i) for i in plan_.scheduled]
    width = max(len(line) for line in specs) + 2
    lines: list[str] = []
    for index, spec in zip(plan_.scheduled, specs, strict=True):
        text = f"{spec:<{width}}{plan_.label(index)}"
        match = roots.get(index)
        if match is not None:
            text += f"  <- {match.kind.value} of {len(match.nodes)} nodes"
        lines.append(text)
    posture = "retain" if plan_.entry.backward else "forward"
    readable = sum(1 for flag in plan_.readable_ if flag)
    lines.append(
        f"plan: {posture}, {plan_.numerics.value} numerics; {len(plan_.scheduled)} of {len(nodes)} "
        f"nodes evaluated, {readable} readable"
    )
    if plan_.patterns_:
        replaced = sum(len(m.nodes) for m in plan_.patterns_)
        lines.append(f"fused {len(plan_.patterns_)} groups, {replaced} nodes replaced")
    peak, at = plan_.peak()
    total = plan_.retain_all()
    if plan_.entry.backward:
        lines.append(f"live volume: retain-all {total}, release floor {peak} at node {at}")
    else:
        lines.append(f"live volume: peak {peak} elements at node {at}, retain-all {total}")
    return "\n".join(lines) + "\n"
