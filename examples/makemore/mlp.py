"""makemore, part 2: a character-level MLP recorded once from the facades, trained with Adam
through a Fast plan, checkpointed to safetensors and reloaded, then sampled.

Run it with ``python examples/makemore_mlp.py [steps]``. The corpus is the 32,469 US baby
names of 2017 in ``examples/data/names.txt`` (see ``examples/data/README.md``), so nothing is
downloaded; minibatches are feeds (one-hot selections stored as indices).
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

from topos import Parameters, Tape, Tensor, Value, f32
from topos import checkpoint as ckpt
from topos.init import normal
from topos.nn import (
    Activation,
    Embedding,
    Linear,
    Sequential,
    Visitor,
    cross_entropy,
    named_parameters,
)
from topos.optim import Adam

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "names.txt"), encoding="ascii") as _file:
    NAMES = _file.read().split()
ALPHABET = "." + "abcdefghijklmnopqrstuvwxyz"
VOCAB, CONTEXT, DIM, HIDDEN, BATCH = len(ALPHABET), 3, 8, 64, 32


class CharMlp:
    """Embedding, then Linear -> tanh -> Linear over the concatenated context."""

    def __init__(self, tape: Tape, seed: int) -> None:
        init = normal(seed, 0.2, tape.element)
        self.embedding = Embedding.init(tape, VOCAB, DIM, init)
        self.head = Sequential(
            Linear.init(tape, CONTEXT * DIM, HIDDEN, init), Activation.TANH, Linear.init(tape, HIDDEN, VOCAB, init)
        )

    def __call__(self, tokens: Value) -> Value:
        return self.head(self.embedding(tokens).reshape((tokens.shape[0] // CONTEXT, CONTEXT * DIM)))

    def visit(self, visitor: Visitor) -> None:
        visitor.child("embedding", self.embedding)
        visitor.child("head", self.head)


def examples() -> tuple[np.ndarray[tuple[int, int], np.dtype[np.int64]], np.ndarray[tuple[int], np.dtype[np.int64]]]:
    contexts: list[list[int]] = []
    targets: list[int] = []
    for name in NAMES:
        window = [0] * CONTEXT
        for char in name + ".":
            contexts.append(list(window))
            targets.append(ALPHABET.index(char))
            window = [*window[1:], ALPHABET.index(char)]
    return np.array(contexts, dtype=np.int64), np.array(targets, dtype=np.int64)


def main() -> None:
    tape = Tape(f32)
    model = CharMlp(tape, seed=7)
    tokens = tape.input(Tensor.selection([0] * (BATCH * CONTEXT), VOCAB))
    targets = tape.input(Tensor.selection([0] * BATCH, VOCAB))
    loss = cross_entropy(model(tokens), targets)
    adjoints = tape.differentiate(loss, [tape.resolve(symbol) for _, symbol in named_parameters(model)])
    # A second export on the same spec: one context in, next-character logits out.
    one = tape.input(Tensor.selection([0] * CONTEXT, VOCAB))
    logits = model(one)
    network = tape.seal()
    train = network.entry(adjoints.roots()).lower()
    sample = network.entry(logits.symbol).lower()

    contexts, answers = examples()
    batches = np.random.default_rng(0)
    parameters: Parameters = network.parameters()
    optimizer = Adam(learning_rate=0.01)
    state = optimizer.init(parameters)
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    window_losses: list[float] = []
    for step in range(steps + 1):
        rows = batches.integers(0, len(answers), BATCH)
        run = train.forward(
            parameters,
            {
                tokens.symbol: Tensor.selection(contexts[rows].reshape(-1), VOCAB),
                targets.symbol: Tensor.selection(answers[rows], VOCAB),
            },
        )
        window_losses.append(run.of(loss.symbol).scalar())
        if step % 250 == 0:
            print(f"step {step:5d}  mean loss of the last {len(window_losses):3d} steps {np.mean(window_losses):.4f}")
            window_losses = []
        parameters, state = optimizer.update(run.recorded_gradients(adjoints), state, parameters)

    with tempfile.TemporaryDirectory() as folder:
        file = os.path.join(folder, "makemore.safetensors")
        ckpt.save(file, model, parameters, state)
        restored, _ = ckpt.load_training(file, model, network.parameters(), optimizer.init(network.parameters()))
        print(f"checkpoint: {os.path.getsize(file)} bytes, {len(ckpt.read(file).entries)} entries")

    draws = np.random.default_rng(1)
    for _ in range(5):
        window, name = [0] * CONTEXT, ""
        while len(name) < 20:
            scores = sample.forward(restored, {one.symbol: Tensor.selection(window, VOCAB)}).of(logits.symbol)
            weights = np.exp(scores.numpy()[0].astype(np.float64) - scores.numpy().max())
            index = int(draws.choice(VOCAB, p=weights / weights.sum()))
            if index == 0:
                break
            name += ALPHABET[index]
            window = [*window[1:], index]
        print("sample:", name)


if __name__ == "__main__":
    main()
