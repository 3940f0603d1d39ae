"""The pattern catalog: fusion as an offer, found by structure, never a rewrite.

Contract:
- :func:`discover` runs every matcher over every wanted node in recording order and returns
  the *legal* matches (the candidate pool), matcher order first, then recording order.
  Matching reads only the recorded structure (opcodes, parameters, shapes, constant leaves),
  so a hand-rolled recording of an idiom matches exactly like the facade's; it is blind to
  the numerics posture and to which consumer will elect.
- Legality: every unnamed interior is wanted, not declared readable, and consumed (by wanted
  nodes) only inside its group; a named result (batch-norm mean and variance) may be
  readable and may feed nodes after the group's root, because the group writes it back. A
  declared readable value inside a match therefore blocks it unless it is a named result.
- :func:`elect` lets one consumer choose its catalog from the pool: first wins, a match is
  taken only if its kind is in the consumer's repertoire and none of its nodes is taken.
  Unelected regions simply run their recorded primitives, which is always sound.

The four idioms (:class:`PatternKind`) and the ``fields`` each match carries:

- ``WINDOW_PRODUCT`` (convolution): ``reshape(permute(unfold(unfold(pad(pad(x))?))))`` with
  permutation ``(0,2,4,1,3,5)`` feeding a rank-2 ``matmul`` with a ``[C*kh*kw, F]`` kernel,
  optionally followed by ``Add(product, broadcast_along(bias, 0))``. Fields: ``source``,
  ``kernel``, ``bias`` (position or None), ``kernel_height``, ``kernel_width``, ``stride``,
  ``padding``, ``batch``, ``channels``, ``height``, ``width``, ``filters``,
  ``output_height``, ``output_width``.
- ``REDUCE_WINDOW`` (max-pool): two square unfolds, permutation ``(0,1,2,4,3,5)``, a reshape
  to lanes, a left-associated ``maximum`` over ``narrow`` of each lane in lane order, and a
  squeezing reshape. Fields: ``source``, ``size``, ``stride``, ``batch``, ``channels``,
  ``height``, ``width``. Balanced folds and permuted lanes are not matched.
- ``BATCH_NORM_TRAINING``: batch mean (sum along 0 over a constant leaf equal to the batch),
  centering, biased variance the same way, ``sqrt(variance + epsilon)``, divide, scale,
  shift, rooted at the shift ``Add``; mean and variance are named results. Fields:
  ``input``, ``scale``, ``shift``, ``epsilon`` (float), ``mean``, ``variance``, ``batch``,
  ``features``, ``epsilon_leaf``, ``mean_count``, ``variance_count``.
- ``BATCH_NORM_INFERENCE``: the same tail over supplied statistics. Fields: ``input``,
  ``scale``, ``shift``, ``epsilon``, ``mean``, ``variance``, ``batch``, ``features``,
  ``epsilon_leaf``.

All positions are node positions in the plan's network.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, final

import attrs

from topos.backends.dispatch import Formula
from topos.ir import ops
from topos.ir.network import Network
from topos.ir.node import Node

__all__ = ["PatternKind", "PatternMatch", "consumers_of", "discover", "elect"]


class PatternKind(enum.Enum):
    """The idioms the catalog recognizes."""

    WINDOW_PRODUCT = "window_product"
    REDUCE_WINDOW = "reduce_window"
    BATCH_NORM_TRAINING = "batch_norm_training"
    BATCH_NORM_INFERENCE = "batch_norm_inference"

    @property
    def formula(self) -> Formula:
        return Formula(self.value)


def _frozen_fields(value: Mapping[str, Any]) -> Mapping[str, Any]:
    # A read-only view over a private copy: a match is a value, its fields cannot drift.
    return MappingProxyType(dict(value))


@final
@attrs.frozen(slots=True)
class PatternMatch:
    """One match of an idiom: its root, its unnamed interiors, its named results, its fields.

    Example:
        >>> from topos import Tape, f32
        >>> from topos.nn import max_pool
        >>> import numpy as np
        >>> network, y = Tape.record(lambda t: max_pool(t.input(np.zeros((1, 1, 4, 4))), 2))
        >>> [m.kind.value for m in network.entry(y).lower().candidates()]
        ['reduce_window']
    """

    kind: PatternKind
    root: int
    interiors: tuple[int, ...]
    named_results: tuple[int, ...]
    fields: Mapping[str, Any] = attrs.field(converter=_frozen_fields, eq=False, hash=False)

    @property
    def nodes(self) -> tuple[int, ...]:
        """Every position of the group (interiors, named results, root), ascending."""
        return tuple(sorted((*self.interiors, *self.named_results, self.root)))

    def describe(self) -> str:
        """``kind at %root over N nodes: key=value ...`` (byte-stable)."""
        params = " ".join(f"{key}={value}" for key, value in self.fields.items())
        return f"{self.kind.value} at %{self.root} over {len(self.nodes)} nodes: {params}"


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


def _legal(view: _View, root: int, interiors: Iterable[int], named: Sequence[int]) -> bool:
    group = {root, *interiors, *named}
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


_Raw = tuple[int, list[int], tuple[int, ...], dict[str, Any]]


def _window_product_core(view: _View, product: int) -> _Raw | None:
    """The im2col chain feeding a rank-2 product at ``product`` (no bias)."""
    node = view.node(product)
    if not isinstance(node.op, ops.MatMul) or node.shape.rank != 2:
        return None
    left, kernel = node.operands
    rows = view.node(left)
    if not isinstance(rows.op, ops.Reshape):
        return None
    permute = rows.operands[0]
    permute_op = view.op(permute)
    if not isinstance(permute_op, ops.Permute) or permute_op.order != (0, 2, 4, 1, 3, 5):
        return None
    inner = view.node(permute).operands[0]
    inner_op = view.op(inner)
    if not isinstance(inner_op, ops.Unfold) or inner_op.axis != 4 or inner_op.dilation != 1:
        return None
    outer = view.node(inner).operands[0]
    outer_op = view.op(outer)
    if not isinstance(outer_op, ops.Unfold) or outer_op.axis != 2 or outer_op.dilation != 1:
        return None
    if outer_op.step != inner_op.step:
        return None
    source = view.node(outer).operands[0]
    interiors = [left, permute, inner, outer]
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
        interiors += [source, pad_h_index]
        source = inner_source
    shape = view.node(source).shape
    if shape.rank != 4:
        return None
    batch, channels, height, width = shape.axes
    kh, kw, stride = outer_op.size, inner_op.size, outer_op.step
    out_h = view.node(outer).shape[2]
    out_w = view.node(inner).shape[4]
    depth = channels * kh * kw
    kernel_shape = view.node(kernel).shape
    if rows.shape.axes != (batch * out_h * out_w, depth) or kernel_shape.rank != 2 or kernel_shape[0] != depth:
        return None
    fields: dict[str, Any] = {
        "source": source,
        "kernel": kernel,
        "bias": None,
        "kernel_height": kh,
        "kernel_width": kw,
        "stride": stride,
        "padding": padding,
        "batch": batch,
        "channels": channels,
        "height": height,
        "width": width,
        "filters": kernel_shape[1],
        "output_height": out_h,
        "output_width": out_w,
    }
    return product, interiors, (), fields


def _biased(view: _View, root: int) -> _Raw | None:
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
    _, interiors, _, fields = core
    fields["bias"] = bias
    return root, [*interiors, product, spread], (), fields


def _match_window_product(view: _View, index: int) -> _Raw | None:
    biased = _biased(view, index)
    if biased is not None:
        return biased if _legal(view, biased[0], biased[1], biased[2]) else None
    core = _window_product_core(view, index)
    if core is None:
        return None
    # A legal biased match rooted at the single consumer subsumes the bare product.
    readers = view.consumers[index]
    if len(readers) == 1:
        wider = _biased(view, readers[0])
        if wider is not None and _legal(view, wider[0], wider[1], wider[2]):
            return None
    return core


def _match_reduce_window(view: _View, index: int) -> _Raw | None:
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
    lane_source: int | None = None
    for position, lane in enumerate(lanes):
        op = view.op(lane)
        if not (isinstance(op, ops.Narrow) and op.axis == 4 and op.start == position and op.length == 1):
            return None
        operand = view.node(lane).operands[0]
        if lane_source is None:
            lane_source = operand
        elif operand != lane_source:
            return None
    assert lane_source is not None
    lanes_node = view.node(lane_source)
    if not isinstance(lanes_node.op, ops.Reshape):
        return None
    permute = lanes_node.operands[0]
    permute_op = view.op(permute)
    if not isinstance(permute_op, ops.Permute) or permute_op.order != (0, 1, 2, 4, 3, 5):
        return None
    inner = view.node(permute).operands[0]
    outer = view.node(inner).operands[0]
    inner_op, outer_op = view.op(inner), view.op(outer)
    if not (isinstance(inner_op, ops.Unfold) and isinstance(outer_op, ops.Unfold)):
        return None
    size, stride = outer_op.size, outer_op.step
    if (
        inner_op.axis != 4
        or outer_op.axis != 2
        or inner_op.dilation != 1
        or outer_op.dilation != 1
        or inner_op.size != size
        or inner_op.step != stride
        or len(lanes) != size * size
        or lanes_node.shape[4] != size * size
    ):
        return None
    source = view.node(outer).operands[0]
    shape = view.node(source).shape
    if shape.rank != 4:
        return None
    interiors = [fold, *maxima, *lanes, lane_source, permute, inner, outer]
    interiors = sorted(set(interiors) - {index})
    batch, channels, height, width = shape.axes
    fields: dict[str, Any] = {
        "source": source,
        "size": size,
        "stride": stride,
        "batch": batch,
        "channels": channels,
        "height": height,
        "width": width,
    }
    if not _legal(view, index, interiors, ()):
        return None
    return index, interiors, (), fields


def _normalization_tail(view: _View, root: int) -> tuple[list[int], dict[str, Any], int] | None:
    """The shared tail ``((x - mean) / sqrt(variance + eps)) * scale + shift``.

    Returns the tail's interiors, its fields, and the ``Sub`` (centering) position.
    """
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
    fields: dict[str, Any] = {
        "input": source,
        "scale": scale,
        "shift": shift,
        "epsilon": epsilon,
        "mean": mean,
        "variance": variance,
        "batch": batch,
        "features": features,
        "epsilon_leaf": epsilon_leaf,
    }
    return interiors, fields, centered


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


def _training_raw(view: _View, index: int) -> _Raw | None:
    tail = _normalization_tail(view, index)
    if tail is None:
        return None
    interiors, fields, centered = tail
    batch = fields["batch"]
    mean_parts = _batch_mean(view, fields["mean"], fields["input"], batch)
    if mean_parts is None:
        return None
    variance = fields["variance"]
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
    fields["mean_count"] = mean_parts[1]
    fields["variance_count"] = variance_parts[1]
    return index, [*interiors, mean_parts[0], square, variance_parts[0]], (fields["mean"], variance), fields


def _match_batch_norm_training(view: _View, index: int) -> _Raw | None:
    raw = _training_raw(view, index)
    if raw is None or not _legal(view, raw[0], raw[1], raw[2]):
        return None
    return raw


def _match_batch_norm_inference(view: _View, index: int) -> _Raw | None:
    if _training_raw(view, index) is not None:
        return None
    tail = _normalization_tail(view, index)
    if tail is None:
        return None
    interiors, fields, _ = tail
    if not _legal(view, index, interiors, ()):
        return None
    return index, interiors, (), fields


_MATCHERS: tuple[tuple[PatternKind, Callable[[_View, int], _Raw | None]], ...] = (
    (PatternKind.WINDOW_PRODUCT, _match_window_product),
    (PatternKind.REDUCE_WINDOW, _match_reduce_window),
    (PatternKind.BATCH_NORM_TRAINING, _match_batch_norm_training),
    (PatternKind.BATCH_NORM_INFERENCE, _match_batch_norm_inference),
)


def discover(network: Network, wanted: Sequence[bool], readable: Sequence[bool]) -> list[PatternMatch]:
    """Every legal match over the wanted nodes: matcher order first, then recording order."""
    view = _View(network, wanted, readable)
    pool: list[PatternMatch] = []
    candidates = [index for index, node in enumerate(network.nodes_) if wanted[index] and not node.is_source]
    for kind, matcher in _MATCHERS:
        for index in candidates:
            raw = matcher(view, index)
            if raw is None:
                continue
            root, interiors, named, fields = raw
            if kind is PatternKind.WINDOW_PRODUCT and not _legal(view, root, interiors, named):
                continue
            pool.append(PatternMatch(kind, root, tuple(sorted(set(interiors))), tuple(named), fields))
    return pool


def elect(pool: Iterable[PatternMatch], repertoire: Iterable[PatternKind]) -> list[PatternMatch]:
    """First-wins election of non-overlapping matches whose kind the consumer supports."""
    kinds = set(repertoire)
    taken: set[int] = set()
    elected: list[PatternMatch] = []
    for match in pool:
        nodes = match.nodes
        if match.kind in kinds and taken.isdisjoint(nodes):
            elected.append(match)
            taken.update(nodes)
    return elected
