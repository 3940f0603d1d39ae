"""A makemore-style character MLP (Bengio et al. 2003, as in Karpathy's makemore part 2)
trains with Adam for 200 steps, once through the interpreter and once through a Fast plan.

Model: a 3-character context, each character embedded in 8 dimensions, one tanh hidden
layer of 48, logits over 27 characters, mean cross-entropy. The graph is recorded once;
minibatches are feeds (one-hot selections stored as indices). The plan road trains on the
recorded gradient (``tape.differentiate``), lowered under ``Numerics.FAST``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from topos import Network, Numerics, Parameters, Symbol, Tape, Tensor, Value, f32
from topos.init import normal
from topos.nn import Activation, Embedding, Linear, Sequential, cross_entropy, named_parameters
from topos.optim import Adam

# A small made-up corpus; '.' marks the start and end of a name.
NAMES = (
    "emma olivia ava isabella sophia mia amelia harper evelyn abigail emily ella elizabeth "
    "camila luna sofia avery mila aria scarlett penelope layla chloe victoria madison eleanor "
    "grace nora riley zoey hannah hazel lily ellie violet lillian zoe stella aurora natalie "
    "emilia everly leah aubrey willow addison lucy audrey bella nova brooklyn paisley savannah"
).split()
ALPHABET = "." + "abcdefghijklmnopqrstuvwxyz"
VOCAB, CONTEXT, DIM, HIDDEN, BATCH, STEPS = len(ALPHABET), 3, 8, 48, 32, 200


def dataset() -> tuple[np.ndarray, np.ndarray]:
    contexts: list[list[int]] = []
    targets: list[int] = []
    for name in NAMES:
        window = [0] * CONTEXT
        for char in name + ".":
            index = ALPHABET.index(char)
            contexts.append(list(window))
            targets.append(index)
            window = [*window[1:], index]
    return np.array(contexts), np.array(targets)


class CharMlp:
    def __init__(self, tape: Tape) -> None:
        init = normal(seed=2024, deviation=0.2, element=tape.element)
        self.embedding = Embedding.init(tape, VOCAB, DIM, init)
        self.head = Sequential(
            Linear.init(tape, CONTEXT * DIM, HIDDEN, init), Activation.TANH, Linear.init(tape, HIDDEN, VOCAB, init)
        )

    def __call__(self, tokens: Value) -> Value:
        rows = self.embedding(tokens).reshape((tokens.shape[0] // CONTEXT, CONTEXT * DIM))
        return self.head(rows)

    def visit(self, visitor: object) -> None:
        from topos.nn import Visitor

        assert isinstance(visitor, Visitor)
        visitor.child("embedding", self.embedding)
        visitor.child("head", self.head)


def record() -> tuple[Network, CharMlp, dict[str, Symbol], object]:
    tape = Tape(f32)
    model = CharMlp(tape)
    tokens = tape.input(Tensor.selection([0] * (BATCH * CONTEXT), VOCAB))
    targets = tape.input(Tensor.selection([0] * BATCH, VOCAB))
    loss = cross_entropy(model(tokens), targets)
    adjoints = tape.differentiate(loss, [tape.resolve(s) for _, s in named_parameters(model)])
    network = tape.seal()
    return network, model, {"tokens": tokens.symbol, "targets": targets.symbol, "loss": loss.symbol}, adjoints


def train(step: Callable[[Parameters, dict[Symbol, Tensor]], tuple[float, Parameters]], parameters: Parameters, s: dict[str, Symbol]) -> list[float]:
    contexts, targets = dataset()
    batches = np.random.default_rng(0)
    optimizer = Adam(learning_rate=0.01)
    state = optimizer.init(parameters)
    losses: list[float] = []
    for _ in range(STEPS):
        rows = batches.integers(0, len(targets), BATCH)
        feeds = {
            s["tokens"]: Tensor.selection(contexts[rows].reshape(-1), VOCAB),
            s["targets"]: Tensor.selection(targets[rows], VOCAB),
        }
        loss, gradients = step(parameters, feeds)
        losses.append(loss)
        parameters, state = optimizer.update(gradients, state, parameters)
    return losses


def falling(losses: list[float]) -> None:
    start, end = float(np.mean(losses[:10])), float(np.mean(losses[-10:]))
    assert np.isfinite(losses).all()
    assert abs(losses[0] - np.log(VOCAB)) < 0.3, losses[0]  # near uniform guessing at the start
    assert end < 0.8 * start, (start, end)


@functools.cache
def interpreter_losses() -> tuple[float, ...]:
    network, _, s, _ = record()

    def step(parameters: Parameters, feeds: dict[Symbol, Tensor]) -> tuple[float, Parameters]:
        run = network.forward(parameters, feeds)
        return run.of(s["loss"]).scalar(), run.backward(s["loss"]).parameters(parameters)

    return tuple(train(step, network.parameters(), s))


def test_trains_through_the_interpreter() -> None:
    falling(list(interpreter_losses()))


def test_trains_through_a_fast_plan() -> None:
    network, _, s, adjoints = record()
    plan = network.entry(adjoints.roots()).lower()  # type: ignore[attr-defined]
    assert plan.numerics is Numerics.FAST

    def step(parameters: Parameters, feeds: dict[Symbol, Tensor]) -> tuple[float, Parameters]:
        run = plan.forward(parameters, feeds)
        return run.of(s["loss"]).scalar(), run.recorded_gradients(adjoints)

    fast = train(step, network.parameters(), s)
    falling(fast)
    # Envelope: the Fast road reorders f32 sums and products (BLAS), a few ulps per step that
    # Adam carries forward; measured at 2e-6 over 200 steps. 1e-3 still fails a wrong gradient.
    drift = max(abs(a - b) for a, b in zip(fast, interpreter_losses(), strict=True))
    assert drift < 1e-3, drift


def test_exact_plan_matches_the_interpreter_bit_for_bit() -> None:
    """Under Exact the plan's recorded gradients equal the engine's, so the trajectories agree."""
    network, _, s, adjoints = record()
    plan = network.entry(adjoints.roots()).numerics(Numerics.EXACT).lower()  # type: ignore[attr-defined]
    contexts, targets = dataset()
    feeds = {
        s["tokens"]: Tensor.selection(contexts[:BATCH].reshape(-1), VOCAB),
        s["targets"]: Tensor.selection(targets[:BATCH], VOCAB),
    }
    parameters = network.parameters()
    engine = network.forward(parameters, feeds).backward(s["loss"]).parameters(parameters)
    recorded = plan.forward(parameters, feeds).recorded_gradients(adjoints)
    for a, b in zip(engine.payloads(), recorded.payloads(), strict=True):
        assert np.array_equal(a.bits(), b.bits())
