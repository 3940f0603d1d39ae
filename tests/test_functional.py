"""Functional idioms against independent numpy formulas, their gradients, and their errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from topos import InvalidArgumentError, ShapeMismatchError, Tape, Tensor, Value, f64
from topos.nn import batch_norm, batch_norm_training, conv2d, max_pool

Array = np.ndarray[Any, Any]


def numpy_conv(x: Array, k: Array, b: Array | None, stride: int, padding: int) -> Array:
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    batch, _, h, w = x.shape
    filters, _, kh, kw = k.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((batch, filters, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[:, :, i, j] = np.einsum("bchw,fchw->bf", patch, k)
    return out if b is None else out + b[None, :, None, None]


@pytest.mark.parametrize(("stride", "padding", "bias"), [(1, 0, False), (2, 1, True), (1, 2, True)])
def test_conv2d_matches_numpy(stride: int, padding: int, bias: bool) -> None:
    rng = np.random.default_rng(0)
    x, k, b = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((4, 3, 3, 2)), rng.standard_normal(4)

    def build(t: Tape) -> Value:
        return conv2d(t.input(x), t.parameter(k), t.parameter(b) if bias else None, stride=stride, padding=padding)

    network, y = Tape.record(build, element=f64)
    got = network.forward(network.parameters()).of(y).numpy()
    expected = numpy_conv(x, k, b if bias else None, stride, padding)
    # f64 sums of at most 18 terms in different orders: 1e-12 is far above the rounding.
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_max_pool_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 6, 6))
    network, y = Tape.record(lambda t: max_pool(t.input(x), 3, 2), element=f64)
    got = network.forward(network.parameters()).of(y).numpy()
    windows = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))[:, :, ::2, ::2]
    assert np.array_equal(got, windows.max(axis=(4, 5)))


def test_batch_norm_forms_match_numpy() -> None:
    rng = np.random.default_rng(2)
    x, scale, shift = rng.standard_normal((5, 3)), rng.standard_normal(3), rng.standard_normal(3)

    def build(t: Tape) -> tuple[Value, Value, Value, Value]:
        xs, g, s = t.input(x), t.parameter(scale), t.parameter(shift)
        training = batch_norm_training(xs, g, s, epsilon=1e-3)
        inference = batch_norm(xs, g, s, 1e-3, mean=t.leaf(np.ones(3)), variance=t.leaf(np.full(3, 4.0)))
        return training.output, training.mean, training.variance, inference

    network, (out, mean, variance, inference) = Tape.record(build, element=f64)
    run = network.forward(network.parameters())
    expected_mean, expected_var = x.mean(0), x.var(0)
    np.testing.assert_allclose(run.of(mean).numpy(), expected_mean, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(run.of(variance).numpy(), expected_var, rtol=1e-13, atol=1e-15)
    expected = (x - expected_mean) / np.sqrt(expected_var + 1e-3) * scale + shift
    # f64 throughout; differences are reassociation of 5-term sums only.
    np.testing.assert_allclose(run.of(out).numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run.of(inference).numpy(), (x - 1.0) / np.sqrt(4.0 + 1e-3) * scale + shift, rtol=1e-14)


def test_conv_gradient_matches_central_differences() -> None:
    rng = np.random.default_rng(4)
    x, k = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((2, 2, 3, 3))

    def build(t: Tape) -> tuple[Value, Value]:
        kernel = t.parameter(k)
        y = max_pool(conv2d(t.input(x), kernel, padding=1), 2)
        return kernel, (y * y).sum()

    network, (kernel, loss) = Tape.record(build, element=f64)
    grad = network.forward(network.parameters()).backward(loss).of(kernel).numpy()

    def value(kk: Array) -> float:
        table = network.parameters().with_payloads([(kernel, Tensor(kk, element=f64))])
        return network.forward(table).of(loss).scalar()

    index = (1, 0, 2, 1)
    step = np.zeros_like(k)
    step[index] = 1e-6
    numeric = (value(k + step) - value(k - step)) / 2e-6
    # Central differences in f64 with h=1e-6: truncation and rounding stay below 1e-5 here.
    assert abs(numeric - grad[index]) < 1e-5


def test_bad_arguments_name_the_line() -> None:
    with pytest.raises(ShapeMismatchError, match=r"test_functional\.py:\d+"):
        Tape.record(lambda t: conv2d(t.input(np.zeros((1, 2, 4, 4))), t.parameter(np.zeros((1, 3, 2, 2)))))
    with pytest.raises(ShapeMismatchError):
        Tape.record(lambda t: conv2d(t.input(np.zeros((1, 1, 2, 2))), t.parameter(np.zeros((1, 1, 3, 3)))))
    with pytest.raises(InvalidArgumentError):
        Tape.record(lambda t: conv2d(t.input(np.zeros((1, 1, 4, 4))), t.parameter(np.zeros((1, 1, 2, 2))), stride=0))
    with pytest.raises(InvalidArgumentError):
        Tape.record(lambda t: max_pool(t.input(np.zeros((1, 1, 4, 4))), 1))
    with pytest.raises(ShapeMismatchError):
        Tape.record(lambda t: max_pool(t.input(np.zeros((4, 4))), 2))
    with pytest.raises(ShapeMismatchError):
        Tape.record(lambda t: batch_norm(t.input(np.zeros((4, 3))), t.parameter(np.ones(2)), t.parameter(np.zeros(3))))
    with pytest.raises(InvalidArgumentError):
        Tape.record(
            lambda t: batch_norm(
                t.input(np.zeros((4, 3))), t.parameter(np.ones(3)), t.parameter(np.zeros(3)), mean=t.leaf(np.zeros(3))
            )
        )
