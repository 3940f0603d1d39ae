"""GPT-2 recorded from the topos facades, and loading GPT-2-format safetensors by Hugging Face names.

The architecture is GPT-2's: token and learned position tables, pre-norm blocks (LayerNorm,
fused ``c_attn`` multi-head attention with a causal mask, LayerNorm, a tanh-GELU MLP of
width 4·d), a final LayerNorm, and logits through the token table (tied). Paths follow the
facades (``blocks.0.attention.qkv.weights``); :func:`hf_rename` maps GPT-2's names onto them.

Hugging Face's GPT-2 stores its projections as ``Conv1D`` weights ``[in, out]`` (the
transpose of ``torch.nn.Linear``'s ``[out, in]``). topos' Linear is ``[in, out]`` too, so
those tensors load as they are; only a ``torch.nn.Linear``-style file would need the
transpose. The file's causal-mask buffers (``attn.bias``, ``attn.masked_bias``) and a tied
``lm_head.weight`` are not parameters and are skipped.
"""

from __future__ import annotations

import os
import re

import attrs
import numpy as np

from topos import CheckpointError, ElementType, Parameters, Tape, Tensor, ToposError, Value
from topos import checkpoint as ckpt
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
)


@attrs.frozen
class Config:
    vocab: int = 50257
    context: int = 1024
    layers: int = 12
    dim: int = 768
    heads: int = 12


GPT2_124M = Config()


def build(tape: Tape, config: Config, seed: int = 0) -> TransformerLm:
    """GPT-2 with weights drawn from N(0, 0.02) (biases too; norms start at 1 and 0)."""
    init = normal(seed, 0.02, tape.element)
    d = config.dim
    blocks = [
        Block(
            LayerNorm.init(tape, d, 1e-5),
            MultiHeadAttention.init(tape, d, config.heads, init),
            LayerNorm.init(tape, d, 1e-5),
            Mlp(tape, [d, 4 * d, d], Activation.GELU_TANH, init),
        )
        for _ in range(config.layers)
    ]
    return TransformerLm(
        Embedding.init(tape, config.vocab, d, init),
        PositionTable.init(tape, config.context, d, init),
        blocks,
        LayerNorm.init(tape, d, 1e-5),
    )


def record_logits(tape: Tape, model: TransformerLm, config: Config, batch: int, length: int) -> tuple[Value, Value]:
    """Token input ``[batch*length, vocab]`` and its logits (causal mask and positions are leaves)."""
    tokens = tape.input(Tensor.selection([0] * (batch * length), config.vocab, tape.element))
    mask = tape.leaf(Tensor(np.where(np.triu(np.ones((length, length)), 1) > 0, -np.inf, 0.0), tape.element))
    positions = tape.input(Tensor.selection(list(range(length)), config.context, tape.element))
    return tokens, model(tokens, batch, mask, positions)


_PARTS = {
    "ln_1.weight": "norm1.scale",
    "ln_1.bias": "norm1.shift",
    "ln_2.weight": "norm2.scale",
    "ln_2.bias": "norm2.shift",
    "attn.c_attn.weight": "attention.qkv.weights",
    "attn.c_attn.bias": "attention.qkv.bias",
    "attn.c_proj.weight": "attention.output.weights",
    "attn.c_proj.bias": "attention.output.bias",
    "mlp.c_fc.weight": "feed_forward.layers.0.weights",
    "mlp.c_fc.bias": "feed_forward.layers.0.bias",
    "mlp.c_proj.weight": "feed_forward.layers.1.weights",
    "mlp.c_proj.bias": "feed_forward.layers.1.bias",
}
_TOP = {"wte.weight": "embedding.weights", "wpe.weight": "positions.weights", "ln_f.weight": "norm.scale", "ln_f.bias": "norm.shift"}
_BLOCK = re.compile(r"h\.(\d+)\.(.+)")
_SKIPPED = re.compile(r"(lm_head\.weight|h\.\d+\.attn\.(bias|masked_bias))")


def hf_rename(name: str) -> str:
    """A GPT-2 (Hugging Face) entry name as the path of :func:`build`'s parameter."""
    bare = name.removeprefix("transformer.")
    if bare in _TOP:
        return _TOP[bare]
    found = _BLOCK.fullmatch(bare)
    if found and found.group(2) in _PARTS:
        return f"blocks.{found.group(1)}.{_PARTS[found.group(2)]}"
    return name  # an unknown name stays itself, and the strict install reports it


def load_hf(file: str | os.PathLike[str], model: TransformerLm, template: Parameters) -> Parameters:
    """Parameters from a GPT-2-format safetensors file (``model.safetensors``).

    Each entry is converted to the template's element; every refusal (a missing, extra or
    misshapen entry, a value the element cannot hold) is a CheckpointError naming the file,
    the module path and the file's entry name.
    """
    if not isinstance(template, Parameters) or not template.symbols:
        raise CheckpointError(f"{file}: load_hf: template must be a Parameters table with slots, got {template!r:.60}")
    element = template.payloads()[0].element
    entries = ckpt.read(file, foreign=True).entries
    try:
        converted = {}
        for name, tensor in entries.items():
            if not _SKIPPED.fullmatch(name.removeprefix("transformer.")):
                converted[name] = _converted(name, tensor, element)
        return ckpt.restore(model, template, converted, rename=hf_rename)
    except ToposError as error:
        raise CheckpointError(f"{file}: {error.detail}") from None


def _converted(name: str, tensor: Tensor, element: ElementType) -> Tensor:
    try:
        return tensor.convert(element)
    except ToposError as error:
        raise CheckpointError(f"entry {name!r}: {error.detail}") from None
