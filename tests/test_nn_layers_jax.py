"""The layer classes of issue 12 and the new pooling and transposed-convolution options, against jax.

Each layer is built on an f64 tape from drawn payloads, called on a drawn input, and the
gradient of ``sum(y * c)`` (``c`` drawn) is taken with respect to the input and every
parameter the layer visits; jax computes the same with ``jax.vjp`` of the layer written in
``jax.lax`` / ``jax.numpy``. Tolerance, per array: ``max |ours - jax| <= 1e-10 * max(1, max
|jax|)``: both sides are f64 and differ only in summation order over at most a few dozen
terms (a few ulp, far below 1e-10).

PyTorch's conventions are written out in jax, independently of topos's formulation:
the average-pooling divisors as a windowed sum of ones over the covered region, and the
grouped transposed convolution as the input adjoint of a grouped ``conv_general_dilated``.
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

from topos import Shape, Tape, Tensor, Value, f64
from topos.nn import (
    AvgPool2d,
    BatchNorm2d,
    Conv1d,
    Conv2d,
    ConvTranspose2d,
    GroupNorm,
    LayerNorm,
    Module,
    avg_pool2d,
    conv_transpose2d,
    named_parameters,
)

jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]

TOLERANCE = 1e-10


def _close(ours: np.ndarray, theirs: Any, what: str) -> None:
    theirs = np.asarray(theirs)
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} != {theirs.shape}"
    scale = max(1.0, float(np.max(np.abs(theirs), initial=0.0)))
    error = float(np.max(np.abs(ours - theirs), initial=0.0))
    assert error <= TOLERANCE * scale, f"{what}: error {error} (scale {scale})"


def _uniform(seed: int, shape: Sequence[int]) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=tuple(shape))


def _check_layer(
    make: Callable[[Tape], Module], theirs: Callable[..., Any], x: np.ndarray, parameters: list[np.ndarray], seed: int
) -> None:
    """``make(tape)(x)`` against ``theirs(x, *parameters)`` (parameters in the layer's visit order)."""
    tape = Tape(f64)
    layer = make(tape)
    xv = tape.input(x)
    y = layer(xv)
    cotangent = np.random.default_rng(seed).uniform(-1.0, 1.0, size=y.shape.axes)
    total = (y * tape.leaf(cotangent)).sum()
    network = tape.seal()
    run = network.forward(network.parameters())
    symbols = [symbol for _, symbol in named_parameters(layer)]
    assert len(symbols) == len(parameters)
    for symbol, payload in zip(symbols, parameters, strict=True):
        np.testing.assert_array_equal(network.parameters().of(symbol).numpy(), payload)

    @jax.jit
    def reference(xs: list[Any], c: Any) -> tuple[Any, Any]:
        value, pullback = jax.vjp(theirs, *xs)
        return value, pullback(c)

    expected, wanted = reference([jnp.asarray(a) for a in [x, *parameters]], jnp.asarray(cotangent))
    _close(run.of(y.symbol).numpy(), expected, "value")
    gradients = run.backward(total.symbol)
    _close(gradients.of(xv.symbol).numpy(), wanted[0], "gradient of the input")
    for index, symbol in enumerate(symbols):
        _close(gradients.of(symbol).numpy(), wanted[index + 1], f"gradient of parameter {index}")


def _conv(x: Any, k: Any, stride: Any, padding: Any, dilation: Any, groups: int, numbers: tuple[str, str, str]) -> Any:
    return jax.lax.conv_general_dilated(
        x, k, stride, padding, rhs_dilation=dilation, feature_group_count=groups, dimension_numbers=numbers
    )


# ----------------------------------------------------------------- average pooling
def _divisors(shape: tuple[int, int], window: tuple[int, int], stride: tuple[int, int], padding: tuple[int, int],
              extra: tuple[int, int], include_pad: bool) -> Any:
    """PyTorch's divisors, counted: ones over the input (and its padding, when it counts), windowed."""
    covered = jnp.ones(shape)
    if include_pad:
        covered = jnp.pad(covered, [(padding[0],) * 2, (padding[1],) * 2], constant_values=1.0)
        pads = [(0, extra[0]), (0, extra[1])]
    else:
        pads = [(padding[0], padding[0] + extra[0]), (padding[1], padding[1] + extra[1])]
    return jax.lax.reduce_window(covered, 0.0, jax.lax.add, window, stride, pads)


def _torch_extent(extent: int, size: int, step: int, padding: int, ceil_mode: bool) -> int:
    """PyTorch's documented output size: floor or ceil of the span over the stride, plus one;
    in ceil mode a last window must start inside the input or its left padding."""
    span = extent + 2 * padding - size
    count = -(-span // step) + 1 if ceil_mode else span // step + 1
    if ceil_mode and (count - 1) * step >= extent + padding:
        count -= 1
    return count


@settings(max_examples=4, deadline=None)
@given(size=st.tuples(st.integers(2, 7), st.integers(2, 7)), window=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), padding=st.tuples(st.integers(0, 1), st.integers(0, 1)),
       ceil_mode=st.booleans(), include_pad=st.booleans(), seed=st.integers(0, 2**16))
def test_avg_pool2d_divides_as_pytorch_with_ceil_mode_and_count_include_pad(
    size: tuple[int, int], window: tuple[int, int], stride: tuple[int, int], padding: tuple[int, int],
    ceil_mode: bool, include_pad: bool, seed: int,
) -> None:
    for axis in range(2):
        assume(2 * padding[axis] <= window[axis] <= size[axis] + 2 * padding[axis])
    out = tuple(_torch_extent(size[a], window[a], stride[a], padding[a], ceil_mode) for a in range(2))
    # How far ceil mode's last window reaches past the trailing padding.
    reach = [max(0, (out[a] - 1) * stride[a] + window[a] - size[a] - 2 * padding[a]) for a in range(2)]
    extra = (reach[0], reach[1])
    x = _uniform(seed, (2, 2, *size))
    divisors = _divisors(size, window, stride, padding, extra, include_pad)

    def theirs(x: Any) -> Any:
        pads = [(0, 0), (0, 0), (padding[0], padding[0] + extra[0]), (padding[1], padding[1] + extra[1])]
        summed = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 1, *window), (1, 1, *stride), pads)
        return summed / divisors

    pool = AvgPool2d(window, stride, padding, ceil_mode=ceil_mode, count_include_pad=include_pad)
    _check_layer(lambda tape: pool, theirs, x, [], seed)

    def functional(tape: Tape) -> Value:
        return avg_pool2d(tape.input(x), window, stride, padding, ceil_mode, include_pad)

    network, y = Tape.record(functional, element=f64)
    assert network.forward(network.parameters()).of(y).shape == Shape((2, 2, *out))


def test_the_default_average_records_the_hand_written_chain_with_one_constant_divisor() -> None:
    def default(tape: Tape) -> Value:
        return avg_pool2d(tape.input(np.ones((1, 1, 4, 4))), 2)

    def by_hand(tape: Tape) -> Value:
        summed = tape.input(np.ones((1, 1, 4, 4))).unfold(2, 2, 2).unfold(4, 2, 2).sum_along(5).sum_along(3)
        return summed / tape.constant(summed.shape, 4.0)

    assert Tape.record(default, element=f64)[0].describe() == Tape.record(by_hand, element=f64)[0].describe()


# ----------------------------------------------------------------- convolution layers
@settings(max_examples=4, deadline=None)
@given(groups=st.integers(1, 3), per_group=st.integers(1, 2), per_filters=st.integers(1, 2), length=st.integers(4, 8),
       window=st.integers(1, 3), stride=st.integers(1, 2), dilation=st.integers(1, 2),
       padding=st.tuples(st.integers(0, 2), st.integers(0, 2)), bias=st.booleans(), seed=st.integers(0, 2**16))
def test_conv1d_layer_matches_lax(
    groups: int, per_group: int, per_filters: int, length: int, window: int, stride: int, dilation: int,
    padding: tuple[int, int], bias: bool, seed: int,
) -> None:
    assume(dilation * (window - 1) + 1 <= length + sum(padding))
    x = _uniform(seed, (2, groups * per_group, length))
    weights = _uniform(seed + 1, (groups * per_filters, per_group, window))
    b = _uniform(seed + 2, (groups * per_filters,))

    def theirs(x: Any, k: Any, *rest: Any) -> Any:
        y = _conv(x, k, (stride,), [padding], (dilation,), groups, ("NCH", "OIH", "NCH"))
        return y + rest[0][None, :, None] if rest else y

    def make(tape: Tape) -> Conv1d:
        return Conv1d(tape, weights, b if bias else None, stride, padding, dilation, groups)

    _check_layer(make, theirs, x, [weights, b] if bias else [weights], seed)


@settings(max_examples=4, deadline=None)
@given(groups=st.integers(1, 3), per_group=st.integers(1, 2), per_filters=st.integers(1, 2),
       size=st.tuples(st.integers(4, 7), st.integers(4, 7)), window=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       stride=st.tuples(st.integers(1, 2), st.integers(1, 2)), dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       padding=st.tuples(st.integers(0, 2), st.integers(0, 2)), bias=st.booleans(), seed=st.integers(0, 2**16))
def test_conv2d_layer_with_pairs_dilation_and_groups_matches_lax(
    groups: int, per_group: int, per_filters: int, size: tuple[int, int], window: tuple[int, int],
    stride: tuple[int, int], dilation: tuple[int, int], padding: tuple[int, int], bias: bool, seed: int,
) -> None:
    assume(all(d * (w - 1) + 1 <= n + 2 * p for d, w, n, p in zip(dilation, window, size, padding, strict=True)))
    x = _uniform(seed, (2, groups * per_group, *size))
    weights = _uniform(seed + 1, (groups * per_filters, per_group, *window))
    b = _uniform(seed + 2, (groups * per_filters,))

    def theirs(x: Any, k: Any, *rest: Any) -> Any:
        y = _conv(x, k, stride, [(p, p) for p in padding], dilation, groups, ("NCHW", "OIHW", "NCHW"))
        return y + rest[0][None, :, None, None] if rest else y

    def make(tape: Tape) -> Conv2d:
        return Conv2d(tape, weights, b if bias else None, stride, padding, dilation, groups)

    _check_layer(make, theirs, x, [weights, b] if bias else [weights], seed)


@settings(max_examples=4, deadline=None)
@given(groups=st.integers(1, 3), per_group=st.integers(1, 2), per_filters=st.integers(1, 2),
       size=st.tuples(st.integers(2, 4), st.integers(2, 4)), window=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       padding=st.tuples(st.integers(0, 1), st.integers(0, 1)), extra=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       seed=st.integers(0, 2**16))
def test_grouped_conv_transpose2d_is_the_input_adjoint_of_grouped_conv2d(
    groups: int, per_group: int, per_filters: int, size: tuple[int, int], window: tuple[int, int],
    stride: tuple[int, int], dilation: tuple[int, int], padding: tuple[int, int], extra: tuple[int, int], seed: int,
) -> None:
    output_padding = tuple(min(extra[a], max(stride[a], dilation[a]) - 1) for a in range(2))
    out = tuple(
        (size[a] - 1) * stride[a] - 2 * padding[a] + dilation[a] * (window[a] - 1) + output_padding[a] + 1 for a in range(2)
    )
    assume(min(out) >= 1)
    channels, filters = groups * per_group, groups * per_filters
    x = _uniform(seed, (2, channels, *size))
    weights = _uniform(seed + 1, (channels, per_filters, *window))
    bias = _uniform(seed + 2, (filters,))

    def theirs(x: Any, k: Any, b: Any) -> Any:
        # PyTorch's definition: [C, F / groups, kh, kw] read as a grouped conv2d kernel from F to C channels.
        def conv(z: Any) -> Any:
            pads = [(padding[0], padding[0]), (padding[1], padding[1])]
            return _conv(z, k, stride, pads, dilation, groups, ("NCHW", "OIHW", "NCHW"))

        _, pullback = jax.vjp(conv, jnp.zeros((2, filters, *out)))
        return pullback(x)[0] + b[None, :, None, None]

    def make(tape: Tape) -> ConvTranspose2d:
        return ConvTranspose2d(tape, weights, bias, stride, padding, output_padding, dilation, groups)  # type: ignore[arg-type]

    _check_layer(make, theirs, x, [weights, bias], seed)

    def functional(tape: Tape) -> Value:
        return conv_transpose2d(
            tape.input(x), tape.input(weights), tape.input(bias), stride, padding, output_padding, dilation, groups  # type: ignore[arg-type]
        )

    network, y = Tape.record(functional, element=f64)
    np.testing.assert_allclose(
        network.forward(network.parameters()).of(y).numpy(), np.asarray(jax.jit(theirs)(x, weights, bias)), rtol=0, atol=1e-10
    )


# ----------------------------------------------------------------- normalization layers
@settings(max_examples=4, deadline=None)
@given(groups=st.integers(1, 3), per_group=st.integers(1, 2), rest=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       seed=st.integers(0, 2**16))
def test_group_norm_layer_matches_jax(groups: int, per_group: int, rest: tuple[int, int], seed: int) -> None:
    assume(per_group * rest[0] * rest[1] >= 2)
    channels = groups * per_group
    x, scale, shift = _uniform(seed, (2, channels, *rest)), _uniform(seed + 1, (channels,)), _uniform(seed + 2, (channels,))

    def theirs(x: Any, s: Any, b: Any) -> Any:
        grouped = x.reshape(2, groups, -1)
        normalized = (grouped - grouped.mean(-1, keepdims=True)) / jnp.sqrt(grouped.var(-1, keepdims=True) + 1e-5)
        return normalized.reshape(x.shape) * s[None, :, None, None] + b[None, :, None, None]

    _check_layer(lambda tape: GroupNorm(tape, groups, scale, shift, 1e-5), theirs, x, [scale, shift], seed)


@settings(max_examples=4, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=2, max_size=4), trailing=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_layer_norm_layer_over_several_trailing_axes_matches_jax(shape: list[int], trailing: int, seed: int) -> None:
    assume(trailing <= len(shape) and int(np.prod(shape[-trailing:])) >= 2)
    axes = tuple(range(len(shape) - trailing, len(shape)))
    x = _uniform(seed, shape)
    scale, shift = _uniform(seed + 1, shape[-trailing:]), _uniform(seed + 2, shape[-trailing:])

    def theirs(x: Any, s: Any, b: Any) -> Any:
        return (x - x.mean(axes, keepdims=True)) / jnp.sqrt(x.var(axes, keepdims=True) + 1e-5) * s + b

    _check_layer(lambda tape: LayerNorm(tape, scale, shift, 1e-5), theirs, x, [scale, shift], seed)


def _jax_batch_norm(x: Any, mean: Any, variance: Any, scale: Any, shift: Any, epsilon: float) -> Any:
    spread = (1, x.shape[1], 1, 1)
    normalized = (x - mean.reshape(spread)) / jnp.sqrt(variance.reshape(spread) + epsilon)
    return normalized * scale.reshape(spread) + shift.reshape(spread)


@settings(max_examples=4, deadline=None)
@given(shape=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(2, 3)),
       momentum=st.sampled_from([0.0, 0.1, 0.5, 1.0]), bessel=st.booleans(), seed=st.integers(0, 2**16))
def test_batch_norm2d_trains_on_the_batch_and_updates_running_statistics_as_pytorch(
    shape: tuple[int, int, int, int], momentum: float, bessel: bool, seed: int
) -> None:
    x, scale, shift = _uniform(seed, shape), _uniform(seed + 1, shape[1:2]), _uniform(seed + 2, shape[1:2])
    axes = (0, 2, 3)

    def theirs(x: Any, s: Any, b: Any) -> Any:
        return _jax_batch_norm(x, jnp.mean(x, axes), jnp.var(x, axes), s, b, 1e-5)

    def make(tape: Tape) -> BatchNorm2d:
        return BatchNorm2d(tape, scale, shift, 1e-5, momentum, bessel)

    _check_layer(make, theirs, x, [scale, shift], seed)

    # The running statistics: drawn starting values fed, updated with the batch's.
    start_mean, start_variance = _uniform(seed + 3, shape[1:2]), np.abs(_uniform(seed + 4, shape[1:2])) + 0.5
    tape = Tape(f64)
    layer = make(tape)
    step = layer.express(tape.input(x))
    network = tape.seal()
    feeds = layer.feed(Tensor(start_mean, f64), Tensor(start_variance, f64))
    run = network.forward(network.parameters(), feeds)
    batch_variance = np.var(x, axis=axes, ddof=1 if bessel else 0)
    _close(run.of(step.running_mean.symbol).numpy(), (1 - momentum) * start_mean + momentum * np.mean(x, axis=axes), "running mean")
    _close(run.of(step.running_variance.symbol).numpy(), (1 - momentum) * start_variance + momentum * batch_variance, "running variance")
    _close(run.of(step.variance.symbol).numpy(), np.var(x, axis=axes), "the biased variance it normalized with")
    # Unfed, the running statistics start where PyTorch's do: mean 0, variance 1.
    unfed = network.forward(network.parameters())
    _close(unfed.of(step.running_variance.symbol).numpy(), (1 - momentum) + momentum * batch_variance, "from variance 1")


@settings(max_examples=4, deadline=None)
@given(shape=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)), seed=st.integers(0, 2**16))
def test_batch_norm2d_in_evaluation_normalizes_with_the_running_statistics(shape: tuple[int, int, int, int], seed: int) -> None:
    x, scale, shift = _uniform(seed, shape), _uniform(seed + 1, shape[1:2]), _uniform(seed + 2, shape[1:2])
    mean, variance = _uniform(seed + 3, shape[1:2]), np.abs(_uniform(seed + 4, shape[1:2])) + 0.5

    def theirs(x: Any, s: Any, b: Any) -> Any:
        return _jax_batch_norm(x, jnp.asarray(mean), jnp.asarray(variance), s, b, 1e-3)

    tape = Tape(f64)
    layer = BatchNorm2d(tape, scale, shift, 1e-3).evaluation()
    assert not layer.training and layer.train().training
    xv = tape.input(x)
    y = layer(xv)
    cotangent = _uniform(seed + 5, shape)
    total = (y * tape.leaf(cotangent)).sum()
    network = tape.seal()
    run = network.forward(network.parameters(), layer.feed(Tensor(mean, f64), Tensor(variance, f64)))
    expected, pullback = jax.vjp(theirs, x, scale, shift)
    _close(run.of(y.symbol).numpy(), expected, "value")
    gradients = run.backward(total.symbol)
    for symbol, wanted in zip([xv.symbol, layer.scale, layer.shift], pullback(cotangent), strict=True):
        _close(gradients.of(symbol).numpy(), wanted, "gradient")


@pytest.mark.parametrize("width", [3, (2, 3), [1, 2, 3]])
def test_layer_norm_init_takes_one_width_or_the_trailing_shape(width: int | tuple[int, ...] | list[int]) -> None:
    layer = LayerNorm.init(Tape(), width, epsilon=1e-5)
    expected = (width,) if isinstance(width, int) else tuple(width)
    assert layer.normalized_shape == Shape(expected)
    assert [str(path) for path, _ in named_parameters(layer)] == ["scale", "shift"]
