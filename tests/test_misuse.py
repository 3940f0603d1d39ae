"""The misuse catalogue: every public area, called wrongly, answers with a named ToposError.

Each row of :data:`CASES` is ``(id, call, error, substrings)``. ``call`` is a one-line
lambda over a fresh :class:`World`; the test asserts the exact error class (not a parent),
that the message names this file and the lambda's line (the user's line), that it holds the
substrings (the symbol, shape or value involved), and that nothing the world holds changed:
the open tape (node count and text), the sealed network, the parameter bits, the optimizer
state, the tensors and the files on disk.

Rows whose error cannot know the user's line carry a reason in :data:`NO_SITE`; for them
the symbol or shape substrings are the whole check.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from conftest import here

import topos.checkpoint as ckpt
from topos import (
    Adam,
    AdamW,
    BackwardTargetError,
    CheckpointError,
    DeclarationError,
    ElementError,
    EmissionError,
    Entry,
    FeedError,
    ForeignSymbolError,
    Formula,
    InvalidArgumentError,
    MixedTapesError,
    NotDifferentiableError,
    OptimizerError,
    Parameters,
    ParametersError,
    PatternMatch,
    RecordingError,
    SealedTapeError,
    Sgd,
    Shape,
    ShapeMismatchError,
    SymbolError,
    Tape,
    Tensor,
    ToposError,
    Value,
    atan2,
    bf16,
    check_grad,
    concat,
    einsum,
    emission,
    emit_network,
    f32,
    f64,
    gradient,
    plan,
    stack,
    where,
)
from topos.errors import CapacityError, ElementRangeError, FrozenError, UnsupportedError
from topos.init import dropout, normal, uniform, xavier
from topos.ir import ops
from topos.nn import (
    Activation,
    AvgPool2d,
    BatchNorm,
    BatchNorm2d,
    Conv1d,
    Conv2d,
    ConvTranspose2d,
    Dropout,
    Embedding,
    GroupNorm,
    LayerNorm,
    Linear,
    MaxPool,
    Mlp,
    RmsNorm,
    Sequential,
    Visitor,
    avg_pool2d,
    batch_norm,
    causal_mask,
    conv2d,
    conv_transpose2d,
    cross_entropy,
    max_pool,
    mse,
    scaled_dot_product,
    tanh,
)
from topos.optim import schedules
from topos.plugins import UnknownElementError, UnknownNameError, registry
from topos.stages.fusion import ReduceWindow

FILE = __file__


class World:
    """Everything a misuse case may touch, built fresh per case."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        (tmp / "keep.txt").write_text("untouched")
        t = Tape(f32)
        self.tape = t
        self.x = t.input(np.ones((2, 3), np.float32))
        self.v = t.input([1.0, 2.0, 3.0])
        self.s = t.input(1.0)
        self.img = t.input(np.ones((1, 1, 4, 4), np.float32))
        self.img2 = t.input(np.ones((1, 2, 4, 4), np.float32))
        self.total = self.x.sum()
        self.constant = t.leaf(1.0)
        self.sel = t.input(Tensor.selection([0, 1], 3))
        self.linear = Linear(t, np.ones((3, 2), np.float32), np.zeros(2, np.float32))
        self.norm = LayerNorm(t, np.ones(3), np.zeros(3), 1e-5)
        self.rms = RmsNorm(t, np.ones(3), 1e-5)
        self.bn = BatchNorm(t, np.ones(3), np.zeros(3), 1e-5)
        self.conv = Conv2d(t, np.ones((2, 1, 2, 2)), np.zeros(2))
        self.embed = Embedding(t, np.ones((3, 2)))
        self.drop = Dropout(t, (2, 3))
        self.seq = t.input(np.ones((1, 3, 5), np.float32))
        self.pixel = t.input(np.ones((1, 1, 1, 1), np.float32))
        self.k2 = t.input(np.ones((2, 1, 2, 2), np.float32))
        self.conv1d = Conv1d(t, np.ones((2, 2, 2)))
        self.conv1d_long = Conv1d(t, np.ones((2, 3, 7)))
        self.up = ConvTranspose2d(t, np.ones((1, 1, 1, 1)), padding=2)
        self.gn = GroupNorm(t, 2, np.ones(2), np.zeros(2), 1e-5)
        self.bn2d = BatchNorm2d(t, np.ones(3), np.zeros(3), 1e-5)
        self.bn1 = BatchNorm2d(t, np.ones(1), np.zeros(1), 1e-5)
        self.ln2 = LayerNorm(t, np.ones((4, 4)), np.zeros((4, 4)), 1e-5)
        self.other = Tape(f32).input([1.0, 2.0, 3.0])

        def build(tape: Tape) -> tuple[Value, Value, Value, Value]:
            w = tape.parameter(np.array([0.5, -1.0, 2.0], np.float32))
            inp = tape.input(np.array([1.0, 2.0, 3.0], np.float32))
            y = w * inp
            return w, inp, y, y.sum()

        self.net, (self.w, self.inp, self.y, self.loss) = Tape.record(build, element=f32)
        self.params = self.net.parameters()
        self.grads = self.params.map(lambda p: p * 2.0)
        self.plan = self.net.entry(self.loss).lower()
        foreign, self.foreign = Tape.record(lambda tape: tape.parameter([1.0, 2.0, 3.0]), element=f32)
        self.foreign_params = foreign.parameters()
        self.adam = Adam(learning_rate=1e-3)
        self.adam_state = self.adam.init(self.params)
        self.sgd_state = Sgd(learning_rate=0.1).init(self.params)
        self.tensor = Tensor([[1.0, 2.0], [3.0, 4.0]], f32)
        sealed = Tape(f32)
        self.sealed_value = sealed.input([1.0])
        sealed.seal()

    def wrong_shape_params(self) -> Parameters:
        """A table whose one slot holds [5] where [3] was recorded (built around the checks)."""
        return Parameters(self.params.lineage, self.params.symbols, (Tensor(np.zeros(5, np.float32)),))

    def f64_grads(self) -> Parameters:
        """Gradients of the right shape but the wrong element (f64 for f32 parameters)."""
        return Parameters(self.params.lineage, self.params.symbols, (Tensor(np.ones(3), f64),))

    def snapshot(self) -> tuple[Any, ...]:
        return (
            len(self.tape),
            self.tape.describe(),
            self.net.describe(),
            tuple(p.bits().tobytes() for p in self.params.payloads()),
            tuple(p.bits().tobytes() for p in self.grads.payloads()),
            {k: v.tobytes() for k, v in self.adam_state.arrays().items()},
            self.adam_state.step,
            sorted(os.listdir(self.tmp)),
            (self.tmp / "keep.txt").read_text(),
            self.tensor.bits().tobytes(),
            self.tensor.shape,
            self.tensor.element,
        )


W = World
Case = tuple[str, Callable[[World], object], type[ToposError], tuple[str, ...]]


def _init_ignoring_shape(shape: Shape) -> Tensor:
    return Tensor.zeros((5,) * shape.rank)


# fmt: off
CASES: list[Case] = [
    # ------------------------------------------------------------------ Value recording
    ("map-string", lambda w: w.x.map("Exp"), InvalidArgumentError, ("'Exp'", "MapOperation.EXP", "[2, 3]")),  # type: ignore[arg-type]
    ("map-int", lambda w: w.x.map(3), InvalidArgumentError, ("got 3", "MapOperation")),  # type: ignore[arg-type]
    ("unsqueeze-str", lambda w: w.x.unsqueeze("0"), InvalidArgumentError, ("'0'", "unsqueeze", "[2, 3]")),  # type: ignore[arg-type]
    ("unsqueeze-bool", lambda w: w.x.unsqueeze(True), InvalidArgumentError, ("True", "bool")),
    ("unsqueeze-range", lambda w: w.x.unsqueeze(5), InvalidArgumentError, ("5", "[2, 3]")),
    ("broadcast-to-str", lambda w: w.x.broadcast_to("ab"), InvalidArgumentError, ("'ab'", "[2, 3]")),  # type: ignore[arg-type]
    ("broadcast-to-shape", lambda w: w.v.broadcast_to((2, 4)), ShapeMismatchError, ("[3]", "[2, 4]")),
    ("concat-number", lambda w: concat([1.0, w.x], 0), RecordingError, ("float", "position 0")),  # type: ignore[list-item]
    ("concat-single-value", lambda w: concat(w.x, 0), InvalidArgumentError, ("Value",)),  # type: ignore[arg-type]
    ("concat-empty", lambda w: concat([], 0), InvalidArgumentError, ("at least one",)),
    ("concat-ranks", lambda w: concat([w.x, w.v], 0), ShapeMismatchError, ("[2, 3]", "[3]")),
    ("concat-axis-bool", lambda w: concat([w.x, w.x], True), InvalidArgumentError, ("True", "bool")),
    ("stack-mixed", lambda w: stack([w.v, w.other]), MixedTapesError, ("stack",)),
    ("add-huge-int", lambda w: w.x + 10**400, RecordingError, ("401 digits", "[2, 3]")),
    ("add-f32-overflow", lambda w: w.x + 1e300, ElementRangeError, ("1e+300", "f32")),
    ("mul-bool", lambda w: w.x * True, RecordingError, ("bool", "True", "[2, 3]")),
    ("radd-bool", lambda w: False + w.x, RecordingError, ("bool", "False")),
    ("compare-gt", lambda w: w.x > w.v, ShapeMismatchError, ("[2, 3]", "[3]")),
    ("compare-ge", lambda w: w.x >= True, RecordingError, ("bool", "True")),
    ("compare-lt", lambda w: w.x < w.v, ShapeMismatchError, ("[2, 3]", "[3]")),
    ("compare-le", lambda w: w.x.eq(w.v), ShapeMismatchError, ("[2, 3]", "[3]")),
    ("index-value", lambda w: w.x[5], InvalidArgumentError, ("5", "[2, 3]")),
    ("index-by-value", lambda w: w.x[w.v], UnsupportedError, ("known when recording", "[2, 3]")),
    ("index-empty", lambda w: w.x[:, 2:1], InvalidArgumentError, ("selects no element",)),
    ("at-set-twice", lambda w: w.x.at[[0, 0]].set(1.0), InvalidArgumentError, ("twice", "[2, 3]")),
    ("where-mask-shape", lambda w: where(w.v, w.x, w.x), ShapeMismatchError, ("[2, 3]", "mask [3]")),
    ("atan2-shape", lambda w: w.x.atan2(w.v), ShapeMismatchError, ("atan2", "[2, 3]", "[3]")),
    ("atan2-str", lambda w: w.x.atan2("1"), InvalidArgumentError, ("atan2", "[2, 3]", "str")),
    ("atan2-number-y", lambda w: atan2(1.0, w.x), InvalidArgumentError, ("atan2", "1.0")),  # type: ignore[type-var]
    ("sum-axis-range", lambda w: w.x.sum(axis=(0, 2)), InvalidArgumentError, ("2", "rank 2")),
    ("einsum-diagonal", lambda w: einsum("ii->i", w.x), UnsupportedError, ("diagonal",)),
    ("slice-value", lambda w: w.x[:, 1:3, 0], InvalidArgumentError, ("too many indices", "[2, 3]")),
    ("truth-value", lambda w: bool(w.x), RecordingError, ("truth value", "[2, 3]")),
    ("sum-along-bool", lambda w: w.x.sum_along(True), InvalidArgumentError, ("True", "bool", "sum_along")),
    ("sum-along-float", lambda w: w.x.sum_along(1.0), InvalidArgumentError, ("1.0", "float")),  # type: ignore[arg-type]
    ("sum-along-range", lambda w: w.x.sum_along(2), InvalidArgumentError, ("axis 2", "rank 2")),
    ("logsumexp-str", lambda w: w.x.logsumexp("1"), InvalidArgumentError, ("'1'", "logsumexp")),  # type: ignore[arg-type]
    ("log-softmax-range", lambda w: w.x.log_softmax(-3), InvalidArgumentError, ("-3", "rank 2")),
    ("mean-along-bool", lambda w: w.x.mean_along(False), InvalidArgumentError, ("False", "mean_along")),
    ("reshape-minus-one", lambda w: w.x.reshape((-1, 4)), ShapeMismatchError, ("-1", "volume 6", "multiple of 4")),
    ("reshape-volume", lambda w: w.x.reshape((4,)), ShapeMismatchError, ("[2, 3]", "[4]")),
    ("reshape-str", lambda w: w.x.reshape("6"), InvalidArgumentError, ("'6'",)),  # type: ignore[arg-type]
    ("reshape-float-extent", lambda w: w.x.reshape((6.0,)), InvalidArgumentError, ("6.0",)),  # type: ignore[arg-type]
    ("permute-none", lambda w: w.x.permute(None), InvalidArgumentError, ("None", "Permute", "[2, 3]")),  # type: ignore[arg-type]
    ("permute-bool", lambda w: w.x.permute((True, 0)), InvalidArgumentError, ("True", "Permute")),
    ("permute-repeat", lambda w: w.x.permute((0, 0)), InvalidArgumentError, ("[0, 0]",)),
    ("narrow-bool-axis", lambda w: w.x.narrow(True, 0, 1), InvalidArgumentError, ("True", "narrow")),
    ("narrow-negative-start", lambda w: w.x.narrow(1, -1, 1), InvalidArgumentError, ("start", "-1")),
    ("narrow-float-length", lambda w: w.x.narrow(1, 0, 1.5), InvalidArgumentError, ("length", "1.5")),  # type: ignore[arg-type]
    ("narrow-too-long", lambda w: w.x.narrow(1, 2, 5), InvalidArgumentError, ("[2, 3]",)),
    ("pad-zero-extent", lambda w: w.x.pad(1, 0, 0), InvalidArgumentError, ("extent", "Pad")),
    ("unfold-zero-size", lambda w: w.x.unfold(1, 0, 1), InvalidArgumentError, ("size", "Unfold")),
    ("fold-bool-axis", lambda w: w.x.fold(True, 1, 1, 1, 3), InvalidArgumentError, ("axis", "True")),
    ("broadcast-huge", lambda w: w.s.broadcast((2**40, 2**40)), CapacityError, ("1099511627776", "2**59")),
    ("broadcast-str", lambda w: w.s.broadcast("ab"), InvalidArgumentError, ("'ab'",)),  # type: ignore[arg-type]
    ("broadcast-along-bool", lambda w: w.v.broadcast_along(0, True), InvalidArgumentError, ("extent", "True")),
    ("broadcast-along-zero", lambda w: w.v.broadcast_along(0, 0), InvalidArgumentError, ("extent", "0")),
    ("matmul-shapes", lambda w: w.x @ w.x, ShapeMismatchError, ("[2, 3]",)),
    ("add-shapes", lambda w: w.x + w.v, ShapeMismatchError, ("[2, 3]", "[3]")),
    ("transpose-rank3", lambda w: w.img.transpose(), InvalidArgumentError, ("[1, 1, 4, 4]", "permute")),
    ("squeeze-not-one", lambda w: w.x.squeeze(0), ShapeMismatchError, ("[2, 3]", "extent 2")),
    ("mixed-tapes", lambda w: w.v + w.other, MixedTapesError, ("Add",)),
    ("sealed-tape", lambda w: w.sealed_value + 1.0, SealedTapeError, ("sealed",)),
    # ------------------------------------------------------------------ Tape
    ("leaf-of-value", lambda w: w.tape.leaf(w.x), RecordingError, ("leaf", "recorded value")),  # type: ignore[arg-type]
    ("leaf-of-text", lambda w: w.tape.leaf("abc"), RecordingError, ("leaf", "'abc'", "f32")),
    ("leaf-empty", lambda w: w.tape.leaf([]), InvalidArgumentError, ("never empty",)),
    ("parameter-complex", lambda w: w.tape.parameter(np.ones(2, np.complex64)), RecordingError, ("parameter", "complex64")),
    ("input-overflow", lambda w: w.tape.input([1e300]), ElementRangeError, ("1e+300", "f32")),
    ("constant-bool", lambda w: w.tape.constant((2,), True), RecordingError, ("True",)),
    ("constant-shape-str", lambda w: w.tape.constant("ab", 1.0), InvalidArgumentError, ("'ab'",)),  # type: ignore[arg-type]
    ("resolve-non-symbol", lambda w: w.tape.resolve(3), SymbolError, ("int",)),  # type: ignore[arg-type]
    ("resolve-foreign", lambda w: w.tape.resolve(w.loss), ForeignSymbolError, ("different network",)),
    ("record-op-not-opcode", lambda w: w.tape.record_op("Add", [w.x, w.x]), RecordingError, ("'Add'", "opcode")),  # type: ignore[arg-type]
    ("record-op-number", lambda w: w.tape.record_op(ops.Neg(), [1.0]), RecordingError, ("Neg", "float")),  # type: ignore[list-item]
    ("rollback-foreign-mark", lambda w: w.tape.rollback(Tape().mark()), RecordingError, ("rollback", "mark")),
    ("tape-element-text", lambda w: Tape("f32"), ElementError, ("str",)),  # type: ignore[arg-type]
    ("differentiate-nonscalar", lambda w: w.tape.differentiate(w.x, [w.x]), BackwardTargetError, ("[2, 3]",)),
    ("differentiate-constant", lambda w: w.tape.differentiate(w.total, [w.constant]), NotDifferentiableError, ("Leaf",)),
    # ------------------------------------------------------------------ opcodes and shapes
    ("op-map-text", lambda w: ops.Map("Exp"), InvalidArgumentError, ("'Exp'", "MapOperation.EXP")),  # type: ignore[arg-type]
    ("op-sum-along-negative", lambda w: ops.SumAlong(-1), InvalidArgumentError, ("SumAlong", "axis", "-1")),
    ("op-reshape-tuple", lambda w: ops.Reshape((2, 3)), InvalidArgumentError, ("Reshape", "Shape", "(2, 3)")),  # type: ignore[arg-type]
    ("op-broadcast-list", lambda w: ops.Broadcast([2]), InvalidArgumentError, ("Broadcast", "[2]")),  # type: ignore[arg-type]
    ("op-narrow-length", lambda w: ops.Narrow(0, 0, 0), InvalidArgumentError, ("Narrow", "length")),
    ("op-unfold-step", lambda w: ops.Unfold(0, 1, 0, 1), InvalidArgumentError, ("Unfold", "step")),
    ("op-permute-text", lambda w: ops.Permute("01"), InvalidArgumentError, ("Permute", "'01'")),  # type: ignore[arg-type]
    ("op-bool-axis", lambda w: ops.LogSoftmax(True), InvalidArgumentError, ("LogSoftmax", "True")),
    ("shape-zero", lambda w: Shape((0,)), InvalidArgumentError, ("[0]",)),
    ("shape-of-text", lambda w: Shape.of("ab"), InvalidArgumentError, ("'ab'",)),  # type: ignore[arg-type]
    ("shape-of-float", lambda w: Shape.of((2.0, 3)), InvalidArgumentError, ("2.0",)),  # type: ignore[arg-type]
    ("shape-of-bool", lambda w: Shape.of((True, 2)), InvalidArgumentError, ("True",)),
    ("shape-of-none", lambda w: Shape.of(None), InvalidArgumentError, ("None",)),  # type: ignore[arg-type]
    ("shape-volume", lambda w: Shape((2**40, 2**40)), CapacityError, ("2**59", "1099511627776")),
    # ------------------------------------------------------------------ Tensor
    ("tensor-f16", lambda w: Tensor(np.zeros(2, np.float16)), ElementError, ("float16", "f32", "f64", "bf16")),
    ("tensor-overflow", lambda w: Tensor([1e300], f32), ElementRangeError, ("1e+300", "f32")),
    ("tensor-bf16-overflow", lambda w: Tensor(1e39, bf16), ElementRangeError, ("1e+39", "bf16")),
    ("tensor-bool", lambda w: Tensor(True), ElementError, ("bool",)),
    ("tensor-huge-int", lambda w: Tensor(10**400), ElementError, ("401 digits",)),
    ("tensor-element-text", lambda w: Tensor([1.0], element="f32"), ElementError, ("'f32'",)),  # type: ignore[arg-type]
    ("tensor-text", lambda w: Tensor("abc"), ElementError, ("str",)),
    ("tensor-empty", lambda w: Tensor([]), InvalidArgumentError, ("never empty",)),
    ("tensor-set-shape", lambda w: setattr(w.tensor, "shape", Shape((4,))), FrozenError, ("Tensor.shape", "read-only", "[2, 2]")),
    ("tensor-set-element", lambda w: setattr(w.tensor, "element", f64), FrozenError, ("Tensor.element",)),
    ("tensor-set-weak", lambda w: setattr(w.tensor, "weak", True), FrozenError, ("Tensor.weak",)),
    ("tensor-del-shape", lambda w: delattr(w.tensor, "shape"), FrozenError, ("Tensor.shape",)),
    ("tensor-add-bool", lambda w: w.tensor + True, ElementError, ("bool", "[2, 2]")),
    ("tensor-mul-huge", lambda w: w.tensor * 10**400, ElementError, ("401 digits",)),
    ("tensor-add-text", lambda w: w.tensor + "a", ElementError, ("str", "[2, 2]")),  # type: ignore[operator]
    ("tensor-add-overflow", lambda w: w.tensor + 1e300, ElementRangeError, ("1e+300", "f32")),
    ("tensor-gt", lambda w: w.tensor > True, ElementError, ("bool", "[2, 2]")),
    ("tensor-le", lambda w: w.tensor <= "a", ElementError, ("str",)),  # type: ignore[operator]
    ("tensor-index", lambda w: w.tensor[0, 0, 0], InvalidArgumentError, ("index", "[2, 2]")),
    ("tensor-iterate", lambda w: list(w.tensor), UnsupportedError, ("narrow",)),
    ("tensor-permute-none", lambda w: w.tensor.permute(None), InvalidArgumentError, ("Permute", "None")),  # type: ignore[arg-type]
    ("tensor-reshape-minus-one", lambda w: w.tensor.reshape((-1, 3)), ShapeMismatchError, ("-1", "volume 4")),
    ("tensor-sum-along-bool", lambda w: w.tensor.sum_along(True), InvalidArgumentError, ("sum_along", "True", "bool")),
    ("tensor-narrow-past-end", lambda w: w.tensor.narrow(0, 1, 5), InvalidArgumentError, ("[2, 2]",)),
    ("tensor-matmul-shapes", lambda w: w.tensor.matmul(Tensor([1.0, 2.0, 3.0], f32)), ShapeMismatchError, ("[2, 2]", "[3]")),
    ("tensor-elements-clash", lambda w: w.tensor + Tensor([[1.0, 2.0], [3.0, 4.0]], f64), ElementError, ("f32", "f64")),
    ("tensor-broadcast-huge", lambda w: Tensor(1.0, f32).broadcast((2**40, 2**40)), CapacityError, ("2**59",)),
    ("tensor-convert-text", lambda w: w.tensor.convert("f64"), ElementError, ("'f64'",)),  # type: ignore[arg-type]
    ("tensor-scalar-many", lambda w: w.tensor.scalar(), ShapeMismatchError, ("[2, 2]",)),
    ("selection-fractional", lambda w: Tensor.selection([0.5, 1.0], 3), InvalidArgumentError, ("0.5", "integral")),  # type: ignore[list-item]
    ("selection-bool", lambda w: Tensor.selection([True], 3), InvalidArgumentError, ("bool",)),
    ("selection-range", lambda w: Tensor.selection([3], 3), InvalidArgumentError, ("[0, 3)",)),
    ("selection-vocab-bool", lambda w: Tensor.selection([0], True), InvalidArgumentError, ("vocab", "True")),
    ("filled-overflow", lambda w: Tensor.filled((2,), 1e300, f32), ElementRangeError, ("1e+300", "f32")),
    ("zeros-text-shape", lambda w: Tensor.zeros("ab"), InvalidArgumentError, ("'ab'",)),  # type: ignore[arg-type]
    # ------------------------------------------------------------------ Network, Parameters, Field, Run
    ("forward-wrong-payload", lambda w: w.net.forward(w.wrong_shape_params()), ParametersError, ("[5]", "[3]", "the interpreter")),
    ("plan-wrong-payload", lambda w: w.plan.forward(w.wrong_shape_params()), ParametersError, ("[5]", "[3]", "the plan")),
    ("forward-foreign-table", lambda w: w.net.forward(w.foreign_params), ParametersError, ("different network", "1 slots")),
    ("plan-foreign-table", lambda w: w.plan.forward(w.foreign_params), ParametersError, ("different network", "1 slots")),
    ("forward-not-a-table", lambda w: w.net.forward("params"), FeedError, ("str",)),  # type: ignore[arg-type]
    ("feed-wrong-shape", lambda w: w.net.forward(w.params, {w.inp: np.zeros(5)}), FeedError, ("[5]", "[3]", "Input")),
    ("feed-overflow", lambda w: w.net.forward(w.params, {w.inp: [1e300, 0.0, 0.0]}), ElementRangeError, ("1e+300", "f32", "Input")),
    ("feed-parameter", lambda w: w.net.forward(w.params, {w.w: [1.0, 2.0, 3.0]}), FeedError, ("only inputs", "Parameter")),
    ("feeds-not-mapping", lambda w: w.net.forward(w.params, [1.0]), FeedError, ("list",)),  # type: ignore[arg-type]
    ("feed-foreign", lambda w: w.net.forward(w.params, {w.foreign: [1.0, 2.0, 3.0]}), FeedError, ("different network",)),
    ("network-index-int", lambda w: w.net.index(3), SymbolError, ("int",)),  # type: ignore[arg-type]
    ("network-node-foreign", lambda w: w.net.node(w.foreign), ForeignSymbolError, ("different network",)),
    ("params-of-foreign", lambda w: w.params.of(w.foreign), ForeignSymbolError, ("different network",)),
    ("params-not-aligned", lambda w: w.params + w.foreign_params, ParametersError, ("not aligned", "[3]")),
    ("params-map-reshape", lambda w: w.params.map(lambda p: p.reshape((3, 1))), ShapeMismatchError, ("[3]", "[3, 1]")),
    ("params-map-number", lambda w: w.params.map(lambda p: 3), ParametersError, ("int",)),  # type: ignore[arg-type, return-value]
    ("params-with-wrong-shape", lambda w: w.params.with_payloads([(w.w, Tensor(np.zeros(5, np.float32)))]), ShapeMismatchError, ("[3]", "[5]")),
    ("run-of-foreign", lambda w: w.net.forward(w.params).of(w.foreign), ForeignSymbolError, ("different network",)),
    ("run-backward-nonscalar", lambda w: w.net.forward(w.params).backward(w.y), BackwardTargetError, ("[3]",)),
    ("sliced-run-undeclared", lambda w: w.net.entry(w.loss).interpret(w.params).of(w.y), DeclarationError, ("not declared",)),
    ("field-foreign", lambda w: w.net.forward(w.params).field().parameters(w.foreign_params), ParametersError, ("different network",)),
    # ------------------------------------------------------------------ entry, plan, compile, gradient
    ("compile-posture-text", lambda w: w.net.compile(w.loss, numerics="exact"), DeclarationError, ("'exact'", "Numerics.EXACT")),  # type: ignore[arg-type]
    ("compile-backward-text", lambda w: w.net.compile(w.loss, backward="yes"), DeclarationError, ("backward", "'yes'")),  # type: ignore[arg-type]
    ("compile-roots-text", lambda w: w.net.compile("loss"), SymbolError, ("roots", "str")),  # type: ignore[arg-type]
    ("compile-observe-int", lambda w: w.net.compile(w.loss, observe=3), SymbolError, ("observe", "3")),  # type: ignore[arg-type]
    ("entry-numerics-text", lambda w: w.net.entry(w.loss).numerics("exact"), DeclarationError, ("'exact'",)),  # type: ignore[arg-type]
    ("entry-of-int", lambda w: Entry.of(3), SymbolError, ("roots", "int")),  # type: ignore[arg-type]
    ("plan-entry-text", lambda w: plan(w.net, "entry"), DeclarationError, ("Entry", "str")),  # type: ignore[arg-type]
    ("plan-network-text", lambda w: plan("net", Entry.of(w.loss)), DeclarationError, ("Network", "str")),  # type: ignore[arg-type]
    ("plan-feed-parameter", lambda w: w.plan.forward(w.params, {w.w: [1.0, 2.0, 3.0]}), FeedError, ("only inputs",)),
    ("entry-foreign-root", lambda w: w.net.entry(w.foreign).lower(), ForeignSymbolError, ("different network",)),
    ("gradient-nonscalar", lambda w: gradient(w.net, w.y, [w.w]), BackwardTargetError, ("[3]",)),
    ("gradient-foreign-wrt", lambda w: gradient(w.net, w.loss, [w.foreign]), ForeignSymbolError, ("different network",)),
    # ------------------------------------------------------------------ nn layers
    ("linear-on-array", lambda w: w.linear(np.ones((2, 3))), InvalidArgumentError, ("Linear", "ndarray", "[..., 3]")),  # type: ignore[arg-type]
    ("linear-input-shape", lambda w: w.linear(w.v), ShapeMismatchError, ("Linear", "[..., 3]", "[3]")),
    ("linear-bias-shape", lambda w: Linear(w.tape, np.ones((3, 2)), np.ones(3)), ShapeMismatchError, ("bias", "[2]", "[3]")),
    ("linear-tape-text", lambda w: Linear("tape", np.ones((3, 2))), InvalidArgumentError, ("Linear", "Tape", "str")),  # type: ignore[arg-type]
    ("linear-init-bool", lambda w: Linear.init(w.tape, True, 2, xavier(0)), InvalidArgumentError, ("fan_in", "True")),
    ("linear-init-ignores-shape", lambda w: Linear.init(w.tape, 2, 3, _init_ignoring_shape), ShapeMismatchError, ("Linear", "weights", "[5, 5]", "[2, 3]")),
    ("mlp-init-ignores-shape", lambda w: Mlp(w.tape, [2, 3, 1], Activation.TANH, _init_ignoring_shape), ShapeMismatchError, ("Mlp layers.0", "weights", "[2, 3]")),
    ("mlp-bool-width", lambda w: Mlp(w.tape, [2, True], Activation.TANH, xavier(0)), ShapeMismatchError, ("Mlp", "True")),
    ("mlp-activation-text", lambda w: Mlp(w.tape, [2, 1], "tanh", xavier(0)), InvalidArgumentError, ("Mlp", "'tanh'")),  # type: ignore[arg-type]
    ("mlp-init-not-callable", lambda w: Mlp(w.tape, [2, 1], Activation.TANH, 3), InvalidArgumentError, ("init", "3")),  # type: ignore[arg-type]
    ("layernorm-epsilon-text", lambda w: LayerNorm(w.tape, np.ones(3), np.zeros(3), epsilon="tiny"), InvalidArgumentError, ("LayerNorm", "epsilon", "'tiny'")),  # type: ignore[arg-type]
    ("layernorm-epsilon-negative", lambda w: LayerNorm(w.tape, np.ones(3), np.zeros(3), -1.0), InvalidArgumentError, ("LayerNorm", "-1.0")),
    ("layernorm-input-shape", lambda w: w.norm(w.img), ShapeMismatchError, ("LayerNorm", "[..., 3]", "[1, 1, 4, 4]")),
    ("rmsnorm-epsilon-nan", lambda w: RmsNorm(w.tape, np.ones(3), float("nan")), InvalidArgumentError, ("RmsNorm", "nan")),
    ("rmsnorm-on-array", lambda w: w.rms(np.ones(3)), InvalidArgumentError, ("RmsNorm", "ndarray")),  # type: ignore[arg-type]
    ("batchnorm-rank", lambda w: w.bn(w.img), ShapeMismatchError, ("BatchNorm", "[batch, 3]", "[1, 1, 4, 4]")),
    ("batchnorm-epsilon-bool", lambda w: BatchNorm(w.tape, np.ones(3), np.zeros(3), True), InvalidArgumentError, ("BatchNorm", "True")),
    ("embedding-rank", lambda w: Embedding(w.tape, np.ones(3)), ShapeMismatchError, ("Embedding", "[3]")),
    ("embedding-input-shape", lambda w: w.embed(w.img), ShapeMismatchError, ("Embedding", "[count, 3]", "[1, 1, 4, 4]")),
    ("embedding-init-ignores-shape", lambda w: Embedding.init(w.tape, 3, 2, _init_ignoring_shape), ShapeMismatchError, ("Embedding", "[3, 2]")),
    ("conv-stride-zero", lambda w: Conv2d(w.tape, np.ones((2, 1, 2, 2)), stride=0), InvalidArgumentError, ("Conv2d", "stride", "0")),
    ("conv-channels", lambda w: w.conv(w.img2), ShapeMismatchError, ("Conv2d", "[1, 2, 4, 4]")),
    ("conv-init-bool", lambda w: Conv2d.init(w.tape, True, 2, 2, xavier(0)), InvalidArgumentError, ("channels", "True")),
    ("maxpool-size-one", lambda w: MaxPool(1), InvalidArgumentError, ("MaxPool", "size=1")),
    ("maxpool-size-bool", lambda w: MaxPool(True), InvalidArgumentError, ("MaxPool", "True")),
    ("maxpool-rank", lambda w: MaxPool(2)(w.x), ShapeMismatchError, ("MaxPool", "[2, 3]")),
    ("dropout-shape-text", lambda w: Dropout(w.tape, "ab"), ShapeMismatchError, ("Dropout", "'ab'")),  # type: ignore[arg-type]
    ("dropout-feed-shape", lambda w: w.drop.feed(Tensor.ones((3, 2))), ShapeMismatchError, ("Dropout", "[3, 2]", "[2, 3]")),
    ("dropout-feed-value", lambda w: w.drop.feed(w.x), InvalidArgumentError, ("Dropout.feed", "Value")),  # type: ignore[arg-type]
    ("sequential-not-callable", lambda w: Sequential(3), InvalidArgumentError, ("Sequential", "3")),  # type: ignore[arg-type]
    ("sequential-stage-returns-number", lambda w: Sequential(lambda v: 1.0)(w.x), InvalidArgumentError, ("stage 0", "float")),  # type: ignore[arg-type, return-value]
    ("sequential-on-array", lambda w: Sequential(w.linear)(np.ones((2, 3))), InvalidArgumentError, ("Sequential", "ndarray")),  # type: ignore[arg-type]
    ("conv1d-groups", lambda w: Conv1d(w.tape, np.ones((3, 1, 2)), groups=2), ShapeMismatchError, ("Conv1d", "groups=2", "F=3")),
    ("conv1d-padding-negative", lambda w: Conv1d(w.tape, np.ones((2, 1, 2)), padding=-1), InvalidArgumentError, ("Conv1d", "padding", "-1")),
    ("conv1d-padding-triple", lambda w: Conv1d(w.tape, np.ones((2, 1, 2)), padding=(1, 1, 1)), InvalidArgumentError, ("Conv1d", "padding", "(1, 1, 1)")),  # type: ignore[arg-type]
    ("conv1d-rank", lambda w: w.conv1d(w.img), ShapeMismatchError, ("Conv1d", "[batch, 2, length]", "[1, 1, 4, 4]")),
    ("conv1d-channels", lambda w: w.conv1d(w.seq), ShapeMismatchError, ("Conv1d", "[batch, 2, length]", "[1, 3, 5]")),
    ("conv1d-window", lambda w: w.conv1d_long(w.seq), ShapeMismatchError, ("conv1d window 7", "[1, 3, 5]")),
    ("conv-transpose-groups", lambda w: ConvTranspose2d(w.tape, np.ones((3, 1, 2, 2)), groups=2), ShapeMismatchError, ("ConvTranspose2d", "groups=2", "C=3")),
    ("conv-transpose-output-padding", lambda w: ConvTranspose2d(w.tape, np.ones((1, 1, 2, 2)), stride=2, output_padding=2), InvalidArgumentError, ("output_padding 2", "stride 2")),
    ("conv-transpose-channels", lambda w: w.up(w.img2), ShapeMismatchError, ("ConvTranspose2d", "[batch, 1, height, width]", "[1, 2, 4, 4]")),
    ("conv-transpose-no-output", lambda w: w.up(w.img), ShapeMismatchError, ("conv_transpose2d padding (2, 2)", "leaves no output", "[1, 1, 4, 4]")),
    ("conv-transpose2d-groups", lambda w: conv_transpose2d(w.img2, w.k2, groups=3), ShapeMismatchError, ("conv_transpose2d groups=3", "[1, 2, 4, 4]", "[2, 1, 2, 2]")),
    ("groupnorm-groups", lambda w: GroupNorm(w.tape, 2, np.ones(3), np.zeros(3), 1e-5), ShapeMismatchError, ("GroupNorm", "groups=2", "C=3")),
    ("groupnorm-groups-zero", lambda w: GroupNorm(w.tape, 0, np.ones(3), np.zeros(3), 1e-5), InvalidArgumentError, ("GroupNorm", "groups", "0")),
    ("groupnorm-channels", lambda w: w.gn(w.img), ShapeMismatchError, ("GroupNorm", "[batch, 2, ...]", "[1, 1, 4, 4]")),
    ("avgpool-padding", lambda w: AvgPool2d(2, padding=2), InvalidArgumentError, ("AvgPool2d", "padding 2", "half the window")),
    ("avgpool-ceil-text", lambda w: AvgPool2d(2, ceil_mode="yes"), InvalidArgumentError, ("AvgPool2d", "ceil_mode", "'yes'")),  # type: ignore[arg-type]
    ("avgpool-rank", lambda w: AvgPool2d(2)(w.x), ShapeMismatchError, ("AvgPool2d", "[2, 3]")),
    ("avg-pool2d-count-number", lambda w: avg_pool2d(w.img, 2, count_include_pad=1), InvalidArgumentError, ("count_include_pad", "1")),  # type: ignore[arg-type]
    ("batchnorm2d-momentum", lambda w: BatchNorm2d(w.tape, np.ones(3), np.zeros(3), 1e-5, momentum=1.5), InvalidArgumentError, ("BatchNorm2d", "momentum", "1.5")),
    ("batchnorm2d-bessel-text", lambda w: BatchNorm2d(w.tape, np.ones(3), np.zeros(3), 1e-5, bessel="no"), InvalidArgumentError, ("BatchNorm2d", "bessel", "'no'")),  # type: ignore[arg-type]
    ("batchnorm2d-channels", lambda w: w.bn2d(w.img2), ShapeMismatchError, ("BatchNorm2d", "[batch, 3, height, width]", "[1, 2, 4, 4]")),
    ("batchnorm2d-feed-shape", lambda w: w.bn2d.feed(Tensor.zeros((2,)), Tensor.ones((3,))), ShapeMismatchError, ("BatchNorm2d", "running mean", "[2]")),
    ("batchnorm2d-one-value", lambda w: w.bn1.express(w.pixel), ShapeMismatchError, ("batch_norm2d", "at least 2", "[1, 1, 1, 1]")),
    ("layernorm-trailing", lambda w: w.ln2(w.x), ShapeMismatchError, ("LayerNorm", "[..., 4, 4]", "[2, 3]")),
    ("layernorm-init-empty", lambda w: LayerNorm.init(w.tape, (), 1e-5), ShapeMismatchError, ("LayerNorm", "at least one axis")),
    ("visitor-non-symbol", lambda w: Visitor().parameter("weights", 3), InvalidArgumentError, ("weights", "int")),  # type: ignore[arg-type]
    # ------------------------------------------------------------------ nn functional, losses, activations, attention
    ("conv2d-on-array", lambda w: conv2d(np.ones((1, 1, 4, 4)), w.img), InvalidArgumentError, ("conv2d", "x", "ndarray")),  # type: ignore[arg-type]
    ("conv2d-stride-bool", lambda w: conv2d(w.img, w.img, stride=True), InvalidArgumentError, ("stride", "True")),
    ("conv2d-rank", lambda w: conv2d(w.x, w.img), ShapeMismatchError, ("conv2d", "[2, 3]")),
    ("max-pool-window", lambda w: max_pool(w.img, 5), ShapeMismatchError, ("max_pool", "5", "[1, 1, 4, 4]")),
    ("max-pool-on-array", lambda w: max_pool(np.ones((1, 1, 4, 4)), 2), InvalidArgumentError, ("max_pool", "ndarray")),  # type: ignore[arg-type]
    ("batch-norm-half-stats", lambda w: batch_norm(w.x, w.v, w.v, 1e-5, mean=w.v), InvalidArgumentError, ("mean and variance",)),
    ("batch-norm-epsilon-text", lambda w: batch_norm(w.x, w.v, w.v, "a"), InvalidArgumentError, ("batch_norm", "'a'")),  # type: ignore[arg-type]
    ("batch-norm-scale-shape", lambda w: batch_norm(w.x, w.s, w.v), ShapeMismatchError, ("scale", "[3]", "[]")),
    ("mse-on-array", lambda w: mse(w.v, np.ones(3)), InvalidArgumentError, ("mse", "target", "ndarray")),  # type: ignore[arg-type]
    ("mse-shapes", lambda w: mse(w.v, w.x), ShapeMismatchError, ("mse", "[3]", "[2, 3]")),
    ("cross-entropy-rank", lambda w: cross_entropy(w.v, w.v), ShapeMismatchError, ("cross_entropy", "[3]")),
    ("cross-entropy-on-array", lambda w: cross_entropy(np.ones((2, 3)), w.x), InvalidArgumentError, ("cross_entropy",)),  # type: ignore[arg-type]
    ("tanh-on-array", lambda w: tanh(np.ones(3)), InvalidArgumentError, ("tanh", "ndarray")),  # type: ignore[arg-type]
    ("activation-on-number", lambda w: Activation.RELU(3.0), InvalidArgumentError, ("RELU", "float")),  # type: ignore[arg-type]
    ("attention-scale-text", lambda w: scaled_dot_product(w.x, w.x, w.x, None, "a"), InvalidArgumentError, ("scale", "'a'")),  # type: ignore[arg-type]
    ("attention-rank", lambda w: scaled_dot_product(w.img, w.x, w.x, None, 1.0), ShapeMismatchError, ("q", "[1, 1, 4, 4]")),
    ("attention-mask-array", lambda w: scaled_dot_product(w.x, w.x, w.x, np.zeros((2, 2)), 1.0), InvalidArgumentError, ("mask", "ndarray")),  # type: ignore[arg-type]
    ("causal-mask-zero", lambda w: causal_mask(0, -1.0), InvalidArgumentError, ("causal_mask", "0")),
    ("causal-mask-bool", lambda w: causal_mask(True, -1.0), InvalidArgumentError, ("causal_mask", "True")),
    # ------------------------------------------------------------------ optimizers and schedules
    ("adam-state-none", lambda w: w.adam.update(w.grads, None, w.params), OptimizerError, ("adam.update", "OptimizerState", "NoneType")),  # type: ignore[arg-type]
    ("adam-gradients-none", lambda w: w.adam.update(None, w.adam_state, w.params), OptimizerError, ("gradients", "NoneType")),  # type: ignore[arg-type]
    ("adam-sgd-state", lambda w: w.adam.update(w.grads, w.sgd_state, w.params), OptimizerError, ("adam.update", "sgd.init")),
    ("adam-element-clash", lambda w: w.adam.update(w.f64_grads(), w.adam_state, w.params), ParametersError, ("adam.update", "gradients slot %0", "f64[3]", "f32[3]")),
    ("adam-foreign-gradients", lambda w: w.adam.update(w.foreign_params, w.adam_state, w.params), ParametersError, ("different network",)),
    ("sgd-state-text", lambda w: Sgd(learning_rate=0.1).update(w.grads, "state", w.params), OptimizerError, ("sgd.update", "str")),  # type: ignore[arg-type]
    ("adamw-state-none", lambda w: AdamW(learning_rate=0.1).update(w.grads, None, w.params), OptimizerError, ("adamw.update",)),  # type: ignore[arg-type]
    ("adam-negative-rate", lambda w: Adam(learning_rate=-1.0), OptimizerError, ("adam", "learning_rate", "-1.0")),
    ("adam-bool-rate", lambda w: Adam(learning_rate=True), OptimizerError, ("adam", "True")),
    ("adam-b1-one", lambda w: Adam(learning_rate=0.1, b1=1.0), OptimizerError, ("b1", "1.0")),
    ("adam-epsilon-nan", lambda w: Adam(learning_rate=0.1, epsilon=float("nan")), OptimizerError, ("epsilon", "nan")),
    ("sgd-nesterov-no-momentum", lambda w: Sgd(learning_rate=0.1, nesterov=True), OptimizerError, ("nesterov",)),
    ("sgd-momentum-bool", lambda w: Sgd(learning_rate=0.1, momentum=True), OptimizerError, ("momentum", "True")),
    ("adamw-policy-number", lambda w: AdamW(learning_rate=0.1, decay_where=3), OptimizerError, ("decay_where",)),  # type: ignore[arg-type]
    ("state-missing-table", lambda w: w.adam_state.table("third"), OptimizerError, ("'third'", "first")),
    ("state-missing-scalar", lambda w: w.adam_state.scalar("power"), OptimizerError, ("'power'",)),
    ("state-restored-empty", lambda w: w.adam_state.restored({}), OptimizerError, ("missing",)),
    ("schedule-rate-nan", lambda w: Sgd(learning_rate=lambda step: float("nan")).update(w.grads, w.sgd_state, w.params), OptimizerError, ("step 0", "nan")),
    ("constant-negative", lambda w: schedules.constant(-1.0), OptimizerError, ("value", "-1.0")),
    ("warmup-fractional", lambda w: schedules.linear_warmup(1.0, 2.5), OptimizerError, ("warmup", "2.5")),  # type: ignore[arg-type]
    ("cosine-bool-steps", lambda w: schedules.cosine_decay(1.0, True), OptimizerError, ("steps", "True")),
    ("exponential-zero-every", lambda w: schedules.exponential_decay(1.0, 0.5, 0), OptimizerError, ("every", "0")),
    ("piecewise-counts", lambda w: schedules.piecewise_constant([1], [1.0]), OptimizerError, ("1 boundaries", "1 values")),
    ("piecewise-float-boundary", lambda w: schedules.piecewise_constant([1.5], [1.0, 0.5]), OptimizerError, ("1.5",)),  # type: ignore[list-item]
    # ------------------------------------------------------------------ init
    ("xavier-seed-text", lambda w: xavier("a"), InvalidArgumentError, ("seed", "'a'")),  # type: ignore[arg-type]
    ("xavier-seed-bool", lambda w: xavier(True), InvalidArgumentError, ("seed", "True")),
    ("uniform-negative-scale", lambda w: uniform(0, -1.0), InvalidArgumentError, ("scale", "-1.0")),
    ("normal-zero-deviation", lambda w: normal(0, 0.0), InvalidArgumentError, ("deviation", "0.0")),
    ("dropout-keep-zero", lambda w: dropout(0, 0.0), InvalidArgumentError, ("keep", "0.0")),
    ("xavier-empty-shape", lambda w: xavier(0)((0, 3)), InvalidArgumentError, ("[0, 3]",)),
    ("xavier-element-text", lambda w: xavier(0, element="f32"), InvalidArgumentError, ("element", "str")),  # type: ignore[arg-type]
    # ------------------------------------------------------------------ checkpoint arguments
    ("write-path-none", lambda w: ckpt.write(None, {"a": Tensor.ones((1,))}), CheckpointError, ("checkpoint path", "NoneType")),  # type: ignore[arg-type]
    ("write-entries-text", lambda w: ckpt.write(w.tmp / "a.safetensors", "entries"), CheckpointError, ("a.safetensors", "entries", "str")),  # type: ignore[arg-type]
    ("write-no-entries", lambda w: ckpt.write(w.tmp / "a.safetensors", {}), CheckpointError, ("a.safetensors", "at least one")),
    ("write-reserved-key", lambda w: ckpt.write(w.tmp / "a.safetensors", {"a": Tensor.ones((1,))}, {"topos.format": "9"}), CheckpointError, ("a.safetensors", "reserved")),
    ("write-metadata-number", lambda w: ckpt.write(w.tmp / "a.safetensors", {"a": Tensor.ones((1,))}, {"k": 3}), CheckpointError, ("a.safetensors", "'k': 3")),  # type: ignore[dict-item]
    ("write-array-entry", lambda w: ckpt.write(w.tmp / "a.safetensors", {"a": np.ones(1)}), CheckpointError, ("'a'",)),  # type: ignore[dict-item]
    ("read-path-number", lambda w: ckpt.read(3), CheckpointError, ("checkpoint path", "int")),  # type: ignore[arg-type]
    ("read-missing-file", lambda w: ckpt.read(w.tmp / "absent.safetensors"), CheckpointError, ("absent.safetensors",)),
    ("save-params-text", lambda w: ckpt.save(w.tmp / "b.safetensors", w.linear, "params"), CheckpointError, ("str",)),  # type: ignore[arg-type]
    # ------------------------------------------------------------------ emission entry points
    ("emit-roots-none", lambda w: emit_network(w.net, None), EmissionError, ("emit_network", "None")),  # type: ignore[arg-type]
    ("emit-network-text", lambda w: emit_network("net", [w.loss]), EmissionError, ("emit_network", "str")),  # type: ignore[arg-type]
    ("emit-foreign-root", lambda w: emit_network(w.net, [w.foreign]), ForeignSymbolError, ("different network",)),
    ("emit-sharding-number", lambda w: emit_network(w.net, [w.loss], sharding=3), EmissionError, ("sharding", "3")),  # type: ignore[arg-type]
    ("emission-of-text", lambda w: emission("plan"), EmissionError, ("emission()", "str")),  # type: ignore[arg-type]
    # ------------------------------------------------------------------ plugin registry lookups
    ("registry-element", lambda w: registry().element_type("f16"), UnknownElementError, ("'f16'", "f32")),
    ("registry-optimizer", lambda w: registry().optimizer("lamb"), UnknownNameError, ("'lamb'", "adam")),
    ("registry-layer", lambda w: registry().layer("transformer"), UnknownNameError, ("'transformer'",)),
    ("registry-owner", lambda w: registry().owner("topos_optimizers", "lamb"), UnknownNameError, ("'lamb'",)),
    # ------------------------------------------------------------------ gradcheck
    ("gradcheck-table-text", lambda w: check_grad(w.net, "params", w.loss), SymbolError, ("check_grad", "str")),  # type: ignore[arg-type]
    ("gradcheck-road", lambda w: check_grad(w.net, w.params, w.loss, numerical="f16"), SymbolError, ("'f16'",)),  # type: ignore[arg-type]
    ("gradcheck-foreign-target", lambda w: check_grad(w.net, w.params, w.foreign), ForeignSymbolError, ("different network",)),
    ("gradcheck-foreign-table", lambda w: check_grad(w.net, w.foreign_params, w.loss), ParametersError, ("different network",)),
]
# fmt: on

NO_SITE: dict[str, str] = {}
"""Cases whose message cannot name the user's line, with the reason (none so far)."""


def test_the_catalogue_is_large_and_distinct() -> None:
    ids = [case[0] for case in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 150


@pytest.mark.parametrize(("name", "call", "error", "substrings"), CASES, ids=[case[0] for case in CASES])
def test_misuse_raises_a_named_error_and_changes_nothing(
    tmp_path: Path, name: str, call: Callable[[World], object], error: type[ToposError], substrings: tuple[str, ...]
) -> None:
    world = World(tmp_path)
    before = world.snapshot()
    with pytest.raises(ToposError) as caught:
        call(world)
    assert type(caught.value) is error, f"{name}: {type(caught.value).__name__}: {caught.value}"
    message = str(caught.value)
    if name not in NO_SITE:
        assert f"{FILE}:{call.__code__.co_firstlineno}" in message, message
    for text in substrings:
        assert text in message, f"{name}: {text!r} not in {message!r}"
    assert world.snapshot() == before, f"{name} changed the world"


# ----------------------------------------------------------------------------- transactions

Facade = Callable[[Tape, Tape], object]
"""``(tape, elsewhere) -> result``: a facade call on ``tape`` that mixes in ``elsewhere``."""


def _norm_failing(tape: Tape, elsewhere: Tape) -> object:
    return LayerNorm(elsewhere, np.ones(3), np.zeros(3), 1e-5)(tape.resolve(_X))


def _rms_failing(tape: Tape, elsewhere: Tape) -> object:
    return RmsNorm(elsewhere, np.ones(3), 1e-5)(tape.resolve(_X))


def _batch_norm_failing(tape: Tape, elsewhere: Tape) -> object:
    return batch_norm(tape.resolve(_X), elsewhere.parameter(np.ones(3)), elsewhere.parameter(np.zeros(3)))


def _conv_failing(tape: Tape, elsewhere: Tape) -> object:
    image = tape.resolve(_IMAGE)
    return conv2d(image, tape.resolve(_KERNEL), elsewhere.parameter(np.zeros(2)))


def _attention_failing(tape: Tape, elsewhere: Tape) -> object:
    x = tape.resolve(_X)
    return scaled_dot_product(x, x, x, elsewhere.input(np.zeros((2, 2))), 1.0)


def _cross_entropy_failing(tape: Tape, elsewhere: Tape) -> object:
    return cross_entropy(tape.resolve(_X), elsewhere.input(Tensor.selection([0, 1], 3)))


def _group_norm_failing(tape: Tape, elsewhere: Tape) -> object:
    return GroupNorm(elsewhere, 1, np.ones(3), np.zeros(3), 1e-5)(tape.resolve(_X))


def _batch_norm2d_failing(tape: Tape, elsewhere: Tape) -> object:
    return BatchNorm2d(elsewhere, np.ones(1), np.zeros(1), 1e-5).express(tape.resolve(_IMAGE))


def _conv_transpose_failing(tape: Tape, elsewhere: Tape) -> object:
    return ConvTranspose2d(elsewhere, np.ones((1, 1, 2, 2)), np.zeros(1))(tape.resolve(_IMAGE))


def _sequential_failing(tape: Tape, elsewhere: Tape) -> object:
    model = Sequential(Linear.init(elsewhere, 3, 4, xavier(0)), Activation.TANH, Linear.init(elsewhere, 5, 2, xavier(1)))
    return model(tape.resolve(_X))


_X: Any = None
_IMAGE: Any = None
_KERNEL: Any = None

FACADES: dict[str, Facade] = {
    "LayerNorm": _norm_failing,
    "RmsNorm": _rms_failing,
    "batch_norm": _batch_norm_failing,
    "conv2d": _conv_failing,
    "scaled_dot_product": _attention_failing,
    "cross_entropy": _cross_entropy_failing,
    "Sequential": _sequential_failing,
    "GroupNorm": _group_norm_failing,
    "BatchNorm2d": _batch_norm2d_failing,
    "ConvTranspose2d": _conv_transpose_failing,
}


def _recorded() -> tuple[Tape, Any]:
    global _X, _IMAGE, _KERNEL
    network, (_X, _IMAGE, _KERNEL) = Tape.record(
        lambda t: (t.input(np.ones((2, 3))), t.input(np.ones((1, 1, 4, 4))), t.parameter(np.ones((2, 1, 2, 2))))
    )
    return network.reopen(), network


@pytest.mark.parametrize("name", sorted(FACADES))
def test_a_refused_facade_call_leaves_every_tape_as_it_was(name: str) -> None:
    tape, _ = _recorded()
    elsewhere = Tape(f32)
    facade_call = FACADES[name]
    # The layers live on `elsewhere`: record them first, so only the call itself is judged.
    before_text, before_count = tape.seal_view().describe(), len(tape)
    with pytest.raises(ToposError) as caught:
        facade_call(tape, elsewhere)
    assert isinstance(caught.value, (ForeignSymbolError, MixedTapesError, ShapeMismatchError)), caught.value
    assert f"{FILE}:" in str(caught.value)
    assert len(tape) == before_count
    assert tape.seal_view().describe() == before_text
    # A later valid call on the same tape still records.
    x = tape.resolve(_X)
    out = LayerNorm(tape, np.ones(3), np.zeros(3), 1e-5)(x)
    assert out.shape == Shape((2, 3)) and len(tape) > before_count


def test_the_mixed_facade_leaves_the_other_tape_as_it_was_too() -> None:
    tape, _ = _recorded()
    elsewhere = Tape(f32)
    scale, shift = elsewhere.parameter(np.ones(3)), elsewhere.parameter(np.zeros(3))
    count = len(elsewhere)
    with pytest.raises(MixedTapesError):
        batch_norm(tape.resolve(_X), scale, shift)
    assert len(elsewhere) == count


def test_a_sequential_refused_at_its_third_stage_keeps_nothing_of_the_first_two() -> None:
    tape = Tape(f32)
    x = tape.input(np.ones((2, 3)))
    model = Sequential(Linear.init(tape, 3, 4, xavier(0)), Activation.TANH, Linear.init(tape, 5, 2, xavier(1)))
    network_before = tape.seal_view().describe()
    with pytest.raises(ShapeMismatchError, match=r"Linear expects input \[\.\.\., 5\]"):
        model(x)
    assert tape.seal_view().describe() == network_before
    good = Sequential(model[0], model[1])(x)
    assert good.shape == Shape((2, 4))


def test_mark_and_rollback_restore_sources_slots_and_symbols() -> None:
    tape = Tape(f64)
    kept = tape.parameter([1.0, 2.0])
    mark = tape.mark()
    dropped = tape.parameter([3.0]) + tape.input([1.0])
    tape.rollback(mark)
    network = tape.seal()
    assert len(network) == 1 and len(network.parameter_nodes) == 1 and not network.input_nodes
    assert network.forward(network.parameters()).of(kept.symbol).tolist() == [1.0, 2.0]
    del dropped


# ----------------------------------------------------------------------------- properties


@pytest.mark.parametrize("extent", [True, False, 1.0, "1", None, 2.5])
def test_no_integer_parameter_takes_a_non_integer(extent: object) -> None:
    tape = Tape(f32)
    x = tape.input(np.ones((2, 3)))
    calls: list[Callable[[], object]] = [
        lambda: x.sum_along(extent),  # type: ignore[arg-type]
        lambda: x.narrow(1, 0, extent),  # type: ignore[arg-type]
        lambda: x.pad(1, 0, extent),  # type: ignore[arg-type]
        lambda: x.unsqueeze(extent),  # type: ignore[arg-type]
        lambda: x.broadcast_along(0, extent),  # type: ignore[arg-type]
        lambda: x.reshape((6, extent)),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(InvalidArgumentError):
            call()
    assert len(tape) == 1


def test_values_keep_identity_equality_and_hashing() -> None:
    tape = Tape(f32)
    a, b = tape.input([1.0]), tape.input([1.0])
    assert a == a and a != b and len({a: 1, b: 2}) == 2
    t = Tensor([1.0])
    assert t == t and t != Tensor([1.0]) and len({t, Tensor([1.0])}) == 2


def test_pattern_match_fields_are_read_only() -> None:
    match = ReduceWindow(4, [3, 1, 2, 1], source=0, size=2, stride=2, batch=1, channels=1, height=4, width=4)
    assert isinstance(match, PatternMatch) and match.kind is Formula.REDUCE_WINDOW
    assert match.interiors == (1, 2, 3) and match.fields["size"] == 2
    with pytest.raises(TypeError):
        match.fields["size"] = 5  # type: ignore[index]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        match.size = 5  # type: ignore[misc]
    assert match.size == 2


def test_the_interpreter_and_plans_refuse_a_wrong_feed_with_one_message() -> None:
    world_network, (inp, total) = Tape.record(lambda t: (lambda i: (i, (i * 2.0).sum()))(t.input([1.0, 2.0])))
    params = world_network.parameters()
    messages = []
    for read in (world_network.forward, world_network.entry(total).lower().forward):
        with pytest.raises(FeedError) as caught:
            read(params, {inp: [1.0, 2.0, 3.0]})
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and "[3]" in messages[0] and "[2]" in messages[0]


def test_a_result_too_large_for_memory_is_a_capacity_error() -> None:
    network, _ = Tape.record(lambda t: t.input(1.0).broadcast((2**25, 2**25)).exp())
    with pytest.raises(CapacityError) as caught:
        line = here() + 1
        network.forward(network.parameters())
    message = str(caught.value)
    assert f"{FILE}:{line}" in message and "[33554432, 33554432]" in message and "Exp" in message


def test_infinities_given_as_such_are_allowed() -> None:
    assert Tensor([float("inf"), -float("inf")], f32).tolist() == [float("inf"), -float("inf")]
    assert np.isnan(Tensor(float("nan"), bf16).scalar())
    largest = float(np.finfo(np.float32).max)
    assert Tensor(largest, f32).scalar() == largest
