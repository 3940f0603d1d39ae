"""Sharded modules: meshes, the FSDP and tensor-parallel policies, stated shardings, and their
proofs on host devices.

- The emitted attributes (``sdy.mesh``, ``sdy.sharding`` on ``@main``'s arguments and results,
  ``sdy.sharding_constraint`` for the gathered parameters) parse and verify with jaxlib's MLIR
  bindings, and one small case is pinned byte for byte in ``tests/golden/sharded/``
  (regenerate with ``python tests/test_sharding.py --write`` and review the diff).
- What cannot split is said: a stated split that does not divide is refused naming the
  symbol; the FSDP policy replicates a parameter whose first axis does not divide.
- The proof (``tests/sharding_child.py`` in a subprocess with N host devices, under a hard
  timeout): one training step of a small GPT (SGD with momentum carried in the step) under
  FSDP on 2 and 4 devices (8 with ``-m sharding_8`` or ``TOPOS_SHARDING_8=1``) gives every
  result of the one-device XLA run within :data:`ENVELOPE` eps32 of that result's largest
  magnitude; parameters and momenta stay sharded across steps; one device holds exactly
  1/N of the split tables plus the unsplittable remainder, read from the arguments' shards,
  and within 1% of that from the compiled executable's memory statistics.
- Tensor parallelism (Megatron, ``TensorParallel`` with ``TransformerLm.tensor_parallel()``)
  on 2 and 4 devices, and FSDP with it on a 2x2 mesh: the same envelope against one device,
  the split parameters' ``sdy.sharding`` attributes read from the emitted text, per-device
  bytes exactly what the specs predict; a TP-sharded block pinned in ``tests/golden/sharded/``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from topos import EmissionError, Tape, Tensor, f32
from topos.init import normal
from topos.ir.graph import ancestors, module_arguments
from topos.nn import (
    Activation,
    Block,
    LayerNorm,
    Mlp,
    MultiHeadAttention,
    SwiGlu,
    mse,
    named_parameters,
)
from topos.stages.emission import DataParallel, emission, emit_network
from topos.stages.stablehlo import FullySharded, Mesh, Sharded, TensorParallel, spec
from topos.xla import XlaDeviceError, XlaExecutable, verify

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden" / "sharded" / "mlp_fsdp2.stablehlo.mlir"
GOLDEN_TP = HERE / "golden" / "sharded" / "block_tp2.stablehlo.mlir"
ENVELOPE = 8.0
"""Each result of the sharded step is within ENVELOPE · eps32 · max|one-device result| of the
one-device XLA result (observed at most 2.2 for FSDP on 2, 4 and 8 devices, 5.1 for tensor
parallelism on 2 and 4, 4.8 for both on 2x2): the partitioner sums per-device partial
products and gradients in another order than one device does (a row-split product is a sum
of per-device partial sums, all-reduced)."""
ZERO = 1e-9
"""A result whose one-device magnitude is below ZERO is zero in exact arithmetic (the key
biases' gradients and momenta: softmax ignores a shift shared by a query's scores) and is
rounding noise (about 2e-12) on every layout; it must stay below ZERO, not within a relative
envelope of noise."""
TIMEOUT_S = 180
"""Hard limit per child process (each takes 15-40 s on two free cores; a loaded machine
doubles that); a hung child fails the test instead of hanging it."""


def _affine() -> tuple[Any, list[Any], Any, Any, Any]:
    def build(t: Tape) -> tuple[list[Any], Any, Any, Any]:
        w, b = t.parameter(np.linspace(-1, 1, 12).reshape(4, 3)), t.parameter([0.5, 0.25, 0.125])
        x = t.input(np.linspace(0, 1, 32).reshape(8, 4))
        loss = (x.matmul(w) + b.broadcast_along(0, 8)).tanh().sum()
        g = [t.resolve(v) for v in t.differentiate(loss, [w, b]).gradients()]
        return [loss, *g, w - g[0] * 0.5], w, b, x

    network, (roots, w, b, x) = Tape.record(build)
    return network, list(roots), w, b, x


def _mlp_plan() -> Any:
    sys.path.insert(0, str(HERE))
    from golden_cases import mlp

    recorded = mlp()
    return recorded, recorded.network.entry(recorded.roots).lower()


def _golden_text() -> str:
    recorded, plan = _mlp_plan()
    network = recorded.network
    batch = [network.symbol(i) for i, node in enumerate(network.nodes_) if node.name == "Input"]
    return emission(plan, sharding=FullySharded(Mesh({"data": 2}), batch))


def test_fsdp_splits_parameters_gathers_them_and_splits_their_results() -> None:
    network, roots, _, _, x = _affine()
    text = emit_network(network, roots, sharding=FullySharded(Mesh({"data": 2}), (x,)))
    assert verify(text).ok, verify(text).diagnostics
    head = text.splitlines()
    assert head[1] == '  sdy.mesh @mesh = <["data"=2]>'
    split, whole = '{sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}', "{sdy.sharding = #sdy.sharding<@mesh, [{}]>}"
    assert f"%arg0: tensor<4x3xf32> {split}" in head[2]  # w: 4 rows over 2 devices
    assert f"%arg1: tensor<3xf32> {whole}" in head[2]  # b: 3 rows do not split in 2, replicated
    assert f"%arg2: tensor<8x4xf32> {split}" in head[2]  # the batch
    outcomes = head[2].split(" -> ")[1]
    assert outcomes.count(split) == 2 and "tensor<3xf32>," in outcomes  # dw and w' split, db left
    assert head[3].strip() == "%arg0_whole = sdy.sharding_constraint %arg0 <@mesh, [{}, {}]> : tensor<4x3xf32>"
    assert "%arg0," not in text.split("\n", 4)[4] and "%arg0 " not in text.split("\n", 4)[4]  # read whole only


def test_a_stated_sharding_over_two_axes_verifies() -> None:
    network, roots, w, _, x = _affine()
    mesh = Mesh({"data": 2, "model": 3})
    stated = Sharded(mesh, {x: spec("data", None), w: spec(None, "model")}, {roots[1]: spec(None, "model")})
    text = emit_network(network, roots, sharding=stated)
    assert verify(text).ok and '<["data"=2, "model"=3]>' in text and "num_partitions = 6" in text
    assert '%arg0: tensor<4x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}' in text


@pytest.mark.parametrize(
    ("stated", "words"),
    [
        (lambda w, b, x, r: Sharded(Mesh({"data": 2}), {b: spec("data")}), "cannot split axis 0"),
        (lambda w, b, x, r: Sharded(Mesh({"data": 2}), {w: spec("model", None)}), "distinct axes of the mesh"),
        (lambda w, b, x, r: Sharded(Mesh({"data": 2}), {w: spec("data")}), "one entry per axis"),
        (lambda w, b, x, r: Sharded(Mesh({"data": 2}), {}, {x: spec("data", None)}), "is not a result"),
        (lambda w, b, x, r: FullySharded(Mesh({"data": 2}), (x,), axis="model"), "not an axis"),
        (lambda w, b, x, r: FullySharded(Mesh({"data": 3}), (x,)), "cannot split axis 0"),
        (lambda w, b, x, r: DataParallel(3, (x,)), "evenly across 3 devices"),
    ],
)
def test_what_cannot_split_is_refused_naming_it(stated: Any, words: str) -> None:
    network, roots, w, b, x = _affine()
    with pytest.raises(EmissionError, match=words):
        emit_network(network, roots, sharding=stated(w, b, x, roots))


def test_a_mesh_needs_distinct_named_axes_of_positive_size() -> None:
    assert Mesh([("data", 2), ("model", 4)]).devices == 8
    for bad in ({}, {"data": 0}, {"two words": 2}, [("a", 2), ("a", 2)]):
        with pytest.raises(EmissionError, match="mesh"):
            Mesh(bad)


def test_data_parallel_reads_as_a_stated_sharding() -> None:
    network, roots, _, _, x = _affine()
    text = emit_network(network, roots, sharding=DataParallel(2, (x,)))
    assert verify(text).ok and "sharding_constraint" not in text
    assert text.count('[{"data"}, {}]') == 1 and text.count("[{}, {}]") == 1


def test_a_sharding_and_devices_are_not_both_given() -> None:
    network, roots, _, _, x = _affine()
    with pytest.raises(XlaDeviceError, match="not both"):
        XlaExecutable.of_network(network, roots, devices=2, sharding=FullySharded(Mesh({"data": 2}), (x,)))


def test_the_golden_sharded_module_is_what_this_checkout_writes() -> None:
    text = _golden_text()
    assert verify(text).ok, verify(text).diagnostics
    assert GOLDEN.read_text() == text, "regenerate with `python tests/test_sharding.py --write` and review the diff"


@functools.cache
def _child(policies: str, devices: int) -> tuple[dict[str, Any], ...]:
    """The child's findings for each comma-separated policy, from one process of ``devices``
    host devices (cached: the 4-device TP and FSDP+TP tests share one process)."""
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}", "TF_CPP_MIN_LOG_LEVEL": "3"}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(HERE / "sharding_child.py"), policies, str(devices), "3"],
        capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return tuple(json.loads(line) for line in done.stdout.strip().splitlines()[-len(policies.split(",")) :])


def _prove(found: dict[str, Any]) -> None:
    assert verify(found["text"]).ok
    eps = float(np.finfo(np.float32).eps)
    for k, (diff, scale) in enumerate(zip(found["diffs"], found["scale"], strict=True)):
        assert diff <= ENVELOPE * eps * scale or (scale < ZERO and diff < ZERO), (k, diff, scale)
    assert found["after_steps"] <= 1e-6  # three steps fed back on the devices
    assert found["shard_shapes"]  # every argument laid out as the stated spec says
    devices = found["devices"]
    assert found["shards"] == [found["predicted"]] * devices
    compiled = found["argument_bytes"] - found["feed_bytes_per_device"]
    assert abs(compiled - found["predicted"]) <= 0.01 * found["predicted"], (compiled, found["predicted"])


def _annotations(found: dict[str, Any]) -> dict[str, str]:
    """Each parameter path's ``sdy.sharding`` split, read from ``@main``'s signature."""
    head = next(line for line in found["text"].splitlines() if "func.func public @main" in line)
    splits = dict(re.findall(r"%arg(\d+): tensor<[^>]*> \{sdy.sharding = #sdy.sharding<@mesh, (\[[^>]*\])>\}", head))
    return {path: splits[str(position)] for path, position in found["positions"].items()}


def test_fsdp_step_matches_one_device_on_two() -> None:
    (found,) = _child("fsdp", 2)
    _prove(found)
    assert set(found["layouts"]) == {"P('data',)"}  # every first axis splits in two
    assert found["predicted"] == found["total"] // 2 == 28_544


def test_fsdp_step_matches_one_device_on_four() -> None:
    (found,) = _child("fsdp", 4)
    _prove(found)
    assert set(found["layouts"]) == {"P('data',)", "P()"}  # the position table stays whole
    assert found["predicted"] == (found["total"] - found["unsplit"]) // 4 + found["unsplit"] == 15_232


@pytest.mark.sharding_8
def test_fsdp_step_matches_one_device_on_eight(request: pytest.FixtureRequest) -> None:
    expression = str(request.config.getoption("-m") or "")
    chosen = "sharding_8" in expression and "not sharding_8" not in expression
    if not chosen and os.environ.get("TOPOS_SHARDING_8") != "1":
        pytest.skip("opt-in: run with -m sharding_8 or TOPOS_SHARDING_8=1 (8 host devices, about 40 s)")
    (found,) = _child("fsdp", 8)
    _prove(found)
    assert found["predicted"] == (found["total"] - found["unsplit"]) // 8 + found["unsplit"] == 8_256


TP_SPLITS = {
    "blocks.0.attention.query.weights": '[{}, {"model"}]', "blocks.0.attention.query.bias": '[{"model"}]',
    "blocks.0.attention.value.weights": '[{}, {"model"}]', "blocks.0.attention.output.weights": '[{"model"}, {}]',
    "blocks.0.attention.output.bias": "[{}]", "blocks.0.feed_forward.layers.0.weights": '[{}, {"model"}]',
    "blocks.0.feed_forward.layers.0.bias": '[{"model"}]', "blocks.0.feed_forward.layers.1.weights": '[{"model"}, {}]',
    "blocks.0.feed_forward.layers.1.bias": "[{}]", "embedding.weights": "[{}, {}]", "positions.weights": "[{}, {}]",
    "blocks.0.norm1.scale": "[{}]", "norm.shift": "[{}]",
}  # fmt: skip
"""Megatron's splits of the child's one-block GPT (4 heads of 4, MLP 16-64-16) over "model";
the row-split biases, norms, embedding and position table replicated."""


@pytest.mark.parametrize("devices", [2, 4])
@pytest.mark.xdist_group("sharding_tp")
def test_tensor_parallel_step_matches_one_device(devices: int) -> None:
    found = _child("tp", 2)[0] if devices == 2 else _child("tp,fsdp_tp", 4)[0]
    _prove(found)
    annotations = _annotations(found)
    assert {path: annotations[path] for path in TP_SPLITS} == TP_SPLITS
    assert "sharding_constraint" not in found["text"]  # split weights are read in place
    # Per device: the split 3,184 floats of parameter and momentum each over N, the
    # replicated 672 (embedding, positions, norms, row biases) whole: 18,112 and 11,744 bytes.
    assert found["unsplit"] == 2 * 4 * 672 and found["total"] == 2 * 4 * 3_856
    assert found["predicted"] == {2: 18_112, 4: 11_744}[devices]


@pytest.mark.xdist_group("sharding_tp")
def test_fsdp_with_tensor_parallel_on_a_two_by_two_mesh_matches_one_device() -> None:
    found = _child("tp,fsdp_tp", 4)[1]
    _prove(found)
    assert '<["data"=2, "model"=2]>' in found["text"]
    annotations = _annotations(found)
    assert annotations["blocks.0.attention.query.weights"] == '[{"data"}, {"model"}]'
    assert annotations["blocks.0.attention.output.weights"] == '[{"model", "data"}, {}]'  # model-major
    assert annotations["blocks.0.attention.query.bias"] == '[{"model", "data"}]'
    assert annotations["blocks.0.attention.output.bias"] == '[{"data"}]'
    assert annotations["embedding.weights"] == '[{"data"}, {}]'
    query, embedding = found["positions"]["blocks.0.attention.query.weights"], found["positions"]["embedding.weights"]
    # Gathered over data only: the query weights stay split over model where read.
    assert f'%arg{query}_whole = sdy.sharding_constraint %arg{query} <@mesh, [{{}}, {{"model"}}]>' in found["text"]
    assert f"%arg{embedding}_whole = sdy.sharding_constraint %arg{embedding} <@mesh, [{{}}, {{}}]>" in found["text"]
    # Every table splits over four (both axes) or two (data alone): 9,056 bytes per device.
    assert found["unsplit"] == 0 and found["predicted"] == 9_056


def _block(fused: bool = False, feed_forward: str = "swiglu", heads: int = 2) -> tuple[Any, list[Any], Block, list[Any]]:
    """A Block (width 4, three projections, SwiGLU 4-8-4 or an MLP 4-8-4) under mse: its
    network, the loss and each gradient, the block and its parameters."""

    def build(t: Tape) -> tuple[list[Any], Block, list[Any]]:
        init = normal(7, 0.3, t.element)
        forward = SwiGlu.init(t, 4, 8, init) if feed_forward == "swiglu" else Mlp(t, [4, 8, 4], Activation.GELU_TANH, init)
        block = Block(LayerNorm.init(t, 4, 1e-5), MultiHeadAttention.init(t, 4, heads, init, fused=fused), LayerNorm.init(t, 4, 1e-5), forward)
        x = t.input(Tensor(np.linspace(-1, 1, 12).reshape(1, 3, 4), f32))
        loss = mse(block(x), t.input(Tensor(np.linspace(1, -1, 12).reshape(1, 3, 4), f32)))
        weights = [symbol for _, symbol in named_parameters(block)]
        return [loss, *(t.resolve(g) for g in t.differentiate(loss, weights).gradients())], block, weights

    network, (roots, block, weights) = Tape.record(build, element=f32)
    return network, list(roots), block, list(weights)


def _tp_golden_text() -> str:
    network, roots, block, weights = _block()
    like = dict(zip(roots[1:], weights, strict=True))
    return emit_network(network, roots, sharding=TensorParallel(Mesh({"model": 2}), block.tensor_parallel(), like=like))


def _stated(network: Any, roots: list[Any], policy: Any) -> dict[str, Any]:
    arguments = module_arguments(network, [i for i, keep in enumerate(ancestors(network, [network.index(r) for r in roots])) if keep])
    stated = policy.stated(network, arguments, [network.index(r) for r in roots])
    return {"arguments": dict(stated.arguments), "results": dict(stated.results), "gathered": stated.gathered, "held": dict(stated.held)}


def test_the_golden_tensor_parallel_block_is_what_this_checkout_writes() -> None:
    text = _tp_golden_text()
    assert verify(text).ok, verify(text).diagnostics
    assert GOLDEN_TP.read_text() == text, "regenerate with `python tests/test_sharding.py --write` and review the diff"


def test_a_swiglu_block_splits_gate_and_up_by_columns_and_down_by_rows() -> None:
    network, roots, block, weights = _block()
    paths = {str(path): symbol for path, symbol in named_parameters(block)}
    splits = block.tensor_parallel()
    assert {path: splits.get(symbol) for path, symbol in paths.items()} == {
        "norm1.scale": None, "norm1.shift": None, "norm2.scale": None, "norm2.shift": None,
        "attention.query.weights": (1, 2), "attention.query.bias": (0, 2), "attention.key.weights": (1, 2),
        "attention.key.bias": (0, 2), "attention.value.weights": (1, 2), "attention.value.bias": (0, 2),
        "attention.output.weights": (0, 2), "attention.output.bias": None,
        "feed_forward.gate.weights": (1, 1), "feed_forward.up.weights": (1, 1), "feed_forward.down.weights": (0, 1),
    }  # fmt: skip
    like = dict(zip(roots[1:], weights, strict=True))
    stated = _stated(network, roots, TensorParallel(Mesh({"model": 2}), splits, like=like))
    assert stated["arguments"][paths["feed_forward.gate.weights"]] == ((), ("model",))
    assert stated["arguments"][paths["feed_forward.down.weights"]] == (("model",), ())
    assert stated["results"][roots[1 + weights.index(paths["attention.output.weights"])]] == (("model",), ())
    assert paths["norm1.scale"] not in stated["arguments"] and stated["gathered"] == ()


def test_what_does_not_cut_into_whole_heads_or_pieces_is_replicated() -> None:
    # Two heads over four model devices: no whole heads per device, so the attention is
    # replicated (never a head cut in two); the SwiGLU's hidden 8 still splits in four.
    network, roots, block, _ = _block()
    paths = {str(path): symbol for path, symbol in named_parameters(block)}
    stated = _stated(network, roots, TensorParallel(Mesh({"model": 4}), block.tensor_parallel()))
    assert not any(paths[f"attention.{name}.weights"] in stated["arguments"] for name in ("query", "key", "value", "output"))
    assert stated["arguments"][paths["feed_forward.up.weights"]] == ((), ("model",))
    assert stated["results"] == {}  # nothing follows a parameter without `like`
    # A fused projection's columns run query | key | value: no split is by heads, so only
    # the output is split.
    network, roots, block, _ = _block(fused=True, feed_forward="mlp")
    splits = block.tensor_parallel()
    paths = {str(path): symbol for path, symbol in named_parameters(block)}
    assert paths["attention.qkv.weights"] not in splits and splits[paths["attention.output.weights"]] == (0, 2)
    assert splits[paths["feed_forward.layers.0.weights"]] == (1, 1) and splits[paths["feed_forward.layers.1.weights"]] == (0, 1)


def test_fsdp_with_tensor_parallel_falls_back_to_the_model_split_where_the_pair_does_not_divide() -> None:
    # Over data 2 x model 4: the output's 4 rows split into whole heads over model but not
    # into 8 pieces, so it keeps the model split alone and is not gathered; the query's 4
    # rows split over data (its columns over model) and it is gathered over data only.
    network, roots, block, weights = _block(heads=4)
    mesh = Mesh({"data": 2, "model": 4})
    paths = {str(path): symbol for path, symbol in named_parameters(block)}
    tensor = TensorParallel(mesh, block.tensor_parallel(), like=dict(zip(roots[1:], weights, strict=True)))
    stated = _stated(network, roots, FullySharded(mesh, (), tensor=tensor))
    output, query, up = paths["attention.output.weights"], paths["attention.query.weights"], paths["feed_forward.up.weights"]
    assert stated["arguments"][output] == (("model",), ()) and output not in stated["gathered"]
    assert stated["arguments"][query] == (("data",), ("model",)) and stated["held"][query] == ((), ("model",))
    assert stated["arguments"][paths["feed_forward.down.weights"]] == (("model", "data"), ())
    assert stated["results"][roots[1 + weights.index(up)]] == stated["arguments"][up] == (("data",), ("model",))
    assert stated["arguments"][paths["norm1.scale"]] == (("data",),) and stated["held"].get(paths["norm1.scale"]) is None


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        (lambda s, b, r, w: TensorParallel(Mesh({"data": 2}), s), "tensor-parallel axis 'model' is not an axis"),
        (lambda s, b, r, w: TensorParallel(Mesh({"model": 2}), {w[0]: (1, 1)}), "names a parameter, one of its axes"),
        (lambda s, b, r, w: TensorParallel(Mesh({"model": 2}), {w[2]: (0, 0)}), "unit >= 1"),
        (lambda s, b, r, w: TensorParallel(Mesh({"model": 2}), s, like={r[1]: w[2]}), "cannot be split like"),
        (lambda s, b, r, w: FullySharded(Mesh({"data": 2}), (), tensor=TensorParallel(Mesh({"model": 2}), s)), "one mesh and two axes"),
        (lambda s, b, r, w: FullySharded(Mesh({"model": 2}), (), axis="model", tensor=TensorParallel(Mesh({"model": 2}), s)), "one mesh and two axes"),
    ],
)
def test_a_tensor_parallel_policy_that_cannot_hold_is_refused_naming_it(policy: Any, words: str) -> None:
    network, roots, block, weights = _block()
    with pytest.raises(EmissionError, match=words):
        emit_network(network, roots, sharding=policy(block.tensor_parallel(), block, roots, weights))


def test_the_sharding_page_runs_as_written() -> None:
    # docs/sharding.md's blocks build on each other: run them in order in one namespace.
    page = (HERE.parent / "docs" / "sharding.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert len(blocks) >= 2
    namespace: dict[str, object] = {}
    for number, block in enumerate(blocks):
        exec(compile(block, f"docs/sharding.md block {number}", "exec"), namespace)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_bytes(_golden_text().encode())
        GOLDEN_TP.write_bytes(_tp_golden_text().encode())
        print(f"wrote {GOLDEN} and {GOLDEN_TP}")
