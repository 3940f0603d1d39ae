"""The common math and activations of issue 12 against jax, value and gradient.

Each function is recorded on a tape, interpreted and differentiated (the gradient of the
sum, so the elementwise derivative), and compared with jax.numpy / jax.nn on the same f64
payloads: ``|ours - jax| <= 1e-10 * |jax|`` elementwise (relative, because several
functions are evaluated near 0 where an absolute test would pass anything), with NaN and
infinities required to agree exactly. Both sides are f64 and differ only in evaluation
order and libm versus XLA transcendentals; the composites here lose a few ulp at most.
Subnormal inputs are not drawn: XLA on the CPU flushes them to zero, numpy does not.

The tensor road computes the same composites; it is compared with the recording bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_bits, here
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import InvalidArgumentError, ShapeMismatchError, Tape, Tensor, Value, f32, f64

jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]

RELATIVE = 1e-10
# jax differentiates sigmoid as s (1 - s), which cancels for large x (off by 1e-3 relative at
# x = 30, where ours, exp(-x) / (1 + exp(-x))², is right); its error stays below 1e-16 absolute.
# jax's elu, selu and celu gradients on the negative side carry expm1(x) + 1's cancellation
# (about an ulp of 1, absolute: 1.3e-10 relative at celu(-16)); ours is exp(x), right to
# the last digits there (checked against mpmath), so jax's side gets that floor.
GRADIENT_FLOOR = {"sigmoid": 1e-15} | dict.fromkeys(["elu", "elu_alpha", "selu", "celu", "celu_alpha"], 1e-15)

Ours = Callable[[Any], Any]
Theirs = Callable[[Any], Any]


def _case(ours: Ours, theirs: Theirs, low: float, high: float, special: list[float]) -> tuple[Ours, Theirs, float, float, list[float]]:
    return ours, theirs, low, high, special


_AROUND_ZERO = [0.0, -0.0, 1.0, -1.0]
# Each function: ours, jax's, the drawn range, and points with a convention (ties, kinks, edges).
CASES: dict[str, tuple[Ours, Theirs, float, float, list[float]]] = {
    "tan": _case(lambda x: x.tan(), jnp.tan, -1.55, 1.55, [0.0, -0.0, 1.5]),
    # Past 709.78 the gradients overflow a factor 2 early (stated in terminology.md); the
    # values stay right up to sinh's own limit (test_infinities_follow_the_stated_conventions).
    "sinh": _case(lambda x: x.sinh(), jnp.sinh, -709.0, 709.0, [*_AROUND_ZERO, 1e-300, 709.7, -709.7]),
    "cosh": _case(lambda x: x.cosh(), jnp.cosh, -709.0, 709.0, [*_AROUND_ZERO, 1e-300, 709.7, -709.7]),
    "asinh": _case(lambda x: x.asinh(), jnp.arcsinh, -1e150, 1e150, [*_AROUND_ZERO, 1e-300, 1e-8, -2.0, 0.999]),
    "acosh": _case(lambda x: x.acosh(), jnp.arccosh, 1.0, 1e150, [1.0 + 2**-52, 2.0, 1.5, 1e10]),
    "atanh": _case(lambda x: x.atanh(), jnp.arctanh, -0.999999, 0.999999, [0.0, -0.0, 1e-300, 0.5, -0.5]),
    "log2": _case(lambda x: x.log2(), jnp.log2, 1e-300, 1e300, [1.0, 2.0, 0.5, 1024.0]),
    "log10": _case(lambda x: x.log10(), jnp.log10, 1e-300, 1e300, [1.0, 10.0, 0.1, 1e5]),
    "exp2": _case(lambda x: x.exp2(), jnp.exp2, -1000.0, 1000.0, [0.0, -0.0, 3.0, -3.0, 0.5]),
    "rsqrt": _case(lambda x: x.rsqrt(), jax.lax.rsqrt, 1e-300, 1e300, [1.0, 4.0, 0.25]),
    "sigmoid": _case(lambda x: x.sigmoid(), jax.nn.sigmoid, -700.0, 700.0, [0.0, -0.0, 30.0, -30.0]),
    "logsigmoid": _case(lambda x: x.logsigmoid(), jax.nn.log_sigmoid, -1e3, 1e3, [0.0, -0.0, 40.0, -800.0]),
    "softsign": _case(lambda x: x.softsign(), jax.nn.soft_sign, -1e6, 1e6, [0.0, -0.0, 1.0, -1.0]),
    "elu": _case(lambda x: x.elu(), jax.nn.elu, -1e3, 1e3, [0.0, -0.0, 1e-300, -1e-300]),
    "elu_alpha": _case(lambda x: x.elu(0.3), lambda x: jax.nn.elu(x, 0.3), -50.0, 50.0, [0.0, -0.0]),
    "selu": _case(lambda x: x.selu(), jax.nn.selu, -1e3, 1e3, [0.0, -0.0, 1.0, -1.0]),
    "celu": _case(lambda x: x.celu(), jax.nn.celu, -1e3, 1e3, [0.0, -0.0, -2.0]),
    "celu_alpha": _case(lambda x: x.celu(2.5), lambda x: jax.nn.celu(x, 2.5), -50.0, 50.0, [0.0, -0.0]),
    "leaky_relu": _case(lambda x: x.leaky_relu(), jax.nn.leaky_relu, -1e3, 1e3, [0.0, -0.0, 1.0, -1.0]),
    "leaky_relu_0": _case(lambda x: x.leaky_relu(0.0), lambda x: jax.nn.leaky_relu(x, 0.0), -10.0, 10.0, [0.0, -0.0]),
    "leaky_relu_3": _case(lambda x: x.leaky_relu(3.0), lambda x: jax.nn.leaky_relu(x, 3.0), -10.0, 10.0, [0.0, -0.0]),
    "hardsigmoid": _case(lambda x: x.hardsigmoid(), jax.nn.hard_sigmoid, -10.0, 10.0, [0.0, 3.0, -3.0, 2.5, -2.5]),
    "hardswish": _case(lambda x: x.hardswish(), jax.nn.hard_swish, -10.0, 10.0, [0.0, 3.0, -3.0, 2.5, -2.5]),
    "mish": _case(lambda x: x.mish(), jax.nn.mish, -100.0, 100.0, [0.0, -0.0, 20.0, -20.0]),
}


def _recorded(ours: Ours, data: np.ndarray, element: Any) -> tuple[np.ndarray, np.ndarray]:
    def build(tape: Tape) -> tuple[Value, Value]:
        x = tape.input(data)
        return x, ours(x).sum()

    def values(tape: Tape) -> Value:
        return ours(tape.input(data))  # type: ignore[no-any-return]

    network, (x, total) = Tape.record(build, element=element)
    gradient = network.forward(network.parameters()).backward(total).of(x).numpy()
    value_network, y = Tape.record(values, element=element)
    return value_network.forward(value_network.parameters()).of(y).numpy(), gradient


_JAX_WIDTH = 12


def _theirs(theirs: Theirs, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # jax compiles each eager operation per shape; one padded width keeps that to once per function.
    flat = data.reshape(-1)
    padded = jnp.asarray(np.concatenate([flat, np.full(_JAX_WIDTH - flat.size, flat[0])]), dtype=jnp.float64)
    value = np.asarray(theirs(padded))[: flat.size].reshape(data.shape)
    gradient = np.asarray(jax.vmap(jax.grad(theirs))(padded))[: flat.size].reshape(data.shape)
    return value, gradient


def _close(ours: np.ndarray, theirs: np.ndarray, relative: float, what: str, floor: float = 0.0) -> None:
    ours = ours.astype(np.float64)
    same_special = (np.isnan(ours) == np.isnan(theirs)).all() and (np.isinf(ours) == np.isinf(theirs)).all()
    assert same_special, f"{what}: specials differ\n ours   {ours.tolist()}\n theirs {theirs.tolist()}"
    finite = np.isfinite(theirs)
    assert (ours[~finite & ~np.isnan(theirs)] == theirs[~finite & ~np.isnan(theirs)]).all(), what
    error = np.abs(ours[finite] - theirs[finite])
    # XLA flushes subnormal results to zero: below the smallest normal number, agreement is absolute.
    bound = relative * np.abs(theirs[finite]) + max(floor, np.finfo(np.float64).tiny)
    assert (error <= bound).all(), (
        f"{what}: worst relative error {np.max(error / np.maximum(np.abs(theirs[finite]), 1e-300))}"
        f"\n ours   {ours.tolist()}\n theirs {theirs.tolist()}"
    )


@st.composite
def _drawn(draw: st.DrawFn, name: str) -> np.ndarray:
    _, _, low, high, special = CASES[name]
    rows = draw(st.integers(1, 3))
    columns = draw(st.integers(1, 4))
    entry = st.one_of(st.sampled_from(special), st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False))
    return np.array(draw(st.lists(entry, min_size=rows * columns, max_size=rows * columns)), dtype=np.float64).reshape(rows, columns)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_value_and_gradient_match_jax_in_f64(name: str, data: st.DataObject) -> None:
    ours, theirs, *_ = CASES[name]
    x = data.draw(_drawn(name))
    value, gradient = _recorded(ours, x, f64)
    expected_value, expected_gradient = _theirs(theirs, x)
    _close(value, expected_value, RELATIVE, f"{name} value at {x.tolist()}")
    _close(gradient, expected_gradient, RELATIVE, f"{name} gradient at {x.tolist()}", GRADIENT_FLOOR.get(name, 0.0))


# f32 against jax's f64 on the same (f32-representable) inputs. Envelope: 16 ulp of f32
# (unit roundoff 6e-8) relative, for values away from 0 and from cancellation; the
# composites round at most a handful of times and f32 libm maps are within an ulp or two.
F32_RELATIVE = 16 * 2.0**-24
F32_SAFE = [
    "sinh", "cosh", "asinh", "atanh", "log2", "log10", "exp2", "rsqrt",
    "sigmoid", "logsigmoid", "softsign", "elu", "selu", "celu", "leaky_relu", "mish",
]


@pytest.mark.parametrize("name", F32_SAFE)
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_f32_values_stay_within_the_stated_envelope(name: str, data: st.DataObject) -> None:
    ours, theirs, low, high, _ = CASES[name]
    # Bounds rounded inward to f32 (and held to [-80, 80], where f32's exp stays finite).
    low32 = np.float32(max(low, -80.0))
    high32 = np.float32(min(high, 80.0))
    low32 = low32 if low32 >= max(low, -80.0) else np.nextafter(low32, np.float32(np.inf))
    high32 = high32 if high32 <= min(high, 80.0) else np.nextafter(high32, np.float32(-np.inf))
    floats = st.floats(float(low32), float(high32), width=32, allow_subnormal=False)
    floats = floats.filter(lambda v: abs(v) > 1e-30 or v == 0.0)
    x = np.array(data.draw(st.lists(floats, min_size=1, max_size=6)), dtype=np.float32)
    value, _ = _recorded(ours, x, f32)
    expected = np.asarray(theirs(jnp.asarray(x, dtype=jnp.float64)))
    _close(value, expected, F32_RELATIVE, f"{name} f32 at {x.tolist()}", float(np.finfo(np.float32).tiny))


def test_logaddexp_matches_jax_with_ties_and_splits_the_tie_gradient() -> None:
    a = np.array([0.0, 1.0, -3.0, 700.0, -700.0, 2.5, 1e300])
    b = np.array([0.0, -1.0, -3.0, 699.0, 5.0, 2.5, -1e300])

    def build(tape: Tape) -> tuple[Value, Value, Value]:
        x, y = tape.input(a), tape.input(b)
        return x, y, x.logaddexp(y).sum()

    network, (x, y, total) = Tape.record(build, element=f64)
    run = network.forward(network.parameters())
    value = Tensor(a, element=f64).logaddexp(Tensor(b, element=f64)).numpy()
    gradients = run.backward(total)
    expected = np.asarray(jnp.logaddexp(a, b))
    ga, gb = jax.grad(lambda p, q: jnp.sum(jnp.logaddexp(p, q)), argnums=(0, 1))(a, b)
    _close(value, expected, RELATIVE, "logaddexp value")
    _close(gradients.of(x).numpy(), np.asarray(ga), RELATIVE, "logaddexp d/da")
    _close(gradients.of(y).numpy(), np.asarray(gb), RELATIVE, "logaddexp d/db")
    assert gradients.of(x).numpy()[0] == gradients.of(y).numpy()[0] == 0.5


@settings(max_examples=4, deadline=None)
@given(pairs=st.lists(st.tuples(st.floats(-50, 50), st.floats(-50, 50)), min_size=1, max_size=6))
def test_logaddexp_over_drawn_pairs(pairs: list[tuple[float, float]]) -> None:
    a = np.array([p for p, _ in pairs])
    b = np.array([q for _, q in pairs])

    def build(tape: Tape) -> tuple[Value, Value, Value]:
        x, y = tape.input(a), tape.input(b)
        return x, y, x.logaddexp(y).sum()

    network, (x, y, total) = Tape.record(build, element=f64)
    gradients = network.forward(network.parameters()).backward(total)
    ga, gb = jax.grad(lambda p, q: jnp.sum(jnp.logaddexp(p, q)), argnums=(0, 1))(a, b)
    _close(gradients.of(x).numpy(), np.asarray(ga), RELATIVE, "d/da")
    _close(gradients.of(y).numpy(), np.asarray(gb), RELATIVE, "d/db")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_tensor_computes_the_bits_the_recording_interprets_to(name: str) -> None:
    ours, _, low, high, special = CASES[name]
    data = np.array([*special, low, high, (low + high) / 2, float("nan"), float("inf"), -float("inf")])
    fits_f32 = np.where(np.isfinite(data), np.clip(data, -1e30, 1e30), data)
    for element, payload in ((f32, fits_f32), (f64, data)):

        def build(tape: Tape, payload: np.ndarray = payload) -> Value:
            return ours(tape.input(payload))  # type: ignore[no-any-return]

        network, y = Tape.record(build, element=element)
        assert_bits(ours(Tensor(payload, element=element)), network.forward(network.parameters()).of(y).numpy())


def test_infinities_follow_the_stated_conventions() -> None:
    inf = float("inf")
    x = Tensor([inf, -inf], element=f64)
    assert x.sinh().tolist() == [inf, -inf]
    assert x.cosh().tolist() == [inf, inf]
    edge = np.array([709.9, -710.4])  # exp overflows here, sinh and cosh do not
    _close(Tensor(edge, element=f64).sinh().numpy(), np.sinh(edge), RELATIVE, "sinh near overflow")
    _close(Tensor(edge, element=f64).cosh().numpy(), np.cosh(edge), RELATIVE, "cosh near overflow")
    assert x.asinh().tolist() == [inf, -inf]
    assert x.elu().tolist() == [inf, -1.0]
    # sigmoid caps its exponent (see Vocabulary.sigmoid): at -inf it is below the smallest normal.
    assert x.sigmoid().tolist()[0] == 1.0 and 0.0 <= x.sigmoid().tolist()[1] < np.finfo(np.float64).tiny
    assert x.logsigmoid().tolist() == [0.0, -inf]
    assert Tensor([1.0, -1.0], element=f64).atanh().tolist() == [inf, -inf]
    # Equal infinities in logaddexp give NaN here (jax special-cases them): a stated difference.
    assert np.isnan(Tensor([inf], element=f64).logaddexp(inf).scalar())


def test_a_negative_slope_is_refused_naming_the_line_and_records_nothing() -> None:
    def build(tape: Tape) -> Value:
        x = tape.input([1.0, -1.0])
        before = len(tape.describe())
        line = here() + 2
        with pytest.raises(InvalidArgumentError, match=rf"test_vocabulary_math.py:{line}: leaky_relu .*negative_slope"):
            x.leaky_relu(-0.1)
        assert len(tape.describe()) == before
        return x

    Tape.record(build, element=f64)


def test_logaddexp_of_mismatched_shapes_names_the_line() -> None:
    def build(tape: Tape) -> Value:
        x, y = tape.input([1.0, 2.0]), tape.input([1.0, 2.0, 3.0])
        line = here() + 2
        with pytest.raises(ShapeMismatchError, match=rf"test_vocabulary_math.py:{line}: logaddexp"):
            x.logaddexp(y)
        return x

    Tape.record(build, element=f64)


@pytest.mark.parametrize(("name", "ours", "scale", "alpha"), [
    ("elu", lambda x: x.elu(0.3), 0.3, 1.0),
    ("selu", lambda x: x.selu(), 1.0507009873554805 * 1.6732632423543772, 1.0),
    ("celu", lambda x: x.celu(2.5), 1.0, 2.5),
])  # fmt: skip
def test_negative_side_gradients_are_relative_accurate(name: str, ours: Ours, scale: float, alpha: float) -> None:
    # The Expm1 rule records exp(x), not expm1(x) + 1: the gradient keeps its relative
    # accuracy far down the negative side, where the sum would leave an ulp of 1 of noise.
    x = -np.geomspace(1.0, 600.0, 97)
    _, gradient = _recorded(ours, x, f64)
    truth = scale * np.exp(x / alpha)
    assert np.all(np.abs(gradient - truth) <= 4e-16 * 8 * truth), name
