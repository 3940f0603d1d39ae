"""The pattern catalog: fusion as an offer, found by structure, never a rewrite.

Contract:
- :func:`discover` runs every matcher over every wanted node in recording order and returns
  the *legal* matches (the candidate pool), matcher order first, then recording order.
  Matching reads only the recorded structure (opcodes, parameters, shapes, constant leaves),
  so a hand-rolled recording of an idiom matches exactly like the facade's; it is blind to
  the numerics posture and to which consumer will elect.
- Legality: every unnamed interior is wanted, not declared readable, and consumed (by wanted
  nodes) only inside its group; a *shared* node (the patch chain of a convolution, which
  its kernel gradient recomputes too; a max-pool's lanes, which its gradient's steps read)
  is wanted and not readable, and its readers are checked at election; a named result
  (batch-norm mean and variance) may be readable and may feed nodes after the group's
  root, because the group writes it back. A declared readable value inside a match
  therefore blocks it unless it is a named result.
- :func:`elect` lets one consumer choose its catalog from the pool: first wins, a match is
  taken only if its kind is in the consumer's repertoire and none of its nodes is taken
  (shared nodes may be taken by several groups that share them). Given the consumers, it
  then drops every match one of whose shared nodes is read by a node outside the elected
  groups, or read by an elected home kernel (both would need the value materialized),
  and elects again without it, until the election is closed.
  Unelected regions simply run their recorded primitives, which is always sound.

Each idiom is one frozen class deriving from :class:`PatternMatch`, with its own typed
fields, the slots its home kernel reads (``reads()``) and writes (``outputs()``), and the
home kernel itself (``home_kernel``); a new idiom is one class, one matcher here, and one
raise in :mod:`topos.stages.emission`. ``fields`` is a read-only view of the typed fields in
declaration order, which is what ``describe`` prints.

- :class:`WindowProduct` (convolution): ``reshape(permute(unfold(unfold(pad(pad(x))?))))``
  with permutation ``(0,2,4,1,3,5)`` feeding a rank-2 ``matmul`` with a ``[C*kh*kw, F]``
  kernel, optionally followed by ``Add(product, broadcast_along(bias, 0))``.
  The patch chain (pads, unfolds, permute, reshape) is shared.
- :class:`WindowKernelGradient` (a convolution's kernel gradient, the training plan's):
  ``matmul(permute(patches), g)`` over the same patch chain (shared), ``[C*kh*kw, F]``.
- :class:`WindowInputGradient` (a convolution's input gradient, a transposed convolution):
  ``matmul(g, kernel)`` with ``kernel`` ``[F, C*kh*kw]``, a reshape to
  ``[B, OH, OW, C, kh, kw]``, permutation ``(0,3,1,4,2,5)``, a fold along 4 then along 2,
  and for a padded source the narrows along 3 then 2; each step may be wrapped in the
  gradient stage's ``Add(+0 leaf, value)``, which the group takes in.
- :class:`ReduceWindow` (max-pool): two square unfolds, permutation ``(0,1,2,4,3,5)``, a
  reshape to lanes, a left-associated ``maximum`` over ``narrow`` of each lane in lane
  order, and a squeezing reshape. Balanced folds and permuted lanes are not matched.
  The lanes and every running maximum but the last are shared (a training step's maximum
  rule reads them).
- :class:`ReduceWindowGradient` (a max-pool's source gradient, the training plan's): the
  maximum rule the gradient stage records at each ``maximum(m, lane_k)``, last lane first
  (``G * step(m, lane_k)`` to ``m``, ``G * (1 - step(m, lane_k))`` to the lane), the
  lane cotangents padded back and summed, the reshape to windows, the permutation and the
  folds along 4 then 2; each cotangent may sit in an ``Add(+0, ·)``. Its steps must read
  the forward's lanes and running maxima, which it shares with :class:`ReduceWindow`.
- :class:`BatchNormTraining`: batch mean (sum along 0 over a constant leaf equal to the
  batch), centering, biased variance the same way, ``sqrt(variance + epsilon)``, divide,
  scale, shift, rooted at the shift ``Add``; mean and variance are named results.
- :class:`BatchNormInference`: the same tail over supplied statistics (no home kernel: it
  is raised by emission only).

All positions are node positions in the plan's network.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar, NamedTuple, final

import attrs

from topos.ir import ops
from topos.ir.element import ElementType
from topos.ir.network import Network
from topos.ir.node import Node
from topos.kernels.dispatch import Formula
from topos.stages import fused
from topos.stages.fused import Array

__all__ = [
    "MATCH_TYPES",
    "BatchNormInference",
    "BatchNormTraining",
    "PatternKind",
    "PatternMatch",
    "ReduceWindow",
    "ReduceWindowGradient",
    "WindowInputGradient",
    "WindowKernelGradient",
    "WindowProduct",
    "consumers_of",
    "discover",
    "elect",
]


class PatternKind(enum.Enum):
    """The idioms the catalog recognizes."""

    WINDOW_PRODUCT = "window_product"
    WINDOW_INPUT_GRADIENT = "window_input_gradient"
    WINDOW_KERNEL_GRADIENT = "window_kernel_gradient"
    REDUCE_WINDOW = "reduce_window"
    REDUCE_WINDOW_GRADIENT = "reduce_window_gradient"
    BATCH_NORM_TRAINING = "batch_norm_training"
    BATCH_NORM_INFERENCE = "batch_norm_inference"

    @property
    def formula(self) -> Formula:
        return Formula(self.value)


def _positions(value: Iterable[int]) -> tuple[int, ...]:
    # Interiors are a set of positions: ascending and without repeats, whatever the matcher built.
    return tuple(sorted(set(value)))


@attrs.frozen(slots=True)
class PatternMatch:
    """One match of an idiom: its root, its unnamed interiors, its named results, its fields.

    The base of the catalog's match classes (one per :class:`PatternKind`); a value is
    always one of :data:`MATCH_TYPES`.

    Example:
        >>> from topos import Tape, f32
        >>> from topos.nn import max_pool
        >>> import numpy as np
        >>> network, y = Tape.record(lambda t: max_pool(t.input(np.zeros((1, 1, 4, 4))), 2))
        >>> [m.kind.value for m in network.entry(y).lower().candidates()]
        ['reduce_window']
    """

    kind: ClassVar[PatternKind]
    has_home_kernel: ClassVar[bool] = True
    """Whether plans may elect this idiom (it has a home kernel in :mod:`topos.stages.fused`)."""

    root: int
    interiors: tuple[int, ...] = attrs.field(converter=_positions)
    shared: tuple[int, ...] = attrs.field(default=(), converter=_positions, kw_only=True)
    """Nodes the group recomputes from its reads that other elected groups may share."""

    @property
    def named_results(self) -> tuple[int, ...]:
        """Results inside the group that it writes back (readable by later nodes)."""
        return ()

    @property
    def nodes(self) -> tuple[int, ...]:
        """Every position of the group (interiors, shared, named results, root), ascending."""
        return tuple(sorted({*self.interiors, *self.shared, *self.named_results, self.root}))

    @property
    def exclusive(self) -> tuple[int, ...]:
        """The positions no other elected group may hold (all but the shared ones)."""
        return tuple(sorted((*self.interiors, *self.named_results, self.root)))

    @property
    def fields(self) -> Mapping[str, object]:
        """The idiom's own typed fields, read-only, in declaration order.

        Fields a shared base declares (the window geometry of :class:`WindowMatch`) follow
        the idiom's own, so each match names its operands first.
        """
        own = attrs.fields(type(self))[len(attrs.fields(PatternMatch)) :]
        ordered = sorted(own, key=lambda field: field.inherited)
        return MappingProxyType({field.name: getattr(self, field.name) for field in ordered})

    def describe(self) -> str:
        """``kind at %root over N nodes: key=value ...`` (byte-stable)."""
        params = " ".join(f"{key}={value}" for key, value in self.fields.items())
        return f"{self.kind.value} at %{self.root} over {len(self.nodes)} nodes: {params}"

    def reads(self) -> tuple[int, ...]:
        """The positions the home kernel reads, in the order :meth:`home_kernel` takes them."""
        raise NotImplementedError(type(self).__name__)

    def outputs(self) -> tuple[int, ...]:
        """The positions the home kernel writes, in the order it returns them."""
        return (self.root,)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        """Run the home kernel over dense arrays for :meth:`reads`; one array per :meth:`outputs`."""
        raise NotImplementedError(f"{self.kind.value} has no home kernel")


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

    kind: ClassVar[PatternKind] = PatternKind.WINDOW_PRODUCT

    source: int
    kernel: int
    bias: int | None

    def reads(self) -> tuple[int, ...]:
        return (self.source, self.kernel) if self.bias is None else (self.source, self.kernel, self.bias)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        source, kernel, *bias = arrays
        return (fused.windowed_product(source, kernel, bias[0] if bias else None, *self.window, element),)


@final
@attrs.frozen(slots=True)
class WindowKernelGradient(WindowMatch):
    """A convolution's kernel gradient: the transposed patch matrix of ``source`` times ``gradient``."""

    kind: ClassVar[PatternKind] = PatternKind.WINDOW_KERNEL_GRADIENT

    source: int
    gradient: int

    def reads(self) -> tuple[int, ...]:
        return (self.source, self.gradient)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        source, gradient = arrays
        return (fused.window_kernel_gradient(source, gradient, *self.window, element),)


@final
@attrs.frozen(slots=True)
class WindowInputGradient(WindowMatch):
    """A convolution's input gradient (a transposed convolution) of ``gradient`` by ``kernel``."""

    kind: ClassVar[PatternKind] = PatternKind.WINDOW_INPUT_GRADIENT

    gradient: int
    kernel: int

    def reads(self) -> tuple[int, ...]:
        return (self.gradient, self.kernel)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        gradient, kernel = arrays
        return (fused.window_input_gradient(gradient, kernel, self.source_shape, *self.window, element),)


@attrs.frozen(slots=True)
class PoolMatch(PatternMatch):
    """The geometry the max-pool idioms share: square ``size`` windows at ``stride`` over a
    ``[batch, channels, height, width]`` ``source``."""

    source: int
    size: int
    stride: int
    batch: int
    channels: int
    height: int
    width: int


@final
@attrs.frozen(slots=True)
class ReduceWindow(PoolMatch):
    """A max-pool over square ``size`` windows recorded as lanes folded by ``maximum``."""

    kind: ClassVar[PatternKind] = PatternKind.REDUCE_WINDOW

    def reads(self) -> tuple[int, ...]:
        return (self.source,)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        (source,) = arrays
        return (fused.max_pooled(source, self.size, self.stride, element),)


@final
@attrs.frozen(slots=True)
class ReduceWindowGradient(PoolMatch):
    """A max-pool's source gradient from ``gradient``: the maximum rule over the lanes, folded back."""

    kind: ClassVar[PatternKind] = PatternKind.REDUCE_WINDOW_GRADIENT

    gradient: int

    def reads(self) -> tuple[int, ...]:
        return (self.source, self.gradient)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        source, gradient = arrays
        return (fused.max_pool_gradient(source, gradient, self.size, self.stride, element),)


@final
@attrs.frozen(slots=True)
class BatchNormTraining(PatternMatch):
    """Batch normalization over batch statistics; ``mean`` and ``variance`` are written back."""

    kind: ClassVar[PatternKind] = PatternKind.BATCH_NORM_TRAINING

    input: int
    scale: int
    shift: int
    epsilon: float
    mean: int
    variance: int
    batch: int
    features: int
    epsilon_leaf: int
    mean_count: int
    variance_count: int

    @property
    def named_results(self) -> tuple[int, ...]:
        return (self.mean, self.variance)

    def reads(self) -> tuple[int, ...]:
        return (self.input, self.scale, self.shift, self.epsilon_leaf, self.mean_count, self.variance_count)

    def outputs(self) -> tuple[int, ...]:
        return (self.root, self.mean, self.variance)

    def home_kernel(self, arrays: Sequence[Array], element: ElementType) -> tuple[Array, ...]:
        x, scale, shift, epsilon, mean_count, variance_count = arrays
        return fused.batch_normalized(x, scale, shift, epsilon, mean_count, variance_count, element)


@final
@attrs.frozen(slots=True)
class BatchNormInference(PatternMatch):
    """Batch normalization over supplied ``mean`` and ``variance``."""

    kind: ClassVar[PatternKind] = PatternKind.BATCH_NORM_INFERENCE
    has_home_kernel: ClassVar[bool] = False

    input: int
    scale: int
    shift: int
    epsilon: float
    mean: int
    variance: int
    batch: int
    features: int
    epsilon_leaf: int

    def reads(self) -> tuple[int, ...]:
        return (self.input, self.scale, self.shift, self.epsilon_leaf, self.mean, self.variance)


MATCH_TYPES: tuple[type[PatternMatch], ...] = (
    WindowProduct,
    WindowInputGradient,
    WindowKernelGradient,
    ReduceWindow,
    ReduceWindowGradient,
    BatchNormTraining,
    BatchNormInference,
)
"""One class per :class:`PatternKind`, in kind order."""


def consumers_of(network: Network, wanted: Sequence[bool]) -> list[list[int]]:
    """For each position, the wanted nodes reading it (once per operand link)."""
    consumers: list[list[int]] = [[] for _ in range(len(network))]
    for index, node in enumerate(network.nodes_):
        if wanted[index]:
            for operand in node.operands:
                consumers[operand].append(index)
    return consumers


class _View:
    """The frozen columns a matcher reads."""

    __slots__ = ("consumers", "network", "nodes", "readable", "wanted")

    def __init__(self, network: Network, wanted: Sequence[bool], readable: Sequence[bool]) -> None:
        self.network = network
        self.nodes = network.nodes_
        self.wanted = wanted
        self.readable = readable
        self.consumers = consumers_of(network, wanted)

    def op(self, index: int) -> ops.Op:
        return self.nodes[index].op

    def node(self, index: int) -> Node:
        return self.nodes[index]

    def constant(self, index: int) -> float | None:
        """The fill of a constant leaf, else None."""
        if not isinstance(self.op(index), ops.Leaf):
            return None
        payload = self.network.sources.get(index)
        return None if payload is None else payload.fill

    def spread(self, index: int, extent: int) -> int | None:
        """The operand of ``broadcast_along(axis=0, extent)`` at ``index``, else None."""
        op = self.op(index)
        if isinstance(op, ops.BroadcastAlong) and op.axis == 0 and op.extent == extent:
            return self.node(index).operands[0]
        return None


def _legal(
    view: _View, root: int, interiors: Iterable[int], named: Sequence[int], shared: Sequence[int] = ()
) -> bool:
    group = {root, *interiors, *named, *shared}
    for index in shared:
        # Readers outside the group are the election's to check (see elect).
        if not view.wanted[index] or view.readable[index]:
            return False
    for index in interiors:
        if not view.wanted[index] or view.readable[index]:
            return False
        if any(consumer not in group for consumer in view.consumers[index]):
            return False
    for index in named:
        if not view.wanted[index]:
            return False
        # The group writes a named result back when its root runs: later readers see it.
        if any(consumer not in group and consumer < root for consumer in view.consumers[index]):
            return False
    return True


def _legal_match(view: _View, match: PatternMatch) -> bool:
    return _legal(view, match.root, match.interiors, match.named_results, match.shared)


class _Patches(NamedTuple):
    """A recorded patch chain: the source it reads, its nodes and its window geometry."""

    chain: list[int]
    source: int
    window: dict[str, int]
    """The :class:`WindowMatch` fields but ``filters``, which the product's other side gives."""


def _window_unfolds(view: _View, index: int) -> tuple[int, int, ops.Unfold, ops.Unfold] | None:
    """``unfold(unfold(x, axis 2), axis 4)`` at ``index``, undilated and at one step: both
    spatial axes cut into windows (im2col's and max-pool's). Returns (inner, outer, their ops)."""
    inner_op = view.op(index)
    if not isinstance(inner_op, ops.Unfold) or inner_op.axis != 4 or inner_op.dilation != 1:
        return None
    outer = view.node(index).operands[0]
    outer_op = view.op(outer)
    if not isinstance(outer_op, ops.Unfold) or outer_op.axis != 2 or outer_op.dilation != 1:
        return None
    return None if outer_op.step != inner_op.step else (index, outer, inner_op, outer_op)


def _patch_chain(view: _View, rows_index: int) -> _Patches | None:
    """``reshape(permute(unfold(unfold(pad(pad(x))?))))`` at ``rows_index``: im2col's rows."""
    rows = view.node(rows_index)
    if not isinstance(rows.op, ops.Reshape) or rows.shape.rank != 2:
        return None
    permute = rows.operands[0]
    permute_op = view.op(permute)
    if not isinstance(permute_op, ops.Permute) or permute_op.order != (0, 2, 4, 1, 3, 5):
        return None
    unfolds = _window_unfolds(view, view.node(permute).operands[0])
    if unfolds is None:
        return None
    inner, outer, inner_op, outer_op = unfolds
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


def _window_product_core(view: _View, product: int) -> WindowProduct | None:
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


def _match_window_kernel_gradient(view: _View, index: int) -> WindowKernelGradient | None:
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


def _positive_zero(view: _View, index: int) -> bool:
    fill = view.constant(index)
    return fill is not None and fill == 0.0 and math.copysign(1.0, fill) > 0


def _below_zero_add(view: _View, index: int, interiors: list[int]) -> int:
    """Step under the gradient stage's ``Add(+0 leaf, value)`` at ``index``, if it is one."""
    node = view.node(index)
    if isinstance(node.op, ops.Add):
        zero, value = node.operands
        if _positive_zero(view, zero) and view.node(zero).shape == node.shape:
            interiors.append(index)
            return value
    return index


def _sole_reader(view: _View, index: int) -> int | None:
    """The one wanted reader of ``index``, stepping over a ``+0`` addition; else None."""
    readers = view.consumers[index]
    if len(readers) != 1:
        return None
    reader = readers[0]
    if _below_zero_add(view, reader, []) == index:
        readers = view.consumers[reader]
        return readers[0] if len(readers) == 1 else None
    return reader


def _match_window_input_gradient(view: _View, index: int) -> WindowInputGradient | None:
    core = _input_gradient_at(view, index)
    if core is None or core.padding:
        return core
    # A legal padded match rooted two narrows further down subsumes the bare folds.
    narrow_w = _sole_reader(view, index)
    if narrow_w is not None and isinstance(view.op(narrow_w), ops.Narrow):
        narrow_h = _sole_reader(view, narrow_w)
        if narrow_h is not None:
            wider = _input_gradient_at(view, narrow_h)
            if wider is not None and _legal_match(view, wider):
                return None
    return core


def _input_gradient_at(view: _View, index: int) -> WindowInputGradient | None:
    """The transposed convolution the gradient stage records for a window product's source."""
    interiors: list[int] = []
    node = view.node(index)
    padding = 0
    current = index
    if isinstance(node.op, ops.Narrow):
        # Padded source: narrow(2) over narrow(3) over the folds (pad's rule, in reverse).
        narrow_h = node.op
        inner = _below_zero_add(view, node.operands[0], interiors)
        narrow_w = view.op(inner)
        if not (narrow_h.axis == 2 and isinstance(narrow_w, ops.Narrow) and narrow_w.axis == 3):
            return None
        padding = narrow_h.start
        if narrow_w.start != padding or padding < 1:
            return None
        interiors.append(inner)
        current = _below_zero_add(view, view.node(inner).operands[0], interiors)
        interiors.append(current)
    fold_h = view.node(current)
    if not (isinstance(fold_h.op, ops.Fold) and fold_h.op.axis == 2 and fold_h.op.dilation == 1):
        return None
    fold_w_index = _below_zero_add(view, fold_h.operands[0], interiors)
    fold_w = view.node(fold_w_index)
    if not (isinstance(fold_w.op, ops.Fold) and fold_w.op.axis == 4 and fold_w.op.dilation == 1):
        return None
    if fold_w.op.step != fold_h.op.step:
        return None
    permute = _below_zero_add(view, fold_w.operands[0], interiors)
    permute_op = view.op(permute)
    if not isinstance(permute_op, ops.Permute) or permute_op.order != (0, 3, 1, 4, 2, 5):
        return None
    reshape = _below_zero_add(view, view.node(permute).operands[0], interiors)
    if not isinstance(view.op(reshape), ops.Reshape):
        return None
    product = _below_zero_add(view, view.node(reshape).operands[0], interiors)
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


def _biased(view: _View, root: int) -> WindowProduct | None:
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


def _match_window_product(view: _View, index: int) -> WindowProduct | None:
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
        if wider is not None and _legal_match(view, wider):
            return None
    return core


def _lane(view: _View, index: int, position: int) -> int | None:
    """The lanes ``narrow(lanes, 4, position, 1)`` reads at ``index``, else None."""
    op = view.op(index)
    if isinstance(op, ops.Narrow) and op.axis == 4 and op.start == position and op.length == 1:
        return view.node(index).operands[0]
    return None


def _pool_lanes(view: _View, index: int) -> tuple[list[int], int, int, int] | None:
    """``reshape(permute(unfold(unfold(x))))`` at ``index``: a max-pool's lanes, each window
    flattened along axis 4. Returns (the chain, its source, the window size, the stride)."""
    lanes = view.node(index)
    if not isinstance(lanes.op, ops.Reshape) or lanes.shape.rank != 5:
        return None
    permute = lanes.operands[0]
    permute_op = view.op(permute)
    if not isinstance(permute_op, ops.Permute) or permute_op.order != (0, 1, 2, 4, 3, 5):
        return None
    unfolds = _window_unfolds(view, view.node(permute).operands[0])
    if unfolds is None:
        return None
    inner, outer, inner_op, outer_op = unfolds
    size = outer_op.size
    source = view.node(outer).operands[0]
    if inner_op.size != size or lanes.shape[4] != size * size or view.node(source).shape.rank != 4:
        return None
    return [index, permute, inner, outer], source, size, outer_op.step


def _match_reduce_window(view: _View, index: int) -> ReduceWindow | None:
    squeeze = view.node(index)
    if not isinstance(squeeze.op, ops.Reshape):
        return None
    fold = squeeze.operands[0]
    fold_shape = view.node(fold).shape
    if fold_shape.rank != 5 or fold_shape[4] != 1 or squeeze.shape.axes != fold_shape.axes[:4]:
        return None
    maxima: list[int] = []
    lanes: list[int] = []
    current = fold
    while isinstance(view.op(current), ops.Maximum):
        maxima.append(current)
        left, right = view.node(current).operands
        lanes.append(right)
        current = left
    lanes.append(current)
    lanes.reverse()
    if not maxima:
        return None
    lane_source = _lane(view, lanes[0], 0)
    if lane_source is None or any(_lane(view, lane, k) != lane_source for k, lane in enumerate(lanes)):
        return None
    pool = _pool_lanes(view, lane_source)
    if pool is None or len(lanes) != pool[2] * pool[2]:
        return None
    chain, source, size, stride = pool
    batch, channels, height, width = view.node(source).shape.axes
    # The lanes and all but the last running maximum are shared: the maximum rule of a
    # training step reads them, and its gradient match recomputes them from the source.
    return ReduceWindow(
        index, [fold], shared=[*chain, *lanes, *maxima[1:]], source=source, size=size, stride=stride,
        batch=batch, channels=channels, height=height, width=width,
    )  # fmt: skip


def _match_reduce_window_gradient(view: _View, index: int) -> ReduceWindowGradient | None:
    """The maximum rule over a max-pool's lanes, as the gradient stage records it, folded back.

    From the root down: fold(2), fold(4), the permutation, the reshape to windows, the sum of
    ``pad(c_k, 4, k)`` (lane 0 last, the first one over ``+0``), and per lane ``k >= 1`` the
    rule at ``maximum(m, lane_k)``: ``c_k = G * (1 - step(m, lane_k))`` and
    ``G * step(m, lane_k)`` the cotangent of ``m``, down to ``reshape(g)``; each cotangent
    may sit in the gradient stage's ``Add(+0, ·)``.
    """
    fold_h = view.node(index)
    if not (isinstance(fold_h.op, ops.Fold) and fold_h.op.axis == 2 and fold_h.op.dilation == 1):
        return None
    size, stride = fold_h.op.size, fold_h.op.step
    interiors: list[int] = []
    fold_w = _below_zero_add(view, fold_h.operands[0], interiors)
    fold_w_op = view.op(fold_w)
    if not (isinstance(fold_w_op, ops.Fold) and fold_w_op.axis == 4 and fold_w_op.dilation == 1):
        return None
    if (fold_w_op.size, fold_w_op.step) != (size, stride):
        return None
    permute = _below_zero_add(view, view.node(fold_w).operands[0], interiors)
    permute_op = view.op(permute)
    if not isinstance(permute_op, ops.Permute) or permute_op.order != (0, 1, 2, 4, 3, 5):
        return None
    windows = _below_zero_add(view, view.node(permute).operands[0], interiors)
    if not isinstance(view.op(windows), ops.Reshape):
        return None
    interiors += [fold_w, permute, windows]
    total = view.node(windows).operands[0]
    pads: list[int] = []
    while isinstance(view.op(total), ops.Add) and _below_zero_add(view, total, []) == total:
        interiors.append(total)
        total, pad = view.node(total).operands
        pads.append(pad)
    first = _below_zero_add(view, total, interiors)
    if first == total or size < 2 or len(pads) + 1 != size * size:
        return None
    pads.append(first)
    cotangents: list[int] = []
    for position, pad in enumerate(pads):
        pad_op = view.op(pad)
        if not (isinstance(pad_op, ops.Pad) and pad_op.axis == 4 and pad_op.start == position):
            return None
        cotangents.append(view.node(pad).operands[0])
    interiors += pads
    steps: list[tuple[int, ...]] = []
    cotangent = cotangents[0]
    for position in range(1, size * size):
        kept = _below_zero_add(view, cotangent, interiors)
        lost = _below_zero_add(view, cotangents[position], interiors)
        kept_node, lost_node = view.node(kept), view.node(lost)
        if not (isinstance(kept_node.op, ops.Mul) and isinstance(lost_node.op, ops.Mul)):
            return None
        cotangent, wins = kept_node.operands
        complement = lost_node.operands[1]
        complement_node = view.node(complement)
        if lost_node.operands[0] != cotangent or not isinstance(view.op(wins), ops.Step):
            return None
        if not isinstance(complement_node.op, ops.Sub) or complement_node.operands[1] != wins:
            return None
        if view.constant(complement_node.operands[0]) != 1.0:
            return None
        interiors += [kept, lost, wins, complement]
        steps.append(view.node(wins).operands)
    reshaped = _below_zero_add(view, cotangent, interiors)
    if not isinstance(view.op(reshaped), ops.Reshape):
        return None
    interiors.append(reshaped)
    gradient = view.node(reshaped).operands[0]
    # The steps must compare the forward's running maxima with its lanes, in lane order.
    lanes = _lane(view, steps[0][0], 0)
    pool = None if lanes is None else _pool_lanes(view, lanes)
    if lanes is None or pool is None or pool[2:] != (size, stride):
        return None
    chain, source, _, _ = pool
    shared = [steps[0][0]]
    for position, (running, lane) in enumerate(steps, start=1):
        if _lane(view, lane, position) != lanes:
            return None
        if position > 1 and not (isinstance(view.op(running), ops.Maximum) and view.node(running).operands == steps[position - 2]):
            return None
        shared += [running, lane]
    shape = view.node(source).shape.axes
    image = view.node(lanes).shape.axes[:4]
    if fold_h.shape.axes != shape or view.node(gradient).shape.axes != image:
        return None
    if view.node(reshaped).shape.axes != (*image, 1) or view.node(windows).shape.axes != (*image, size, size):
        return None
    batch, channels, height, width = shape
    return ReduceWindowGradient(
        index, interiors, shared=[*chain, *shared], source=source, gradient=gradient, size=size, stride=stride,
        batch=batch, channels=channels, height=height, width=width,
    )  # fmt: skip


def _normalization_tail(view: _View, root: int) -> tuple[BatchNormInference, int] | None:
    """The shared tail ``((x - mean) / sqrt(variance + eps)) * scale + shift``: the inference
    match it makes over supplied statistics, and its ``Sub`` (the centering)."""
    node = view.node(root)
    if not isinstance(node.op, ops.Add) or node.shape.rank != 2:
        return None
    batch, features = node.shape.axes
    scaled, shift_spread = node.operands
    shift = view.spread(shift_spread, batch)
    scaled_node = view.node(scaled)
    if shift is None or not isinstance(scaled_node.op, ops.Mul):
        return None
    normalized, scale_spread = scaled_node.operands
    scale = view.spread(scale_spread, batch)
    normalized_node = view.node(normalized)
    if scale is None or not isinstance(normalized_node.op, ops.Div):
        return None
    centered, deviation_spread = normalized_node.operands
    deviation = view.spread(deviation_spread, batch)
    centered_node = view.node(centered)
    if deviation is None or not isinstance(centered_node.op, ops.Sub):
        return None
    deviation_op = view.op(deviation)
    if not (isinstance(deviation_op, ops.Map) and deviation_op.operation is ops.MapOperation.SQRT):
        return None
    stabilized = view.node(deviation).operands[0]
    stabilized_node = view.node(stabilized)
    if not isinstance(stabilized_node.op, ops.Add):
        return None
    variance, epsilon_leaf = stabilized_node.operands
    epsilon = view.constant(epsilon_leaf)
    source, mean_spread = centered_node.operands
    mean = view.spread(mean_spread, batch)
    if epsilon is None or mean is None:
        return None
    for position in (shift, scale, mean, variance):
        if view.node(position).shape.axes != (features,):
            return None
    if view.node(source).shape.axes != (batch, features):
        return None
    interiors = [
        shift_spread, scaled, scale_spread, normalized, deviation_spread, deviation,
        stabilized, centered, mean_spread,
    ]  # fmt: skip
    match = BatchNormInference(
        root, interiors, input=source, scale=scale, shift=shift, epsilon=epsilon, mean=mean, variance=variance,
        batch=batch, features=features, epsilon_leaf=epsilon_leaf,
    )  # fmt: skip
    return match, centered


def _batch_mean(view: _View, position: int, of: int, batch: int) -> tuple[int, int] | None:
    """``sum_along(of, 0) / count`` at ``position``: returns (sum position, count leaf)."""
    node = view.node(position)
    if not isinstance(node.op, ops.Div):
        return None
    total, count = node.operands
    total_op = view.op(total)
    if not (isinstance(total_op, ops.SumAlong) and total_op.axis == 0 and view.node(total).operands[0] == of):
        return None
    if view.constant(count) != float(batch):
        return None
    return total, count


def _match_batch_norm_training(view: _View, index: int) -> BatchNormTraining | None:
    found = _normalization_tail(view, index)
    if found is None:
        return None
    tail, centered = found
    batch, variance = tail.batch, tail.variance
    mean_parts = _batch_mean(view, tail.mean, tail.input, batch)
    if mean_parts is None:
        return None
    variance_node = view.node(variance)
    if not isinstance(variance_node.op, ops.Div):
        return None
    variance_total = view.node(variance_node.operands[0])
    if not isinstance(variance_total.op, ops.SumAlong):
        return None
    square = variance_total.operands[0]
    square_node = view.node(square)
    if not (isinstance(square_node.op, ops.Mul) and square_node.operands == (centered, centered)):
        return None
    variance_parts = _batch_mean(view, variance, square, batch)
    if variance_parts is None:
        return None
    return BatchNormTraining(
        index, [*tail.interiors, mean_parts[0], square, variance_parts[0]], input=tail.input, scale=tail.scale,
        shift=tail.shift, epsilon=tail.epsilon, mean=tail.mean, variance=variance, batch=batch,
        features=tail.features, epsilon_leaf=tail.epsilon_leaf, mean_count=mean_parts[1],
        variance_count=variance_parts[1],
    )  # fmt: skip


def _match_batch_norm_inference(view: _View, index: int) -> BatchNormInference | None:
    # Batch statistics recorded in the same graph make it the training idiom, legal or not.
    if _match_batch_norm_training(view, index) is not None:
        return None
    found = _normalization_tail(view, index)
    return None if found is None else found[0]


_MATCHERS: tuple[Callable[[_View, int], PatternMatch | None], ...] = (
    _match_window_product,
    _match_window_input_gradient,
    _match_window_kernel_gradient,
    _match_reduce_window,
    _match_reduce_window_gradient,
    _match_batch_norm_training,
    _match_batch_norm_inference,
)
"""One matcher per class of :data:`MATCH_TYPES`, in the same order (matcher order is pool order)."""


def discover(network: Network, wanted: Sequence[bool], readable: Sequence[bool]) -> list[PatternMatch]:
    """Every legal match over the wanted nodes: matcher order first, then recording order."""
    view = _View(network, wanted, readable)
    pool: list[PatternMatch] = []
    candidates = [index for index, node in enumerate(network.nodes_) if wanted[index] and not node.is_source]
    for matcher in _MATCHERS:
        for index in candidates:
            match = matcher(view, index)
            if match is not None and _legal_match(view, match):
                pool.append(match)
    return pool


def elect(
    pool: Iterable[PatternMatch],
    repertoire: Iterable[PatternKind],
    consumers: Sequence[Sequence[int]] | None = None,
) -> list[PatternMatch]:
    """First-wins election of non-overlapping matches whose kind the consumer supports.

    Shared nodes may be held by several elected groups. With ``consumers`` (one list of
    wanted readers per position, :func:`consumers_of`) the election is closed: a match
    whose shared node would still be read as a value is dropped and the rest elected
    again. Without them, a match with shared nodes is never elected.
    """
    kinds = set(repertoire)
    candidates = [match for match in pool if match.kind in kinds and (consumers is not None or not match.shared)]
    while True:
        elected = _first_wins(candidates)
        if consumers is None:
            return elected
        open_ = _unclosed(elected, consumers)
        if not open_:
            return elected
        candidates = [match for match in candidates if match not in open_]


def _first_wins(candidates: Iterable[PatternMatch]) -> list[PatternMatch]:
    exclusive: set[int] = set()
    shared: set[int] = set()
    elected: list[PatternMatch] = []
    for match in candidates:
        own = match.exclusive
        if exclusive.isdisjoint(own) and shared.isdisjoint(own) and exclusive.isdisjoint(match.shared):
            elected.append(match)
            exclusive.update(own)
            shared.update(match.shared)
    return elected


def _unclosed(elected: Sequence[PatternMatch], consumers: Sequence[Sequence[int]]) -> list[PatternMatch]:
    """The elected matches with a shared node that something would still read as a value."""
    inside: set[int] = set()
    reads_at: dict[int, tuple[int, ...]] = {}
    for match in elected:
        inside.update(match.nodes)
        reads_at[match.root] = match.reads()
    unclosed: list[PatternMatch] = []
    for match in elected:
        for index in match.shared:
            if any(reader not in inside or index in reads_at.get(reader, ()) for reader in consumers[index]):
                unclosed.append(match)
                break
    return unclosed
