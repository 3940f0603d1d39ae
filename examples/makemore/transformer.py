"""makemore, transformer: a small character-level GPT on the names, as one stream of text.

The names are joined with ``.`` into one stream (``emma.olivia.ava...``) and the model
predicts each next character from up to ``BLOCK`` previous ones. Each block is pre-norm:
``x + attention(LayerNorm(x))`` then ``x + mlp(LayerNorm(x))`` with a GELU MLP four times
as wide; token and position embeddings in, a LayerNorm and a linear head out.

Attention, short and self-contained. The batch's ``B`` sequences are laid end to end as
``B * BLOCK`` rows, and each head is one :func:`topos.nn.scaled_dot_product` over all rows
with a mask that is causal inside each sequence and closed between sequences (a
block-diagonal causal mask). The heads' outputs meet in the output projection: the
projection of the concatenated heads equals the sum of each head times its own rows of the
projection matrix, so no concatenation is recorded.

Run: ``python examples/makemore/transformer.py [--steps N] [--smoke] [--quiet] [--out DIR]``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from corpus import HERE, VOCAB, VOCABULARY, names

from topos import Parameters, Symbol, Tape, Tensor, Value, f32
from topos.data import Feeder, Selection, TokenStream
from topos.init import normal
from topos.nn import (
    Activation,
    Embedding,
    LayerNorm,
    Linear,
    Visitor,
    cross_entropy,
    named_parameters,
    scaled_dot_product,
)
from topos.optim import Adam, clip_by_global_norm, schedules
from topos.progress import Progress, options, plot_curves, plot_table, wrote

BLOCK, WIDTH, HEADS, LAYERS, BATCH = 8, 32, 4, 2, 8
CLOSED = -1e9  # added to scores a row may not see; exp() of it is exactly 0 in f32


def sequence_mask(sequences: int) -> np.ndarray:
    """``[sequences * BLOCK]²``: 0 where a row may attend (same sequence, not later), CLOSED elsewhere."""
    rows = np.arange(sequences * BLOCK)
    same = rows[:, None] // BLOCK == rows[None, :] // BLOCK
    return np.where(same & (rows[None, :] <= rows[:, None]), 0.0, CLOSED).astype(np.float32)


class Block:
    def __init__(self, tape: Tape, seed: int) -> None:
        init = normal(seed, 0.02)
        ones, zeros = np.ones(WIDTH, np.float32), np.zeros(WIDTH, np.float32)
        self.norm1, self.norm2 = LayerNorm(tape, ones, zeros, 1e-5), LayerNorm(tape, ones, zeros, 1e-5)
        self.qkv = Linear.init(tape, WIDTH, 3 * WIDTH, init)
        self.project = Linear.init(tape, WIDTH, WIDTH, init)
        self.up, self.down = Linear.init(tape, WIDTH, 4 * WIDTH, init), Linear.init(tape, 4 * WIDTH, WIDTH, init)

    def attention(self, x: Value, mask: Value) -> Value:
        qkv, size = self.qkv(x), WIDTH // HEADS
        out = self.project.bias
        total: Value | None = None
        for h in range(HEADS):
            q, k, v = (qkv.narrow(1, part * WIDTH + h * size, size) for part in range(3))
            head = scaled_dot_product(q, k, v, mask, 1.0 / np.sqrt(size))
            share = head.matmul(x.tape.resolve(self.project.weights).narrow(0, h * size, size))
            total = share if total is None else total + share
        assert total is not None and out is not None
        return total + x.tape.resolve(out).broadcast_along(0, x.shape[0])

    def __call__(self, x: Value, mask: Value) -> Value:
        x = x + self.attention(self.norm1(x), mask)
        return x + self.down(Activation.GELU(self.up(self.norm2(x))))

    def visit(self, visitor: Visitor) -> None:
        for name in ("norm1", "qkv", "project", "norm2", "up", "down"):
            visitor.child(name, getattr(self, name))


class Gpt:
    def __init__(self, tape: Tape, seed: int = 11) -> None:
        init = normal(seed, 0.02)
        self.tokens = Embedding.init(tape, VOCAB, WIDTH, init)
        self.positions = tape.parameter(init((BLOCK, WIDTH))).symbol
        self.blocks = [Block(tape, seed + 1 + i) for i in range(LAYERS)]
        self.norm = LayerNorm(tape, np.ones(WIDTH, np.float32), np.zeros(WIDTH, np.float32), 1e-5)
        self.head = Linear.init(tape, WIDTH, VOCAB, init)

    def __call__(self, tokens: Value, mask: Value) -> Value:
        sequences = tokens.shape[0] // BLOCK
        positions = tokens.tape.resolve(self.positions).broadcast_along(0, sequences).reshape((sequences * BLOCK, WIDTH))
        x = self.tokens(tokens) + positions
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))

    def visit(self, visitor: Visitor) -> None:
        visitor.child("tokens", self.tokens)
        visitor.parameter("positions", self.positions)
        for i, block in enumerate(self.blocks):
            visitor.child(f"blocks.{i}", block)
        visitor.child("norm", self.norm)
        visitor.child("head", self.head)


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=2000, smoke_steps=25, out=HERE / "out")
    words = names(o.smoke)
    stream = TokenStream(VOCABULARY.encode("." + ".".join(words) + "."), VOCAB)
    train_stream, valid_stream = stream.split(0.9)

    tape = Tape(f32)
    model = Gpt(tape)
    rows = BATCH * BLOCK
    tokens, targets = tape.input(Tensor.selection([0] * rows, VOCAB)), tape.input(Tensor.selection([0] * rows, VOCAB))
    loss = cross_entropy(model(tokens, tape.input(sequence_mask(BATCH))), targets)
    adjoints = tape.differentiate(loss, [symbol for _, symbol in named_parameters(model)])
    one = tape.input(Tensor.selection([0] * BLOCK, VOCAB))
    next_logits = model(one, tape.input(sequence_mask(1)))
    network = tape.seal()
    step = network.entry(adjoints.roots()).lower()
    evaluate = network.entry(loss.symbol).lower()
    sampler = network.entry(next_logits.symbol).lower()
    feeder = Feeder([(tokens, Selection(VOCAB)), (targets, Selection(VOCAB))])
    count = sum(network.parameters().of(s).shape.volume for _, s in named_parameters(model))
    print(f"GPT: {LAYERS} blocks, width {WIDTH}, {HEADS} heads, context {BLOCK}; {count:,} parameters; "
          f"{len(train_stream):,} training characters")

    def feeds(source: TokenStream, draws: np.random.Generator) -> dict[Symbol, Tensor]:
        x, y = source.sample(draws, BATCH, BLOCK)
        return feeder((x.reshape(-1), y.reshape(-1)))

    def split_loss(parameters: Parameters, source: TokenStream, batches: int = 10) -> float:
        draws = np.random.default_rng(123)
        return float(np.mean([evaluate.forward(parameters, feeds(source, draws)).of(loss.symbol).scalar() for _ in range(batches)]))

    parameters = network.parameters()
    optimizer = Adam(learning_rate=schedules.cosine_decay(3e-3, o.steps, 3e-4))
    state = optimizer.init(parameters)
    draws = np.random.default_rng(0)
    curve: list[float] = []
    start = time.perf_counter()
    with Progress(o.steps, description="transformer", quiet=o.quiet) as bar:
        for _ in range(o.steps):
            run = step.forward(parameters, feeds(train_stream, draws))
            gradients = clip_by_global_norm(run.recorded_gradients(adjoints), 1.0)
            parameters, state = optimizer.update(gradients, state, parameters)
            curve.append(run.of(loss.symbol).scalar())
            bar.update(loss=curve[-1], items=rows)
    seconds = time.perf_counter() - start
    train_loss, valid_loss = split_loss(parameters, train_stream), split_loss(parameters, valid_stream)
    print(f"transformer: {o.steps} steps of {BATCH}x{BLOCK} characters in {seconds:.1f} s   "
          f"train {train_loss:.4f}   valid {valid_loss:.4f} (10 random batches each)")

    sample_draws = np.random.default_rng(1)
    text: list[int] = [0] * BLOCK
    for _ in range(120):
        logits = sampler.forward(parameters, {one.symbol: Tensor.selection(text[-BLOCK:], VOCAB)}).of(next_logits.symbol).numpy()[-1]
        weights = np.exp(logits.astype(np.float64) - logits.max())
        text.append(int(sample_draws.choice(VOCAB, p=weights / weights.sum())))
    drawn = [w for w in VOCABULARY.decode(np.array(text[BLOCK:])).split(".") if w][:10]
    print("samples:", " ".join(drawn))
    window = max(1, len(curve) // 50)
    smooth = [float(np.mean(curve[i : i + window])) for i in range(0, len(curve), window)]
    print(wrote("loss curve", plot_curves(o.out / "transformer_loss.png", {f"train (mean of {window})": (list(range(0, len(curve), window)), smooth)}, title="makemore transformer")))
    print(wrote("samples", plot_table(o.out / "transformer_samples.png", [[str(i + 1), s] for i, s in enumerate(drawn)], ["#", "name"], title="makemore transformer: samples")))
    return {"train": train_loss, "valid": valid_loss, "seconds": seconds, "first": curve[0], "last": float(np.mean(curve[-window:]))}


if __name__ == "__main__":
    main()
