"""GPT-2 on Shakespeare: train a small configuration with the GPT-2 tokenizer, compare with a
bigram, sample through the KV cache; or (``--stages``) time each stage of the 124M model.

The text is ``examples/data/shakespeare.txt`` (three plays, committed). It is tokenized with
GPT-2's BPE; the small model's vocabulary is the GPT-2 ids that occur in the text, renumbered
densely (an embedding row per id that never occurs would never train). The last 10% is the
validation split. The bigram baseline is the validation cross-entropy of add-one-smoothed
next-token counts over the training split.

Run: ``python examples/gpt2/train.py [--steps N] [--smoke] [--quiet] [--stages] [--mesh N]``.
``--mesh N`` runs each training step (loss and gradients) on XLA under FSDP over N host
devices (``docs/sharding.md``): parameters split over the devices, the batch split along its
rows; Adam still updates the tables on the host.
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from model import GPT2_124M, Config, build, record_logits

from topos import Parameters, Tape, Tensor, Value
from topos.nn import TransformerLm, cross_entropy, named_parameters
from topos.nn.generation import Decoder
from topos.optim import Adam
from topos.progress import Progress, options
from topos.stages.stablehlo import FullySharded, Mesh
from topos.tokenizers import gpt2
from topos.xla import XlaExecutable

HERE = Path(__file__).resolve().parent
TEXT = (HERE.parent / "data" / "shakespeare.txt").read_text(encoding="ascii")
SMALL = Config(vocab=0, context=64, layers=2, dim=64, heads=4)
TINY = Config(vocab=0, context=16, layers=1, dim=16, heads=2)
T = TypeVar("T")
Ints = np.ndarray[tuple[int, ...], np.dtype[np.int64]]


def corpus(smoke: bool) -> tuple[Ints, Ints, list[int]]:
    """Train and validation ids (dense), and the GPT-2 id of each dense id."""
    ids = np.asarray(gpt2().encode(TEXT[:40000] if smoke else TEXT), dtype=np.int64)
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


def train(o_steps: int, smoke: bool, quiet: bool, mesh: int = 0) -> dict[str, float]:
    train_ids, valid_ids, used = corpus(smoke)
    base = TINY if smoke else SMALL
    config = Config(len(used), base.context, base.layers, base.dim, base.heads)
    batch, length = (4, 16) if smoke else (16, 64)
    tape = Tape()
    model = build(tape, config, seed=0)
    tokens, logits = record_logits(tape, model, config, batch, length)
    targets = tape.input(Tensor.selection([0] * (batch * length), config.vocab))
    loss = cross_entropy(logits, targets)
    adjoints = tape.differentiate(loss, [tape.resolve(s) for _, s in named_parameters(model)])
    decoder = Decoder(tape, model, config.context)
    network = tape.seal()
    plan = network.entry(adjoints.roots()).lower()
    step = XlaExecutable.of_plan(plan, sharding=FullySharded(Mesh({"data": mesh}), (tokens.symbol, targets.symbol))) if mesh else plan
    evaluate = network.entry([loss.symbol]).lower()
    decoder.lower(network)
    parameters: Parameters = network.parameters()
    optimizer = Adam(learning_rate=3e-3)
    state = optimizer.init(parameters)
    rng = np.random.default_rng(0)
    curve: list[float] = []
    start = time.perf_counter()
    with Progress(o_steps, description="gpt2", quiet=quiet) as bar:
        for _ in range(o_steps):
            x, y = windows(train_ids, rng, batch, length)
            run = step.forward(parameters, {tokens.symbol: Tensor.selection(x, config.vocab), targets.symbol: Tensor.selection(y, config.vocab)})
            parameters, state = optimizer.update(run.recorded_gradients(adjoints), state, parameters)
            curve.append(run.of(loss.symbol).scalar())
            bar.update(loss=curve[-1], items=batch * length)
    seconds = time.perf_counter() - start
    valid_rng = np.random.default_rng(1)
    valid = float(np.mean([
        evaluate.forward(parameters, {tokens.symbol: Tensor.selection(x, config.vocab), targets.symbol: Tensor.selection(y, config.vocab)}).of(loss.symbol).scalar()
        for x, y in (windows(valid_ids, valid_rng, batch, length) for _ in range(4 if smoke else 20))
    ]))
    bigram = bigram_loss(train_ids, valid_ids, config.vocab)
    dense_of = {g: i for i, g in enumerate(used)}
    prompt = [dense_of[g] for g in gpt2().encode("\nHAMLET.\n") if g in dense_of]
    sample = decoder.generate(parameters, prompt, min(40, config.context - len(prompt)), np.random.default_rng(2), temperature=0.8, top_k=40)
    text = gpt2().decode([used[i] for i in sample])
    window = max(1, len(curve) // 10)
    print(f"gpt2 small: {config}, batch {batch}x{length}, {o_steps} steps in {seconds:.1f} s ({o_steps * batch * length / seconds:.0f} tokens/s)")
    print("loss curve (mean per tenth):", " ".join(f"{np.mean(curve[i:i + window]):.3f}" for i in range(0, len(curve), window)))
    print(f"validation loss {valid:.4f}   bigram {bigram:.4f}")
    print("sample:", repr(text))
    return {"valid": valid, "bigram": bigram, "first": curve[0], "last": float(np.mean(curve[-window:])), "seconds": seconds}


def timed_record(tape: Tape, config: Config, batch: int, length: int, timed: Callable[[str, Callable[[], Any]], Any]) -> tuple[TransformerLm, Value]:
    def record() -> tuple[TransformerLm, Value]:
        model = build(tape, config)
        _, logits = record_logits(tape, model, config, batch, length)
        targets = tape.input(Tensor.selection([0] * (batch * length), config.vocab))
        return model, cross_entropy(logits, targets)

    recorded: tuple[TransformerLm, Value] = timed("record", record)
    return recorded


def stages(config: Config, batch: int, length: int) -> dict[str, float]:
    """Record, differentiate, lower and emit ``config``'s training step; time and peak memory each."""
    figures: dict[str, float] = {}
    tracemalloc.start()

    def timed(name: str, work: Callable[[], T]) -> T:
        tracemalloc.reset_peak()
        begin = time.perf_counter()
        out = work()
        figures[name] = time.perf_counter() - begin
        print(f"{name:>12}: {figures[name]:7.2f} s   peak {tracemalloc.get_traced_memory()[1] / 2**20:8.1f} MiB")
        return out

    tape = Tape()
    model = timed_record(tape, config, batch, length, timed)
    loss = model[1]
    adjoints = timed("differentiate", lambda: tape.differentiate(loss, [tape.resolve(s) for _, s in named_parameters(model[0])]))
    network = tape.seal()
    plan = timed("lower", lambda: network.entry(adjoints.roots()).lower())
    text = timed("emit", plan.emit_stablehlo)
    print(f"StableHLO text: {len(text) / 2**20:.1f} MiB")
    print(f"parameters: {sum(t.shape.volume for t in network.parameters().payloads()):,}")
    return figures


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    args = list(sys.argv[1:] if argv is None else argv)
    mesh = 0
    if "--mesh" in args:  # read before jax starts: the host devices are fixed then
        at = args.index("--mesh")
        mesh = int(args[at + 1])
        del args[at : at + 2]
        os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={mesh}")
    if "--stages" in args:
        args.remove("--stages")
        smoke = "--smoke" in args
        return stages(Config(vocab=101, context=16, layers=1, dim=16, heads=2) if smoke else GPT2_124M, 1 if smoke else 4, 16 if smoke else 64)
    o = options(__doc__.split("\n\n")[0], args, steps=300, smoke_steps=3, out=HERE / "out")
    return train(o.steps, o.smoke, o.quiet, mesh)


if __name__ == "__main__":
    main()
