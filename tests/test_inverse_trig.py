"""atan, asin, acos and atan2 (the Atan map and its composites) against jax, on every road.

f64 values are compared with jax.numpy elementwise: ``|ours - jax| <= 1e-10 * |jax|``
(relative; within four times the smallest normal number of zero the agreement is absolute,
because XLA flushes subnormal results and intermediates to zero), and zeros, infinities and NaN must agree exactly, the sign of
zero included. Gradients are the gradient of a weighted sum, so the elementwise
derivative, and are held to the same 1e-10 against the true derivative written in a
well-conditioned form (``1 / (sqrt(1 - x) sqrt(1 + x))``, atan2's ``(x, -y) / (x² + y²)``
after scaling both by the larger magnitude), and against jax's own where jax's formula is
itself accurate to that (it squares its operands: ``1 - x²`` loses digits within 1e-5 of
±1, and ``x² + y²`` overflows or underflows outside [1e-150, 1e150]).

f32 values, against jax's f64 on the same inputs, stay within 8 ulp (``16 * 2**-24``
relative): each composite rounds at most about eight times (two roots, a sum, a quotient,
the f32 arctangent, a doubling that is exact, and one addition of π or π/2 to a quantity of
at most half its size), every rounding and the arctangent contribute half an ulp to an ulp
and none of them is amplified (the arctangent's condition number is below 1). Measured
against numpy's f64 over 200,000 draws each (uniform in [-1, 1] plus 20,000 within 1e-3 of
each end for asin and acos; magnitudes 1e-20 to 1e20 for atan and atan2): worst asin 2.4,
acos 2.7, atan 0.8, atan2 1.8 ulp.

The interpreter, the Exact plan (generated function and step loop), the engine backward and
the recorded gradient plan are compared bit for bit, and the Tensor road with the recording.
The XLA road is held to the envelope docs/acceleration.md states for transcendentals
(``16 eps max(|x|, 1)``), with its specials (signed zeros, infinities, NaN) exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_bits, here
from hypothesis import given, settings
from hypothesis import strategies as st

import topos
from topos import (
    ElementType,
    InvalidArgumentError,
    Numerics,
    ShapeMismatchError,
    Tape,
    Tensor,
    Value,
    atan2,
    bf16,
    f32,
    f64,
    gradient,
    xla,
)
from topos.stages.plan import Plan

jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]

Array = np.ndarray[Any, Any]
RELATIVE = 1e-10
# XLA flushes subnormals, intermediates too (jax's asin of the smallest normal number is 0):
# within a few times the smallest normal of zero, agreement is absolute.
FLOOR = 4 * float(np.finfo(np.float64).tiny)
F32_RELATIVE = 16 * 2.0**-24
INF = math.inf
NAN = math.nan

_EDGES = [0.0, -0.0, 1.0, -1.0, INF, -INF, NAN, 1e300, -1e300, 1e-300, -1e-300, 0.5, -0.5,
          1.0 - 2.0**-53, -(1.0 - 2.0**-53), 1.0 - 1e-8, 2.0, -2.0]  # fmt: skip


def _asin_derivative(x: Array) -> Array:
    with np.errstate(all="ignore"):
        out: Array = 1.0 / (np.sqrt(1.0 - x) * np.sqrt(1.0 + x))
    return out


def _acos_derivative(x: Array) -> Array:
    return -_asin_derivative(x)


def _atan_derivative(x: Array) -> Array:
    with np.errstate(all="ignore"):
        out: Array = 1.0 / (1.0 + x * x)
    return out


Unary = tuple[Callable[[Any], Any], Callable[[Any], Any], Callable[[Array], Array], float]
# ours, jax's, the true derivative, and how close to ±1 jax's own derivative is still within 1e-10.
UNARY: dict[str, Unary] = {
    "atan": (lambda x: x.atan(), jnp.arctan, _atan_derivative, 0.0),
    "asin": (lambda x: x.asin(), jnp.arcsin, _asin_derivative, 1e-5),
    "acos": (lambda x: x.acos(), jnp.arccos, _acos_derivative, 1e-5),
}


def _close(ours: Array, theirs: Array, relative: float, what: str, floor: float = FLOOR) -> None:
    ours = np.asarray(ours, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    assert ours.shape == theirs.shape, what
    assert (np.isnan(ours) == np.isnan(theirs)).all(), f"{what}: NaN differs\n ours   {ours.tolist()}\n theirs {theirs.tolist()}"
    exact = np.isinf(theirs) | (theirs == 0.0)
    # A zero of theirs may be a subnormal of ours that XLA flushed (keeping its sign).
    same = (ours[exact] == theirs[exact]) | ((theirs[exact] == 0.0) & (np.abs(ours[exact]) < floor))
    assert same.all() and (np.signbit(ours[exact]) == np.signbit(theirs[exact])).all(), (
        f"{what}: infinities or signed zeros differ\n ours   {ours.tolist()}\n theirs {theirs.tolist()}"
    )
    finite = np.isfinite(theirs) & ~exact
    error = np.abs(ours[finite] - theirs[finite])
    bound = relative * np.abs(theirs[finite]) + floor
    assert (error <= bound).all(), (
        f"{what}: worst relative error {np.max(error / np.abs(theirs[finite]))}\n ours   {ours.tolist()}\n theirs {theirs.tolist()}"
    )


def _close_gradient(ours: Array, theirs: Array, relative: float, what: str, floor: float = FLOOR) -> None:
    """As :func:`_close`, but a zero derivative may carry either sign."""
    ours = np.where(ours == 0.0, 0.0, ours)
    theirs = np.where(theirs == 0.0, 0.0, theirs)
    _close(ours, theirs, relative, what, floor)


# --------------------------------------------------------------------------- drawing


def _shape(draw: st.DrawFn) -> tuple[int, ...]:
    return tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=3)))


def _entries(draw: st.DrawFn, count: int, low: float, high: float) -> list[float]:
    # Magnitudes across the whole exponent range (no subnormals: XLA flushes them), and the edges.
    wide = st.floats(-1e300, 1e300, allow_nan=False, allow_subnormal=False)
    inside = st.floats(low, high, allow_nan=False, allow_subnormal=False)
    return draw(st.lists(st.one_of(st.sampled_from(_EDGES), inside, wide), min_size=count, max_size=count))


@st.composite
def _unary_data(draw: st.DrawFn) -> Array:
    shape = _shape(draw)
    return np.array(_entries(draw, math.prod(shape), -1.0, 1.0), dtype=np.float64).reshape(shape)


@st.composite
def _pair_data(draw: st.DrawFn) -> tuple[Array, Array]:
    shape = _shape(draw)
    count = math.prod(shape)
    y = np.array(_entries(draw, count, -10.0, 10.0), dtype=np.float64).reshape(shape)
    x = np.array(_entries(draw, count, -10.0, 10.0), dtype=np.float64).reshape(shape)
    if draw(st.booleans()):
        # Equal magnitudes: the two pieces of atan2 meet on |y| == |x|.
        x = np.where(np.isnan(y), x, y * np.where(x < 0, -1.0, 1.0))
    return y, x


# --------------------------------------------------------------------------- readings


@attrs.frozen
class Readings:
    """Values and the derivatives of ``sum(weights * f(operands))`` on the interpreter."""

    values: Array
    gradients: list[Array]


def _read(build: Callable[..., Any], arrays: list[Array], element: ElementType) -> Readings:
    weights = np.linspace(0.5, 1.5, max(1, arrays[0].size)).reshape(arrays[0].shape)

    def record(tape: Tape) -> tuple[list[Value], Value, Value]:
        inputs = [tape.input(a) for a in arrays]
        out = build(*inputs)
        return inputs, out, (out * tape.leaf(weights)).sum()

    with np.errstate(all="ignore"):
        network, (inputs, out, total) = Tape.record(record, element=element)
        run = network.forward(network.parameters())
        field = run.backward(total)
    values = run.of(out).numpy()
    return Readings(values, [field.of(x).numpy() / weights for x in inputs])


def _jax_unary(theirs: Callable[[Any], Any], x: Array) -> tuple[Array, Array]:
    flat = jnp.asarray(x.reshape(-1), dtype=jnp.float64)
    value = np.asarray(theirs(flat)).reshape(x.shape)
    derivative = np.asarray(jax.vmap(jax.grad(theirs))(flat)).reshape(x.shape)
    return value, derivative


def _atan2_derivatives(y: Array, x: Array) -> tuple[Array, Array]:
    """``(x, -y) / (x² + y²)`` scaled by the larger magnitude; 0 at infinities and at the origin."""
    with np.errstate(all="ignore"):
        larger = np.maximum(np.abs(x), np.abs(y))
        xs, ys = x / larger, y / larger
        denominator = larger * (xs * xs + ys * ys)
        dy, dx = xs / denominator, -ys / denominator
    limit = np.isinf(x) | np.isinf(y) | ((x == 0.0) & (y == 0.0))
    nan = np.isnan(x) | np.isnan(y)
    dy = np.where(nan, NAN, np.where(limit, 0.0, dy))
    dx = np.where(nan, NAN, np.where(limit, 0.0, dx))
    return dy, dx


# --------------------------------------------------------------------------- f64 against jax


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=15, deadline=None)
@given(x=_unary_data())
def test_unary_values_and_derivatives_match_jax_in_f64(name: str, x: Array) -> None:
    ours, theirs, derivative, margin = UNARY[name]
    got = _read(ours, [x], f64)
    value, jax_derivative = _jax_unary(theirs, x)
    _close(got.values, value, RELATIVE, f"{name} at {x.tolist()}")
    _close_gradient(got.gradients[0], derivative(x), RELATIVE, f"{name}' at {x.tolist()}")
    with np.errstate(over="ignore"):
        conditioned = np.abs(1.0 - x * x) > margin if margin else np.ones(x.shape, dtype=bool)
    _close_gradient(got.gradients[0][conditioned], jax_derivative[conditioned], RELATIVE, f"{name}' against jax")


@settings(max_examples=30, deadline=None)
@given(pair=_pair_data())
def test_atan2_values_and_derivatives_match_jax_in_f64(pair: tuple[Array, Array]) -> None:
    y, x = pair
    got = _read(lambda a, b: a.atan2(b), [y, x], f64)
    _close(got.values, np.asarray(jnp.arctan2(y, x)), RELATIVE, f"atan2 at y={y.tolist()} x={x.tolist()}")
    with np.errstate(all="ignore"):
        _close(got.values, np.arctan2(y, x), RELATIVE, "atan2 against numpy")
    dy, dx = _atan2_derivatives(y, x)
    _close_gradient(got.gradients[0], dy, RELATIVE, f"d atan2/dy at y={y.tolist()} x={x.tolist()}")
    _close_gradient(got.gradients[1], dx, RELATIVE, f"d atan2/dx at y={y.tolist()} x={x.tolist()}")
    jax_dy, jax_dx = jax.vmap(jax.grad(jnp.arctan2, argnums=(0, 1)))(y.reshape(-1), x.reshape(-1))
    larger = np.maximum(np.abs(x), np.abs(y)).reshape(-1)
    squares_fit = (larger > 1e-150) & (larger < 1e150)
    for ours_, theirs_ in ((got.gradients[0], jax_dy), (got.gradients[1], jax_dx)):
        _close_gradient(ours_.reshape(-1)[squares_fit], np.asarray(theirs_)[squares_fit], RELATIVE, "atan2' against jax")


def test_the_edges_are_numpy_s_exactly() -> None:
    """Signed zeros, infinities and NaN in every quadrant, and the exact values at ±1."""
    edges = np.array([0.0, -0.0, 1.0, -1.0, INF, -INF, NAN, 3.0, -3.0, 1e-300, 1e300])
    y, x = (a.reshape(-1) for a in np.meshgrid(edges, edges))
    got = Tensor(y, element=f64).atan2(Tensor(x, element=f64)).numpy()
    with np.errstate(all="ignore"):
        want = np.arctan2(y, x)
    _close(got, want, RELATIVE, "atan2 over the edges")
    one = Tensor([1.0, -1.0, 0.0, -0.0], element=f64)
    assert one.asin().tolist() == [math.pi / 2, -math.pi / 2, 0.0, -0.0]
    assert np.signbit(one.asin().numpy()).tolist() == [False, True, False, True]
    assert one.acos().tolist() == [0.0, math.pi, math.pi / 2, math.pi / 2]
    assert Tensor([INF, -INF], element=f64).atan().tolist() == [math.pi / 2, -math.pi / 2]
    outside = Tensor([1.0 + 2.0**-52, -2.0, INF, -INF, NAN], element=f64)
    assert np.isnan(outside.asin().numpy()).all() and np.isnan(outside.acos().numpy()).all()


def test_the_derivatives_at_the_edges_are_the_true_limits() -> None:
    x = np.array([1.0, -1.0, 0.0, -0.0, INF, -INF])
    asin, acos, atan = (_read(UNARY[name][0], [x], f64).gradients[0] for name in ("asin", "acos", "atan"))
    assert asin[:4].tolist() == [INF, INF, 1.0, 1.0] and np.isnan(asin[4:]).all()
    assert acos[:4].tolist() == [-INF, -INF, -1.0, -1.0] and np.isnan(acos[4:]).all()
    assert atan.tolist() == [0.5, 0.5, 1.0, 1.0, 0.0, 0.0]
    # atan2 where the unused piece divides by zero or meets inf/inf: finite, and 0 at the origin.
    y = np.array([1.0, 0.0, INF, 1.0, 0.0, -0.0, INF, 1e300])
    x2 = np.array([0.0, -1.0, 1.0, INF, 0.0, -0.0, -INF, 1e-300])
    dy, dx = _read(lambda a, b: a.atan2(b), [y, x2], f64).gradients
    want_dy, want_dx = _atan2_derivatives(y, x2)
    assert np.isfinite(dy).all() and np.isfinite(dx).all()
    _close_gradient(dy, want_dy, RELATIVE, "d/dy at the edges")
    _close_gradient(dx, want_dx, RELATIVE, "d/dx at the edges")
    assert dy[:2].tolist() == [0.0, -1.0] and dx[:2].tolist() == [-1.0, 0.0]


# --------------------------------------------------------------------------- f32


@st.composite
def _f32_data(draw: st.DrawFn, low: float, high: float) -> Array:
    floats = st.floats(low, high, width=32, allow_subnormal=False).filter(lambda v: abs(v) > 1e-30 or v == 0.0)
    return np.array(draw(st.lists(floats, min_size=1, max_size=8)), dtype=np.float32)


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_f32_values_stay_within_eight_ulp(name: str, data: st.DataObject) -> None:
    ours, theirs, *_ = UNARY[name]
    span = 2.0**100 if name == "atan" else 1.0
    x = data.draw(_f32_data(-span, span))
    got = _read(ours, [x], f32).values
    _close(got, np.asarray(theirs(jnp.asarray(x, dtype=jnp.float64))), F32_RELATIVE, f"{name} f32 at {x.tolist()}", float(np.finfo(np.float32).tiny))


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_f32_atan2_stays_within_eight_ulp(data: st.DataObject) -> None:
    y = data.draw(_f32_data(-(2.0**100), 2.0**100))
    x = data.draw(_f32_data(-(2.0**100), 2.0**100))
    n = min(y.size, x.size)
    y, x = y[:n], x[:n]
    got = _read(lambda a, b: a.atan2(b), [y, x], f32).values
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    _close(got, want, F32_RELATIVE, f"atan2 f32 at y={y.tolist()} x={x.tolist()}", float(np.finfo(np.float32).tiny))


# --------------------------------------------------------------------------- bit-identical roads


def _both(plan_: Plan) -> tuple[Plan, Plan]:
    assert plan_._program.function is not None
    return plan_, attrs.evolve(plan_, program=plan_._program.looped())


COMPOSITES: dict[str, Callable[[Any, Any], Any]] = {
    "atan": lambda a, b: a.atan(),
    "asin": lambda a, b: a.asin(),
    "acos": lambda a, b: a.acos(),
    "atan2": lambda a, b: a.atan2(b),
    "atan2 of a number": lambda a, b: a.atan2(-0.0),
}


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=str)
@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_every_exact_road_gives_the_interpreter_s_bits(name: str, element: ElementType) -> None:
    build = COMPOSITES[name]
    rng = np.random.default_rng(3)
    a = np.concatenate([[0.0, -0.0, 1.0, -1.0, 0.5, -0.5, INF, NAN], rng.uniform(-1.2, 1.2, 8)])
    b = np.concatenate([[0.0, -0.0, -1.0, 1.0, -0.5, 0.5, INF, 1.0], rng.uniform(-1.2, 1.2, 8)])
    weights = rng.uniform(-2.0, 2.0, a.size)

    def record(tape: Tape) -> tuple[list[Value], Value, Value]:
        inputs = [tape.parameter(a), tape.parameter(b)]
        out = build(*inputs)
        return inputs, out, (out * tape.leaf(weights)).sum()

    with np.errstate(all="ignore"):
        network, (inputs, out, loss) = Tape.record(record, element=element)
        parameters = network.parameters()
        run = network.forward(parameters)
        assert_bits(build(Tensor(a, element=element), Tensor(b, element=element)), run.of(out).numpy())
        engine = run.backward(loss)
        for plan_ in _both(network.entry([out, loss]).numerics(Numerics.EXACT).lower()):
            assert np.array_equal(plan_.forward(parameters).of(out).bits(), run.of(out).bits())
        field = network.entry(loss).backward().numerics(Numerics.EXACT).lower().forward(parameters).backward(loss)
        longer, adjoints = gradient(network, loss, inputs)
        recorded = longer.forward(longer.parameters())
        for plan_ in _both(longer.entry(adjoints.roots()).numerics(Numerics.EXACT).lower()):
            planned = plan_.forward(longer.parameters())
            for x in inputs:
                want = engine.of(x).bits()
                assert np.array_equal(field.of(x).bits(), want), f"{name}: training plan"
                assert np.array_equal(recorded.of(adjoints.of(x)).bits(), want), f"{name}: recorded gradient"
                assert np.array_equal(planned.of(adjoints.of(x)).bits(), want), f"{name}: recorded gradient plan"


# --------------------------------------------------------------------------- the XLA road


def test_the_xla_road_stays_within_the_transcendental_envelope() -> None:
    rng = np.random.default_rng(5)
    specials = np.array([0.0, -0.0, 1.0, -1.0, INF, -INF, NAN, 0.5], dtype=np.float32)
    magnitudes = rng.uniform(0.25, 2.0, 24) * rng.choice([-1.0, 1.0], 24)
    a = np.concatenate([specials, magnitudes.astype(np.float32)])
    b = np.concatenate([np.roll(specials, 3), rng.permutation(magnitudes).astype(np.float32)])
    unit = np.clip(a, -1.0, 1.0)

    def record(tape: Tape) -> tuple[list[Value], list[Value]]:
        y, x, u = tape.parameter(a), tape.parameter(b), tape.parameter(unit)
        outs = [y.atan2(x), u.asin(), u.acos(), y.atan()]
        total = outs[0].sum() + outs[1].sum() + outs[2].sum() + outs[3].sum()
        return [y, x, u], [*outs, total]

    with np.errstate(all="ignore"):
        network, (inputs, outs) = Tape.record(record, element=f32)
        longer, adjoints = gradient(network, outs[-1], inputs)
        roots = [*outs[:4], *(adjoints.of(x) for x in inputs)]
        got = xla.XlaExecutable.of_network(longer, roots).forward(longer.parameters(), {})
        want = longer.forward(longer.parameters())
    eps = float(np.finfo(np.float32).eps)
    for index, symbol in enumerate(roots):
        ours = want.of(symbol).numpy().astype(np.float64)
        theirs = got.of(symbol).numpy().astype(np.float64)
        special = ~np.isfinite(ours) | (ours == 0.0)
        assert np.array_equal(np.isnan(theirs), np.isnan(ours)), symbol
        assert (theirs[special & ~np.isnan(ours)] == ours[special & ~np.isnan(ours)]).all(), symbol
        if index < 4:
            # The values' signed zeros and infinities are numpy's conventions; a zero
            # derivative's sign and a NaN's are XLA's to choose.
            signed = special & ~np.isnan(ours)
            assert (np.signbit(theirs[signed]) == np.signbit(ours[signed])).all(), symbol
        finite = ~special
        assert (np.abs(theirs[finite] - ours[finite]) <= 16 * eps * np.maximum(np.abs(ours[finite]), 1.0)).all(), symbol


# --------------------------------------------------------------------------- misuse


def test_misuse_names_the_line_and_records_nothing() -> None:
    def build(tape: Tape) -> Value:
        y = tape.input([1.0, 2.0])
        before = tape.describe()
        line = here() + 2
        with pytest.raises(ShapeMismatchError, match=rf"test_inverse_trig.py:{line}: atan2 of %0\[2\] and %1\[3\]: shapes differ"):
            y.atan2(tape.input([1.0, 2.0, 3.0]))
        grown = tape.describe()
        line = here() + 2
        with pytest.raises(InvalidArgumentError, match=rf"test_inverse_trig.py:{line}: atan2 of %0\[2\]: x must be a Value or a number, got str"):
            y.atan2("1.0")
        line = here() + 2
        with pytest.raises(InvalidArgumentError, match=rf"test_inverse_trig.py:{line}: atan2 of %0\[2\]: x must be a Value .*got Tensor"):
            y.atan2(Tensor([1.0, 2.0]))
        line = here() + 2
        with pytest.raises(InvalidArgumentError, match=rf"test_inverse_trig.py:{line}: atan2 takes a recorded value or tensor as y, got 3.0"):
            atan2(3.0, y)  # type: ignore[type-var]
        assert tape.describe() == grown and len(grown.splitlines()) == len(before.splitlines()) + 1
        return y

    Tape.record(build, element=f64)
    line = here() + 2
    with pytest.raises(ShapeMismatchError, match=rf"test_inverse_trig.py:{line}: atan2 of a value of shape \[1\]"):
        Tensor([1.0]).atan2(Tensor([1.0, 2.0]))
    assert topos.atan2 is atan2
