"""makemore through the facades: the MLP as ``topos.nn`` layers, next to the same model
written by hand on the tape, and what the layers add: names for every parameter.

``corpus.CharMlp`` is ``Embedding`` -> reshape -> ``Sequential(Linear, tanh, Linear)``. Each
facade records the ordinary tape operations you would write yourself (a gather, a matmul,
a broadcast bias) and nothing else, so the hand-written model below, given the same
initial payloads, computes the same loss and gradients bit for bit on the same batch. What
the facades add is structure: :func:`topos.nn.named_parameters` walks the layers and names
each table by its path (``head.0.weights``), which is what checkpoints and decay masks use.

Run: ``python examples/makemore/facades.py [--steps N] [--smoke] [--quiet] [--out DIR]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from corpus import (
    BATCH,
    CONTEXT,
    DIM,
    HERE,
    VOCAB,
    CharMlp,
    Recorded,
    plan_step,
    report,
    splits,
    train,
)

from topos import Parameters, Tape, Tensor, Value, f32
from topos.data import Feeder, Loader, Selection
from topos.nn import named_parameters
from topos.optim import Sgd, schedules
from topos.progress import options


def by_hand(payloads: Sequence[Tensor]) -> tuple[Tape, Value, Value, list[Value], Value]:
    """The same MLP without layers: five parameters and the operations the facades record."""
    tape = Tape(f32)
    table, w1, b1, w2, b2 = (tape.parameter(p) for p in payloads)
    tokens = tape.input(Tensor.selection([0] * (BATCH * CONTEXT), VOCAB))
    targets = tape.input(Tensor.selection([0] * BATCH, VOCAB))
    embedded = table.gather(tokens).reshape((BATCH, CONTEXT * DIM))
    hidden = (embedded.matmul(w1) + b1.broadcast_along(0, BATCH)).tanh()
    logits = hidden.matmul(w2) + b2.broadcast_along(0, BATCH)
    loss = (targets.sum_along(1) * logits.logsumexp(1)).sum() - (targets * logits).sum()
    loss = loss / tape.constant((), float(BATCH))
    return tape, tokens, targets, [table, w1, b1, w2, b2], loss


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=20000, smoke_steps=60, out=HERE / "out")
    recorded = Recorded(lambda tape: CharMlp(tape, seed=7))
    start = recorded.network.parameters()
    named = named_parameters(recorded.model)
    print("parameters by path:")
    for path, symbol in named:
        payload = start.of(symbol)
        print(f"  {path!s:<16} {payload.shape!s:<14} {payload.shape.volume:>6,}")
    print(f"  total {sum(start.of(s).shape.volume for _, s in named):,}")

    # One batch through both recordings, from the same starting payloads.
    tape, tokens, targets, weights, loss = by_hand([start.of(s) for _, s in named])
    adjoints = tape.differentiate(loss, weights)
    network = tape.seal()
    hand_step = network.entry(adjoints.roots()).lower()
    batch = Loader(splits(o.smoke)["train"], batch=BATCH).sample(np.random.default_rng(5))
    hand_run = hand_step.forward(network.parameters(), Feeder([(tokens, Selection(VOCAB)), (targets, Selection(VOCAB))])(batch.arrays))
    facade_run = recorded.training_plan().forward(start, recorded.feeder(batch.arrays))
    hand_gradients: Parameters = hand_run.recorded_gradients(adjoints)
    facade_gradients = facade_run.recorded_gradients(recorded.adjoints)
    same = bool((hand_run.of(loss.symbol).bits() == facade_run.of(recorded.loss.symbol).bits()).all())
    for a, b in zip(hand_gradients.payloads(), (facade_gradients.of(s) for _, s in named), strict=True):
        same = same and bool((a.bits() == b.bits()).all())
    print(f"hand-written and facade step: loss and gradients {'the same bit for bit' if same else 'DIFFERENT'}")
    if not same:
        raise SystemExit("the facades recorded something other than the hand-written model")

    optimizer = Sgd(learning_rate=schedules.piecewise_constant([int(0.7 * o.steps)], [0.1, 0.01]))
    parameters, curve, seconds = train(recorded, plan_step(recorded, recorded.training_plan()), optimizer, o, "facades")
    result = report(recorded, parameters, curve, seconds, o, "facades")
    result["same"] = float(same)
    return result


if __name__ == "__main__":
    main()
