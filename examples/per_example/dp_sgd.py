"""Per-example gradient norms and DP-SGD steps: ``batch(gradient(...))`` on a small classifier.

DP-SGD (Abadi et al. 2016) bounds what one example can move the model: every example's
gradient is clipped to a global L2 norm of at most ``C``, the clipped gradients are summed,
Gaussian noise of deviation ``sigma * C`` is added, and the sum is divided by the batch.
That needs each example's own gradient, not the batch's mean.

The classifier is a 196-64-10 tanh MLP on MNIST downsampled to 14x14 (the committed real
subset in ``examples/mnist/data``: 2,000 train and 500 test images; nothing is downloaded).
It is recorded over ONE example: its loss, its gradient (``tape.differentiate``), the
gradient's global norm and the clipped gradient are all ordinary nodes. ``batch(network,
over=[image, label], size=B)`` then reads that network over B examples at once: every
per-example value gains a leading axis of B. The noise, the sum over the batch and the
update are numpy, the same code for both sides of the check.

The check: under ``Numerics.EXACT`` the batched plan's slice b is, bit for bit, the
unbatched plan run on example b alone (``topos.batch``'s guarantee), for every gradient, the
norm and the clipped gradient; the script compares all B examples of the first step and
prints the result (it exits non-zero on a mismatch). Then it times one step's per-example
gradients each way and trains ``--steps`` DP-SGD steps.

Run: ``python examples/per_example/dp_sgd.py [--steps N] [--batch B] [--smoke] [--quiet]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from topos import Network, Numerics, Parameters, Symbol, Tape, Tensor, XlaExecutable, batch, f32
from topos.data import read_idx
from topos.init import xavier
from topos.nn import Activation, Mlp, cross_entropy, named_parameters
from topos.progress import Progress, options

HERE = Path(__file__).resolve().parent
MNIST = HERE.parent / "mnist" / "data"
SIDE, CLASSES, HIDDEN = 14, 10, 64
MEAN, DEVIATION = 0.1302, 0.2801
#: The clipping norm C, the noise multiplier sigma and the learning rate of the DP-SGD step.
CLIP, NOISE, RATE = 1.0, 1.1, 0.5

Floats = np.ndarray[Any, np.dtype[np.float32]]
Ints = np.ndarray[Any, np.dtype[np.int64]]
Gradients = dict[str, Floats]


def digits(split: str, count: int) -> tuple[Floats, Ints]:
    """``count`` MNIST images of ``split`` as 196 features (2x2 means), standardized, and labels."""
    stem = {"train": "train", "test": "t10k"}[split]
    images = read_idx(MNIST / f"{stem}-images-idx3-ubyte.gz")[:count].astype(np.float32) / 255.0
    labels = read_idx(MNIST / f"{stem}-labels-idx1-ubyte.gz")[:count].astype(np.int64)
    small = images.reshape(-1, SIDE, 2, SIDE, 2).mean(axis=(2, 4)).reshape(-1, SIDE * SIDE)
    # The committed training subset's mean and deviation at this resolution (0.1302, 0.2801).
    return ((small - MEAN) / DEVIATION).astype(np.float32), labels


class Classifier:
    """The MLP over one example: loss, gradient, its global norm and the clipped gradient."""

    def __init__(self) -> None:
        tape = Tape(f32)
        model = Mlp(tape, [SIDE * SIDE, HIDDEN, CLASSES], Activation.TANH, xavier(seed=0))
        image = tape.input(np.zeros((1, SIDE * SIDE), np.float32))
        label = tape.input(Tensor.selection([0], CLASSES))
        scores = model(image)
        loss = cross_entropy(scores, label)
        named = named_parameters(model)
        adjoints = tape.differentiate(loss, [symbol for _, symbol in named])
        grads = [tape.resolve(symbol) for symbol in adjoints.gradients()]
        squares = (grads[0] * grads[0]).sum()
        for g in grads[1:]:
            squares = squares + (g * g).sum()
        norm = squares.sqrt()
        # min(1, C / norm) as 1 / max(1, norm / C): a zero gradient keeps its factor of one.
        factor = 1.0 / (norm * (1.0 / CLIP)).maximum(1.0)
        clipped = [g * factor.broadcast(g.shape) for g in grads]
        self.network: Network = tape.seal()
        self.names = tuple(str(path) for path, _ in named)
        self.parameters = tuple(symbol for _, symbol in named)
        self.image, self.label, self.scores, self.loss = image.symbol, label.symbol, scores.symbol, loss.symbol
        self.gradients = adjoints.gradients()
        self.norm = norm.symbol
        self.clipped = tuple(c.symbol for c in clipped)

    def roots(self) -> tuple[Symbol, ...]:
        return (self.loss, *self.gradients, self.norm, *self.clipped)


class PerExample:
    """The classifier batched over ``size`` examples, and the loop over examples it replaces."""

    def __init__(self, classifier: Classifier, size: int) -> None:
        self.classifier, self.size = classifier, size
        self.wide, self.mapping = batch(classifier.network, over=[classifier.image, classifier.label], size=size)
        self.wide_roots = tuple(self.mapping.of(s) for s in classifier.roots())
        self.eye = np.eye(CLASSES, dtype=np.float32)

    def wide_feeds(self, images: Floats, labels: Ints) -> dict[Symbol, Tensor]:
        # A batched selection is fed dense, [B, 1, classes]: a selection payload has rank two.
        c = self.classifier
        return {self.mapping.of(c.image): Tensor(images[:, None, :]), self.mapping.of(c.label): Tensor(self.eye[labels][:, None, :])}

    def one_feeds(self, images: Floats, labels: Ints, b: int) -> dict[Symbol, Tensor]:
        c = self.classifier
        return {c.image: Tensor(images[b : b + 1]), c.label: Tensor.selection([int(labels[b])], CLASSES)}


def collect(run: Any, symbols: Sequence[Symbol], names: Sequence[str]) -> Gradients:
    return {name: run.of(symbol).numpy() for name, symbol in zip(names, symbols, strict=True)}


def check_bits(per: PerExample, table: Parameters, images: Floats, labels: Ints) -> tuple[int, int]:
    """Examples whose every root (gradients, norm, clipped gradients) matches bit for bit,
    batched Exact plan against the unbatched Exact plan run on each example alone."""
    c = per.classifier
    wide = per.wide.entry(per.wide_roots).numerics(Numerics.EXACT).lower()
    alone = c.network.entry(c.roots()).numerics(Numerics.EXACT).lower()
    run = wide.forward(per.mapping.parameters(table), per.wide_feeds(images, labels))
    batched = [run.of(s).numpy() for s in per.wide_roots]
    matching = 0
    for b in range(per.size):
        one = alone.forward(table, per.one_feeds(images, labels, b))
        same = all(
            np.array_equal(one.of(s).bits(), Tensor(np.ascontiguousarray(got[b])).bits())
            for s, got in zip(c.roots(), batched, strict=True)
        )
        matching += int(same)
    return matching, per.size


def median_ms(call: Callable[[], object], repeats: int) -> tuple[float, float]:
    """The median milliseconds of ``repeats`` calls after a warm-up, and the process's CPU
    share while they ran (CPU time over wall time: below 1 on a shared host, the neighbours ran)."""
    call()
    samples, cpu = [], time.process_time()
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3, (time.process_time() - cpu) / max(sum(samples), 1e-12)


def timings(per: PerExample, table: Parameters, images: Floats, labels: Ints, repeats: int, xla: bool) -> dict[str, tuple[float, float]]:
    """Milliseconds (and CPU share) for one batch's per-example gradients, norms and clipped
    gradients, each way."""
    c = per.classifier
    wide_table = per.mapping.parameters(table)
    feeds = per.wide_feeds(images, labels)
    singles = [per.one_feeds(images, labels, b) for b in range(per.size)]
    out: dict[str, tuple[float, float]] = {}
    for numerics in (Numerics.EXACT, Numerics.FAST):
        alone = c.network.entry(c.roots()).numerics(numerics).lower()
        wide = per.wide.entry(per.wide_roots).numerics(numerics).lower()
        name = numerics.name.lower()

        def loop(plan: Any = alone) -> None:
            for one in singles:
                plan.forward(table, one)

        def batched(plan: Any = wide) -> None:
            plan.forward(wide_table, feeds)

        out[f"loop over examples, {name} plan"] = median_ms(loop, repeats)
        out[f"batched, {name} plan"] = median_ms(batched, repeats)
    if xla:
        executable = XlaExecutable.of_plan(per.wide.entry(per.wide_roots).lower())
        out["batched, XLA road"] = median_ms(lambda: executable.forward(wide_table, feeds), repeats)
    return out


def dp_step(per: PerExample, plan: Any, table: Parameters, images: Floats, labels: Ints, noise: np.random.Generator) -> tuple[Parameters, Floats, float]:
    """One DP-SGD step: per-example clipped gradients summed, noised, averaged, applied.

    Returns the new table, each example's gradient norm, and the batch's mean loss."""
    c = per.classifier
    run = plan.forward(per.mapping.parameters(table), per.wide_feeds(images, labels))
    norms = run.of(per.mapping.of(c.norm)).numpy()
    updated = []
    for symbol, clipped in zip(c.parameters, c.clipped, strict=True):
        total = run.of(per.mapping.of(clipped)).numpy().sum(axis=0, dtype=np.float64)
        private = (total + noise.normal(0.0, NOISE * CLIP, total.shape)) / per.size
        updated.append(Tensor((table.of(symbol).numpy() - RATE * private).astype(np.float32)))
    loss = float(run.of(per.mapping.of(c.loss)).numpy().mean())
    return Parameters(table.lineage, table.symbols, tuple(updated)), norms, loss


def accuracy(classifier: Classifier, table: Parameters, images: Floats, labels: Ints) -> float:
    """Test accuracy: the same network batched over the whole test set, read at its logits."""
    c = classifier
    wide, mapping = batch(c.network, over=c.image, size=len(images))
    plan = wide.entry(mapping.of(c.scores)).numerics(Numerics.FAST).lower()
    run = plan.forward(mapping.parameters(table), {mapping.of(c.image): Tensor(images[:, None, :])})
    predicted = run.of(mapping.of(c.scores)).numpy().reshape(len(images), CLASSES).argmax(axis=1)
    return float((predicted == labels).mean())


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--batch", type=int, default=None, help="examples per DP-SGD step (default 256; 16 with --smoke)")
    o = options(__doc__.split("\n\n")[0], argv, steps=40, smoke_steps=2, out=HERE / "out", parents=[extra])
    parsed, _ = extra.parse_known_args(list(argv) if argv is not None else None)
    size = parsed.batch or (16 if o.smoke else 256)
    train, test = digits("train", 64 if o.smoke else 2000), digits("test", 100 if o.smoke else 500)
    classifier = Classifier()
    per = PerExample(classifier, size)
    table = classifier.network.parameters()
    first = (train[0][:size], train[1][:size])

    matching, count = check_bits(per, table, *first)
    verdict = "bit for bit" if matching == count else "MISMATCH"
    print(f"per-example gradients, norms and clipped gradients, batched Exact plan against the loop over examples: "
          f"{matching} of {count} examples {verdict}")
    from topos.xla import available

    spent = timings(per, table, *first, repeats=1 if o.smoke else 7, xla=available() and not o.smoke)
    for label, (ms, share) in spent.items():
        print(f"  {label}: {ms:.2f} ms per batch of {size} (CPU share {share:.2f})")
    before = accuracy(classifier, table, *test)
    plan = per.wide.entry(per.wide_roots).numerics(Numerics.FAST).lower()
    noise = np.random.default_rng(0)
    order = np.random.default_rng(1)
    norms_first: Floats | None = None
    losses: list[float] = []
    with Progress(o.steps, description="dp-sgd", quiet=o.quiet) as bar:
        for _ in range(o.steps):
            pick = order.choice(len(train[0]), size, replace=False)
            table, norms, loss = dp_step(per, plan, table, train[0][pick], train[1][pick], noise)
            norms_first = norms if norms_first is None else norms_first
            losses.append(loss)
            bar.update(loss=loss, items=size)
    after = accuracy(classifier, table, *test)
    assert norms_first is not None
    clipped = float((norms_first > CLIP).mean())
    print(f"step 1 gradient norms: min {norms_first.min():.3f}, median {np.median(norms_first):.3f}, max {norms_first.max():.3f}; "
          f"{clipped:.0%} clipped at C = {CLIP}")
    print(f"last step gradient norms: min {norms.min():.3f}, median {np.median(norms):.3f}, max {norms.max():.3f}")
    print(f"dp-sgd: {o.steps} steps of {size} (C {CLIP}, sigma {NOISE}, rate {RATE}); batch loss {losses[0]:.3f} to {losses[-1]:.3f}; "
          f"test accuracy {before:.3f} to {after:.3f} on {len(test[0])} images")
    if matching != count:
        sys.exit(1)
    return {"matching": float(matching), "count": float(count), "first": losses[0], "last": losses[-1], "accuracy": after,
            "median_norm": float(np.median(norms_first)), **{label: ms for label, (ms, _) in spent.items()}}


if __name__ == "__main__":
    main()
