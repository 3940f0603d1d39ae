"""Recording: literal operands, composites, the structure ``Tape.record`` mirrors, conversion."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import Array, assert_bits, forward_op, shapes, stored, values
from hypothesis import given
from hypothesis import strategies as st

from topos import Symbol, Tape, Tensor, Value, bf16, concat, f32, f64, stack
from topos.ir import ops

# ----------------------------------------------------------------------------- literals


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 1, 4)])
def test_a_number_beside_a_value_records_one_constant_leaf(shape: tuple[int, ...]) -> None:
    def build(tape: Tape) -> Value:
        return tape.input(np.ones(shape)) * 2.0

    network, y = Tape.record(build)
    assert [n.name for n in network.nodes()] == ["Input", "Leaf", "Mul"]
    leaf = network.payload(network.symbol(1))
    assert leaf is not None
    assert leaf.is_constant and leaf.fill == 2.0 and leaf.shape.axes == shape
    # Stored as one number: every stride is zero.
    assert all(stride == 0 for stride in leaf.numpy().strides)
    assert network.forward(network.parameters()).of(y).tolist() == np.full(shape, 2.0).tolist()


def test_reflected_literals_keep_operand_order() -> None:
    def build(tape: Tape) -> tuple[Value, Value, Value, Value]:
        x = tape.input([1.0, 4.0])
        return 1.0 - x, 8.0 / x, 3.0 + x, 2.0 * x

    network, (sub, div, add, mul) = Tape.record(build, element=f64)
    run = network.forward(network.parameters())
    assert run.of(sub).tolist() == [0.0, -3.0]
    assert run.of(div).tolist() == [8.0, 2.0]
    assert run.of(add).tolist() == [4.0, 7.0]
    assert run.of(mul).tolist() == [2.0, 8.0]
    # The literal is the left operand of the recorded node.
    assert network.node(sub).operands == (1, 0)


def test_an_array_literal_records_a_leaf_of_its_own_shape() -> None:
    def build(tape: Tape) -> Value:
        x = tape.input(np.zeros((2, 2)))
        return x + np.array([[1.0, 2.0], [3.0, 4.0]])

    network, y = Tape.record(build, element=f64)
    assert [n.name for n in network.nodes()] == ["Input", "Leaf", "Add"]
    leaf = network.payload(network.symbol(1))
    assert leaf is not None and not leaf.is_constant
    assert network.forward(network.parameters()).of(y).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    # numpy defers to the recording operators instead of looping over the array.
    network, y = Tape.record(lambda t: np.array([1.0, 2.0]) - t.input([3.0, 5.0]), element=f64)
    assert len(network) == 3
    assert network.forward(network.parameters()).of(y).tolist() == [-2.0, -3.0]


# ----------------------------------------------------------------------------- composites

# Envelope: composites chain several rounded primitives in f64 (e.g. softplus = relu +
# log1p(exp(-|x|)), gelu through erf), while numpy evaluates its own formula; a few ulps
# of f64 (relative 1e-12) separate the two orders. Exact composites are compared by value.
ENVELOPE = 1e-12


def _close(actual: Tensor, expected: Array) -> None:
    got = actual.numpy().astype(np.float64)
    assert got.shape == expected.shape
    assert np.all(np.abs(got - expected) <= ENVELOPE * (1 + np.abs(expected))), (got, expected)


def _erf(x: Array) -> Array:
    return np.array([math.erf(float(v)) for v in x.ravel()]).reshape(x.shape)


_EXACT: dict[str, tuple[Callable[[Value], Value], Callable[[Array], Array]]] = {
    "abs": (lambda v: v.abs(), np.abs),
    "relu": (lambda v: v.relu(), lambda a: np.maximum(a, 0.0)),
    "transpose": (lambda v: v.transpose(), np.transpose),
    "unsqueeze": (lambda v: v.unsqueeze(1), lambda a: np.expand_dims(a, 1)),
    "unsqueeze_last": (lambda v: v.unsqueeze(-1), lambda a: np.expand_dims(a, -1)),
    "squeeze": (lambda v: v.unsqueeze(0).squeeze(0), lambda a: a),
    "broadcast_to": (lambda v: v.broadcast_to((4, *v.shape)), lambda a: np.broadcast_to(a, (4, *a.shape))),
    "broadcast_to_ones": (
        lambda v: v.reshape((1, *v.shape)).broadcast_to((3, *v.shape)),
        lambda a: np.broadcast_to(a, (3, *a.shape)),
    ),
}


@pytest.mark.parametrize("name", sorted(_EXACT))
@given(data=st.data())
def test_exact_composites(name: str, data: st.DataObject) -> None:
    record, numpy_version = _EXACT[name]
    shape = data.draw(shapes(min_dims=1, max_dims=2))
    a = data.draw(values(shape, f64))
    expected = np.ascontiguousarray(numpy_version(a))
    # relu and abs compare by value: maximum(-0, 0) may keep either zero.
    got = forward_op(f64, record, a)
    assert got.shape.axes == expected.shape and np.array_equal(got.numpy(), expected)


_ENVELOPE: dict[str, tuple[Callable[[Value], Value], Callable[[Array], Array]]] = {
    "softplus": (lambda v: v.softplus(), lambda a: np.logaddexp(0.0, a)),
    "gelu": (lambda v: v.gelu(), lambda a: a * (1 + _erf(a / np.sqrt(2.0))) / 2),
    "gelu_tanh": (
        lambda v: v.gelu(approximate=True),
        lambda a: 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a**3))),
    ),
    "softmax": (
        lambda v: v.softmax(v.rank - 1),
        lambda a: np.exp(a - a.max(-1, keepdims=True)) / np.exp(a - a.max(-1, keepdims=True)).sum(-1, keepdims=True),
    ),
    "mean_along": (lambda v: v.mean_along(0), lambda a: a.mean(0)),
    "mean": (lambda v: v.mean(), lambda a: np.asarray(a.mean())),
    "sigmoid": (lambda v: v.sigmoid(), lambda a: 1 / (1 + np.exp(-a))),
    "silu": (lambda v: v.silu(), lambda a: a / (1 + np.exp(-a))),
}


@pytest.mark.parametrize("name", sorted(_ENVELOPE))
@given(data=st.data())
def test_envelope_composites(name: str, data: st.DataObject) -> None:
    record, numpy_version = _ENVELOPE[name]
    shape = data.draw(shapes(min_dims=1, max_dims=2))
    a = data.draw(values(shape, f64, -6.0, 6.0))
    _close(forward_op(f64, record, a), numpy_version(a))


@given(data=st.data())
def test_broadcast_like_and_broadcast_along_like(data: st.DataObject) -> None:
    shape = data.draw(shapes(min_dims=1, max_dims=2))
    reference = data.draw(values(shape, f64))
    scalar = np.array(1.5)
    out = forward_op(f64, lambda s, r: s.broadcast_like(r), scalar, reference)
    assert out.tolist() == np.full(shape, 1.5).tolist()
    row = data.draw(values(shape[1:], f64))
    out = forward_op(f64, lambda x, r: x.broadcast_along_like(0, r), row, reference)
    assert out.tolist() == np.broadcast_to(row, shape).tolist()


@given(data=st.data())
def test_concat_and_stack(data: st.DataObject) -> None:
    rows = data.draw(st.integers(1, 3))
    widths = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    parts = [data.draw(values((rows, w), f64)) for w in widths]
    # concat pads and sums, so -0.0 reads back as +0.0: compared by value.
    out = forward_op(f64, lambda *vs: concat(list(vs), 1), *parts)
    assert np.array_equal(out.numpy(), np.concatenate(parts, axis=1))
    same = [data.draw(values((rows, 2), f64)) for _ in widths]
    for axis in (0, 1, 2, -1):
        out = forward_op(f64, lambda *vs, axis=axis: stack(list(vs), axis), *same)
        assert np.array_equal(out.numpy(), np.stack(same, axis=axis))


def test_composites_record_only_opcodes() -> None:
    def build(tape: Tape) -> Value:
        x = tape.input(np.ones((2, 3)))
        return x.gelu().softplus().softmax(1).mean_along(0).sum()

    network, _ = Tape.record(build)
    assert all(type(n.op) in ops.OPCODES for n in network.nodes())


# ----------------------------------------------------------------------------- structure


def test_record_mirrors_what_build_returned() -> None:
    network, one = Tape.record(lambda t: t.input(1.0))
    assert isinstance(one, Symbol)

    def nested(tape: Tape) -> dict[str, Any]:
        x = tape.input(1.0)
        y = x * 2.0
        return {"pair": (x, y), "list": [y, x], "label": "kept", "n": 3}

    network, out = Tape.record(nested)
    assert set(out) == {"pair", "list", "label", "n"}
    assert isinstance(out["pair"], tuple) and isinstance(out["list"], list)
    x, y = out["pair"]
    assert out["list"] == [y, x]
    assert out["label"] == "kept" and out["n"] == 3
    assert network.node(x).name == "Input" and network.node(y).name == "Mul"
    network, as_list = Tape.record(lambda t: [t.input(1.0), t.parameter(2.0)])
    assert isinstance(as_list, list) and len(as_list) == 2
    network, as_tuple = Tape.record(lambda t: (t.input(1.0),))
    assert isinstance(as_tuple, tuple) and len(as_tuple) == 1


def test_detach_by_hand_equals_record() -> None:
    from topos import detach

    tape = Tape(f64)
    w = tape.parameter([1.0, 2.0])
    loss = (w * w).sum()
    symbols = detach({"w": w, "loss": loss})
    network = tape.seal()
    recorded, again = Tape.record(lambda t: (lambda w: {"w": w, "loss": (w * w).sum()})(t.parameter([1.0, 2.0])), f64)
    assert network.describe() == recorded.describe()
    assert network.forward(network.parameters()).of(symbols["loss"]).scalar() == 5.0
    assert symbols["w"].index == again["w"].index


# ----------------------------------------------------------------------------- elements


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=str)
def test_numbers_and_arrays_convert_once_at_record_and_feed(element: Any) -> None:
    # 1 + 2^-8 + 2^-30 lies just above a bf16 tie: rounding through f32 first would lose it.
    tricky = np.array([1.0 + 2.0**-8 + 2.0**-30, 0.1, -3.3, 1e-3], dtype=np.float64)

    def build(tape: Tape) -> tuple[Value, Value, Value]:
        return tape.input(tricky), tape.parameter(list(tricky)), tape.leaf(float(tricky[0])) * 1.0

    network, (x, p, c) = Tape.record(build, element=element)
    assert network.element == element
    assert all(n.element == element for n in network.nodes())
    run = network.forward(network.parameters())
    assert_bits(run.of(x), stored(tricky, element))
    assert_bits(run.of(p), stored(tricky, element))
    assert_bits(run.of(c), stored(tricky[:1].reshape(()), element))
    for fed in (tricky[::-1].copy(), list(tricky[::-1]), Tensor(tricky[::-1].copy(), element=f64)):
        run = network.forward(network.parameters(), {x: fed})
        assert_bits(run.of(x), stored(tricky[::-1], element))
    if element is bf16:
        assert run.of(x).numpy()[-1].astype(np.float64) == 1.0078125


def test_a_weak_number_in_host_arithmetic_adopts_the_element() -> None:
    g = Tensor(np.array([1.0, 2.0], dtype=np.float32), element=f32)
    scaled = g * Tensor(0.1)
    assert scaled.element == f32
    assert_bits(scaled, np.array([1.0, 2.0], dtype=np.float32) * np.float32(0.1))
    assert (Tensor(0.1) * g).element == f32


def test_reflected_power_and_matmul() -> None:
    def build(tape: Tape) -> tuple[Value, Value]:
        x = tape.input([[1.0, 2.0], [3.0, 0.5]])
        return 2.0**x, np.eye(2) @ x

    network, (power, product) = Tape.record(build, element=f64)
    run = network.forward(network.parameters())
    assert run.of(power).tolist() == [[2.0, 4.0], [8.0, 2.0**0.5]]
    assert run.of(product).tolist() == [[1.0, 2.0], [3.0, 0.5]]
    assert [n.name for n in network.nodes()] == ["Input", "Leaf", "Powf", "Leaf", "MatMul"]
