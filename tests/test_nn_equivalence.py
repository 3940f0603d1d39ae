"""A facade and the hand-rolled recording of the same formula are the same spec.

Each case records a model twice, once through the facades and once spelled out with
``Value`` methods, and demands byte-identical ``describe`` text; the training case also
demands bit-identical parameter tables after every Adam step (exact road: the interpreter
and engine backward, compared through ``Tensor.bits``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from topos import Parameters, Symbol, Tape, Tensor, Value, f32, f64
from topos.init import normal, xavier
from topos.nn import (
    Activation,
    BatchNorm,
    Conv2d,
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    MaxPool,
    Mlp,
    RmsNorm,
    Sequential,
    cross_entropy,
    mse,
    scaled_dot_product,
)
from topos.optim import Adam

Build = Callable[[Tape], Value]


def same_text(facade: Build, by_hand: Build, element: Any = f32) -> None:
    a, _ = Tape.record(facade, element=element)
    b, _ = Tape.record(by_hand, element=element)
    assert a.describe() == b.describe()


G = np.random.default_rng(0)
W, B, X = G.normal(size=(4, 3)), G.normal(size=(3,)), G.normal(size=(5, 4))


def test_linear() -> None:
    def facade(t: Tape) -> Value:
        return Linear(t, W, B)(t.input(X))

    def by_hand(t: Tape) -> Value:
        w, b = t.parameter(W), t.parameter(B)
        x = t.input(X)
        return x.matmul(w) + b.broadcast_along(0, 5)

    same_text(facade, by_hand)


def test_mlp_and_sequential() -> None:
    def facade(t: Tape) -> Value:
        return Mlp(t, [4, 6, 3], Activation.GELU, xavier(1))(t.input(X))

    def sequential(t: Tape) -> Value:
        init = xavier(1)
        return Sequential(Linear.init(t, 4, 6, init), Activation.GELU, Linear.init(t, 6, 3, init))(t.input(X))

    def by_hand(t: Tape) -> Value:
        w0, b0, w1, b1 = (t.parameter(np.zeros(s)) for s in [(4, 6), (6,), (6, 3), (3,)])
        x = t.input(X)
        h = (x.matmul(w0) + b0.broadcast_along(0, 5)).gelu()
        return h.matmul(w1) + b1.broadcast_along(0, 5)

    same_text(facade, by_hand)
    same_text(sequential, by_hand)


def test_norms() -> None:
    def layer_norm(t: Tape) -> Value:
        return LayerNorm(t, np.ones(4), np.zeros(4), 1e-5)(t.input(X))

    def layer_norm_by_hand(t: Tape) -> Value:
        s, h, x = t.parameter(np.ones(4)), t.parameter(np.zeros(4)), t.input(X)
        mean = x.mean_along(1)
        c = x - mean.broadcast_along(1, 4)
        var = (c * c).mean_along(1)
        return c / (var + 1e-5).sqrt().broadcast_along(1, 4) * s.broadcast_along(0, 5) + h.broadcast_along(0, 5)

    def rms(t: Tape) -> Value:
        return RmsNorm(t, np.ones(4), 1e-6)(t.input(X))

    def rms_by_hand(t: Tape) -> Value:
        s, x = t.parameter(np.ones(4)), t.input(X)
        root = ((x * x).mean_along(1) + 1e-6).sqrt()
        return x / root.broadcast_along(1, 4) * s.broadcast_along(0, 5)

    def batch(t: Tape) -> Value:
        return BatchNorm(t, np.ones(4), np.zeros(4), 1e-5)(t.input(X))

    def batch_by_hand(t: Tape) -> Value:
        s, h, x = t.parameter(np.ones(4)), t.parameter(np.zeros(4)), t.input(X)
        mean = x.mean_along(0)
        c = x - mean.broadcast_along(0, 5)
        var = (c * c).mean_along(0)
        return c / (var + 1e-5).sqrt().broadcast_along(0, 5) * s.broadcast_along(0, 5) + h.broadcast_along(0, 5)

    same_text(layer_norm, layer_norm_by_hand)
    same_text(rms, rms_by_hand)
    same_text(batch, batch_by_hand)


def test_dropout_embedding_attention_losses() -> None:
    table = G.normal(size=(7, 4))
    targets = Tensor.selection([1, 0, 2, 1, 0], 3)

    def facade(t: Tape) -> Value:
        embed = Embedding(t, table)
        rows = embed(t.input(Tensor.selection([0, 3, 6, 1, 2], 7)))
        rows = Dropout(t, (5, 4))(rows)
        attended = scaled_dot_product(rows, rows, rows, None, t.leaf(0.5))
        logits = Linear(t, W, B)(attended)
        return cross_entropy(logits, t.input(targets)) + mse(logits, logits)

    def by_hand(t: Tape) -> Value:
        tab = t.parameter(table)
        rows = tab.gather(t.input(Tensor.selection([0, 3, 6, 1, 2], 7)))
        rows = rows * t.input(Tensor.ones((5, 4)))
        scale = t.leaf(0.5)
        attended = (rows.matmul(rows.transpose()) * scale.broadcast((5, 5))).softmax(1).matmul(rows)
        w, b = t.parameter(W), t.parameter(B)
        logits = attended.matmul(w) + b.broadcast_along(0, 5)
        y = t.input(targets)
        mass = y.sum_along(1)
        total = (mass * logits.logsumexp(1)).sum() - (y * logits).sum()
        ignored = (-mass.abs()).step(0.0).sum()  # all-zero target rows are ignored targets
        ce = total / (t.constant((), 5.0) - ignored)
        d = logits - logits
        return ce + (d * d).sum() / t.constant((), 15.0)

    same_text(facade, by_hand)


def test_conv_and_pool() -> None:
    kernel = G.normal(size=(2, 3, 2, 2))
    image = G.normal(size=(1, 3, 5, 5))

    def facade(t: Tape) -> Value:
        return MaxPool(2)(Conv2d(t, kernel, np.zeros(2), stride=1, padding=1)(t.input(image)))

    def by_hand(t: Tape) -> Value:
        k, b, x = t.parameter(kernel), t.parameter(np.zeros(2)), t.input(image)
        windows = x.pad(2, 1, 7).pad(3, 1, 7).unfold(2, 2, 1).unfold(4, 2, 1)
        patches = windows.permute((0, 2, 4, 1, 3, 5)).reshape((36, 12))
        y = patches.matmul(k.reshape((2, 12)).transpose()) + b.broadcast_along(0, 36)
        y = y.reshape((1, 6, 6, 2)).permute((0, 3, 1, 2))
        lanes = y.unfold(2, 2, 2).unfold(4, 2, 2).permute((0, 1, 2, 4, 3, 5)).reshape((1, 2, 3, 3, 4))
        running = lanes.narrow(4, 0, 1)
        for lane in range(1, 4):
            running = running.maximum(lanes.narrow(4, lane, 1))
        return running.reshape((1, 2, 3, 3))

    same_text(facade, by_hand)


# ----------------------------------------------------------------------------- trajectories
VOCAB, CONTEXT, DIM, HIDDEN, BATCH = 11, 3, 4, 8, 6


def _draws() -> dict[str, Any]:
    init = normal(seed=5, deviation=0.3, element=f64)
    return {
        "table": init((VOCAB, DIM)),
        "w1": init((CONTEXT * DIM, HIDDEN)),
        "b1": init((HIDDEN,)),
        "w2": init((HIDDEN, VOCAB)),
        "b2": init((VOCAB,)),
    }


def _facade(t: Tape) -> tuple[Value, Value, Value]:
    d = _draws()
    embed = Embedding(t, d["table"])
    model = Sequential(Linear(t, d["w1"], d["b1"]), Activation.TANH, Linear(t, d["w2"], d["b2"]))
    tokens = t.input(Tensor.selection([0] * (BATCH * CONTEXT), VOCAB, f64))
    targets = t.input(Tensor.selection([0] * BATCH, VOCAB, f64))
    logits = model(embed(tokens).reshape((BATCH, CONTEXT * DIM)))
    return cross_entropy(logits, targets), tokens, targets


def _by_hand(t: Tape) -> tuple[Value, Value, Value]:
    d = _draws()
    table = t.parameter(d["table"])
    w1, b1, w2, b2 = (t.parameter(d[k]) for k in ("w1", "b1", "w2", "b2"))
    tokens = t.input(Tensor.selection([0] * (BATCH * CONTEXT), VOCAB, f64))
    targets = t.input(Tensor.selection([0] * BATCH, VOCAB, f64))
    x = table.gather(tokens).reshape((BATCH, CONTEXT * DIM))
    h = (x.matmul(w1) + b1.broadcast_along(0, BATCH)).tanh()
    logits = h.matmul(w2) + b2.broadcast_along(0, BATCH)
    mass = targets.sum_along(1)
    total = (mass * logits.logsumexp(1)).sum() - (targets * logits).sum()
    ignored = (-mass.abs()).step(0.0).sum()  # all-zero target rows are ignored targets
    ce = total / (t.constant((), float(BATCH)) - ignored)
    return ce, tokens, targets


def _train(build: Callable[[Tape], tuple[Value, Value, Value]], steps: int) -> list[Parameters]:
    network, (loss, tokens, targets) = Tape.record(build, element=f64)
    parameters = network.parameters()
    optimizer = Adam(learning_rate=0.05)
    state = optimizer.init(parameters)
    data = np.random.default_rng(7)
    history = [parameters]
    for _ in range(steps):
        feeds: dict[Symbol, Tensor] = {
            tokens: Tensor.selection(data.integers(0, VOCAB, BATCH * CONTEXT), VOCAB, f64),
            targets: Tensor.selection(data.integers(0, VOCAB, BATCH), VOCAB, f64),
        }
        gradients = network.forward(parameters, feeds).backward(loss).parameters(parameters)
        parameters, state = optimizer.update(gradients, state, parameters)
        history.append(parameters)
    return history


@pytest.mark.parametrize("steps", [6])
def test_training_trajectories_are_bit_identical(steps: int) -> None:
    a, _ = Tape.record(_facade, element=f64)
    b, _ = Tape.record(_by_hand, element=f64)
    assert a.describe() == b.describe()
    facade, by_hand = _train(_facade, steps), _train(_by_hand, steps)
    for left, right in zip(facade, by_hand, strict=True):
        for p, q in zip(left.payloads(), right.payloads(), strict=True):
            assert np.array_equal(p.bits(), q.bits())
    # The trajectory moved: the comparison is not between two frozen tables.
    assert not np.array_equal(facade[0].payloads()[0].bits(), facade[-1].payloads()[0].bits())
