"""Regression: a 1-32-32-1 tanh network fits ``sin(3x)`` from noisy samples.

200 training points ``x`` in [-1, 1] with ``y = sin(3x) + noise`` (deviation 0.1), the mean
squared error as the loss, Adam on the whole training set each step. The test error is
measured against the noiseless curve on a grid, so a perfect fit scores 0 and predicting
the mean scores about 0.5.

Run: ``python examples/regression.py [--steps N] [--smoke] [--quiet] [--out DIR]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from topos import Tape, Tensor, f32
from topos.init import xavier
from topos.nn import Activation, Mlp, mse, named_parameters
from topos.optim import Adam
from topos.progress import Progress, options, plot_curves, wrote

POINTS, GRID = 200, 101


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=2000, smoke_steps=150, out=Path(__file__).resolve().parent / "out")
    draws = np.random.default_rng(0)
    x = draws.uniform(-1.0, 1.0, (POINTS, 1)).astype(np.float32)
    y = (np.sin(3 * x) + draws.normal(0.0, 0.1, x.shape)).astype(np.float32)
    grid = np.linspace(-1.0, 1.0, GRID, dtype=np.float32)[:, None]

    tape = Tape(f32)
    model = Mlp(tape, [1, 32, 32, 1], Activation.TANH, xavier(seed=2))
    loss = mse(model(tape.input(x)), tape.input(y))
    adjoints = tape.differentiate(loss, [symbol for _, symbol in named_parameters(model)])
    probe = tape.input(grid)
    fitted = model(probe)
    network = tape.seal()
    step, evaluate = network.entry(adjoints.roots()).lower(), network.entry(fitted.symbol).lower()

    parameters = network.parameters()
    optimizer = Adam(learning_rate=0.01)
    state = optimizer.init(parameters)
    curve: list[float] = []
    with Progress(o.steps, description="regression", quiet=o.quiet) as bar:
        for _ in range(o.steps):
            run = step.forward(parameters, {})
            parameters, state = optimizer.update(run.recorded_gradients(adjoints), state, parameters)
            curve.append(run.of(loss.symbol).scalar())
            bar.update(loss=curve[-1], items=POINTS)
    curve_at_grid = evaluate.forward(parameters, {probe.symbol: Tensor(grid)}).of(fitted.symbol).numpy()
    test = float(np.mean((curve_at_grid - np.sin(3 * grid)) ** 2))
    print(f"regression: {o.steps} steps; train mse {curve[0]:.4f} -> {curve[-1]:.4f}; "
          f"mse against sin(3x) on {GRID} grid points {test:.4f}")
    print(wrote("loss curve", plot_curves(o.out / "regression_loss.png", {"train mse": curve}, title="regression: sin(3x)")))
    return {"first": curve[0], "last": curve[-1], "test": test}


if __name__ == "__main__":
    main()
