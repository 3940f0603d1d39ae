"""The gradient reading: Adjoints, bad input, fan-out, higher order."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from topos import (
    BackwardTargetError,
    ForeignSymbolError,
    MixedTapesError,
    Network,
    NotDifferentiableError,
    Symbol,
    Tape,
    UnknownSymbolError,
    Value,
    f32,
    f64,
)
from topos.stages.gradient import Adjoints, gradient

jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]

HERE = "test_gradient.py:"


def dense() -> tuple[Network, dict[str, Symbol]]:
    def build(t: Tape) -> dict[str, Value]:
        w = t.parameter(np.array([[0.5, -0.25], [0.75, 1.0]]))
        b = t.parameter(np.array([0.125, -0.5]))
        unused = t.parameter(np.array([3.0]))
        x = t.input(np.array([[1.0, 2.0], [-1.0, 0.5]]))
        h = (x.matmul(w) + b.broadcast_along(0, 2)).tanh()
        loss = (h * h).sum()
        return {"w": w, "b": b, "unused": unused, "x": x, "h": h, "loss": loss}

    return Tape.record(build)


def test_adjoints_api() -> None:
    network, s = dense()
    longer, adjoints = gradient(network, s["loss"], [s["w"], s["x"], s["h"]])
    assert isinstance(adjoints, Adjoints)
    assert adjoints.target == s["loss"]
    assert adjoints.wrt == (s["w"], s["x"], s["h"])
    assert len(adjoints) == 3
    assert adjoints.pairs() == list(zip(adjoints.wrt, adjoints.gradients(), strict=True))
    assert list(adjoints) == adjoints.pairs()
    assert adjoints.of(s["x"]) == adjoints.gradients()[1]
    assert adjoints.roots() == (s["loss"], *adjoints.gradients())
    with pytest.raises(UnknownSymbolError, match=r"%1"):
        adjoints.of(s["b"])
    # Gradient nodes come after the original ones; the original is untouched.
    assert all(g.index >= len(network) for g in adjoints.gradients())
    assert len(longer) > len(network)
    assert longer.describe().startswith(network.describe().rsplit("network:", 1)[0])


def test_recorded_equals_engine_and_old_symbols_stay_valid() -> None:
    network, s = dense()
    wrt = [s["w"], s["b"], s["unused"], s["x"], s["h"]]
    longer, adjoints = gradient(network, s["loss"], wrt)
    parameters = network.parameters()
    recorded = longer.forward(parameters)
    engine = network.forward(parameters).backward(s["loss"])
    for symbol, gradient_symbol in adjoints:
        assert np.array_equal(recorded.of(gradient_symbol).bits(), engine.of(symbol).bits())
    assert recorded.of(s["loss"]).bits() == network.forward(parameters).of(s["loss"]).bits()
    table = recorded.recorded_gradients(adjoints)
    assert table.symbols == parameters.symbols
    assert np.array_equal(table.of(s["w"]).bits(), engine.of(s["w"]).bits())
    assert table.of(s["unused"]).tolist() == [0.0]


def test_recorded_gradients_zeros_for_slots_not_named() -> None:
    network, s = dense()
    longer, adjoints = gradient(network, s["loss"], [s["b"]])
    table = longer.forward(network.parameters()).recorded_gradients(adjoints)
    assert table.of(s["w"]).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert table.of(s["b"]).tolist() != [0.0, 0.0]


def test_recorded_gradients_refuses_a_shorter_run() -> None:
    network, s = dense()
    _, adjoints = gradient(network, s["loss"], [s["w"]])
    with pytest.raises(ForeignSymbolError, match=HERE):
        network.forward(network.parameters()).recorded_gradients(adjoints)


def test_adjoints_returned_inside_a_tuple_detach_unchanged() -> None:
    def build(t: Tape) -> tuple[Value, Adjoints, list[Value]]:
        w = t.parameter(np.array([1.0, -2.0]))
        loss = (w * w * w).sum()
        return loss, t.differentiate(loss, [w]), [w]

    network, (loss, adjoints, [w]) = Tape.record(build, element=f64)
    assert isinstance(adjoints, Adjoints)
    assert adjoints.target == loss and adjoints.wrt == (w,)
    run = network.forward(network.parameters())
    assert run.of(adjoints.of(w)).tolist() == [3.0, 12.0]


def test_vjp_while_recording_with_a_computed_seed() -> None:
    def build(t: Tape) -> tuple[Value, Adjoints]:
        x = t.input(np.array([1.0, 2.0, 3.0]))
        y = x * x
        seed = x + 1.0  # a computed seed is a constant weight, never differentiated
        return x, t.vjp(y, seed, [x])

    network, (x, adjoints) = Tape.record(build, element=f64)
    run = network.forward(network.parameters())
    assert run.of(adjoints.of(x)).tolist() == [4.0, 12.0, 24.0]


# --------------------------------------------------------------------------- bad input
def test_non_scalar_target_is_refused_by_both_doors() -> None:
    network, s = dense()
    with pytest.raises(BackwardTargetError, match=r"test_gradient\.py:\d+: .*rank-0 .*target %7 Tanh\[2, 2\].*rank 2") as info:
        gradient(network, s["h"], [s["w"]])
    assert "differentiate" in str(info.value)

    tape = network.reopen()
    before = len(tape)
    with pytest.raises(BackwardTargetError, match=r"Tanh\[2, 2\]"):
        tape.differentiate(s["h"], [s["w"]])
    assert len(tape) == before


def test_seed_of_another_shape_is_refused() -> None:
    def build(t: Tape) -> tuple[Value, Value, Value]:
        x = t.input(np.array([1.0, 2.0, 3.0]))
        return x, x * x, t.input(np.array([1.0, 1.0]))

    network, (x, y, seed) = Tape.record(build)
    with pytest.raises(BackwardTargetError, match=r"seed %2 Input\[2\].*target %1 Mul\[3\]") as info:
        gradient(network, y, [x], seed=seed)
    assert HERE in str(info.value)
    tape = network.reopen()
    with pytest.raises(BackwardTargetError, match=r"\[2\].*\[3\]"):
        tape.vjp(y, seed, [x])
    assert len(tape) == len(network)


def test_wrt_of_another_network_is_refused() -> None:
    network, s = dense()
    _, w_other = Tape.record(lambda t: t.parameter(1.0))
    with pytest.raises(ForeignSymbolError, match=r"test_gradient\.py:\d+: the wrt\[1\] Symbol\(%0\)"):
        gradient(network, s["loss"], [s["w"], w_other])


def test_target_of_another_network_is_refused() -> None:
    network, s = dense()
    _, loss_other = Tape.record(lambda t: (t.parameter(1.0) * 2.0).sum())
    with pytest.raises(ForeignSymbolError, match=r"test_gradient\.py:\d+: the target"):
        gradient(network, loss_other, [s["w"]])
    tape = network.reopen()
    with pytest.raises(ForeignSymbolError, match=HERE):
        tape.differentiate(loss_other, [s["w"]])
    assert len(tape) == len(network)


def test_value_of_another_tape_is_refused() -> None:
    other = Tape()
    stranger = other.parameter(1.0)
    tape = Tape()
    w = tape.parameter(2.0)
    loss = w * w
    before = len(tape)
    with pytest.raises(MixedTapesError, match=r"wrt\[0\] %0\[\]"):
        tape.differentiate(loss, [stranger])
    assert len(tape) == before


def test_constant_leaf_is_not_differentiable_but_an_input_is() -> None:
    def build(t: Tape) -> tuple[Value, Value, Value]:
        x = t.input(np.array([1.0, 2.0]))
        c = t.leaf(np.array([3.0, 4.0]))
        return x, c, (x * c).sum()

    network, (x, c, loss) = Tape.record(build, element=f64)
    with pytest.raises(NotDifferentiableError, match=r"test_gradient\.py:\d+: wrt\[1\] is %1 Leaf\[2\]"):
        gradient(network, loss, [x, c])
    longer, adjoints = gradient(network, loss, [x])
    assert longer.forward(network.parameters()).of(adjoints.of(x)).tolist() == [3.0, 4.0]


# --------------------------------------------------------------------------- fan-out
def test_diamond_and_reuse() -> None:
    def build(t: Tape) -> tuple[Value, Value]:
        x = t.parameter(np.array([0.5, -1.5]))
        a = x * 2.0
        loss = (a.tanh() * a.sin() + a * a).sum()
        return x, loss

    network, (x, loss) = Tape.record(build, element=f64)
    longer, adjoints = gradient(network, loss, [x])
    got = np.asarray(longer.forward(network.parameters()).of(adjoints.of(x)).numpy())
    a = 2.0 * np.array([0.5, -1.5])
    want = 2.0 * ((1 - np.tanh(a) ** 2) * np.sin(a) + np.tanh(a) * np.cos(a) + 2 * a)
    np.testing.assert_allclose(got, want, rtol=1e-14)  # f64, a handful of roundings


def test_equal_valued_parameters_get_independent_gradients() -> None:
    def build(t: Tape) -> tuple[Value, Value, Value]:
        p = t.parameter(2.0)
        q = t.parameter(2.0)
        return p, q, p * 3.0 + q * q

    network, (p, q, loss) = Tape.record(build, element=f64)
    longer, adjoints = gradient(network, loss, [p, q])
    run = longer.forward(network.parameters())
    assert run.of(adjoints.of(p)).scalar() == 3.0
    assert run.of(adjoints.of(q)).scalar() == 4.0


def test_singular_branch_off_the_target_does_not_poison() -> None:
    def build(t: Tape) -> tuple[Value, Value, Value]:
        x = t.parameter(0.0)
        singular = x / x  # NaN at 0, but the loss never reads it
        return x, singular, x * x + x

    network, (x, singular, loss) = Tape.record(build, element=f64)
    longer, adjoints = gradient(network, loss, [x, singular])
    run = longer.forward(network.parameters())
    assert np.isnan(run.of(singular).scalar())
    assert run.of(adjoints.of(x)).scalar() == 1.0
    assert run.of(adjoints.of(singular)).scalar() == 0.0
    assert network.forward(network.parameters()).backward(loss).of(x).scalar() == 1.0


def test_wrt_the_target_does_not_reach_gets_a_zero() -> None:
    def build(t: Tape) -> tuple[Value, Value, Value]:
        x = t.parameter(np.array([1.0, 2.0]))
        later = t.input(np.array([5.0]))
        return x, later, (x * x).sum()

    network, (x, later, loss) = Tape.record(build, element=f64)
    longer, adjoints = gradient(network, loss, [later, x])
    run = longer.forward(network.parameters())
    assert run.of(adjoints.of(later)).tolist() == [0.0]


def test_differentiating_twice_gives_the_same_text() -> None:
    network, s = dense()
    first, a1 = gradient(network, s["loss"], [s["w"], s["b"]])
    second, a2 = gradient(network, s["loss"], [s["w"], s["b"]])
    assert first.describe() == second.describe()
    assert [g.index for g in a1.gradients()] == [g.index for g in a2.gradients()]


# --------------------------------------------------------------------------- higher order
X0 = np.array([0.5, -0.75, 1.25])
V0 = np.array([1.0, 0.5, -2.0])
A0 = np.array([[2.0, 0.5, -1.0], [0.5, 1.0, 0.25], [-1.0, 0.25, 3.0]])


def cubic(t: Tape) -> tuple[Value, Value, Value]:
    x = t.input(X0)
    v = t.input(V0)
    a = t.leaf(A0)
    column = x.reshape((3, 1))
    quadratic = column.permute((1, 0)).matmul(a.matmul(column)).sum()
    return x, v, (x * x * x).sum() + quadratic


def test_hessian_vector_product_is_the_vjp_of_a_recorded_gradient() -> None:
    network, (x, v, loss) = Tape.record(cubic, element=f64)
    once, adjoints = gradient(network, loss, [x])
    twice, second = gradient(once, adjoints.of(x), [x], seed=v)
    hv = twice.forward(network.parameters()).of(second.of(x)).tolist()
    # f = sum x^3 + x^T A x, so H = diag(6 x) + A + A^T, every term exact in f64.
    hessian = np.diag(6.0 * X0) + A0 + A0.T
    assert hv == (hessian @ V0).tolist()


def test_hessian_vector_product_while_recording_agrees_with_gradient_stage() -> None:
    def build(t: Tape) -> tuple[Value, Value, Any]:
        x, v, loss = cubic(t)
        first = t.differentiate(loss, [x])
        return x, v, t.vjp(first.of(x.symbol), v, [x])

    network, (_, _, hvp) = Tape.record(build, element=f64)
    plain, (x2, v2, loss2) = Tape.record(cubic, element=f64)
    once, adjoints = gradient(plain, loss2, [x2])
    twice, second = gradient(once, adjoints.of(x2), [x2], seed=v2)
    # The two doors record the same nodes in the same order.
    assert network.describe() == twice.describe()
    assert hvp.gradients()[0].index == second.gradients()[0].index


def test_hessian_vector_product_agrees_with_jax() -> None:
    x0 = np.array([0.3, -0.8, 1.1, 0.45])
    v0 = np.array([0.7, -1.2, 0.25, 2.0])

    def build(t: Tape) -> tuple[Value, Value, Value]:
        x = t.input(x0)
        v = t.input(v0)
        y = x.tanh() * x.sin() + (x * x + 1.0).ln() + x.exp().log1p()
        z = y.reshape((2, 2)).log_softmax(1)
        return x, v, (z * z).sum() + x.erf().sum()

    def f(x: Any) -> Any:
        y = jnp.tanh(x) * jnp.sin(x) + jnp.log(x * x + 1.0) + jnp.log1p(jnp.exp(x))
        z = jax.nn.log_softmax(y.reshape(2, 2), axis=1)
        return jnp.sum(z * z) + jnp.sum(jax.scipy.special.erf(x))

    network, (x, v, loss) = Tape.record(build, element=f64)
    once, adjoints = gradient(network, loss, [x])
    twice, second = gradient(once, adjoints.of(x), [x], seed=v)
    run = twice.forward(network.parameters())
    ours = np.asarray(run.of(second.of(x)).numpy())
    _, theirs = jax.jvp(jax.grad(f), (jnp.asarray(x0),), (jnp.asarray(v0),))
    # f64 on both sides; the two compute the same expressions in different orders, so
    # agreement is to a few hundred ulps of the largest entry, not bits.
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-12, atol=1e-12)
    gradient_ours = np.asarray(run.of(adjoints.of(x)).numpy())
    np.testing.assert_allclose(gradient_ours, np.asarray(jax.grad(f)(jnp.asarray(x0))), rtol=1e-12, atol=1e-12)


def test_f32_recorded_gradient_of_gradient_runs_with_original_parameters() -> None:
    network, s = dense()
    once, adjoints = gradient(network, s["loss"], [s["w"]])
    norm = once.reopen()
    g = norm.resolve(adjoints.of(s["w"]))
    squared = (g * g).sum().symbol
    extended = norm.seal()
    twice, second = gradient(extended, squared, [s["w"], s["b"]])
    run = twice.forward(network.parameters())
    assert run.of(second.of(s["w"])).element == f32
    assert run.of(second.of(s["w"])).shape == network.node(s["w"]).shape
