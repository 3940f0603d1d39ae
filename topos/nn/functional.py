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

from topos import InvalidArgumentError, Shape, ShapeMismatchError, Value
from topos.errors import user_site
from topos.nn.arguments import (
    Padding2d,
    Pair,
    check_bias,
    epsilon_of,
    int_pair,
    pad_constant,
    pad_zeros,
    padding2d,
    positive_integer,
    recorded_values,
)
from topos.nn.module import facade

__all__ = [
    "BatchNorm2dOutput",
    "BatchNormOutput",
    "avg_pool2d",
    "batch_norm",
    "batch_norm2d",
    "batch_norm2d_training",
    "batch_norm_training",
    "conv1d",
    "conv2d",
    "conv_transpose2d",
    "group_norm",
    "layer_norm",
    "max_pool",
    "max_pool2d",
    "pad",
    "running_average",
]


@facade
def conv2d(
    x: Value,
    kernel: Value,
    bias: Value | None = None,
    stride: Pair = 1,
    padding: Padding2d = 0,
    dilation: Pair = 1,
    groups: int = 1,
) -> Value:
    """2-D cross-correlation (what deep-learning libraries call convolution).

    ``stride`` and ``dilation`` take an int or ``(h, w)``; ``padding`` an int, ``(h, w)`` or
    ``((top, bottom), (left, right))`` (zeros); ``groups`` splits channels and filters into
    that many independent convolutions, as PyTorch: ``kernel [F, C / groups, kh, kw]``.
    With groups 1 the patches meet the kernel in one product; with more, in one batched
    product over the groups.

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
    recorded_values("conv2d", x=x, kernel=kernel, bias=bias)
    sh, sw = int_pair("stride", stride, 1)
    dh, dw = int_pair("dilation", dilation, 1)
    (top, bottom), (left, right) = padding2d(padding)
    positive_integer("groups", groups)
    if x.rank != 4 or kernel.rank != 4:
        raise ShapeMismatchError(
            f"{user_site()}: conv2d takes x [B, C, H, W] and kernel [F, C, kh, kw]; got %{x.index}{x.shape} "
            f"and %{kernel.index}{kernel.shape}"
        )
    batch, channels, height, width = x.shape.axes
    filters, kernel_channels, kh, kw = kernel.shape.axes
    if channels % groups or filters % groups:
        raise ShapeMismatchError(
            f"{user_site()}: conv2d groups={groups} must divide the channels of x %{x.index}{x.shape} "
            f"and the filters of kernel %{kernel.index}{kernel.shape}"
        )
    if kernel_channels * groups != channels:
        raise ShapeMismatchError(
            f"{user_site()}: conv2d kernel %{kernel.index}{kernel.shape} expects {kernel_channels * groups} channels "
            f"(groups={groups}), x %{x.index}{x.shape} has {channels}"
        )
    check_bias("conv2d", bias, filters)
    padded_h, padded_w = height + top + bottom, width + left + right
    if dh * (kh - 1) + 1 > padded_h or dw * (kw - 1) + 1 > padded_w:
        raise ShapeMismatchError(
            f"{user_site()}: conv2d window {kh}x{kw} (dilation {dh}x{dw}) does not fit x %{x.index}{x.shape} "
            f"with padding {padding}"
        )
    source = pad_zeros(pad_zeros(x, 2, top, bottom), 3, left, right)
    # The default (dilation 1) records Unfold(.., 1) exactly as before, so fusion still matches.
    windows = source.unfold(2, kh, sh, dh).unfold(4, kw, sw, dw)
    out_h, out_w = windows.shape[2], windows.shape[4]
    rows = batch * out_h * out_w
    if groups > 1:
        return _grouped(windows, kernel, bias, groups)
    depth = channels * kh * kw
    patches = windows.permute((0, 2, 4, 1, 3, 5)).reshape((rows, depth))
    product = patches.matmul(kernel.reshape((filters, depth)).transpose())
    if bias is not None:
        product = product + bias.broadcast_along(0, rows)
    return product.reshape((batch, out_h, out_w, filters)).permute((0, 3, 1, 2))


def _grouped(windows: Value, kernel: Value, bias: Value | None, groups: int) -> Value:
    """Windows ``[B, C, OH, kh, OW, kw]`` against a grouped kernel, one batched product."""
    batch, channels, out_h, kh, out_w, kw = windows.shape.axes
    filters = kernel.shape[0]
    per_group, per_filters = channels // groups, filters // groups
    rows, depth = batch * out_h * out_w, per_group * kh * kw
    split = windows.reshape((batch, groups, per_group, out_h, kh, out_w, kw))
    patches = split.permute((1, 0, 3, 5, 2, 4, 6)).reshape((groups, rows, depth))
    weights = kernel.reshape((groups, per_filters, depth)).permute((0, 2, 1))
    product = patches.matmul(weights)
    if bias is not None:
        product = product + bias.reshape((groups, per_filters)).broadcast_along(1, rows)
    grouped = product.reshape((groups, batch, out_h, out_w, per_filters)).permute((1, 0, 4, 2, 3))
    return grouped.reshape((batch, filters, out_h, out_w))


@facade
def conv1d(
    x: Value,
    kernel: Value,
    bias: Value | None = None,
    stride: int = 1,
    padding: int | tuple[int, int] = 0,
    dilation: int = 1,
    groups: int = 1,
) -> Value:
    """1-D cross-correlation of ``x [B, C, L]`` with ``kernel [F, C / groups, k]``: conv2d over height 1.

    ``padding`` is an int or ``(left, right)``. Example:
        >>> import numpy as np
        >>> from topos import Tape, f64
        >>> def build(t):
        ...     return conv1d(t.input(np.arange(4.0).reshape(1, 1, 4)), t.parameter(np.ones((1, 1, 2))))
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[[1.0, 3.0, 5.0]]]
    """
    recorded_values("conv1d", x=x, kernel=kernel, bias=bias)
    if x.rank != 3 or kernel.rank != 3:
        raise ShapeMismatchError(
            f"{user_site()}: conv1d takes x [B, C, L] and kernel [F, C, k]; got %{x.index}{x.shape} "
            f"and %{kernel.index}{kernel.shape}"
        )
    sides = int_pair("padding", padding, 0)
    positive_integer("dilation", dilation)
    batch, channels, length = x.shape.axes
    filters, kernel_channels, size = kernel.shape.axes
    # Checked here so that the refusal speaks of conv1d's shapes, not of the conv2d it becomes.
    if dilation * (size - 1) + 1 > length + sides[0] + sides[1]:
        raise ShapeMismatchError(
            f"{user_site()}: conv1d window {size} (dilation {dilation}) does not fit x %{x.index}{x.shape} "
            f"with padding {padding!r}"
        )
    flat = conv2d(
        x.reshape((batch, channels, 1, length)),
        kernel.reshape((filters, kernel_channels, 1, size)),
        bias,
        stride=(1, stride),
        padding=((0, 0), sides),
        dilation=(1, dilation),
        groups=groups,
    )
    return flat.reshape((batch, filters, flat.shape[3]))


@facade
def conv_transpose2d(
    x: Value,
    kernel: Value,
    bias: Value | None = None,
    stride: Pair = 1,
    padding: Pair = 0,
    output_padding: Pair = 0,
    dilation: Pair = 1,
    groups: int = 1,
) -> Value:
    """Transposed 2-D convolution: the adjoint of :func:`conv2d` in its input, as PyTorch's.

    ``x [B, C, H, W]``, ``kernel [C, F / groups, kh, kw]`` (PyTorch's ConvTranspose layout),
    optional ``bias [F]`` -> ``[B, F, (H - 1) s - 2 p + d (kh - 1) + output_padding + 1, ...]``.
    Recorded as one product ``[B*H*W, C] x [C, F*kh*kw]`` whose windows two Folds sum
    back onto the (padded) output, which ``padding`` then trims. With ``groups`` > 1 the
    channels split into that many independent transposed convolutions (group ``g`` maps
    input channels ``g C/groups ...`` to output channels ``g F/groups ...``), met in one
    batched product over the groups.

    Example:
        >>> import numpy as np
        >>> from topos import Tape, f64
        >>> def build(t):
        ...     return conv_transpose2d(t.input(np.ones((1, 1, 2, 2))), t.parameter(np.ones((1, 1, 2, 2))))
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[[[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]]]
    """
    recorded_values("conv_transpose2d", x=x, kernel=kernel, bias=bias)
    sh, sw = int_pair("stride", stride, 1)
    ph, pw = int_pair("padding", padding, 0)
    oh_extra, ow_extra = int_pair("output_padding", output_padding, 0)
    dh, dw = int_pair("dilation", dilation, 1)
    positive_integer("groups", groups)
    if x.rank != 4 or kernel.rank != 4 or kernel.shape[0] != x.shape[1]:
        raise ShapeMismatchError(
            f"{user_site()}: conv_transpose2d takes x [B, C, H, W] and kernel [C, F / groups, kh, kw]; got "
            f"%{x.index}{x.shape} and %{kernel.index}{kernel.shape}"
        )
    if x.shape[1] % groups:
        raise ShapeMismatchError(
            f"{user_site()}: conv_transpose2d groups={groups} must divide the channels of x %{x.index}{x.shape} "
            f"(kernel %{kernel.index}{kernel.shape})"
        )
    if oh_extra >= max(sh, dh) or ow_extra >= max(sw, dw):
        raise InvalidArgumentError(
            f"{user_site()}: conv_transpose2d output_padding {output_padding!r} must be below the stride or the dilation"
        )
    batch, channels, height, width = x.shape.axes
    _, per_filters, kh, kw = kernel.shape.axes
    filters = per_filters * groups
    check_bias("conv_transpose2d", bias, filters)
    full_h = (height - 1) * sh + dh * (kh - 1) + 1 + oh_extra
    full_w = (width - 1) * sw + dw * (kw - 1) + 1 + ow_extra
    out_h, out_w = full_h - 2 * ph, full_w - 2 * pw
    if out_h < 1 or out_w < 1:
        raise ShapeMismatchError(
            f"{user_site()}: conv_transpose2d padding {padding!r} leaves no output for x %{x.index}{x.shape}"
        )
    rows = x.permute((0, 2, 3, 1)).reshape((batch * height * width, channels))
    if groups == 1:
        spread = rows.matmul(kernel.reshape((channels, filters * kh * kw)))
        windows = spread.reshape((batch, height, width, filters, kh, kw)).permute((0, 3, 1, 4, 2, 5))
    else:
        windows = _grouped_transpose(rows, kernel, groups, (batch, height, width))
    # Fold needs the windows to tile exactly; output_padding widens the extent past the last window.
    summed = _fold(_fold(windows, 4, kw, sw, dw, full_w), 2, kh, sh, dh, full_h)
    trimmed = summed.narrow(2, ph, out_h).narrow(3, pw, out_w)
    if bias is not None:
        trimmed = trimmed + bias.reshape((1, filters, 1, 1)).broadcast_to(trimmed.shape)
    return trimmed


def _grouped_transpose(rows: Value, kernel: Value, groups: int, image: tuple[int, int, int]) -> Value:
    """Rows ``[B*H*W, C]`` against a grouped ``[C, F / groups, kh, kw]`` kernel: windows ``[B, F, H, kh, W, kw]``."""
    batch, height, width = image
    channels, per_filters, kh, kw = kernel.shape.axes
    per_group = channels // groups
    split = rows.reshape((rows.shape[0], groups, per_group)).permute((1, 0, 2))
    product = split.matmul(kernel.reshape((groups, per_group, per_filters * kh * kw)))
    windows = product.reshape((groups, batch, height, width, per_filters, kh, kw)).permute((1, 0, 4, 2, 5, 3, 6))
    return windows.reshape((batch, groups * per_filters, height, kh, width, kw))


def _fold(windows: Value, axis: int, size: int, step: int, dilation: int, extent: int) -> Value:
    """Sum windows back onto ``extent``; positions past the last window (output padding) stay 0."""
    reach = (windows.shape[axis] - 1) * step + dilation * (size - 1) + 1
    folded = windows.fold(axis, size, step, dilation, reach)
    return folded if reach == extent else folded.pad(axis, 0, extent)


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
    recorded_values("max_pool", x=x)
    step = size if stride is None else stride
    positive_integer("size", size, 2)
    positive_integer("stride", step)
    if x.rank != 4:
        raise ShapeMismatchError(f"{user_site()}: max_pool takes [B, C, H, W]; got %{x.index}{x.shape}")
    height, width = x.shape[2], x.shape[3]
    if size > height or size > width:
        raise ShapeMismatchError(f"{user_site()}: max_pool window {size} does not fit %{x.index}{x.shape}")
    return _window_maximum(x.unfold(2, size, step).unfold(4, size, step))


def _window_maximum(windows: Value) -> Value:
    """The maximum of each window of ``windows [B, C, OH, kh, OW, kw]`` as ``[B, C, OH, OW]``.

    Both max-pools record it alike: each window flattened into lanes along axis 4, then a
    left-to-right ``maximum`` over the lanes, the chain the reduce-window idiom recognizes.
    """
    batch, channels, out_h, kh, out_w, kw = windows.shape.axes
    lanes = windows.permute((0, 1, 2, 4, 3, 5)).reshape((batch, channels, out_h, out_w, kh * kw))
    running = lanes.narrow(4, 0, 1)
    for lane in range(1, kh * kw):
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
    recorded_values("batch_norm", x=x, scale=scale, shift=shift)
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
    recorded_values("batch_norm", x=x, scale=scale, shift=shift, mean=mean, variance=variance)
    epsilon = epsilon_of(epsilon, "batch_norm")
    if (mean is None) != (variance is None):
        raise InvalidArgumentError(f"{user_site()}: batch_norm needs both mean and variance, or neither")
    if mean is None or variance is None:
        return batch_norm_training(x, scale, shift, epsilon).output
    batch, _ = _check_norm(x, ("scale", scale), ("shift", shift), ("mean", mean), ("variance", variance))
    return _normalize(x, mean, variance, scale, shift, epsilon, batch)


def _windows2d(
    what: str, x: Value, window: Pair, stride: Pair | None, padding: Pair, dilation: Pair, fit: bool = True
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Checked window, stride (default: the window), padding and dilation pairs over ``[B, C, H, W]``.

    ``fit=False`` leaves the window's fit to a caller whose padding differs per side.
    """
    recorded_values(what, x=x)
    kh, kw = int_pair("window", window, 1)
    sh, sw = (kh, kw) if stride is None else int_pair("stride", stride, 1)
    ph, pw = int_pair("padding", padding, 0)
    dh, dw = int_pair("dilation", dilation, 1)
    if x.rank != 4:
        raise ShapeMismatchError(f"{user_site()}: {what} takes [B, C, H, W]; got %{x.index}{x.shape}")
    if 2 * ph > kh or 2 * pw > kw:
        raise InvalidArgumentError(f"{user_site()}: {what} padding {padding!r} must be at most half the window {window!r}")
    if fit and (dh * (kh - 1) + 1 > x.shape[2] + 2 * ph or dw * (kw - 1) + 1 > x.shape[3] + 2 * pw):
        raise ShapeMismatchError(f"{user_site()}: {what} window {window!r} does not fit %{x.index}{x.shape}")
    return (kh, kw), (sh, sw), (ph, pw), (dh, dw)


@facade
def max_pool2d(
    x: Value,
    window: Pair,
    stride: Pair | None = None,
    padding: Padding2d = 0,
    dilation: Pair = 1,
    ceil_mode: bool = False,
) -> Value:
    """Max over ``window`` (an int or ``(kh, kw)``) every ``stride`` (default the window) of ``[B, C, H, W]``.

    ``padding`` (``p``, ``(ph, pw)`` or ``((top, bottom), (left, right))``) adds ``-inf``
    around the input, as ``F.pad(x, ..., value=-inf)`` then a pool would; each side at most
    half the window, so a window never holds only padding. ``ceil_mode`` keeps a last,
    partial window wherever it starts inside the input or its leading padding (PyTorch's
    rule), reading ``-inf`` past the end. Ties: the gradient goes to the first maximum in
    row-major window order, as jax's reduce_window. A square window without padding or
    dilation records exactly :func:`max_pool`'s chain.

    Example:
        >>> import numpy as np
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: max_pool2d(t.input(np.arange(12.0).reshape(1, 1, 3, 4)), (3, 2), stride=(1, 2)))
        >>> network.forward(network.parameters()).of(y).tolist()
        [[[[9.0, 11.0]]]]
        >>> network, y = Tape.record(lambda t: max_pool2d(t.input(np.arange(9.0).reshape(1, 1, 3, 3)), 2, ceil_mode=True))
        >>> network.forward(network.parameters()).of(y).tolist()
        [[[[4.0, 5.0], [7.0, 8.0]]]]
    """
    (kh, kw), (sh, sw), _, (dh, dw) = _windows2d("max_pool2d", x, window, stride, 0, dilation, fit=False)
    if not isinstance(ceil_mode, bool):
        raise InvalidArgumentError(f"{user_site()}: max_pool2d ceil_mode must be a bool, got {ceil_mode!r}")
    sides = padding2d(padding)
    if any(2 * side > k for pair, k in zip(sides, (kh, kw), strict=True) for side in pair):
        raise InvalidArgumentError(f"{user_site()}: max_pool2d padding {padding!r} must be at most half the window {window!r}")
    pairs = [(0, 0), (0, 0)]
    for extent, size, step, gap, (before, after) in zip(x.shape.axes[2:], (kh, kw), (sh, sw), (dh, dw), sides, strict=True):
        span = gap * (size - 1) + 1
        total = extent + before + after
        if span > total:
            raise ShapeMismatchError(f"{user_site()}: max_pool2d window {window!r} does not fit %{x.index}{x.shape}")
        count = -(-(total - span) // step) + 1 if ceil_mode else (total - span) // step + 1
        if ceil_mode and (count - 1) * step >= extent + before:
            count -= 1
        pairs.append((before, after + max(0, (count - 1) * step + span - total)))
    source = pad_constant(x, pairs, -math.inf)
    return _window_maximum(source.unfold(2, kh, sh, dh).unfold(4, kw, sw, dw))


def _pool_extent(extent: int, size: int, step: int, padding: int, ceil_mode: bool) -> int:
    """PyTorch's pooled extent: windows that start inside the input or its leading padding."""
    span = extent + 2 * padding - size
    count = (span + step - 1) // step + 1 if ceil_mode else span // step + 1
    if ceil_mode and (count - 1) * step >= extent + padding:
        count -= 1
    return count


def _divisors(extent: int, size: int, step: int, padding: int, count: int, include_pad: bool) -> np.ndarray:
    """Per output position along one axis, how many positions PyTorch's average divides by.

    A window counts the padding it covers (``include_pad``) but never what lies past the
    trailing padding, where ceil mode lets the last window reach; otherwise only input positions.
    """
    start = np.arange(count) * step - padding
    end = np.minimum(start + size, extent + padding)
    if include_pad:
        return (end - start).astype(np.float64)
    return (np.minimum(end, extent) - np.maximum(start, 0)).astype(np.float64)


@facade
def avg_pool2d(
    x: Value,
    window: Pair,
    stride: Pair | None = None,
    padding: Pair = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Value:
    """Mean over ``window`` every ``stride`` of ``[B, C, H, W]``, with PyTorch's divisors.

    ``padding`` adds zeros on each side (at most half the window). ``count_include_pad``
    (default, as PyTorch) divides every window by its size, padding included;
    ``count_include_pad=False`` divides by the input positions a window covers.
    ``ceil_mode`` keeps a last, partial window wherever it starts inside the input or its
    leading padding; it divides by what it covers up to the trailing padding, never past.
    A window that divides by its full size everywhere records one constant, as before.

    Example:
        >>> import numpy as np
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: avg_pool2d(t.input(np.arange(16.0).reshape(1, 1, 4, 4)), 2))
        >>> network.forward(network.parameters()).of(y).tolist()
        [[[[2.5, 4.5], [10.5, 12.5]]]]
        >>> network, y = Tape.record(lambda t: avg_pool2d(t.input(np.ones((1, 1, 2, 2))), 2, 1, 1, count_include_pad=False))
        >>> network.forward(network.parameters()).of(y).numpy().ravel().tolist()
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """
    (kh, kw), (sh, sw), (ph, pw), _ = _windows2d("avg_pool2d", x, window, stride, padding, 1)
    for name, flag in (("ceil_mode", ceil_mode), ("count_include_pad", count_include_pad)):
        if not isinstance(flag, (bool, np.bool_)):
            raise InvalidArgumentError(f"{user_site()}: avg_pool2d {name} must be True or False, got {flag!r}")
    batch, channels, height, width = x.shape.axes
    out_h = _pool_extent(height, kh, sh, ph, bool(ceil_mode))
    out_w = _pool_extent(width, kw, sw, pw, bool(ceil_mode))
    # Ceil mode's last window may reach past the trailing padding: pad zeros up to its end.
    after_h = max(ph, (out_h - 1) * sh + kh - height - ph)
    after_w = max(pw, (out_w - 1) * sw + kw - width - pw)
    source = pad_zeros(pad_zeros(x, 2, ph, after_h), 3, pw, after_w)
    summed = source.unfold(2, kh, sh).unfold(4, kw, sw).sum_along(5).sum_along(3)
    rows = _divisors(height, kh, sh, ph, out_h, bool(count_include_pad))
    columns = _divisors(width, kw, sw, pw, out_w, bool(count_include_pad))
    if (rows == kh).all() and (columns == kw).all():
        return summed / x.tape.constant(summed.shape, float(kh * kw))
    counts = np.broadcast_to(np.outer(rows, columns), (batch, channels, out_h, out_w))
    return summed / x.tape.leaf(np.ascontiguousarray(counts))


class BatchNorm2dOutput(NamedTuple):
    """The output, the batch mean, the biased variance (used to normalize) and Bessel's unbiased one."""

    output: Value
    mean: Value
    variance: Value
    unbiased_variance: Value


def _channel_rows(x: Value, what: str, **rows: Value | None) -> int:
    recorded_values(what, x=x, **rows)
    if x.rank < 2:
        raise ShapeMismatchError(f"{user_site()}: {what} takes x [N, C, ...]; got %{x.index}{x.shape}")
    channels = x.shape[1]
    for name, value in rows.items():
        if value is not None and value.shape.axes != (channels,):
            raise ShapeMismatchError(
                f"{user_site()}: {what} {name} %{value.index}{value.shape} must be [{channels}] for x %{x.index}{x.shape}"
            )
    return channels


def _per_channel(row: Value, like: Shape) -> Value:
    """A ``[C]`` row spread over ``[N, C, ...]``."""
    return row.reshape((1, row.shape[0], *([1] * (like.rank - 2)))).broadcast_to(like)


def _channels_last(x: Value) -> Value:
    """``[N, C, ...]`` as ``[C, N * ...]`` rows, one per channel."""
    moved = x.permute((1, 0, *range(2, x.rank)))
    return moved.reshape((x.shape[1], x.shape.volume // x.shape[1]))


@facade
def batch_norm2d_training(x: Value, scale: Value, shift: Value, epsilon: float = 1e-5) -> BatchNorm2dOutput:
    """Normalize ``x [N, C, ...]`` per channel over every other axis with the batch statistics.

    Returns the output, the mean, the biased variance it divided by, and the unbiased
    (Bessel-corrected, ``n / (n - 1)``) variance that PyTorch keeps as the running one; fold
    them into running statistics with :func:`running_average`.

    Example:
        >>> import numpy as np
        >>> from topos import Tape, f64
        >>> def build(t):
        ...     return batch_norm2d_training(t.input(np.array([1.0, 3.0]).reshape(2, 1, 1, 1)), t.parameter([1.0]), t.parameter([0.0]), 0.0)
        >>> network, (y, mean, variance, unbiased) = Tape.record(build, element=f64)
        >>> run = network.forward(network.parameters())
        >>> run.of(y).numpy().ravel().tolist(), run.of(unbiased).tolist()
        ([-1.0, 1.0], [2.0])
    """
    epsilon = epsilon_of(epsilon, "batch_norm2d")
    _channel_rows(x, "batch_norm2d", scale=scale, shift=shift)
    rows = _channels_last(x)
    count = rows.shape[1]
    if count < 2:
        raise ShapeMismatchError(f"{user_site()}: batch_norm2d needs at least 2 values per channel; x %{x.index}{x.shape}")
    mean = rows.mean_along(1)
    centered = x - _per_channel(mean, x.shape)
    squares = _channels_last(centered * centered).sum_along(1)
    variance = squares / x.tape.constant(squares.shape, float(count))
    unbiased = squares / x.tape.constant(squares.shape, float(count - 1))
    normalized = centered / _per_channel((variance + epsilon).sqrt(), x.shape)
    output = normalized * _per_channel(scale, x.shape) + _per_channel(shift, x.shape)
    return BatchNorm2dOutput(output, mean, variance, unbiased)


@facade
def batch_norm2d(
    x: Value,
    scale: Value,
    shift: Value,
    epsilon: float = 1e-5,
    mean: Value | None = None,
    variance: Value | None = None,
) -> Value:
    """Batch normalization of ``x [N, C, ...]`` per channel: training form, or with given statistics."""
    epsilon = epsilon_of(epsilon, "batch_norm2d")
    _channel_rows(x, "batch_norm2d", scale=scale, shift=shift, mean=mean, variance=variance)
    if (mean is None) != (variance is None):
        raise InvalidArgumentError(f"{user_site()}: batch_norm2d needs both mean and variance, or neither")
    if mean is None or variance is None:
        return batch_norm2d_training(x, scale, shift, epsilon).output
    normalized = (x - _per_channel(mean, x.shape)) / _per_channel((variance + epsilon).sqrt(), x.shape)
    return normalized * _per_channel(scale, x.shape) + _per_channel(shift, x.shape)


@facade
def running_average(running: Value, batch: Value, momentum: float = 0.1) -> Value:
    """``(1 - momentum) * running + momentum * batch``: PyTorch's running-statistics update."""
    recorded_values("running_average", running=running, batch=batch)
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or not 0.0 <= momentum <= 1.0:
        raise InvalidArgumentError(f"{user_site()}: running_average: momentum must be in [0, 1], got {momentum!r}")
    if running.shape != batch.shape:
        raise ShapeMismatchError(
            f"{user_site()}: running_average: %{running.index}{running.shape} and %{batch.index}{batch.shape} differ"
        )
    return running * (1.0 - float(momentum)) + batch * float(momentum)


def _normalize_rows(rows: Value, epsilon: float) -> Value:
    """Each row of ``[R, K]`` to mean 0 and biased variance 1 (plus epsilon)."""
    width = rows.shape[1]
    centered = rows - rows.mean_along(1).broadcast_along(1, width)
    variance = (centered * centered).mean_along(1)
    return centered / (variance + epsilon).sqrt().broadcast_along(1, width)


@facade
def group_norm(x: Value, groups: int, scale: Value, shift: Value, epsilon: float = 1e-5) -> Value:
    """GroupNorm: ``x [N, C, ...]`` normalized over each group of ``C / groups`` channels and all
    trailing axes (biased variance), then scaled and shifted per channel.

    Example:
        >>> import numpy as np
        >>> from topos import Tape, f64
        >>> def build(t):
        ...     return group_norm(t.input(np.array([[1.0, 3.0]])), 1, t.parameter([1.0, 1.0]), t.parameter([0.0, 0.0]), 0.0)
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[-1.0, 1.0]]
    """
    epsilon = epsilon_of(epsilon, "group_norm")
    channels = _channel_rows(x, "group_norm", scale=scale, shift=shift)
    positive_integer("groups", groups)
    if channels % groups:
        raise ShapeMismatchError(f"{user_site()}: group_norm groups={groups} must divide the channels of %{x.index}{x.shape}")
    rows = x.reshape((x.shape[0] * groups, x.shape.volume // (x.shape[0] * groups)))
    normalized = _normalize_rows(rows, epsilon).reshape(x.shape)
    return normalized * _per_channel(scale, x.shape) + _per_channel(shift, x.shape)


@facade
def layer_norm(x: Value, scale: Value, shift: Value, epsilon: float = 1e-5) -> Value:
    """LayerNorm over the trailing axes that ``scale`` and ``shift`` span (biased variance).

    ``scale`` and ``shift`` have the shape of those trailing axes (PyTorch's
    ``normalized_shape``), so ``[C, H, W]`` parameters normalize each sample of ``[N, C, H, W]``.

    Example:
        >>> import numpy as np
        >>> from topos import Tape, f64
        >>> def build(t):
        ...     return layer_norm(t.input(np.array([[[1.0], [3.0]]])), t.parameter([[1.0], [1.0]]), t.parameter([[0.0], [0.0]]), 0.0)
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[[-1.0], [1.0]]]
    """
    recorded_values("layer_norm", x=x, scale=scale, shift=shift)
    epsilon = epsilon_of(epsilon, "layer_norm")
    trailing = scale.shape.axes
    if shift.shape != scale.shape or scale.rank == 0 or x.shape.axes[x.rank - scale.rank :] != trailing or scale.rank > x.rank:
        raise ShapeMismatchError(
            f"{user_site()}: layer_norm scale %{scale.index}{scale.shape} and shift %{shift.index}{shift.shape} "
            f"must both be the trailing axes of x %{x.index}{x.shape}"
        )
    width = scale.shape.volume
    normalized = _normalize_rows(x.reshape((x.shape.volume // width, width)), epsilon).reshape(x.shape)
    return normalized * scale.broadcast_to(x.shape) + shift.broadcast_to(x.shape)


def _concatenate(pieces: list[Value], axis: int) -> Value:
    """Pieces side by side along ``axis``: each padded with zeros to the total, then summed.

    Every position holds one piece's value plus zeros, so it is exact (a ``-0`` becomes ``+0``).
    """
    total = sum(piece.shape[axis] for piece in pieces)
    start, joined = 0, None
    for piece in pieces:
        placed = piece if piece.shape[axis] == total else piece.pad(axis, start, total)
        joined = placed if joined is None else joined + placed
        start += piece.shape[axis]
    assert joined is not None
    return joined


def _edge_pieces(x: Value, axis: int, before: int, after: int, mode: str) -> list[Value]:
    extent = x.shape[axis]
    if mode == "reflect":
        if before >= extent or after >= extent:
            raise ShapeMismatchError(
                f"{user_site()}: pad mode 'reflect' needs widths below the extent {extent} of axis {axis} "
                f"of %{x.index}{x.shape}; got ({before}, {after})"
            )
        left = [x.narrow(axis, i, 1) for i in range(before, 0, -1)]
        right = [x.narrow(axis, extent - 2 - i, 1) for i in range(after)]
        return [*left, x, *right]
    if mode == "replicate":
        edge_left = x.narrow(axis, 0, 1).squeeze(axis)
        edge_right = x.narrow(axis, extent - 1, 1).squeeze(axis)
        left = [edge_left.broadcast_along(axis, before)] if before else []
        right = [edge_right.broadcast_along(axis, after)] if after else []
        return [*left, x, *right]
    # circular
    if before > extent or after > extent:
        raise ShapeMismatchError(
            f"{user_site()}: pad mode 'circular' needs widths at most the extent {extent} of axis {axis} "
            f"of %{x.index}{x.shape}; got ({before}, {after})"
        )
    left = [x.narrow(axis, extent - before, before)] if before else []
    right = [x.narrow(axis, 0, after)] if after else []
    return [*left, x, *right]


PAD_MODES = ("constant", "reflect", "replicate", "circular")


@facade
def pad(x: Value, widths: list[tuple[int, int]] | tuple[tuple[int, int], ...], mode: str = "constant", value: float = 0.0) -> Value:
    """Pad every axis by ``widths[axis] = (before, after)``, as numpy's ``pad``.

    Modes: ``constant`` (``value``; 0 is one Pad per axis), ``reflect`` (mirror without the
    edge), ``replicate`` (repeat the edge; numpy's ``edge``) and ``circular`` (wrap; numpy's
    ``wrap``). The edge modes place slices side by side by padding each with zeros and
    adding, so a ``-0`` in ``x`` comes out ``+0``.

    Example:
        >>> from topos import Tape, f64
        >>> network, y = Tape.record(lambda t: pad(t.input([1.0, 2.0, 3.0]), [(2, 1)], "reflect"), element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [3.0, 2.0, 1.0, 2.0, 3.0, 2.0]
    """
    recorded_values("pad", x=x)
    if mode not in PAD_MODES:
        raise InvalidArgumentError(f"{user_site()}: pad mode must be one of {', '.join(PAD_MODES)}; got {mode!r}")
    if len(widths) != x.rank:
        raise ShapeMismatchError(f"{user_site()}: pad needs one (before, after) per axis of %{x.index}{x.shape}; got {widths!r}")
    pairs = [int_pair("pad width", tuple(side), 0) for side in widths]
    if mode == "constant":
        number = value
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise InvalidArgumentError(f"{user_site()}: pad value must be a number, got {value!r}")
        return pad_constant(x, pairs, float(number))
    result = x
    for axis, (before, after) in enumerate(pairs):
        if before or after:
            result = _concatenate(_edge_pieces(result, axis, before, after, mode), axis)
    return result
