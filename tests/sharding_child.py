"""One process with N host devices: a small GPT's training step, sharded, against one device.

Run as ``python tests/sharding_child.py POLICY[,POLICY] N STEPS`` with
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` (``tests/test_sharding.py`` does, under
a hard timeout). POLICY is ``fsdp`` (FSDP over ``Mesh({"data": N})``), ``tp`` (Megatron's
tensor parallelism over ``Mesh({"model": N})``) or ``fsdp_tp`` (both, over
``Mesh({"data": 2, "model": N // 2})``). It prints one JSON object: the largest differences
between the sharded and the one-device results, how many of them are bitwise equal, the
per-device bytes of the parameters and momenta the stated specs predict, read from the
arguments' shards and from the compiled executable, each parameter's argument position, and
the layout each parameter kept between steps.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from typing import Any

import numpy as np

from topos import Network, Symbol, Tape, Tensor, f32
from topos.init import normal
from topos.nn import (
    Activation,
    Block,
    Embedding,
    LayerNorm,
    Mlp,
    MultiHeadAttention,
    PositionTable,
    TransformerLm,
    causal_mask,
    cross_entropy,
    named_parameters,
)
from topos.stages.stablehlo import FullySharded, Mesh, TensorParallel
from topos.xla import XlaExecutable

VOCAB, CONTEXT, TABLE, LAYERS, DIM, HEADS, BATCH = 24, 8, 10, 2, 16, 2, 4
"""A GPT small enough for CI. Every parameter's first axis (24, 16, 48, 64) splits over 2, 4
and 8 devices except the position table's 10 rows, which split over 2 only: over 4 and 8 the
table and its momentum stay whole, the unsplittable remainder."""
TP_HEADS = 4
"""The tensor-parallel runs' model: four heads of 4 (whole heads over 2 and 4 model devices),
three projections rather than one fused ``qkv`` (so that query, key and value split by
heads), and one block: it holds every kind of split (a row-split output feeding a
column-split input through the residual), and a second would only double the compile time."""
RATE, MOMENTUM = 0.1, 0.9


@functools.cache
def gpt_step(fused: bool = True, layers: int = LAYERS, heads: int = HEADS) -> tuple[Network, list[Symbol], list[Symbol], list[Symbol], list[Symbol], TransformerLm]:
    """(network, roots, parameters, batch inputs, momenta, model): the loss, each gradient,
    each updated parameter and each updated momentum of SGD with momentum, carried in the step."""
    ids = np.random.default_rng(5).integers(0, VOCAB, (BATCH, CONTEXT + 1))

    def build(t: Tape) -> tuple[list[Any], list[Symbol], list[Any], list[Any], TransformerLm]:
        init = normal(3, 0.02, t.element)
        blocks = [
            Block(LayerNorm.init(t, DIM, 1e-5), MultiHeadAttention.init(t, DIM, heads, init, fused=fused), LayerNorm.init(t, DIM, 1e-5),
                  Mlp(t, [DIM, 4 * DIM, DIM], Activation.GELU_TANH, init))
            for _ in range(layers)
        ]  # fmt: skip
        lm = TransformerLm(Embedding.init(t, VOCAB, DIM, init), PositionTable.init(t, TABLE, DIM, init), blocks, LayerNorm.init(t, DIM, 1e-5))
        tokens = t.input(Tensor.selection(ids[:, :-1].reshape(-1), VOCAB))
        targets = t.input(Tensor.selection(ids[:, 1:].reshape(-1), VOCAB))
        positions = t.input(Tensor.selection(np.arange(CONTEXT), TABLE))
        loss = cross_entropy(lm(tokens, BATCH, t.leaf(causal_mask(CONTEXT, -1e9)), positions), targets)
        weights = [symbol for _, symbol in named_parameters(lm)]
        gradients = [t.resolve(g) for g in t.differentiate(loss, weights).gradients()]
        momenta = [t.input(np.zeros(t.resolve(w).shape.axes)) for w in weights]
        moved = [m * MOMENTUM + g for m, g in zip(momenta, gradients, strict=True)]
        updated = [t.resolve(w) - m * RATE for w, m in zip(weights, moved, strict=True)]
        return [loss, *gradients, *updated, *moved], weights, [tokens, targets], momenta, lm

    network, (roots, weights, batch, momenta, lm) = Tape.record(build, element=f32)
    return network, list(roots), list(weights), list(batch), list(momenta), lm


def policy_for(name: str, devices: int) -> tuple[Network, list[Symbol], list[Symbol], list[Symbol], list[Symbol], TransformerLm, FullySharded | TensorParallel]:
    """The step and the named policy over ``devices`` devices; every momentum, gradient,
    update and new momentum is split like its parameter."""
    network, roots, weights, batch, momenta, lm = gpt_step(*_model(name))
    count = len(weights)
    if name == "fsdp":
        return network, roots, weights, batch, momenta, lm, FullySharded(Mesh({"data": devices}), batch, state=momenta)
    followers = [*momenta, *roots[1 : 1 + 3 * count]]
    like = dict(zip(followers, weights * 4, strict=True))
    if name == "tp":
        return network, roots, weights, batch, momenta, lm, TensorParallel(Mesh({"model": devices}), lm.tensor_parallel(), like=like)
    mesh = Mesh({"data": 2, "model": devices // 2})
    tensor = TensorParallel(mesh, lm.tensor_parallel(), like=like)
    return network, roots, weights, batch, momenta, lm, FullySharded(mesh, batch, state=momenta, tensor=tensor)


def _model(name: str) -> tuple[bool, int, int]:
    """(fused, layers, heads) of the model policy ``name`` runs: the FSDP proof's, or :data:`TP_HEADS`'."""
    return (True, LAYERS, HEADS) if name == "fsdp" else (False, 1, TP_HEADS)


@functools.cache
def one_device(fused: bool, layers: int, heads: int) -> XlaExecutable:
    """The one-device step, compiled once per model for every policy this process runs."""
    network, roots, *_ = gpt_step(fused, layers, heads)
    return XlaExecutable.of_network(network, roots)


def main(name: str, devices: int, steps: int) -> dict[str, Any]:
    network, roots, weights, batch, momenta, lm, policy = policy_for(name, devices)
    one = one_device(*_model(name))
    many = XlaExecutable.of_network(network, roots, sharding=policy)
    arrays = many.arrays(network.parameters(), {})
    count = len(weights)
    carried = [many.position_of(s) for s in (*weights, *momenta)]  # where each update goes back
    held = [p for p in carried if p is not None]
    assert len(held) == 2 * count, carried
    expected = [np.asarray(o) for o in one.compiled.run(arrays)]
    got = [np.asarray(o) for o in many.compiled.run(arrays)]
    diffs = [float(np.max(np.abs(a - b))) if a.size else 0.0 for a, b in zip(got, expected, strict=True)]
    scale = [float(np.max(np.abs(b))) if b.size else 0.0 for b in expected]
    bitwise = [bool(np.array_equal(a.view(np.uint32), b.view(np.uint32))) for a, b in zip(got, expected, strict=True)]
    # Steps: parameters and momenta stay on the devices, sharded, and are fed back as they are.
    state_one, state_many = one.compiled.to_device(arrays), many.compiled.to_device(arrays)
    wanted = many.compiled.shardings[0]
    layouts: list[str] = []
    for _ in range(steps):
        out_one, out_many = one.compiled.on_device(state_one), many.compiled.on_device(state_many)
        updated = out_many[1 + count :]
        layouts = [str(getattr(a.sharding, "spec", type(a.sharding).__name__)) for a in updated]
        assert all(a.sharding.is_equivalent_to(wanted[p], a.ndim) for a, p in zip(updated, held, strict=True))
        for k, p in enumerate(held):
            state_one[p], state_many[p] = out_one[1 + count + k], updated[k]
    final = max(float(np.max(np.abs(np.asarray(state_many[p]) - np.asarray(state_one[p])))) for p in held)
    # Bytes one device holds of parameters and momenta: the specs', the shards' and the compiled module's.
    nodes = network.nodes_
    stated = policy.stated(network, [i for i, n in enumerate(nodes) if n.name in ("Parameter", "Input")], [network.index(r) for r in roots])
    specs = {many.position_of(s): split for s, split in stated.arguments}
    pieces = {p: math.prod(policy.mesh.size(axes) for axes in specs.get(p, ())) for p in held}
    predicted = sum(arrays[p].nbytes // pieces[p] for p in held)
    shard_shapes = all(
        wanted[p].shard_shape(arrays[p].shape) == tuple(n // policy.mesh.size(a) for n, a in zip(arrays[p].shape, specs.get(p, ((),) * arrays[p].ndim), strict=True))
        for p in held
    )
    total = sum(arrays[p].nbytes for p in held)
    whole = sum(arrays[p].nbytes for p in held if pieces[p] == 1)
    devices_ = many.compiled.executable.local_devices()
    shards = [sum(s.data.nbytes for p in held for s in state_many[p].addressable_shards if s.device == d) for d in devices_]
    split_feeds = {many.position_of(s): policy.mesh.size(("data",)) if "data" in dict(policy.mesh.axes) else 1 for s in batch}
    feeds = sum(a.nbytes // split_feeds.get(p, 1) for p, a in enumerate(arrays) if p not in held)
    stats = many.compiled.executable.get_compiled_memory_stats()
    return {
        "policy": name, "devices": devices, "loss": float(expected[0]), "diffs": diffs, "scale": scale, "bitwise": bitwise,
        "after_steps": final, "layouts": layouts, "total": total, "unsplit": whole, "predicted": predicted,
        "shard_shapes": shard_shapes, "shards": shards, "argument_bytes": int(stats.argument_size_in_bytes),
        "feed_bytes_per_device": feeds, "text": many.text,
        "positions": {str(path): many.position_of(s) for path, s in named_parameters(lm)},
    }  # fmt: skip


if __name__ == "__main__":
    # POLICY may name several, comma-separated, run in this one process (one compile of the
    # one-device step, one start of jax): one JSON object per line.
    for policy in sys.argv[1].split(","):
        print(json.dumps(main(policy, int(sys.argv[2]), int(sys.argv[3]))), flush=True)
