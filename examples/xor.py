"""XOR: the function no single linear layer can draw, learned by one hidden layer.

Four points, two classes: ``(0,0)`` and ``(1,1)`` are class 0, ``(0,1)`` and ``(1,0)`` class 1.
A 2-8-2 tanh network, recorded once with its loss and gradient, trains with Adam on the
whole data set each step (a Fast plan), then classifies all four points.

Run: ``python examples/xor.py [--steps N] [--smoke] [--quiet] [--out DIR]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from topos import Tape, Tensor, f32
from topos.init import xavier
from topos.nn import Activation, Mlp, cross_entropy, named_parameters
from topos.optim import Adam
from topos.progress import Progress, options, plot_curves, wrote

POINTS = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float32)
CLASSES = [0, 1, 1, 0]


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=500, smoke_steps=60, out=Path(__file__).resolve().parent / "out")
    tape = Tape(f32)
    model = Mlp(tape, [2, 8, 2], Activation.TANH, xavier(seed=3))
    logits = model(tape.input(POINTS))
    loss = cross_entropy(logits, tape.input(Tensor.selection(CLASSES, 2)))
    adjoints = tape.differentiate(loss, [symbol for _, symbol in named_parameters(model)])
    network = tape.seal()
    plan = network.entry(adjoints.roots()).observe(logits.symbol).lower()

    parameters = network.parameters()
    optimizer = Adam(learning_rate=0.05)
    state = optimizer.init(parameters)
    curve: list[float] = []
    with Progress(o.steps, description="xor", quiet=o.quiet) as bar:
        for _ in range(o.steps):
            run = plan.forward(parameters, {})
            parameters, state = optimizer.update(run.recorded_gradients(adjoints), state, parameters)
            curve.append(run.of(loss.symbol).scalar())
            bar.update(loss=curve[-1], items=len(POINTS))
    predicted = plan.forward(parameters, {}).of(logits.symbol).numpy().argmax(axis=1)
    correct = int((predicted == np.array(CLASSES)).sum())
    print(f"xor: {o.steps} steps, loss {curve[0]:.4f} -> {curve[-1]:.4f}; predicted {predicted.tolist()} for {CLASSES}: {correct}/4")
    print(wrote("loss curve", plot_curves(o.out / "xor_loss.png", {"cross-entropy": curve}, title="xor")))
    return {"first": curve[0], "last": curve[-1], "correct": float(correct)}


if __name__ == "__main__":
    main()
