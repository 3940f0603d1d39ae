"""makemore, part 2: a character-level MLP (Bengio et al. 2003), recorded once from the
facades, trained with minibatch SGD through a Fast plan, checkpointed to safetensors and
reloaded, then sampled.

The corpus is the 32,469 US baby names of 2017 (``examples/data/names.txt``), so nothing is
downloaded; minibatches are feeds (one-hot selections stored as indices). The learning rate
drops from 0.1 to 0.01 after 70% of the steps, as in the lecture.

Run: ``python examples/makemore/mlp.py [--steps N] [--smoke] [--quiet] [--out DIR]``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence

from corpus import HERE, CharMlp, Recorded, plan_step, report, train

from topos import checkpoint as ckpt
from topos.optim import Sgd, schedules
from topos.progress import options


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=20000, smoke_steps=60, out=HERE / "out")
    recorded = Recorded(lambda tape: CharMlp(tape, seed=7))
    optimizer = Sgd(learning_rate=schedules.piecewise_constant([int(0.7 * o.steps)], [0.1, 0.01]))
    parameters, curve, seconds = train(recorded, plan_step(recorded, recorded.training_plan()), optimizer, o, "mlp")

    with tempfile.TemporaryDirectory() as folder:
        file = os.path.join(folder, "makemore.safetensors")
        ckpt.save(file, recorded.model, parameters)
        restored = ckpt.load(file, recorded.model, recorded.network.parameters())
        same = all((a.bits() == b.bits()).all() for a, b in zip(parameters.payloads(), restored.payloads(), strict=True))
        print(f"checkpoint: {os.path.getsize(file)} bytes, {len(ckpt.read(file).entries)} entries, reloaded {'bit for bit' if same else 'DIFFERENTLY'}")
    return report(recorded, restored, curve, seconds, o, "mlp")


if __name__ == "__main__":
    main()
