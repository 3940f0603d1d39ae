"""The benchmark workloads: each a recorded training step (loss and every parameter gradient)
with its batch, its parameters by name, and hand-written numpy of the same math where one
exists.

Peers (``benchmarks/peers.py``) read the parameters from here, so every system starts from
the very draws topos recorded. Data are fixed random batches drawn from one seed: the
figures measure the step, not a data pipeline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.run import (
    LENET_PARAMS,
    lenet_data,
    lenet_numpy,
    lenet_record,
    mlp_data,
    mlp_numpy,
    mlp_record,
)
from topos import Network, Symbol, Tape, Tensor, Value, f32
from topos.init import normal
from topos.nn import (
    Activation,
    Block,
    Embedding,
    LayerNorm,
    Linear,
    Mlp,
    MultiHeadAttention,
    PositionTable,
    TransformerLm,
    causal_mask,
    cross_entropy,
    named_parameters,
)
from topos.stages.gradient import Adjoints

Array = np.ndarray[Any, Any]

#: Workload keys in table order (``--only`` takes these).
KEYS = ("mlp", "lenet", "wide", "gpt", "makemore")


@dataclass(frozen=True)
class Workload:
    """One training step, recorded; ``names`` are the parameters in gradient order."""

    key: str
    title: str
    network: Network
    adjoints: Adjoints
    names: tuple[str, ...]
    params: dict[str, Array]
    data: dict[str, Array]
    numpy_step: Callable[[], list[Array]] | None
    flops: float | None = None

    def roots(self) -> tuple[Symbol, ...]:
        return self.adjoints.roots()


def _parameters(network: Network, adjoints: Adjoints, names: tuple[str, ...]) -> dict[str, Array]:
    values = network.parameters()
    return {name: values.of(symbol).numpy().copy() for name, symbol in zip(names, adjoints.wrt, strict=True)}


def _differentiated(record: Callable[[], tuple[Network, dict[str, Any]]]) -> tuple[Network, Adjoints]:
    network, symbols = record()
    from topos.stages.gradient import gradient

    longer, adjoints = gradient(network, symbols["loss"], symbols["params"])
    return longer, adjoints


def mlp(rng: np.random.Generator) -> Workload:
    d = mlp_data(rng)
    network, adjoints = _differentiated(lambda: mlp_record(d))
    names = ("w1", "b1", "w2", "b2")
    data = {"x": d["x"], "labels": d["y"].argmax(1)}
    return Workload("mlp", "MLP 784-256-10 b64", network, adjoints, names, _parameters(network, adjoints, names), data, mlp_numpy(d))


def lenet(rng: np.random.Generator) -> Workload:
    d = lenet_data(rng)
    network, adjoints = _differentiated(lambda: lenet_record(d))
    data = {"x": d["x"], "labels": d["y"].argmax(1)}
    return Workload(
        "lenet", "LeNet 28x28 b64", network, adjoints, LENET_PARAMS, _parameters(network, adjoints, LENET_PARAMS), data, lenet_numpy(d)
    )


# --------------------------------------------------------------------------- wide layers

WIDE = (1024, 2048, 512)
WIDE_BATCH = 1024


def wide_flops(batch: int = WIDE_BATCH) -> float:
    """Multiply-adds of the step's matmuls, twice: both layers forward, both weight
    gradients, and the hidden layer's input gradient (the data's gradient is not taken)."""
    a, b, c = WIDE
    forward = batch * (a * b + b * c)
    return 2.0 * (2 * forward + batch * b * c)


def wide(rng: np.random.Generator) -> Workload:
    a, b, c = WIDE
    n = WIDE_BATCH
    x = rng.standard_normal((n, a)).astype(np.float32)
    labels = rng.integers(0, c, n)
    y = np.eye(c, dtype=np.float32)[labels]
    init = {
        "w1": (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), "b1": np.zeros(b, np.float32),
        "w2": (rng.standard_normal((b, c)) / np.sqrt(b)).astype(np.float32), "b2": np.zeros(c, np.float32),
    }  # fmt: skip
    names = ("w1", "b1", "w2", "b2")

    def build(t: Tape) -> Adjoints:
        xs, ys = t.input(x), t.input(y)
        w1, b1, w2, b2 = (t.parameter(init[k]) for k in names)
        hidden = (xs.matmul(w1) + b1.broadcast_along(0, n)).relu()
        logits = hidden.matmul(w2) + b2.broadcast_along(0, n)
        loss = -(logits.log_softmax(1) * ys).sum() * (1.0 / n)
        return t.differentiate(loss, [w1, b1, w2, b2])

    network, adjoints = Tape.record(build, element=f32)
    params = _parameters(network, adjoints, names)

    def step() -> list[Array]:
        w1, b1, w2, b2 = (params[k] for k in names)
        pre = x @ w1 + b1
        h = np.maximum(pre, 0)
        logits = h @ w2 + b2
        shifted = logits - logits.max(1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        loss = -(logp * y).sum() / n
        g = (np.exp(logp) - y) / n
        g_w2, g_b2 = h.T @ g, g.sum(0)
        g = (g @ w2.T) * (pre > 0)
        return [np.asarray(loss), x.T @ g, g.sum(0), g_w2, g_b2]

    return Workload(
        "wide", f"wide {a}-{b}-{c} b{n}", network, adjoints, names, params, {"x": x, "labels": labels}, step, wide_flops()
    )


# --------------------------------------------------------------------------- small GPT

VOCAB, CONTEXT, LAYERS, DIM, HEADS, GPT_BATCH = 65, 64, 4, 128, 4, 16
#: Added to the scores a query may not see; exp of it is exactly 0 in f32.
CLOSED = -1e9


def gpt(rng: np.random.Generator) -> Workload:
    """``topos.nn.TransformerLm``: learned positions, pre-norm blocks with fused QKV and a
    tanh-GELU MLP four times as wide, a final LayerNorm, the head tied to the embedding."""
    ids = rng.integers(0, VOCAB, (GPT_BATCH, CONTEXT + 1))
    tokens, targets = ids[:, :-1].reshape(-1), ids[:, 1:].reshape(-1)

    def build(t: Tape) -> tuple[Adjoints, tuple[str, ...]]:
        init = normal(3, 0.02)
        blocks = [
            Block(
                LayerNorm.init(t, DIM, 1e-5),
                MultiHeadAttention.init(t, DIM, HEADS, init),
                LayerNorm.init(t, DIM, 1e-5),
                Mlp(t, [DIM, 4 * DIM, DIM], Activation.GELU_TANH, init),
            )
            for _ in range(LAYERS)
        ]
        lm = TransformerLm(Embedding.init(t, VOCAB, DIM, init), PositionTable.init(t, CONTEXT, DIM, init), blocks, LayerNorm.init(t, DIM, 1e-5))
        positions = t.input(Tensor.selection(np.arange(CONTEXT), CONTEXT))
        logits = lm(t.input(Tensor.selection(tokens, VOCAB)), GPT_BATCH, t.leaf(causal_mask(CONTEXT, CLOSED)), positions)
        loss = cross_entropy(logits, t.input(Tensor.selection(targets, VOCAB)))
        named = named_parameters(lm)
        return t.differentiate(loss, [symbol for _, symbol in named]), tuple(str(path) for path, _ in named)

    network, (adjoints, names) = Tape.record(build, element=f32)
    data = {"tokens": tokens, "labels": targets}
    title = f"GPT v{VOCAB} ctx{CONTEXT} L{LAYERS} d{DIM} h{HEADS} b{GPT_BATCH}"
    return Workload("gpt", title, network, adjoints, names, _parameters(network, adjoints, names), data, None)


# --------------------------------------------------------------------------- makemore MLP

MM_VOCAB, MM_CONTEXT, MM_DIM, MM_HIDDEN, MM_BATCH = 27, 3, 10, 200, 32


def makemore(rng: np.random.Generator) -> Workload:
    """examples/makemore's character MLP (Bengio et al. 2003) at its lesson's sizes."""
    contexts = rng.integers(0, MM_VOCAB, (MM_BATCH, MM_CONTEXT))
    labels = rng.integers(0, MM_VOCAB, MM_BATCH)
    width = MM_CONTEXT * MM_DIM

    def build(t: Tape) -> Adjoints:
        init = normal(7, 0.1)
        embedding = Embedding.init(t, MM_VOCAB, MM_DIM, init)
        hidden, head = Linear.init(t, width, MM_HIDDEN, init), Linear.init(t, MM_HIDDEN, MM_VOCAB, init)
        rows = embedding(t.input(Tensor.selection(contexts.reshape(-1), MM_VOCAB))).reshape((MM_BATCH, width))
        logits: Value = head(Activation.TANH(hidden(rows)))
        loss = cross_entropy(logits, t.input(Tensor.selection(labels, MM_VOCAB)))
        assert hidden.bias is not None and head.bias is not None
        return t.differentiate(loss, [embedding.table, hidden.weights, hidden.bias, head.weights, head.bias])

    network, adjoints = Tape.record(build, element=f32)
    names = ("table", "w1", "b1", "w2", "b2")
    params = _parameters(network, adjoints, names)
    one_hot = np.eye(MM_VOCAB, dtype=np.float32)[labels]

    def step() -> list[Array]:
        table, w1, b1, w2, b2 = (params[k] for k in names)
        rows = table[contexts].reshape(MM_BATCH, width)
        h = np.tanh(rows @ w1 + b1)
        logits = h @ w2 + b2
        shifted = logits - logits.max(1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        loss = -(logp * one_hot).sum() / MM_BATCH
        g = (np.exp(logp) - one_hot) / MM_BATCH
        g_w2, g_b2 = h.T @ g, g.sum(0)
        g = (g @ w2.T) * (1 - h * h)
        g_w1, g_b1 = rows.T @ g, g.sum(0)
        g_table = np.zeros_like(table)
        np.add.at(g_table, contexts.reshape(-1), (g @ w1.T).reshape(-1, MM_DIM))
        return [np.asarray(loss), g_table, g_w1, g_b1, g_w2, g_b2]

    data = {"contexts": contexts, "labels": labels}
    return Workload("makemore", "makemore MLP b32", network, adjoints, names, params, data, step)


BUILDERS: dict[str, Callable[[np.random.Generator], Workload]] = {
    "mlp": mlp, "lenet": lenet, "wide": wide, "gpt": gpt, "makemore": makemore,
}  # fmt: skip


def workload(key: str) -> Workload:
    """The workload ``key``, drawn from its own seed (the same in every process)."""
    return BUILDERS[key](np.random.default_rng(KEYS.index(key)))
