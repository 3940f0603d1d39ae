"""LeNet-5 on real MNIST: two convolutions, two poolings, three dense layers, through the
``topos.nn`` facades, trained with Adam on the Fast plan or on the XLA road.

The network follows LeCun et al. 1998 with today's habits: ReLU instead of scaled tanh, max
pooling instead of trainable subsampling, a plain 10-way softmax head.

    [B, 1, 28, 28] -conv 5x5 pad 2-> [B, 6, 28, 28] -pool-> [B, 6, 14, 14]
                   -conv 5x5------> [B, 16, 10, 10] -pool-> [B, 16, 5, 5] -> 400 -> 120 -> 84 -> 10

Run: ``python examples/mnist/lenet.py [--road fast|xla] [--epochs E | --steps N] [--schedule constant|cosine] [--smoke] [--quiet] [--out DIR]``
(``python examples/mnist/fetch_mnist.py`` first for the full data set; without it the committed
subset of 2,000 images is used). Adam's rate is 1e-3 throughout, or with ``--schedule cosine``
1e-3 at the first step falling along half a cosine to 0 after the last: a constant rate keeps
the late steps as large as the early ones, and the accuracy stalls near 98.7%.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from digits import HERE, SCHEDULES, Classifier, fit, mnist

from topos import Tape, Value
from topos.init import kaiming
from topos.nn import Activation, Conv2d, Linear, MaxPool, Sequential, Visitor
from topos.progress import options


def flatten(x: Value) -> Value:
    return x.reshape((x.shape[0], x.shape.volume // x.shape[0]))


class LeNet5:
    def __init__(self, tape: Tape, seed: int = 5) -> None:
        init = kaiming(seed)
        self.features = Sequential(
            Conv2d.init(tape, 1, 6, 5, init, padding=2), Activation.RELU, MaxPool(2),
            Conv2d.init(tape, 6, 16, 5, init), Activation.RELU, MaxPool(2),
        )
        self.head = Sequential(
            Linear.init(tape, 400, 120, init), Activation.RELU,
            Linear.init(tape, 120, 84, init), Activation.RELU,
            Linear.init(tape, 84, 10, init),
        )

    def __call__(self, images: Value) -> Value:
        return self.head(flatten(self.features(images)))

    def visit(self, visitor: Visitor) -> None:
        visitor.child("features", self.features)
        visitor.child("head", self.head)


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--road", choices=["fast", "xla"], default="fast", help="the Fast plan or the XLA road (default fast)")
    parser.add_argument("--epochs", type=int, default=1, help="whole epochs to train (default 1; --steps trains steps instead)")
    parser.add_argument("--schedule", choices=SCHEDULES, default="constant", help="Adam's learning rate over the run (default constant)")
    known, rest = parser.parse_known_args(argv)
    o = options(__doc__.split("\n\n")[0], argv, steps=0, smoke_steps=30, out=HERE / "out", parents=[parser])
    data, where = mnist(o.smoke)
    print(f"data: {where}: {data['train'][1].size} train, {data['test'][1].size} test images")
    classifier = Classifier(lambda tape: LeNet5(tape), (1, 28, 28), batch=32, rows=500)
    # ``--steps N`` trains N steps instead of whole epochs (a quick throughput figure).
    return fit(classifier, data, o, known.road, "lenet", epochs=None if "--steps" in rest else known.epochs, schedule=known.schedule)


if __name__ == "__main__":
    main()
