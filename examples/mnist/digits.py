"""What the vision lessons share: MNIST as arrays, a classifier recorded with its training
step and its evaluation export, and one training loop for both roads (Fast plan and XLA).

Data. With ``examples/mnist/full/`` filled by ``fetch_mnist.py`` the lessons use the whole of
MNIST (60,000 train, 10,000 test); otherwise, and always in ``--smoke``, they use the real
subset committed in ``examples/mnist/data/`` (the first 2,000 train and 500 test images).
Pixels are scaled to [0, 1] and standardized with MNIST's training mean 0.1307 and
deviation 0.3081.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from topos import Parameters, Plan, Symbol, Tape, Tensor, XlaExecutable, f32
from topos.data import Feeder, Loader, Selection, read_idx
from topos.nn import Module, cross_entropy, named_parameters
from topos.optim import Adam, schedules
from topos.progress import Options, Progress, plot_curves, plot_matrix, wrote

HERE = Path(__file__).resolve().parent
SUBSET, FULL = HERE / "data", HERE / "full"
CLASSES = 10
MEAN, DEVIATION = 0.1307, 0.3081

Floats = np.ndarray[Any, np.dtype[np.float32]]
Ints = np.ndarray[Any, np.dtype[np.int64]]


def mnist(smoke: bool) -> tuple[dict[str, tuple[Floats, Ints]], str]:
    """``{"train", "test"}`` -> (images ``[N, 1, 28, 28]`` standardized, labels ``[N]``), and where from."""
    folder, suffix = (FULL, "") if FULL.exists() and not smoke else (SUBSET, ".gz")
    out: dict[str, tuple[Floats, Ints]] = {}
    for split, stem in (("train", "train"), ("test", "t10k")):
        images = read_idx(folder / f"{stem}-images-idx3-ubyte{suffix}").astype(np.float32) / 255.0
        labels = read_idx(folder / f"{stem}-labels-idx1-ubyte{suffix}").astype(np.int64)
        out[split] = (((images - MEAN) / DEVIATION)[:, None, :, :].astype(np.float32), labels)
    where = "full MNIST (examples/mnist/full)" if folder == FULL else "the committed MNIST subset"
    return out, where


class Classifier:
    """One tape: the training step on ``batch`` images and an evaluation export on ``rows``."""

    def __init__(self, build: Callable[[Tape], Module], image: tuple[int, ...], batch: int, rows: int) -> None:
        tape = Tape(f32)
        self.model = build(tape)
        self.batch, self.rows = batch, rows
        self.images = tape.input(np.zeros((batch, *image), dtype=np.float32))
        self.labels = tape.input(Tensor.selection([0] * batch, CLASSES))
        self.loss = cross_entropy(self.model(self.images), self.labels)
        self.adjoints = tape.differentiate(self.loss, [symbol for _, symbol in named_parameters(self.model)])
        self.probe = tape.input(np.zeros((rows, *image), dtype=np.float32))
        self.scores = self.model(self.probe)
        self.network = tape.seal()
        self.plan = self.network.entry(self.adjoints.roots()).lower()
        self.evaluate_plan = self.network.entry(self.scores.symbol).lower()
        self.feeder = Feeder([(self.images, None), (self.labels, Selection(CLASSES))])

    def step(self, road: str) -> Callable[[Parameters, dict[Symbol, Tensor]], tuple[float, Parameters]]:
        """A training step: the loss and the gradients, through the Fast plan or XLA."""
        if road == "fast":
            plan: Plan = self.plan

            def fast(parameters: Parameters, feeds: dict[Symbol, Tensor]) -> tuple[float, Parameters]:
                run = plan.forward(parameters, feeds)
                return run.of(self.loss.symbol).scalar(), run.recorded_gradients(self.adjoints)

            return fast
        executable = XlaExecutable.of_plan(self.plan)

        def xla(parameters: Parameters, feeds: dict[Symbol, Tensor]) -> tuple[float, Parameters]:
            run = executable.forward(parameters, feeds)
            gradients = parameters.with_payloads((w, run.of(g)) for w, g in self.adjoints.pairs())
            return run.of(self.loss.symbol).scalar(), gradients

        return xla

    def predict(self, parameters: Parameters, images: Floats) -> Ints:
        """Predicted classes of every image, ``rows`` at a time (the last batch padded)."""
        out: list[Ints] = []
        for batch in Loader((images,), batch=self.rows, last="pad").epoch(0, shuffle=False):
            feeds = {self.probe.symbol: Tensor(batch.arrays[0].astype(np.float32))}
            scores = self.evaluate_plan.forward(parameters, feeds).of(self.scores.symbol).numpy()
            out.append(np.argmax(scores, axis=1)[: batch.count].astype(np.int64))
        return np.concatenate(out)


SCHEDULES = ("constant", "cosine")


def fit(classifier: Classifier, data: dict[str, tuple[Floats, Ints]], o: Options, road: str, name: str, *, epochs: int | None = None, learning_rate: float = 1e-3, schedule: str = "constant") -> dict[str, float]:
    """Train ``epochs`` passes (or ``o.steps`` steps: in smoke mode, or without ``epochs``),
    then report test accuracy, the confusion matrix and the speed.

    ``schedule="cosine"`` lowers Adam's rate along half a cosine from ``learning_rate`` at the
    first step to 0 after the last. Each completed epoch short of the end is scored on the
    test set too (``"epoch<k>"`` in the result); that scoring is left out of the times.
    """
    train, test = data["train"], data["test"]
    loader = Loader(train, batch=classifier.batch, seed=0, last="drop")
    per_epoch = train[1].size // classifier.batch
    steps = epochs * per_epoch if epochs is not None and not o.smoke else o.steps
    step = classifier.step(road)
    if schedule not in SCHEDULES:
        raise SystemExit(f"{name}: unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    # A constant rate stays a float, so the constant runs are the ones measured before.
    rate_at = schedules.cosine_decay(learning_rate, steps) if schedule == "cosine" else schedules.constant(learning_rate)
    optimizer = Adam(learning_rate=rate_at if schedule == "cosine" else learning_rate)
    parameters = classifier.network.parameters()
    state = optimizer.init(parameters)
    curve: list[float] = []
    batches = (b for epoch in range(steps // per_epoch + 1) for b in loader.epoch(epoch))
    scores: dict[str, float] = {}
    scoring = 0.0  # seconds spent scoring epochs, taken out of the training times
    start = time.perf_counter()
    warm = start  # after the first step: XLA compiles then, and the rate leaves it out
    with Progress(steps, description=f"{name} ({road})", quiet=o.quiet) as bar:
        for _, batch in zip(range(steps), batches, strict=False):
            loss, gradients = step(parameters, classifier.feeder(batch.arrays))
            parameters, state = optimizer.update(gradients, state, parameters)
            curve.append(loss)
            bar.update(loss=loss, items=classifier.batch)
            if len(curve) == 1:
                warm = time.perf_counter()
            if len(curve) % per_epoch == 0 and len(curve) < steps:
                paused = time.perf_counter()
                epoch = len(curve) // per_epoch
                scores[f"epoch{epoch}"] = float((classifier.predict(parameters, test[0]) == test[1]).mean())
                print(f"{name} ({road}): epoch {epoch}: test accuracy {scores[f'epoch{epoch}']:.4f} "
                      f"after {paused - start - scoring:.1f} s of training")
                scoring += time.perf_counter() - paused
    end = time.perf_counter() - scoring
    seconds = end - start
    predicted = classifier.predict(parameters, test[0])
    accuracy = float((predicted == test[1]).mean())
    if steps % per_epoch == 0:
        scores[f"epoch{steps // per_epoch}"] = accuracy
    confusion = np.zeros((CLASSES, CLASSES), dtype=np.int64)
    np.add.at(confusion, (test[1], predicted), 1)
    rate = (steps - 1) * classifier.batch / max(end - warm, 1e-9)
    print(f"{name} ({road}): {steps} steps of {classifier.batch} in {seconds:.1f} s ({rate:,.0f} images/s after the first step); "
          f"test accuracy {accuracy:.4f} on {test[1].size} images")
    window = max(1, len(curve) // 50)
    smooth = [float(np.mean(curve[i : i + window])) for i in range(0, len(curve), window)]
    print(wrote("loss curve", plot_curves(o.out / f"{name}_{road}_loss.png", {f"train (mean of {window})": (list(range(0, len(curve), window)), smooth)}, title=f"{name} ({road})")))
    print(wrote("confusion matrix", plot_matrix(o.out / f"{name}_{road}_confusion.png", confusion.tolist(), [str(c) for c in range(CLASSES)], title=f"{name} ({road}): test set")))
    return {"accuracy": accuracy, "seconds": seconds, "rate": rate, "steps": float(steps),
            "first": curve[0], "last": float(np.mean(curve[-window:])),
            "lr_first": rate_at(0), "lr_last": rate_at(steps - 1), **scores}
