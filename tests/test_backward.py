"""Engine backward (``run.backward``) for every opcode and map, against f64 central differences.

Each check records the opcode over parameters, contracts its output with a fixed random
cotangent (``loss = sum(out * weights)``) so every output position carries a different
weight, and compares the engine's gradient with ``(L(x + h) - L(x - h)) / 2h`` computed by
the interpreter, element by element.

Tolerance: |engine - fd| <= 1e-5 * (1 + |fd|). With h = 1e-6 in f64 the truncation error is
about h^2/6 * |L'''| (~1e-12 on these bounded domains) and the rounding error about
eps * |L| / h (~1e-9 for |L| < 10^1.5); 1e-5 leaves room for both while any wrong rule
(a dropped term, a wrong sign, a transposed operand) is off by O(1). Values are kept away
from kinks: maximum ties and step thresholds by a margin far above h, logs and roots on
positive domains, divisions away from zero.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from conftest import Array, shapes, values
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from topos import MapOperation, Tape, Tensor, Value, f32, f64

H = 1e-6
TOLERANCE = 1e-5

backward_settings = settings(max_examples=12)


def _check(
    build: Callable[..., Value],
    operands: Sequence[Array],
    weights: Array | None = None,
    data: Sequence[Any] = (),
) -> list[Tensor]:
    """Compare engine gradients of ``sum(build(*params, *data) * weights)`` with f64 FD."""

    def record(tape: Tape) -> tuple[list[Value], Value]:
        params = [tape.parameter(o) for o in operands]
        out = build(*params, *(tape.leaf(d) for d in data))
        w = weights if weights is not None else np.linspace(0.5, 1.5, out.shape.volume).reshape(out.shape.axes)
        return params, (out * tape.leaf(w)).sum()

    network, (params, loss) = Tape.record(record, element=f64)
    table = network.parameters()
    gradients = network.forward(table).backward(loss)
    engine = [gradients.of(p) for p in params]

    def loss_at(symbol: Any, array: Array) -> float:
        moved = table.with_payloads([(symbol, Tensor(array, element=f64))])
        return network.forward(moved).of(loss).scalar()

    for symbol, operand, got in zip(params, operands, engine, strict=True):
        assert got.shape == Tensor(operand, element=f64).shape
        expected = np.zeros(operand.shape)
        base = np.asarray(operand, dtype=np.float64)
        for position in np.ndindex(*base.shape):
            plus, minus = base.copy(), base.copy()
            plus[position] += H
            minus[position] -= H
            expected[position] = (loss_at(symbol, plus) - loss_at(symbol, minus)) / (2 * H)
        actual = got.numpy().astype(np.float64)
        error = np.abs(actual - expected)
        assert np.all(error <= TOLERANCE * (1 + np.abs(expected))), (
            f"engine {actual.tolist()} vs central differences {expected.tolist()}"
        )
    return engine


def _draw_weights(data: st.DataObject, shape: tuple[int, ...]) -> Array:
    return data.draw(values(shape, f64, -2.0, 2.0))


# ----------------------------------------------------------------------------- elementwise

_BINARY: dict[str, tuple[Callable[[Value, Value], Value], tuple[float, float], tuple[float, float]]] = {
    "add": (lambda a, b: a + b, (-4, 4), (-4, 4)),
    "sub": (lambda a, b: a - b, (-4, 4), (-4, 4)),
    "mul": (lambda a, b: a * b, (-4, 4), (-4, 4)),
    "div": (lambda a, b: a / b, (-4, 4), (0.5, 3)),
    "powf": (lambda a, b: a.powf(b), (0.3, 3), (-2, 2)),
}


@pytest.mark.parametrize("name", sorted(_BINARY))
@backward_settings
@given(data=st.data())
def test_binary(name: str, data: st.DataObject) -> None:
    record, (alo, ahi), (blo, bhi) = _BINARY[name]
    shape = data.draw(shapes(max_side=3))
    a = data.draw(values(shape, f64, alo, ahi))
    b = data.draw(values(shape, f64, blo, bhi))
    if name == "div":
        b = b * data.draw(st.sampled_from([1.0, -1.0]))
    _check(record, [a, b], _draw_weights(data, shape))


@backward_settings
@given(data=st.data())
def test_neg(data: st.DataObject) -> None:
    shape = data.draw(shapes(max_side=3))
    _check(lambda x: -x, [data.draw(values(shape, f64))], _draw_weights(data, shape))


@backward_settings
@given(data=st.data())
def test_maximum_away_from_ties(data: st.DataObject) -> None:
    shape = data.draw(shapes(max_side=3))
    a = data.draw(values(shape, f64))
    b = data.draw(values(shape, f64))
    assume(np.all(np.abs(a - b) > 1e-3))
    _check(lambda x, y: x.maximum(y), [a, b], _draw_weights(data, shape))


def test_maximum_ties_go_to_the_left_operand() -> None:
    def build(tape: Tape) -> tuple[Value, Value, Value]:
        a, b = tape.parameter([1.0, 2.0]), tape.parameter([1.0, 3.0])
        return a, b, a.maximum(b).sum()

    network, (a, b, loss) = Tape.record(build, element=f64)
    field = network.forward(network.parameters()).backward(loss)
    assert field.of(a).tolist() == [1.0, 0.0]
    assert field.of(b).tolist() == [0.0, 1.0]


@backward_settings
@given(data=st.data())
def test_step_is_data(data: st.DataObject) -> None:
    shape = data.draw(shapes(max_side=3))
    a = data.draw(values(shape, f64))
    t = data.draw(values(shape, f64))
    assume(np.all(np.abs(a - t) > 1e-3))
    # Central differences of a step away from its threshold are zero; the engine agrees.
    engine = _check(lambda x, y: x.step(y) * x, [a, t], _draw_weights(data, shape))
    assert engine[1].is_constant and engine[1].fill == 0.0


_MAP_DOMAINS: dict[MapOperation, tuple[float, float]] = {
    MapOperation.EXP: (-3, 3),
    MapOperation.LN: (0.2, 4),
    MapOperation.SQRT: (0.2, 4),
    MapOperation.TANH: (-3, 3),
    MapOperation.SIN: (-4, 4),
    MapOperation.COS: (-4, 4),
    MapOperation.LOG1P: (-0.5, 3),
    MapOperation.EXPM1: (-3, 3),
    MapOperation.ERF: (-3, 3),
    MapOperation.ERF_DERIVATIVE: (-3, 3),
    MapOperation.ATAN: (-5, 5),
}


def test_every_map_has_a_domain() -> None:
    assert set(_MAP_DOMAINS) == set(MapOperation)


@pytest.mark.parametrize("operation", list(MapOperation), ids=str)
@backward_settings
@given(data=st.data())
def test_map(operation: MapOperation, data: st.DataObject) -> None:
    low, high = _MAP_DOMAINS[operation]
    shape = data.draw(shapes(max_side=3))
    _check(lambda x: x.map(operation), [data.draw(values(shape, f64, low, high))], _draw_weights(data, shape))


# ----------------------------------------------------------------------------- products and sums


@backward_settings
@given(data=st.data())
def test_matmul_batched(data: st.DataObject) -> None:
    batch = data.draw(shapes(min_dims=0, max_dims=1, max_side=2))
    m, k, n = (data.draw(st.integers(1, 3)) for _ in range(3))
    a = data.draw(values((*batch, m, k), f64))
    b = data.draw(values((*batch, k, n), f64))
    _check(lambda x, y: x.matmul(y), [a, b], _draw_weights(data, (*batch, m, n)))


@backward_settings
@given(data=st.data())
def test_sum_and_sum_along(data: st.DataObject) -> None:
    shape = data.draw(shapes(max_side=3))
    axis = data.draw(st.integers(0, len(shape) - 1))
    a = data.draw(values(shape, f64))
    _check(lambda x: x.sum(), [a])
    reduced = tuple(e for i, e in enumerate(shape) if i != axis)
    _check(lambda x: x.sum_along(axis), [a], _draw_weights(data, reduced))


@backward_settings
@given(data=st.data())
def test_log_softmax_and_logsumexp(data: st.DataObject) -> None:
    shape = data.draw(shapes(max_side=3))
    axis = data.draw(st.integers(0, len(shape) - 1))
    a = data.draw(values(shape, f64, -5, 5))
    _check(lambda x: x.log_softmax(axis), [a], _draw_weights(data, shape))
    reduced = tuple(e for i, e in enumerate(shape) if i != axis)
    _check(lambda x: x.logsumexp(axis), [a], _draw_weights(data, reduced))


# ----------------------------------------------------------------------------- layout


@backward_settings
@given(data=st.data())
def test_broadcast_and_broadcast_along(data: st.DataObject) -> None:
    ones = data.draw(st.integers(0, 2))
    target = data.draw(shapes(max_side=3))
    _check(lambda x: x.broadcast(target), [data.draw(values((1,) * ones, f64))], _draw_weights(data, target))
    shape = data.draw(shapes(min_dims=0, max_dims=2, max_side=3))
    axis = data.draw(st.integers(0, len(shape)))
    extent = data.draw(st.integers(1, 3))
    grown = (*shape[:axis], extent, *shape[axis:])
    _check(lambda x: x.broadcast_along(axis, extent), [data.draw(values(shape, f64))], _draw_weights(data, grown))


@backward_settings
@given(data=st.data())
def test_reshape_and_permute(data: st.DataObject) -> None:
    shape = data.draw(shapes(max_side=3))
    order = data.draw(st.permutations(range(len(shape))))
    a = data.draw(values(shape, f64))
    target = tuple(shape[i] for i in order)
    _check(lambda x: x.reshape((a.size,)), [a], _draw_weights(data, (a.size,)))
    _check(lambda x: x.permute(order), [a], _draw_weights(data, target))


@backward_settings
@given(data=st.data())
def test_narrow_and_pad(data: st.DataObject) -> None:
    shape = data.draw(shapes(max_side=4))
    axis = data.draw(st.integers(0, len(shape) - 1))
    start = data.draw(st.integers(0, shape[axis] - 1))
    length = data.draw(st.integers(1, shape[axis] - start))
    a = data.draw(values(shape, f64))
    narrowed = tuple(length if i == axis else e for i, e in enumerate(shape))
    _check(lambda x: x.narrow(axis, start, length), [a], _draw_weights(data, narrowed))
    extent = shape[axis] + start + 1
    padded = tuple(extent if i == axis else e for i, e in enumerate(shape))
    _check(lambda x: x.pad(axis, start, extent), [a], _draw_weights(data, padded))


@backward_settings
@given(data=st.data())
def test_unfold_and_fold(data: st.DataObject) -> None:
    shape = list(data.draw(shapes(max_dims=2, max_side=2)))
    axis = data.draw(st.integers(0, len(shape) - 1))
    size, step, dilation = (data.draw(st.integers(1, 2)) for _ in range(3))
    shape[axis] = data.draw(st.integers(dilation * (size - 1) + 1, 6))
    extent = shape[axis]
    count = (extent - dilation * (size - 1) - 1) // step + 1
    windows = (*shape[:axis], count, size, *shape[axis + 1 :])
    a = data.draw(values(tuple(shape), f64))
    _check(lambda x: x.unfold(axis, size, step, dilation), [a], _draw_weights(data, windows))
    g = data.draw(values(windows, f64))
    _check(lambda x: x.fold(axis, size, step, dilation, extent), [g], _draw_weights(data, tuple(shape)))


# ----------------------------------------------------------------------------- gather / scatter


@pytest.mark.parametrize("dense", [False, True], ids=["indices", "one-hot"])
@backward_settings
@given(data=st.data())
def test_gather_and_scatter(dense: bool, data: st.DataObject) -> None:
    vocab = data.draw(st.integers(1, 4))
    indices = data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=4))
    selection: Any = Tensor.selection(indices, vocab, f64)
    if dense:
        selection = np.array(selection.numpy())
    table = data.draw(values((vocab, 2), f64))
    _check(lambda t, s: t.gather(s), [table], _draw_weights(data, (len(indices), 2)), data=[selection])
    rows = data.draw(values((len(indices), 2), f64))
    _check(lambda g, s: g.scatter(s), [rows], _draw_weights(data, (vocab, 2)), data=[selection])


def test_data_operands_get_no_gradient() -> None:
    """A selection or step operand is data: its producers stay outside the scan."""

    def build(tape: Tape) -> tuple[Value, Value, Value, Value]:
        table = tape.parameter([[1.0, 2.0], [3.0, 4.0]])
        mixer = tape.parameter([[0.0, 1.0]])
        threshold = tape.parameter([0.5, 0.5])
        # Dense gather is linear in the selection too; it is still treated as data.
        rows = table.gather(mixer * 1.0)
        stepped = rows.reshape((2,)).step(threshold * 1.0)
        return table, mixer, threshold, (rows.sum() + stepped.sum())

    network, (table, mixer, threshold, loss) = Tape.record(build, element=f64)
    field = network.forward(network.parameters()).backward(loss)
    assert field.of(table).tolist() == [[0.0, 0.0], [1.0, 1.0]]
    for symbol in (mixer, threshold):
        cotangent = field.of(symbol)
        assert cotangent.is_constant and cotangent.fill == 0.0


# ----------------------------------------------------------------------------- structure


def test_value_used_twice() -> None:
    def build(tape: Tape) -> tuple[Value, Value]:
        x = tape.parameter([0.5, -3.0, 7.25])
        return x, (x * x).sum()

    network, (x, loss) = Tape.record(build, element=f32)
    gradient = network.forward(network.parameters()).backward(loss).of(x)
    # Both contributions g*x arrive and add: exactly 2x.
    assert gradient.tolist() == [1.0, -6.0, 14.5]


@backward_settings
@given(data=st.data())
def test_diamond_and_fan_out(data: st.DataObject) -> None:
    shape = data.draw(shapes(max_side=3))
    a = data.draw(values(shape, f64, -2, 2))

    def build(x: Value) -> Value:
        y = x.exp()
        z = y * x + y.sin() - x.tanh() * y
        return z * z + y

    _check(build, [a], _draw_weights(data, shape))


def test_equal_valued_parameters_get_independent_gradients() -> None:
    def build(tape: Tape) -> tuple[Value, Value, Value]:
        first, second = tape.parameter(2.0), tape.parameter(2.0)
        return first, second, first * 3.0 + second * 5.0

    network, (first, second, loss) = Tape.record(build, element=f64)
    table = network.parameters()
    gradients = network.forward(table).backward(loss).parameters(table)
    assert gradients.of(first).scalar() == 3.0
    assert gradients.of(second).scalar() == 5.0


def test_a_singular_disconnected_branch_does_not_poison() -> None:
    def build(tape: Tape) -> tuple[Value, Value, Value]:
        x = tape.parameter(0.0)
        singular = x / x  # NaN at 0, but the loss does not depend on it
        return x, singular, x * 3.0 + 1.0

    network, (x, singular, loss) = Tape.record(build, element=f64)
    run = network.forward(network.parameters())
    assert np.isnan(run.of(singular).scalar())
    field = run.backward(loss)
    assert field.of(x).scalar() == 3.0
    assert field.of(singular).scalar() == 0.0


def test_only_ancestors_are_visited() -> None:
    def build(tape: Tape) -> tuple[Value, Value, Value]:
        w = tape.parameter([1.0, 2.0])
        first = (w * 2.0).sum()
        later = (w.exp()).sum()  # recorded after, not an ancestor of `first`
        return w, first, later

    network, (w, first, later) = Tape.record(build, element=f64)
    run = network.forward(network.parameters())
    assert run.backward(first).of(w).tolist() == [2.0, 2.0]
    assert run.backward(later).of(w).tolist() == [float(np.exp(1.0)), float(np.exp(2.0))]


def test_backward_runs_in_bf16() -> None:
    from topos import bf16

    def build(tape: Tape) -> tuple[Value, Value]:
        w = tape.parameter([[1.5, -2.0], [0.25, 3.0]])
        return w, (w.matmul(w) * 0.5).sum()

    network, (w, loss) = Tape.record(build, element=bf16)
    gradient = network.forward(network.parameters()).backward(loss).of(w)
    assert gradient.element == bf16
    wf = np.array([[1.5, -2.0], [0.25, 3.0]])
    ones = np.ones((2, 2))
    expected = 0.5 * (ones @ wf.T + wf.T @ ones)
    # These values are dyadic with few bits: exact in bf16 too.
    assert gradient.tolist() == expected.tolist()


def test_relu_at_zero_has_zero_gradient_like_jax_and_torch() -> None:
    # relu records maximum(0, x); Maximum gives ties to its left operand, so the kink at 0
    # carries no gradient to x, matching jax.nn.relu and torch.relu.
    network, (x, y) = Tape.record(lambda t: (lambda x: (x, x.relu().sum()))(t.parameter([0.0, 2.0, -3.0])), element=f64)
    gradient = network.forward(network.parameters()).backward(y).of(x)
    assert gradient.tolist() == [0.0, 1.0, 0.0]
