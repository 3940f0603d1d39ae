"""Window products and their gradients: the convolution idioms, their home kernels and raises.

Contract:
- Matches (all share :class:`WindowMatch`'s geometry):

  - :class:`WindowProduct` (convolution): ``reshape(permute(unfold(unfold(pad(pad(x))?))))``
    with permutation ``(0,2,4,1,3,5)`` feeding a rank-2 ``matmul`` with a ``[C*kh*kw, F]``
    kernel, optionally followed by ``Add(product, broadcast_along(bias, 0))``. The patch
    chain (pads, unfolds, permute, reshape) is shared.
  - :class:`WindowKernelGradient` (a convolution's kernel gradient, the training plan's):
    ``matmul(permute(patches), g)`` over the same patch chain (shared), ``[C*kh*kw, F]``.
  - :class:`WindowInputGradient` (a convolution's input gradient, a transposed
    convolution): ``matmul(g, kernel)`` with ``kernel`` ``[F, C*kh*kw]``, a reshape to
    ``[B, OH, OW, C, kh, kw]``, permutation ``(0,3,1,4,2,5)``, a fold along 4 then along 2,
    and for a padded source the narrows along 3 then 2; each step may be wrapped in the
    gradient stage's ``Add(+0 leaf, value)``, which the group takes in.

- Home kernels, each bit-identical under ``Numerics.EXACT`` to the composition it replaces
  (fidelity *composed*: the product is offered to the gemm chain as the recorded matmul is,
  and under Exact the chain declines and the reference product serves):

  - :func:`windowed_product` fills the patch matrix (pure data movement, so no rounding;
    filled as its transpose, :func:`patch_columns`, whose rows copy quickly) and offers
    the product. An optional bias is added like the recorded ``Add``.
  - :func:`window_kernel_gradient`: the transposed patch matrix of the source times the
    output gradient, offered as the recorded ``matmul(permute(patches), g)`` is.
  - :func:`window_input_gradient`: the product ``g @ kernel`` offered like the recorded
    one, then the two folds (width, then height) with the reference folds' additions in
    their order, over the product's own layout, and the narrows that undo the padding. The
    gradient stage adds each cotangent to an exact ``+0``; the kernel leaves those additions
    out because every value they touch here comes out of a product or a fold that starts
    from ``+0`` (never ``-0``), and ``+0 + v`` is ``v`` bit for bit for every other value,
    NaN payloads included.

- Raises: each match becomes one ``stablehlo.convolution``. The product convolves the
  source by the kernel as ``[C, kh, kw, F]``; the kernel gradient convolves the source by
  the output gradient (``rhs_dilate`` the stride); the input gradient is a transposed
  convolution (``lhs_dilate`` the stride over the reversed kernel). Their shared patch
  chain is never written.

Inputs and outputs of the home kernels are numpy arrays in the element's storage dtype, as
in the reference.

Example:
    >>> import numpy as np
    >>> from topos import f64
    >>> x = np.arange(9.0).reshape(1, 1, 3, 3)
    >>> windowed_product(x, np.ones((4, 1)), None, 2, 2, 1, 0, f64).ravel().tolist()
    [8.0, 12.0, 20.0, 24.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, NamedTuple, final

import attrs
import numpy as np

from topos.ir import ops
from topos.ir.element import ElementType
from topos.ir.numerics import Numerics, current_numerics
from topos.kernels import dispatch, reference
from topos.kernels.dispatch import Backend, Formula
from topos.stages.fusion.base import Array, Idiom, PatternMatch, RaiseWriter, View, legal_match
from topos.stages.fusion.shared import (
    below_zero_add,
    flattened_windows,
    narrowed,
    unflattened_windows,
    wide_operands,
)
from topos.stages.stablehlo import FunctionWriter

__all__ = [
    "WINDOW_INPUT_GRADIENT",
    "WINDOW_KERNEL_GRADIENT",
    "WINDOW_PRODUCT",
    "WindowInputGradient",
    "WindowKernelGradient",
    "WindowMatch",
    "WindowProduct",
    "patch_columns",
    "window_input_gradient",
    "window_kernel_gradient",
    "windowed_product",
]


@attrs.frozen(slots=True)
class WindowMatch(PatternMatch):
    """The geometry the convolution idioms share: ``kernel_height x kernel_width`` windows at
    ``stride`` over a ``[batch, channels, height, width]`` source padded by ``padding``, giving
    ``[output_height, output_width]`` positions for each of ``filters``."""

    kernel_height: int
    kernel_width: int
    stride: int
    padding: int
    batch: int
    channels: int
    height: int
    width: int
    filters: int
    output_height: int
    output_width: int

    @property
    def window(self) -> tuple[int, int, int, int]:
        """``(kernel_height, kernel_width, stride, padding)``, as the home kernels take them."""
        return (self.kernel_height, self.kernel_width, self.stride, self.padding)

    @property
    def source_shape(self) -> tuple[int, int, int, int]:
        """``[batch, channels, height, width]``: the source (unpadded), and its gradient."""
        return (self.batch, self.channels, self.height, self.width)

    @property
    def image(self) -> tuple[int, int, int, int]:
        """``[batch, output_height, output_width, filters]``: the product (or its gradient) as an image."""
        return (self.batch, self.output_height, self.output_width, self.filters)

    @property
    def rows(self) -> tuple[int, int]:
        """``[batch * output_height * output_width, filters]``: the product's rows, as recorded."""
        return (self.batch * self.output_height * self.output_width, self.filters)


@final
@attrs.frozen(slots=True)
class WindowProduct(WindowMatch):
    """A convolution recorded as im2col and a product (``bias`` is a position or None)."""

    kind: ClassVar[Formula] = Formula.WINDOW_PRODUCT

    source: int
    kernel: int
    bias: int | None

    def reads(self) -> tuple[int, ...]:
        return (self.source, self.kernel) if self.bias is None else (self.source, self.kernel, self.bias)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        source, kernel, *bias = arrays
        return (windowed_product(source, kernel, bias[0] if bias else None, *self.window, element),)


@final
@attrs.frozen(slots=True)
class WindowKernelGradient(WindowMatch):
    """A convolution's kernel gradient: the transposed patch matrix of ``source`` times ``gradient``."""

    kind: ClassVar[Formula] = Formula.WINDOW_KERNEL_GRADIENT

    source: int
    gradient: int

    def reads(self) -> tuple[int, ...]:
        return (self.source, self.gradient)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        source, gradient = arrays
        return (window_kernel_gradient(source, gradient, *self.window, element),)


@final
@attrs.frozen(slots=True)
class WindowInputGradient(WindowMatch):
    """A convolution's input gradient (a transposed convolution) of ``gradient`` by ``kernel``."""

    kind: ClassVar[Formula] = Formula.WINDOW_INPUT_GRADIENT

    gradient: int
    kernel: int

    def reads(self) -> tuple[int, ...]:
        return (self.gradient, self.kernel)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        gradient, kernel = arrays
        return (window_input_gradient(gradient, kernel, self.source_shape, *self.window, element),)


# --------------------------------------------------------------------------- matchers


class _Patches(NamedTuple):
    """A recorded patch chain: the source it reads, its nodes and its window geometry."""

    chain: list[int]
    source: int
    window: dict[str, int]
    """The :class:`WindowMatch` fields but ``filters``, which the product's other side gives."""


def _patch_chain(view: View, rows_index: int) -> _Patches | None:
    """``reshape(permute(unfold(unfold(pad(pad(x))?))))`` at ``rows_index``: im2col's rows."""
    rows = view.node(rows_index)
    found = flattened_windows(view, rows_index, 2, (0, 2, 4, 1, 3, 5))
    if found is None:
        return None
    permute, inner, outer, inner_op, outer_op = found
    source = view.node(outer).operands[0]
    chain = [rows_index, permute, inner, outer]
    padding = 0
    pad_w = view.op(source)
    if isinstance(pad_w, ops.Pad):
        pad_h_index = view.node(source).operands[0]
        pad_h = view.op(pad_h_index)
        if not (isinstance(pad_w, ops.Pad) and pad_w.axis == 3 and isinstance(pad_h, ops.Pad) and pad_h.axis == 2):
            return None
        inner_source = view.node(pad_h_index).operands[0]
        h, w = view.node(inner_source).shape[2], view.node(inner_source).shape[3]
        padding = pad_h.start
        if pad_w.start != padding or pad_h.extent != h + 2 * padding or pad_w.extent != w + 2 * padding:
            return None
        chain += [source, pad_h_index]
        source = inner_source
    shape = view.node(source).shape
    if shape.rank != 4:
        return None
    batch, channels, height, width = shape.axes
    kh, kw, stride = outer_op.size, inner_op.size, outer_op.step
    out_h = view.node(outer).shape[2]
    out_w = view.node(inner).shape[4]
    if rows.shape.axes != (batch * out_h * out_w, channels * kh * kw):
        return None
    window = {
        "kernel_height": kh, "kernel_width": kw, "stride": stride, "padding": padding, "batch": batch,
        "channels": channels, "height": height, "width": width, "output_height": out_h, "output_width": out_w,
    }  # fmt: skip
    return _Patches(chain, source, window)


def _window_product_core(view: View, product: int) -> WindowProduct | None:
    """The im2col chain feeding a rank-2 product at ``product`` (no bias)."""
    node = view.node(product)
    if not isinstance(node.op, ops.MatMul) or node.shape.rank != 2:
        return None
    left, kernel = node.operands
    chain = _patch_chain(view, left)
    if chain is None:
        return None
    kernel_shape = view.node(kernel).shape
    depth = chain.window["channels"] * chain.window["kernel_height"] * chain.window["kernel_width"]
    if kernel_shape.rank != 2 or kernel_shape[0] != depth:
        return None
    return WindowProduct(
        product, (), shared=chain.chain, source=chain.source, kernel=kernel, bias=None, filters=kernel_shape[1],
        **chain.window,
    )


def _match_window_kernel_gradient(view: View, index: int) -> WindowKernelGradient | None:
    """``matmul(permute(patches, (1, 0)), g)``: the kernel gradient of a window product."""
    node = view.node(index)
    if not isinstance(node.op, ops.MatMul) or node.shape.rank != 2:
        return None
    transposed, gradient = node.operands
    transpose_op = view.op(transposed)
    if not isinstance(transpose_op, ops.Permute) or transpose_op.order != (1, 0):
        return None
    chain = _patch_chain(view, view.node(transposed).operands[0])
    if chain is None:
        return None
    rows = chain.window["batch"] * chain.window["output_height"] * chain.window["output_width"]
    gradient_shape = view.node(gradient).shape
    if gradient_shape.rank != 2 or gradient_shape[0] != rows:
        return None
    return WindowKernelGradient(
        index, (transposed,), shared=chain.chain, source=chain.source, gradient=gradient, filters=gradient_shape[1],
        **chain.window,
    )


def _sole_reader(view: View, index: int) -> int | None:
    """The one wanted reader of ``index``, stepping over a ``+0`` addition; else None."""
    readers = view.consumers[index]
    if len(readers) != 1:
        return None
    reader = readers[0]
    if below_zero_add(view, reader, []) == index:
        readers = view.consumers[reader]
        return readers[0] if len(readers) == 1 else None
    return reader


def _match_window_input_gradient(view: View, index: int) -> WindowInputGradient | None:
    core = _input_gradient_at(view, index)
    if core is None or core.padding:
        return core
    # A legal padded match rooted two narrows further down subsumes the bare folds.
    narrow_w = _sole_reader(view, index)
    if narrow_w is not None and isinstance(view.op(narrow_w), ops.Narrow):
        narrow_h = _sole_reader(view, narrow_w)
        if narrow_h is not None:
            wider = _input_gradient_at(view, narrow_h)
            if wider is not None and legal_match(view, wider):
                return None
    return core


def _input_gradient_at(view: View, index: int) -> WindowInputGradient | None:
    """The transposed convolution the gradient stage records for a window product's source."""
    interiors: list[int] = []
    node = view.node(index)
    padding = 0
    current = index
    if isinstance(node.op, ops.Narrow):
        # Padded source: narrow(2) over narrow(3) over the folds (pad's rule, in reverse).
        narrow_h = node.op
        inner = below_zero_add(view, node.operands[0], interiors)
        narrow_w = view.op(inner)
        if not (narrow_h.axis == 2 and isinstance(narrow_w, ops.Narrow) and narrow_w.axis == 3):
            return None
        padding = narrow_h.start
        if narrow_w.start != padding or padding < 1:
            return None
        interiors.append(inner)
        current = below_zero_add(view, view.node(inner).operands[0], interiors)
        interiors.append(current)
    fold_h = view.node(current)
    if not (isinstance(fold_h.op, ops.Fold) and fold_h.op.axis == 2 and fold_h.op.dilation == 1):
        return None
    fold_w_index = below_zero_add(view, fold_h.operands[0], interiors)
    fold_w = view.node(fold_w_index)
    if not (isinstance(fold_w.op, ops.Fold) and fold_w.op.axis == 4 and fold_w.op.dilation == 1):
        return None
    if fold_w.op.step != fold_h.op.step:
        return None
    unflattened = unflattened_windows(view, fold_w.operands[0], (0, 3, 1, 4, 2, 5), interiors)
    if unflattened is None:
        return None
    permute, reshape = unflattened
    product = below_zero_add(view, view.node(reshape).operands[0], interiors)
    product_node = view.node(product)
    if not isinstance(product_node.op, ops.MatMul) or product_node.shape.rank != 2:
        return None
    interiors += [fold_w_index, permute, reshape, product]
    if current != index:
        interiors.append(current)
    gradient, kernel = product_node.operands
    batch, out_h, out_w, channels, kh, kw = view.node(reshape).shape.axes
    if (kh, kw) != (fold_h.op.size, fold_w.op.size):
        return None
    stride = fold_h.op.step
    padded_h, padded_w = fold_h.shape[2], fold_h.shape[3]
    if (padded_h - kh) // stride + 1 != out_h or (padded_w - kw) // stride + 1 != out_w:
        return None
    out_shape = view.node(index).shape.axes
    if out_shape != (batch, channels, padded_h - 2 * padding, padded_w - 2 * padding):
        return None
    kernel_shape = view.node(kernel).shape
    if kernel_shape.rank != 2 or kernel_shape[1] != channels * kh * kw:
        return None
    return WindowInputGradient(
        index, [i for i in interiors if i != index], gradient=gradient, kernel=kernel, kernel_height=kh,
        kernel_width=kw, stride=stride, padding=padding, batch=batch, channels=channels, height=out_shape[2],
        width=out_shape[3], filters=kernel_shape[0], output_height=out_h, output_width=out_w,
    )  # fmt: skip


def _biased(view: View, root: int) -> WindowProduct | None:
    """``Add(product, broadcast_along(bias, 0))`` over a window product."""
    node = view.node(root)
    if not isinstance(node.op, ops.Add):
        return None
    product, spread = node.operands
    core = _window_product_core(view, product)
    if core is None:
        return None
    rows = node.shape[0]
    bias = view.spread(spread, rows)
    if bias is None or view.node(bias).shape.axes != (node.shape[1],):
        return None
    return attrs.evolve(core, root=root, interiors=(*core.interiors, product, spread), bias=bias)


def _match_window_product(view: View, index: int) -> WindowProduct | None:
    biased = _biased(view, index)
    if biased is not None:
        return biased
    core = _window_product_core(view, index)
    if core is None:
        return None
    # A legal biased match rooted at the single consumer subsumes the bare product.
    readers = view.consumers[index]
    if len(readers) == 1:
        wider = _biased(view, readers[0])
        if wider is not None and legal_match(view, wider):
            return None
    return core


# --------------------------------------------------------------------------- home kernels


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


# --------------------------------------------------------------------------- raises


def _raise_window_product(e: RaiseWriter, match: WindowProduct) -> None:
    """im2col + matmul -> one convolution over [B, C, H, W] and the kernel as [C, kh, kw, F]."""
    root, bias, image, rows = match.root, match.bias, match.image, match.rows
    kh, kw, stride, pad = match.window
    product_name = f"%v{root}" if bias is None else e.temp("product")
    window = (match.channels, kh, kw, match.filters)
    shaped = e.reshape(e.names[match.kernel], e.network.nodes_[match.kernel].shape, window, e.temp("kernel"))
    x, k = wide_operands(e, [(e.names[match.source], match.source_shape), (shaped, window)], "conv")
    shapes = (match.source_shape, window, image)
    convolved = _convolution(e, (x, k), shapes, "[b, f, 0, 1]x[i, 0, 1, o]->[b, 0, 1, f]", (stride, 1, (pad,) * 4, 1))
    back = narrowed(e, convolved, image, e.temp("convolution_narrow"))
    product = e.reshape(back, image, rows, product_name)
    if bias is not None:
        spread = e.broadcast_in_dim(e.names[bias], (match.filters,), rows, (1,), e.mlir, e.temp("bias"))
        product = e.binary("stablehlo.add", product, spread, rows, e.mlir, f"%v{root}")
    e.names[root] = product


def _convolution(
    e: FunctionWriter,
    operands: tuple[str, str],
    shapes: tuple[Sequence[int], Sequence[int], Sequence[int]],
    dimensions: str,
    window: tuple[int, int, tuple[int, int, int, int], int],
) -> str:
    """One ``stablehlo.convolution`` in the wide type: ``window`` is (stride, lhs dilation, pads, rhs dilation)."""
    stride, lhs_dilate, (top, bottom, left, right), rhs_dilate = window
    lhs, rhs, out = shapes
    return e.line(
        e.temp("convolution"),
        f"stablehlo.convolution({operands[0]}, {operands[1]}) dim_numbers = {dimensions}, "
        f"window = {{stride = [{stride}, {stride}], pad = [[{top}, {bottom}], [{left}, {right}]], "
        f"lhs_dilate = [{lhs_dilate}, {lhs_dilate}], rhs_dilate = [{rhs_dilate}, {rhs_dilate}]}} "
        f"{{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : "
        f"({e.ty(lhs, e.wide)}, {e.ty(rhs, e.wide)}) -> {e.ty(out, e.wide)}",
    )


def _corner(e: FunctionWriter, value: str, shape: Sequence[int], kept: Sequence[int], offset: Sequence[int]) -> str:
    """``value[offset : offset + kept]`` per axis (in the wide type), or ``value`` when it already fits."""
    if tuple(shape) == tuple(kept) and not any(offset):
        return value
    ranges = [f"{start}:{start + extent}" for start, extent in zip(offset, kept, strict=True)]
    return e.slice(value, shape, ranges, kept, e.temp("convolution_slice"), e.wide)


def _raise_window_kernel_gradient(e: RaiseWriter, match: WindowKernelGradient) -> None:
    """The kernel gradient -> one convolution of the source ``[B, C, H, W]`` by ``g`` as ``[B, OH, OW, F]``.

    The batch is the contracted feature, the channels the output batch, the output gradient
    the window (``rhs_dilate`` the stride); the result ``[C, kh', kw', F]`` keeps its first
    ``kh x kw`` (a stride that leaves rows unread makes it larger), reshaped to ``[C*kh*kw, F]``.
    """
    root, channels, filters, window = match.root, match.channels, match.filters, match.image
    kh, kw, stride, pad = match.window
    out_h, out_w = match.output_height, match.output_width
    source_shape = match.source_shape
    shaped = e.reshape(e.names[match.gradient], match.rows, window, e.temp("gradient"))
    x, g = wide_operands(e, [(e.names[match.source], source_shape), (shaped, window)], "conv")
    reach_h = match.height + 2 * pad - (out_h - 1) * stride
    reach_w = match.width + 2 * pad - (out_w - 1) * stride
    full = (channels, reach_h, reach_w, filters)
    convolved = _convolution(
        e, (x, g), (source_shape, window, full), "[f, b, 0, 1]x[i, 0, 1, o]->[b, 0, 1, f]", (1, 1, (pad, pad, pad, pad), stride)
    )
    kept = (channels, kh, kw, filters)
    cut = narrowed(e, _corner(e, convolved, full, kept, (0, 0, 0, 0)), kept, e.temp("convolution_narrow"))
    e.names[root] = e.reshape(cut, kept, (channels * kh * kw, filters), f"%v{root}")


def _raise_window_input_gradient(e: RaiseWriter, match: WindowInputGradient) -> None:
    """The input gradient -> one transposed convolution: ``g`` dilated by the stride, the kernel reversed.

    ``g`` is ``[B, OH, OW, F]``, the kernel ``[F, C, kh, kw]`` reversed along its window;
    padding ``k - 1`` on each side (plus the rows a stride leaves unread at the far side)
    gives the padded source's gradient, and a slice drops the recorded padding.
    """
    root, batch, channels, filters, window = match.root, match.batch, match.channels, match.filters, match.image
    kh, kw, stride, pad = match.window
    out_h, out_w = match.output_height, match.output_width
    kernel_shape = (filters, channels, kh, kw)
    shaped_g = e.reshape(e.names[match.gradient], match.rows, window, e.temp("gradient"))
    shaped_k = e.reshape(e.names[match.kernel], (filters, channels * kh * kw), kernel_shape, e.temp("kernel"))
    reversed_k = e.line(e.temp("kernel_reversed"), f"stablehlo.reverse {shaped_k}, dims = [2, 3] : {e.ty(kernel_shape)}")
    g, k = wide_operands(e, [(shaped_g, window), (reversed_k, kernel_shape)], "conv")
    padded_h, padded_w = match.height + 2 * pad, match.width + 2 * pad
    # Rows past the last window's reach get no gradient: pad the far side by them too.
    spare_h = padded_h - ((out_h - 1) * stride + kh)
    spare_w = padded_w - ((out_w - 1) * stride + kw)
    full = (batch, channels, padded_h, padded_w)
    pads = (kh - 1, kh - 1 + spare_h, kw - 1, kw - 1 + spare_w)
    convolved = _convolution(
        e, (g, k), (window, kernel_shape, full), "[b, 0, 1, f]x[i, o, 0, 1]->[b, f, 0, 1]", (1, stride, pads, 1)
    )
    image = match.source_shape
    cut = _corner(e, convolved, full, image, (0, 0, pad, pad))
    widens = e.wide != e.mlir
    e.names[root] = narrowed(e, cut, image, f"%v{root}") if widens else e.reshape(cut, image, image, f"%v{root}")


# --------------------------------------------------------------------------- catalog entries

WINDOW_PRODUCT: Idiom[WindowProduct] = Idiom(WindowProduct, _match_window_product, _raise_window_product)
"""A convolution: matched as im2col and a product, raised as one convolution."""

WINDOW_INPUT_GRADIENT: Idiom[WindowInputGradient] = Idiom(
    WindowInputGradient, _match_window_input_gradient, _raise_window_input_gradient
)
"""A convolution's input gradient: matched as the recorded transposed product and folds."""

WINDOW_KERNEL_GRADIENT: Idiom[WindowKernelGradient] = Idiom(
    WindowKernelGradient, _match_window_kernel_gradient, _raise_window_kernel_gradient
)
"""A convolution's kernel gradient: matched as the transposed patches times the gradient."""
