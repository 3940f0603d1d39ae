"""The layers, functions and losses of issue 12 against jax.lax / jax.numpy, values and gradients.

Each case records the function on f64 inputs, takes the gradient of ``sum(y * c)`` for a
drawn cotangent ``c`` with respect to every input, and compares with ``jax.vjp`` of the
same function written in jax. Tolerance, per array: ``max |ours - jax| <= 1e-10 * max(1,
max |jax|)``; both sides are f64 and differ only in summation order (a product of a few
dozen terms loses a few ulp).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import here
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from topos import InvalidArgumentError, ShapeMismatchError, Tape, Value, f64
from topos.nn import (
    avg_pool2d,
    batch_norm2d,
    batch_norm2d_training,
    binary_cross_entropy_with_logits,
    class_targets,
    conv1d,
    conv2d,
    conv_transpose2d,
    cross_entropy,
    group_norm,
    huber,
    layer_norm,
    max_pool2d,
    nll,
    pad,
    running_average,
    smooth_l1,
)

jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]

TOLERANCE = 1e-10


def _close(ours: np.ndarray, theirs: Any, what: str) -> None:
    theirs = np.asarray(theirs)
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} != {theirs.shape}"
    scale = max(1.0, float(np.max(np.abs(theirs), initial=0.0)))
    error = float(np.max(np.abs(ours - theirs), initial=0.0))
    assert error <= TOLERANCE * scale, f"{what}: error {error} (scale {scale})"


def _compare(
    ours: Callable[..., Value],
    theirs: Callable[..., Any],
    arrays: list[np.ndarray],
    seed: int,
    data: list[np.ndarray] | None = None,
    gradients: bool = True,
) -> None:
    """``ours(*values, *data)`` against ``theirs(*arrays, *data)``: value, and vjp for each of ``arrays``."""
    fixed = [jnp.asarray(d) for d in data or []]
    shape = jax.eval_shape(lambda *xs: theirs(*xs, *fixed), *arrays).shape
    cotangent = np.random.default_rng(seed).uniform(-1.0, 1.0, size=shape)

    # One jitted function per example: eager jax compiles every operation anew for each shape.
    @jax.jit
    def reference(xs: list[Any], c: Any) -> tuple[Any, Any]:
        y, pullback = jax.vjp(lambda *v: theirs(*v, *fixed), *xs)
        return y, (pullback(c) if gradients else ())

    expected, wanted = reference([jnp.asarray(a) for a in arrays], jnp.asarray(cotangent))

    def build(tape: Tape) -> tuple[list[Value], Value, Value]:
        inputs = [tape.input(a) for a in arrays]
        y = ours(*inputs, *[tape.input(d) for d in data or []])
        return inputs, y, (y * tape.leaf(cotangent)).sum() if y.rank else y * float(cotangent)

    network, (inputs, y, total) = Tape.record(build, element=f64)
    run = network.forward(network.parameters())
    _close(run.of(y).numpy(), expected, "value")
    if gradients:
        computed = run.backward(total)
        for index, (symbol, gradient) in enumerate(zip(inputs, wanted, strict=True)):
            _close(computed.of(symbol).numpy(), gradient, f"gradient of input {index}")


def _uniform(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=shape)


# ----------------------------------------------------------------- convolution
@settings(max_examples=3, deadline=None)
@given(
    groups=st.integers(1, 2), per_group=st.integers(1, 2), filters=st.integers(1, 2),
    size=st.tuples(st.integers(3, 6), st.integers(3, 6)), window=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 2), st.integers(1, 2)), dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.tuples(st.tuples(st.integers(0, 2), st.integers(0, 2)), st.tuples(st.integers(0, 2), st.integers(0, 2))),
    seed=st.integers(0, 2**16),
)
def test_conv2d_with_groups_dilation_and_asymmetric_padding_matches_lax(
    groups: int, per_group: int, filters: int, size: tuple[int, int], window: tuple[int, int],
    stride: tuple[int, int], dilation: tuple[int, int], padding: tuple[tuple[int, int], tuple[int, int]], seed: int,
) -> None:
    for axis in range(2):
        assume(dilation[axis] * (window[axis] - 1) + 1 <= size[axis] + sum(padding[axis]))
    x = _uniform(seed, (2, groups * per_group, *size))
    kernel = _uniform(seed + 1, (groups * filters, per_group, *window))
    bias = _uniform(seed + 2, (groups * filters,))

    def theirs(x: Any, k: Any, b: Any) -> Any:
        y = jax.lax.conv_general_dilated(
            x, k, stride, list(padding), rhs_dilation=dilation, feature_group_count=groups,
            dimension_numbers=("NCHW", "OIHW", "NCHW"),
        )
        return y + b[None, :, None, None]

    _compare(
        lambda x, k, b: conv2d(x, k, b, stride=stride, padding=padding, dilation=dilation, groups=groups),
        theirs, [x, kernel, bias], seed,
    )


@settings(max_examples=3, deadline=None)
@given(length=st.integers(4, 8), window=st.integers(1, 3), stride=st.integers(1, 2), dilation=st.integers(1, 2),
       padding=st.tuples(st.integers(0, 2), st.integers(0, 2)), seed=st.integers(0, 2**16))
def test_conv1d_matches_lax(length: int, window: int, stride: int, dilation: int, padding: tuple[int, int], seed: int) -> None:
    x, kernel = _uniform(seed, (2, 3, length)), _uniform(seed + 1, (2, 3, window))

    def theirs(x: Any, k: Any) -> Any:
        return jax.lax.conv_general_dilated(x, k, (stride,), [padding], rhs_dilation=(dilation,), dimension_numbers=("NCH", "OIH", "NCH"))

    _compare(lambda x, k: conv1d(x, k, stride=stride, padding=padding, dilation=dilation), theirs, [x, kernel], seed)


@settings(max_examples=3, deadline=None)
@given(size=st.tuples(st.integers(2, 4), st.integers(2, 4)), window=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       padding=st.tuples(st.integers(0, 1), st.integers(0, 1)), extra=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       seed=st.integers(0, 2**16))
def test_conv_transpose2d_is_the_input_adjoint_of_conv2d(
    size: tuple[int, int], window: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
    padding: tuple[int, int], extra: tuple[int, int], seed: int,
) -> None:
    output_padding = (min(extra[0], max(stride[0], dilation[0]) - 1), min(extra[1], max(stride[1], dilation[1]) - 1))
    out = tuple((size[a] - 1) * stride[a] - 2 * padding[a] + dilation[a] * (window[a] - 1) + output_padding[a] + 1 for a in range(2))
    assume(min(out) >= 1)
    x, kernel, bias = _uniform(seed, (2, 3, *size)), _uniform(seed + 1, (3, 2, *window)), _uniform(seed + 2, (2,))

    def theirs(x: Any, k: Any, b: Any) -> Any:
        # PyTorch's definition: the gradient of conv2d (kernel [C, F, kh, kw] read as OIHW) in its input.
        def conv(z: Any) -> Any:
            return jax.lax.conv_general_dilated(
                z, k, stride, [(padding[0], padding[0]), (padding[1], padding[1])], rhs_dilation=dilation,
                dimension_numbers=("NCHW", "OIHW", "NCHW"),
            )

        _, pullback = jax.vjp(conv, jnp.zeros((2, 2, *out)))
        return pullback(x)[0] + b[None, :, None, None]

    _compare(
        lambda x, k, b: conv_transpose2d(x, k, b, stride=stride, padding=padding, output_padding=output_padding, dilation=dilation),
        theirs, [x, kernel, bias], seed,
    )


# ----------------------------------------------------------------- pooling
@settings(max_examples=3, deadline=None)
@given(size=st.tuples(st.integers(3, 6), st.integers(3, 6)), window=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       padding=st.tuples(st.integers(0, 1), st.integers(0, 1)), seed=st.integers(0, 2**16))
def test_max_pool2d_matches_reduce_window_including_ties(
    size: tuple[int, int], window: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
    padding: tuple[int, int], seed: int,
) -> None:
    for axis in range(2):
        assume(2 * padding[axis] <= window[axis])
        assume(dilation[axis] * (window[axis] - 1) + 1 <= size[axis] + 2 * padding[axis])
    # Few distinct integers, so windows hold ties: the gradient goes to the first maximum.
    x = np.random.default_rng(seed).integers(-2, 3, size=(2, 2, *size)).astype(np.float64)

    def theirs(x: Any) -> Any:
        return jax.lax.reduce_window(
            x, -jnp.inf, jax.lax.max, (1, 1, *window), (1, 1, *stride),
            [(0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])], window_dilation=(1, 1, *dilation),
        )

    # jax has no gradient for dilated max-pooling; there the values alone are compared.
    _compare(lambda x: max_pool2d(x, window, stride, padding, dilation), theirs, [x], seed, gradients=dilation == (1, 1))


@settings(max_examples=3, deadline=None)
@given(size=st.tuples(st.integers(3, 6), st.integers(3, 6)), window=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), padding=st.tuples(st.integers(0, 1), st.integers(0, 1)),
       seed=st.integers(0, 2**16))
def test_avg_pool2d_matches_reduce_window(
    size: tuple[int, int], window: tuple[int, int], stride: tuple[int, int], padding: tuple[int, int], seed: int
) -> None:
    for axis in range(2):
        assume(2 * padding[axis] <= window[axis] <= size[axis] + 2 * padding[axis])
    x = _uniform(seed, (2, 2, *size))

    def theirs(x: Any) -> Any:
        summed = jax.lax.reduce_window(
            x, 0.0, jax.lax.add, (1, 1, *window), (1, 1, *stride), [(0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2]
        )
        return summed / (window[0] * window[1])

    _compare(lambda x: avg_pool2d(x, window, stride, padding), theirs, [x], seed)


# ----------------------------------------------------------------- normalization
def _jax_batch_norm(x: Any, scale: Any, shift: Any, epsilon: float) -> Any:
    axes = (0, *range(2, x.ndim))
    mean = jnp.mean(x, axis=axes, keepdims=True)
    variance = jnp.var(x, axis=axes, keepdims=True)
    spread = (1, x.shape[1], *([1] * (x.ndim - 2)))
    return (x - mean) / jnp.sqrt(variance + epsilon) * scale.reshape(spread) + shift.reshape(spread)


@settings(max_examples=3, deadline=None)
@given(shape=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(2, 3)), seed=st.integers(0, 2**16))
def test_batch_norm2d_matches_jax_and_reports_bessels_variance(shape: tuple[int, int, int, int], seed: int) -> None:
    x, scale, shift = _uniform(seed, shape), _uniform(seed + 1, shape[1:2]), _uniform(seed + 2, shape[1:2])
    _compare(lambda x, s, b: batch_norm2d(x, s, b, 1e-5), lambda x, s, b: _jax_batch_norm(x, s, b, 1e-5), [x, scale, shift], seed)

    def build(tape: Tape) -> tuple[Value, Value, Value]:
        out = batch_norm2d_training(tape.input(x), tape.input(scale), tape.input(shift))
        return out.variance, out.unbiased_variance, running_average(tape.input(scale), out.unbiased_variance, 0.25)

    network, (variance, unbiased, running) = Tape.record(build, element=f64)
    run = network.forward(network.parameters())
    _close(run.of(variance).numpy(), np.var(x, axis=(0, 2, 3)), "biased variance")
    _close(run.of(unbiased).numpy(), np.var(x, axis=(0, 2, 3), ddof=1), "unbiased variance")
    _close(run.of(running).numpy(), 0.75 * scale + 0.25 * np.var(x, axis=(0, 2, 3), ddof=1), "running average")


def test_batch_norm2d_inference_form_uses_the_given_statistics() -> None:
    x, mean, variance = _uniform(1, (2, 3, 2, 2)), _uniform(2, (3,)), np.abs(_uniform(3, (3,))) + 0.5
    scale, shift = _uniform(4, (3,)), _uniform(5, (3,))

    def theirs(x: Any, m: Any, v: Any, s: Any, b: Any) -> Any:
        spread = (1, 3, 1, 1)
        return (x - m.reshape(spread)) / jnp.sqrt(v.reshape(spread) + 1e-3) * s.reshape(spread) + b.reshape(spread)

    _compare(lambda x, m, v, s, b: batch_norm2d(x, s, b, 1e-3, m, v), theirs, [x, mean, variance, scale, shift], 6)


@settings(max_examples=3, deadline=None)
@given(groups=st.integers(1, 3), per_group=st.integers(1, 2), rest=st.tuples(st.integers(1, 3), st.integers(1, 3)), seed=st.integers(0, 2**16))
def test_group_norm_matches_jax(groups: int, per_group: int, rest: tuple[int, int], seed: int) -> None:
    assume(per_group * rest[0] * rest[1] >= 2)
    channels = groups * per_group
    x, scale, shift = _uniform(seed, (2, channels, *rest)), _uniform(seed + 1, (channels,)), _uniform(seed + 2, (channels,))

    def theirs(x: Any, s: Any, b: Any) -> Any:
        grouped = x.reshape(2, groups, -1)
        normalized = (grouped - grouped.mean(-1, keepdims=True)) / jnp.sqrt(grouped.var(-1, keepdims=True) + 1e-5)
        return normalized.reshape(x.shape) * s[None, :, None, None] + b[None, :, None, None]

    _compare(lambda x, s, b: group_norm(x, groups, s, b), theirs, [x, scale, shift], seed)


@settings(max_examples=3, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=2, max_size=4), trailing=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_layer_norm_over_several_trailing_axes_matches_jax(shape: list[int], trailing: int, seed: int) -> None:
    assume(trailing <= len(shape) and int(np.prod(shape[-trailing:])) >= 2)
    axes = tuple(range(len(shape) - trailing, len(shape)))
    x, scale, shift = _uniform(seed, tuple(shape)), _uniform(seed + 1, tuple(shape[-trailing:])), _uniform(seed + 2, tuple(shape[-trailing:]))

    def theirs(x: Any, s: Any, b: Any) -> Any:
        normalized = (x - x.mean(axes, keepdims=True)) / jnp.sqrt(x.var(axes, keepdims=True) + 1e-5)
        return normalized * s + b

    _compare(lambda x, s, b: layer_norm(x, s, b), theirs, [x, scale, shift], seed)


# ----------------------------------------------------------------- padding
_NUMPY_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@pytest.mark.parametrize("mode", sorted(_NUMPY_MODE))
@settings(max_examples=3, deadline=None)
@given(shape=st.lists(st.integers(2, 4), min_size=1, max_size=3), data=st.data(), seed=st.integers(0, 2**16))
def test_pad_modes_match_jnp_pad(mode: str, shape: list[int], data: st.DataObject, seed: int) -> None:
    widths = [(data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))) for n in shape]
    x = _uniform(seed, tuple(shape))
    if mode == "constant":
        _compare(lambda v: pad(v, widths, mode, 2.5), lambda v: jnp.pad(v, widths, "constant", constant_values=2.5), [x], seed)
    else:
        _compare(lambda v: pad(v, widths, mode), lambda v: jnp.pad(v, widths, _NUMPY_MODE[mode]), [x], seed)


# ----------------------------------------------------------------- losses
@settings(max_examples=3, deadline=None)
@given(shape=st.tuples(st.integers(1, 4), st.integers(1, 4)), seed=st.integers(0, 2**16))
def test_binary_cross_entropy_with_logits_matches_jax(shape: tuple[int, int], seed: int) -> None:
    logits = _uniform(seed, shape) * 50.0
    targets = np.abs(_uniform(seed + 1, shape))

    def theirs(x: Any, t: Any) -> Any:
        return jnp.mean(-(t * jax.nn.log_sigmoid(x) + (1 - t) * jax.nn.log_sigmoid(-x)))

    _compare(binary_cross_entropy_with_logits, theirs, [logits, targets], seed)


def _torch_cross_entropy(log_probabilities: Any, labels: np.ndarray, weights: Any, smoothing: float, ignore: int) -> Any:
    """PyTorch's documented cross-entropy with weights, smoothing and an ignore index, in jax."""
    kept = labels != ignore
    safe = np.where(kept, labels, 0)
    chosen = -jnp.take_along_axis(log_probabilities, safe[:, None], axis=1)[:, 0] * weights[safe] * kept
    denominator = jnp.sum(weights[safe] * kept)
    uniform = -jnp.sum(log_probabilities * weights[None, :], axis=1) * kept
    classes = log_probabilities.shape[1]
    return (1 - smoothing) * jnp.sum(chosen) / denominator + smoothing / classes * jnp.sum(uniform) / denominator


@settings(max_examples=3, deadline=None)
@given(batch=st.integers(2, 5), classes=st.integers(2, 4), smoothing=st.sampled_from([0.0, 0.1, 0.5]),
       weighted=st.booleans(), seed=st.integers(0, 2**16))
def test_cross_entropy_with_weights_smoothing_and_ignored_rows_matches_the_torch_definition(
    batch: int, classes: int, smoothing: float, weighted: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, size=batch)
    labels[0] = -100  # one ignored row; row 1 always kept
    logits = rng.uniform(-5.0, 5.0, size=(batch, classes))
    weights = rng.uniform(0.5, 2.0, size=classes) if weighted else np.ones(classes)
    targets = class_targets(labels, classes, element=f64).numpy()

    def ours(x: Value, w: Value, t: Value) -> Value:
        return cross_entropy(x, t, w if weighted else None, smoothing) if (weighted or smoothing) else nll(x.log_softmax(1), t)

    def theirs(x: Any, w: Any, t: Any) -> Any:
        return _torch_cross_entropy(jax.nn.log_softmax(x, axis=1), labels, w, smoothing, -100)

    _compare(ours, theirs, [logits, weights], seed, data=[targets])


def test_nll_weights_each_row_by_its_class_and_ignores_zero_rows() -> None:
    log_probabilities = np.log(np.array([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]))
    weights = np.array([1.0, 3.0])
    labels = np.array([1, 0, -100])
    targets = class_targets(labels, 2, element=f64).numpy()

    def theirs(lp: Any, w: Any, t: Any) -> Any:
        return _torch_cross_entropy(lp, labels, w, 0.0, -100)

    _compare(lambda lp, w, t: nll(lp, t, w), theirs, [log_probabilities, weights], 3, data=[targets])


@pytest.mark.parametrize("threshold", [0.5, 1.0, 2.0])
@settings(max_examples=3, deadline=None)
@given(size=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_huber_and_smooth_l1_match_their_definitions(threshold: float, size: int, seed: int) -> None:
    prediction, target = _uniform(seed, (size,)) * 4.0, _uniform(seed + 1, (size,)) * 4.0
    prediction[0] = target[0] + threshold  # the kink itself

    def jax_huber(p: Any, t: Any) -> Any:
        d = jnp.abs(p - t)
        return jnp.mean(jnp.where(d <= threshold, 0.5 * d * d, threshold * (d - 0.5 * threshold)))

    _compare(lambda p, t: huber(p, t, threshold), jax_huber, [prediction, target], seed)
    _compare(lambda p, t: smooth_l1(p, t, threshold), lambda p, t: jax_huber(p, t) / threshold, [prediction, target], seed)


# ----------------------------------------------------------------- misuse


def test_misuse_names_the_users_line() -> None:
    def build(tape: Tape) -> Value:
        x = tape.input(np.zeros((1, 4, 3, 3)))
        kernel = tape.input(np.zeros((3, 2, 2, 2)))
        line = here() + 2
        with pytest.raises(ShapeMismatchError, match=rf"test_nn_ported.py:{line}: conv2d groups=2"):
            conv2d(x, kernel, groups=2)
        line = here() + 2
        with pytest.raises(InvalidArgumentError, match=rf"test_nn_ported.py:{line}: pad mode must be one of"):
            pad(x, [(0, 0)] * 4, "mirror")
        line = here() + 2
        with pytest.raises(ShapeMismatchError, match=rf"test_nn_ported.py:{line}: pad mode 'reflect' needs widths"):
            pad(x, [(0, 0), (0, 0), (3, 0), (0, 0)], "reflect")
        line = here() + 2
        with pytest.raises(InvalidArgumentError, match=rf"test_nn_ported.py:{line}: max_pool2d padding"):
            max_pool2d(x, 2, padding=2)
        line = here() + 2
        with pytest.raises(ShapeMismatchError, match=rf"test_nn_ported.py:{line}: group_norm groups=3"):
            group_norm(x, 3, tape.input(np.ones(4)), tape.input(np.zeros(4)))
        line = here() + 2
        with pytest.raises(ShapeMismatchError, match=rf"test_nn_ported.py:{line}: layer_norm scale"):
            layer_norm(x, tape.input(np.ones((4, 3))), tape.input(np.zeros((4, 3))))
        line = here() + 2
        with pytest.raises(InvalidArgumentError, match=rf"test_nn_ported.py:{line}: huber: delta"):
            huber(x, x, 0.0)
        return x

    Tape.record(build, element=f64)


def test_class_targets_refuses_an_out_of_range_index_naming_the_line() -> None:
    line = here() + 2
    with pytest.raises(InvalidArgumentError, match=rf"test_nn_ported.py:{line}: class_targets: index 5"):
        class_targets([0, 5], 3)
