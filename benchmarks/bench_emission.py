"""Emission at scale: a GPT-2-124M training step written as StableHLO, topos beside jax.

Run: ``python benchmarks/bench_emission.py [--context T] [--batch B] [--layers L] [--repeats N]``.

The model is GPT-2 124M's shape (12 layers, d 768, 12 heads, vocab 50257, context 1024 by
default), recorded from the ``topos.nn`` facades that exist today: ``Embedding`` for tokens,
a learned position table, ``LayerNorm``, ``Linear`` over ``[B*T, D]``, the tanh GELU, and
batched multi-head causal attention written by hand with reshape/permute/matmul (the
facade ``scaled_dot_product`` takes one rank-2 head). The output projection is tied to the
token table; the loss is the mean cross-entropy; the step returns the loss and the gradient
of every parameter.

Measured in one process:
- topos: ``network.entry(roots).lower()`` (the plan) and ``emission(plan)`` (the text), each
  timed on its own; recording and differentiation are reported beside them;
- jax: ``jax.jit(jax.value_and_grad(loss)).lower(params, tokens, targets)`` (trace and
  lowering together, on abstract shapes) and ``.as_text()``.

Medians of ``repeats`` runs (one warm-up); sizes are the UTF-8 bytes of each module's text.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from topos import Network, Symbol, Tape, Tensor, Value, f32
from topos.nn import Embedding, LayerNorm, Linear, causal_mask, cross_entropy
from topos.stages.emission import emission

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Config:
    layers: int = 12
    dim: int = 768
    heads: int = 12
    vocab: int = 50257
    context: int = 1024
    batch: int = 1


def weights(c: Config, seed: int = 0) -> dict[str, Array]:
    """GPT-2's parameters by name, small random values (the emission does not read them)."""
    rng = np.random.default_rng(seed)

    def normal(*shape: int) -> Array:
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)

    w: dict[str, Array] = {"wte": normal(c.vocab, c.dim), "wpe": normal(c.context, c.dim)}
    for i in range(c.layers):
        p = f"h{i}."
        w[p + "ln1.g"], w[p + "ln1.b"] = np.ones(c.dim, np.float32), np.zeros(c.dim, np.float32)
        w[p + "qkv.w"], w[p + "qkv.b"] = normal(c.dim, 3 * c.dim), np.zeros(3 * c.dim, np.float32)
        w[p + "proj.w"], w[p + "proj.b"] = normal(c.dim, c.dim), np.zeros(c.dim, np.float32)
        w[p + "ln2.g"], w[p + "ln2.b"] = np.ones(c.dim, np.float32), np.zeros(c.dim, np.float32)
        w[p + "fc.w"], w[p + "fc.b"] = normal(c.dim, 4 * c.dim), np.zeros(4 * c.dim, np.float32)
        w[p + "out.w"], w[p + "out.b"] = normal(4 * c.dim, c.dim), np.zeros(c.dim, np.float32)
    w["lnf.g"], w["lnf.b"] = np.ones(c.dim, np.float32), np.zeros(c.dim, np.float32)
    return w


def tokens(c: Config, seed: int = 1) -> tuple[Array, Array]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, c.vocab, size=(c.batch, c.context + 1))
    return ids[:, :-1].reshape(-1), ids[:, 1:].reshape(-1)


# --------------------------------------------------------------------------- topos


def _attention(c: Config, x: Value, qkv: Linear, proj: Linear, mask: Value) -> Value:
    b, n, h = c.batch, c.context, c.heads
    hd = c.dim // h
    # [B*T, 3D] -> [3, B, H, T, hd]: one projection, heads split by reshape and permute.
    split = qkv(x).reshape((b, n, 3, h, hd)).permute((2, 0, 3, 1, 4))
    q, k, v = (split.narrow(0, i, 1).reshape((b, h, n, hd)) for i in range(3))
    scores = q.matmul(k.permute((0, 1, 3, 2))) * (1.0 / math.sqrt(hd)) + mask
    mixed = scores.softmax(3).matmul(v).permute((0, 2, 1, 3)).reshape((b * n, c.dim))
    return proj(mixed)


def record_topos(c: Config, w: dict[str, Array], ids: Array, targets: Array) -> tuple[Network, list[Symbol]]:
    """The training step: the loss first, then the gradient of every parameter."""

    def build(t: Tape) -> list[Value]:
        owned: list[Symbol] = []

        def linear(name: str) -> Linear:
            layer = Linear(t, w[name + ".w"], w[name + ".b"])
            owned.extend([layer.weights, layer.bias] if layer.bias is not None else [layer.weights])
            return layer

        def norm(name: str) -> LayerNorm:
            layer = LayerNorm(t, w[name + ".g"], w[name + ".b"], epsilon=1e-5)
            owned.extend([layer.scale, layer.shift])
            return layer

        wte = Embedding(t, w["wte"])
        wpe = t.parameter(w["wpe"])
        owned.extend([wte.table, wpe.symbol])
        x = wte(t.input(wte.select(ids))).reshape((c.batch, c.context, c.dim))
        x = (x + wpe.broadcast_along(0, c.batch)).reshape((c.batch * c.context, c.dim))
        # The causal mask is a recorded constant, as a user writes it: -1e9 above the diagonal.
        mask = t.leaf(causal_mask(c.context, -1e9)).broadcast_along(0, c.heads).broadcast_along(0, c.batch)
        for i in range(c.layers):
            p = f"h{i}."
            ln1, qkv, proj = norm(p + "ln1"), linear(p + "qkv"), linear(p + "proj")
            ln2, fc, out = norm(p + "ln2"), linear(p + "fc"), linear(p + "out")
            x = x + _attention(c, ln1(x), qkv, proj, mask)
            x = x + out(fc(ln2(x)).gelu(approximate=True))
        lnf = norm("lnf")
        logits = lnf(x).matmul(t.resolve(wte.table).transpose())
        loss = cross_entropy(logits, t.input(Tensor.selection(targets, c.vocab)))
        adjoints = t.differentiate(loss, owned)
        return [loss, *(t.resolve(g) for g in adjoints.gradients())]

    network, roots = Tape.record(build, element=f32)
    return network, list(roots)


# --------------------------------------------------------------------------- jax


def jax_loss(c: Config) -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp

    def layer_norm(x: Any, g: Any, b: Any) -> Any:
        mean = x.mean(-1, keepdims=True)
        centered = x - mean
        variance = (centered * centered).mean(-1, keepdims=True)
        return centered / jnp.sqrt(variance + 1e-5) * g + b

    def loss(w: dict[str, Any], ids: Any, targets: Any) -> Any:
        b, n, h, d = c.batch, c.context, c.heads, c.dim
        hd = d // h
        x = (w["wte"][ids].reshape(b, n, d) + w["wpe"][None]).reshape(b * n, d)
        mask = jnp.where(jnp.triu(jnp.ones((n, n), bool), 1), -1e9, 0.0).astype(jnp.float32)
        for i in range(c.layers):
            p = f"h{i}."
            y = layer_norm(x, w[p + "ln1.g"], w[p + "ln1.b"]) @ w[p + "qkv.w"] + w[p + "qkv.b"]
            q, k, v = y.reshape(b, n, 3, h, hd).transpose(2, 0, 3, 1, 4)
            scores = q @ k.transpose(0, 1, 3, 2) * (1.0 / math.sqrt(hd)) + mask
            mixed = (jax.nn.softmax(scores, -1) @ v).transpose(0, 2, 1, 3).reshape(b * n, d)
            x = x + mixed @ w[p + "proj.w"] + w[p + "proj.b"]
            y = layer_norm(x, w[p + "ln2.g"], w[p + "ln2.b"]) @ w[p + "fc.w"] + w[p + "fc.b"]
            x = x + jax.nn.gelu(y, approximate=True) @ w[p + "out.w"] + w[p + "out.b"]
        logits = layer_norm(x, w["lnf.g"], w["lnf.b"]) @ w["wte"].T
        picked = jnp.take_along_axis(logits, targets[:, None], axis=1)[:, 0]
        return (jax.nn.logsumexp(logits, axis=1) - picked).mean()

    return loss


# --------------------------------------------------------------------------- measuring


def median(call: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    result = call()  # warm-up; its result is kept for the sizes
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    c = Config(layers=args.layers, context=args.context, batch=args.batch)
    w = weights(c)
    ids, targets = tokens(c)
    print(f"GPT-2 shape: {c}; {sum(a.size for a in w.values()) / 1e6:.1f}M parameters")

    start = time.perf_counter()
    network, roots = record_topos(c, w, ids, targets)
    recorded = time.perf_counter() - start
    lower_s, plan = median(lambda: network.entry(roots).lower(), args.repeats)
    emit_s, text = median(lambda: emission(plan), args.repeats)

    import jax

    step = jax_loss(c)
    ids32, targets32 = ids.astype(np.int32), targets.astype(np.int32)

    def jax_lower() -> Any:
        # Lowering reads only shapes and dtypes; nothing is transferred or computed.
        return jax.jit(jax.value_and_grad(step)).lower(w, ids32, targets32)

    jax_s, lowered = median(jax_lower, args.repeats)
    jax_text = lowered.as_text()
    row = {
        "record_s": recorded,
        "lower_s": lower_s,
        "emit_s": emit_s,
        "topos_s": lower_s + emit_s,
        "jax_s": jax_s,
        "topos_mb": len(text.encode()) / 1e6,
        "jax_mb": len(jax_text.encode()) / 1e6,
    }
    print(f"topos: record + differentiate {recorded:.2f} s (once), lower {lower_s:.3f} s, emit {emit_s:.3f} s, "
          f"text {row['topos_mb']:.2f} MB")
    print(f"jax:   trace + lower {jax_s:.3f} s, text {row['jax_mb']:.2f} MB")
    print(f"lower + emit against jax's trace + lower: {row['topos_s'] / jax_s:.2f}x")
    return row


if __name__ == "__main__":
    main()
