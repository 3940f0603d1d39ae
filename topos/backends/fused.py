"""Home kernels: the fused actions a plan elects for matched patterns.

Contract: each kernel computes exactly what its recorded composition computes, with fewer
intermediates, and is bit-identical to that composition under ``Numerics.EXACT``:

- :func:`windowed_product` fills the patch matrix of a convolution in one strided copy
  (pure data movement, so no rounding) and offers the product to the gemm chain, exactly
  as the recorded matmul would (fidelity *composed*: under Exact the chain declines and the
  reference product serves). An optional bias is added like the recorded ``Add``.
- :func:`max_pooled` walks the pooling lanes in the recorded lane order with the same
  elementwise maximum (fidelity *bit-identical*: maximum never rounds).
- :func:`batch_normalized` evaluates the normalization diamond in the recorded order with
  the same kernels, returning the output with the batch mean and biased variance it writes
  back into their named slots (fidelity *composed*).

Inputs and outputs are numpy arrays in the element's storage dtype, as in the reference.

Example:
    >>> import numpy as np
    >>> from topos import f32
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> max_pooled(x, 2, 2, f32).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from topos.backends import dispatch, reference
from topos.backends.dispatch import Backend, Formula
from topos.ir.element import ElementType
from topos.ir.ops import MapOperation

__all__ = ["batch_normalized", "max_pooled", "patches", "windowed_product"]

Array = np.ndarray[Any, Any]


def patches(source: Array, height: int, width: int, stride: int, padding: int, element: ElementType) -> Array:
    """The im2col matrix ``[B*OH*OW, C*height*width]`` of a ``[B, C, H, W]`` source."""
    if padding:
        pad = ((0, 0), (0, 0), (padding, padding), (padding, padding))
        source = np.pad(source, pad, mode="constant", constant_values=np.zeros((), element.dtype))
    windows = sliding_window_view(source, (height, width), axis=(2, 3))[:, :, ::stride, ::stride]
    batch, channels, rows, columns = windows.shape[:4]
    ordered = windows.transpose(0, 2, 3, 1, 4, 5)
    return ordered.reshape(batch * rows * columns, channels * height * width)


def windowed_product(
    source: Array,
    kernel: Array,
    bias: Array | None,
    height: int,
    width: int,
    stride: int,
    padding: int,
    element: ElementType,
) -> Array:
    """Convolution as one patch fill and one product: ``patches(source) @ kernel (+ bias)``."""
    dispatch.record_service(Formula.WINDOW_PRODUCT, element, Backend.FUSED)
    product = dispatch.offer_gemm(patches(source, height, width, stride, padding, element), kernel, element)
    if bias is None:
        return product
    return reference.add(product, np.broadcast_to(bias, product.shape), element)


def max_pooled(source: Array, size: int, stride: int, element: ElementType) -> Array:
    """Max-pool ``[B, C, H, W]`` over square windows, folding lanes left to right."""
    dispatch.record_service(Formula.REDUCE_WINDOW, element, Backend.FUSED)
    windows = sliding_window_view(source, (size, size), axis=(2, 3))[:, :, ::stride, ::stride]
    running = windows[..., 0, 0]
    for lane in range(1, size * size):
        running = reference.maximum(running, windows[..., lane // size, lane % size], element)
    return np.ascontiguousarray(running)


def batch_normalized(
    x: Array,
    scale: Array,
    shift: Array,
    epsilon: Array,
    mean_count: Array,
    variance_count: Array,
    element: ElementType,
) -> tuple[Array, Array, Array]:
    """``(output, mean, variance)`` of training-mode batch normalization over axis 0.

    The divisors and epsilon are the recorded leaves' own payloads (shape ``[F]``), so the
    bits follow the recording even where a hand-rolled graph rounded them differently.
    """
    dispatch.record_service(Formula.BATCH_NORM_TRAINING, element, Backend.FUSED)
    shape = x.shape
    mean = reference.div(dispatch.offer_sum_along(x, 0, element), mean_count, element)
    centered = reference.sub(x, np.broadcast_to(mean, shape), element)
    square = reference.mul(centered, centered, element)
    variance = reference.div(dispatch.offer_sum_along(square, 0, element), variance_count, element)
    deviation = reference.map_operation(
        MapOperation.SQRT, reference.add(variance, epsilon, element), element
    )
    normalized = reference.div(centered, np.broadcast_to(deviation, shape), element)
    scaled = reference.mul(normalized, np.broadcast_to(scale, shape), element)
    return reference.add(scaled, np.broadcast_to(shift, shape), element), mean, variance
