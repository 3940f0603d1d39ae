"""Feeds and symbols: one check for every road, and one place that says which node a symbol is.

``topos.state.check_feeds`` is what the interpreter, plans and the XLA road all run on a
caller's feeds: the same refusal, word for word, whichever road is asked, and an array in
comes back as the array a tensor of the element would hold, without the tensor.
``Lineage.locate`` and ``as_symbols`` are the two symbol checks every reading asks through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

from topos import (
    ElementRangeError,
    FeedError,
    ForeignSymbolError,
    Network,
    Numerics,
    Run,
    Runner,
    Symbol,
    SymbolError,
    Tape,
    Tensor,
    ToposError,
    XlaExecutable,
    bf16,
    f32,
    f64,
)
from topos.ir import ops
from topos.ir.element import ALIGNED_FROM, ElementType
from topos.ir.network import as_symbols
from topos.kernels import libm
from topos.kernels.binding import NUMPY_MAPS
from topos.state import check_feeds

ALIGNMENT = 64


def _network(element: ElementType = f32, shape: tuple[int, ...] = (2, 3)) -> tuple[Network, Symbol, Symbol, Symbol]:
    def build(tape: Tape) -> tuple[Any, Any, Any]:
        w = tape.parameter(np.ones(shape))
        x = tape.input(np.zeros(shape))
        return w, x, (x * w).sum()

    network, (w, x, y) = Tape.record(build, element=element)
    return network, w, x, y


def _roads(network: Network, y: Symbol) -> dict[str, Runner]:
    plan = network.entry(y).numerics(Numerics.EXACT).lower()
    return {"interpreter": network, "plan": plan, "xla": XlaExecutable.of_plan(plan)}


def _held(value: object, element: ElementType) -> np.ndarray[Any, Any]:
    """What a tensor of ``element`` holds for ``value`` (what the feed check used to build)."""
    return Tensor(np.asarray(value), element=element).numpy()


@pytest.mark.parametrize(
    ("element", "value"),
    [
        (f32, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
        (f32, np.arange(6, dtype=np.float32).reshape(2, 3)),
        (f32, np.arange(6, dtype=np.float64).reshape(2, 3) / 7.0),
        (f32, np.arange(6, dtype=np.int64).reshape(2, 3)),
        (f64, np.arange(6, dtype=np.float32).reshape(2, 3) / 3.0),
        (bf16, np.linspace(-1.0, 1.0, 6).reshape(2, 3)),
    ],
    ids=["f32-list", "f32-same", "f32-from-f64", "f32-from-int", "f64-from-f32", "bf16-from-f64"],
)
def test_an_array_in_is_the_array_a_tensor_would_hold(element: ElementType, value: Any) -> None:
    network, _w, x, _y = _network(element)
    before = np.array(value, copy=True)
    checked = check_feeds(network, {x: value})[x.index]
    assert isinstance(checked, np.ndarray)
    expected = _held(value, element)
    assert checked.dtype == expected.dtype == element.dtype
    assert checked.shape == expected.shape and checked.tobytes() == expected.tobytes()
    assert not checked.flags.writeable
    # A private copy: the caller's array is neither aliased nor changed.
    if isinstance(value, np.ndarray):
        assert not np.shares_memory(checked, value)
    assert np.array_equal(np.asarray(value), before)


def test_a_large_feed_is_copied_onto_aligned_storage() -> None:
    rows = 2 * ALIGNED_FROM // 4 // 8
    network, _w, x, _y = _network(f32, (rows, 8))
    backing = np.zeros(rows * 8 + 4, np.float32)
    misaligned = backing[1 : 1 + rows * 8].reshape(rows, 8)
    for fed in (misaligned, misaligned.astype(np.float64)):
        checked = check_feeds(network, {x: fed})[x.index]
        assert isinstance(checked, np.ndarray) and checked.ctypes.data % ALIGNMENT == 0


def test_a_tensor_in_is_a_tensor_out() -> None:
    network, _w, x, _y = _network(f32)
    same = Tensor(np.ones((2, 3)), f32)
    assert check_feeds(network, {x: same})[x.index] is same
    other = Tensor(np.ones((2, 3)) / 3.0, f64)
    converted = check_feeds(network, {x: other})[x.index]
    assert isinstance(converted, Tensor) and converted.element == f32
    assert converted.numpy().tobytes() == other.convert(f32).numpy().tobytes()
    constant = Tensor.filled((2, 3), 2.0, f32)
    kept = check_feeds(network, {x: constant})[x.index]
    assert isinstance(kept, Tensor) and kept.is_constant


def test_a_selection_stays_indices() -> None:
    network, _product = Tape.record(lambda t: t.input(Tensor.selection([0, 1], 3)) @ t.parameter(np.ones((3, 2))))
    (x,) = (network.symbol(i) for i in network.input_nodes)
    checked = check_feeds(network, {x: Tensor.selection([2, 0], 3)})[x.index]
    assert isinstance(checked, Tensor) and checked.is_selection
    assert checked.indices is not None and checked.indices.tolist() == [2, 0]


def _feed_cases(network: Network, w: Symbol, x: Symbol, foreign: Symbol) -> dict[str, tuple[Any, type[ToposError]]]:
    return {
        "wrong-shape": ({x: np.zeros((3, 2))}, FeedError),
        "not-an-input": ({w: np.zeros(3)}, FeedError),
        "foreign": ({foreign: np.zeros((2, 3))}, FeedError),
        "not-a-symbol": ({"x": np.zeros((2, 3))}, FeedError),
        "cannot-convert": ({x: "two"}, FeedError),
        "ragged": ({x: [[1.0, 2.0, 3.0], [4.0]]}, FeedError),
        "empty": ({x: np.zeros((0,))}, FeedError),
        "overflow": ({x: np.full((2, 3), 1e300)}, ElementRangeError),
        "not-a-mapping": ([(x, np.zeros((2, 3)))], FeedError),
    }


@pytest.mark.parametrize(
    "case", ["wrong-shape", "not-an-input", "foreign", "not-a-symbol", "cannot-convert", "ragged", "empty", "overflow", "not-a-mapping"]
)
def test_every_road_refuses_a_bad_feed_in_the_same_words(case: str) -> None:
    network, w, x, y = _network(f32)
    _other, _, foreign, _ = _network(f32)
    feeds, error = _feed_cases(network, w, x, foreign)[case]
    parameters = network.parameters()
    details: dict[str, str] = {}
    for name, road in _roads(network, y).items():
        with pytest.raises(ToposError) as caught:
            road.forward(parameters, feeds)
        assert type(caught.value) is error, f"{name}: {type(caught.value).__name__}: {caught.value}"
        # Every message names the caller's line.
        assert f"{__file__}:" in str(caught.value), str(caught.value)
        details[name] = caught.value.detail
    assert len(set(details.values())) == 1, details
    assert parameters.of(w).tolist() == [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]


def test_the_messages_name_the_input_and_the_shapes() -> None:
    network, w, x, _y = _network(f32)
    label = network.describe_symbol(x.index)
    messages: dict[str, str] = {}
    for case, (feeds, _error) in _feed_cases(network, w, x, _network(f32)[2]).items():
        try:
            check_feeds(network, feeds)
        except ToposError as error:
            messages[case] = str(error)
    assert label in messages["wrong-shape"] and "[3, 2]" in messages["wrong-shape"] and "[2, 3]" in messages["wrong-shape"]
    assert "only inputs can be fed" in messages["not-an-input"] and "Parameter" in messages["not-an-input"]
    assert "different network" in messages["foreign"] and "feed" in messages["foreign"]
    assert "Symbol" in messages["not-a-symbol"] and "str" in messages["not-a-symbol"]
    for case in ("cannot-convert", "ragged", "empty"):
        assert label in messages[case] and "f32" in messages[case], messages[case]
    assert label in messages["overflow"] and "1e+300" in messages["overflow"]
    assert "mapping" in messages["not-a-mapping"]


def test_every_road_reads_a_fed_array_to_the_same_result() -> None:
    network, _w, x, y = _network(f32)
    fed = np.arange(6, dtype=np.float64).reshape(2, 3) / 7.0
    results = {name: road.forward(network.parameters(), {x: fed}).of(y).numpy().tobytes() for name, road in _roads(network, y).items()}
    assert results["interpreter"] == results["plan"]
    assert np.frombuffer(results["xla"], np.float32)[0] == pytest.approx(np.frombuffer(results["plan"], np.float32)[0])


def test_a_plan_run_does_not_alias_the_callers_array() -> None:
    network, y = Tape.record(lambda t: t.input(np.zeros(3)).reshape((3, 1)))
    x = network.symbol(network.input_nodes[0])
    fed = np.array([1.0, 2.0, 3.0], np.float32)
    run: Run = network.entry([y]).lower().forward(network.parameters(), {x: fed})
    fed[:] = 0.0
    assert run.of(y).tolist() == [[1.0], [2.0], [3.0]]


# ----------------------------------------------------------------------------- symbols


def test_locate_names_the_role_and_the_holder() -> None:
    network, _w, x, _y = _network(f32)
    _other, _, foreign, _ = _network(f32)
    assert network.lineage.locate(x, "feed") == x.index
    with pytest.raises(SymbolError) as caught:
        network.lineage.locate(3, "root")
    assert type(caught.value) is SymbolError and "root" in str(caught.value) and "int" in str(caught.value)
    with pytest.raises(ForeignSymbolError) as foreign_error:
        network.lineage.locate(foreign, "observe", "this plan's network")
    message = str(foreign_error.value)
    assert "observe" in message and f"%{foreign.index}" in message and "this plan's network" in message
    assert f"({len(network)} nodes)" in message and f"{__file__}:" in message


def test_every_reader_of_a_foreign_symbol_says_which_role_it_had() -> None:
    network, _w, _x, y = _network(f32)
    _other, _, foreign, _ = _network(f32)
    readers: dict[str, Callable[[], object]] = {
        "root": lambda: network.entry(foreign).lower(),
        "resolve() argument": lambda: network.reopen().resolve(foreign),
        "the network of this table": lambda: network.parameters().of(foreign),
        "sharded input": lambda: _shard(network, y, foreign),
    }
    for role, read in readers.items():
        with pytest.raises(ForeignSymbolError) as caught:
            read()
        assert role in str(caught.value) and "different network" in str(caught.value), str(caught.value)


def _shard(network: Network, y: Symbol, symbol: Symbol) -> str:
    from topos.stages.emission import emit_network
    from topos.stages.stablehlo import DataParallel

    return emit_network(network, [y], sharding=DataParallel(2, (symbol,)))


def test_as_symbols_takes_one_or_many_and_refuses_the_rest() -> None:
    _net, w, x, _y = _network(f32)
    assert as_symbols(w, "roots") == (w,)
    assert as_symbols([w, x], "roots") == (w, x)
    assert as_symbols(iter([x]), "observe") == (x,)
    for bad, words in (("w", ("roots", "str")), (3, ("roots", "int")), ([w, 3], ("roots", "hold Symbols", "int"))):
        with pytest.raises(SymbolError) as caught:
            as_symbols(bad, "roots")
        assert all(word in str(caught.value) for word in words), str(caught.value)


def test_a_sharding_checks_its_inputs_as_an_entry_checks_its_roots() -> None:
    from topos.stages.stablehlo import DataParallel

    _net, _w, x, _y = _network(f32)
    assert DataParallel(2, [x]).inputs == (x,)
    with pytest.raises(SymbolError, match="sharded inputs must hold Symbols, got int"):
        DataParallel(2, (3,))  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- the map table


def test_one_numpy_ufunc_per_map_that_has_one() -> None:
    missing = set(ops.MapOperation) - set(NUMPY_MAPS)
    assert missing == {ops.MapOperation.ERF, ops.MapOperation.ERF_DERIVATIVE}
    assert all(isinstance(ufunc, np.ufunc) for ufunc in NUMPY_MAPS.values())


def test_the_maps_benchmark_times_the_same_ufuncs_the_fast_posture_calls() -> None:
    from benchmarks.bench_maps import MAPS, numpy_maps

    table: Mapping[str, tuple[Any, str]] = numpy_maps()
    assert set(table) == set(MAPS)
    for operation, ufunc in NUMPY_MAPS.items():
        assert table[libm.NAMES[operation]] == (ufunc, f"np.{ufunc.__name__}")
