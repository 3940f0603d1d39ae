"""Buffers assigned at lowering: layouts never share live storage, runs reuse their arena's
storage without touching what an earlier run handed back, and concurrent runs stay apart."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plan_graphs import graphs

from topos import Network, Numerics, Symbol, Tape, f32, f64
from topos.ir.element import ElementType
from topos.kernels.arena import Arena, Request, assign
from topos.stages.gradient import gradient
from topos.stages.plan import Entry, Plan, plan

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


@st.composite
def request_lists(draw: st.DrawFn) -> list[Request]:
    count = draw(st.integers(0, 30))
    times = sorted(draw(st.lists(st.integers(0, 60), min_size=count, max_size=count, unique=True)))
    return [
        Request(
            time,
            tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))),
            draw(st.sampled_from(_DTYPES)),
            time + draw(st.integers(0, 20)),
        )
        for time in times
    ]


@settings(max_examples=200)
@given(request_lists())
def test_a_layout_never_lends_live_storage_twice(requests: list[Request]) -> None:
    layout = assign(requests)
    assert len(layout.views) == len(requests)
    for request, (storage, shape) in zip(requests, layout.views, strict=True):
        dtype, capacity = layout.storages[storage]
        assert shape == request.shape and dtype == request.dtype and capacity >= int(np.prod(shape))
    for i, first in enumerate(requests):
        for j in range(i + 1, len(requests)):
            second = requests[j]
            overlap = second.time <= first.dies
            if overlap:
                assert layout.views[i][0] != layout.views[j][0], (first, second)
    # Each storage set holds one buffer per request, each over its own layout's storage.
    buffers = Arena(layout).borrow()
    assert [b.shape for b in buffers] == [r.shape for r in requests]


def _best_fit_by_scanning(requests: list[Request]) -> list[int]:
    """The rule spelled as a scan of every free storage (quadratic; the layout must match it)."""
    sizes: list[int] = []
    dtypes: list[np.dtype[Any]] = []
    alive: list[tuple[int, int]] = []
    free: list[int] = []
    chosen = []
    for request in requests:
        free += [s for dies, s in alive if dies < request.time]
        alive = [(dies, s) for dies, s in alive if dies >= request.time]
        volume = int(np.prod(request.shape))
        fits = [s for s in free if dtypes[s] == request.dtype]
        roomy = [s for s in fits if sizes[s] >= volume]
        if roomy:
            storage = min(roomy, key=lambda s: (sizes[s], s))
        elif fits:
            storage = max(fits, key=lambda s: (sizes[s], -s))
        else:
            storage = len(sizes)
            sizes.append(0)
            dtypes.append(request.dtype)
        if storage in free:
            free.remove(storage)
        sizes[storage] = max(sizes[storage], volume)
        alive.append((request.dies, storage))
        chosen.append(storage)
    return chosen


@settings(max_examples=300)
@given(request_lists())
def test_the_bisected_layout_is_the_best_fit_rule(requests: list[Request]) -> None:
    # assign() bisects sorted free lists (lowering a 10k-node chain once took a minute in a
    # scan of every free storage); it must choose exactly what the plain scan chooses.
    assert [storage for storage, _ in assign(requests).views] == _best_fit_by_scanning(requests)


def test_storage_is_reused_once_its_value_is_dead() -> None:
    dtype = np.dtype(np.float32)
    layout = assign([Request(0, (4,), dtype, 1), Request(1, (4,), dtype, 2), Request(2, (2, 2), dtype, 3)])
    assert [storage for storage, _ in layout.views] == [0, 1, 0]


@pytest.mark.parametrize("element", [f32, f64], ids=["f32", "f64"])
@pytest.mark.parametrize("numerics", [Numerics.EXACT, Numerics.FAST])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_later_run_never_changes_what_an_earlier_run_handed_back(
    element: ElementType, numerics: Numerics, data: st.DataObject
) -> None:
    graph = data.draw(graphs(element, size=10))
    network = graph.network
    longer, adjoints = gradient(network, graph.loss, graph.parameters)
    observed = tuple(graph.values[:: max(1, len(graph.values) // 3)])
    plan_ = plan(longer, Entry(tuple(adjoints.roots()), observed, False, numerics))
    readable = (*adjoints.roots(), *observed)
    x = graph.inputs[0]
    shape = network.nodes_[network.index(x)].shape.axes
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    feeds = [{x: rng.uniform(-1.5, 1.5, shape)} for _ in range(3)]
    parameters = longer.parameters()
    runs = [plan_.forward(parameters, feed) for feed in feeds]
    held = [[run.of(s).bits().copy() for s in readable] for run in runs]
    again = [plan_.forward(parameters, feed) for feed in feeds]
    for run, bits, repeat in zip(runs, held, again, strict=True):
        for symbol, before in zip(readable, bits, strict=True):
            assert np.array_equal(run.of(symbol).bits(), before), symbol
            assert np.array_equal(repeat.of(symbol).bits(), before), symbol
    if numerics is Numerics.EXACT:
        oracle = longer.entry(adjoints.roots()).observe(*observed).numerics(numerics).interpret(parameters, feeds[0])
        for symbol in readable:
            assert np.array_equal(runs[0].of(symbol).bits(), oracle.of(symbol).bits()), symbol
    _assert_nothing_handed_back_is_lent(plan_, again[-1], readable)


def _assert_nothing_handed_back_is_lent(plan_: Plan, run: Any, readable: tuple[Symbol, ...]) -> None:
    arena = plan_._program.arena
    if arena is None:
        return
    lent = arena.borrow()
    for symbol in readable:
        payload = run.of(symbol)
        if payload.is_selection:
            continue
        array = payload.numpy()
        assert not any(np.shares_memory(array, buffer) for buffer in lent), symbol


def mlp(batch: int = 32) -> tuple[Network, Symbol, Any, list[Symbol]]:
    rng = np.random.default_rng(0)

    def build(t: Tape) -> tuple[Symbol, Symbol, list[Symbol]]:
        x = t.input(rng.standard_normal((batch, 24)))
        w1, w2 = t.parameter(rng.standard_normal((24, 48)) * 0.2), t.parameter(rng.standard_normal((48, 6)) * 0.2)
        b1 = t.parameter(np.zeros(48))
        hidden = (x.matmul(w1) + b1.broadcast_along(0, batch)).tanh()
        loss = (hidden.matmul(w2).log_softmax(1) * -1.0).sum()
        return loss.symbol, x.symbol, [w1.symbol, b1.symbol, w2.symbol]

    network, (loss, x, params) = Tape.record(build, element=f32)
    return network, loss, x, params


@pytest.mark.parametrize("numerics", [Numerics.EXACT, Numerics.FAST])
def test_steady_state_runs_reuse_one_storage_set(numerics: Numerics) -> None:
    network, loss, _, params = mlp()
    longer, adjoints = gradient(network, loss, params)
    plan_ = longer.entry(adjoints.roots()).numerics(numerics).lower()
    arena = plan_._program.arena
    assert arena is not None and arena.layout.views, "the training step lends buffers"
    # Fewer storages than lent values: dead values' storage is reused within the run.
    assert len(arena.layout.storages) < len(arena.layout.views)
    parameters = longer.parameters()
    plan_.forward(parameters)
    first = arena.borrow()
    arena.give_back(first)
    for _ in range(3):
        plan_.forward(parameters)
    assert arena.borrow() is first


@pytest.mark.parametrize("numerics", [Numerics.EXACT, Numerics.FAST])
def test_threads_running_one_plan_each_get_their_own_answers(numerics: Numerics) -> None:
    network, loss, x, params = mlp()
    longer, adjoints = gradient(network, loss, params)
    plan_ = longer.entry(adjoints.roots()).numerics(numerics).lower()
    parameters = longer.parameters()
    rng = np.random.default_rng(3)
    feeds = [{x: rng.standard_normal((32, 24))} for _ in range(6)]
    expected = [[plan_.forward(parameters, feed).of(s).bits() for s in adjoints.roots()] for feed in feeds]
    barrier = threading.Barrier(len(feeds))
    failures: list[str] = []

    def work(thread: int) -> None:
        barrier.wait()
        for _ in range(15):
            run = plan_.forward(parameters, feeds[thread])
            for symbol, bits in zip(adjoints.roots(), expected[thread], strict=True):
                if not np.array_equal(run.of(symbol).bits(), bits):
                    failures.append(f"thread {thread}: {symbol!r}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(feeds))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_a_view_keeps_its_storage_alive_until_its_own_last_read() -> None:
    """``r`` reshapes ``h`` and is read only after ``z`` (same size) is computed: ``h``'s
    storage must not be lent to ``z`` when ``h`` itself is last read by the reshape."""
    rng = np.random.default_rng(1)

    def build(t: Tape) -> Symbol:
        a, b, c, d = (t.parameter(rng.standard_normal((4, 6))) for _ in range(4))
        r = (a * b).reshape((6, 4))
        z = c * d
        return (r.reshape((4, 6)) * 3.0 + z).sum_along(0).symbol

    network, y = Tape.record(build, element=f64)
    for numerics in (Numerics.EXACT, Numerics.FAST):
        plan_ = network.entry(y).numerics(numerics).lower()
        assert plan_._program.arena is not None
        got = plan_.forward(network.parameters()).of(y)
        expected = network.forward(network.parameters()).of(y)
        if numerics is Numerics.EXACT:
            assert np.array_equal(got.bits(), expected.bits())
        else:
            # Fast may reorder a four-term sum of values near 1 (error ~1e-15); a value read
            # from a reused storage would be off by about 1.
            assert np.allclose(got.numpy(), expected.numpy(), rtol=0, atol=1e-12)
