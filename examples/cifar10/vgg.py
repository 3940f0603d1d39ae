"""A VGG-style network for CIFAR-10's shape: conv-bn-relu blocks, max-pooling, a dense head.

    [B, 3, 32, 32] -> (conv 3x3 8, bn, relu) x2, pool -> [B, 8, 16, 16]
                   -> conv 3x3 16, bn, relu, pool    -> [B, 16, 8, 8]
                   -> conv 3x3 32, bn, relu, pool    -> [B, 32, 4, 4] -> 512 -> 64 -> 10

BatchNorm normalizes each channel over the batch and all positions (the feature map is
viewed as ``[B*H*W, C]``). Training uses the batch statistics; the step also reads them
out, and the loop keeps running averages (momentum 0.1) that the evaluation export reads
as inputs, so a test image's class never depends on the other images in its batch.

THE DATA IS A STAND-IN, NOT CIFAR-10. CIFAR-10 is not available offline here, so the
images are MNIST digits padded from 28x28 to 32x32 and repeated over 3 channels: the same
tensor shape and 10 classes. The accuracy printed is therefore not a CIFAR-10 number.
``topos.data.read_cifar`` reads the real CIFAR-10 binary batches; with them in
``examples/cifar10/cifar-10-batches-bin/`` this script trains on CIFAR-10 instead.

Run: ``python examples/cifar10/vgg.py [--road fast|xla] [--steps N] [--smoke] [--quiet] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "mnist"))

from digits import CLASSES, Classifier, Floats, Ints, fit, mnist  # noqa: E402

from topos import Parameters, Symbol, Tape, Tensor, Value, XlaExecutable, f32  # noqa: E402
from topos.data import Feeder, Loader, Selection, read_cifar  # noqa: E402
from topos.init import kaiming  # noqa: E402
from topos.nn import (  # noqa: E402
    Activation,
    BatchNorm,
    Conv2d,
    Linear,
    Visitor,
    cross_entropy,
    max_pool,
    named_parameters,
)
from topos.progress import options  # noqa: E402

CIFAR = HERE / "cifar-10-batches-bin"
MOMENTUM = 0.1


class ConvBnRelu:
    def __init__(self, tape: Tape, channels: int, filters: int, seed: int) -> None:
        self.conv = Conv2d.init(tape, channels, filters, 3, kaiming(seed), padding=1)
        self.norm = BatchNorm(tape, np.ones(filters, np.float32), np.zeros(filters, np.float32), 1e-5)
        self.filters = filters

    def __call__(self, x: Value, statistics: tuple[Value, Value] | None, observed: list[Value]) -> Value:
        y = self.conv(x)
        b, c, h, w = y.shape.axes
        rows = y.permute((0, 2, 3, 1)).reshape((b * h * w, c))
        if statistics is None:
            out = self.norm.express(rows)
            observed += [out.mean, out.variance]
            normed = out.output
        else:
            normed = self.norm.express_with(rows, *statistics)
        return Activation.RELU(normed.reshape((b, h, w, c)).permute((0, 3, 1, 2)))

    def visit(self, visitor: Visitor) -> None:
        visitor.child("conv", self.conv)
        visitor.child("norm", self.norm)


class Vgg:
    def __init__(self, tape: Tape) -> None:
        widths = [(3, 8), (8, 8), (8, 16), (16, 32)]
        self.blocks = [ConvBnRelu(tape, c, f, seed=20 + i) for i, (c, f) in enumerate(widths)]
        self.hidden, self.out = Linear.init(tape, 512, 64, kaiming(30)), Linear.init(tape, 64, CLASSES, kaiming(31))

    def __call__(self, x: Value, statistics: Sequence[tuple[Value, Value]] | None = None, observed: list[Value] | None = None) -> Value:
        seen: list[Value] = [] if observed is None else observed
        for i, block in enumerate(self.blocks):
            x = block(x, None if statistics is None else statistics[i], seen)
            if i != 0:  # pool after the second, third and fourth convolutions
                x = max_pool(x, 2)
        flat = x.reshape((x.shape[0], x.shape.volume // x.shape[0]))
        return self.out(Activation.RELU(self.hidden(flat)))

    def visit(self, visitor: Visitor) -> None:
        for i, block in enumerate(self.blocks):
            visitor.child(f"blocks.{i}", block)
        visitor.child("hidden", self.hidden)
        visitor.child("out", self.out)


class VggClassifier(Classifier):
    """The training step with batch statistics read out; an evaluation export over running ones."""

    def __init__(self, batch: int, rows: int) -> None:
        tape = Tape(f32)
        self.model = Vgg(tape)
        self.batch, self.rows = batch, rows
        self.images = tape.input(np.zeros((batch, 3, 32, 32), np.float32))
        self.labels = tape.input(Tensor.selection([0] * batch, CLASSES))
        self.observed: list[Value] = []
        self.loss = cross_entropy(self.model(self.images, None, self.observed), self.labels)
        self.adjoints = tape.differentiate(self.loss, [s for _, s in named_parameters(self.model)])
        self.probe = tape.input(np.zeros((rows, 3, 32, 32), np.float32))
        self.statistics = [
            (tape.input(np.zeros(b.filters, np.float32)), tape.input(np.ones(b.filters, np.float32))) for b in self.model.blocks
        ]
        self.scores = self.model(self.probe, self.statistics)
        self.network = tape.seal()
        self.plan = self.network.entry(self.adjoints.roots()).observe(*(v.symbol for v in self.observed)).lower()
        self.evaluate_plan = self.network.entry(self.scores.symbol).lower()
        self.feeder = Feeder([(self.images, None), (self.labels, Selection(CLASSES))])
        self.running = [(np.zeros(b.filters, np.float32), np.ones(b.filters, np.float32)) for b in self.model.blocks]

    def step(self, road: str) -> Any:
        executable = XlaExecutable.of_plan(self.plan) if road == "xla" else None

        def step(parameters: Parameters, feeds: dict[Symbol, Tensor]) -> tuple[float, Parameters]:
            if executable is None:
                run: Any = self.plan.forward(parameters, feeds)
                gradients = run.recorded_gradients(self.adjoints)
            else:
                run = executable.forward(parameters, feeds)
                gradients = parameters.with_payloads((w, run.of(g)) for w, g in self.adjoints.pairs())
            values = [run.of(v.symbol).numpy() for v in self.observed]
            self.running = [
                ((1 - MOMENTUM) * m + MOMENTUM * values[2 * i], (1 - MOMENTUM) * v + MOMENTUM * values[2 * i + 1])
                for i, (m, v) in enumerate(self.running)
            ]
            return run.of(self.loss.symbol).scalar(), gradients

        return step

    def predict(self, parameters: Parameters, images: Floats) -> Ints:
        out: list[Ints] = []
        stats = {s.symbol: Tensor(r.astype(np.float32)) for pair, run in zip(self.statistics, self.running, strict=True) for s, r in zip(pair, run, strict=True)}
        for batch in Loader((images,), batch=self.rows, last="pad").epoch(0, shuffle=False):
            feeds = {self.probe.symbol: Tensor(batch.arrays[0].astype(np.float32)), **stats}
            scores = self.evaluate_plan.forward(parameters, feeds).of(self.scores.symbol).numpy()
            out.append(np.argmax(scores, axis=1)[: batch.count].astype(np.int64))
        return np.concatenate(out)


def stand_in(smoke: bool) -> tuple[dict[str, tuple[Floats, Ints]], str]:
    """CIFAR-10 when its binary batches are here; otherwise padded 3-channel MNIST."""
    if CIFAR.exists() and not smoke:
        parts = [read_cifar(CIFAR / f"data_batch_{i}.bin") for i in range(1, 6)]
        test = read_cifar(CIFAR / "test_batch.bin")

        def scaled(images: np.ndarray) -> Floats:
            return ((images.astype(np.float32) / 255.0 - 0.5) / 0.25).astype(np.float32)

        train = (scaled(np.concatenate([p[0] for p in parts])), np.concatenate([p[1] for p in parts]).astype(np.int64))
        return {"train": train, "test": (scaled(test[0]), test[1].astype(np.int64))}, "CIFAR-10"
    digits, where = mnist(smoke)
    padded = {k: (np.repeat(np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)), constant_values=float(x.min())), 3, axis=1), y) for k, (x, y) in digits.items()}
    return padded, f"STAND-IN, not CIFAR-10: {where} padded to 32x32 over 3 channels"


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--road", choices=["fast", "xla"], default="fast", help="the Fast plan or the XLA road (default fast)")
    known = parser.parse_known_args(argv)[0]
    o = options(__doc__.split("\n\n")[0], argv, steps=300, smoke_steps=12, out=HERE / "out", parents=[parser])
    data, where = stand_in(o.smoke)
    print(f"data: {where}: {data['train'][1].size} train, {data['test'][1].size} test images")
    classifier = VggClassifier(batch=16, rows=500)
    # A fixed step budget rather than epochs: an epoch of 60,000 images is long on a CPU.
    return fit(classifier, data, o, known.road, "vgg")


if __name__ == "__main__":
    main()
