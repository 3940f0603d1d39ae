"""The data every makemore lesson shares: the names, their vocabulary, the splits, the model.

The corpus is the 32,469 US baby names of 2017 (``examples/data/names.txt``). As in the
lectures, the names are shuffled once with a fixed seed and cut 80/10/10 into train,
validation and test; each example is ``CONTEXT`` previous characters (``.``-padded) and
the next character. ``--smoke`` keeps the first 2,000 names so that a lesson runs in
seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from topos import (
    ElementType,
    Network,
    Optimizer,
    Parameters,
    Plan,
    Symbol,
    Tape,
    Tensor,
    Value,
    f32,
)
from topos.data import CharVocabulary, Feeder, Loader, Selection
from topos.init import normal
from topos.nn import (
    Activation,
    Embedding,
    Linear,
    Sequential,
    Visitor,
    cross_entropy,
    named_parameters,
)
from topos.progress import Options, Progress, plot_curves, plot_table, wrote

HERE = Path(__file__).resolve().parent
NAMES = (HERE.parent / "data" / "names.txt").read_text(encoding="ascii").split()
VOCABULARY = CharVocabulary.of(NAMES, boundary=".")
VOCAB = VOCABULARY.size
CONTEXT, DIM, HIDDEN, BATCH = 3, 10, 200, 32
SMOKE_NAMES = 1000

Ints = np.ndarray[tuple[int, ...], np.dtype[np.int64]]


def names(smoke: bool) -> list[str]:
    shuffled = list(NAMES)
    np.random.default_rng(42).shuffle(shuffled)
    return shuffled[:SMOKE_NAMES] if smoke else shuffled


def splits(smoke: bool, context: int = CONTEXT) -> dict[str, tuple[Ints, Ints]]:
    """``{"train", "valid", "test"}`` -> (contexts ``[N, context]``, next characters ``[N]``)."""
    words = names(smoke)
    a, b = int(0.8 * len(words)), int(0.9 * len(words))
    parts = {"train": words[:a], "valid": words[a:b], "test": words[b:]}
    return {key: VOCABULARY.contexts(part, context) for key, part in parts.items()}


class CharMlp:
    """Bengio et al. 2003 as in makemore part 2: embed each context character, concatenate,
    one tanh hidden layer, logits over the vocabulary."""

    def __init__(self, tape: Tape, seed: int, hidden: int = HIDDEN) -> None:
        init = normal(seed, 0.1, tape.element)
        self.embedding = Embedding.init(tape, VOCAB, DIM, init)
        self.head = Sequential(
            Linear.init(tape, CONTEXT * DIM, hidden, init), Activation.TANH, Linear.init(tape, hidden, VOCAB, init)
        )

    def __call__(self, tokens: Value) -> Value:
        return self.head(self.embedding(tokens).reshape((tokens.shape[0] // CONTEXT, CONTEXT * DIM)))

    def visit(self, visitor: Visitor) -> None:
        visitor.child("embedding", self.embedding)
        visitor.child("head", self.head)


def mean_loss(logits: np.ndarray[tuple[int, ...], np.dtype[np.float32]], targets: Ints, mask: np.ndarray[tuple[int], np.dtype[np.float64]] | None = None) -> tuple[float, float]:
    """Summed and counted cross-entropy of a batch of logits, in f64 (for split losses)."""
    wide = logits.astype(np.float64)
    shifted = wide - wide.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    losses = -logp[np.arange(targets.size), targets]
    weights = np.ones_like(losses) if mask is None else mask
    return float((losses * weights).sum()), float(weights.sum())


def sample_names(next_logits: object, count: int, seed: int) -> list[str]:
    """Draw ``count`` names from ``next_logits(context) -> logits [VOCAB]``."""
    draws = np.random.default_rng(seed)
    out: list[str] = []
    assert callable(next_logits)
    for _ in range(count):
        window, name = [0] * CONTEXT, ""
        while len(name) < 20:
            scores = np.asarray(next_logits(window), dtype=np.float64)
            weights = np.exp(scores - scores.max())
            index = int(draws.choice(VOCAB, p=weights / weights.sum()))
            if index == 0:
                break
            name += VOCABULARY.chars[index]
            window = [*window[1:], index]
        out.append(name)
    return out


class SplitLoss:
    """An evaluation export on the training tape: ``rows`` contexts in, logits out.

    Its batch shape is its own (one export per batch shape, ``docs/data.md``): a split is
    walked in batches of ``rows`` with the last one padded and masked out of the mean.
    """

    def __init__(self, tape: Tape, model: Callable[[Value], Value], rows: int = 1024) -> None:
        self.rows = rows
        self.tokens = tape.input(Tensor.selection([0] * (rows * CONTEXT), VOCAB))
        self.logits = model(self.tokens)
        self._plan: Plan | None = None

    def lower(self, network: Network) -> None:
        self._plan = network.entry(self.logits.symbol).lower()

    def __call__(self, parameters: Parameters, split: tuple[Ints, Ints]) -> float:
        assert self._plan is not None, "lower() after sealing the tape"
        contexts, targets = split
        feeder = Feeder([(self.tokens, Selection(VOCAB))])
        total = count = 0.0
        for batch in Loader((contexts, targets), batch=self.rows, last="pad").epoch(0, shuffle=False):
            logits = self._plan.forward(parameters, feeder(batch.arrays[:1])).of(self.logits.symbol).numpy()
            s, c = mean_loss(logits, batch.arrays[1], batch.mask)
            total, count = total + s, count + c
        return total / count


class Recorded:
    """One tape: the training step (loss and its recorded gradient), a split-loss export and a
    one-context sampling export, each with its own batch shape."""

    def __init__(self, build: Callable[[Tape], Any], element: ElementType = f32) -> None:
        tape = Tape(element)
        self.model = build(tape)
        self.tokens = tape.input(Tensor.selection([0] * (BATCH * CONTEXT), VOCAB))
        self.targets = tape.input(Tensor.selection([0] * BATCH, VOCAB))
        self.loss = cross_entropy(self.training_logits(self.tokens), self.targets)
        self.adjoints = tape.differentiate(self.loss, [tape.resolve(s) for s in self.wrt(tape)])
        self.split_loss = SplitLoss(tape, self.model)
        self.one = tape.input(Tensor.selection([0] * CONTEXT, VOCAB))
        self.next_logits = self.model(self.one)
        self.network = tape.seal()
        self.split_loss.lower(self.network)
        self.sampler = self.network.entry(self.next_logits.symbol).lower()
        self.feeder = Feeder([(self.tokens, Selection(VOCAB)), (self.targets, Selection(VOCAB))])

    def training_logits(self, tokens: Value) -> Value:
        """The training form of the model (the same as inference unless a lesson says otherwise)."""
        logits: Value = self.model(tokens)
        return logits

    def wrt(self, tape: Tape) -> list[Symbol]:
        """What the step differentiates: every parameter the model names."""
        return [symbol for _, symbol in named_parameters(self.model)]

    def training_plan(self) -> Plan:
        return self.network.entry(self.adjoints.roots()).observe(*self.observed()).lower()

    def observed(self) -> tuple[Symbol, ...]:
        """Values the training step reads besides the loss and gradients."""
        return ()

    def samples(self, parameters: Parameters, count: int = 10, seed: int = 1) -> list[str]:
        def logits(window: list[int]) -> np.ndarray[tuple[int, ...], np.dtype[np.float32]]:
            feeds = {self.one.symbol: Tensor.selection(window, VOCAB)}
            row: np.ndarray[tuple[int, ...], np.dtype[np.float32]] = self.sampler.forward(parameters, feeds).of(self.next_logits.symbol).numpy()[0]
            return row

        return sample_names(logits, count, seed)


Step = Callable[[Parameters, dict[Symbol, Tensor]], tuple[float, Parameters]]


def train(
    recorded: Recorded,
    step: Step,
    optimizer: Optimizer,
    o: Options,
    name: str,
    parameters: Parameters | None = None,
    shape_gradients: Callable[[Parameters, Parameters], Parameters] | None = None,
    after: Callable[[Parameters], Parameters] | None = None,
) -> tuple[Parameters, list[float], float]:
    """The loop every lesson shares: draw a minibatch, step, update; a bar; a curve."""
    data = splits(o.smoke)
    loader = Loader(data["train"], batch=BATCH)
    draws = np.random.default_rng(0)
    params = recorded.network.parameters() if parameters is None else parameters
    state = optimizer.init(params)
    curve: list[float] = []
    start = time.perf_counter()
    with Progress(o.steps, description=name, quiet=o.quiet) as bar:
        for _ in range(o.steps):
            loss, gradients = step(params, recorded.feeder(loader.sample(draws)))
            if shape_gradients is not None:
                gradients = shape_gradients(gradients, params)
            params, state = optimizer.update(gradients, state, params)
            if after is not None:
                params = after(params)
            curve.append(loss)
            bar.update(loss=loss, items=BATCH)
    return params, curve, time.perf_counter() - start


def report(recorded: Recorded, parameters: Parameters, curve: list[float], seconds: float, o: Options, name: str) -> dict[str, float]:
    """Split losses, samples, the time; the loss curve and the sample table as PNGs."""
    data = splits(o.smoke)
    train_loss = recorded.split_loss(parameters, data["train"])
    valid_loss = recorded.split_loss(parameters, data["valid"])
    print(f"{name}: {o.steps} steps in {seconds:.1f} s   train {train_loss:.4f}   valid {valid_loss:.4f}")
    drawn = recorded.samples(parameters)
    print("samples:", " ".join(drawn))
    window = max(1, len(curve) // 50)
    smooth = [float(np.mean(curve[i : i + window])) for i in range(0, len(curve), window)]
    steps = list(range(0, len(curve), window))
    print(wrote("loss curve", plot_curves(o.out / f"{name}_loss.png", {f"train (mean of {window})": (steps, smooth)}, title=f"makemore {name}")))
    print(wrote("samples", plot_table(o.out / f"{name}_samples.png", [[str(i + 1), s] for i, s in enumerate(drawn)], ["#", "name"], title=f"makemore {name}: samples")))
    return {"train": train_loss, "valid": valid_loss, "seconds": seconds, "first": curve[0], "last": float(np.mean(curve[-window:]))}


def plan_step(recorded: Recorded, plan: Plan) -> Step:
    """A training step through a lowered plan: the loss and the recorded gradients."""

    def step(parameters: Parameters, feeds: dict[Symbol, Tensor]) -> tuple[float, Parameters]:
        run = plan.forward(parameters, feeds)
        return run.of(recorded.loss.symbol).scalar(), run.recorded_gradients(recorded.adjoints)

    return step
