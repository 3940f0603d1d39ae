"""One process with N host devices: a small GPT's training step under FSDP against one device.

Run as ``python tests/sharding_child.py N STEPS`` with
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` (``tests/test_sharding.py`` does, under
a hard timeout). It prints one JSON object: the largest differences between the sharded and
the one-device results, how many of them are bitwise equal, the per-device bytes of the
parameters read from the compiled executable and from the arguments' shards, and the layout
each parameter kept between steps.
"""

from __future__ import annotations

import json
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
from topos.stages.stablehlo import FullySharded, Mesh
from topos.xla import XlaExecutable

VOCAB, CONTEXT, TABLE, LAYERS, DIM, HEADS, BATCH = 24, 8, 10, 2, 16, 2, 4
"""A GPT small enough for CI. Every parameter's first axis (24, 16, 48, 64) splits over 2, 4
and 8 devices except the position table's 10 rows, which split over 2 only: over 4 and 8 the
table and its momentum stay whole, the unsplittable remainder."""
RATE, MOMENTUM = 0.1, 0.9


def gpt_step() -> tuple[Network, list[Symbol], list[Symbol], list[Symbol], list[Symbol]]:
    """(network, roots, parameters, batch inputs, momenta): the loss, each gradient, each
    updated parameter and each updated momentum of SGD with momentum, carried in the step."""
    ids = np.random.default_rng(5).integers(0, VOCAB, (BATCH, CONTEXT + 1))

    def build(t: Tape) -> tuple[list[Any], list[Symbol], list[Any], list[Any]]:
        init = normal(3, 0.02, t.element)
        blocks = [
            Block(LayerNorm.init(t, DIM, 1e-5), MultiHeadAttention.init(t, DIM, HEADS, init), LayerNorm.init(t, DIM, 1e-5),
                  Mlp(t, [DIM, 4 * DIM, DIM], Activation.GELU_TANH, init))
            for _ in range(LAYERS)
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
        return [loss, *gradients, *updated, *moved], weights, [tokens, targets], momenta

    network, (roots, weights, batch, momenta) = Tape.record(build, element=f32)
    return network, list(roots), list(weights), list(batch), list(momenta)


def main(devices: int, steps: int) -> dict[str, Any]:
    network, roots, weights, batch, momenta = gpt_step()
    policy = FullySharded(Mesh({"data": devices}), batch, state=momenta)
    one = XlaExecutable.of_network(network, roots)
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
    # Bytes one device holds of parameters and momenta: the compiled module's and the shards'.
    total = sum(arrays[p].nbytes for p in held)
    whole = sum(arrays[p].nbytes for p in held if arrays[p].shape[0] % devices)
    devices_ = many.compiled.executable.local_devices()
    shards = [sum(s.data.nbytes for p in held for s in state_many[p].addressable_shards if s.device == d) for d in devices_]
    split_feeds = {many.position_of(s) for s in batch}
    feeds = sum(a.nbytes // (devices if p in split_feeds else 1) for p, a in enumerate(arrays) if p not in held)
    stats = many.compiled.executable.get_compiled_memory_stats()
    return {
        "devices": devices, "loss": float(expected[0]), "diffs": diffs, "scale": scale, "bitwise": bitwise,
        "after_steps": final, "layouts": layouts, "total": total, "unsplit": whole, "shards": shards,
        "argument_bytes": int(stats.argument_size_in_bytes), "feed_bytes_per_device": feeds, "text": many.text,
    }  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]))))
