"""examples/gpt2: the smoke modes run, and a GPT-2-format safetensors file (Hugging Face names,
Conv1D layout) loads into the facade model, whose logits then match an independent numpy
GPT-2 forward over the file's arrays (f64, within 1e-10: same formulas, other fold orders)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file

from topos import CheckpointError, Tape, Tensor, f64

GPT2 = Path(__file__).resolve().parent.parent / "examples" / "gpt2"


def example(name: str) -> ModuleType:
    if str(GPT2) not in sys.path:
        sys.path.insert(0, str(GPT2))
    return importlib.import_module(name)


def hf_file(path: Path, vocab: int, context: int, layers: int, dim: int, seed: int) -> dict[str, Any]:
    r = np.random.default_rng(seed)
    entries: dict[str, Any] = {
        "wte.weight": r.normal(size=(vocab, dim)) * 0.3,
        "wpe.weight": r.normal(size=(context, dim)) * 0.3,
        "ln_f.weight": 1 + 0.1 * r.normal(size=dim),
        "ln_f.bias": 0.1 * r.normal(size=dim),
    }
    for i in range(layers):
        p = f"h.{i}."
        entries |= {
            p + "ln_1.weight": 1 + 0.1 * r.normal(size=dim), p + "ln_1.bias": 0.1 * r.normal(size=dim),
            p + "ln_2.weight": 1 + 0.1 * r.normal(size=dim), p + "ln_2.bias": 0.1 * r.normal(size=dim),
            p + "attn.c_attn.weight": r.normal(size=(dim, 3 * dim)) * 0.3, p + "attn.c_attn.bias": r.normal(size=3 * dim) * 0.1,
            p + "attn.c_proj.weight": r.normal(size=(dim, dim)) * 0.3, p + "attn.c_proj.bias": r.normal(size=dim) * 0.1,
            p + "mlp.c_fc.weight": r.normal(size=(dim, 4 * dim)) * 0.3, p + "mlp.c_fc.bias": r.normal(size=4 * dim) * 0.1,
            p + "mlp.c_proj.weight": r.normal(size=(4 * dim, dim)) * 0.3, p + "mlp.c_proj.bias": r.normal(size=dim) * 0.1,
            # The causal-mask buffer older GPT-2 files carry: not a parameter.
            p + "attn.bias": np.tril(np.ones((context, context)))[None, None],
        }
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in entries.items()}, str(path))
    return {k: np.asarray(v, dtype=np.float32).astype(np.float64) for k, v in entries.items()}


def numpy_gpt2(w: dict[str, Any], ids: list[int], layers: int, heads: int) -> Any:
    """GPT-2's forward written straight from its published structure, in numpy f64."""

    def norm(x: Any, g: Any, b: Any) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * g + b

    def gelu(x: Any) -> Any:
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))

    t = len(ids)
    x = w["wte.weight"][ids] + w["wpe.weight"][:t]
    d = x.shape[1]
    hd = d // heads
    for i in range(layers):
        p = f"h.{i}."
        q, k, v = np.split(norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"]) @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"], 3, axis=1)
        out = np.zeros_like(x)
        for h in range(heads):
            s = slice(h * hd, (h + 1) * hd)
            scores = q[:, s] @ k[:, s].T / np.sqrt(hd) + np.where(np.tril(np.ones((t, t))) > 0, 0, -np.inf)
            weights = np.exp(scores - scores.max(1, keepdims=True))
            out[:, s] = (weights / weights.sum(1, keepdims=True)) @ v[:, s]
        x = x + out @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        hidden = gelu(norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"]) @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + hidden @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    return norm(x, w["ln_f.weight"], w["ln_f.bias"]) @ w["wte.weight"].T


@pytest.mark.parametrize(("layers", "heads", "dim"), [(1, 2, 8), (2, 3, 12)])
def test_hf_gpt2_file_loads_and_matches_numpy(tmp_path: Path, layers: int, heads: int, dim: int) -> None:
    model_module = example("model")
    vocab, context = 19, 8
    weights = hf_file(tmp_path / "model.safetensors", vocab, context, layers, dim, seed=layers)
    config = model_module.Config(vocab=vocab, context=context, layers=layers, dim=dim, heads=heads)
    tape = Tape(f64)
    model = model_module.build(tape, config)
    tokens, logits = model_module.record_logits(tape, model, config, 1, 6)
    network = tape.seal()
    loaded = model_module.load_hf(tmp_path / "model.safetensors", model, network.parameters())
    ids = [3, 17, 0, 5, 5, 11]
    ours = network.forward(loaded, {tokens.symbol: Tensor.selection(ids, vocab, f64)}).of(logits.symbol).numpy()
    np.testing.assert_allclose(ours, numpy_gpt2(weights, ids, layers, heads), rtol=1e-10, atol=1e-10)


def test_a_file_with_a_wrong_name_is_refused(tmp_path: Path) -> None:
    model_module = example("model")
    weights = hf_file(tmp_path / "model.safetensors", 7, 4, 1, 4, seed=0)
    weights["h.0.attn.c_extra.weight"] = np.zeros((2, 2))
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()}, str(tmp_path / "bad.safetensors"))
    tape = Tape(f64)
    model = model_module.build(tape, model_module.Config(vocab=7, context=4, layers=1, dim=4, heads=2))
    network = tape.seal()
    with pytest.raises(CheckpointError, match="c_extra"):
        model_module.load_hf(tmp_path / "bad.safetensors", model, network.parameters())


def test_hf_names_map_to_facade_paths() -> None:
    rename = example("model").hf_rename
    assert rename("transformer.h.0.attn.c_attn.weight") == "blocks.0.attention.qkv.weights"
    assert rename("h.11.mlp.c_proj.bias") == "blocks.11.feed_forward.layers.1.bias"
    assert rename("wte.weight") == "embedding.weights"


def test_training_smoke_runs_and_samples(capsys: pytest.CaptureFixture[str]) -> None:
    figures = example("train").main(["--smoke", "--quiet"])
    out = capsys.readouterr().out
    assert "sample:" in out and np.isfinite(figures["valid"])
    # A fresh model starts near log(vocab) = log(2205) = 7.7.
    assert figures["first"] > 7.0


def test_stages_smoke_reports_each_stage() -> None:
    figures = example("train").main(["--stages", "--smoke"])
    assert set(figures) == {"record", "differentiate", "lower", "emit"}
