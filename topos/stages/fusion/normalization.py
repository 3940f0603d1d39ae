"""Batch normalization, over batch statistics (training) and supplied ones (inference).

Contract:
- Matches:

  - :class:`BatchNormTraining`: batch mean (sum along 0 over a constant leaf equal to the
    batch), centering, biased variance the same way, ``sqrt(variance + epsilon)``, divide,
    scale, shift, rooted at the shift ``Add``; mean and variance are named results.
  - :class:`BatchNormInference`: the same tail over supplied statistics. It has no home
    kernel: plans never elect it, emission raises it.

- Home kernel: :func:`batch_normalized` evaluates the normalization diamond in the recorded
  order with the same kernels, returning the output with the batch mean and biased variance
  it writes back into their named slots (fidelity *composed*).
- Raises: ``stablehlo.batch_norm_training`` (mean and variance are its second and third
  results) and ``stablehlo.batch_norm_inference``; the epsilon attribute is f32 whatever
  the element.

Example:
    >>> import numpy as np
    >>> from topos import f64
    >>> x = np.array([[1.0], [3.0]])
    >>> one = np.ones(1)
    >>> out, mean, variance = batch_normalized(x, one, np.zeros(1), np.zeros(1), 2 * one, 2 * one, f64)
    >>> out.ravel().tolist(), mean.tolist(), variance.tolist()
    ([-1.0, 1.0], [2.0], [1.0])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, final

import attrs
import numpy as np

from topos.ir import ops
from topos.ir.element import ElementType, f32
from topos.ir.ops import MapOperation
from topos.kernels import dispatch, reference
from topos.kernels.dispatch import Backend, Formula
from topos.stages.fusion.base import Array, Idiom, PatternMatch, RaiseWriter, View
from topos.stages.fusion.shared import narrowed, wide_operands
from topos.stages.stablehlo import spell

__all__ = [
    "BATCH_NORM_INFERENCE",
    "BATCH_NORM_TRAINING",
    "BatchNormInference",
    "BatchNormTraining",
    "batch_normalized",
]


@final
@attrs.frozen(slots=True)
class BatchNormTraining(PatternMatch):
    """Batch normalization over batch statistics; ``mean`` and ``variance`` are written back."""

    kind: ClassVar[Formula] = Formula.BATCH_NORM_TRAINING

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
        return batch_normalized(x, scale, shift, epsilon, mean_count, variance_count, element)


@final
@attrs.frozen(slots=True)
class BatchNormInference(PatternMatch):
    """Batch normalization over supplied ``mean`` and ``variance``."""

    kind: ClassVar[Formula] = Formula.BATCH_NORM_INFERENCE
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


# --------------------------------------------------------------------------- matchers


def _normalization_tail(view: View, root: int) -> tuple[BatchNormInference, int] | None:
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


def _batch_mean(view: View, position: int, of: int, batch: int) -> tuple[int, int] | None:
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


def _match_batch_norm_training(view: View, index: int) -> BatchNormTraining | None:
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


def _match_batch_norm_inference(view: View, index: int) -> BatchNormInference | None:
    # Batch statistics recorded in the same graph make it the training idiom, legal or not.
    if _match_batch_norm_training(view, index) is not None:
        return None
    found = _normalization_tail(view, index)
    return None if found is None else found[0]


# --------------------------------------------------------------------------- home kernels


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


# --------------------------------------------------------------------------- raises


def _epsilon(value: float) -> str:
    # The attribute is f32 whatever the element; a wider recorded epsilon rounds once here.
    return f"{spell(value, f32)} : f32"


def _raise_batch_norm_training(e: RaiseWriter, match: BatchNormTraining) -> None:
    """The normalization diamond -> batch_norm_training; mean and variance are its results."""
    root = match.root
    batch, features = match.batch, match.features
    x, scale, shift = wide_operands(
        e, [(e.names[match.input], (batch, features)), (e.names[match.scale], (features,)),
            (e.names[match.shift], (features,))], "norm",
    )  # fmt: skip
    wide = (e.ty((batch, features), e.wide), e.ty((features,), e.wide))
    group = e.temp("norm") if e.wide != e.mlir else f"%v{root}"
    e.lines.append(
        f'    {group}:3 = "stablehlo.batch_norm_training"({x}, {scale}, {shift}) '
        f"<{{epsilon = {_epsilon(match.epsilon)}, feature_index = 1 : i64}}> : "
        f"({wide[0]}, {wide[1]}, {wide[1]}) -> ({wide[0]}, {wide[1]}, {wide[1]})"
    )
    results = ((root, (batch, features)), (match.mean, (features,)), (match.variance, (features,)))
    for part, (index, shape) in enumerate(results):
        e.names[index] = narrowed(e, f"{group}#{part}", shape, f"%v{index}")


def _raise_batch_norm_inference(e: RaiseWriter, match: BatchNormInference) -> None:
    """The normalization tail over supplied statistics -> batch_norm_inference."""
    root = match.root
    batch, features = match.batch, match.features
    row = (features,)
    x, scale, shift, mean, variance = wide_operands(
        e, [(e.names[match.input], (batch, features)), (e.names[match.scale], row),
            (e.names[match.shift], row), (e.names[match.mean], row), (e.names[match.variance], row)],
        "norm",
    )  # fmt: skip
    full, vector = e.ty((batch, features), e.wide), e.ty(row, e.wide)
    target = e.temp("norm") if e.wide != e.mlir else f"%v{root}"
    out = e.line(
        target,
        f'"stablehlo.batch_norm_inference"({x}, {scale}, {shift}, {mean}, {variance}) '
        f"<{{epsilon = {_epsilon(match.epsilon)}, feature_index = 1 : i64}}> : "
        f"({full}, {vector}, {vector}, {vector}, {vector}) -> {full}",
    )
    e.names[root] = narrowed(e, out, (batch, features), f"%v{root}")


# --------------------------------------------------------------------------- catalog entries

BATCH_NORM_TRAINING: Idiom[BatchNormTraining] = Idiom(
    BatchNormTraining, _match_batch_norm_training, _raise_batch_norm_training
)
"""Batch normalization over batch statistics, raised as one batch_norm_training."""

BATCH_NORM_INFERENCE: Idiom[BatchNormInference] = Idiom(
    BatchNormInference, _match_batch_norm_inference, _raise_batch_norm_inference
)
"""Batch normalization over supplied statistics, raised as one batch_norm_inference."""
