"""A memory budget changes no bit and holds: properties of :mod:`topos.stages.remat`.

Over the differential suite's random graphs (every element type, storages and special values),
each graph's recorded-gradient plan is lowered without a budget and under a ladder of budgets
down to the smallest the greedy reaches; every result of every budgeted plan, on the generated
function and on the step loop, under Exact and Fast, must carry the unbudgeted plan's bits;
the reported peak stays within each budget, never grows as the budget shrinks, and a budget
below the smallest is refused naming it. A deeper MLP checks what a run really allocates
(tracemalloc) against the budget.
"""

from __future__ import annotations

import itertools
import re
import tracemalloc

import attrs
import numpy as np
import pytest
from test_differential import build_case

from topos import DeclarationError, Numerics, Tape, gradient
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.stages.execute import _parameter_payloads
from topos.stages.plan import Budget, Plan
from topos.state import Parameters
from topos.tensor import Tensor

CASES = 120
FRACTIONS = (1.0, 0.9, 0.75, 0.6, 0.5, 0.4, 0.3)


def _bits(tensor: Tensor) -> bytes:
    return np.ascontiguousarray(tensor.bits()).tobytes()


def _roads(plan: Plan) -> tuple[tuple[str, Plan], ...]:
    looped = attrs.evolve(plan, program=plan._program.looped())
    return (("generated", plan), ("step loop", looped)) if plan._program.function is not None else (("step loop", plan),)


def _ladder(
    network: Network, roots: tuple[Symbol, ...], numerics: Numerics, label: str
) -> tuple[list[str], int]:
    """Every budget of the ladder against the unbudgeted plan; (failures, plans that recomputed)."""
    failures: list[str] = []
    entry = network.entry(roots).numerics(numerics)
    full = entry.lower()
    want = full.forward(network.parameters())
    unbudgeted = full.memory_peak()
    peaks: list[tuple[int, int]] = []
    recomputing = 0
    for fraction in FRACTIONS:
        limit = int(np.floor(fraction * unbudgeted))
        try:
            budgeted = entry.budget(fraction=fraction).lower()
        except DeclarationError as error:
            smallest = re.search(r"reaches by recomputing, (\d+) elements", str(error))
            if smallest is None or int(smallest.group(1)) <= limit:
                failures.append(f"{label}: budget {fraction} refused without naming a larger smallest: {error}")
            else:
                # The smallest it names must itself be accepted.
                budgeted = entry.budget(elements=int(smallest.group(1))).lower()
                peaks.append((int(smallest.group(1)), budgeted.memory_peak()))
            break
        peak = budgeted.memory_peak()
        if peak > max(limit, 0) and budgeted.remat is not None:
            failures.append(f"{label}: budget {fraction} ({limit}) reached {peak}")
        if budgeted.remat is None and peak > limit:
            failures.append(f"{label}: budget {fraction} ({limit}) left the plan at {peak} without recomputing")
        peaks.append((limit, peak))
        recomputing += bool(budgeted.recomputed())
        for road, plan in _roads(budgeted):
            got = plan.forward(network.parameters())
            for root in roots:
                if _bits(got.of(root)) != _bits(want.of(root)):
                    failures.append(f"{label}: budget {fraction}, {road}: {root!r} differs from the unbudgeted plan")
    ordered = sorted(peaks)
    for (_, smaller), (_, larger) in itertools.pairwise(ordered):
        if smaller > larger:
            failures.append(f"{label}: peak not monotone in the budget: {ordered}")
            break
    return failures, recomputing


@pytest.mark.parametrize("numerics", [Numerics.EXACT, Numerics.FAST])
def test_budgeted_training_plans_carry_the_unbudgeted_bits(numerics: Numerics) -> None:
    failures: list[str] = []
    recomputing = 0
    for seed in range(CASES):
        case = build_case(seed)
        longer, adjoints = gradient(case.network, case.loss, case.wrt)
        with np.errstate(all="ignore"):
            found, count = _ladder(longer, adjoints.roots(), numerics, f"seed {seed}")
        failures += found
        recomputing += count
    assert not failures, "\n".join(failures[:20])
    # The property is empty if no plan ever recomputes: most random graphs must give room.
    assert recomputing >= CASES // 4, recomputing


def _mlp(depth: int, rows: int, width: int) -> tuple[Network, tuple[Symbol, ...], dict[Symbol, np.ndarray]]:
    def build(t: Tape) -> tuple[list[object], object, object]:
        x = t.input(np.zeros((rows, width), np.float32))
        ws = [t.parameter(np.random.default_rng(i).standard_normal((width, width)).astype(np.float32) * 0.2) for i in range(depth)]
        h = x
        for w in ws:
            h = (h @ w).tanh()
        return ws, x, (h * h).sum()

    network, (ws, x, loss) = Tape.record(build)
    longer, adjoints = gradient(network, loss, ws)
    feeds = {x: np.random.default_rng(99).standard_normal((rows, width)).astype(np.float32)}
    return longer, adjoints.roots(), feeds


def _held_peak(plan: Plan, parameters: Parameters, feeds: dict[Symbol, np.ndarray]) -> int:
    """The most bytes of arrays a run holds at once, read off the arrays themselves.

    The plan's steps run on the step loop; after each step (before its releases) every
    array a position holds that is not a source is counted once by the memory it owns (views
    count their base), so aliasing, passes and recomputed copies are what they really are.
    """
    network, program = plan.network, plan._program.looped()
    payloads = _parameter_payloads(plan, parameters)
    inputs = {**program.recorded, **{network.index(s): v for s, v in feeds.items()}}
    sources = {i for i, node in enumerate(network.nodes_) if node.is_source}
    values: list[object] = [None] * len(network)
    buffers = program.arena.borrow() if program.arena is not None else ()
    peak = 0
    for step in program.steps:
        step.run(values, payloads, inputs, buffers)  # type: ignore[arg-type]
        owners: dict[int, int] = {}
        for position, value in enumerate(values):
            if position in sources or not isinstance(value, np.ndarray):
                continue
            base = value
            while isinstance(base.base, np.ndarray):
                base = base.base
            owners[id(base)] = base.nbytes
        peak = max(peak, sum(owners.values()))
        for gone in step.release:
            values[gone] = None
    return peak


def _traced_peak(plan: Plan, parameters: Parameters, feeds: dict[Symbol, np.ndarray]) -> int:
    """What numpy allocates during one run (tracemalloc), after a warm run."""
    plan.forward(parameters, feeds)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        plan.forward(parameters, feeds)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("numerics", [Numerics.EXACT, Numerics.FAST])
def test_a_run_holds_no_more_than_its_budget(numerics: Numerics) -> None:
    """The arrays a budgeted run really holds stay within the budget, and shrink with it.

    Held bytes are read off the run's arrays (:func:`_held_peak`), not the plan's accounting.
    What a kernel allocates inside one step (the reference product's wider temporaries, say)
    is not a plan value: tracemalloc's figure is checked only to fall as the budget falls."""
    network, roots, feeds = _mlp(depth=8, rows=1024, width=32)
    parameters = network.parameters()
    entry = network.entry(roots).numerics(numerics)
    full = entry.lower()
    held, traced = [], []
    for fraction in (1.0, 0.8, 0.6, 0.5):
        plan = entry.budget(fraction=fraction).lower()
        budget_bytes = int(np.floor(fraction * full.memory_peak())) * 4
        held.append(_held_peak(plan, parameters, feeds))
        assert held[-1] <= budget_bytes, (fraction, held[-1], budget_bytes, plan.memory_budget())
        if plan.remat is not None:
            traced.append(_traced_peak(plan, parameters, feeds))
    assert held == sorted(held, reverse=True) and held[-1] < held[0], held
    assert traced == sorted(traced, reverse=True), traced


def test_describe_names_what_is_recomputed() -> None:
    network, roots, _ = _mlp(depth=4, rows=256, width=8)
    plan = network.entry(roots).budget(fraction=0.7).lower()
    text = plan.describe()
    assert plan.recomputed()
    assert "recomputed x" in text and "memory budget" in text
    for index, times in plan.recomputed().items():
        assert re.search(rf"^\s*{index}\s.*recomputed x{times}$", text, re.M), index
    # The same plan describes itself the same way every time (no ids, no order of a hash).
    assert network.entry(roots).budget(fraction=0.7).lower().describe() == text


def test_budget_misuse_is_refused_with_the_line() -> None:
    network, roots, _ = _mlp(depth=2, rows=64, width=4)
    for bad in ({}, {"bytes": 10, "fraction": 0.5}, {"bytes": -1}, {"bytes": 1.5}, {"fraction": 0.0}, {"fraction": True}):
        with pytest.raises(DeclarationError, match=r"test_remat\.py:\d+"):
            network.entry(roots).budget(**bad)  # type: ignore[arg-type]
    with pytest.raises(DeclarationError, match="forward-only"):
        network.entry(roots[:1]).backward().budget(fraction=0.5).lower()
    with pytest.raises(DeclarationError, match=r"test_remat\.py:\d+: a memory budget of 0 bytes.*smallest"):
        network.entry(roots).budget(0).lower()
    assert Budget(fraction=2.0).limit(10, 4) == 20
