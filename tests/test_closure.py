"""The closure suite: the recorded gradient, interpreted, is the engine backward, bit for bit.

For every opcode and every map, in f32, f64 and bf16 (and a batched matmul), the gradient
reading records reverse mode as nodes; interpreting that longer network must reproduce
``run.backward`` for every node the derivative names, to the bit. Both readings run the
same scan over the same rule table, so any difference would mean a payload type computes
a vocabulary word differently from how the interpreter computes its node.

The suite then differentiates each recorded gradient once more (the expansions the rules
spoke must have rules of their own) and checks the same agreement on the longer network.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from topos import ElementType, MapOperation, Network, Symbol, Tape, Tensor, Value, bf16, f32, f64
from topos.ir import ops
from topos.ir.ops import OPCODES
from topos.stages.gradient import gradient

Case = Callable[[Tape, np.random.Generator], Value]


def positive(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.uniform(0.5, 1.5, size=shape)


def signed(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.uniform(-1.5, 1.5, size=shape)


def _pair(build: Callable[[Value, Value], Value]) -> Case:
    return lambda t, rng: build(t.parameter(signed(rng, 2, 3)), t.parameter(positive(rng, 2, 3)))


def _unary(build: Callable[[Value], Value], domain: str = "signed") -> Case:
    def case(t: Tape, rng: np.random.Generator) -> Value:
        data = positive(rng, 2, 3) if domain == "positive" else signed(rng, 2, 3)
        return build(t.parameter(data))

    return case


def _selection(t: Tape, rows: list[int], vocab: int) -> Value:
    return t.leaf(Tensor.selection(rows, vocab, t.element))


def _dense_selection(t: Tape, rows: list[int], vocab: int) -> Value:
    one_hot = np.zeros((len(rows), vocab))
    one_hot[np.arange(len(rows)), rows] = 1.0
    return t.input(one_hot)


_POSITIVE_MAPS = {MapOperation.LN, MapOperation.SQRT, MapOperation.LOG1P}

CASES: dict[str, Case] = {
    "Add": _pair(lambda a, b: a + b),
    "Sub": _pair(lambda a, b: a - b),
    "Mul": _pair(lambda a, b: a * b),
    "Div": _pair(lambda a, b: a / b),
    "Neg": _unary(lambda a: -a),
    "MatMul": lambda t, rng: t.parameter(signed(rng, 2, 3)).matmul(t.input(signed(rng, 3, 4))),
    "MatMul batched": lambda t, rng: t.parameter(signed(rng, 2, 2, 3)).matmul(t.parameter(signed(rng, 2, 3, 4))),
    "Sum": _unary(lambda a: a.sum() * a.sum()),
    "SumAlong 0": _unary(lambda a: a.sum_along(0)),
    "SumAlong 1": _unary(lambda a: a.sum_along(1)),
    "Broadcast": lambda t, rng: t.parameter(signed(rng, 1, 1)).broadcast((2, 3)) * t.input(signed(rng, 2, 3)),
    "BroadcastAlong": _unary(lambda a: a.broadcast_along(1, 4)),
    "Reshape": _unary(lambda a: a.reshape((3, 2)).matmul(a)),
    "Permute": lambda t, rng: t.parameter(signed(rng, 2, 3, 4)).permute((2, 0, 1)),
    "Narrow": _unary(lambda a: a.narrow(1, 1, 2)),
    "Pad": _unary(lambda a: a.pad(0, 1, 4)),
    "Unfold": lambda t, rng: t.parameter(signed(rng, 2, 7)).unfold(1, 2, 2, 2),
    "Fold": lambda t, rng: t.parameter(signed(rng, 2, 3, 2)).fold(1, 2, 2, 2, 7),
    "Gather": lambda t, rng: t.parameter(signed(rng, 3, 2)).gather(_selection(t, [2, 0, 2, 1], 3)),
    "Gather dense": lambda t, rng: t.parameter(signed(rng, 3, 2)).gather(_dense_selection(t, [2, 0, 2], 3)),
    "Scatter": lambda t, rng: t.parameter(signed(rng, 4, 2)).scatter(_selection(t, [1, 0, 1, 1], 3)),
    "Scatter dense": lambda t, rng: t.parameter(signed(rng, 3, 2)).scatter(_dense_selection(t, [1, 0, 1], 3)),
    "LogSoftmax 0": _unary(lambda a: a.log_softmax(0)),
    "LogSoftmax 1": _unary(lambda a: a.log_softmax(1)),
    "LogSumExp 0": _unary(lambda a: a.logsumexp(0)),
    "LogSumExp 1": _unary(lambda a: a.logsumexp(1)),
    "Powf": lambda t, rng: t.parameter(positive(rng, 2, 3)).powf(t.parameter(signed(rng, 2, 3))),
    "Maximum": _pair(lambda a, b: a.maximum(b)),
    # Ties belong to the left operand in both readings.
    "Maximum ties": _unary(lambda a: a.maximum(a) + a.maximum(a * 0.5)),
    "Step": _pair(lambda a, b: a * a.step(b) + b.step(a)),
    "Select": _pair(lambda a, b: a.step(b).select(a * a, b)),
    "StopGradient": _unary(lambda a: a.stop_gradient() * a),
    "diamond": _unary(lambda a: (a * 2.0).tanh() * (a * 2.0).tanh().exp() + a * a),
}


def _mapped(operation: MapOperation) -> Callable[[Value], Value]:
    return lambda a: a.map(operation)


for _operation in MapOperation:
    CASES[f"Map {_operation.value}"] = _unary(
        _mapped(_operation), "positive" if _operation in _POSITIVE_MAPS else "signed"
    )

ELEMENTS = [f32, f64, bf16]


def record(case: Case, element: ElementType) -> tuple[Network, Symbol]:
    def build(t: Tape) -> Value:
        rng = np.random.default_rng(7)
        out = case(t, rng)
        # A weighted sum, so the seed reaching ``out`` is not uniform.
        weights = t.leaf(rng.uniform(-2.0, 2.0, size=out.shape.axes) if out.shape.rank else 0.75)
        return (out * weights).sum()

    return Tape.record(build, element=element)


def differentiable(network: Network) -> list[Symbol]:
    return [network.symbol(i) for i, n in enumerate(network.nodes_) if not isinstance(n.op, ops.Leaf)]


def assert_closure(network: Network, loss: Symbol) -> Network:
    """Recorded gradient (interpreted) equals engine backward for every non-leaf node."""
    wrt = differentiable(network)
    longer, adjoints = gradient(network, loss, wrt)
    parameters = network.parameters()
    engine = network.forward(parameters).backward(loss)
    recorded = longer.forward(parameters)
    for symbol, gradient_symbol in adjoints:
        want = engine.of(symbol)
        got = recorded.of(gradient_symbol)
        # NaN bits would compare equal too; the cases stay inside every map's domain.
        assert np.isfinite(want.numpy().astype(np.float64)).all()
        assert got.element == want.element
        assert np.array_equal(got.bits(), want.bits()), (
            f"%{symbol.index} {network.node(symbol).name}: recorded {got.tolist()} engine {want.tolist()}"
        )
    return longer


def test_the_cases_cover_every_opcode_and_map() -> None:
    seen: set[type] = set()
    maps: set[MapOperation] = set()
    for case in CASES.values():
        network, _ = record(case, f64)
        for node in network.nodes_:
            seen.add(type(node.op))
            if isinstance(node.op, ops.Map):
                maps.add(node.op.operation)
    assert seen == set(OPCODES)
    assert maps == set(MapOperation)


@pytest.mark.parametrize("element", ELEMENTS, ids=str)
@pytest.mark.parametrize("name", sorted(CASES))
def test_recorded_gradient_is_engine_backward(name: str, element: ElementType) -> None:
    network, loss = record(CASES[name], element)
    assert_closure(network, loss)


@pytest.mark.parametrize("element", ELEMENTS, ids=str)
@pytest.mark.parametrize("name", sorted(CASES))
def test_second_order_closes_too(name: str, element: ElementType) -> None:
    """Differentiate a function of the recorded gradient: every expansion has its own rule."""
    network, loss = record(CASES[name], element)
    wrt = [network.symbol(i) for i in network.parameter_nodes]
    once, adjoints = gradient(network, loss, wrt)
    tape = once.reopen()
    total = tape.resolve(loss)
    for g in adjoints.gradients():
        value = tape.resolve(g)
        total = total + (value * value).sum()
    target = total.symbol
    assert_closure(tape.seal(), target)


@pytest.mark.parametrize("element", ELEMENTS, ids=str)
def test_differentiating_twice_gives_the_same_text(element: ElementType) -> None:
    for case in CASES.values():
        network, loss = record(case, element)
        wrt = differentiable(network)
        first, _ = gradient(network, loss, wrt)
        second, _ = gradient(network, loss, wrt)
        assert first.describe() == second.describe()
        # The derivative never edits what it extends.
        assert first.describe().splitlines()[: len(network)] == network.describe().splitlines()[:-1]

