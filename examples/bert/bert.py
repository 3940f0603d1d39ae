"""all-MiniLM-L6-v2 in topos: BERT from the nn facades, the published weights, its WordPiece.

The encoder is recorded from ``topos.nn`` as it exists: ``Embedding`` for words, positions
and token types, ``LayerNorm`` (epsilon 1e-12), ``Linear`` over ``[B*T, D]``, exact GELU, and
batched multi-head attention written with reshape/permute/matmul (``scaled_dot_product``
takes one rank-2 head; here all heads of all sentences go through one batched matmul).
Padded keys get ``finfo(f32).min`` added to their scores, as the reference does, so their
softmax weight is an exact zero. The sentence embedding is the mean of the token states
over the attention mask, divided by its Euclidean norm (the model's pooling config).

Weights load by their Hugging Face names through ``topos.checkpoint`` (``foreign=True`` and
a name mapping); a Hugging Face ``Linear`` stores ``[out, in]`` and ``topos.nn.Linear``
``[in, out]``, so those entries are transposed between reading and installing. The tokenizer
is the model's own ``tokenizer.json`` read by the ``tokenizers`` package.

Run: ``python examples/bert/bert.py "a sentence" "another one"`` after ``fetch.py``; prints
the cosine similarity of every pair.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from topos import CheckpointError, Network, Parameters, Symbol, Tape, Tensor, Value, checkpoint, f32
from topos.nn import Embedding, LayerNorm, Linear, Visitor

Array = np.ndarray[Any, Any]
NEGATIVE: float = float(np.finfo(np.float32).min)


@dataclass(frozen=True)
class Config:
    vocab: int = 30522
    positions: int = 512
    types: int = 2
    dim: int = 384
    heads: int = 12
    layers: int = 6
    hidden: int = 1536
    epsilon: float = 1e-12

    @classmethod
    def read(cls, path: Path) -> Config:
        """The sizes in a Hugging Face ``config.json``; a missing or mistyped field is a CheckpointError naming it."""
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise CheckpointError(f"{path}: cannot read the model config: {error}") from None
        if not isinstance(raw, dict):
            raise CheckpointError(f"{path}: the model config is a JSON {type(raw).__name__}, not an object")
        values: dict[str, Any] = {}
        for field, key in _CONFIG.items():
            value = raw.get(key)
            kinds = (int, float) if field == "epsilon" else (int,)
            if isinstance(value, bool) or not isinstance(value, kinds) or not 0 < value < math.inf:
                got = "it is missing" if key not in raw else f"got {value!r}"
                raise CheckpointError(f"{path}: config field {key!r} must be a positive {kinds[-1].__name__}; {got}")
            values[field] = value
        config = cls(**values)
        if config.dim % config.heads:
            raise CheckpointError(f"{path}: hidden_size {config.dim} does not split into {config.heads} attention heads")
        return config


_CONFIG = {
    "vocab": "vocab_size", "positions": "max_position_embeddings", "types": "type_vocab_size",
    "dim": "hidden_size", "heads": "num_attention_heads", "layers": "num_hidden_layers",
    "hidden": "intermediate_size", "epsilon": "layer_norm_eps",
}  # fmt: skip


def _zeros(*shape: int) -> Array:
    return np.zeros(shape, np.float32)


def _linear(t: Tape, fan_in: int, fan_out: int) -> Linear:
    return Linear(t, _zeros(fan_in, fan_out), _zeros(fan_out))


def _norm(t: Tape, c: Config) -> LayerNorm:
    return LayerNorm(t, np.ones(c.dim, np.float32), _zeros(c.dim), epsilon=c.epsilon)


class Layer:
    """One encoder layer: self-attention, add and norm; feed-forward, add and norm."""

    def __init__(self, t: Tape, c: Config) -> None:
        self.c = c
        self.query, self.key, self.value = (_linear(t, c.dim, c.dim) for _ in range(3))
        self.output, self.attention_norm = _linear(t, c.dim, c.dim), _norm(t, c)
        self.intermediate, self.down, self.output_norm = _linear(t, c.dim, c.hidden), _linear(t, c.hidden, c.dim), _norm(t, c)

    def heads(self, x: Value, batch: int, length: int) -> Value:
        """``[B*T, D]`` -> ``[B, H, T, D/H]``."""
        c = self.c
        return x.reshape((batch, length, c.heads, c.dim // c.heads)).permute((0, 2, 1, 3))

    def __call__(self, x: Value, mask: Value, batch: int, length: int) -> Value:
        c = self.c
        q, k, v = (self.heads(layer(x), batch, length) for layer in (self.query, self.key, self.value))
        scores = q.matmul(k.permute((0, 1, 3, 2))) * (1.0 / math.sqrt(c.dim // c.heads)) + mask
        mixed = scores.softmax(3).matmul(v).permute((0, 2, 1, 3)).reshape((batch * length, c.dim))
        x = self.attention_norm(x + self.output(mixed))
        return self.output_norm(x + self.down(self.intermediate(x).gelu()))

    def visit(self, visitor: Visitor) -> None:
        for name in ("query", "key", "value", "output", "attention_norm", "intermediate", "down", "output_norm"):
            visitor.child(name, getattr(self, name))


class Bert:
    """The encoder and its pooling; ``Bert(t, c)(ids, types, mask)`` records the embeddings."""

    def __init__(self, t: Tape, c: Config) -> None:
        self.c = c
        self.words = Embedding(t, _zeros(c.vocab, c.dim))
        self.positions = Embedding(t, _zeros(c.positions, c.dim))
        self.types = Embedding(t, _zeros(c.types, c.dim))
        self.norm = _norm(t, c)
        self.layers = [Layer(t, c) for _ in range(c.layers)]

    def __call__(self, words: Value, positions: Value, types: Value, keep: Value) -> Value:
        """``words``/``positions``/``types``: selections ``[B*T, vocab]``; ``keep``: ``[B, T]`` of 0/1."""
        c = self.c
        batch, length = keep.shape[0], keep.shape[1]
        x = self.norm(self.words(words) + self.positions(positions) + self.types(types))
        # Added to every score of a padded key: (1 - keep) * min, as the reference writes it.
        additive = (1.0 - keep) * NEGATIVE
        mask = additive.broadcast_along(1, length).broadcast_along(1, c.heads)
        for layer in self.layers:
            x = layer(x, mask, batch, length)
        states = x.reshape((batch, length, c.dim))
        summed = (states * keep.broadcast_along(2, c.dim)).sum_along(1)
        pooled = summed / keep.sum_along(1).broadcast_along(1, c.dim)
        norm = (pooled * pooled).sum_along(1).sqrt()
        return pooled / norm.broadcast_along(1, c.dim)

    def visit(self, visitor: Visitor) -> None:
        for name in ("words", "positions", "types", "norm"):
            visitor.child(name, getattr(self, name))
        visitor.child("layers", _Stack(self.layers))


class _Stack:
    """The layers as one child, so their paths read ``layers.0.query.weights``."""

    def __init__(self, layers: Sequence[Layer]) -> None:
        self.layers = layers

    def visit(self, visitor: Visitor) -> None:
        for i, layer in enumerate(self.layers):
            visitor.child(i, layer)


# --------------------------------------------------------------------------- the published weights

_LAYER = {
    "attention.self.query": "query", "attention.self.key": "key", "attention.self.value": "value",
    "attention.output.dense": "output", "attention.output.LayerNorm": "attention_norm",
    "intermediate.dense": "intermediate", "output.dense": "down", "output.LayerNorm": "output_norm",
}  # fmt: skip
_EMBEDDINGS = {
    "word_embeddings": "words", "position_embeddings": "positions",
    "token_type_embeddings": "types", "LayerNorm": "norm",
}  # fmt: skip
_FIELD = {"weight": "weights", "bias": "bias", "LayerNorm.weight": "scale", "LayerNorm.bias": "shift"}


def topos_name(name: str) -> str | None:
    """A Hugging Face BERT entry's module path here (``None``: not a parameter of the encoder).

    An unknown name stays itself, so the strict install reports it as unexpected.

    Example:
        >>> topos_name("encoder.layer.3.attention.self.query.weight")
        'layers.3.query.weights'
        >>> topos_name("embeddings.LayerNorm.bias")
        'norm.shift'
        >>> topos_name("pooler.dense.weight") is None
        True
        >>> topos_name("encoder.layer.0.attention.self.rotary.weight")
        'encoder.layer.0.attention.self.rotary.weight'
    """
    parts = name.removeprefix("bert.").split(".")
    if parts[0] == "pooler":
        return None  # the pooler: sentence embeddings pool the token states instead
    inner, field = ".".join(parts[1:-1]), parts[-1]
    if parts[0] == "embeddings" and inner == "LayerNorm" and field in ("weight", "bias"):
        return f"norm.{_FIELD['LayerNorm.' + field]}"
    if parts[0] == "embeddings" and inner in _EMBEDDINGS and field == "weight":
        return f"{_EMBEDDINGS[inner]}.weights"
    if parts[:2] == ["encoder", "layer"] and len(parts) > 4 and parts[2].isdigit():
        inner = ".".join(parts[3:-1])
        key = f"LayerNorm.{field}" if inner.endswith("LayerNorm") else field
        if inner in _LAYER and key in _FIELD:
            return f"layers.{parts[2]}.{_LAYER[inner]}.{_FIELD[key]}"
    return name


def transposed(entries: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """Hugging Face ``Linear`` weights (``[out, in]``) as ``topos.nn.Linear`` keeps them."""
    out: dict[str, Tensor] = {}
    for name, tensor in entries.items():
        dense = name.endswith(".weight") and name.startswith("encoder.") and "LayerNorm" not in name
        out[name] = Tensor(np.ascontiguousarray(tensor.numpy().T), element=tensor.element) if dense else tensor
    return out


def load(path: Path, model: Bert, template: Parameters) -> Parameters:
    """The weights of a Hugging Face BERT ``model.safetensors``, installed strictly by name.

    Every refusal is a CheckpointError naming the file, the module path and the file's entry.
    """
    if not isinstance(template, Parameters):
        raise CheckpointError(f"{path}: load: template must be a Parameters table, got {type(template).__name__}")
    read = checkpoint.read(path, foreign=True)
    for name, array in read.arrays.items():
        # BERT's one integer buffer is the positions 0, 1, ...; the encoder recomputes them.
        if name.removeprefix("bert.") != "embeddings.position_ids":
            raise CheckpointError(f"{path}: integer entry {name!r} ({array.dtype}{list(array.shape)}) is no part of BERT's weights")
        if array.ndim != 2 or array.shape[0] != 1 or array.tolist()[0] != list(range(array.shape[1])):
            raise CheckpointError(f"{path}: entry {name!r} ({array.dtype}{list(array.shape)}) is not the positions [[0, 1, ...]]")
    try:
        return checkpoint.restore(model, template, transposed(read.entries), rename=topos_name)
    except CheckpointError as error:
        raise CheckpointError(f"{path}: {error.detail}") from None


# --------------------------------------------------------------------------- sentences in, embeddings out


@dataclass(frozen=True)
class Batch:
    ids: list[list[int]]  # each sentence's token ids, [CLS] ... [SEP], unpadded

    @property
    def length(self) -> int:
        return max(len(row) for row in self.ids)

    def padded(self) -> Array:
        out = np.zeros((len(self.ids), self.length), np.int64)  # [PAD] is id 0
        for i, row in enumerate(self.ids):
            out[i, : len(row)] = row
        return out

    def keep(self) -> Array:
        out = np.zeros((len(self.ids), self.length), np.float32)
        for i, row in enumerate(self.ids):
            out[i, : len(row)] = 1.0
        return out


def tokenize(folder: Path, sentences: Sequence[str]) -> Batch:
    """The model's own WordPiece (``tokenizer.json``: lower-casing, [CLS]/[SEP]), no padding."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    return Batch([list(e.ids) for e in tokenizer.encode_batch(list(sentences))])


@dataclass(frozen=True)
class Recorded:
    network: Network
    model: Bert
    embeddings: Symbol
    words: Symbol
    positions: Symbol
    types: Symbol
    keep: Symbol


def record(c: Config, batch: int, length: int) -> Recorded:
    """The encoder for ``batch`` sentences of ``length`` tokens (shapes are recorded once)."""
    holder: dict[str, Any] = {}

    def build(t: Tape) -> Value:
        model = Bert(t, c)
        count = batch * length
        words = t.input(Tensor.selection([0] * count, c.vocab))
        positions = t.input(Tensor.selection([0] * count, c.positions))
        types = t.input(Tensor.selection([0] * count, c.types))
        keep = t.input(np.ones((batch, length), np.float32))
        holder.update(model=model, words=words.symbol, positions=positions.symbol, types=types.symbol, keep=keep.symbol)
        return model(words, positions, types, keep)

    network, out = Tape.record(build, element=f32)
    return Recorded(network, holder["model"], out, holder["words"],
                    holder["positions"], holder["types"], holder["keep"])  # fmt: skip


def feeds(recorded: Recorded, c: Config, batch: Batch) -> dict[Symbol, Tensor]:
    ids = batch.padded()
    b, n = ids.shape
    return {
        recorded.words: Tensor.selection(ids.reshape(-1).tolist(), c.vocab),
        recorded.positions: Tensor.selection(np.tile(np.arange(n), b).tolist(), c.positions),
        recorded.types: Tensor.selection([0] * (b * n), c.types),
        recorded.keep: Tensor(batch.keep()),
    }


def embed(folder: Path, sentences: Sequence[str]) -> tuple[Array, Batch]:
    """Unit-length sentence embeddings ``[len(sentences), 384]`` (f32), and the tokens used."""
    c = Config.read(folder / "config.json")
    batch = tokenize(folder, sentences)
    recorded = record(c, len(batch.ids), batch.length)
    weights = load(folder / "model.safetensors", recorded.model, recorded.network.parameters())
    plan = recorded.network.entry([recorded.embeddings]).lower()
    run = plan.forward(weights, feeds(recorded, c, batch))
    return run.of(recorded.embeddings).numpy(), batch


def main(argv: Sequence[str] | None = None) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fetch import cache_dir, complete

    sentences = list(argv if argv is not None else sys.argv[1:]) or ["A man is eating food.", "A man is eating pasta."]
    folder = cache_dir()
    if not complete(folder):
        raise SystemExit(f"{folder}: no model files; run python examples/bert/fetch.py first")
    vectors, _ = embed(folder, sentences)
    for i in range(len(sentences)):
        for j in range(i + 1, len(sentences)):
            print(f"{float(vectors[i] @ vectors[j]):+.4f}  {sentences[i]!r} ~ {sentences[j]!r}")


if __name__ == "__main__":
    main()
