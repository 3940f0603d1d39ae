"""What the XLA road promises beyond the envelope: selections, IEEE bits, results, errors, threads."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from topos import ElementType, FeedError, Tape, Tensor, Value, bf16, f32, f64, xla
from topos.stages.emission import emit_network
from topos.xla import module as xla_module

Array = np.ndarray[Any, Any]

HERE = __file__.rsplit("/", 1)[-1]


def bits(array: Array) -> Array:
    a = np.ascontiguousarray(array)
    return a.view(f"u{a.dtype.itemsize}")


def poisoned_table(vocab: int = 6, width: int = 3) -> Array:
    table = np.arange(vocab * width, dtype=np.float64).reshape(vocab, width) * 0.25 - 1.0
    table[0, 0] = -0.0
    table[vocab - 2] = np.inf
    table[vocab - 1] = np.nan
    return table


# --------------------------------------------------------------------------- gather and scatter


def test_an_unselected_inf_or_nan_row_never_reaches_a_gather() -> None:
    picks = [0, 2, 2, 1, 3]

    def build(t: Tape) -> tuple[Value, Value]:
        selection = t.input(Tensor.selection(picks, 6))
        return selection, t.parameter(poisoned_table()).gather(selection)

    network, (selection, rows) = Tape.record(build)
    executable = xla.XlaExecutable.of_network(network, [rows])
    assert re.search(r"%arg1: tensor<5xi32>", executable.text)
    assert "stablehlo.gather" in executable.text
    fed = {selection: Tensor.selection([3, 1, 0, 0, 2], 6)}
    for feeds in ({}, fed):
        got = executable.forward(network.parameters(), feeds).of(rows).numpy()
        want = network.forward(network.parameters(), feeds).of(rows).numpy()
        assert not np.isnan(got).any()
        assert np.array_equal(bits(got), bits(want))
        assert not np.signbit(got[got == 0]).any()  # 0 + (-0) is +0, as the fold from +0 gives

    # The same selection recorded as a dense one-hot lowers with the masked fold: same bits.
    dense = np.eye(6)[picks]

    def build_dense(t: Tape) -> Value:
        return t.parameter(poisoned_table()).gather(t.input(dense))

    dense_network, dense_rows = Tape.record(build_dense)
    dense_text = emit_network(dense_network, [dense_rows])
    assert "stablehlo.gather" not in dense_text and "tensor<5x6xf32>" in dense_text
    on_xla = xla.XlaExecutable.of_network(dense_network, [dense_rows]).forward(dense_network.parameters(), {})
    reference = network.forward(network.parameters(), {}).of(rows).numpy()
    assert np.array_equal(bits(on_xla.of(dense_rows).numpy()), bits(reference))
    (interpreted,) = xla.evaluate_module(dense_text, dense_network.parameters().payloads_[0].numpy(), dense.astype(np.float32))
    assert np.array_equal(bits(interpreted), bits(reference))


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=lambda e: e.name)
@pytest.mark.parametrize("one", [1.0, 0.5])
def test_scatter_adds_repeated_rows_in_order(element: ElementType, one: float) -> None:
    picks = [2, 0, 2, 2, 5, 0]
    rng = np.random.default_rng(7)
    gradient = rng.uniform(0.25, 2.0, size=(len(picks), 4)) * rng.choice([-1.0, 1.0], size=(len(picks), 4))

    def build(t: Tape) -> tuple[Value, Value, Value]:
        selection = t.input(Tensor.selection(picks, 7, element=element, one=one))
        g = t.input(gradient)
        return selection, g, g.scatter(selection)

    network, (_, _, out) = Tape.record(build, element=element)
    text = emit_network(network, [out])
    assert "stablehlo.scatter" in text and "tensor<6xi32>" in text
    want = network.forward(network.parameters(), {}).of(out).numpy()
    # The reference interpreter applies updates in order, as the reference's add.at does.
    indices = np.asarray(picks, np.int32)
    (interpreted,) = xla.evaluate_module(text, indices, Tensor(gradient, element=element).numpy())
    assert np.array_equal(bits(interpreted), bits(want))
    # XLA leaves the order of repeated updates to the backend: at most 3 rows meet, so the
    # envelope is 3 roundings of magnitudes <= 3 * 2 (2 * 3 * eps * 6).
    got = xla.XlaExecutable.of_network(network, [out]).forward(network.parameters(), {}).of(out).numpy()
    eps = float(np.finfo(np.float32).eps) if element is not f64 else float(np.finfo(np.float64).eps)
    if element is bf16:
        eps = 2.0**-8  # the f32 sum is rounded once to bf16
    assert np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))) <= 36 * eps


def test_a_large_vocabulary_gathers_by_index_without_a_one_hot() -> None:
    vocab, count = 50_000, 8
    table = np.linspace(-1.0, 1.0, vocab * 2).reshape(vocab, 2)
    picks = [49_999, 0, 17, 17, 31_337, 2, 49_998, 5]

    def build(t: Tape) -> tuple[Value, Value]:
        selection = t.input(Tensor.selection(picks, vocab))
        return selection, t.parameter(table).gather(selection)

    network, (selection, rows) = Tape.record(build)
    executable = xla.XlaExecutable.of_network(network, [rows])
    assert f"x{vocab}xf32" not in executable.text.replace(f"tensor<{vocab}x2xf32>", "")
    assert f"{count}x{vocab}" not in executable.text
    assert xla.signature(executable.text).inputs[1] == ((count,), np.dtype(np.int32))
    feed = Tensor.selection(picks[::-1], vocab)
    arrays = executable.arrays(network.parameters(), {selection: feed})
    assert arrays[1].dtype == np.int32 and arrays[1].tolist() == picks[::-1]
    got = executable.forward(network.parameters(), {selection: feed}).of(rows).numpy()
    want = network.forward(network.parameters(), {selection: feed}).of(rows).numpy()
    assert np.array_equal(bits(got), bits(want))


def test_the_road_never_caches_on_a_callers_tensor() -> None:
    def build(t: Tape) -> tuple[Value, Value]:
        dense = t.input(np.eye(5)[[1, 2]])
        return dense, t.parameter(np.ones((5, 2))).gather(dense)

    network, (dense, rows) = Tape.record(build)
    executable = xla.XlaExecutable.of_network(network, [rows])
    feed = Tensor.selection([4, 0], 5)
    got = executable.forward(network.parameters(), {dense: feed}).of(rows).numpy()
    assert got.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert feed._array is None  # the one-hot was built for the call, not kept on the feed


def test_a_dense_feed_for_an_index_argument_is_refused_by_name() -> None:
    def build(t: Tape) -> tuple[Value, Value]:
        selection = t.input(Tensor.selection([0, 1], 3))
        return selection, t.parameter(np.ones((3, 2))).gather(selection)

    network, (selection, rows) = Tape.record(build)
    executable = xla.XlaExecutable.of_network(network, [rows])
    index = network.index(selection)
    with pytest.raises(FeedError) as caught:
        executable.forward(network.parameters(), {selection: np.eye(3)[[0, 1]]})
    message = str(caught.value)
    assert network.describe_symbol(index) in message and "selection" in message
    assert f"{HERE}:" in message.split("called at")[-1]
    with pytest.raises(FeedError, match=r"selection value 1\.0"):
        executable.forward(network.parameters(), {selection: Tensor.selection([0, 1], 3, one=2.0)})


# --------------------------------------------------------------------------- IEEE bits


def test_magic_number_rounding_keeps_its_bits_on_xla() -> None:
    x = np.array([0.3, 1.5, 2.5, -7.7, 1e6 + 0.5, -0.49, 3.5, 123.25], np.float32)
    network, (_, y) = Tape.record(lambda t: (lambda v: (v, (v + 12582912.0) - 12582912.0))(t.input(x)))
    want = network.forward(network.parameters(), {}).of(y).numpy()
    assert np.array_equal(want, np.rint(x))  # the composite rounds half to even
    got = xla.XlaExecutable.of_network(network, [y]).forward(network.parameters(), {}).of(y).numpy()
    assert np.array_equal(bits(got), bits(want))


SPECIALS = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=lambda e: e.name)
def test_maximum_follows_numpy_for_signed_zeros_infinities_and_nan(element: ElementType) -> None:
    a = np.repeat(SPECIALS, len(SPECIALS))
    b = np.tile(SPECIALS, len(SPECIALS))
    network, (_, _, m, r) = Tape.record(
        lambda t: (lambda x, y: (x, y, x.maximum(y), x.relu()))(t.input(a), t.input(b)), element=element
    )
    text = emit_network(network, [m, r])
    arrays = [Tensor(a, element=element).numpy(), Tensor(b, element=element).numpy()]
    run = network.forward(network.parameters(), {})
    want = [run.of(m).numpy(), run.of(r).numpy()]
    assert np.signbit(np.asarray(want[0][1], np.float64))  # numpy: maximum(+0, -0) is -0
    got_xla = xla.XlaExecutable.of_network(network, [m, r]).forward(network.parameters(), {})
    got_eval = xla.evaluate_module(text, *arrays)
    for position, symbol in enumerate((m, r)):
        assert np.array_equal(bits(got_xla.of(symbol).numpy()), bits(want[position]))
        assert np.array_equal(bits(got_eval[position]), bits(want[position]))


# --------------------------------------------------------------------------- results of any size


@pytest.mark.parametrize("element", [bf16, f32, f64], ids=lambda e: e.name)
@pytest.mark.parametrize("size", [1, 63, 64, 65, 1000])
def test_the_reference_interpreter_returns_every_size_bit_for_bit(element: ElementType, size: int) -> None:
    rng = np.random.default_rng(size)
    x = rng.standard_normal(size) * (100.0 if size % 2 else 1e-9)
    if size > 3:
        x[:3] = [np.inf, -0.0, np.nan]
    network, (_, y, z) = Tape.record(lambda t: (lambda v: (v, v * 3.0, v * 0.0625 + 2.0))(t.input(x)), element=element)
    text = emit_network(network, [y, z])
    run = network.forward(network.parameters(), {})
    got = xla.evaluate_module(text, Tensor(x, element=element).numpy())
    for value, symbol in zip(got, (y, z), strict=True):  # z rounds to a splat of 2.0 for small |x|
        want = run.of(symbol).numpy()
        assert value.dtype == want.dtype and value.shape == want.shape
        assert np.array_equal(bits(value), bits(want))


# --------------------------------------------------------------------------- errors


def test_signature_errors_name_the_symbol_shapes_and_the_users_line() -> None:
    network, (x, y) = Tape.record(lambda t: (lambda x: (x, x.sum()))(t.input(np.ones((2, 3)))))
    executable = xla.XlaExecutable.of_network(network, [y])
    with pytest.raises(FeedError) as caught:
        executable.compiled.run([np.ones((3, 2), np.float32)], [network.describe_symbol(network.index(x))])
    message = str(caught.value)
    assert network.describe_symbol(network.index(x)) in message
    assert "float32[2, 3]" in message and "float32[3, 2]" in message
    assert f"{HERE}:" in message
    with pytest.raises(FeedError, match=rf"argument 0 of @main.*{HERE}:\d+"):
        executable.compiled(np.ones((2, 3), np.float64))


# --------------------------------------------------------------------------- caches and threads


def test_eight_threads_running_one_executable_agree() -> None:
    rng = np.random.default_rng(3)
    network, (x, y) = Tape.record(
        lambda t: (lambda x: (x, (x.matmul(t.parameter(rng.standard_normal((32, 16)))).tanh()).sum()))(
            t.input(np.zeros((64, 32)))
        )
    )
    executable = xla.XlaExecutable.of_network(network, [y])
    feeds = [{x: rng.standard_normal((64, 32))} for _ in range(8)]
    alone = [executable.forward(network.parameters(), f).of(y).numpy() for f in feeds]
    results: list[list[Array]] = [[] for _ in range(8)]
    barrier = threading.Barrier(8)

    def work(thread: int) -> None:
        barrier.wait()
        for _ in range(20):
            results[thread].append(executable.forward(network.parameters(), feeds[thread]).of(y).numpy())

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for thread in range(8):
        assert len(results[thread]) == 20
        assert all(np.array_equal(bits(r), bits(alone[thread])) for r in results[thread])


def test_the_compile_cache_is_bounded_and_least_recently_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xla_module, "_COMPILED", type(xla_module._COMPILED)())
    monkeypatch.setattr(xla_module, "COMPILE_CACHE_SIZE", 2)
    texts = []
    for scale in (2.0, 3.0, 4.0):

        def build(t: Tape, s: float = scale) -> Value:
            return (t.input([1.0, 2.0]) * s).sum()

        network, y = Tape.record(build)
        texts.append(emit_network(network, [y]))
    first = xla.compile_module(texts[0])
    xla.compile_module(texts[1])
    assert xla.compile_module(texts[0]) is first  # touched: now the most recent
    xla.compile_module(texts[2])
    assert len(xla_module._COMPILED) == 2 and (texts[1], 1) not in xla_module._COMPILED
    assert xla.compile_module(texts[0]) is first


def test_one_plan_compiles_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import jax._src.compiler as compiler

    calls: list[str] = []

    def counting(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*arguments: Any, **keywords: Any) -> Any:
            calls.append(name)
            return real(*arguments, **keywords)

        return wrapper

    monkeypatch.setattr(compiler, "backend_compile_and_load", counting("jax", compiler.backend_compile_and_load))
    monkeypatch.setattr(xla_module, "_compile_on_client", counting("client", xla_module._compile_on_client))
    network, (x, y) = Tape.record(lambda t: (lambda x: (x, (x * 7.0 - 1.0).exp().sum()))(t.input([0.5, 0.25, 1.5])))
    plan = network.entry([y]).lower()
    executable = xla.XlaExecutable.of_plan(plan)
    for feed in ([0.1, 0.2, 0.3], [0.4, 0.5, 0.6]):
        executable.forward(network.parameters(), {x: feed})
    assert calls == ["jax"]


def test_bf16_results_keep_ml_dtypes() -> None:
    network, y = Tape.record(lambda t: t.input(np.arange(100.0)) * 1.0, element=bf16)
    (out,) = xla.evaluate_module(emit_network(network, [y]), np.arange(100.0).astype(ml_dtypes.bfloat16))
    assert out.dtype == np.dtype(ml_dtypes.bfloat16) and out.astype(np.float64).tolist() == list(np.arange(100.0))
