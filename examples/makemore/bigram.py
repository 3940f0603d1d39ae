"""makemore, part 1: the bigram model, counted and then learned.

A bigram model predicts a name's next character from the current one alone. Counting
gives it directly: ``P[a, b]`` is how often ``b`` follows ``a`` in the training names,
normalized per row. The same table is also the optimum of a one-layer network: logits
``one_hot(a) @ W``, softmax, cross-entropy. Plain gradient descent on ``W`` over the whole
training split must reach the counted model's loss, and this lesson prints both side by side
and checks that they agree to 3 digits.

Run: ``python examples/makemore/bigram.py [--steps N] [--smoke] [--quiet]``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

import numpy as np
from corpus import HERE, VOCAB, VOCABULARY, splits

from topos import Tape, f32
from topos.init import normal
from topos.optim import Adam
from topos.progress import Progress, options, plot_curves, wrote

LEARNING_RATE = 0.5


def counted_loss(pairs: tuple[np.ndarray, np.ndarray], smoothing: float) -> tuple[float, np.ndarray]:
    """The counted model's mean negative log-likelihood on ``pairs`` and its table."""
    first, second = pairs[0][:, 0], pairs[1]
    counts = np.zeros((VOCAB, VOCAB), dtype=np.float64)
    np.add.at(counts, (first, second), 1.0)
    counts += smoothing
    table = counts / counts.sum(axis=1, keepdims=True)
    return float(-np.log(table[first, second]).mean()), table


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=3000, smoke_steps=300, out=HERE / "out")
    data = splits(o.smoke, context=1)
    train = data["train"]
    rows = train[1].size
    counted, _ = counted_loss(train, 0.0)
    smoothed, _ = counted_loss(train, 1.0)

    tape = Tape(f32)
    w = tape.parameter(normal(2147483647, 1.0, f32)((VOCAB, VOCAB)))
    # one_hot(a) @ W picks row a of W, so the mean cross-entropy over every training pair
    # is sum over (a, b) of count(a, b) / N * -log softmax(W[a])[b]: the same loss, the
    # same gradient, with the 27 x 27 counts as weights instead of N one-hot rows.
    weights = np.zeros((VOCAB, VOCAB))
    np.add.at(weights, (train[0][:, 0], train[1]), 1.0 / rows)
    loss = -(tape.input(weights) * w.log_softmax(1)).sum()
    adjoints = tape.differentiate(loss, [w])
    network = tape.seal()
    step = network.entry(adjoints.roots()).lower()

    parameters = network.parameters()
    # The whole split is one batch. Adam rather than plain steps: rows of rare characters
    # carry tiny weights, and plain steps would take tens of thousands of updates to settle them.
    optimizer = Adam(learning_rate=LEARNING_RATE)
    state = optimizer.init(parameters)
    curve: list[float] = []
    start = time.perf_counter()
    with Progress(o.steps, description="bigram", quiet=o.quiet) as bar:
        for _ in range(o.steps):
            run = step.forward(parameters, {})
            curve.append(run.of(loss.symbol).scalar())
            bar.update(loss=curve[-1], items=rows)
            parameters, state = optimizer.update(run.recorded_gradients(adjoints), state, parameters)
    learned = step.forward(parameters, {}).of(loss.symbol).scalar()
    seconds = time.perf_counter() - start

    print(f"training bigrams: {rows}   characters: {VOCABULARY.chars}")
    print(f"{'counted (no smoothing)':<28}{'learned, ' + str(o.steps) + ' GD steps':<28}{'counted (+1 smoothing)'}")
    print(f"{counted:<28.4f}{learned:<28.4f}{smoothed:.4f}")
    agree = abs(learned - counted) < 5e-4
    print(f"agree to 3 digits: {'yes' if agree else 'no'} (difference {abs(learned - counted):.2e}); {seconds:.1f} s")
    print(wrote("loss curve", plot_curves(o.out / "bigram_loss.png", {"gradient descent": curve, "counted": [counted] * len(curve)}, title="bigram")))
    return {"counted": counted, "learned": learned, "smoothed": smoothed, "seconds": seconds}


if __name__ == "__main__":
    result = main()
    sys.exit(0 if abs(result["learned"] - result["counted"]) < 5e-4 else 1)
