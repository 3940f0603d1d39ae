"""The conventions of docs/terminology.md, each held to JAX or to a hand-computed value.

Values and gradients are compared with jax in x64. Where the item is a formula evaluated
the same way on both sides (sigmoid away from its cap, cross-entropy), the tolerance is a
few ulps of f64 (1e-12 relative); where the item is a convention (a derivative at a kink,
a gradient where the plain formula gives NaN), the expected value is exact.
"""

from __future__ import annotations

import gc
import threading
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from libm_reference import correctly_rounded_f32

from topos import Numerics, Tape, Tensor, Value, bf16, f32, f64, gradient
from topos._collector import paused
from topos.ir.element import ElementType
from topos.nn.losses import cross_entropy

jax.config.update("jax_enable_x64", True)

Array = np.ndarray[Any, Any]


def _value_and_gradient(
    function: Any, xs: Array, element: ElementType = f64
) -> tuple[Array, Array]:
    def build(t: Tape) -> tuple[Value, Value, Value]:
        x = t.input(xs)
        y = function(x)
        return x, y, y.sum()

    network, (x, y, loss) = Tape.record(build, element=element)
    run = network.forward(network.parameters())
    return run.of(y).numpy().astype(np.float64), run.backward(loss).of(x).numpy().astype(np.float64)


# ----------------------------------------------------------------------------- sigmoid family

FAR_LEFT = {f32: [-1000.0, -200.0, -104.0, -89.0, -88.8], f64: [-1e5, -1000.0, -745.0, -710.0]}


@pytest.mark.parametrize("element", [f32, f64, bf16])
@pytest.mark.parametrize("name", ["sigmoid", "silu", "quick_gelu"])
def test_sigmoid_family_gradients_are_finite_where_exp_overflows(element: ElementType, name: str) -> None:
    composites = {
        "sigmoid": lambda v: v.sigmoid(),
        "silu": lambda v: v.silu(),
        "quick_gelu": lambda v: v * (v * 1.702).sigmoid(),
    }
    xs = np.array(FAR_LEFT[f64 if element is f64 else f32])
    values, grads = _value_and_gradient(composites[name], xs, element)
    assert np.isfinite(grads).all(), grads
    # The true gradients there are below the smallest normal number of the element.
    tiny = float(np.finfo(np.float64 if element is f64 else np.float32).tiny)
    assert (np.abs(grads) <= tiny).all(), grads
    assert (np.abs(values) <= tiny * 1e3 * np.abs(xs)).all(), values


def _sigmoid(x: Array) -> Array:
    """Stable f64 sigmoid of numpy: exp(-|x|) never overflows."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-340.0, 700.0), min_size=1, max_size=8))
def test_sigmoid_and_silu_match_jax_in_f64(points: list[float]) -> None:
    """Values against jax.nn; gradients against the stable closed forms, since jax's
    ``s * (1 - s)`` loses relative precision once s is near 1 (1e-10 at x = 14).

    Below x = -354 the chain rule's intermediate ``s / (1 + e^-x)`` is subnormal in f64 and
    carries fewer digits; the far-left test covers that range."""
    xs = np.array(points)
    s, s_minus = _sigmoid(xs), _sigmoid(-xs)
    for composite, reference, derivative in (
        (lambda v: v.sigmoid(), jax.nn.sigmoid, s * s_minus),
        (lambda v: v.silu(), jax.nn.silu, s + xs * s * s_minus),
    ):
        values, grads = _value_and_gradient(composite, xs)
        expected = np.asarray(reference(jnp.asarray(xs)))
        # A handful of f64 roundings on each side: 1e-12 relative, and an absolute floor
        # far below anything representable in the results' range.
        np.testing.assert_allclose(values, expected, rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(grads, derivative, rtol=1e-12, atol=1e-300)


def test_sigmoid_values_are_its_two_documented_formulas_bit_for_bit() -> None:
    xs = np.linspace(-120.0, 30.0, 601, dtype=np.float32)
    values, _ = _value_and_gradient(lambda v: v.sigmoid(), xs, f32)
    with np.errstate(all="ignore"):
        # exp is the exact posture's: correctly rounded in f32 (the independent reference).
        above = np.float32(1.0) / (correctly_rounded_f32("exp", -np.maximum(xs, np.float32(0.0))) + np.float32(1.0))
        small = correctly_rounded_f32("exp", np.minimum(xs, np.float32(0.0)))
        below = small / (small + np.float32(1.0))
    plain = np.where(xs >= 0, above, below).astype(np.float32)
    assert (values.astype(np.float32).view(np.uint32) == plain.view(np.uint32)).all()


def test_sigmoid_gradient_keeps_its_digits_until_exp_underflows() -> None:
    # The single quotient 1 / (1 + exp(-x)) squared exp(-x) in its gradient: 3e-4 relative
    # error at x = -48 in f32 and 0 from -65 on, where the truth exp(x) is still normal.
    xs = np.linspace(-85.0, -20.0, 131, dtype=np.float32)
    _, gradients = _value_and_gradient(lambda v: v.sigmoid(), xs, f32)
    wide = xs.astype(np.float64)
    truth = np.exp(wide) / (1.0 + np.exp(wide)) ** 2
    assert (np.abs(gradients - truth) <= 4 * 2.0**-24 * truth).all()


# ----------------------------------------------------------------------------- kinks and zeros


def test_abs_has_zero_gradient_at_signed_zeros_and_positive_magnitude() -> None:
    xs = np.array([-0.0, 0.0, -2.5, 3.0, -np.inf, np.inf])
    values, grads = _value_and_gradient(lambda v: v.abs(), xs)
    assert values.tolist() == [0.0, 0.0, 2.5, 3.0, np.inf, np.inf]
    assert not np.signbit(values).any()
    assert grads.tolist() == [0.0, 0.0, -1.0, 1.0, -1.0, 1.0]
    # PyTorch's rule (grad * sign(x)); jax 0.10 sends 1 at both zeros instead.
    assert grads.tolist() == np.sign(xs).tolist()


def test_abs_of_nan_is_nan() -> None:
    values, _ = _value_and_gradient(lambda v: v.abs(), np.array([np.nan, 1.0]))
    assert np.isnan(values[0]) and values[1] == 1.0


def test_relu_and_softplus_derivatives_at_zero() -> None:
    _, relu_grad = _value_and_gradient(lambda v: v.relu(), np.array([0.0, -0.0]))
    assert relu_grad.tolist() == [0.0, 0.0]
    _, softplus_grad = _value_and_gradient(lambda v: v.softplus(), np.array([0.0, -0.0, 1.0]))
    assert softplus_grad[:2].tolist() == [0.5, 0.5]
    assert abs(softplus_grad[2] - float(jax.nn.sigmoid(1.0))) < 1e-15


def test_maximum_ties_go_to_the_left_operand() -> None:
    def build(t: Tape) -> tuple[Value, Value, Value]:
        a = t.input([1.0, 2.0, 3.0])
        b = t.input([1.0, 5.0, 0.0])
        return a, b, a.maximum(b).sum()

    network, (a, b, loss) = Tape.record(build, element=f64)
    field = network.forward(network.parameters()).backward(loss)
    assert field.of(a).tolist() == [1.0, 0.0, 1.0]
    assert field.of(b).tolist() == [0.0, 1.0, 0.0]


def test_powf_gradient_conventions_at_zero() -> None:
    def build(t: Tape) -> tuple[Value, Value, Value]:
        x = t.input([0.0, -0.0, 0.0, 2.0, 0.0, 3.0])
        y = t.input([0.0, 0.0, 2.0, 0.0, 0.5, 2.0])
        return x, y, (x**y).sum()

    network, (x, y, loss) = Tape.record(build, element=f64)
    field = network.forward(network.parameters()).backward(loss)
    # d/dx x**0 = 0 everywhere; d/dx 0**2 = 0; d/dx 0**0.5 = inf (the true one-sided limit).
    assert field.of(x).tolist() == [0.0, 0.0, 0.0, 0.0, np.inf, 6.0]
    # d/dy 0**y = 0 for y >= 0 where the power is finite; d/dy 2**0 = ln 2.
    dy = field.of(y).tolist()
    assert dy[:3] == [0.0, 0.0, 0.0] and dy[4] == 0.0
    assert dy[3] == float(np.log(2.0)) and dy[5] == float(9.0 * np.log(3.0))


def test_powf_conventions_hold_on_the_recorded_gradient_and_exact_plan() -> None:
    def build(t: Tape) -> tuple[Value, Value, Value]:
        x = t.input([0.0, 0.0, 2.0, 1.5])
        y = t.input([0.0, 2.0, 0.0, 1.5])
        return x, y, (x**y).sum()

    network, (x, y, loss) = Tape.record(build, element=f64)
    engine = network.forward(network.parameters()).backward(loss)
    longer, adjoints = gradient(network, loss, [x, y])
    plan = longer.entry(adjoints.roots()).numerics(Numerics.EXACT).lower()
    run = plan.forward(longer.parameters(), {})
    for symbol in (x, y):
        assert (run.of(adjoints.of(symbol)).bits() == engine.of(symbol).bits()).all()


# ----------------------------------------------------------------------------- gather / scatter


def _selection_graphs(element: ElementType, dense: bool) -> tuple[Array, Array]:
    table = np.array([[1.0, -0.0], [np.inf, 2.0], [np.nan, 3.0], [-4.0, 5.0]])
    rows = [0, 3, 3, 0]
    selection = Tensor.selection(rows, 4, element)
    fed = Tensor(selection.numpy(), element) if dense else selection

    def build(t: Tape) -> tuple[Value, Value, Value, Value]:
        w = t.parameter(Tensor(table, element))
        s = t.input(fed)
        picked = w.gather(s)
        return w, picked, picked.sum(), s

    network, (w, picked, loss, _) = Tape.record(build, element=element)
    run = network.forward(network.parameters())
    return run.of(picked).bits(), run.backward(loss).of(w).bits()


@pytest.mark.parametrize("element", [f32, f64, bf16])
def test_gather_ignores_unselected_inf_and_nan_rows_on_both_storages(element: ElementType) -> None:
    index_values, index_grads = _selection_graphs(element, dense=False)
    dense_values, dense_grads = _selection_graphs(element, dense=True)
    assert (index_values == dense_values).all()
    assert (index_grads == dense_grads).all()
    values = Tensor._wrap(index_values.view(element.dtype), element).tolist()
    assert values == [[1.0, 0.0], [-4.0, 5.0], [-4.0, 5.0], [1.0, 0.0]]


@pytest.mark.parametrize("numerics", [Numerics.EXACT, Numerics.FAST])
def test_gather_semantics_hold_in_plans(numerics: Numerics) -> None:
    table = np.array([[np.inf], [1.0], [np.nan]])
    for fed in (Tensor.selection([1, 1], 3, f32), Tensor(Tensor.selection([1, 1], 3, f32).numpy(), f32)):

        def build(t: Tape, fed: Tensor = fed) -> tuple[Value, Value]:
            s = t.input(fed)
            return s, t.parameter(table).gather(s)

        network, (_, picked) = Tape.record(build, element=f32)
        run = network.entry([picked]).numerics(numerics).lower().forward(network.parameters(), {})
        assert run.of(picked).tolist() == [[1.0], [1.0]]


# ----------------------------------------------------------------------------- cross-entropy


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_cross_entropy_is_the_batch_mean_for_soft_targets(data: st.DataObject) -> None:
    batch = data.draw(st.integers(1, 4))
    classes = data.draw(st.integers(2, 5))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    logits = rng.normal(size=(batch, classes)) * 3.0
    targets = rng.uniform(0.0, 1.0, size=(batch, classes))  # rows need not sum to 1

    def build(t: Tape) -> tuple[Value, Value]:
        x = t.input(logits)
        return x, cross_entropy(x, t.input(targets))

    network, (x, loss) = Tape.record(build, element=f64)
    run = network.forward(network.parameters())

    def reference(z: Any) -> Any:
        return -(jnp.asarray(targets) * jax.nn.log_softmax(z, axis=1)).sum() / batch

    expected = float(reference(jnp.asarray(logits)))
    assert abs(run.of(loss).scalar() - expected) <= 1e-12 * max(1.0, abs(expected))
    expected_grad = np.asarray(jax.grad(reference)(jnp.asarray(logits)))
    np.testing.assert_allclose(run.backward(loss).of(x).numpy(), expected_grad, rtol=1e-10, atol=1e-14)


def test_cross_entropy_of_one_hot_targets_keeps_its_bits() -> None:
    """One-hot targets: dividing by the counted batch equals dividing by the target mass."""
    logits = np.random.default_rng(3).normal(size=(5, 7)).astype(np.float32)
    selection = Tensor.selection([0, 6, 2, 2, 5], 7, f32)

    def build(t: Tape) -> tuple[Value, Value]:
        x = t.input(logits)
        s = t.input(selection)
        mass = s.sum_along(1)
        old = ((mass * x.logsumexp(1)).sum() - (s * x).sum()) / s.sum()
        return cross_entropy(x, s), old

    network, (new, old) = Tape.record(build, element=f32)
    run = network.forward(network.parameters())
    assert run.of(new).bits() == run.of(old).bits()


# ----------------------------------------------------------------------------- collector


def test_readings_pause_the_collector_and_restore_it() -> None:
    seen: list[bool] = []

    def build(t: Tape) -> tuple[Value, Value]:
        seen.append(gc.isenabled())
        w = t.parameter([1.0, 2.0])
        return w, (w * w).sum()

    assert gc.isenabled()
    network, (w, loss) = Tape.record(build)
    gradient(network, loss, [w])
    network.entry([loss]).lower()
    assert seen == [False]
    assert gc.isenabled()


def test_pauses_nest_and_overlap_across_threads() -> None:
    assert gc.isenabled()
    inside = threading.Barrier(4)
    leave = threading.Event()

    def hold() -> None:
        with paused():
            inside.wait()
            leave.wait()

    threads = [threading.Thread(target=hold) for _ in range(3)]
    for thread in threads:
        thread.start()
    inside.wait()
    assert not gc.isenabled()
    with paused():
        assert not gc.isenabled()
    leave.set()
    for thread in threads:
        thread.join()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()  # a pause never enables a collector the caller turned off
    finally:
        gc.enable()
