"""examples/llama: the smoke mode trains and decodes; the facade Llama's logits match an
independent jax implementation of the same weights (f64, within 1e-10: the same formulas in
other fold orders); KV-cache decoding of the example's model gives the full-context logits
bit for bit under ``Numerics.EXACT``, so its greedy tokens are the recompute's."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from topos import Numerics, Parameters, Tape, Tensor, f64
from topos.nn import named_parameters
from topos.nn.generation import Decoder

LLAMA = Path(__file__).resolve().parent.parent / "examples" / "llama"


def example(name: str) -> ModuleType:
    if str(LLAMA) not in sys.path:
        sys.path.insert(0, str(LLAMA))
    return importlib.import_module(name)


def drawn(network: Any, model: Any, seed: int) -> tuple[Parameters, dict[str, Any]]:
    """Every parameter redrawn (norm scales near 1, the rest N(0, 0.3)): the parameters and
    the same arrays by path."""
    rng = np.random.default_rng(seed)
    parameters: Parameters = network.parameters()
    pairs, by_path = [], {}
    for path, symbol in named_parameters(model):
        shape = parameters.of(symbol).shape.axes
        array = 1 + 0.1 * rng.normal(size=shape) if str(path).endswith("scale") else 0.3 * rng.normal(size=shape)
        pairs.append((symbol, Tensor(array, f64)))
        by_path[str(path)] = array
    return parameters.with_payloads(pairs), by_path


def jax_llama(w: dict[str, Any], ids: Any, layers: int, heads: int, kv_heads: int, tied: bool, base: float = 10000.0) -> Any:
    """Llama's forward written from its published structure in jax (batch of rows ``ids [B, T]``)."""

    def rms(x: Any, scale: Any) -> Any:
        return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-5) * scale

    def rope(x: Any) -> Any:  # x [B, H, T, hd]; angle t * base^(-2i/hd) on pairs (i, i + hd/2)
        hd = x.shape[-1]
        theta = jnp.arange(x.shape[2])[:, None] * base ** (-jnp.arange(hd // 2) * 2.0 / hd)[None, :]
        c, s = jnp.cos(theta), jnp.sin(theta)
        a, b = x[..., : hd // 2], x[..., hd // 2 :]
        return jnp.concatenate([a * c - b * s, b * c + a * s], axis=-1)

    def split(x: Any, n: int) -> Any:
        b, t, _ = x.shape
        return x.reshape(b, t, n, -1).transpose(0, 2, 1, 3)

    x = w["embedding.weights"][ids]
    b, t, d = x.shape
    hd = d // heads
    causal = jnp.where(jnp.tril(jnp.ones((t, t))) > 0, 0.0, -jnp.inf)
    for i in range(layers):
        p = f"blocks.{i}."
        h = rms(x, w[p + "norm1.scale"])
        q = rope(split(h @ w[p + "attention.query.weights"], heads))
        k = rope(split(h @ w[p + "attention.key.weights"], kv_heads))
        v = split(h @ w[p + "attention.value.weights"], kv_heads)
        k, v = jnp.repeat(k, heads // kv_heads, axis=1), jnp.repeat(v, heads // kv_heads, axis=1)
        weights = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(hd) + causal, axis=-1)
        x = x + (weights @ v).transpose(0, 2, 1, 3).reshape(b, t, d) @ w[p + "attention.output.weights"]
        h = rms(x, w[p + "norm2.scale"])
        gate, up = h @ w[p + "feed_forward.gate.weights"], h @ w[p + "feed_forward.up.weights"]
        x = x + (jax.nn.silu(gate) * up) @ w[p + "feed_forward.down.weights"]
    head = w["embedding.weights"].T if tied else w["head.weights"]
    return (rms(x, w["norm.scale"]) @ head).reshape(b * t, -1)


@pytest.mark.parametrize(("tied", "kv_heads", "batch"), [(False, 2, 2), (True, 1, 1), (False, 4, 1)])
def test_llama_logits_match_jax(tied: bool, kv_heads: int, batch: int) -> None:
    m = example("llama")
    config = m.Config(vocab=13, context=8, layers=2, dim=8, heads=4, kv_heads=kv_heads, hidden=12, tied=tied)
    tape = Tape(f64)
    model = m.build(tape, config)
    tokens, logits = m.record_logits(tape, model, config, batch, 6)
    network = tape.seal()
    parameters, w = drawn(network, model, seed=kv_heads + batch)
    assert ("head.weights" in w) is not tied
    ids = np.random.default_rng(7).integers(0, 13, size=(batch, 6))
    ours = network.forward(parameters, {tokens.symbol: Tensor.selection(ids.reshape(-1), 13, f64)}).of(logits.symbol).numpy()
    with jax.enable_x64(True):
        theirs = np.asarray(jax_llama({k: jnp.asarray(v) for k, v in w.items()}, jnp.asarray(ids), 2, 4, kv_heads, tied))
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


def test_kv_cache_decoding_matches_the_full_context_bit_for_bit() -> None:
    m = example("llama")
    config = m.Config(vocab=17, context=8, layers=2, dim=8, heads=4, kv_heads=2, hidden=12)
    tape = Tape(f64)
    model = m.build(tape, config)
    ids = [3, 16, 0, 5, 5, 11, 2, 9]
    tokens, logits = m.record_logits(tape, model, config, 1, len(ids))
    decoder = Decoder(tape, model, config.context)
    network = tape.seal()
    parameters, _ = drawn(network, model, seed=3)
    full = network.entry([logits.symbol]).numerics(Numerics.EXACT).lower()
    expected = full.forward(parameters, {tokens.symbol: Tensor.selection(ids, 17, f64)}).of(logits.symbol).numpy()
    steps = decoder.lower(network, Numerics.EXACT).logits_along(parameters, ids)
    got = np.concatenate([step.numpy() for step in steps])
    assert got.view(np.uint64).tolist() == expected.view(np.uint64).tolist()

    # Greedy generation over the same exact step picks each recompute's argmax.
    chosen = decoder.generate(parameters, ids[:2], 6, np.random.default_rng(0), temperature=0.0)
    for position in range(2, len(ids)):
        prefix = chosen[:position] + [0] * (len(ids) - position)
        row = full.forward(parameters, {tokens.symbol: Tensor.selection(prefix, 17, f64)}).of(logits.symbol).numpy()
        assert chosen[position] == int(np.argmax(row[position - 1]))


def test_training_smoke_runs_and_samples(capsys: pytest.CaptureFixture[str]) -> None:
    figures = example("train_llama").main(["--smoke", "--quiet"])
    out = capsys.readouterr().out
    assert "sample:" in out and "tokens/s on the Fast plan" in out
    assert np.isfinite(figures["valid"]) and figures["decode_fast"] > 0
    # A fresh model (weights N(0, 0.02)) starts near log(vocab) = log(2159) = 7.68.
    assert abs(figures["first"] - np.log(2159)) < 0.1
