"""A Llama-style language model recorded from the topos facades.

The architecture is Llama's: a token table and no position table; pre-norm blocks of
RMSNorm, attention with rotary position embeddings (RoPE, rotate-half layout) and grouped
queries (``kv_heads`` key/value heads, each shared by ``heads // kv_heads`` query heads),
separate bias-free query/key/value/output projections, RMSNorm, and a SwiGLU feed-forward
``down(silu(gate(x)) * up(x))``; a final RMSNorm; logits through an untied ``head``
(or, with ``tied=True``, through the token table). Parameter paths follow the facades
(``blocks.0.attention.query.weights``, ``blocks.0.feed_forward.gate.weights``, ``head.weights``).
"""

from __future__ import annotations

import attrs
import numpy as np

from topos import Tape, Tensor, Value
from topos.init import normal
from topos.nn import (
    Block,
    Embedding,
    Linear,
    MultiHeadAttention,
    RmsNorm,
    Rotary,
    SwiGlu,
    TransformerLm,
)


@attrs.frozen
class Config:
    """A Llama's sizes; ``hidden`` is the SwiGLU width (Llama uses about 8/3 of ``dim``)."""

    vocab: int
    context: int = 64
    layers: int = 2
    dim: int = 64
    heads: int = 4
    kv_heads: int = 2
    hidden: int = 176
    tied: bool = False
    epsilon: float = 1e-5
    base: float = 10000.0


def build(tape: Tape, config: Config, seed: int = 0, deviation: float = 0.02) -> TransformerLm:
    """A Llama with weights drawn from N(0, ``deviation``) and norms' scales at 1.

    Example:
        >>> from topos import Tape
        >>> build(Tape(), Config(vocab=10, context=8, layers=1, dim=8, heads=2, kv_heads=1, hidden=16)).vocab
        10
    """
    init = normal(seed, deviation, tape.element)
    d, eps = config.dim, config.epsilon
    # One rotary table serves every block: its cos/sin leaves are recorded once.
    rotary = Rotary(tape, d // config.heads, config.context, config.base)
    embedding = Embedding.init(tape, config.vocab, d, init)
    blocks = [
        Block(
            RmsNorm.init(tape, d, eps),
            MultiHeadAttention.init(
                tape, d, config.heads, init, kv_heads=config.kv_heads, fused=False, bias=False, rotary=rotary
            ),
            RmsNorm.init(tape, d, eps),
            SwiGlu.init(tape, d, config.hidden, init),
        )
        for _ in range(config.layers)
    ]
    norm = RmsNorm.init(tape, d, eps)
    head = None if config.tied else Linear.init(tape, d, config.vocab, init, bias=False, layer="head")
    return TransformerLm(embedding, None, blocks, norm, head)


def causal(length: int) -> np.ndarray[tuple[int, int], np.dtype[np.float64]]:
    """The additive causal mask ``[length, length]``: 0 on and below the diagonal, -inf above."""
    return np.where(np.triu(np.ones((length, length)), 1) > 0, -np.inf, 0.0)


def record_logits(tape: Tape, model: TransformerLm, config: Config, batch: int, length: int) -> tuple[Value, Value]:
    """Token input ``[batch*length, vocab]`` and its logits; the mask is a leaf and the
    rotary positions ``0..length-1`` an input selection into the ``context`` rows."""
    tokens = tape.input(Tensor.selection([0] * (batch * length), config.vocab, tape.element))
    mask = tape.leaf(Tensor(causal(length), tape.element))
    positions = tape.input(Tensor.selection(list(range(length)), config.context, tape.element))
    return tokens, model(tokens, batch, mask, positions)
