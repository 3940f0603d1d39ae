"""A tiny Llama on Shakespeare: train with the SentencePiece tokenizer, compare with a bigram,
sample through the KV cache, and time KV-cache decoding on the Fast plan and the XLA road.

The text is ``examples/data/shakespeare.txt`` (three plays, committed). It is tokenized with
the Llama-2-style SentencePiece model shipped in ``topos/assets`` (32,000 pieces); the
model's vocabulary is the piece ids that occur in the text, renumbered densely (an
embedding row per id that never occurs would never train). The last 10% is the validation
split; the bigram baseline is the validation cross-entropy of add-one-smoothed next-token
counts over the training split.

Decoding speed is greedy decoding at batch 1 through the recorded decode step (one token in,
caches of ``context`` rows in, logits and updated caches out), the caches carried from step
to step: tokens per second over whole sequences of ``context`` tokens, Python feeding included.

Run: ``python examples/llama/train_llama.py [--steps N] [--smoke] [--quiet]``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from llama import Config, build, record_logits

from topos import Parameters, Symbol, Tape, Tensor, ToposError
from topos.nn import cross_entropy, named_parameters
from topos.nn.generation import Decoder
from topos.optim import Adam
from topos.progress import Progress, options
from topos.tokenizers import sentencepiece

HERE = Path(__file__).resolve().parent
TEXT = (HERE.parent / "data" / "shakespeare.txt").read_text(encoding="ascii")
SMALL = Config(vocab=0, context=64, layers=2, dim=64, heads=4, kv_heads=2, hidden=176)
TINY = Config(vocab=0, context=16, layers=1, dim=16, heads=4, kv_heads=2, hidden=32)
Ints = np.ndarray[tuple[int, ...], np.dtype[np.int64]]


def corpus(smoke: bool) -> tuple[Ints, Ints, list[int]]:
    """Train and validation ids (dense), and the SentencePiece id of each dense id."""
    ids = np.asarray(sentencepiece().encode(TEXT[:40000] if smoke else TEXT), dtype=np.int64)
    used, dense = np.unique(ids, return_inverse=True)
    cut = int(0.9 * dense.size)
    return dense[:cut], dense[cut:], [int(u) for u in used]


def bigram_loss(train: Ints, valid: Ints, vocab: int) -> float:
    counts = np.ones((vocab, vocab))
    np.add.at(counts, (train[:-1], train[1:]), 1.0)
    logp = np.log(counts / counts.sum(axis=1, keepdims=True))
    return float(-logp[valid[:-1], valid[1:]].mean())


def windows(data: Ints, rng: np.random.Generator, batch: int, length: int) -> tuple[Ints, Ints]:
    starts = rng.integers(0, data.size - length - 1, size=batch)
    x = np.stack([data[s : s + length] for s in starts])
    y = np.stack([data[s + 1 : s + length + 1] for s in starts])
    return x.reshape(-1), y.reshape(-1)


def decode_rate(decoder: Decoder, parameters: Parameters, sequences: int) -> tuple[float, list[int]]:
    """Tokens per second of greedy decoding (``decoder`` lowered on its road) from a one-token
    prompt to the full cache length (one warm-up sequence first), and the last sequence's tokens."""
    count = decoder.length - 1

    def once() -> list[int]:
        return decoder.generate(parameters, [0], count, np.random.default_rng(0), temperature=0.0)

    tokens = once()
    start = time.perf_counter()
    for _ in range(sequences):
        tokens = once()
    return sequences * count / (time.perf_counter() - start), tokens


def train(steps: int, smoke: bool, quiet: bool) -> dict[str, float]:
    wall = time.perf_counter()
    train_ids, valid_ids, used = corpus(smoke)
    base = TINY if smoke else SMALL
    config = Config(len(used), base.context, base.layers, base.dim, base.heads, base.kv_heads, base.hidden)
    batch, length = (4, 16) if smoke else (16, 64)
    tape = Tape()
    model = build(tape, config, seed=0)
    tokens, logits = record_logits(tape, model, config, batch, length)
    targets = tape.input(Tensor.selection([0] * (batch * length), config.vocab))
    loss = cross_entropy(logits, targets)
    adjoints = tape.differentiate(loss, [tape.resolve(s) for _, s in named_parameters(model)])
    decoder = Decoder(tape, model, config.context)
    on_xla = Decoder(tape, model, config.context)  # the same step, lowered on the XLA road below
    network = tape.seal()
    plan = network.entry(adjoints.roots()).lower()
    evaluate = network.entry([loss.symbol]).lower()
    decoder.lower(network)
    parameters: Parameters = network.parameters()
    count = sum(t.shape.volume for t in parameters.payloads())
    optimizer = Adam(learning_rate=3e-3)
    state = optimizer.init(parameters)
    rng = np.random.default_rng(0)

    def feeds(x: Ints, y: Ints) -> dict[Symbol, Tensor]:
        return {tokens.symbol: Tensor.selection(x, config.vocab), targets.symbol: Tensor.selection(y, config.vocab)}

    curve: list[float] = []
    start = time.perf_counter()
    with Progress(steps, description="llama", quiet=quiet) as bar:
        for _ in range(steps):
            run = plan.forward(parameters, feeds(*windows(train_ids, rng, batch, length)))
            parameters, state = optimizer.update(run.recorded_gradients(adjoints), state, parameters)
            curve.append(run.of(loss.symbol).scalar())
            bar.update(loss=curve[-1], items=batch * length)
    seconds = time.perf_counter() - start
    valid_rng = np.random.default_rng(1)
    valid = float(np.mean([
        evaluate.forward(parameters, feeds(x, y)).of(loss.symbol).scalar()
        for x, y in (windows(valid_ids, valid_rng, batch, length) for _ in range(4 if smoke else 20))
    ]))  # fmt: skip
    bigram = bigram_loss(train_ids, valid_ids, config.vocab)
    pieces = sentencepiece()
    dense_of = {g: i for i, g in enumerate(used)}
    prompt = [dense_of[g] for g in pieces.encode("\nHAMLET.\n") if g in dense_of]
    sample = decoder.generate(parameters, prompt, config.context - len(prompt), np.random.default_rng(2), temperature=0.8, top_k=40)
    text = pieces.decode([used[i] for i in sample])

    sequences = 1 if smoke else 5
    fast_rate, fast_tokens = decode_rate(decoder, parameters, sequences)
    figures = {"valid": valid, "bigram": bigram, "first": curve[0], "seconds": seconds, "decode_fast": fast_rate}
    xla_line = "XLA road not measured in smoke mode (compiling takes seconds)"
    if not smoke:
        try:
            compile_start = time.perf_counter()
            on_xla.lower(network, road="xla")
            compile_seconds = time.perf_counter() - compile_start
            xla_rate, xla_tokens = decode_rate(on_xla, parameters, sequences)
            figures["decode_xla"] = xla_rate
            xla_line = (
                f"{xla_rate:.0f} tokens/s on the XLA road (emit + compile {compile_seconds:.2f} s; "
                f"greedy tokens {'equal' if xla_tokens == fast_tokens else 'differ from'} the Fast plan's)"
            )
        except ToposError as error:  # no jax or no XLA client: the Fast figure stands alone
            xla_line = f"XLA road not measured: {error}"

    window = max(1, len(curve) // 10)
    figures["last"] = float(np.mean(curve[-window:]))
    figures["wall"] = time.perf_counter() - wall
    print(f"llama: {config}, {count:,} parameters, batch {batch}x{length}")
    print(f"training: {steps} steps in {seconds:.1f} s ({steps * batch * length / seconds:.0f} tokens/s)")
    print("loss curve (mean per tenth):", " ".join(f"{np.mean(curve[i:i + window]):.3f}" for i in range(0, len(curve), window)))
    print(f"validation loss {valid:.4f}   bigram {bigram:.4f}")
    print("sample:", repr(text))
    print(f"KV-cache greedy decoding, batch 1, {decoder.length - 1} tokens a sequence: {fast_rate:.0f} tokens/s on the Fast plan")
    print(xla_line)
    print(f"wall time {figures['wall']:.1f} s")
    return figures


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=300, smoke_steps=3, out=HERE / "out")
    return train(o.steps, o.smoke, o.quiet)


if __name__ == "__main__":
    main()
