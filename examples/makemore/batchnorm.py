"""makemore, part 3: batch normalization, with running statistics in the parameter table.

The hidden layer is ``Linear (no bias) -> BatchNorm -> tanh``. Training normalizes with the
batch's own mean and variance; a model that samples one name at a time cannot, so it reads
running averages instead. Those averages are parameters: slots in the same table as the
weights (so a checkpoint carries them), left out of the gradient, and updated after every
step from the batch statistics the training plan observes. The evaluation and sampling
exports record the inference form, which reads them.

Run: ``python examples/makemore/batchnorm.py [--steps N] [--smoke] [--quiet] [--out DIR]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from corpus import CONTEXT, DIM, HERE, HIDDEN, VOCAB, Recorded, report, train

from topos import Parameters, Symbol, Tape, Tensor, Value
from topos.init import normal
from topos.nn import Activation, BatchNorm, Embedding, Linear, Visitor, bind
from topos.optim import Sgd, schedules
from topos.progress import options

MOMENTUM = 0.001


class NormedMlp:
    def __init__(self, tape: Tape, seed: int) -> None:
        init = normal(seed, 0.1, tape.element)
        self.embedding = Embedding.init(tape, VOCAB, DIM, init)
        # The lecture's Kaiming gain for tanh, 5/3 / sqrt(fan_in); no bias: the norm's shift
        # replaces it.
        self.hidden = Linear.init(tape, CONTEXT * DIM, HIDDEN, normal(seed + 2, (5 / 3) / (CONTEXT * DIM) ** 0.5, tape.element), bias=False)
        self.norm = BatchNorm(tape, np.ones(HIDDEN), np.zeros(HIDDEN), epsilon=1e-5)
        self.running_mean = tape.parameter(np.zeros(HIDDEN)).symbol
        self.running_variance = tape.parameter(np.ones(HIDDEN)).symbol
        self.out = Linear.init(tape, HIDDEN, VOCAB, normal(seed + 1, 0.01, tape.element))
        self.batch_mean: Value | None = None
        self.batch_variance: Value | None = None

    def _hidden(self, tokens: Value) -> Value:
        return self.hidden(self.embedding(tokens).reshape((tokens.shape[0] // CONTEXT, CONTEXT * DIM)))

    def training(self, tokens: Value) -> Value:
        normed = self.norm.express(self._hidden(tokens))
        self.batch_mean, self.batch_variance = normed.mean, normed.variance
        return self.out(Activation.TANH(normed.output))

    def __call__(self, tokens: Value) -> Value:
        h = self._hidden(tokens)
        normed = self.norm.express_with(h, bind(h, self.running_mean), bind(h, self.running_variance))
        return self.out(Activation.TANH(normed))

    def visit(self, visitor: Visitor) -> None:
        visitor.child("embedding", self.embedding)
        visitor.child("hidden", self.hidden)
        visitor.child("norm", self.norm)
        visitor.parameter("running_mean", self.running_mean)
        visitor.parameter("running_variance", self.running_variance)
        visitor.child("out", self.out)


class NormedRecording(Recorded):
    def training_logits(self, tokens: Value) -> Value:
        model: NormedMlp = self.model
        return model.training(tokens)

    def wrt(self, tape: Tape) -> list[Symbol]:
        model: NormedMlp = self.model
        running = {model.running_mean, model.running_variance}
        return [s for s in super().wrt(tape) if s not in running]

    def observed(self) -> tuple[Symbol, ...]:
        model: NormedMlp = self.model
        assert model.batch_mean is not None and model.batch_variance is not None
        return (model.batch_mean.symbol, model.batch_variance.symbol)


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    o = options(__doc__.split("\n\n")[0], argv, steps=20000, smoke_steps=60, out=HERE / "out")
    recorded = NormedRecording(lambda tape: NormedMlp(tape, seed=7))
    model: NormedMlp = recorded.model
    plan = recorded.training_plan()
    mean_symbol, variance_symbol = recorded.observed()

    pending: list[tuple[Symbol, Tensor]] = []

    def step(parameters: Parameters, feeds: dict[Symbol, Tensor]) -> tuple[float, Parameters]:
        run = plan.forward(parameters, feeds)
        # The running slots get a zero gradient (they are not differentiated), so the optimizer
        # leaves them alone; after its update, fold this batch's statistics into them.
        pending[:] = [
            (model.running_mean, parameters.of(model.running_mean) * (1 - MOMENTUM) + run.of(mean_symbol) * MOMENTUM),
            (model.running_variance, parameters.of(model.running_variance) * (1 - MOMENTUM) + run.of(variance_symbol) * MOMENTUM),
        ]
        return run.of(recorded.loss.symbol).scalar(), run.recorded_gradients(recorded.adjoints)

    def running(parameters: Parameters) -> Parameters:
        return parameters.with_payloads(pending)

    optimizer = Sgd(learning_rate=schedules.piecewise_constant([int(0.7 * o.steps)], [0.1, 0.01]))
    parameters, curve, seconds = train(recorded, step, optimizer, o, "batchnorm", after=running)
    spread = parameters.of(model.running_variance).numpy()
    print(f"running variance: min {spread.min():.3f} max {spread.max():.3f} (the inference exports read these)")
    return report(recorded, parameters, curve, seconds, o, "batchnorm")


if __name__ == "__main__":
    main()
