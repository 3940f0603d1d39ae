"""makemore, emitted: the same training step as StableHLO, compiled and run by XLA.

``XlaExecutable.of_plan(plan)`` emits the plan as a StableHLO module, compiles it with XLA
and runs it on the parameters and feeds the plan takes. XLA orders its sums its own way, so
this road is checked against the Fast plan within an envelope, not bit for bit: on one
step, every gradient element within ``64 * eps32 * (1 + |g|)``. The selections cross to XLA
as row indices, not one-hot matrices.

Run: ``python examples/makemore/emitted.py [--steps N] [--smoke] [--quiet] [--out DIR]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from corpus import BATCH, HERE, CharMlp, Recorded, Step, report, splits, train

from topos import Parameters, Symbol, Tensor, XlaExecutable
from topos.data import Loader
from topos.optim import Sgd, schedules
from topos.progress import options

EPS32 = float(np.finfo(np.float32).eps)


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=20000, smoke_steps=60, out=HERE / "out")
    recorded = Recorded(lambda tape: CharMlp(tape, seed=7))
    plan = recorded.training_plan()
    executable = XlaExecutable.of_plan(plan)
    print("StableHLO, the first 8 lines:")
    print("\n".join("  " + line[:110] for line in executable.text.splitlines()[:8]))

    # The envelope, on one batch: XLA against the Fast plan.
    parameters = recorded.network.parameters()
    feeds = recorded.feeder(Loader(splits(o.smoke)["train"], batch=BATCH).sample(np.random.default_rng(5)))
    fast = plan.forward(parameters, feeds)
    xla = executable.forward(parameters, feeds)
    worst = 0.0
    for symbol in plan.results():
        a, b = fast.of(symbol).numpy().astype(np.float64), xla.of(symbol).numpy().astype(np.float64)
        worst = max(worst, float(np.max(np.abs(a - b) / (64 * EPS32 * (1.0 + np.abs(a))))))
    print(f"XLA against the Fast plan: worst gap {worst:.3f} of the envelope 64 eps32 (1 + |g|)")
    if worst > 1.0:
        raise SystemExit("the XLA road left its envelope")

    def step(params: Parameters, batch: dict[Symbol, Tensor]) -> tuple[float, Parameters]:
        run = executable.forward(params, batch)
        gradients = params.with_payloads((w, run.of(g)) for w, g in recorded.adjoints.pairs())
        return run.of(recorded.loss.symbol).scalar(), gradients

    road: Step = step
    optimizer = Sgd(learning_rate=schedules.piecewise_constant([int(0.7 * o.steps)], [0.1, 0.01]))
    trained, curve, seconds = train(recorded, road, optimizer, o, "emitted")
    result = report(recorded, trained, curve, seconds, o, "emitted")
    result["envelope"] = worst
    return result


if __name__ == "__main__":
    main()
