"""The words a port reaches for (issue 29): log, minimum, signbit, copysign, arange, eye,
sort and topk, and what a zero extent does.

Each word's values are compared bit for bit against numpy on every exact road (the
interpreter, the Exact plan, XLA); the Fast plan too, since none of these words has a
Fast-only kernel that rounds differently (they are Selects, negations, Steps and one Ln map,
whose Fast kernel is the portable map as well). Gradients go through check_grad.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_pad_values import ROADS, unsigned
from test_pad_values import road as on_road

from topos import (
    InvalidArgumentError,
    Tape,
    Tensor,
    ToposError,
    Value,
    arange,
    eye,
    f32,
    f64,
)
from topos.gradcheck import check_grad
from topos.ir.element import ElementType

SPECIALS = np.array([-0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 2.5, -2.5])


def pairs(seed: int, dtype: Any, nan: bool) -> tuple[Any, Any]:
    """Two arrays of one random shape, crossing every special value with every other."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, 5, size=int(rng.integers(1, 3))))
    pool = np.concatenate([SPECIALS, [np.nan]]) if nan else SPECIALS
    a = np.where(rng.random(shape) < 0.5, rng.choice(pool, shape), rng.standard_normal(shape))
    b = np.where(rng.random(shape) < 0.5, rng.choice(pool, shape), rng.standard_normal(shape))
    # Ties on purpose, where the tie rule (which operand's bits) is what is tested.
    b = np.where(rng.random(shape) < 0.25, a, b)
    return a.astype(dtype), b.astype(dtype)


ELEMENTS = [(f64, np.float64), (f32, np.float32)]


@pytest.mark.parametrize("name", ROADS)
@pytest.mark.parametrize(("element", "dtype"), ELEMENTS, ids=["f64", "f32"])
def test_binary_and_unary_words_match_numpy_bit_for_bit(name: str, element: ElementType, dtype: Any) -> None:
    for seed in range(6):
        a, b = pairs(seed, dtype, nan=True)
        positive = np.abs(a) + dtype(0.5)

        def build(t: Tape, a: Any = a, b: Any = b, positive: Any = positive) -> list[Value]:
            x, y, p = t.input(a), t.input(b), t.input(positive)
            return [x.minimum(y), x.signbit(), x.copysign(y), p.log(), p.ln()]

        network, roots = Tape.record(build, element=element)
        got = on_road(name, network, roots)
        finite_sign = ~np.isnan(b)
        assert np.array_equal(unsigned(got[0]), unsigned(np.minimum(a, b))), (a, b)
        assert np.array_equal(got[1], np.where(np.isnan(a), 0.0, np.signbit(a)).astype(dtype))
        # copysign reads a NaN sign as positive (the opcodes cannot see it): compare elsewhere.
        want = np.copysign(a, b)
        assert np.array_equal(unsigned(got[2])[finite_sign], unsigned(want)[finite_sign])
        assert np.array_equal(unsigned(got[3]), unsigned(got[4]))


@pytest.mark.parametrize("name", ROADS)
def test_arange_and_eye_are_numpy_constants_on_every_road(name: str) -> None:
    rng = np.random.default_rng(5)
    for _ in range(5):
        start, span, step = float(rng.uniform(-3, 3)), float(rng.uniform(0.5, 6)), float(rng.uniform(0.1, 1.0))
        rows, columns = (int(n) for n in rng.integers(1, 6, size=2))
        for element, dtype in ELEMENTS:
            def build(t: Tape, start: float = start, stop: float = start + span, step: float = step, rows: int = rows, columns: int = columns) -> list[Value]:
                like = t.input([0.0])
                return [arange(like, start, stop, step), arange(like, rows), eye(like, rows, columns)]

            network, roots = Tape.record(build, element=element)
            got = on_road(name, network, roots)
            assert np.array_equal(unsigned(got[0]), unsigned(np.arange(start, start + span, step).astype(dtype)))
            assert np.array_equal(unsigned(got[1]), unsigned(np.arange(rows).astype(dtype)))
            assert np.array_equal(unsigned(got[2]), unsigned(np.eye(rows, columns, dtype=dtype)))


@pytest.mark.parametrize("name", ROADS)
def test_sort_and_topk_match_numpy_stable_order_bit_for_bit(name: str) -> None:
    rng = np.random.default_rng(17)
    for _ in range(6):
        shape = tuple(int(n) for n in rng.integers(1, 7, size=int(rng.integers(1, 4))))
        axis = int(rng.integers(-len(shape), len(shape)))
        # Few distinct values, ±0 and ±inf, so ties decide the order (numpy's stable sort is the reference).
        data = rng.choice(np.array([-0.0, 0.0, 1.0, -1.5, np.inf, -np.inf, 2.0]), shape)
        k = int(rng.integers(1, shape[axis] + 1))

        def build(t: Tape, data: Any = data, axis: int = axis, k: int = k) -> list[Value]:
            x = t.input(data)
            values, order = x.sort(axis)
            top, where = x.topk(k, axis)
            return [values, order, top, where]

        network, roots = Tape.record(build, element=f64)
        values, order, top, where = on_road(name, network, roots)
        assert np.array_equal(unsigned(values), unsigned(np.sort(data, axis, kind="stable")))
        assert np.array_equal(order, np.argsort(data, axis, kind="stable").astype(np.float64))
        # Largest first, earlier position first among ties: a stable sort of the negation.
        descending = np.argsort(-data, axis, kind="stable")
        positions = np.take(descending, np.arange(k), axis=axis % len(shape))
        assert np.array_equal(where, positions.astype(np.float64))
        assert np.array_equal(unsigned(top), unsigned(np.take_along_axis(data, positions, axis)))


def test_gradients_of_the_words_pass_check_grad() -> None:
    rng = np.random.default_rng(23)
    # Distinct magnitudes away from 0 and from each other, so no tie or kink sits within a difference step.
    a = rng.permutation(np.linspace(0.5, 3.0, 12)).reshape(3, 4) * rng.choice([-1.0, 1.0], (3, 4))
    b = rng.permutation(np.linspace(0.6, 3.1, 12)).reshape(3, 4) * rng.choice([-1.0, 1.0], (3, 4))

    def build(t: Tape) -> tuple[Value, Value, Value]:
        x, y = t.parameter(a), t.parameter(b)
        values, _ = x.sort(1)
        top, _ = y.topk(2, 0)
        weights = t.leaf(rng.standard_normal((3, 4)))
        loss = (
            (x.minimum(y) * weights).sum()
            + (x.copysign(y) * weights).sum()
            + (x.abs().log() * weights).sum()
            + (values * weights).sum()
            + (top * weights[:2]).sum()
        )
        return x, y, loss

    network, (_, _, loss) = Tape.record(build, element=f64)
    assert check_grad(network, network.parameters(), loss).passed


def test_ties_send_the_minimum_gradient_to_the_left_operand() -> None:
    def build(t: Tape) -> tuple[Value, Value, Value]:
        x, y = t.parameter([1.0, 2.0]), t.parameter([1.0, 3.0])
        return x, y, x.minimum(y).sum()

    network, (x, y, loss) = Tape.record(build, element=f64)
    field = network.forward(network.parameters()).backward(loss)
    assert field.of(x).tolist() == [1.0, 1.0] and field.of(y).tolist() == [0.0, 0.0]


def test_bad_arguments_are_refused_by_name_and_change_nothing() -> None:
    tape = Tape(f64)
    x, longer = tape.input([1.0, 2.0]), tape.input([1.0, 2.0, 3.0])
    before = len(tape)
    cases: list[tuple[Any, str]] = [
        (lambda: arange(x, 0), r"arange\(0.0, 0, 1.0\) is empty \(shape \[0\]\)"),
        (lambda: arange(x, 1.0, 2.0, 0.0), "step must not be zero"),
        (lambda: arange(x, float("inf")), "finite number"),
        (lambda: arange(3, 2), "recorded value or tensor"),
        (lambda: eye(x, 0), "eye rows must be an integer >= 1"),
        (lambda: eye(x, 2, True), "eye columns must be an integer"),
        (lambda: x.copysign("up"), "copysign takes"),
        (lambda: x.copysign(longer), r"copysign: the sign of shape \[3\]"),
        (lambda: x.topk(3), r"topk k must be an integer in \[1, 2\]"),
        (lambda: x.sort(descending=1), "descending must be a bool"),
    ]
    for case, message in cases:
        with pytest.raises(ToposError, match=message) as caught:
            case()
        assert "test_port_words.py" in str(caught.value)
        assert len(tape) == before, message


@pytest.mark.parametrize(
    "build",
    [
        lambda t: t.input(np.zeros((0, 3))),
        lambda t: t.parameter(np.zeros((2, 0))),
        lambda t: t.constant((0,), 1.0),
        lambda t: t.input(np.zeros((2, 3))).narrow(1, 1, 0),
    ],
    ids=["input", "parameter", "constant", "narrow"],
)
def test_a_zero_extent_is_refused_naming_the_line_and_the_shape(build: Any) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        Tape.record(build, element=f64)
    text = str(caught.value)
    assert "test_port_words.py" in text
    assert "[0, 3]" in text or "[2, 0]" in text or "[0]" in text or "[2, 3]" in text


def test_a_zero_extent_tensor_is_refused_too() -> None:
    with pytest.raises(InvalidArgumentError, match=r"never empty; got shape \[3, 0\]"):
        Tensor(np.zeros((3, 0)), element=f64)


def test_minimum_takes_every_operand_maximum_takes_on_a_tape() -> None:
    """A list, an array, a tensor or a number as the other operand: numpy's minimum each time
    (the operand is negated before maximum sees it, so a form left un-negated would be wrong)."""
    left, right = [1.0, -2.0, 0.5], [0.5, 3.0, -0.0]
    want = np.minimum(np.array(left), np.array(right))
    for other in (right, np.array(right), Tensor(right, element=f64)):
        network, value = Tape.record(lambda t, other=other: t.input(left).minimum(other), element=f64)
        got = network.forward(network.parameters()).of(value).numpy()
        assert unsigned(got).tolist() == unsigned(want).tolist(), (type(other).__name__, got)
    network, value = Tape.record(lambda t: t.input(left).minimum(0.75), element=f64)
    assert network.forward(network.parameters()).of(value).tolist() == [0.75, -2.0, 0.5]
