"""The XLA road: verification diagnostics, the compile cache, signature checks on every call,
the executable a training loop swaps in, a missing extra, and data-parallel runs on 8 devices.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from topos import (
    BackwardTargetError,
    DeclarationError,
    EmissionError,
    FeedError,
    Network,
    Parameters,
    Symbol,
    Tape,
    Tensor,
    ToposError,
    Value,
    f64,
    xla,
)
from topos.stages.emission import DataParallel, emit_network
from topos.xla import module as xla_module

BAD_ADD = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.add %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
"""


def data(shape: tuple[int, ...], seed: int) -> Any:
    rng = np.random.default_rng(seed)
    return rng.uniform(0.25, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def mlp(batch: int = 16) -> tuple[Network, list[Symbol], dict[str, Symbol]]:
    """A two-layer classifier and its recorded gradients: loss first, then one per weight."""

    def build(t: Tape) -> tuple[list[Value], dict[str, Value]]:
        x = t.input(data((batch, 6), 1))
        labels = t.input(np.eye(3)[np.arange(batch) % 3])
        w1, b1 = t.parameter(data((6, 5), 2) * 0.5), t.parameter(data((5,), 3) * 0.1)
        w2 = t.parameter(data((5, 3), 4) * 0.5)
        hidden = (x.matmul(w1) + b1.broadcast_along(0, batch)).tanh()
        loss = -(hidden.matmul(w2).log_softmax(1) * labels).sum() / float(batch)
        adjoints = t.differentiate(loss, [w1, b1, w2])
        return [loss, *(t.resolve(g) for g in adjoints.gradients())], {"x": x, "labels": labels}

    network, (roots, named) = Tape.record(build)
    return network, list(roots), named


# --------------------------------------------------------------------------- verification


def test_a_module_that_fails_to_verify_reports_diagnostics_and_never_crashes() -> None:
    verdict = xla.verify(BAD_ADD)
    assert not verdict.ok and not verdict
    assert any("same shape" in d or "compatible" in d for d in verdict.diagnostics), verdict.diagnostics
    assert not xla.verify("this is not MLIR").ok
    assert not xla.verify('func.func @main() -> () { "stablehlo.tanhh"() : () -> () \n return }').ok
    with pytest.raises(EmissionError, match="does not verify"):
        xla.compile_module(BAD_ADD)


def test_strict_verification_demands_pure_stablehlo() -> None:
    network, y = Tape.record(lambda t: t.input([0.5, 1.0]).erf())
    text = emit_network(network, [y])
    assert xla.verify(text).ok
    assert not xla.verify(text, strict=True).ok  # chlo.erf is not portable StableHLO
    network, y = Tape.record(lambda t: t.input([0.5, 1.0]).exp())
    assert xla.verify(emit_network(network, [y]), strict=True).ok


# --------------------------------------------------------------------------- compile and call


def test_compiled_modules_are_cached_by_text() -> None:
    network, y = Tape.record(lambda t: (t.input([1.0, 2.0, 3.0]) * 2.0).sum())
    text = emit_network(network, [y])
    assert xla.compile_module(text) is xla.compile_module(text)
    assert xla.compile_module(text + "\n") is not xla.compile_module(text)


def test_wrong_shape_element_or_count_raises_before_xla_sees_it() -> None:
    network, y = Tape.record(lambda t: t.input(np.ones((2, 3))).sum())
    module = xla.compile_module(emit_network(network, [y]))
    with pytest.raises(FeedError, match=r"float32\[2, 3\], got float32\[3, 2\]"):
        module(np.ones((3, 2), np.float32))  # same byte size: XLA alone would run it
    with pytest.raises(FeedError, match=r"got int32\[2, 3\]"):
        module(np.ones((2, 3), np.int32))
    with pytest.raises(FeedError, match="takes 1 arguments, got 2"):
        module(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
    assert isinstance(FeedError("x"), ToposError)


def test_f64_stays_f64_and_the_executable_checks_feeds_like_the_interpreter() -> None:
    network, (x, y) = Tape.record(lambda t: (lambda x: (x, (x * x).sum()))(t.input([1.0, 2.0])), element=f64)
    executable = xla.XlaExecutable.of_network(network, [y])
    run = executable.forward(network.parameters(), {x: [1.0 + 2.0**-40, 3.0]})
    assert run.of(y).numpy().dtype == np.float64
    assert run.of(y).scalar() == (1.0 + 2.0**-40) ** 2 + 9.0
    with pytest.raises(FeedError, match="recorded with shape"):
        executable.forward(network.parameters(), {x: [1.0, 2.0, 3.0]})
    with pytest.raises(DeclarationError):
        run.of(x)  # only the plan's results are readable
    with pytest.raises(BackwardTargetError):
        run.backward(y)


def test_the_executable_swaps_for_a_plan_in_a_training_loop() -> None:
    network, roots, named = mlp()
    plan = network.entry(roots).lower()
    executable = xla.XlaExecutable.of_plan(plan)
    parameters = network.parameters()
    feeds = {named["x"]: data((16, 6), 11)}
    for _ in range(3):
        here, there = plan.forward(parameters, feeds), executable.forward(parameters, feeds)
        for symbol in roots:
            # 6-term products, a 3-way log-softmax, 16-row sums at magnitudes <= 4: 1e-5 absolute.
            assert np.max(np.abs(here.of(symbol).numpy() - there.of(symbol).numpy())) <= 1e-5
        gradients = Parameters(parameters.lineage, parameters.symbols, tuple(there.of(g) for g in roots[1:]))
        parameters = parameters.step(gradients, lambda p, g: p - g * 0.1)


def test_selection_feeds_cross_as_row_indices() -> None:
    def build(t: Tape) -> tuple[Value, Value]:
        selection = t.input(Tensor.selection([0, 2, 2], 4))
        return selection, t.parameter(data((4, 3), 5)).gather(selection)

    network, (selection, rows) = Tape.record(build)
    executable = xla.XlaExecutable.of_network(network, [rows])
    assert xla.signature(executable.text).inputs[1] == ((3,), np.dtype(np.int32))
    fed = {selection: Tensor.selection([3, 1, 0], 4)}
    got = executable.forward(network.parameters(), fed).of(rows).numpy()
    want = network.forward(network.parameters(), fed).of(rows).numpy()
    assert got.tobytes() == want.tobytes()


# --------------------------------------------------------------------------- bad setups


def test_a_missing_xla_extra_says_how_to_install_it() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["jax"] = None  # an import of jax now fails as if it were not installed
        from topos import XlaUnavailableError
        from topos import xla
        assert not xla.available()
        try:
            xla.verify("func.func @main() -> () { return }")
        except XlaUnavailableError as error:
            print(error)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "pip install 'topos-autodiff[xla]'" in done.stdout


def test_more_devices_than_exist_raises() -> None:
    network, roots, named = mlp()
    count = xla.device_count()
    with pytest.raises(xla.XlaDeviceError, match=f"asked for {count + 1} XLA devices, this process has {count}"):
        xla.XlaExecutable.of_network(network, roots, devices=count + 1, split=[named["x"], named["labels"]])


def test_a_split_that_does_not_divide_the_batch_is_refused() -> None:
    network, roots, named = mlp(batch=6)
    with pytest.raises(EmissionError, match="cannot split axis 0 of %0 Input"):
        emit_network(network, roots, sharding=DataParallel(4, (named["x"],)))
    with pytest.raises(EmissionError, match="only inputs can be split"):
        emit_network(network, roots, sharding=DataParallel(2, (network.parameter_symbols()[0],)))


# --------------------------------------------------------------------------- many devices

_SHARDED = """
import sys
sys.path.insert(0, {tests!r})
import numpy as np
from topos import xla
import test_xla as m
network, roots, named = m.mlp(batch=16)
split = [named["x"], named["labels"]]
assert xla.device_count() == 8
single = xla.XlaExecutable.of_network(network, roots)
many = xla.XlaExecutable.of_network(network, roots, devices=8, split=split)
assert "sdy.sharding" in many.text and 'sdy.mesh @mesh = <["data"=8]>' in many.text
parameters = network.parameters()
feeds = {{named["x"]: m.data((16, 6), 21)}}
a = [t.numpy() for t in single(parameters, feeds)]
b = [t.numpy() for t in many(parameters, feeds)]
np.savez({out!r}, **{{f"s{{i}}": x for i, x in enumerate(a)}}, **{{f"m{{i}}": x for i, x in enumerate(b)}})
print(len(a))
"""


def test_data_parallel_across_eight_host_devices_matches_one_device(tmp_path: Path) -> None:
    out = tmp_path / "sharded.npz"
    script = _SHARDED.format(tests=str(Path(__file__).parent), out=str(out))
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env={**os.environ, **env}
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = np.load(out)
    count = int(done.stdout.strip())
    eps = float(np.finfo(np.float32).eps)
    for i in range(count):
        single, many = results[f"s{i}"].astype(np.float64), results[f"m{i}"].astype(np.float64)
        assert single.shape == many.shape
        # Only the order of the batch sums changes (8 partial sums of 2 rows, then an
        # all-reduce): 16 terms, |term| <= 4, so (16+1) eps 16*4 each side bounds the gap.
        assert np.max(np.abs(single - many)) <= 2 * 17 * eps * 64, i


def test_a_pure_module_takes_the_fast_export_road() -> None:
    # The fast road rebuilds a jax.export.Exported through two private fields; if jax moves
    # them, compile_module would quietly fall back to the slower device_put road. Fail loudly.
    network, y = Tape.record(lambda t: (t.input([1.0, 2.0]) * t.parameter([3.0, 4.0])).sum())
    text = emit_network(network, [y])
    assert "chlo." not in text
    before = list(xla.FAST_ROAD_FALLBACKS)
    compiled = xla.CompiledModule(text, 1)
    assert xla.FAST_ROAD_FALLBACKS == before, xla.FAST_ROAD_FALLBACKS[len(before) :]
    assert compiled.fast
    (out,) = compiled(np.array([3.0, 4.0], np.float32), np.array([1.0, 2.0], np.float32))
    assert out.view(np.uint32).tolist() == np.float32(11.0).reshape(()).view(np.uint32).tolist()


def test_a_broken_export_is_recorded_not_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    network, y = Tape.record(lambda t: (t.input([1.0, 2.0]) * 5.0).sum())
    text = emit_network(network, [y])

    def moved(*args: object, **kwargs: object) -> object:
        raise TypeError("Exported.__init__() got an unexpected keyword argument '_in_named_shardings'")

    monkeypatch.setattr(xla_module, "exported_module", moved)
    compiled = xla.CompiledModule(text, 1)
    assert not compiled.fast
    assert "_in_named_shardings" in xla.FAST_ROAD_FALLBACKS[-1]
    (out,) = compiled(np.array([1.0, 2.0], np.float32))
    assert out.tolist() == 15.0
