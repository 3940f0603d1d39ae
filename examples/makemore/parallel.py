"""makemore, data-parallel: the MLP's training step split across 8 XLA host devices.

``XlaExecutable.of_plan(plan, devices=8, split=[tokens, targets])`` emits the same plan with
a ``DataParallel`` sharding: each device takes 1/8 of the batch rows, computes its share
of the loss and gradient sums, and an all-reduce adds the shares. The parameters are
replicated. Only the order of the batch sums changes, so the run is compared with the
single-device XLA run from the same start, step by step:

- one step, every gradient element: ``|g8 - g1| <= 64 eps32 (1 + |g1|)`` (the emitted
  lesson's envelope: a few dozen reordered f32 additions);
- the whole run: every step's loss within ``1e-5 * steps`` of the single-device loss.
  Reordering errors of about 1e-7 per step feed back through SGD and grow slowly; a
  per-step budget of 1e-5 is two orders above one step's reordering error, and a real
  sharding mistake (a share dropped or counted twice) moves the loss by 1e-2 at once.

The token and target inputs are recorded dense here (one-hot rows, and the embedding as a
one-hot matmul, which is exact: each output is one weight plus zeros): the emitter today
shards only dense inputs, not selections crossing as row indices.

The host "devices" are XLA:CPU partitions of this machine (``XLA_FLAGS=
--xla_force_host_platform_device_count=8``, set below before jax starts), so this shows
the mechanics, not a speed-up.

Run: ``python examples/makemore/parallel.py [--steps N] [--smoke] [--quiet] [--out DIR]``.
"""

from __future__ import annotations

import os

# Before anything imports jax: XLA reads its flags once, at start-up.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()

import time
from collections.abc import Sequence

import numpy as np
from corpus import BATCH, CONTEXT, DIM, HERE, VOCAB, CharMlp, Recorded, report, splits

from topos import Parameters, Symbol, Tape, Tensor, XlaExecutable, f32, xla
from topos.data import Loader
from topos.nn import cross_entropy, named_parameters
from topos.optim import Sgd, schedules
from topos.progress import Progress, options, plot_curves, wrote

DEVICES = 8
EPS32 = float(np.finfo(np.float32).eps)
PER_STEP = 1e-5


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=3000, smoke_steps=20, out=HERE / "out")
    if xla.device_count() < DEVICES:
        raise SystemExit(f"this process has {xla.device_count()} XLA devices; start it with "
                         f"XLA_FLAGS=--xla_force_host_platform_device_count={DEVICES}")
    tape = Tape(f32)
    model = CharMlp(tape, seed=7)
    tokens = tape.input(np.zeros((BATCH * CONTEXT, VOCAB), np.float32))
    targets = tape.input(np.zeros((BATCH, VOCAB), np.float32))
    embedded = tokens.matmul(tape.resolve(model.embedding.table)).reshape((BATCH, CONTEXT * DIM))
    loss_value = cross_entropy(model.head(embedded), targets)
    adjoints = tape.differentiate(loss_value, [symbol for _, symbol in named_parameters(model)])
    network = tape.seal()
    plan = network.entry(adjoints.roots()).lower()
    single = XlaExecutable.of_plan(plan)
    many = XlaExecutable.of_plan(plan, devices=DEVICES, split=[tokens.symbol, targets.symbol])
    eye = np.eye(VOCAB, dtype=np.float32)

    def feeder(arrays: tuple[np.ndarray, ...]) -> dict[Symbol, Tensor]:
        return {tokens.symbol: Tensor(eye[arrays[0].reshape(-1)]), targets.symbol: Tensor(eye[arrays[1]])}
    mesh = [line.strip() for line in many.text.splitlines() if "sdy.mesh" in line]
    print(f"{DEVICES} devices, {BATCH // DEVICES} rows each; {mesh[0] if mesh else 'no mesh line'}")

    def step(executable: XlaExecutable, params: Parameters, feeds: dict[Symbol, Tensor]) -> tuple[float, Parameters]:
        run = executable.forward(params, feeds)
        gradients = params.with_payloads((w, run.of(g)) for w, g in adjoints.pairs())
        return run.of(loss_value.symbol).scalar(), gradients

    data = splits(o.smoke)
    loader = Loader(data["train"], batch=BATCH)
    draws = np.random.default_rng(0)
    start = network.parameters()
    first = feeder(loader.sample(np.random.default_rng(5)).arrays)
    _, g1 = step(single, start, first)
    _, g8 = step(many, start, first)
    worst = max(
        float(np.max(np.abs(b.numpy().astype(np.float64) - a.numpy()) / (64 * EPS32 * (1.0 + np.abs(a.numpy())))))
        for a, b in zip(g1.payloads(), g8.payloads(), strict=True)
    )
    print(f"one step, 8 devices against 1: worst gradient gap {worst:.3f} of the envelope 64 eps32 (1 + |g|)")

    optimizer = Sgd(learning_rate=schedules.piecewise_constant([int(0.7 * o.steps)], [0.1, 0.01]))
    p1, p8 = start, start
    s1, s8 = optimizer.init(start), optimizer.init(start)
    curve1: list[float] = []
    curve8: list[float] = []
    seconds = {"one": 0.0, "eight": 0.0}
    with Progress(o.steps, description="parallel", quiet=o.quiet) as bar:
        for _ in range(o.steps):
            feeds = feeder(loader.sample(draws).arrays)
            t = time.perf_counter()
            loss1, grads1 = step(single, p1, feeds)
            seconds["one"] += time.perf_counter() - t
            t = time.perf_counter()
            loss8, grads8 = step(many, p8, feeds)
            seconds["eight"] += time.perf_counter() - t
            p1, s1 = optimizer.update(grads1, s1, p1)
            p8, s8 = optimizer.update(grads8, s8, p8)
            curve1.append(loss1)
            curve8.append(loss8)
            bar.update(loss=loss8, items=BATCH)
    gaps = np.abs(np.array(curve8) - np.array(curve1))
    print(f"{o.steps} steps: largest loss gap {gaps.max():.2e} (envelope {PER_STEP * o.steps:.1e}); "
          f"step time {1e3 * seconds['one'] / o.steps:.2f} ms on 1 device, {1e3 * seconds['eight'] / o.steps:.2f} ms on {DEVICES}")
    if worst > 1.0 or gaps.max() > PER_STEP * o.steps:
        raise SystemExit("the data-parallel run left its envelope")
    print(wrote("gap curve", plot_curves(o.out / "parallel_gap.png", {"|loss(8) - loss(1)|": gaps.tolist()}, title="8 devices against 1", ylabel="loss gap")))
    # The evaluation and sampling exports of the shared lessons read the same parameter
    # paths; move the trained tables over by path.
    recorded = Recorded(lambda t: CharMlp(t, seed=7))
    pairs = list(zip(named_parameters(model), named_parameters(recorded.model), strict=True))

    def moved(params: Parameters) -> Parameters:
        return recorded.network.parameters().with_payloads((theirs, params.of(ours)) for (_, ours), (_, theirs) in pairs)

    result = report(recorded, moved(p8), curve8, seconds["eight"], o, "parallel")
    result.update(envelope=worst, gap=float(gaps.max()), single_valid=recorded.split_loss(moved(p1), data["valid"]))
    return result


if __name__ == "__main__":
    main()
