"""makemore with Adam: the same MLP, Adam's moments, gradients clipped by global norm, and
weight decay on the matrices only (a decay mask leaves biases and the embedding alone).

Adam settles in far fewer steps than plain SGD at the lecture's rates; clipping keeps the
early, large gradients of a fresh network from throwing it off.

Run: ``python examples/makemore/adam.py [--steps N] [--smoke] [--quiet] [--out DIR]``.
"""

from __future__ import annotations

from collections.abc import Sequence

from corpus import HERE, CharMlp, Recorded, plan_step, report, train

from topos import Parameters
from topos.optim import (
    Adam,
    add_weight_decay,
    clip_by_global_norm,
    decay_mask,
    global_norm,
    masked,
    schedules,
)
from topos.progress import options


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=10000, smoke_steps=60, out=HERE / "out")
    recorded = Recorded(lambda tape: CharMlp(tape, seed=7))
    start = recorded.network.parameters()
    mask = decay_mask(start, exclude=[recorded.model.embedding.table])
    print(f"decayed: {len(masked(start, mask))} of {len(start)} parameter tables")
    norms: list[float] = []

    def shape(gradients: Parameters, parameters: Parameters) -> Parameters:
        norms.append(global_norm(gradients))
        return add_weight_decay(clip_by_global_norm(gradients, 1.0), parameters, 1e-4, where=mask)

    optimizer = Adam(learning_rate=schedules.cosine_decay(0.01, o.steps, 0.001))
    parameters, curve, seconds = train(recorded, plan_step(recorded, recorded.training_plan()), optimizer, o, "adam", shape_gradients=shape)
    clipped = sum(n > 1.0 for n in norms)
    print(f"clipped {clipped} of {len(norms)} steps (global norm > 1.0)")
    return report(recorded, parameters, curve, seconds, o, "adam")


if __name__ == "__main__":
    main()
