"""A memory budget for a forward-only plan: which values it recomputes instead of keeping.

Contract:
- :func:`schedule` takes the steps a plan lowered to (one per scheduled position, in order)
  and a budget in elements, and returns a longer step list in which some kernel values are
  released early and computed again, by a copy of the same step (the same kernel closure
  over the same operand positions), just before a later reader needs them; or the steps
  unchanged when their peak already fits. The network is not touched: a recomputation is a
  step of the plan, not a node of the spec.
- Bits: a kernel is a function of its operands' values, and a recomputation reads the same
  positions, so under ``Numerics.EXACT`` every value (and so every result) is bit for bit
  the unbudgeted plan's; under ``Numerics.FAST`` likewise wherever the kernels are
  deterministic for equal operands (the native ones are).
- The accounting is the plan's: a value counts its elements from the step that writes it
  through the last step that reads it, both included (so a step's operands and its result
  count together while it runs); sources (parameters, inputs, leaves) count zero, since the
  run borrows them; readable values stay to the end. :attr:`Rematerialized.series` is that
  count per step, :attr:`Rematerialized.peak` its maximum.
- The choice is a deterministic greedy over the step list, the same for every budget: at
  the first step where the count peaks, it frees the values that are idle there and cheapest
  to compute again per element saved (a recomputation that keeps an operand alive longer is
  charged for it), and stops at the first state whose peak fits. So a larger budget stops no
  later and its peak is no smaller than a smaller budget's peak (monotone). When no choice
  lowers the peak any more, the smallest peak seen is the smallest feasible budget, and a
  budget below it raises :class:`~topos.errors.DeclarationError` naming it.
- Only plain kernel steps are recomputed (not home kernels of fused groups, constants or
  passes); a pass (a value handed on from an earlier position) is read through to that
  position, so freeing the earlier value frees the storage.

Example:
    >>> from topos import Tape, Numerics, gradient
    >>> def chain(t):
    ...     w = t.parameter([[0.5] * 4] * 4)
    ...     h = t.input([[0.1] * 4] * 256)
    ...     for _ in range(4):
    ...         h = (h @ w).tanh()
    ...     return w, (h * h).sum()
    >>> network, (w, loss) = Tape.record(chain)
    >>> longer, adjoints = gradient(network, loss, [w])
    >>> entry = longer.entry(adjoints.roots()).numerics(Numerics.EXACT)
    >>> full, tight = entry.lower(), entry.budget(fraction=0.75).lower()
    >>> tight.memory_peak() <= 0.75 * full.memory_peak() and len(tight.recomputed()) > 0
    True
    >>> grads = [plan.forward(network.parameters()).of(adjoints.of(w)).bits() for plan in (full, tight)]
    >>> bool((grads[0] == grads[1]).all())
    True
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any, Final, final

import attrs
import numpy as np

from topos.errors import DeclarationError, user_site
from topos.ir import ops
from topos.ir.network import Network
from topos.stages.execute import FusedStep, KernelStep, PassStep, SkipStep, Step

__all__ = ["Budget", "Rematerialized", "live_during", "schedule", "step_cost"]

_BATCH: Final = 8
"""Values freed per round of the greedy: fewer rounds on large plans, the same for every budget."""
_DEPTH: Final = 6
"""How far back a redo may reach through values nobody keeps (a layer's few elementwise steps)."""
_WIDTH: Final = 16
"""The most events one redo may repeat."""


def _amount(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if attribute.name == "fraction":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < float(value) < float("inf"):
            raise DeclarationError(f"{user_site()}: a budget's fraction must be a number above 0, got {value!r}")
    elif isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 0:
        raise DeclarationError(f"{user_site()}: a budget's {attribute.name} must be an integer >= 0, got {value!r}")


@final
@attrs.frozen(slots=True)
class Budget:
    """A memory budget for a plan's own values: ``bytes``, ``elements``, or a ``fraction`` of the
    unbudgeted plan's peak (exactly one). Sources (parameters, inputs) are borrowed and not counted.

    Example:
        >>> Budget(fraction=0.5).limit(unbudgeted=1000, itemsize=4)
        500
        >>> Budget(bytes=4096).limit(unbudgeted=1000, itemsize=4)
        1024
    """

    bytes: int | None = attrs.field(default=None, validator=_amount)
    elements: int | None = attrs.field(default=None, validator=_amount)
    fraction: float | None = attrs.field(default=None, validator=_amount)

    def __attrs_post_init__(self) -> None:
        given = [name for name in ("bytes", "elements", "fraction") if getattr(self, name) is not None]
        if len(given) != 1:
            raise DeclarationError(
                f"{user_site()}: a budget takes exactly one of bytes=, elements= or fraction=, got "
                f"{', '.join(given) or 'none'}"
            )

    def limit(self, unbudgeted: int, itemsize: int) -> int:
        """The budget in elements, for a plan whose unbudgeted peak is ``unbudgeted`` elements."""
        if self.bytes is not None:
            return int(self.bytes) // itemsize
        if self.elements is not None:
            return int(self.elements)
        assert self.fraction is not None
        return int(np.floor(float(self.fraction) * unbudgeted))

    def describe(self) -> str:
        """The budget as the user stated it."""
        if self.bytes is not None:
            return f"{int(self.bytes)} bytes"
        if self.elements is not None:
            return f"{int(self.elements)} elements"
        return f"{float(self.fraction or 0.0):g} of the unbudgeted peak"


@final
@attrs.frozen(slots=True)
class Rematerialized:
    """What a budget changed: the steps, how often each value is computed again, the counts.

    ``recomputed`` maps a node position to how many extra times the plan computes it and
    ``cost`` is their summed cost (multiply-adds for products, elements otherwise);
    ``series`` is the live count per step, ``peak`` its maximum and ``unbudgeted`` the peak
    of the same accounting without a budget.
    """

    steps: tuple[Step, ...]
    recomputed: Mapping[int, int]
    cost: int
    series: tuple[int, ...]
    peak: int
    unbudgeted: int
    budget: int
    """The budget in elements."""


def step_cost(network: Network, index: int) -> int:
    """What computing node ``index`` once costs: multiply-adds for a product, else its elements.

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: t.parameter([[1.0, 2.0]]) @ t.parameter([[1.0], [2.0]]))
        >>> step_cost(network, y.index)
        2
    """
    node = network.nodes_[index]
    if isinstance(node.op, ops.MatMul):
        left = network.nodes_[node.operands[0]].shape.axes
        inner = left[-1] if left else 1
        return max(1, node.shape.volume * inner)
    return max(1, node.shape.volume)


@attrs.define(slots=True)
class _Event:
    step: Step
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    movable: bool
    """A plain kernel step writing one value nobody reads at the end: it may be freed and redone."""


@attrs.define(slots=True)
class _State:
    """One simulation of an event list: each written value's span and readers."""

    starts: list[int]
    ends: list[int]
    volumes: list[int]
    owner: list[int]
    """The event position of each instance."""
    node: list[int]
    uses: list[list[int]]
    instances_of: dict[int, list[int]]
    """Instances of each node, in event order."""
    series: np.ndarray


def _simulate(events: Sequence[_Event], volume: Sequence[int], readable: Sequence[bool]) -> _State:
    starts: list[int] = []
    ends: list[int] = []
    volumes: list[int] = []
    owner: list[int] = []
    node: list[int] = []
    uses: list[list[int]] = []
    instances_of: dict[int, list[int]] = {}
    latest: dict[int, int] = {}
    last = len(events) - 1
    for position, event in enumerate(events):
        for read in event.reads:
            instance = latest.get(read)
            if instance is not None:
                ends[instance] = position
                uses[instance].append(position)
        for write in event.writes:
            instance = len(starts)
            starts.append(position)
            ends.append(position)
            volumes.append(volume[write])
            owner.append(position)
            node.append(write)
            uses.append([])
            instances_of.setdefault(write, []).append(instance)
            latest[write] = instance
    for value, instances in instances_of.items():  # a readable value is handed back: it lives to the end
        if readable[value]:
            ends[instances[-1]] = last
    size = len(events) + 2
    weights = np.asarray(volumes, dtype=np.float64)
    up = np.bincount(np.asarray(starts, dtype=np.int64), weights=weights, minlength=size)
    down = np.bincount(np.asarray(ends, dtype=np.int64) + 1, weights=weights, minlength=size)
    series = np.cumsum(up - down)[: len(events)]
    return _State(starts, ends, volumes, owner, node, uses, instances_of, series)


def _serving(state: _State, read: int, before: int) -> int | None:
    """The instance of node ``read`` a step placed just before ``before`` reads (latest earlier one)."""
    instances = state.instances_of.get(read)
    if not instances:
        return None
    starts = [state.starts[i] for i in instances]
    k = bisect.bisect_left(starts, before) - 1
    return instances[k] if k >= 0 else None


@attrs.frozen(slots=True)
class _Option:
    """Free one value over an idle gap and redo it (with the dead values it needs) at the gap's end."""

    score: float
    value: int
    instance: int
    gap_end: int
    chain: tuple[int, ...]
    """Event positions to redo just before ``gap_end``, in order; the freed value's own event last."""
    near: frozenset[int]
    """Every node the redone events read or write (options in one round must not share one)."""


def _chain(
    events: Sequence[_Event], state: _State, instance: int, gap_end: int, peak_at: int, cost: Sequence[int]
) -> tuple[list[int], int, int] | None:
    """The events to redo so ``instance``'s value exists again at ``gap_end``: its own, and those of
    operands nobody keeps that long (up to ``_DEPTH`` deep); with what the operands kept longer
    cost at the peak, and the summed cost. None when an operand can be neither kept nor redone."""
    chain: dict[int, None] = {}
    charged = 0
    total = 0
    pending = [(state.owner[instance], 0)]
    while pending:
        position, depth = pending.pop()
        if position in chain:
            continue
        chain[position] = None
        event = events[position]
        total += cost[event.writes[0]]
        for read in event.reads:
            serving = _serving(state, read, gap_end)
            if serving is None:
                return None
            if state.volumes[serving] == 0 or state.ends[serving] >= gap_end:
                continue  # borrowed, or alive there anyway
            owner = events[state.owner[serving]]
            if owner.movable and depth < _DEPTH and len(chain) < _WIDTH:
                pending.append((state.owner[serving], depth + 1))
            elif state.ends[serving] < peak_at:
                charged += state.volumes[serving]
    return sorted(chain), charged, total


def _candidates(
    events: Sequence[_Event], state: _State, peak_at: int, cost: Sequence[int], banned: set[tuple[int, int]]
) -> list[_Option]:
    """The options for values idle at the peak, cheapest per element saved first."""
    found: list[_Option] = []
    read_here = set(events[peak_at].reads) | set(events[peak_at].writes)
    for instance, (start, end) in enumerate(zip(state.starts, state.ends, strict=True)):
        if not (start < peak_at < end) or state.volumes[instance] == 0:
            continue
        event = events[state.owner[instance]]
        value = state.node[instance]
        if not event.movable or value in read_here:
            continue
        uses = state.uses[instance]
        k = bisect.bisect_left(uses, peak_at)
        if k >= len(uses) or (value, uses[k]) in banned:
            continue
        gap_end = uses[k]
        planned = _chain(events, state, instance, gap_end, peak_at, cost)
        if planned is None:
            continue
        chain, charged, total = planned
        saved = state.volumes[instance] - charged
        if saved > 0:
            near = frozenset(n for p in chain for n in (*events[p].reads, *events[p].writes))
            found.append(_Option(total / saved, value, instance, gap_end, tuple(chain), near))
    found.sort(key=lambda o: (o.score, o.value, o.gap_end))
    return found


def _apply(events: list[_Event], state: _State, chosen: Sequence[_Option]) -> list[_Event]:
    """The event list with each chosen value redone just before its gap's end."""
    result = list(events)
    redo: dict[int, list[_Event]] = {}
    drop: set[int] = set()
    for option in chosen:
        position = state.owner[option.instance]
        uses = state.uses[option.instance]
        if not uses or uses[0] >= option.gap_end:
            drop.add(position)  # nothing reads it before the gap: compute it only where it is needed
        redo.setdefault(option.gap_end, []).extend(
            _Event(events[p].step, events[p].reads, events[p].writes, True) for p in option.chain
        )
    # From the end, so each edit leaves the positions still to edit where they were; at one
    # position the event goes first and the redone ones take its place.
    for position in sorted(set(redo) | drop, reverse=True):
        if position in drop:
            del result[position]
        if position in redo:
            result[position:position] = redo[position]
    return result


def _search(
    events: list[_Event], volume: Sequence[int], readable: Sequence[bool], cost: Sequence[int], budget: int
) -> tuple[list[_Event], _State, int]:
    """Greedy rounds until the peak fits ``budget`` or no choice lowers it: the final events,
    their state and the least peak seen."""
    state = _simulate(events, volume, readable)
    least = int(state.series.max()) if len(state.series) else 0
    banned: set[tuple[int, int]] = set()
    rounds = 4 * len(events) + 64
    while least > budget and rounds > 0:
        rounds -= 1
        peak_at = int(np.argmax(state.series))
        peak = int(state.series[peak_at])
        options = _candidates(events, state, peak_at, cost, banned)
        if not options:
            break
        chosen: list[_Option] = []
        touched: set[int] = set()
        for option in options:
            if option.near & touched:
                continue
            chosen.append(option)
            touched |= option.near
            if len(chosen) == _BATCH:
                break
        trial = _apply(events, state, chosen)
        after = _simulate(trial, volume, readable)
        if len(chosen) > 1 and int(after.series.max()) > peak:
            chosen = chosen[:1]
            trial = _apply(events, state, chosen)
            after = _simulate(trial, volume, readable)
        if int(after.series.max()) > peak:
            banned.add((chosen[0].value, chosen[0].gap_end))
            continue
        events, state = trial, after
        least = min(least, int(state.series.max()))
    return events, state, least


def _release_lists(events: Sequence[_Event], state: _State, readable: Sequence[bool]) -> list[list[int]]:
    releases: list[list[int]] = [[] for _ in events]
    for instance, end in enumerate(state.ends):
        if not readable[state.node[instance]] or instance != state.instances_of[state.node[instance]][-1]:
            releases[end].append(state.node[instance])
    return releases


def _events(network: Network, steps: Sequence[Step], readable: Sequence[bool]) -> tuple[list[_Event], list[int]]:
    """The steps as events (what each reads and writes), and each node's counted volume."""
    nodes = network.nodes_
    volume = [0 if node.is_source else node.shape.volume for node in nodes]
    handed = {step.index: step.other for step in steps if isinstance(step, PassStep)}
    fused_reads = {r for step in steps if isinstance(step, FusedStep) for r in step.match.reads()}

    def through(position: int) -> int:
        # A pass read by a plain kernel is read through to the value it hands on.
        if position in handed and position not in fused_reads and not readable[position]:
            return handed[position]
        return position

    events: list[_Event] = []
    for step in steps:
        if isinstance(step, SkipStep):
            continue
        if isinstance(step, PassStep) and through(step.index) != step.index:
            continue  # every reader reads the handed value itself
        if isinstance(step, KernelStep):
            operands = tuple(through(o) for o in step.operands)
            kernel_step = attrs.evolve(step, operands=operands, release=(), out=None)
            events.append(_Event(kernel_step, operands, (step.index,), not readable[step.index]))
        elif isinstance(step, FusedStep):
            events.append(_Event(attrs.evolve(step, release=()), tuple(step.match.reads()), step.writes(), False))
        elif isinstance(step, PassStep):
            events.append(_Event(attrs.evolve(step, release=()), (step.other,), (step.index,), False))
        else:
            events.append(_Event(attrs.evolve(step, release=()), (), step.writes(), False))
    return events, volume


def live_during(network: Network, steps: Sequence[Step], readable: Sequence[bool]) -> list[int]:
    """The live count while each step runs (the contract's accounting), for any plan's steps.

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: (t.parameter([1.0, 2.0]) * 3.0).sum())
        >>> plan = network.entry(y).lower()
        >>> live_during(network, plan._program.steps, plan.readable_)
        [0, 0, 2, 3]
    """
    events, volume = _events(network, steps, readable)
    return [int(v) for v in _simulate(events, volume, readable).series]


def schedule(network: Network, steps: Sequence[Step], readable: Sequence[bool], stated: Budget) -> Rematerialized | None:
    """Recompute values of ``steps`` so the live count stays within the ``stated`` budget; None
    when the unbudgeted steps already fit it.

    Raises :class:`~topos.errors.DeclarationError` naming the smallest feasible budget when
    the budget is below it.
    """
    nodes = network.nodes_
    cost = [step_cost(network, i) if not nodes[i].is_source else 1 for i in range(len(nodes))]
    events, volume = _events(network, steps, readable)
    first = _simulate(events, volume, readable)
    unbudgeted = int(first.series.max()) if len(first.series) else 0
    itemsize = np.dtype(network.element.dtype).itemsize
    budget = stated.limit(unbudgeted, itemsize)
    if budget >= unbudgeted:
        return None
    final_events, state, least = _search(events, volume, readable, cost, budget)
    peak = int(state.series.max()) if len(state.series) else 0
    if peak > budget:
        raise DeclarationError(
            f"{user_site()}: a memory budget of {stated.describe()}, {budget} elements ({budget * itemsize} bytes) is below the smallest this plan "
            f"reaches by recomputing, {least} elements ({least * itemsize} bytes of {network.element}); "
            f"its unbudgeted peak is {unbudgeted} elements ({unbudgeted * itemsize} bytes)"
        )
    releases = _release_lists(final_events, state, readable)
    recomputed: dict[int, int] = {}
    seen: set[int] = set()
    total = 0
    out_steps: list[Step] = []
    for event, release in zip(final_events, releases, strict=True):
        if isinstance(event.step, KernelStep):
            index = event.step.index
            if index in seen:
                recomputed[index] = recomputed.get(index, 0) + 1
                total += cost[index]
            seen.add(index)
        out_steps.append(attrs.evolve(event.step, release=tuple(release)))
    return Rematerialized(
        steps=tuple(out_steps),
        recomputed=dict(sorted(recomputed.items())),
        cost=total,
        series=tuple(int(v) for v in state.series),
        peak=peak,
        unbudgeted=unbudgeted,
        budget=budget,
    )
