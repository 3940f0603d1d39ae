"""Functional idioms recorded through the public surface: convolution, pooling, batch norm.

Contract: each function records ordinary nodes on its input's tape with :class:`~topos.Value`
methods only; nothing here is known to the compiler. The pattern catalog recognizes the
recorded chains by their structure (``topos.stages.fusion``), so a hand-rolled recording
of the same chain fuses exactly like these do, and an unfused plan, the interpreter and
the gradient reading all read them as the primitives they are.

- :func:`conv2d`: ``x [B, C, H, W]``, ``kernel [F, C, kh, kw]`` (PyTorch layout), optional
  ``bias [F]`` -> ``[B, F, OH, OW]``; recorded as zero padding, two unfolds, a permute and
  reshape to patches ``[B*OH*OW, C*kh*kw]``, a product with the kernel reshaped to
  ``[C*kh*kw, F]``, the bias added along rows, then a reshape and permute back.
- :func:`max_pool`: square windows over ``[B, C, H, W]``; a left-to-right ``maximum`` over
  the window lanes.
- :func:`batch_norm`: ``x [N, F]`` normalized over the batch axis with biased variance
  (training form, :func:`batch_norm_training` also returns the batch statistics), or over
  supplied ``mean`` and ``variance`` (inference form).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from topos import InvalidArgumentError, ShapeMismatchError, Value
from topos.errors import user_site
from topos.nn.module import facade

__all__ = ["BatchNormOutput", "batch_norm", "batch_norm_training", "conv2d", "epsilon_of", "max_pool"]


def _positive(name: str, value: int, minimum: int = 1) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InvalidArgumentError(f"{user_site()}: {name} must be an integer >= {minimum}, got {value!r}")


def _values(what: str, **named: Value | None) -> None:
    """Refuse anything but recorded values (``None`` where the argument is optional)."""
    for name, value in named.items():
        if value is not None and not isinstance(value, Value):
            raise InvalidArgumentError(
                f"{user_site()}: {what}: {name} must be a recorded Value, got {type(value).__name__}; "
                "record data first with tape.input(...) or tape.leaf(...)"
            )


def epsilon_of(epsilon: object, what: str) -> float:
    """A norm's epsilon as a float: a finite, non-negative real number (not a bool or text).

    Example:
        >>> epsilon_of(1e-5, "LayerNorm")
        1e-05
    """
    if isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, (int, float, np.integer, np.floating)):
        raise InvalidArgumentError(f"{user_site()}: {what}: epsilon must be a number, got {epsilon!r}")
    value = float(epsilon)
    if not math.isfinite(value) or value < 0.0:
        raise InvalidArgumentError(f"{user_site()}: {what}: epsilon must be finite and >= 0, got {epsilon!r}")
    return value


@facade
def conv2d(x: Value, kernel: Value, bias: Value | None = None, stride: int = 1, padding: int = 0) -> Value:
    """2-D cross-correlation (what deep-learning libraries call convolution).

    Example:
        >>> import numpy as np
        >>> from topos import Tape, f32
        >>> def build(t):
        ...     x = t.input(np.ones((1, 1, 3, 3)))
        ...     return conv2d(x, t.parameter(np.ones((2, 1, 2, 2))))
        >>> network, y = Tape.record(build, element=f32)
        >>> network.forward(network.parameters()).of(y).shape
        Shape([1, 2, 2, 2])
    """
    _values("conv2d", x=x, kernel=kernel, bias=bias)
    _positive("stride", stride)
    _positive("padding", padding, 0)
    if x.rank != 4 or kernel.rank != 4:
        raise ShapeMismatchError(
            f"{user_site()}: conv2d takes x [B, C, H, W] and kernel [F, C, kh, kw]; got %{x.index}{x.shape} "
            f"and %{kernel.index}{kernel.shape}"
        )
    batch, channels, height, width = x.shape.axes
    filters, kernel_channels, kh, kw = kernel.shape.axes
    if kernel_channels != channels:
        raise ShapeMismatchError(
            f"{user_site()}: conv2d kernel %{kernel.index}{kernel.shape} expects {kernel_channels} channels, "
            f"x %{x.index}{x.shape} has {channels}"
        )
    if bias is not None and bias.shape.axes != (filters,):
        raise ShapeMismatchError(f"{user_site()}: conv2d bias %{bias.index}{bias.shape} must be [{filters}]")
    padded_h, padded_w = height + 2 * padding, width + 2 * padding
    if kh > padded_h or kw > padded_w:
        raise ShapeMismatchError(
            f"{user_site()}: conv2d window {kh}x{kw} does not fit x %{x.index}{x.shape} with padding {padding}"
        )
    source = x
    if padding:
        source = source.pad(2, padding, padded_h).pad(3, padding, padded_w)
    windows = source.unfold(2, kh, stride).unfold(4, kw, stride)
    out_h, out_w = windows.shape[2], windows.shape[4]
    rows = batch * out_h * out_w
    depth = channels * kh * kw
    patches = windows.permute((0, 2, 4, 1, 3, 5)).reshape((rows, depth))
    product = patches.matmul(kernel.reshape((filters, depth)).transpose())
    if bias is not None:
        product = product + bias.broadcast_along(0, rows)
    return product.reshape((batch, out_h, out_w, filters)).permute((0, 3, 1, 2))


@facade
def max_pool(x: Value, size: int, stride: int | None = None) -> Value:
    """Max over ``size x size`` windows every ``stride`` (default ``size``) of ``[B, C, H, W]``.

    Example:
        >>> import numpy as np
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: max_pool(t.input(np.arange(16.0).reshape(1, 1, 4, 4)), 2))
        >>> network.forward(network.parameters()).of(y).tolist()
        [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    _values("max_pool", x=x)
    step = size if stride is None else stride
    _positive("size", size, 2)
    _positive("stride", step)
    if x.rank != 4:
        raise ShapeMismatchError(f"{user_site()}: max_pool takes [B, C, H, W]; got %{x.index}{x.shape}")
    batch, channels, height, width = x.shape.axes
    if size > height or size > width:
        raise ShapeMismatchError(f"{user_site()}: max_pool window {size} does not fit %{x.index}{x.shape}")
    windows = x.unfold(2, size, step).unfold(4, size, step)
    out_h, out_w = windows.shape[2], windows.shape[4]
    lanes = windows.permute((0, 1, 2, 4, 3, 5)).reshape((batch, channels, out_h, out_w, size * size))
    running = lanes.narrow(4, 0, 1)
    for lane in range(1, size * size):
        running = running.maximum(lanes.narrow(4, lane, 1))
    return running.reshape((batch, channels, out_h, out_w))


class BatchNormOutput(NamedTuple):
    """The normalized output and the batch statistics it used (for running averages)."""

    output: Value
    mean: Value
    variance: Value


def _check_norm(x: Value, *rows: tuple[str, Value]) -> tuple[int, int]:
    if x.rank != 2:
        raise ShapeMismatchError(f"{user_site()}: batch_norm takes x [N, F]; got %{x.index}{x.shape}")
    batch, features = x.shape.axes
    for name, value in rows:
        if value.shape.axes != (features,):
            raise ShapeMismatchError(
                f"{user_site()}: batch_norm {name} %{value.index}{value.shape} must be [{features}] "
                f"for x %{x.index}{x.shape}"
            )
    return batch, features


def _normalize(
    x: Value, mean: Value, variance: Value, scale: Value, shift: Value, epsilon: float, batch: int
) -> Value:
    centered = x - mean.broadcast_along(0, batch)
    deviation = (variance + epsilon).sqrt()
    normalized = centered / deviation.broadcast_along(0, batch)
    return normalized * scale.broadcast_along(0, batch) + shift.broadcast_along(0, batch)


@facade
def batch_norm_training(x: Value, scale: Value, shift: Value, epsilon: float = 1e-5) -> BatchNormOutput:
    """Normalize over the batch with the batch mean and biased variance; return all three."""
    _values("batch_norm", x=x, scale=scale, shift=shift)
    epsilon = epsilon_of(epsilon, "batch_norm")
    batch, _ = _check_norm(x, ("scale", scale), ("shift", shift))
    mean = x.mean_along(0)
    centered = x - mean.broadcast_along(0, batch)
    variance = (centered * centered).mean_along(0)
    deviation = (variance + epsilon).sqrt()
    normalized = centered / deviation.broadcast_along(0, batch)
    output = normalized * scale.broadcast_along(0, batch) + shift.broadcast_along(0, batch)
    return BatchNormOutput(output, mean, variance)


@facade
def batch_norm(
    x: Value,
    scale: Value,
    shift: Value,
    epsilon: float = 1e-5,
    mean: Value | None = None,
    variance: Value | None = None,
) -> Value:
    """Batch normalization of ``x [N, F]``: training form, or inference form given statistics.

    Example:
        >>> import numpy as np
        >>> from topos import Tape, f64
        >>> def build(t):
        ...     x = t.input(np.array([[1.0], [3.0]]))
        ...     return batch_norm(x, t.parameter([1.0]), t.parameter([0.0]), epsilon=0.0)
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[-1.0], [1.0]]
    """
    _values("batch_norm", x=x, scale=scale, shift=shift, mean=mean, variance=variance)
    epsilon = epsilon_of(epsilon, "batch_norm")
    if (mean is None) != (variance is None):
        raise InvalidArgumentError(f"{user_site()}: batch_norm needs both mean and variance, or neither")
    if mean is None or variance is None:
        return batch_norm_training(x, scale, shift, epsilon).output
    batch, _ = _check_norm(x, ("scale", scale), ("shift", shift), ("mean", mean), ("variance", variance))
    return _normalize(x, mean, variance, scale, shift, epsilon, batch)
