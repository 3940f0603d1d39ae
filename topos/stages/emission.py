"""The emission reading: a plan written out as StableHLO text.

Contract:
- ``emit_module(network, scheduled, results, matches=())`` writes one ``module @topos`` with
  one public ``func.func @main``. Its arguments are the scheduled parameters first, then the
  scheduled inputs, each in recording order (``%arg0``, ``%arg1``, ...); its results are
  ``results`` in the order given. Node ``N`` binds ``%vN`` (a ``StopGradient`` node binds its
  operand's name: it is the identity here); helper values are ``%vN_<what>``.
- Every opcode and map lowers. Arithmetic mirrors the reference kernels' written order
  (``topos.kernels.reference``): the same primitive sequence, sums as reductions from an
  exact zero, products as ``dot_general``; elements that compute or accumulate wider (bf16)
  convert up around maps, reductions and products and convert back once.
- An input whose recorded payload is a selection crosses as ``tensor<count x i32>`` row
  indices (:func:`index_argument`): Gather and Scatter over it lower to ``stablehlo.gather``
  and ``stablehlo.scatter``; its one-hot is written only where something reads it densely.
  Dense selections lower with the masked fold (a zero entry contributes nothing).
  ``Maximum`` lowers to numpy's rule (``a`` if NaN or greater, else ``b``); ``Select`` to
  ``stablehlo.select`` on ``mask != 0``.
- ``matches`` are fusion candidates from the plan's pattern catalog; each one whose shape is
  understood is *raised* to one StableHLO operation (convolution, reduce_window,
  batch_norm_training, batch_norm_inference) and its interior never crosses the boundary.
  A training plan's convolution raises three times: the product, its kernel gradient (a
  convolution of the source by the output gradient, ``rhs_dilate`` the stride) and its
  input gradient (a transposed convolution: ``lhs_dilate`` the stride over the reversed
  kernel); their shared patch chain is never written. A training plan's max-pool raises
  twice: a reduce_window and, for its source gradient, a select_and_scatter (``GE``
  selection: a tie goes to the earliest lane, as the recorded maximum rule sends it).
  Raises are elected like plans elect home kernels (:func:`~topos.stages.fusion.catalog.elect`,
  closed over the shared nodes). Each raise is its idiom's own, in the idiom's module of
  :mod:`topos.stages.fusion`; emission asks the catalog for it
  (:func:`~topos.stages.fusion.catalog.idiom_of`) and writes nothing of an idiom itself.
  Without matches everything lowers as the recorded composition (always sound).
- The text helpers (one operation per call) are :class:`~topos.stages.stablehlo.FunctionWriter`'s;
  the emitter derives from it through :class:`~topos.stages.fusion.base.RaiseWriter` (the
  network and the node names, what a raise writes through) and adds the selections.
- Every literal is the element's own: :meth:`~topos.ElementType.literal` of the element
  whose type it has (the network's element for storage, the element storing the compute or
  accumulator dtype for wide values) decides its bits. It prints as the shortest round-trip
  decimal (always with a dot) when that decimal names exactly those bits, else (non-finite
  values, a decimal that would round differently) as the element's IEEE hex. The text is a
  pure function of its inputs: byte-identical across processes.
- A recorded constant is written once: leaves with the same type and the same bits share one
  ``stablehlo.constant``. A splat prints as ``dense<v>``; a constant of at most 16 elements
  as nested literals; a larger one as ``dense<"0x...">``, its stored bytes little-endian in
  hex (the element's bits exactly, at no per-element cost), or, when it holds exactly two
  words (a mask), as an i1 hex choice between two splats (``stablehlo.select``).
- With ``sharding`` (a :data:`~topos.stages.stablehlo.Sharding`) the module carries Shardy
  annotations: the ``sdy.mesh``, each argument's and result's ``sdy.sharding``, and an
  ``sdy.sharding_constraint`` holding each gathered parameter whole where it is read (FSDP);
  XLA's partitioner places the collectives (``docs/sharding.md``).
- A node that cannot be written raises :class:`~topos.errors.EmissionError` naming the node
  (``%N Op[shape] (recorded at file:line)``) and the operation.

Example:
    >>> from topos import Tape
    >>> from topos.stages.emission import emit_network
    >>> network, y = Tape.record(lambda t: (t.input([1.0, 2.0]) * 2.0).sum())
    >>> print(emit_network(network, [y]).splitlines()[1].strip())
    func.func public @main(%arg0: tensor<2xf32>) -> (tensor<f32>) {
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol, final

import attrs
import numpy as np

from topos._collector import pausing
from topos.errors import EmissionError
from topos.ir import ops
from topos.ir.graph import ancestors, module_arguments
from topos.ir.network import Network
from topos.ir.node import Node, Symbol
from topos.ir.shape import Shape
from topos.stages.fusion import PatternMatch, RaiseWriter, consumers_of, elect, idiom_of
from topos.stages.stablehlo import (
    DECIMAL_LIMIT,
    DataParallel,
    Sharding,
    dense,
    dense_i32,
    hex_blob,
    i64_array,
    ints,
    literal,
    tensor_type,
)
from topos.tensor import Tensor

__all__ = [
    "LOWERINGS",
    "DataParallel",
    "emission",
    "emit_module",
    "emit_network",
    "index_argument",
    "literal",
    "tensor_type",
]

# --------------------------------------------------------------------------- public values


class _PlanLike(Protocol):
    @property
    def network(self) -> Network: ...
    @property
    def scheduled(self) -> tuple[int, ...]: ...
    def results(self) -> tuple[Symbol, ...]: ...


# --------------------------------------------------------------------------- text helpers


# --------------------------------------------------------------------------- the emitter


@final
@attrs.frozen(slots=True)
class _Selection:
    """A selection node held as ``count`` row indices (i32) instead of a one-hot matrix."""

    indices: str
    count: int
    vocab: int
    one: float


class _Names(dict[int, str]):
    """``names[i]``: the SSA value of node ``i``; a selection's dense one-hot is written on
    its first dense use only, so a selection read only by Gather/Scatter never becomes one."""

    def __init__(self, emitter: _Emitter) -> None:
        super().__init__()
        self._emitter = emitter

    def __missing__(self, index: int) -> str:
        selection = self._emitter.selections.get(index)
        if selection is None:
            raise KeyError(index)
        name = _one_hot(self._emitter, index, selection)
        self[index] = name
        return name


class _Emitter(RaiseWriter):
    """Writes one function body; ``names[i]`` is the SSA value of node ``i``."""

    def __init__(self, network: Network) -> None:
        super().__init__(network)
        self.selections: dict[int, _Selection] = {}
        self.names = _Names(self)

    def fail(self, index: int, reason: str) -> EmissionError:
        node = self.network.nodes_[index]
        return EmissionError(
            f"cannot emit {self.network.describe_symbol(index)} "
            f"(operation {ops.op_name(node.op)}): {reason}"
        )

    def operand(self, node: Node, position: int) -> str:
        return self.names[node.operands[position]]

    def operand_shape(self, node: Node, position: int) -> Shape:
        return self.network.nodes_[node.operands[position]].shape


# --------------------------------------------------------------------------- per-opcode lowerings

Lowering = Callable[[_Emitter, int, Node], str]


def _elementwise(opname: str) -> Lowering:
    def lower(e: _Emitter, index: int, node: Node) -> str:
        return e.binary(opname, e.operand(node, 0), e.operand(node, 1), node.shape, e.mlir, f"%v{index}")

    return lower


def _leaf(e: _Emitter, index: int, node: Node) -> str:
    payload = e.network.sources.get(index)
    if payload is None:
        raise e.fail(index, "the leaf has no recorded payload")
    return _constant(e, index, node, payload)


def _constant(e: _Emitter, index: int, node: Node, payload: Tensor) -> str:
    name = f"%v{index}"
    if payload.is_selection and payload.indices is not None:
        # Rows as i32 indices; the one-hot is rebuilt only if something reads it densely.
        count, vocab = node.shape.axes
        _check_vocab(e, index, vocab)
        rows = e.constant(e.temp("rows"), dense_i32(payload.indices), f"tensor<{count}xi32>")
        e.selections[index] = _Selection(rows, count, vocab, payload.selection_one)
        return ""
    if payload.fill is not None:
        if node.shape.rank == 0:
            return e.line(name, f"stablehlo.constant dense<{e.literal(payload.fill)}> : {e.ty(node.shape)}")
        one = e.scalar_constant(payload.fill, e.mlir, "fill")
        return e.broadcast_in_dim(one, (), node.shape, (), e.mlir, name)
    two = _two_valued(e, index, node, payload.numpy())
    if two is not None:
        return two
    return e.constant(name, dense(payload.numpy(), e.element), e.ty(node.shape))


def _two_valued(e: _Emitter, index: int, node: Node, array: np.ndarray[Any, Any]) -> str | None:
    """A large constant holding exactly two words (a mask, say) as an i1 choice between two
    splats: one byte of hex per element instead of the element's width. ``select`` copies
    bits, so the values cross exactly."""
    stored = np.ascontiguousarray(e.element.convert(array)).reshape(-1)
    if stored.size <= DECIMAL_LIMIT or stored.dtype.itemsize < 2:
        return None
    words = stored.view(np.dtype(f"u{stored.dtype.itemsize}"))
    other = words != words[0]
    if not other.any():
        return None
    second = int(np.argmax(other))
    chosen = words == words[second]
    if not bool((other == chosen).all()):
        return None
    shape = node.shape
    flag = tensor_type(shape, "i1")
    low, high = e.literal(stored[0]), e.literal(stored[second])
    pattern = hex_blob(chosen.astype(np.uint8))
    key = (e.ty(shape), f"select {low} {high} {pattern}")
    held = e.constants.get(key)
    if held is not None:
        return held
    where = e.line(e.temp("where"), f"stablehlo.constant {pattern} : {flag}")
    values = [
        e.broadcast_in_dim(e.scalar_constant(v, e.mlir, part), (), shape, (), e.mlir, e.temp(part + "s"))
        for v, part in ((stored[0], "low"), (stored[second], "high"))
    ]
    name = e.select(where, values[1], values[0], shape, f"%v{index}")
    e.constants[key] = name
    return name


def _source(e: _Emitter, index: int, node: Node) -> str:
    # Parameters and inputs are function arguments, bound before the body is written (an
    # index argument is bound in ``selections`` and has no dense name until one is needed).
    return "" if index in e.selections else e.names[index]


_I32_LIMIT: Final = 2**31


def _check_vocab(e: _Emitter, index: int, vocab: int) -> None:
    if vocab >= _I32_LIMIT:
        raise e.fail(index, f"a selection over {vocab} rows does not fit i32 indices")


def _one_hot(e: _Emitter, index: int, selection: _Selection) -> str:
    """The dense ``[count, vocab]`` one-hot of a selection (``one`` on each chosen column)."""
    count, vocab = selection.count, selection.vocab
    i32 = f"tensor<{count}x{vocab}xi32>"
    shape = (count, vocab)
    suffix = f"v{index}_"
    spread = e.line(
        f"%v{index}_spread", f"stablehlo.broadcast_in_dim {selection.indices}, dims = [0] : (tensor<{count}xi32>) -> {i32}"
    )
    columns = e.line(f"%v{index}_columns", f"stablehlo.iota dim = 1 : {i32}")
    hit = e.line(
        f"%v{index}_hit",
        f"stablehlo.compare EQ, {spread}, {columns}, SIGNED : ({i32}, {i32}) -> tensor<{count}x{vocab}xi1>",
    )
    one = e.splat(selection.one, shape, e.mlir, suffix + "one")
    zero = e.splat(0.0, shape, e.mlir, suffix + "zero")
    return e.line(f"%v{index}", f"stablehlo.select {hit}, {one}, {zero} : tensor<{count}x{vocab}xi1>, {e.ty(shape)}")


def _neg(e: _Emitter, index: int, node: Node) -> str:
    return e.unary("stablehlo.negate", e.operand(node, 0), node.shape, e.mlir, f"%v{index}")


def _map(e: _Emitter, index: int, node: Node) -> str:
    assert isinstance(node.op, ops.Map)
    return e.mapped(node.op.operation, e.operand(node, 0), node.shape, f"%v{index}")


def _matmul(e: _Emitter, index: int, node: Node) -> str:
    rank = node.shape.rank
    batch = tuple(range(rank - 2))
    return e.dot(
        e.operand(node, 0), e.operand_shape(node, 0), e.operand(node, 1), e.operand_shape(node, 1),
        node.shape, ((rank - 1,), (rank - 2,)), (batch, batch), name=f"%v{index}",
    )


def _sum(e: _Emitter, index: int, node: Node) -> str:
    shape = e.operand_shape(node, 0)
    if shape.rank == 0:
        # A fold from zero over one element is x + 0 (it turns -0 into +0, as the reference does).
        zero = e.scalar_constant(0.0, e.mlir, "zero")
        return e.binary("stablehlo.add", e.operand(node, 0), zero, node.shape, e.mlir, f"%v{index}")
    return e.summed(e.operand(node, 0), shape, tuple(range(shape.rank)), f"%v{index}")


def _sum_along(e: _Emitter, index: int, node: Node) -> str:
    assert isinstance(node.op, ops.SumAlong)
    return e.summed(e.operand(node, 0), e.operand_shape(node, 0), (node.op.axis,), f"%v{index}")


def _broadcast(e: _Emitter, index: int, node: Node) -> str:
    source = e.operand_shape(node, 0)
    value = e.operand(node, 0)
    if source.rank > 0:
        value = e.reshape(value, source, (), e.temp("scalar"))
    return e.broadcast_in_dim(value, (), node.shape, (), e.mlir, f"%v{index}")


def _broadcast_along(e: _Emitter, index: int, node: Node) -> str:
    assert isinstance(node.op, ops.BroadcastAlong)
    dims = tuple(i for i in range(node.shape.rank) if i != node.op.axis)
    return e.broadcast_in_dim(e.operand(node, 0), e.operand_shape(node, 0), node.shape, dims, e.mlir, f"%v{index}")


def _reshape(e: _Emitter, index: int, node: Node) -> str:
    return e.reshape(e.operand(node, 0), e.operand_shape(node, 0), node.shape, f"%v{index}")


def _permute(e: _Emitter, index: int, node: Node) -> str:
    assert isinstance(node.op, ops.Permute)
    return e.line(
        f"%v{index}",
        f"stablehlo.transpose {e.operand(node, 0)}, dims = {ints(node.op.order)} : "
        f"({e.ty(e.operand_shape(node, 0))}) -> {e.ty(node.shape)}",
    )


def _whole_but(shape: Shape, axis: int, window: str) -> list[str]:
    """Slice ranges reading ``window`` (``start:limit[:step]``) of ``axis`` and every other axis whole."""
    return [window if position == axis else f"0:{extent}" for position, extent in enumerate(shape)]


def _narrow(e: _Emitter, index: int, node: Node) -> str:
    assert isinstance(node.op, ops.Narrow)
    source = e.operand_shape(node, 0)
    ranges = _whole_but(source, node.op.axis, f"{node.op.start}:{node.op.start + node.op.length}")
    return e.slice(e.operand(node, 0), source, ranges, node.shape, f"%v{index}")


def _pad(e: _Emitter, index: int, node: Node) -> str:
    assert isinstance(node.op, ops.Pad)
    op = node.op
    source = e.operand_shape(node, 0)
    low = [0] * source.rank
    high = [0] * source.rank
    low[op.axis] = op.start
    high[op.axis] = op.extent - op.start - source[op.axis]
    zero = e.scalar_constant(0.0, e.mlir, "zero")
    return e.line(
        f"%v{index}",
        f"stablehlo.pad {e.operand(node, 0)}, {zero}, low = {ints(low)}, high = {ints(high)}, "
        f"interior = {ints([0] * source.rank)} : ({e.ty(source)}, {e.ty(())}) -> {e.ty(node.shape)}",
    )


def _lane(
    e: _Emitter, value: str, shape: Shape, axis: int, start: int, count: int, step: int, mlir: str, suffix: str
) -> tuple[str, tuple[int, ...]]:
    """Positions ``start + w*step`` (w < count) of ``axis``: one strided slice."""
    ranges = _whole_but(shape, axis, f"{start}:{start + (count - 1) * step + 1}:{step}")
    sliced = shape.replace(axis, count).axes
    return e.slice(value, shape, ranges, sliced, e.temp(suffix), mlir), sliced


def _unfold(e: _Emitter, index: int, node: Node) -> str:
    assert isinstance(node.op, ops.Unfold)
    op = node.op
    source = e.operand_shape(node, 0)
    count, size = node.shape[op.axis], node.shape[op.axis + 1]
    # One strided slice per lane, stacked on the new lane axis: pure data movement, exact for
    # every value (a gather would do the same, but XLA lowers slices far more cheaply).
    lanes: list[str] = []
    lane_shape = (*node.shape.axes[: op.axis + 1], 1, *node.shape.axes[op.axis + 2 :])
    for lane in range(size):
        sliced, shape = _lane(
            e, e.operand(node, 0), source, op.axis, lane * op.dilation, count, op.step, e.mlir, f"lane{lane}"
        )
        lanes.append(e.reshape(sliced, shape, lane_shape, e.temp(f"stacked{lane}")))
    if size == 1:
        return e.reshape(lanes[0], lane_shape, node.shape, f"%v{index}")
    types = ", ".join(e.ty(lane_shape) for _ in lanes)
    return e.line(
        f"%v{index}",
        f"stablehlo.concatenate {', '.join(lanes)}, dim = {op.axis + 1} : ({types}) -> {e.ty(node.shape)}",
    )


def _fold(e: _Emitter, index: int, node: Node) -> str:
    assert isinstance(node.op, ops.Fold)
    op = node.op
    source = e.operand_shape(node, 0)
    count, size = source[op.axis], source[op.axis + 1]
    acc = e.accumulator
    narrows = acc != e.mlir
    wide = e.convert(e.operand(node, 0), source, e.mlir, acc, "fold_wide")
    # The reference walks lanes from last to first, adding each lane's windows onto their
    # positions; position p thereby adds its windows in ascending order. Here each lane is a
    # strided slice padded out to the full axis (interior padding step - 1) and the padded
    # lanes are added in that same order onto an exact zero: the same bits, since a partial
    # sum never holds -0 and adding +0 elsewhere changes nothing.
    folded = node.shape
    lane_shape = (*source.axes[: op.axis + 1], *source.axes[op.axis + 2 :])
    low = [0] * folded.rank
    high = [0] * folded.rank
    interior = [0] * folded.rank
    interior[op.axis] = op.step - 1
    total = e.splat(0.0, folded, acc, "fold_zero")
    zero = e.scalar_constant(0.0, acc, "fold_pad")
    for step_index, lane in enumerate(range(size - 1, -1, -1)):
        ranges = _whole_but(source, op.axis + 1, f"{lane}:{lane + 1}")
        narrow_shape = (*source.axes[: op.axis + 1], 1, *source.axes[op.axis + 2 :])
        sliced = e.slice(wide, source, ranges, narrow_shape, e.temp(f"fold_lane{lane}"), acc)
        squeezed = e.reshape(sliced, narrow_shape, lane_shape, e.temp(f"fold_squeezed{lane}"), acc)
        low[op.axis] = lane * op.dilation
        high[op.axis] = op.extent - (lane * op.dilation + (count - 1) * op.step + 1)
        padded = e.line(
            e.temp(f"fold_placed{lane}"),
            f"stablehlo.pad {squeezed}, {zero}, low = {ints(low)}, high = {ints(high)}, interior = {ints(interior)} : "
            f"({e.ty(lane_shape, acc)}, {e.ty((), acc)}) -> {e.ty(folded, acc)}",
        )
        last = step_index == size - 1
        name = f"%v{index}" if last and not narrows else e.temp(f"fold_sum{lane}")
        total = e.binary("stablehlo.add", total, padded, folded, acc, name)
    if narrows:
        total = e.convert_named(total, node.shape, acc, e.mlir, f"%v{index}")
    return total


def _plus_zero(e: _Emitter, value: str, shape: Sequence[int], mlir: str, name: str) -> str:
    """``0 + x`` written as ``x == 0 ? +0 : x``: the same bits (a -0 becomes +0, NaN stays),
    but XLA folds a literal ``x + 0`` to ``x`` and would keep the -0."""
    zero = e.splat(0.0, shape, mlir, "plus_zero")
    hit = e.compare("EQ", value, zero, shape, e.temp("is_zero"), mlir)
    return e.select(hit, zero, value, shape, name, mlir)


def _scaled(e: _Emitter, value: str, shape: Sequence[int], one: float, acc: str) -> str:
    if one == 1.0:
        return value
    factor = e.splat(one, shape, acc, "selection_one")
    return e.binary("stablehlo.multiply", value, factor, shape, acc, e.temp("scaled"))


def _gather(e: _Emitter, index: int, node: Node) -> str:
    """``out[i] = Σ_v s[i,v]·table[v]``, ascending v from +0, zero entries contributing nothing."""
    table, table_shape = e.operand(node, 0), e.operand_shape(node, 0)
    rest = table_shape.axes[1:]
    acc = e.accumulator
    name = f"%v{index}"
    selection = e.selections.get(node.operands[1])
    if selection is not None:
        # Row lookup: the one surviving term is 0 + one·row (exactly what the fold gives).
        rows = e.line(
            e.temp("rows"),
            f'"stablehlo.gather"({table}, {selection.indices}) <{{dimension_numbers = #stablehlo.gather<'
            f"offset_dims = {ints(range(1, len(rest) + 1))}, collapsed_slice_dims = [0], start_index_map = [0], "
            f"index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = {i64_array((1, *rest))}}}> : "
            f"({e.ty(table_shape)}, tensor<{selection.count}xi32>) -> {e.ty(node.shape)}",
        )
        wide = e.convert(rows, node.shape, e.mlir, acc, "rows_wide")
        scaled = _scaled(e, wide, node.shape.axes, selection.one, acc)
        target = name if acc == e.mlir else e.temp("gathered")
        out = _plus_zero(e, scaled, node.shape.axes, acc, target)
        return out if acc == e.mlir else e.convert_named(out, node.shape, acc, e.mlir, name)
    return _masked_sum(e, node, table, table_shape, "table", False, name)


def _masked_sum(e: _Emitter, node: Node, values: str, shape: Shape, word: str, flip: bool, name: str) -> str:
    """Σ over axis 1 of ``s·values`` (``s`` the dense selection, operand 1, transposed when
    ``flip``) where ``s != 0`` (a zero entry adds nothing, so an inf or NaN that is not
    selected stays out), from +0 in the accumulator, narrowed once."""
    acc = e.accumulator
    s_shape = e.operand_shape(node, 1).axes
    s_wide = e.convert(e.operand(node, 1), s_shape, e.mlir, acc, "selection_wide")
    wide = e.convert(values, shape, e.mlir, acc, f"{word}_wide")
    if flip:
        flipped = (s_shape[1], s_shape[0])
        s_wide = e.line(
            e.temp("selection_flipped"),
            f"stablehlo.transpose {s_wide}, dims = [1, 0] : ({e.ty(s_shape, acc)}) -> {e.ty(flipped, acc)}",
        )
        s_shape = flipped
    terms = (*s_shape, *shape.axes[1:])
    s = e.broadcast_in_dim(s_wide, s_shape, terms, (0, 1), acc, e.temp("selection_spread"))
    values = e.broadcast_in_dim(wide, shape, terms, range(1, len(terms)), acc, e.temp(f"{word}_spread"))
    out = node.shape.axes
    product = e.binary("stablehlo.multiply", s, values, terms, acc, e.temp("terms"))
    zero = e.splat(0.0, terms, acc, "terms_zero")
    chosen = e.compare("NE", s, zero, terms, e.temp("chosen"), acc)
    masked = e.select(chosen, product, zero, terms, e.temp("masked"), acc)
    if acc == e.mlir:
        return e.reduce(masked, Shape(terms), (1,), "stablehlo.add", 0.0, acc, name)
    total = e.reduce(masked, Shape(terms), (1,), "stablehlo.add", 0.0, acc, e.temp("masked_sum"))
    return e.convert_named(total, out, acc, e.mlir, name)


def _scatter(e: _Emitter, index: int, node: Node) -> str:
    """``out[v] = Σ_i s[i,v]·g[i]``, ascending i from +0, zero entries contributing nothing."""
    g, g_shape = e.operand(node, 0), e.operand_shape(node, 0)
    rest = g_shape.axes[1:]
    acc = e.accumulator
    name = f"%v{index}"
    selection = e.selections.get(node.operands[1])
    if selection is not None:
        # Scatter-add of each row onto +0; repeated indices accumulate in update order on the
        # reference interpreter (XLA leaves that order to the backend: an envelope there).
        wide = e.convert(g, g_shape, e.mlir, acc, "updates_wide")
        scaled = _scaled(e, wide, g_shape.axes, selection.one, acc)
        zeros = e.splat(0.0, node.shape, acc, "scatter_zero")
        scalar = f"tensor<{acc}>"
        a, b, total = e.temp("a"), e.temp("b"), e.temp("sum")
        target = name if acc == e.mlir else e.temp("scattered")
        e.lines.append(
            f'    {target} = "stablehlo.scatter"({zeros}, {selection.indices}, {scaled}) '
            f"<{{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<"
            f"update_window_dims = {ints(range(1, len(rest) + 1))}, inserted_window_dims = [0], "
            f"scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}}> ({{\n"
            f"    ^bb0({a}: {scalar}, {b}: {scalar}):\n"
            f"      {total} = stablehlo.add {a}, {b} : {scalar}\n"
            f"      stablehlo.return {total} : {scalar}\n"
            f"    }}) : ({e.ty(node.shape, acc)}, tensor<{selection.count}xi32>, {e.ty(g_shape, acc)}) -> {e.ty(node.shape, acc)}"
        )
        return target if acc == e.mlir else e.convert_named(target, node.shape, acc, e.mlir, name)
    return _masked_sum(e, node, g, g_shape, "gradient", True, name)


def _centred(e: _Emitter, node: Node, axis: int) -> tuple[str, str, str]:
    """(peak, centred, log of the exp-sum) along ``axis``, each step as the reference rounds it."""
    shape = e.operand_shape(node, 0)
    kept = shape.without_axis(axis)
    dims = tuple(i for i in range(shape.rank) if i != axis)
    x = e.operand(node, 0)
    peak = e.reduce(x, shape, (axis,), "stablehlo.maximum", -math.inf, e.mlir, e.temp("peak"))
    spread = e.broadcast_in_dim(peak, kept, shape, dims, e.mlir, e.temp("peak_spread"))
    centred = e.binary("stablehlo.subtract", x, spread, shape, e.mlir, e.temp("centred"))
    exp = e.mapped(ops.MapOperation.EXP, centred, shape, e.temp("exp"), "exp_")
    total = e.summed(exp, shape, (axis,), e.temp("total"))
    log = e.mapped(ops.MapOperation.LN, total, kept, e.temp("log"), "log_")
    return peak, centred, log


def _logsumexp(e: _Emitter, index: int, node: Node) -> str:
    assert isinstance(node.op, ops.LogSumExp)
    peak, _, log = _centred(e, node, node.op.axis)
    return e.binary("stablehlo.add", peak, log, node.shape, e.mlir, f"%v{index}")


def _log_softmax(e: _Emitter, index: int, node: Node) -> str:
    assert isinstance(node.op, ops.LogSoftmax)
    axis = node.op.axis
    _, centred, log = _centred(e, node, axis)
    dims = tuple(i for i in range(node.shape.rank) if i != axis)
    spread = e.broadcast_in_dim(log, node.shape.without_axis(axis), node.shape, dims, e.mlir, e.temp("log_spread"))
    return e.binary("stablehlo.subtract", centred, spread, node.shape, e.mlir, f"%v{index}")


def _maximum(e: _Emitter, index: int, node: Node) -> str:
    """numpy's rule, not stablehlo.maximum's: ``a`` if ``a`` is NaN or ``a > b``, else ``b``.

    So equal operands give ``b`` (``maximum(+0, -0)`` is -0, ``maximum(-0, +0)`` is +0) and
    a NaN operand comes back with its own bits (the first one when both are NaN).
    """
    a, b, shape = e.operand(node, 0), e.operand(node, 1), node.shape
    greater = e.compare("GT", a, b, shape, e.temp("greater"))
    nan = e.compare("NE", a, a, shape, e.temp("nan"))
    keep = e.line(e.temp("keep"), f"stablehlo.or {greater}, {nan} : {tensor_type(shape, 'i1')}")
    return e.select(keep, a, b, shape, f"%v{index}")


def _step(e: _Emitter, index: int, node: Node) -> str:
    shape = node.shape
    hit = e.compare("GE", e.operand(node, 0), e.operand(node, 1), shape, e.temp("hit"))
    one = e.splat(1.0, shape, e.mlir, "one")
    zero = e.splat(0.0, shape, e.mlir, "zero")
    return e.select(hit, one, zero, shape, f"%v{index}")


def _select(e: _Emitter, index: int, node: Node) -> str:
    """``stablehlo.select`` on ``mask != 0`` (NaN compares unequal, so it picks ``on_true``)."""
    shape = node.shape
    zero = e.splat(0.0, shape, e.mlir, "zero")
    hit = e.compare("NE", e.operand(node, 0), zero, shape, e.temp("hit"))
    return e.select(hit, e.operand(node, 1), e.operand(node, 2), shape, f"%v{index}")


def _stop_gradient(e: _Emitter, index: int, node: Node) -> str:
    """The identity: the node binds its operand's name (gradients are a recorded matter)."""
    return e.operand(node, 0)


LOWERINGS: Final[Mapping[type[Any], Lowering]] = {
    ops.Leaf: _leaf,
    ops.Parameter: _source,
    ops.Input: _source,
    ops.Add: _elementwise("stablehlo.add"),
    ops.Sub: _elementwise("stablehlo.subtract"),
    ops.Mul: _elementwise("stablehlo.multiply"),
    ops.Div: _elementwise("stablehlo.divide"),
    ops.Neg: _neg,
    ops.Map: _map,
    ops.MatMul: _matmul,
    ops.Sum: _sum,
    ops.SumAlong: _sum_along,
    ops.Broadcast: _broadcast,
    ops.BroadcastAlong: _broadcast_along,
    ops.Reshape: _reshape,
    ops.Permute: _permute,
    ops.Narrow: _narrow,
    ops.Pad: _pad,
    ops.Unfold: _unfold,
    ops.Fold: _fold,
    ops.Gather: _gather,
    ops.Scatter: _scatter,
    ops.LogSoftmax: _log_softmax,
    ops.LogSumExp: _logsumexp,
    ops.Powf: _elementwise("stablehlo.power"),
    ops.Maximum: _maximum,
    ops.Step: _step,
    ops.Select: _select,
    ops.StopGradient: _stop_gradient,
}
"""One lowering per opcode: the emission stage's table (a test checks it covers ``OPCODES``)."""


# --------------------------------------------------------------------------- module assembly


def index_argument(network: Network, index: int) -> Tensor | None:
    """The recorded selection of input ``index`` when it crosses as i32 row indices, else None.

    An input whose recorded payload is a selection (:meth:`Tensor.selection`) becomes a
    ``tensor<count x i32>`` argument: its feed must be a selection of the same shape and the
    same ``one`` (the value is written into the module), never a dense one-hot.
    """
    node = network.nodes_[index]
    payload = network.sources.get(index)
    if isinstance(node.op, ops.Input) and payload is not None and payload.is_selection:
        return payload
    return None


def emit_module(
    network: Network,
    scheduled: Sequence[int],
    results: Sequence[Symbol],
    matches: Sequence[PatternMatch] = (),
    *,
    sharding: Sharding | None = None,
) -> str:
    """Write the scheduled nodes of ``network`` as one StableHLO module (see the module contract)."""
    if not network.element.emittable:
        raise EmissionError(f"element {network.element} has no StableHLO spelling")
    order = sorted(set(int(i) for i in scheduled))
    wanted = set(order)
    result_indices = [network.index(s, "result") for s in results]
    for index in result_indices:
        if index not in wanted:
            raise EmissionError(f"result {network.describe_symbol(index)} is not scheduled by this plan")
    arguments = module_arguments(network, order)
    emitter = _Emitter(network)
    argument_types: list[str] = []
    for position, index in enumerate(arguments):
        selection = index_argument(network, index)
        if selection is None:
            emitter.names[index] = f"%arg{position}"
            argument_types.append(tensor_type(network.nodes_[index].shape, network.element.mlir))
            continue
        count, vocab = network.nodes_[index].shape.axes
        _check_vocab(emitter, index, vocab)
        emitter.selections[index] = _Selection(f"%arg{position}", count, vocab, selection.selection_one)
        argument_types.append(tensor_type((count,), "i32"))
    layout = None if sharding is None else sharding.layout(network, arguments, result_indices)
    for position, index in enumerate(arguments):  # FSDP's gather: pinned whole before any use
        if layout is not None and layout.gathered[position] and index not in emitter.selections:
            pinned = layout.pinned(f"%arg{position}", network.nodes_[index].shape.rank, argument_types[position])
            emitter.names[index] = emitter.line(f"%arg{position}_whole", pinned)
    raised, skipped = _raises(network, matches, wanted)
    # Joined 4096 lines at a time: a string per line held to the end cost as much again as the text.
    written_lines: list[str] = []
    for index in order:
        node = network.nodes_[index]
        if index in skipped:
            continue
        for operand in node.operands:
            if operand not in wanted:
                raise emitter.fail(index, f"operand %{operand} is not scheduled")
        emitter.index = index
        raise_match = raised.get(index)
        if raise_match is not None:
            # _raises elected only matches the catalog knows, so each has its raise.
            idiom = idiom_of(raise_match)
            assert idiom is not None
            idiom.raise_(emitter, raise_match)
            continue
        lowering = LOWERINGS.get(type(node.op))
        if lowering is None:  # pragma: no cover - the table covers the sealed set (tested)
            raise emitter.fail(index, "no lowering")
        written = lowering(emitter, index, node)
        if index not in emitter.selections:
            emitter.names[index] = written
        if len(emitter.lines) >= 4096:
            written_lines.append("\n".join(emitter.lines))
            emitter.lines.clear()
    attributes = [""] * len(arguments) if layout is None else [layout.attribute(s) for s in layout.arguments]
    params = ", ".join(f"%arg{p}: {argument_types[p]}{attributes[p]}" for p in range(len(arguments)))
    result_types = [tensor_type(network.nodes_[i].shape, network.element.mlir) for i in result_indices]
    outcomes = result_types if layout is None else [t + layout.attribute(s) for t, s in zip(result_types, layout.results, strict=True)]
    for index in result_indices:
        if index not in emitter.names and index not in emitter.selections:
            raise emitter.fail(index, "the value is inside a raised pattern and was not written")
    returned = ", ".join([emitter.names[i] for i in result_indices])
    if layout is None:
        out = ["module @topos {"]
    else:
        out = [f"module @topos attributes {{mhlo.num_partitions = {layout.mesh.devices} : i32, mhlo.num_replicas = 1 : i32}} {{", layout.mesh.text()]
    out.append(f"  func.func public @main({params}) -> ({', '.join(outcomes)}) {{")
    out.extend((*written_lines, *emitter.lines))
    if result_indices:
        out.append(f"    return {returned} : {', '.join(result_types)}")
    else:
        out.append("    return")
    out += ["  }", "}", ""]  # the closing newline, without a second copy of the whole text
    return "\n".join(out)


def emit_network(
    network: Network, roots: Sequence[Symbol], *, sharding: Sharding | None = None
) -> str:
    """Emit the ancestor closure of ``roots`` (no fusion raises); results are ``roots`` deduped.

    This is the plan-free road used by tests and scripts; :func:`emission` is the plan's.
    """
    if not isinstance(network, Network):
        raise EmissionError(f"emit_network() takes a Network first, got {type(network).__name__}")
    given: object = roots
    if isinstance(given, Symbol):
        given = [given]
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
        raise EmissionError(
            f"emit_network() takes a sequence of root Symbols of {network!r}, got {given!r}"
        )
    roots = given
    if sharding is not None and not isinstance(sharding, Sharding):
        raise EmissionError(f"emit_network(): sharding must be a DataParallel, FullySharded, Sharded, TensorParallel or None, got {sharding!r}")
    indices = [network.index(s, "root") for s in roots]
    mask = ancestors(network, indices)
    scheduled = [i for i, keep in enumerate(mask) if keep]
    seen: set[int] = set()
    results = []
    for symbol, index in zip(roots, indices, strict=True):
        if index not in seen:
            seen.add(index)
            results.append(symbol)
    return emit_module(network, scheduled, results, sharding=sharding)


@pausing
def emission(plan: _PlanLike, *, sharding: Sharding | None = None) -> str:
    """The emission reading of a plan: its StableHLO module, with every catalog match raised.

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: t.input([1.0, 2.0]).exp())
        >>> text = emission(network.entry(y).lower())
        >>> text == emit_network(network, [y])  # no catalog match here: the same module
        True
        >>> [line.strip() for line in text.splitlines() if "exponential" in line]
        ['%v1 = stablehlo.exponential %arg0 : tensor<2xf32>']
    """
    if not all(hasattr(plan, name) for name in ("network", "scheduled", "results")):
        raise EmissionError(f"emission() takes a Plan (network.entry(...).lower()), got {type(plan).__name__}")
    if sharding is not None and not isinstance(sharding, Sharding):
        raise EmissionError(f"emission(): sharding must be a DataParallel, FullySharded, Sharded, TensorParallel or None, got {sharding!r}")
    candidates = getattr(plan, "candidates", None)
    matches: Sequence[PatternMatch] = tuple(candidates()) if callable(candidates) else ()
    return emit_module(plan.network, plan.scheduled, plan.results(), matches, sharding=sharding)


# --------------------------------------------------------------------------- raises


def _raises(
    network: Network, matches: Sequence[PatternMatch], wanted: set[int]
) -> tuple[dict[int, PatternMatch], set[int]]:
    """Elect raises first-wins over the candidate pool; returns (root -> match, skipped nodes)."""
    flags = [index in wanted for index in range(len(network))]
    pool = [match for match in matches if idiom_of(match) is not None and set(match.nodes) <= wanted]
    elected = elect(pool, {match.kind for match in pool}, consumers_of(network, flags))
    raised = {match.root: match for match in elected}
    skipped: set[int] = set()
    for match in elected:
        skipped |= {*match.interiors, *match.shared, *match.named_results}
    return raised, skipped - set(raised)
