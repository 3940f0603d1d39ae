"""Batching is exact: every batched value's slice b is the network run on example b alone.

The property suite reuses the differential suite's random graphs (every opcode, map,
storage and special value it draws), takes each graph's recorded gradient, batches a random
nonempty subset of its inputs and parameters over a random size, and compares, bit for
bit (every NaN counted as one value: see ``_settled_bits``), every node of the batched network (forward values and per-example gradients) against
the original run once per example, on the interpreter and on the exact plan. Selections
fed per example (token ids) are not drawn by those graphs, so they have their own cases.

The default run draws ``DEFAULT_CASES`` graphs; ``-m batching_full`` (or
``TOPOS_BATCHING_FULL=1``) draws ``FULL_CASES`` more with other seeds.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from test_differential import _specials, build_case

from topos import (
    InvalidArgumentError,
    Network,
    Numerics,
    Parameters,
    ParametersError,
    SymbolError,
    Tape,
    Tensor,
    batch,
    f32,
    f64,
    gradient,
)
from topos.ir import ops
from topos.ir.ops import OPCODES
from topos.stages.batching import Batching
from topos.stages.rules import BATCH

Array = np.ndarray[Any, Any]

DEFAULT_CASES = 500
FULL_CASES = 5_000
SIZES = (1, 2, 3, 8, 64)


def test_the_batching_table_covers_exactly_the_opcodes() -> None:
    assert set(BATCH) == set(OPCODES)


def _draw(rng: np.random.Generator, template: Tensor) -> Tensor:
    """An example for a source: fresh values of its shape, with the element's specials mixed in."""
    shape = template.shape.axes
    values = rng.normal(size=shape) * float(rng.choice([0.5, 1.0, 3.0, 30.0]))
    rate = float(rng.choice([0.0, 0.05, 0.3]))
    if rate:
        specials = _specials(template.element).astype(np.float64)
        values = np.where(rng.random(shape) < rate, rng.choice(specials, size=shape), values)
    return Tensor(np.asarray(values, dtype=np.float64), element=template.element)


def _stacked(examples: list[Tensor]) -> Tensor:
    return Tensor(np.stack([e.numpy() for e in examples]), element=examples[0].element)


def _settled_bits(tensor: Tensor) -> Array:
    """The bits, with every NaN as one pattern: which NaN payload survives is not promised.

    numpy's SIMD loops pick between two NaN operands by lane (on an AVX-512 machine
    ``-nan + nan(1)`` gives the first operand's NaN in the vector body and the second's in
    the last lanes of a run), and batching moves every element to another lane. Every other
    bit, NaN or not included, is compared exactly.
    """
    bits = tensor.bits().copy()
    bits[np.isnan(tensor.numpy().astype(np.float64))] = np.iinfo(bits.dtype).max  # all ones: a NaN
    return bits


def _compare(label: str, want: Tensor, got: Tensor, failures: list[str]) -> None:
    a, b = _settled_bits(want), _settled_bits(got)
    if a.shape != b.shape or not np.array_equal(a, b):
        if a.shape != b.shape:
            failures.append(f"{label}: shape {a.shape} alone, {b.shape} batched")
            return
        where = np.flatnonzero(a.reshape(-1) != b.reshape(-1))[:4]
        alone, batched = want.numpy().reshape(-1)[where], got.numpy().reshape(-1)[where]
        failures.append(f"{label}: at {where.tolist()}, {alone.tolist()} alone, {batched.tolist()} batched")


Draw = Callable[[np.random.Generator, int, Tensor], Tensor]


def check_batched(
    network: Network, chosen: list[int], size: int, rng: np.random.Generator, label: str, draw: Draw | None = None
) -> list[str]:
    """Batch ``network`` over the sources at ``chosen`` and compare every node per example."""
    pick = draw or (lambda generator, _index, template: _draw(generator, template))
    failures: list[str] = []
    nodes = network.nodes_
    symbols = [network.symbol(i) for i in chosen]
    batched, mapping = batch(network, symbols, size)
    table = network.parameters()
    examples = {i: [network.sources[i], *(pick(rng, i, network.sources[i]) for _ in range(size - 1))] for i in chosen}
    with np.errstate(all="ignore"):
        alone = []
        for b in range(size):
            payloads = tuple(examples[s.index][b] if s.index in examples else p for s, p in table)
            per_table = Parameters(table.lineage, table.symbols, payloads)
            feeds = {network.symbol(i): examples[i][b] for i in chosen if isinstance(nodes[i].op, ops.Input)}
            alone.append(network.forward(per_table, feeds))
        wide = mapping.parameters()
        stacked = tuple(
            _stacked(examples[s.index]) if s.index in examples else p
            for s, p in zip(table.symbols, wide.payloads(), strict=True)
        )
        wide = Parameters(wide.lineage, wide.symbols, stacked)
        feeds = {mapping.of(network.symbol(i)): _stacked(examples[i]) for i in chosen if isinstance(nodes[i].op, ops.Input)}
        run = batched.forward(wide, feeds)
        for index in range(len(nodes)):
            symbol = network.symbol(index)
            got = run.of(mapping.of(symbol))
            for b in range(size):
                want = alone[b].of(symbol)
                piece = Tensor(got.numpy()[b], element=got.element) if mapping.is_batched(symbol) else got
                _compare(f"{label} size {size}: %{index} {nodes[index].name} example {b}", want, piece, failures)
        # The batched network is an ordinary one: its exact plan must carry the interpreter's bits.
        roots = [mapping.of(network.symbol(i)) for i in range(len(nodes)) if not nodes[i].is_source]
        if roots:
            planned = batched.entry(roots).numerics(Numerics.EXACT).lower().forward(wide, feeds)
            for root in roots:
                _compare(f"{label} size {size}: exact plan at {root!r}", run.of(root), planned.of(root), failures)
    return failures


def _check_seed(seed: int) -> list[str]:
    case = build_case(seed)
    rng = np.random.default_rng(seed + 1_000_003)
    longer, _ = gradient(case.network, case.loss, case.wrt)
    sources = [i for i, n in enumerate(longer.nodes_) if isinstance(n.op, (ops.Input, ops.Parameter))]
    count = int(rng.integers(1, len(sources) + 1))
    chosen = sorted(int(i) for i in rng.choice(sources, size=count, replace=False))
    # Size 64 on a large graph costs seconds; the large sizes go to the smaller graphs.
    sizes = SIZES if longer.nodes_[-1].shape.volume * len(longer) < 4_000 else SIZES[:4]
    size = int(sizes[int(rng.integers(0, len(sizes)))])
    return check_batched(longer, chosen, size, rng, f"seed {seed} ({case.element})")


def _run(seeds: range) -> list[str]:
    failures: list[str] = []
    for seed in seeds:
        failures += _check_seed(seed)
    return failures


def test_batched_graphs_match_each_example_alone_bit_for_bit() -> None:
    failures = _run(range(DEFAULT_CASES))
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:20])


def _full_selected(config: pytest.Config) -> bool:
    expression = str(config.getoption("-m") or "")
    chosen = "batching_full" in expression and "not batching_full" not in expression
    return os.environ.get("TOPOS_BATCHING_FULL") == "1" or chosen


@pytest.mark.batching_full
def test_batching_full(request: pytest.FixtureRequest) -> None:
    if not _full_selected(request.config):
        pytest.skip("opt-in: run with -m batching_full or TOPOS_BATCHING_FULL=1")
    seeds = range(DEFAULT_CASES, DEFAULT_CASES + FULL_CASES)
    chunks = [range(s, min(s + 250, seeds.stop)) for s in range(seeds.start, seeds.stop, 250)]
    workers = max(1, len(os.sched_getaffinity(0)))
    failures: list[str] = []
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        for found in pool.map(_run, chunks):
            failures += found
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:20])


# --------------------------------------------------------------------------- selections


def _embedding_network(element: Any, batched_table: bool) -> tuple[Network, list[int]]:
    """Rows of a table picked by fed token ids, through a product, to a loss; its gradient."""
    rng = np.random.default_rng(7)

    def build(t: Tape) -> Any:
        table = t.parameter(rng.normal(size=(5, 3)))
        ids = t.input(Tensor.selection([1, 4, 1, 0], 5, element))
        w = t.parameter(rng.normal(size=(3, 2)))
        rows = table.gather(ids)
        loss = ((rows.matmul(w)).map(ops.MapOperation.TANH)).sum()
        return table, ids, w, loss

    network, (table, ids, w, loss) = Tape.record(build, element=element)
    longer, _ = gradient(network, loss, [table, w])
    chosen = [ids.index, table.index] if batched_table else [ids.index]
    return longer, chosen


@pytest.mark.parametrize("element", [f32, f64], ids=str)
@pytest.mark.parametrize("batched_table", [False, True], ids=["shared table", "per-example table"])
@pytest.mark.parametrize("size", [1, 2, 5])
def test_fed_selections_batch_exactly(element: Any, batched_table: bool, size: int) -> None:
    # Gather and Scatter (its adjoint) with a selection per example: one block per example.
    network, chosen = _embedding_network(element, batched_table)
    rng = np.random.default_rng(size)
    failures = check_batched_with_selections(network, chosen, size, rng)
    assert not failures, "\n".join(failures[:10])


def check_batched_with_selections(network: Network, chosen: list[int], size: int, rng: np.random.Generator) -> list[str]:
    def draw(generator: np.random.Generator, index: int, template: Tensor) -> Tensor:
        if not template.is_selection:
            return _draw(generator, template)
        count, vocab = template.shape.axes
        return Tensor.selection(generator.integers(0, vocab, count).tolist(), vocab, template.element)

    return check_batched(network, chosen, size, rng, "selections", draw)


# --------------------------------------------------------------------------- composition


def _mlp() -> tuple[Network, Any]:
    rng = np.random.default_rng(3)

    def build(t: Tape) -> Any:
        x = t.input(rng.normal(size=(4,)))
        w1, w2 = t.parameter(rng.normal(size=(4, 3))), t.parameter(rng.normal(size=(3, 2)))
        hidden = x.reshape((1, 4)).matmul(w1).map(ops.MapOperation.TANH)
        loss = (hidden.matmul(w2) * hidden.matmul(w2)).sum()
        return x, w1, w2, loss

    return Tape.record(build, element=f64)


def test_batching_twice_adds_a_second_axis() -> None:
    network, (x, _w1, _w2, loss) = _mlp()
    once, first = batch(network, x, 3)
    twice, second = batch(once, first.of(x), 2)
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(2, 3, 4))
    run = twice.forward(second.parameters(first.parameters()), {second.of(first.of(x)): xs})
    got = run.of(second.of(first.of(loss))).numpy()
    assert got.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            alone = network.forward(network.parameters(), {x: xs[i, j]}).of(loss).numpy()
            assert got[i, j].view(np.uint64) == alone.view(np.uint64)


def test_gradient_of_a_batched_network_sums_over_examples_of_shared_parameters() -> None:
    # gradient(batch(...)): the batched loss summed over the new axis; a shared parameter's
    # gradient is the sum of the per-example gradients, in example order.
    network, (x, w1, _w2, loss) = _mlp()
    batched, mapping = batch(network, x, 3)
    total = batched.reopen()
    summed = total.resolve(mapping.of(loss)).sum_along(0)
    longer = total.seal()
    longer, adjoints = gradient(longer, summed.symbol, [mapping.of(w1)])
    xs = np.random.default_rng(1).normal(size=(3, 4))
    got = longer.forward(mapping.parameters(), {mapping.of(x): xs}).of(adjoints.of(mapping.of(w1))).numpy()
    per_example, g = gradient(network, loss, [w1])
    parts = [per_example.forward(network.parameters(), {x: xs[b]}).of(g.of(w1)).numpy() for b in range(3)]
    want = (np.float64(0.0) + parts[0]) + parts[1] + parts[2]
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))


def test_per_example_gradients_of_batched_parameters() -> None:
    # An ensemble: each example carries its own copy of w1; gradient(batch(...)) of the
    # summed loss gives each copy the gradient of its own example, bit for bit.
    network, (x, w1, _w2, loss) = _mlp()
    batched, mapping = batch(network, [x, w1], 2)
    tape = batched.reopen()
    summed = tape.resolve(mapping.of(loss)).sum_along(0)
    longer, adjoints = gradient(tape.seal(), summed.symbol, [mapping.of(w1)])
    xs = np.random.default_rng(2).normal(size=(2, 4))
    got = longer.forward(mapping.parameters(), {mapping.of(x): xs}).of(adjoints.of(mapping.of(w1))).numpy()
    grads, g = gradient(network, loss, [w1])
    for b in range(2):
        want = grads.forward(network.parameters(), {x: xs[b]}).of(g.of(w1)).numpy()
        assert np.array_equal(got[b].view(np.uint64), want.view(np.uint64))


def test_batched_nodes_keep_the_users_line() -> None:
    network, (x, _w1, _w2, loss) = _mlp()
    batched, mapping = batch(network, x, 2)
    assert batched.nodes_[mapping.of(loss).index].site == network.nodes_[loss.index].site
    assert "test_batching.py" in batched.nodes_[mapping.of(loss).index].site
    assert all("batching.py:" not in n.site or "test_batching.py" in n.site for n in batched.nodes_)


def test_batching_leaves_the_original_untouched_and_is_byte_stable() -> None:
    network, (x, *_rest) = _mlp()
    before = network.describe()
    a, _ = batch(network, x, 4)
    b, _ = batch(network, x, 4)
    assert network.describe() == before
    assert a.describe() == b.describe()


def test_the_adjoints_map_to_the_batched_network() -> None:
    network, (x, w1, w2, loss) = _mlp()
    longer, adjoints = gradient(network, loss, [w1, w2])
    _batched, mapping = batch(longer, x, 2)
    mapped = mapping.adjoints(adjoints)
    assert mapped.wrt == (mapping.of(w1), mapping.of(w2))
    assert mapped.roots()[0] == mapping.of(loss)
    assert mapping.is_batched(adjoints.of(w1)) and not mapping.is_batched(w1)


# --------------------------------------------------------------------------- misuse


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda n, s: batch("net", s[0], 2), SymbolError, "takes a Network first"),  # type: ignore[arg-type]
        (lambda n, s: batch(n, s[0], 0), InvalidArgumentError, "positive integer, got 0"),
        (lambda n, s: batch(n, s[0], -3), InvalidArgumentError, "positive integer, got -3"),
        (lambda n, s: batch(n, s[0], 2.5), InvalidArgumentError, "got 2.5"),  # type: ignore[arg-type]
        (lambda n, s: batch(n, s[0], True), InvalidArgumentError, "got True"),
        (lambda n, s: batch(n, s[3], 2), SymbolError, "only inputs and parameters"),
        (lambda n, s: batch(n, [s[0], s[0]], 2), SymbolError, "twice"),
        (lambda n, s: batch(n, [], 2), SymbolError, "names no input or parameter"),
        (lambda n, s: batch(n, "x", 2), SymbolError, "over must be a Symbol"),  # type: ignore[arg-type]
        (lambda n, s: batch(n, _mlp()[1][0], 2), SymbolError, "different network"),
    ],
)
def test_batch_refuses_misuse_by_name(make: Any, error: type[Exception], words: str) -> None:
    network, symbols = _mlp()
    before = network.describe()
    with pytest.raises(error) as raised:
        make(network, symbols)
    assert words in str(raised.value)
    assert network.describe() == before


def test_a_batching_refuses_foreign_symbols_and_tables() -> None:
    network, (x, *_rest) = _mlp()
    other, (y, *_more) = _mlp()
    _, mapping = batch(network, x, 2)
    assert isinstance(mapping, Batching)
    with pytest.raises(SymbolError, match="different network"):
        mapping.of(y)
    with pytest.raises(SymbolError, match="takes the original network's Parameters"):
        mapping.parameters("table")  # type: ignore[arg-type]
    with pytest.raises(ParametersError, match="different network"):
        mapping.parameters(other.parameters())
