"""makemore, compiled: the MLP's training step as a Fast plan, and what the plan knows.

``network.entry(adjoints.roots()).lower()`` schedules the step once: which node runs when,
which patterns fuse, and when each value can be freed. ``plan.describe()`` prints that, one
line per node; ``plan.live_series()`` is the number of live elements after each node, whose
peak is the step's working memory (parameters and feeds are borrowed and count zero).

Run: ``python examples/makemore/compiled.py [--steps N] [--smoke] [--quiet] [--out DIR]``.
"""

from __future__ import annotations

from collections.abc import Sequence

from corpus import HERE, CharMlp, Recorded, plan_step, report, train

from topos.optim import Sgd, schedules
from topos.progress import options, plot_curves, wrote


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=20000, smoke_steps=60, out=HERE / "out")
    recorded = Recorded(lambda tape: CharMlp(tape, seed=7))
    plan = recorded.training_plan()
    lines = plan.describe().splitlines()
    print(f"plan.describe(): {len(lines)} lines; the first 12 and the summary:")
    print("\n".join(["  " + line for line in lines[:12]] + ["  ..."] + ["  " + line for line in lines[-3:]]))
    series = plan.live_series()
    peak, node = plan.peak()
    print(f"live elements: peak {peak:,} at node {node} ({len(series)} nodes evaluated); "
          f"{plan.retain_all():,} if nothing were freed")
    print(wrote("live volume", plot_curves(o.out / "compiled_live.png", {"live elements": series}, title="live volume of the training step", ylabel="elements")))
    optimizer = Sgd(learning_rate=schedules.piecewise_constant([int(0.7 * o.steps)], [0.1, 0.01]))
    parameters, curve, seconds = train(recorded, plan_step(recorded, plan), optimizer, o, "compiled")
    result = report(recorded, parameters, curve, seconds, o, "compiled")
    result["peak"] = float(peak)
    return result


if __name__ == "__main__":
    main()
