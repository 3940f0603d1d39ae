"""Home kernels: the fused actions a plan elects for matched patterns.

Contract: each kernel computes exactly what its recorded composition computes, with fewer
intermediates, and is bit-identical to that composition under ``Numerics.EXACT``:

- :func:`windowed_product` fills the patch matrix of a convolution (pure data movement, so
  no rounding; filled as its transpose, :func:`patch_columns`, whose rows copy quickly)
  and offers the product to the gemm chain, as the recorded matmul would (fidelity
  *composed*: under Exact the chain declines and the reference product, which reads its
  operands by value, serves). An optional bias is added like the recorded ``Add``.
- :func:`window_kernel_gradient` is a convolution's kernel gradient: the transposed patch
  matrix of the source times the output gradient, offered to the gemm chain as the
  recorded ``matmul(permute(patches), g)`` is (fidelity *composed*).
- :func:`window_input_gradient` is a convolution's input gradient (a transposed
  convolution): the product ``g @ kernel`` offered like the recorded one, then the two
  folds (width, then height) with the reference folds' additions in their order, over
  the product's own layout, and the narrows that undo the padding (fidelity
  *composed*). The gradient stage adds each cotangent to an exact ``+0``; the kernel
  leaves those additions out because every value they touch here comes out of a product
  or a fold that starts from ``+0`` (never ``-0``), and ``+0 + v`` is ``v`` bit for bit
  for every other value, NaN payloads included.
- :func:`max_pooled` walks the pooling lanes in the recorded lane order with the same
  elementwise maximum (fidelity *bit-identical*: maximum never rounds).
- :func:`max_pool_gradient` is a max-pool's source gradient: the maximum rule the gradient
  stage records (``G * step(m, lane)`` to the running maximum ``m``, ``G * (1 - step(m,
  lane))`` to the lane, last lane first, so a tie sends the cotangent to the earliest lane)
  with the same kernels in the same order (the step as a comparison cast to exact 1.0
  and 0.0, the reference step's values), then the two reference folds (fidelity
  *composed*); where the windows tile the source (stride equal to size) each position
  has one term and the folds reduce to placing it. Two recorded steps are left out as identities: the padded lane cotangents
  summed into one ``[..., lanes]`` array (each slot gets one value and ``+0`` elsewhere),
  and the ``+0`` additions around the folds. Both hold because every lane cotangent comes
  out of a recorded ``+0 + v`` (never ``-0``), and a fold starts from ``+0``.
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

from topos.ir.element import ElementType
from topos.ir.numerics import Numerics, current_numerics
from topos.ir.ops import MapOperation
from topos.kernels import dispatch, reference
from topos.kernels.dispatch import Backend, Formula

__all__ = [
    "batch_normalized",
    "max_pool_gradient",
    "max_pooled",
    "patch_columns",
    "window_input_gradient",
    "window_kernel_gradient",
    "windowed_product",
]

Array = np.ndarray[Any, Any]


def patch_columns(source: Array, height: int, width: int, stride: int, padding: int, element: ElementType) -> Array:
    """The transposed im2col matrix ``[C*height*width, B*OH*OW]`` of a ``[B, C, H, W]`` source.

    Row ``(c, i, j)`` holds entry ``(i, j)`` of channel ``c``'s window at every position, so
    each row is filled by one strided copy whose inner run is a whole output row: several
    times quicker than filling the ``[B*OH*OW, C*height*width]`` patches, whose inner run
    is one window row. Its transpose is those patches, value for value.

    Example:
        >>> from topos import f32
        >>> x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
        >>> patch_columns(x, 2, 2, 1, 0, f32).tolist()[0]
        [0.0, 1.0, 3.0, 4.0]
    """
    if padding:
        pad = ((0, 0), (0, 0), (padding, padding), (padding, padding))
        source = np.pad(source, pad, mode="constant", constant_values=np.zeros((), element.dtype))
    batch, channels, rows, columns = source.shape
    out_rows, out_columns = (rows - height) // stride + 1, (columns - width) // stride + 1
    filled = np.empty((channels, height, width, batch, out_rows, out_columns), element.dtype)
    by_channel = source.transpose(1, 0, 2, 3)
    down, across = (out_rows - 1) * stride + 1, (out_columns - 1) * stride + 1
    for i in range(height):
        for j in range(width):
            filled[:, i, j] = by_channel[:, :, i : i + down : stride, j : j + across : stride]
    return filled.reshape(channels * height * width, batch * out_rows * out_columns)


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
    # The patches as the transpose of their columns: the same values (a backend that
    # settles its operands, as the reference does, sees the recorded matrix itself).
    patches = patch_columns(source, height, width, stride, padding, element).T
    product = dispatch.offer_gemm(patches, kernel, element)
    if bias is None:
        return product
    if current_numerics() is Numerics.FAST and not element.widens:
        # As the Fast posture's plain additions do: numpy reads the bias row in place
        # rather than a materialized broadcast (only which NaN payload survives may differ).
        return np.add(product, bias)
    return reference.add(product, np.broadcast_to(bias, product.shape), element)


def window_kernel_gradient(
    source: Array,
    gradient: Array,
    height: int,
    width: int,
    stride: int,
    padding: int,
    element: ElementType,
) -> Array:
    """``patches(source).T @ gradient``: ``[C*height*width, F]`` from ``[B*OH*OW, F]``.

    Example:
        >>> from topos import f64
        >>> x = np.arange(9.0).reshape(1, 1, 3, 3)
        >>> window_kernel_gradient(x, np.ones((4, 1)), 2, 2, 1, 0, f64).ravel().tolist()
        [8.0, 12.0, 20.0, 24.0]
    """
    dispatch.record_service(Formula.WINDOW_KERNEL_GRADIENT, element, Backend.FUSED)
    columns = patch_columns(source, height, width, stride, padding, element)
    return dispatch.offer_gemm(columns, gradient, element)


def window_input_gradient(
    gradient: Array,
    kernel: Array,
    shape: tuple[int, int, int, int],
    height: int,
    width: int,
    stride: int,
    padding: int,
    element: ElementType,
) -> Array:
    """The ``[B, C, H, W]`` gradient of a convolution's source from ``gradient`` ``[B*OH*OW, F]``.

    ``kernel`` is ``[F, C*height*width]``; ``shape`` is the source's (unpadded) shape.

    Example:
        >>> from topos import f64
        >>> g = np.ones((4, 1))
        >>> window_input_gradient(g, np.ones((1, 4)), (1, 1, 3, 3), 2, 2, 1, 0, f64)[0, 0].tolist()
        [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    dispatch.record_service(Formula.WINDOW_INPUT_GRADIENT, element, Backend.FUSED)
    batch, channels, rows, columns = shape
    padded_rows, padded_columns = rows + 2 * padding, columns + 2 * padding
    out_rows = (padded_rows - height) // stride + 1
    out_columns = (padded_columns - width) // stride + 1
    product = np.ascontiguousarray(dispatch.offer_gemm(gradient, kernel, element))
    accumulator = element.accumulator
    # The product's own [B, OH, OW, C, kh, kw] layout, read in place: the reference folds
    # of the channel-major transpose would first copy it whole into C order. Each position
    # still takes its windows in ascending order from a +0 start (lanes last to first, as
    # the reference walks them), and the width fold is rounded to storage before the height
    # fold reads it, so the bits are the reference folds'.
    windows = product.reshape(batch, out_rows, out_columns, channels, height, width).astype(accumulator, copy=False)
    across = np.zeros((batch, out_rows, padded_columns, channels, height), accumulator)
    reach = (out_columns - 1) * stride + 1
    for lane in range(width - 1, -1, -1):
        across[:, :, lane : lane + reach : stride] += windows[..., lane]
    across = across.astype(element.dtype, copy=False).astype(accumulator, copy=False)
    down = np.zeros((batch, padded_rows, padded_columns, channels), accumulator)
    reach = (out_rows - 1) * stride + 1
    for lane in range(height - 1, -1, -1):
        down[:, lane : lane + reach : stride] += across[..., lane]
    image = down[:, padding : padding + rows, padding : padding + columns].transpose(0, 3, 1, 2)
    return np.ascontiguousarray(image.astype(element.dtype, copy=False))


def max_pooled(source: Array, size: int, stride: int, element: ElementType) -> Array:
    """Max-pool ``[B, C, H, W]`` over square windows, folding lanes left to right."""
    dispatch.record_service(Formula.REDUCE_WINDOW, element, Backend.FUSED)
    windows = sliding_window_view(source, (size, size), axis=(2, 3))[:, :, ::stride, ::stride]
    running = windows[..., 0, 0]
    for lane in range(1, size * size):
        running = reference.maximum(running, windows[..., lane // size, lane % size], element)
    return np.ascontiguousarray(running)


def max_pool_gradient(source: Array, gradient: Array, size: int, stride: int, element: ElementType) -> Array:
    """The ``[B, C, H, W]`` gradient of :func:`max_pooled` ``source`` from ``gradient`` ``[B, C, OH, OW]``.

    Example:
        >>> from topos import f64
        >>> x = np.array([[[[1.0, 3.0, 3.0], [0.0, 2.0, 3.0]]]])
        >>> max_pool_gradient(x, np.array([[[[10.0, 20.0]]]]), 2, 1, f64)[0, 0].tolist()
        [[0.0, 30.0, 0.0], [0.0, 0.0, 0.0]]
    """
    dispatch.record_service(Formula.REDUCE_WINDOW_GRADIENT, element, Backend.FUSED)
    batch, channels, out_rows, out_columns = gradient.shape
    windows = sliding_window_view(source, (size, size), axis=(2, 3))[:, :, ::stride, ::stride]
    # Lane-major and contiguous (one copy): each lane is one run for the elementwise kernels.
    lanes = np.ascontiguousarray(windows.transpose(4, 5, 0, 1, 2, 3)).reshape(size * size, *gradient.shape)
    running = [lanes[0]]
    for later in lanes[1:-1]:
        running.append(reference.maximum(running[-1], later, element))
    zero, one = np.zeros(gradient.shape, element.dtype), np.ones(gradient.shape, element.dtype)
    rows, columns = source.shape[2:]
    # Every lane cotangent comes out of a ``+0 + v``, so it is never -0 and a fold's own
    # ``+0 + v`` leaves it as it is. Windows that tile the source exactly give each position
    # one term: the lane cotangents are then written straight into the result, whose
    # [B, C, OH, kh, OW, kw] view is the layout the folds would read.
    tiles = stride == size and (rows, columns) == (out_rows * size, out_columns * size)
    result = np.empty(source.shape, element.dtype) if tiles else None
    spread_shape = (batch, channels, out_rows, size, out_columns, size)
    spread = result.reshape(spread_shape) if result is not None else np.empty(spread_shape, element.dtype)
    cotangent = reference.add(zero, gradient, element)
    for lane in range(size * size - 1, 0, -1):
        # The reference step's exact 1.0 and 0.0, without its float64 detour.
        wins = np.greater_equal(running[lane - 1], lanes[lane]).astype(element.dtype)
        lost = reference.mul(cotangent, reference.sub(one, wins, element), element)
        spread[:, :, :, lane // size, :, lane % size] = reference.add(zero, lost, element)
        cotangent = reference.add(zero, reference.mul(cotangent, wins, element), element)
    spread[:, :, :, 0, :, 0] = cotangent
    if result is not None:
        return result
    if stride == size:
        # Tiles with a remainder the windows never reach: the tiled region as above, zeros past it.
        out = np.zeros(source.shape, element.dtype)
        out[:, :, : out_rows * size, : out_columns * size] = spread.reshape(
            batch, channels, out_rows * size, out_columns * size
        )
        return out
    across = reference.fold(spread, 4, size, stride, 1, columns, element)
    return reference.fold(across, 2, size, stride, 1, rows, element)


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
