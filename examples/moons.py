"""Two moons: a 2-16-16-2 ReLU network learns a curved boundary from noisy points.

The data are two interleaving half circles with Gaussian noise (drawn here with a seeded
generator: 300 training and 300 test points). Minibatches of 32 come from
:class:`topos.data.Loader`, one seeded shuffle per epoch; the plan's batch shape is 32, the
test export's is the whole test set.

Run: ``python examples/moons.py [--steps N] [--smoke] [--quiet] [--out DIR]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from topos import Tape, Tensor, f32
from topos.data import Feeder, Loader, Selection
from topos.init import kaiming
from topos.nn import Activation, Mlp, cross_entropy, named_parameters
from topos.optim import Adam
from topos.progress import Progress, options, plot_curves, wrote

BATCH, POINTS = 32, 300


def moons(count: int, noise: float, seed: int) -> tuple[np.ndarray[Any, np.dtype[np.float32]], np.ndarray[Any, np.dtype[np.int64]]]:
    """``count`` points on two half circles (class 0 upper, class 1 lower and shifted)."""
    draws = np.random.default_rng(seed)
    angle = draws.uniform(0.0, np.pi, count)
    label = draws.integers(0, 2, count)
    x = np.where(label == 0, np.cos(angle), 1.0 - np.cos(angle))
    y = np.where(label == 0, np.sin(angle), 0.5 - np.sin(angle))
    points = np.stack([x, y], axis=1) + draws.normal(0.0, noise, (count, 2))
    return points.astype(np.float32), label.astype(np.int64)


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=1500, smoke_steps=150, out=Path(__file__).resolve().parent / "out")
    train, test = moons(POINTS, 0.15, seed=0), moons(POINTS, 0.15, seed=1)
    tape = Tape(f32)
    model = Mlp(tape, [2, 16, 16, 2], Activation.RELU, kaiming(seed=4))
    points, labels = tape.input(np.zeros((BATCH, 2), np.float32)), tape.input(Tensor.selection([0] * BATCH, 2))
    loss = cross_entropy(model(points), labels)
    adjoints = tape.differentiate(loss, [symbol for _, symbol in named_parameters(model)])
    probe = tape.input(np.zeros((POINTS, 2), np.float32))
    scores = model(probe)
    network = tape.seal()
    step, evaluate = network.entry(adjoints.roots()).lower(), network.entry(scores.symbol).lower()
    feeder = Feeder([(points, None), (labels, Selection(2))])

    parameters = network.parameters()
    optimizer = Adam(learning_rate=0.01)
    state = optimizer.init(parameters)
    loader = Loader(train, batch=BATCH, seed=0)
    batches = (batch for epoch in range(o.steps) for batch in loader.epoch(epoch))
    curve: list[float] = []
    with Progress(o.steps, description="moons", quiet=o.quiet) as bar:
        for _, batch in zip(range(o.steps), batches, strict=False):
            run = step.forward(parameters, feeder(batch.arrays))
            parameters, state = optimizer.update(run.recorded_gradients(adjoints), state, parameters)
            curve.append(run.of(loss.symbol).scalar())
            bar.update(loss=curve[-1], items=BATCH)
    predicted = evaluate.forward(parameters, {probe.symbol: Tensor(test[0])}).of(scores.symbol).numpy().argmax(axis=1)
    accuracy = float((predicted == test[1]).mean())
    print(f"moons: {o.steps} steps of {BATCH}; test accuracy {accuracy:.3f} on {POINTS} points")
    print(wrote("loss curve", plot_curves(o.out / "moons_loss.png", {"cross-entropy": curve}, title="two moons")))
    return {"first": curve[0], "last": float(np.mean(curve[-20:])), "accuracy": accuracy}


if __name__ == "__main__":
    main()
