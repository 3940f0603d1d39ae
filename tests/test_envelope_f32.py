"""f32 envelopes: the math, reductions, losses and layer functions of issue 12, values and gradients.

Each item is recorded on an f32 tape over f32 payloads drawn by hypothesis, interpreted and
differentiated; the truth is jax in f64 on the same (exactly representable) payloads.

The envelope is first-order backward stability, the bound a careful f32 implementation
meets whatever its formula: the computed result is the exact one at inputs perturbed by a
relative ``k·n·u`` and then rounded by a relative ``k·n·u``, where ``u = 2**-24`` is f32's
unit roundoff, ``n`` the number of terms one output accumulates (1 for elementwise maps,
the reduced extent for reductions, the fan-in for convolutions) and ``k`` a small constant
for the roundings one term sees (the composites here chain at most a handful of maps and
products; numpy's f32 transcendentals are within a few ulp). To first order, for an output
``g`` of inputs ``x_i``::

    |ours - truth| <= k·n·u · (|g| + sum_i |dg/dx_i| · s_i) + k·tiny

with ``s_i = |x_i|`` for elementwise maps (componentwise) and ``s_i = max |x|`` over the
input's array for reductions, losses and layers (normwise: a sum's roundings are relative
to its largest term, not to each one). The Jacobians come from jax. The condition term
makes the bound honest where a function is ill-conditioned (``tan`` near pi/2, ``acosh``
near 1, a variance of close values) and tight where it is not: an unstable formula (a
``log(sigmoid(x))`` that underflows, an ``exp`` that overflows before a division) misses it
by orders of magnitude. ``k·tiny`` (the smallest normal f32) admits flushed subnormals.
Gradients are checked the same way, as functions of the inputs and of the cotangent.

Ranges are held where f32 itself stays finite (``exp`` overflows past 88.7); where the
truth is infinite or NaN, ours must be the same special.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from topos import Tape, Value, f32
from topos.nn import (
    avg_pool2d,
    batch_norm2d,
    binary_cross_entropy_with_logits,
    conv1d,
    conv2d,
    conv_transpose2d,
    cross_entropy,
    group_norm,
    huber,
    layer_norm,
    mse,
    nll,
    smooth_l1,
)

jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]

U = 2.0**-24
"""f32's unit roundoff (half an ulp of 1)."""
TINY = float(np.finfo(np.float32).tiny)
K = 8
"""Roundings per term: each composite chains at most ~4 roundings (a map within 1-2 ulp,
a product, a sum, a division), doubled for headroom. The largest ratio of error to the
``k = 1`` bound seen over many draws is about 2.5 (tan, logaddexp and cumsum included)."""


def _bound(g: np.ndarray, jacobians: Sequence[np.ndarray], scales: Sequence[np.ndarray], n: int) -> np.ndarray:
    """``K·n·u·(|g| + sum_i |J_i|·s_i) + K·tiny``; ``J_i`` has shape ``g.shape + s_i.shape``."""
    condition = np.zeros(g.shape)
    for jacobian, scale in zip(jacobians, scales, strict=True):
        weighted = np.abs(jacobian) * np.abs(scale)
        condition = condition + weighted.reshape(*g.shape, -1).sum(axis=-1)
    bound: np.ndarray = K * n * U * (np.abs(g) + condition) + K * TINY
    return bound


def _within(ours: np.ndarray, truth: np.ndarray, bound: np.ndarray, what: str) -> None:
    ours = ours.astype(np.float64)
    assert ours.shape == truth.shape, f"{what}: shape {ours.shape} != {truth.shape}"
    special = ~np.isfinite(truth)
    assert np.array_equal(np.isnan(ours[special]), np.isnan(truth[special])), f"{what}: NaN where jax has {truth}"
    finite_special = special & ~np.isnan(truth)
    assert (ours[finite_special] == truth[finite_special]).all(), f"{what}: {ours} vs {truth}"
    # A finite f64 truth past f32's largest finite rounds to an infinity in f32 (rsqrt's
    # gradient at 1e-30 is -5e44): ours may be that infinity, of the truth's sign.
    beyond = np.isfinite(truth) & (np.abs(truth) > float(np.finfo(np.float32).max))
    regular = ~special & ~(beyond & np.isinf(ours) & (np.sign(ours) == np.sign(truth)))
    assert np.isfinite(ours[regular]).all(), f"{what}: ours {ours[regular]} is not finite where jax's {truth[regular]} is"
    error = np.abs(ours[regular] - truth[regular])
    limit = np.where(np.isnan(bound[regular]), np.inf, bound[regular])
    worst = float(np.max(error / limit, initial=0.0))
    assert (error <= limit).all(), f"{what}: error {worst:.3g} times the envelope\n ours  {ours.tolist()}\n truth {truth.tolist()}"


def _f32_run(ours: Callable[..., Value], arrays: Sequence[np.ndarray], cotangent: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Value and gradient of ``sum(ours(*arrays) * cotangent)`` on the f32 road."""
    tape = Tape(f32)
    inputs = [tape.input(a) for a in arrays]
    y = ours(*inputs)
    total = (y * tape.leaf(cotangent)).sum() if y.rank else y * float(cotangent)
    network = tape.seal()
    run = network.forward(network.parameters())
    gradients = run.backward(total.symbol)
    return run.of(y.symbol).numpy(), [gradients.of(v.symbol).numpy() for v in inputs]


# ----------------------------------------------------------------- elementwise maps
Unary = Callable[[Any], Any]


def _unary(ours: Unary, theirs: Unary, low: float, high: float, derivative: Unary | None = None) -> tuple[Unary, Unary, Unary, float, float]:
    return ours, theirs, derivative or jax.grad(theirs), low, high


def _sigmoid_derivative(x: Any) -> Any:
    # jax's own rule, s (1 - s), cancels to 0 in f64 for x past 37, where f32's answer is still
    # a normal number: the truth is written without the cancellation.
    return jax.nn.sigmoid(x) * jax.nn.sigmoid(-x)


def _selu_derivative(x: Any) -> Any:
    # jax differentiates elu, selu and celu through expm1(x) + 1, which cancels in f64 too
    # (5e-5 relative at x = -27): the truth is written as exp(x), without the cancellation.
    scale, alpha = 1.0507009873554805, 1.6732632423543772
    return scale * jnp.where(x > 0, 1.0, alpha * jnp.exp(x))


UNARY: dict[str, tuple[Unary, Unary, Unary, float, float]] = {
    "tan": _unary(lambda x: x.tan(), jnp.tan, -1.55, 1.55),
    "sinh": _unary(lambda x: x.sinh(), jnp.sinh, -80.0, 80.0),
    "cosh": _unary(lambda x: x.cosh(), jnp.cosh, -80.0, 80.0),
    "asinh": _unary(lambda x: x.asinh(), jnp.arcsinh, -1e15, 1e15),
    "acosh": _unary(lambda x: x.acosh(), jnp.arccosh, 1.0, 1e15),
    "atanh": _unary(lambda x: x.atanh(), jnp.arctanh, -0.9999, 0.9999),
    "log2": _unary(lambda x: x.log2(), jnp.log2, 1e-30, 1e30),
    "log10": _unary(lambda x: x.log10(), jnp.log10, 1e-30, 1e30),
    "exp2": _unary(lambda x: x.exp2(), jnp.exp2, -120.0, 120.0),
    "rsqrt": _unary(lambda x: x.rsqrt(), jax.lax.rsqrt, 1e-30, 1e30),
    # Below -43 the f32 gradient of 1 / (1 + exp(-x)) passes through exp(2x), under f32's normal
    # range: it loses digits, and flushes to 0 below about -65 (a finding, left to the core).
    "sigmoid": _unary(lambda x: x.sigmoid(), jax.nn.sigmoid, -80.0, 80.0, _sigmoid_derivative),
    "logsigmoid": _unary(lambda x: x.logsigmoid(), jax.nn.log_sigmoid, -80.0, 80.0),
    "softsign": _unary(lambda x: x.softsign(), jax.nn.soft_sign, -1e6, 1e6),
    "elu": _unary(lambda x: x.elu(), jax.nn.elu, -80.0, 80.0, lambda x: jnp.where(x > 0, 1.0, jnp.exp(x))),
    "selu": _unary(lambda x: x.selu(), jax.nn.selu, -80.0, 80.0, _selu_derivative),
    "celu": _unary(lambda x: x.celu(2.5), lambda x: jax.nn.celu(x, 2.5), -80.0, 80.0,
                   lambda x: jnp.where(x > 0, 1.0, jnp.exp(x / 2.5))),
    "leaky_relu": _unary(lambda x: x.leaky_relu(0.2), lambda x: jax.nn.leaky_relu(x, 0.2), -1e6, 1e6),
    "hardsigmoid": _unary(lambda x: x.hardsigmoid(), jax.nn.hard_sigmoid, -10.0, 10.0),
    "hardswish": _unary(lambda x: x.hardswish(), jax.nn.hard_swish, -10.0, 10.0),
    "mish": _unary(lambda x: x.mish(), jax.nn.mish, -80.0, 80.0),
}

_WIDTH = 12

# The Expm1 rule once formed exp(x) as expm1(x) + 1, which cancels for negative x (74 ulp at
# celu(-13, 2.5)); it records exp(x) now and elu, selu and celu need no allowance. mish keeps
# one: its softplus inside tanh rounds relative to 1 the same way (an ulp of 1 at most).
GRADIENT_ABSOLUTE = {"mish": 1.0}


def _f32_floats(low: float, high: float) -> st.SearchStrategy[float]:
    """f32 numbers inside ``[low, high]`` (bounds rounded inward), normal or zero."""
    lo, hi = np.float32(low), np.float32(high)
    lo = lo if lo >= low else np.nextafter(lo, np.float32(np.inf))
    hi = hi if hi <= high else np.nextafter(hi, np.float32(-np.inf))
    return st.floats(float(lo), float(hi), width=32, allow_subnormal=False)


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_maps_stay_within_the_f32_envelope(name: str, data: st.DataObject) -> None:
    ours, theirs, derivative, low, high = UNARY[name]
    shape = data.draw(st.tuples(st.integers(1, 3), st.integers(1, 4)), "shape")
    values = data.draw(st.lists(_f32_floats(low, high), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))), "x")
    x = np.array(values, dtype=np.float32).reshape(shape)
    value, (gradient,) = _f32_run(ours, [x], np.ones(shape, np.float32))
    # One padded width per function, so jax compiles each map once, not once per drawn shape.
    flat = np.concatenate([x.ravel(), np.full(_WIDTH - x.size, x.ravel()[0])]).astype(np.float64)
    first = jax.vmap(derivative)
    f, df, ddf = (np.asarray(h(jnp.asarray(flat)))[: x.size].reshape(shape) for h in (jax.vmap(theirs), first, jax.vmap(jax.grad(derivative))))
    x64 = x.astype(np.float64)
    _within(value, f, _bound(f, [df[..., None]], [x64[..., None]], 1), f"{name} value at {x.tolist()}")
    allowance = K * U * GRADIENT_ABSOLUTE.get(name, 0.0)
    _within(gradient, df, _bound(df, [ddf[..., None]], [x64[..., None]], 1) + allowance, f"{name} gradient at {x.tolist()}")


@settings(max_examples=8, deadline=None)
@given(pairs=st.lists(st.tuples(_f32_floats(-80.0, 80.0), _f32_floats(-80.0, 80.0)), min_size=1, max_size=6))
def test_logaddexp_stays_within_the_f32_envelope(pairs: list[tuple[float, float]]) -> None:
    a = np.array([p for p, _ in pairs], dtype=np.float32)
    b = np.array([q for _, q in pairs], dtype=np.float32)
    value, (ga, gb) = _f32_run(lambda x, y: x.logaddexp(y), [a, b], np.ones(a.shape, np.float32))

    def scalar(p: Any, q: Any) -> Any:
        return jnp.logaddexp(p, q)

    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    f = np.asarray(jax.vmap(scalar)(a64, b64))
    fa, fb = (np.asarray(g) for g in jax.vmap(jax.grad(scalar, argnums=(0, 1)))(a64, b64))
    hessian = jax.vmap(jax.hessian(scalar, argnums=(0, 1)))(a64, b64)
    (faa, fab), (fba, fbb) = ((np.asarray(h) for h in row) for row in hessian)
    scales = [a64[:, None], b64[:, None]]
    _within(value, f, _bound(f, [fa[:, None], fb[:, None]], scales, 1), f"logaddexp at {pairs}")
    _within(ga, fa, _bound(fa, [faa[:, None], fab[:, None]], scales, 1), f"d/da logaddexp at {pairs}")
    _within(gb, fb, _bound(fb, [fba[:, None], fbb[:, None]], scales, 1), f"d/db logaddexp at {pairs}")


# ----------------------------------------------------------------- normwise: reductions, losses, layers
def _normwise(
    ours: Callable[..., Value],
    theirs: Callable[..., Any],
    arrays: Sequence[np.ndarray],
    n: int,
    seed: int,
    what: str,
) -> None:
    """Value and every input's gradient of ``ours`` against ``theirs`` within the normwise envelope."""
    arrays = [np.asarray(a, dtype=np.float32) for a in arrays]
    xs = [a.astype(np.float64) for a in arrays]
    shape = jax.eval_shape(theirs, *xs).shape
    cotangent = np.random.default_rng(seed).uniform(-1.0, 1.0, size=shape).astype(np.float32)
    value, gradients = _f32_run(ours, arrays, cotangent)
    everything = tuple(range(len(xs) + 1))

    def pulled(*args: Any) -> Any:
        *inputs, c = args
        return jax.vjp(theirs, *inputs)[1](c)

    @jax.jit
    def truth(inputs: list[Any], c: Any) -> tuple[Any, Any, Any, Any]:
        return (
            theirs(*inputs),
            jax.jacfwd(theirs, argnums=tuple(range(len(inputs))))(*inputs),
            pulled(*inputs, c),
            jax.jacfwd(pulled, argnums=everything)(*inputs, c),
        )

    c64 = cotangent.astype(np.float64)
    f, jf, grads, jgrads = truth([jnp.asarray(x) for x in xs], jnp.asarray(c64))
    scales = [np.full(x.shape, np.max(np.abs(x), initial=0.0)) for x in [*xs, c64]]
    f = np.asarray(f)
    _within(value, f, _bound(f, [np.asarray(j) for j in jf], scales[:-1], n), f"{what} value")
    for index, (ours_gradient, wanted, jacobians) in enumerate(zip(gradients, grads, jgrads, strict=True)):
        wanted = np.asarray(wanted)
        bound = _bound(wanted, [np.asarray(j) for j in jacobians], scales, n)
        if f.ndim == 0:
            # A loss's gradient is a sum of terms the size of the loss (log-probabilities times
            # weights) that can cancel to 0: at logits of 0 the weights' gradient is exactly 0,
            # ours is 0, and jax's f64 leaves 1e-17 of its own rounding. Normwise, the error is
            # relative to those terms: K·n·u·|loss|·max|c| more.
            bound = bound + K * n * U * abs(float(f)) * float(np.max(np.abs(c64), initial=0.0))
        _within(ours_gradient, wanted, bound, f"{what} gradient of input {index}")


def _draw_array(data: st.DataObject, shape: Sequence[int], low: float, high: float, label: str) -> np.ndarray:
    size = int(np.prod(shape))
    values = data.draw(st.lists(_f32_floats(low, high), min_size=size, max_size=size), label)
    return np.array(values, dtype=np.float32).reshape(tuple(shape))


def _spread(x: np.ndarray, axis: int) -> bool:
    """Every reduced slice holds values apart by more than 1e-3 of its magnitude."""
    width = np.max(x, axis=axis) - np.min(x, axis=axis)
    return bool((width > 1e-3 * np.max(np.abs(x), axis=axis)).all())


@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("root", [False, True])
@settings(max_examples=3, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_var_and_std_stay_within_the_f32_envelope(correction: int, root: bool, data: st.DataObject, seed: int) -> None:
    shape = data.draw(st.tuples(st.integers(1, 3), st.integers(3, 6)), "shape")
    axis = data.draw(st.sampled_from([-1, 1] if shape[0] < 2 + correction else [0, 1, -1]), "axis")
    x = _draw_array(data, shape, -100.0, 100.0, "x")
    # Where a slice has (almost) no spread the variance is second-order in the roundings and
    # std is not differentiable: the first-order envelope says nothing there.
    assume(_spread(x, axis))

    def ours(v: Value) -> Value:
        return v.std(axis, correction) if root else v.var(axis, correction)

    def theirs(v: Any) -> Any:
        return jnp.std(v, axis, ddof=correction) if root else jnp.var(v, axis, ddof=correction)

    _normwise(ours, theirs, [x], shape[axis], seed, f"{'std' if root else 'var'}(axis={axis}, correction={correction})")


@pytest.mark.parametrize("name", ["cumsum", "logcumsumexp"])
@settings(max_examples=3, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_running_reductions_stay_within_the_f32_envelope(name: str, data: st.DataObject, seed: int) -> None:
    shape = data.draw(st.tuples(st.integers(1, 3), st.integers(1, 6)), "shape")
    axis = data.draw(st.sampled_from([0, 1, -1]), "axis")
    x = _draw_array(data, shape, -50.0, 50.0, "x")
    if name == "cumsum":
        _normwise(lambda v: v.cumsum(axis), lambda v: jnp.cumsum(v, axis), [x], shape[axis], seed, f"cumsum(axis={axis})")
    else:
        _normwise(
            lambda v: v.logcumsumexp(axis), lambda v: jax.lax.cumlogsumexp(v, axis=axis % 2), [x], shape[axis], seed,
            f"logcumsumexp(axis={axis})",
        )


def _torch_cross_entropy(log_probabilities: Any, labels: np.ndarray, weights: Any, smoothing: float) -> Any:
    """PyTorch's cross-entropy with class weights and label smoothing (rows labelled -1 ignored), in jax."""
    kept = labels >= 0
    safe = np.where(kept, labels, 0)
    chosen = -jnp.take_along_axis(log_probabilities, safe[:, None], axis=1)[:, 0] * weights[safe] * kept
    denominator = jnp.sum(weights[safe] * kept)
    uniform = -jnp.sum(log_probabilities * weights[None, :], axis=1) * kept
    classes = log_probabilities.shape[1]
    return (1 - smoothing) * jnp.sum(chosen) / denominator + smoothing / classes * jnp.sum(uniform) / denominator


def _one_hot(labels: np.ndarray, classes: int) -> np.ndarray:
    return np.array([[1.0 if label == c else 0.0 for c in range(classes)] for label in labels], dtype=np.float32)


@settings(max_examples=3, deadline=None)
@given(batch=st.integers(2, 4), classes=st.integers(2, 4), smoothing=st.sampled_from([0.0, 0.1]),
       data=st.data(), seed=st.integers(0, 2**16))
def test_class_losses_stay_within_the_f32_envelope(batch: int, classes: int, smoothing: float, data: st.DataObject, seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, size=batch)
    labels[0] = -1  # one ignored row (an all-zero target row); row 1 always kept
    targets = _one_hot(labels, classes)
    logits = _draw_array(data, (batch, classes), -30.0, 30.0, "logits")
    weights = _draw_array(data, (classes,), 0.5, 2.0, "weights")
    n = batch * classes

    def ours(x: Value, w: Value) -> Value:
        return cross_entropy(x, x.tape.input(targets), w, smoothing) if smoothing else nll(x.log_softmax(1), x.tape.input(targets), w)

    def theirs(x: Any, w: Any) -> Any:
        return _torch_cross_entropy(jax.nn.log_softmax(x, axis=1), labels, w, smoothing)

    _normwise(ours, theirs, [logits, weights], n, seed, f"cross-entropy (smoothing {smoothing})")
    plain = _one_hot(np.abs(labels), classes)

    def jax_plain(x: Any) -> Any:
        return -jnp.mean(jnp.sum(jnp.asarray(plain) * jax.nn.log_softmax(x, axis=1), axis=1))

    _normwise(lambda x: cross_entropy(x, x.tape.input(plain)), jax_plain, [logits], n, seed, "cross-entropy")


@settings(max_examples=3, deadline=None)
@given(shape=st.tuples(st.integers(1, 3), st.integers(1, 4)), data=st.data(), seed=st.integers(0, 2**16))
def test_pointwise_losses_stay_within_the_f32_envelope(shape: tuple[int, int], data: st.DataObject, seed: int) -> None:
    n = shape[0] * shape[1]
    logits = _draw_array(data, shape, -60.0, 60.0, "logits")
    targets = _draw_array(data, shape, 0.0, 1.0, "targets")

    def jax_bce(x: Any, t: Any) -> Any:
        return jnp.mean(-(t * jax.nn.log_sigmoid(x) + (1 - t) * jax.nn.log_sigmoid(-x)))

    _normwise(binary_cross_entropy_with_logits, jax_bce, [logits, targets], n, seed, "binary cross-entropy")
    prediction, target = _draw_array(data, shape, -4.0, 4.0, "prediction"), _draw_array(data, shape, -4.0, 4.0, "target")

    def jax_huber(p: Any, t: Any, delta: float = 1.5) -> Any:
        d = jnp.abs(p - t)
        return jnp.mean(jnp.where(d <= delta, 0.5 * d * d, delta * (d - 0.5 * delta)))

    _normwise(lambda p, t: huber(p, t, 1.5), jax_huber, [prediction, target], n, seed, "huber")
    _normwise(lambda p, t: smooth_l1(p, t, 1.5), lambda p, t: jax_huber(p, t) / 1.5, [prediction, target], n, seed, "smooth_l1")
    _normwise(mse, lambda p, t: jnp.mean((p - t) ** 2), [prediction, target], n, seed, "mse")


# ----------------------------------------------------------------- layer functions
@settings(max_examples=3, deadline=None)
@given(groups=st.integers(1, 2), size=st.tuples(st.integers(3, 5), st.integers(3, 5)),
       window=st.tuples(st.integers(1, 3), st.integers(1, 3)), stride=st.integers(1, 2),
       padding=st.integers(0, 1), data=st.data(), seed=st.integers(0, 2**16))
def test_convolutions_stay_within_the_f32_envelope(
    groups: int, size: tuple[int, int], window: tuple[int, int], stride: int, padding: int, data: st.DataObject, seed: int
) -> None:
    channels = 2 * groups
    x = _draw_array(data, (1, channels, *size), -4.0, 4.0, "x")
    kernel = _draw_array(data, (groups * 2, 2, *window), -1.0, 1.0, "kernel")
    fan_in = 2 * window[0] * window[1]
    pads = [(padding, padding)] * 2

    def jax_conv(v: Any, k: Any) -> Any:
        return jax.lax.conv_general_dilated(v, k, (stride, stride), pads, feature_group_count=groups, dimension_numbers=("NCHW", "OIHW", "NCHW"))

    _normwise(lambda v, k: conv2d(v, k, None, stride, padding, groups=groups), jax_conv, [x, kernel], fan_in, seed, "conv2d")
    row = x[:, :, 0, :]
    weights = kernel[:, :, 0, :]

    def jax_conv1d(v: Any, k: Any) -> Any:
        return jax.lax.conv_general_dilated(v, k, (stride,), [(padding, padding)], feature_group_count=groups, dimension_numbers=("NCH", "OIH", "NCH"))

    _normwise(lambda v, k: conv1d(v, k, None, stride, padding, groups=groups), jax_conv1d, [row, weights], 2 * window[1], seed, "conv1d")
    transposed = _draw_array(data, (channels, 2, *window), -1.0, 1.0, "transposed kernel")
    out = tuple((size[a] - 1) * stride + window[a] for a in range(2))

    def jax_transpose(v: Any, k: Any) -> Any:
        def conv(z: Any) -> Any:
            return jax.lax.conv_general_dilated(z, k, (stride, stride), [(0, 0)] * 2, feature_group_count=groups, dimension_numbers=("NCHW", "OIHW", "NCHW"))

        return jax.vjp(conv, jnp.zeros((1, 2 * groups, *out)))[1](v)[0]

    # Each output sums at most ceil(k / s)² windows over each group's channels.
    overlap = 2 * -(-window[0] // stride) * -(-window[1] // stride)
    _normwise(lambda v, k: conv_transpose2d(v, k, None, stride, groups=groups), jax_transpose, [x, transposed], overlap, seed, "conv_transpose2d")


@settings(max_examples=3, deadline=None)
@given(size=st.tuples(st.integers(2, 5), st.integers(2, 5)), window=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       ceil_mode=st.booleans(), include_pad=st.booleans(), data=st.data(), seed=st.integers(0, 2**16))
def test_average_pooling_stays_within_the_f32_envelope(
    size: tuple[int, int], window: tuple[int, int], ceil_mode: bool, include_pad: bool, data: st.DataObject, seed: int
) -> None:
    padding = (window[0] // 2, window[1] // 2)
    assume(all(window[a] <= size[a] + 2 * padding[a] for a in range(2)))
    x = _draw_array(data, (1, 2, *size), -10.0, 10.0, "x")
    stride = (2, 2)
    tape = Tape(f32)
    shape = avg_pool2d(tape.input(x), window, stride, padding, ceil_mode, include_pad).shape
    extra = [max(0, (shape[2 + a] - 1) * stride[a] + window[a] - size[a] - 2 * padding[a]) for a in range(2)]
    pads = [(padding[a], padding[a] + extra[a]) for a in range(2)]
    if include_pad:
        covered = jnp.pad(jnp.ones(size), [(p, p) for p in padding], constant_values=1.0)
        divisor = jax.lax.reduce_window(covered, 0.0, jax.lax.add, window, stride, [(0, e) for e in extra])
    else:
        divisor = jax.lax.reduce_window(jnp.ones(size), 0.0, jax.lax.add, window, stride, pads)

    def theirs(v: Any) -> Any:
        return jax.lax.reduce_window(v, 0.0, jax.lax.add, (1, 1, *window), (1, 1, *stride), [(0, 0), (0, 0), *pads]) / divisor

    _normwise(lambda v: avg_pool2d(v, window, stride, padding, ceil_mode, include_pad), theirs, [x], window[0] * window[1], seed, "avg_pool2d")


@settings(max_examples=3, deadline=None)
@given(groups=st.integers(1, 2), rest=st.tuples(st.integers(1, 3), st.integers(2, 3)), data=st.data(), seed=st.integers(0, 2**16))
def test_normalizations_stay_within_the_f32_envelope(groups: int, rest: tuple[int, int], data: st.DataObject, seed: int) -> None:
    channels = 2 * groups
    x = _draw_array(data, (2, channels, *rest), -10.0, 10.0, "x")
    scale, shift = _draw_array(data, (channels,), -2.0, 2.0, "scale"), _draw_array(data, (channels,), -2.0, 2.0, "shift")
    grouped = x.reshape(2, groups, -1)
    assume(_spread(grouped, 2) and _spread(x.transpose(1, 0, 2, 3).reshape(channels, -1), 1))
    assume(_spread(x.reshape(2, -1), 1))
    spread = (1, channels, 1, 1)

    def jax_group(v: Any, s: Any, b: Any) -> Any:
        g = v.reshape(2, groups, -1)
        normalized = (g - g.mean(-1, keepdims=True)) / jnp.sqrt(g.var(-1, keepdims=True) + 1e-5)
        return normalized.reshape(v.shape) * s.reshape(spread) + b.reshape(spread)

    per_group = grouped.shape[2]
    _normwise(lambda v, s, b: group_norm(v, groups, s, b), jax_group, [x, scale, shift], per_group, seed, "group_norm")

    def jax_batch(v: Any, s: Any, b: Any) -> Any:
        axes = (0, 2, 3)
        normalized = (v - v.mean(axes, keepdims=True)) / jnp.sqrt(v.var(axes, keepdims=True) + 1e-5)
        return normalized * s.reshape(spread) + b.reshape(spread)

    _normwise(lambda v, s, b: batch_norm2d(v, s, b), jax_batch, [x, scale, shift], x.size // channels, seed, "batch_norm2d")
    trailing_scale = _draw_array(data, x.shape[1:], -2.0, 2.0, "layer scale")
    trailing_shift = _draw_array(data, x.shape[1:], -2.0, 2.0, "layer shift")

    def jax_layer(v: Any, s: Any, b: Any) -> Any:
        axes = (1, 2, 3)
        return (v - v.mean(axes, keepdims=True)) / jnp.sqrt(v.var(axes, keepdims=True) + 1e-5) * s + b

    _normwise(layer_norm, jax_layer, [x, trailing_scale, trailing_shift], x.size // 2, seed, "layer_norm")
