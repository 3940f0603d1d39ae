"""MLIR text of types and values: how a StableHLO module spells a tensor type and a constant.

The spelling is a pure function of its inputs (byte-identical across processes): a literal is
the element's own (:meth:`~topos.ElementType.literal`), printed as the shortest round-trip
decimal when that decimal names exactly the same bits, else as the element's IEEE hex; a
dense constant prints as a splat ``dense<v>``, as nested literals up to
:data:`DECIMAL_LIMIT` elements, or as its stored bytes in hex beyond.

:class:`Mesh` names the device axes; a sharding (:data:`Sharding`: :class:`DataParallel`,
the FSDP policy :class:`FullySharded`, Megatron's :class:`TensorParallel`, both at once as
``FullySharded(..., tensor=TensorParallel(...))``, or a stated :class:`Sharded`) reads over one module
to a :class:`Layout`, the Shardy annotations of its arguments and results
(``docs/sharding.md``). The emission reading (:mod:`topos.stages.emission`) writes its
modules with these.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, final

import attrs
import numpy as np

from topos.errors import EmissionError
from topos.ir import ops
from topos.ir.element import ElementType, element_storing, stablehlo_name
from topos.ir.network import Network, as_symbols
from topos.ir.node import Symbol
from topos.ir.shape import Shape

__all__ = [
    "DECIMAL_LIMIT",
    "DataParallel",
    "FullySharded",
    "FunctionWriter",
    "Layout",
    "Mesh",
    "Sharded",
    "Sharding",
    "Spec",
    "Splits",
    "TensorParallel",
    "dense",
    "dense_i32",
    "element_for",
    "hex_blob",
    "i64_array",
    "ints",
    "literal",
    "spec",
    "spell",
    "tensor_type",
]


def tensor_type(shape: Shape | Sequence[int], mlir: str) -> str:
    """``tensor<2x3xf32>``; a scalar prints as ``tensor<f32>``.

    Example:
        >>> tensor_type((2, 3), "f32"), tensor_type((), "f64")
        ('tensor<2x3xf32>', 'tensor<f64>')
    """
    axes = tuple(shape)
    if not axes:
        return f"tensor<{mlir}>"
    return "tensor<" + "x".join(str(a) for a in axes) + f"x{mlir}>"


def ints(values: Iterable[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def i64_array(values: Iterable[int]) -> str:
    items = ", ".join(str(v) for v in values)
    return f"array<i64: {items}>" if items else "array<i64>"


def element_for(dtype: Any) -> ElementType:
    """The element whose literals a wide (compute or accumulator) type prints with."""
    found = element_storing(dtype)
    if found is not None:
        return found
    name = stablehlo_name(dtype)
    if name is None:
        raise EmissionError(f"numpy dtype {np.dtype(dtype)} has no StableHLO spelling")
    # No element stores it (an unusual wide dtype): its literals still round exactly once.
    return ElementType(name, dtype, dtype, dtype, name)


def spell(value: Any, element: ElementType) -> str:
    """``element.literal(value)``, as a decimal when the decimal names exactly the same bits."""
    exact = element.literal(value)
    wide = float(element.convert(np.asarray(value)).reshape(()).astype(np.float64))
    if not math.isfinite(wide):
        return exact
    if element.dtype.itemsize >= 8:
        text = repr(wide)
    else:
        # The f32 shortest form also names a narrower value exactly (bf16, f16 sit inside f32).
        text = str(np.float32(wide))
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        text = f"{mantissa}e{exponent}"
    elif "." not in text:
        text += ".0"
    # Guard against double rounding (decimal -> f64 -> storage): fall back to exact bits.
    return text if element.literal(float(text)) == exact else exact


def literal(value: Any, dtype: Any) -> str:
    """One element as MLIR prints it, with the bits of the element storing ``dtype``.

    Shortest round-trip decimal where that names the same bits; otherwise (non-finite
    values) the element's IEEE hex literal.

    Example:
        >>> import numpy as np
        >>> literal(0.1, np.float32), literal(1e-8, np.float32), literal(float("inf"), np.float32)
        ('0.1', '1.0e-08', '0x7F800000')
    """
    return spell(value, element_for(dtype))


DECIMAL_LIMIT: Final = 16
"""A dense constant of at most this many elements prints as nested decimals (readable); a
larger one as the hex of its little-endian bytes, which costs no per-element Python."""


def hex_blob(array: np.ndarray[Any, Any]) -> str:
    """``dense<"0x...">``: the raw bytes, little-endian, as MLIR reads a dense blob."""
    raw = np.ascontiguousarray(array)
    if raw.dtype.byteorder == ">" or (raw.dtype.byteorder == "=" and sys.byteorder == "big"):
        raw = raw.byteswap()
    return f'dense<"0x{raw.tobytes().hex().upper()}">'


def dense(array: np.ndarray[Any, Any], element: ElementType) -> str:
    stored = np.ascontiguousarray(element.convert(array))
    flat = stored.reshape(-1)
    # Splats compare bits, not values: -0.0 and 0.0, or two NaN payloads, are different words.
    words = flat.view(np.uint8).reshape(flat.size, flat.dtype.itemsize)
    if flat.size and bool((words == words[0]).all()):
        return f"dense<{spell(flat[0], element)}>"
    if flat.size > DECIMAL_LIMIT:
        return hex_blob(stored)
    spelled = [spell(v, element) for v in flat]

    def nest(axis: int, start: int) -> tuple[str, int]:
        if axis == array.ndim:
            return spelled[start], start + 1
        parts = []
        for _ in range(array.shape[axis]):
            text, start = nest(axis + 1, start)
            parts.append(text)
        return "[" + ", ".join(parts) + "]", start

    return f"dense<{nest(0, 0)[0]}>"


def dense_i32(indices: np.ndarray[Any, Any]) -> str:
    rows = np.asarray(indices).astype(np.int32).reshape(-1)
    return hex_blob(rows) if rows.size > DECIMAL_LIMIT else f"dense<{ints(rows.tolist())}>"


# --------------------------------------------------------------------------- sharding

Spec = tuple[tuple[str, ...], ...]
"""A tensor's split: per tensor axis, the mesh axes it is split over (``()``: whole)."""


def _symbols(values: Iterable[Symbol]) -> tuple[Symbol, ...]:
    return as_symbols(values, "sharded inputs")


def _mesh_axes(value: Mapping[str, int] | Iterable[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    axes = tuple(value.items() if isinstance(value, Mapping) else value)
    names = [name for name, _ in axes]
    for name, size in axes:
        if not (isinstance(name, str) and name.isidentifier()) or type(size) is not int or size < 1:
            raise EmissionError(f"a mesh axis is a name and a size of at least 1, got {name!r}={size!r}")
    if not axes or len(set(names)) != len(names):
        raise EmissionError(f"a mesh needs one or more distinct axis names, got {names}")
    return axes


def spec(*axes: str | Sequence[str] | None) -> Spec:
    """A :data:`Spec` spelled like jax's ``PartitionSpec``: ``spec("data", None)``.

    Example:
        >>> spec("data", None, ("data", "model"))
        (('data',), (), ('data', 'model'))
    """
    return tuple(() if a is None else (a,) if isinstance(a, str) else tuple(a) for a in axes)


def _specs(value: Mapping[Symbol, Spec] | Iterable[tuple[Symbol, Spec]]) -> tuple[tuple[Symbol, Spec], ...]:
    pairs = tuple(value.items() if isinstance(value, Mapping) else value)
    return tuple((as_symbols(s, "sharded symbols")[0], spec(*axes)) for s, axes in pairs)


def _rows(network: Network, index: int) -> bool:
    """Whether argument ``index`` crosses as a selection's i32 row indices."""
    payload = network.sources.get(index)
    return isinstance(network.nodes_[index].op, ops.Input) and payload is not None and payload.is_selection


@final
@attrs.frozen(slots=True)
class Mesh:
    """Named device axes and their sizes, devices in row-major order: ``Mesh({"data": 4})``.

    Example:
        >>> Mesh({"data": 2, "model": 4}).devices
        8
    """

    axes: tuple[tuple[str, int], ...] = attrs.field(converter=_mesh_axes)

    @property
    def devices(self) -> int:
        return math.prod(size for _, size in self.axes)

    def size(self, names: Iterable[str]) -> int:
        """How many pieces a tensor axis split over ``names`` is cut into."""
        sizes = dict(self.axes)
        return math.prod(sizes[name] for name in names)

    def text(self) -> str:
        return "  sdy.mesh @mesh = <[" + ", ".join(f'"{name}"={size}' for name, size in self.axes) + "]>"


@final
@attrs.frozen(slots=True)
class Layout:
    """What one emitted ``@main`` carries: per argument and per result its :data:`Spec` (None:
    no annotation, the partitioner chooses), and which arguments are pinned whole at their use."""

    mesh: Mesh
    arguments: tuple[Spec | None, ...]
    results: tuple[Spec | None, ...]
    gathered: tuple[bool, ...]
    held: tuple[Spec | None, ...] = ()
    """Per argument, the split a gathered argument is held in where read (None or absent:
    whole); FSDP with tensor parallelism gathers over the data axis only."""

    @staticmethod
    def sharding(split: Spec) -> str:
        return "#sdy.sharding<@mesh, [" + ", ".join("{" + ", ".join(f'"{a}"' for a in axes) + "}" for axes in split) + "]>"

    def attribute(self, split: Spec | None) -> str:
        return "" if split is None else f" {{sdy.sharding = {self.sharding(split)}}}"

    def pinned(self, value: str, rank: int, type_: str, position: int | None = None) -> str:
        """The constraint that holds argument ``value`` where it is read: whole on every
        device, or in its :attr:`held` split."""
        if position is None and value.startswith("%arg") and value[4:].isdigit():
            # The emission passes @main's own name for the argument, %arg<position>.
            position = int(value[4:])
        held = self.held[position] if position is not None and position < len(self.held) else None
        split = ((),) * rank if held is None else held
        return f"sdy.sharding_constraint {value} {self.sharding(split).removeprefix('#sdy.sharding')} : {type_}"


@final
@attrs.frozen(slots=True)
class Sharded:
    """A stated sharding: a mesh, a :data:`Spec` per argument (parameters and inputs; the
    unstated are replicated) and per result (the unstated are left to the partitioner), and
    the arguments ``gathered``: pinned whole (all-gathered) where the body reads them, or
    pinned in the split ``held`` gives them (gathered over the other mesh axes only).

    Every stated axis must split evenly; anything else is refused, naming the symbol.

    Example:
        >>> from topos import Tape
        >>> from topos.stages.emission import emit_network
        >>> network, (w, y) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([1.0, 2.0])))
        >>> text = emit_network(network, [y], sharding=Sharded(Mesh({"data": 2}), {w: spec("data")}, gathered=(w,)))
        >>> "sdy.sharding_constraint" in text
        True
    """

    mesh: Mesh
    arguments: tuple[tuple[Symbol, Spec], ...] = attrs.field(converter=_specs)
    results: tuple[tuple[Symbol, Spec], ...] = attrs.field(default=(), converter=_specs)
    gathered: tuple[Symbol, ...] = attrs.field(default=(), converter=_symbols)
    held: tuple[tuple[Symbol, Spec], ...] = attrs.field(default=(), converter=_specs)

    @property
    def devices(self) -> int:
        return self.mesh.devices

    def layout(self, network: Network, arguments: Sequence[int], results: Sequence[int]) -> Layout:
        """Each argument's and result's split, checked against the module's shapes."""
        given = {network.index(s, "sharded argument"): split for s, split in self.arguments}
        wanted = {network.index(s, "sharded result"): split for s, split in self.results}
        gathered = {network.index(s, "gathered argument") for s in self.gathered}
        held = {network.index(s, "held argument"): split for s, split in self.held}
        for index in (given.keys() | gathered) - set(arguments):
            raise EmissionError(f"{network.describe_symbol(index)} is not an argument of this module (not wanted)")
        for index in held.keys() - gathered:
            raise EmissionError(f"{network.describe_symbol(index)} is held in a split but not gathered")
        for index in wanted.keys() - set(results):
            raise EmissionError(f"{network.describe_symbol(index)} is not a result of this module")
        for index, split in (*given.items(), *wanted.items(), *held.items()):
            self._check(network, index, split)
        return Layout(
            self.mesh,
            tuple(self._crossing(network, i, given.get(i, ())) for i in arguments),
            tuple(wanted.get(i) for i in results),
            tuple(i in gathered for i in arguments),
            tuple(held.get(i) for i in arguments) if held else (),
        )

    @staticmethod
    def _crossing(network: Network, index: int, split: Spec) -> Spec:
        """The split of the argument as it crosses (a selection's i32 rows keep axis 0 only)."""
        crossing = 1 if _rows(network, index) else network.nodes_[index].shape.rank
        return (split + ((),) * crossing)[:crossing] if split else ((),) * crossing

    def _check(self, network: Network, index: int, split: Spec) -> None:
        shape = network.nodes_[index].shape
        names = [name for name, _ in self.mesh.axes]
        used = [a for axes in split for a in axes]
        label = network.describe_symbol(index)
        if len(split) != shape.rank or any(a not in names for a in used) or len(set(used)) != len(used):
            raise EmissionError(f"{label}: the split {split} needs one entry per axis of {shape}, each naming distinct axes of the mesh {names}")
        for axis, axes in enumerate(split):
            if shape[axis] % self.mesh.size(axes):
                raise EmissionError(f"cannot split axis {axis} of {label} evenly into {self.mesh.size(axes)} pieces over {axes}")
        if _rows(network, index) and any(split[1:]):
            raise EmissionError(f"{label} crosses as row indices: only its axis 0 can be split")


Splits = Mapping[Symbol, tuple[int, int]] | Iterable[tuple[Symbol, tuple[int, int]]]
"""Tensor-parallel splits: per parameter ``(tensor axis, unit)``, the axis split over the model
axis in whole pieces of ``unit`` elements (a head's width for attention projections)."""


def _splits(value: Splits) -> tuple[tuple[Symbol, tuple[int, int]], ...]:
    pairs = tuple(value.items() if isinstance(value, Mapping) else value)
    return tuple((as_symbols(s, "split parameters")[0], (axis, unit)) for s, (axis, unit) in pairs)


def _pairs(value: Mapping[Symbol, Symbol] | Iterable[tuple[Symbol, Symbol]]) -> tuple[tuple[Symbol, Symbol], ...]:
    pairs = tuple(value.items() if isinstance(value, Mapping) else value)
    return tuple((as_symbols(s, "followers")[0], as_symbols(p, "followed parameters")[0]) for s, p in pairs)


@final
@attrs.frozen(slots=True)
class TensorParallel:
    """Megatron's tensor parallelism over the mesh axis ``axis``: each parameter of ``splits``
    (``{parameter: (tensor axis, unit)}``, e.g. :meth:`topos.nn.TransformerLm.tensor_parallel`:
    query, key, value and the MLP's up and gate split by columns, attention output and MLP
    down by rows) is split along that axis and read in place; every other parameter is
    replicated, and so is one whose axis does not cut into whole units per device (never a
    head split across devices). ``like`` maps state inputs and results (a momentum, a
    gradient, an update) to the parameter whose split they take; other results are the
    partitioner's to choose, other inputs replicated.

    Example:
        >>> from topos import Tape
        >>> network, (w, y) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([[1.0, 2.0], [3.0, 4.0]])))
        >>> TensorParallel(Mesh({"model": 2}), {w: (1, 1)}).stated(network, [0], [1]).arguments[0][1]
        ((), ('model',))
    """

    mesh: Mesh
    splits: tuple[tuple[Symbol, tuple[int, int]], ...] = attrs.field(converter=_splits)
    axis: str = "model"
    like: tuple[tuple[Symbol, Symbol], ...] = attrs.field(default=(), converter=_pairs)

    @property
    def devices(self) -> int:
        return self.mesh.devices

    def specs(self, network: Network) -> dict[int, Spec]:
        """Per parameter (node index) that splits, its spec over the model axis alone."""
        if self.axis not in dict(self.mesh.axes):
            raise EmissionError(f"the tensor-parallel axis {self.axis!r} is not an axis of {self.mesh}")
        size, found = self.mesh.size((self.axis,)), dict[int, Spec]()
        for symbol, (axis, unit) in self.splits:
            index = network.index(symbol, "tensor-parallel parameter")
            shape = network.nodes_[index].shape
            if not isinstance(network.nodes_[index].op, ops.Parameter) or type(axis) is not int or type(unit) is not int or not 0 <= axis < shape.rank or unit < 1:
                raise EmissionError(f"{network.describe_symbol(index)} {shape}: a tensor-parallel split names a parameter, one of its axes and a unit >= 1; got axis {axis}, unit {unit}")
            if shape[axis] % (unit * size) == 0:
                found[index] = tuple((self.axis,) if a == axis else () for a in range(shape.rank))
        return found

    def followers(self, network: Network) -> dict[int, int]:
        """Per state input or result (node index) of ``like``, the parameter it follows."""
        found = {network.index(s, "follower"): network.index(p, "followed parameter") for s, p in self.like}
        for index, followed in found.items():
            if network.nodes_[index].shape != network.nodes_[followed].shape:
                raise EmissionError(f"{network.describe_symbol(index)} {network.nodes_[index].shape} cannot be split like {network.describe_symbol(followed)} {network.nodes_[followed].shape}")
        return found

    def stated(self, network: Network, arguments: Sequence[int], results: Sequence[int]) -> Sharded:
        """The policy read over one module: the :class:`Sharded` it states."""
        split, like = self.specs(network), self.followers(network)
        given = {i: split[like.get(i, i)] for i in arguments if like.get(i, i) in split}
        wanted = {i: split[like[i]] for i in dict.fromkeys(results) if like.get(i) in split}
        return Sharded(self.mesh, [(network.symbol(i), s) for i, s in given.items()], [(network.symbol(i), s) for i, s in wanted.items()])

    def layout(self, network: Network, arguments: Sequence[int], results: Sequence[int]) -> Layout:
        return self.stated(network, arguments, results).layout(network, arguments, results)


@final
@attrs.frozen(slots=True)
class FullySharded:
    """The FSDP policy over the mesh axis ``axis``: every parameter is split along its first
    axis and pinned whole where it is read (XLA all-gathers it per step); the ``state`` inputs
    (optimizer tables fed to a step that carries its update, e.g. a momentum per parameter)
    are split the same way but read in place; the ``batch`` inputs are split along their
    first axis; a result shaped like a split parameter (its gradient, its update, its new
    state) is split the same way (a reduce-scatter). A parameter or state table whose first
    axis does not divide the axis size (or a scalar) is replicated whole on every device.

    With ``tensor`` (a :class:`TensorParallel` over another axis of the same mesh) both hold
    at once: each parameter takes its tensor-parallel split and the FSDP split of its first
    axis, and is gathered over ``axis`` only; where both split the first axis it is split
    over ``(model, data)``, model-major so that gathering over data leaves the model pieces
    (or keeps the model split alone when the pair does not divide). ``tensor.like`` names
    the state inputs and the results that follow a parameter.

    Example:
        >>> from topos import Tape
        >>> network, (w, y) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([1.0, 2.0, 3.0])))
        >>> policy = FullySharded(Mesh({"data": 2}), ())
        >>> policy.stated(network, [0], [1]).arguments  # three rows do not split in two
        ()
    """

    mesh: Mesh
    batch: tuple[Symbol, ...] = attrs.field(converter=_symbols)
    axis: str = "data"
    state: tuple[Symbol, ...] = attrs.field(default=(), converter=_symbols)
    tensor: TensorParallel | None = None

    @property
    def devices(self) -> int:
        return self.mesh.devices

    def stated(self, network: Network, arguments: Sequence[int], results: Sequence[int]) -> Sharded:
        """The policy read over one module: the :class:`Sharded` it states."""
        if self.axis not in dict(self.mesh.axes):
            raise EmissionError(f"the FSDP axis {self.axis!r} is not an axis of {self.mesh}")
        if self.tensor is not None and (self.tensor.mesh != self.mesh or self.tensor.axis == self.axis):
            raise EmissionError(f"FSDP over {self.axis!r} and tensor parallelism over {self.tensor.axis!r} need one mesh and two axes; got {self.mesh} and {self.tensor.mesh}")
        size = self.mesh.size((self.axis,))
        nodes = network.nodes_
        tp = {} if self.tensor is None else self.tensor.specs(network)
        like = {} if self.tensor is None else self.tensor.followers(network)
        state = {network.index(s, "state input") for s in self.state} | (like.keys() & set(arguments))

        def both(index: int) -> tuple[Spec | None, bool]:
            """The spec of a parameter (or its follower) and whether FSDP splits it."""
            rank, tensor = nodes[index].shape.rank, tp.get(like.get(index, index))
            if not rank:
                return tensor, False
            axes = tensor or ((),) * rank
            if nodes[index].shape[0] % (self.mesh.size(axes[0]) * size):
                return tensor, False
            return ((*axes[0], self.axis), *axes[1:]), True

        def first(index: int) -> Spec:
            return ((self.axis,), *((),) * (nodes[index].shape.rank - 1))

        read = {i: both(i) for i in arguments if isinstance(nodes[i].op, ops.Parameter) or i in state}
        batch = [network.index(s, "batch input") for s in self.batch]
        fsdp = [i for i, (_, cut) in read.items() if cut]
        shapes = {nodes[i].shape for i in fsdp}
        returned = {i: both(i)[0] if i in like else first(i) if nodes[i].shape in shapes else None for i in dict.fromkeys(results)}
        gathered = [i for i in fsdp if i not in state]
        return Sharded(
            self.mesh,
            [*((network.symbol(i), s) for i, (s, _) in read.items() if s is not None), *((network.symbol(i), first(i)) for i in batch)],
            [(network.symbol(i), s) for i, s in returned.items() if s is not None],
            [network.symbol(i) for i in gathered],
            [(network.symbol(i), tp[i]) for i in gathered if i in tp],
        )

    def layout(self, network: Network, arguments: Sequence[int], results: Sequence[int]) -> Layout:
        return self.stated(network, arguments, results).layout(network, arguments, results)


@final
@attrs.frozen(slots=True)
class DataParallel:
    """Data-parallel sharding: split axis ``axis`` of ``inputs`` over ``devices`` devices.

    Parameters and every other argument are replicated; results carry no annotation, so
    XLA's partitioner decides where reductions happen (an all-reduce for a loss or gradient).

    Example:
        >>> from topos import Tape
        >>> from topos.stages.emission import emit_network
        >>> network, (x, y) = Tape.record(lambda t: (lambda x: (x, x.sum()))(t.input([[1.0], [2.0]])))
        >>> "sdy.mesh" in emit_network(network, [y], sharding=DataParallel(2, (x,)))
        True
    """

    devices: int
    inputs: tuple[Symbol, ...] = attrs.field(converter=_symbols)
    axis: int = 0
    mesh_axis: str = "data"

    def layout(self, network: Network, arguments: Sequence[int], results: Sequence[int]) -> Layout:
        """Refuses, naming the node, a split symbol that is not an input argument of the module
        or whose axis does not split evenly over the devices."""
        if self.devices < 1:
            raise EmissionError(f"data-parallel sharding needs at least one device, got {self.devices}")
        stated = []
        for symbol in self.inputs:
            index = network.index(symbol, "sharded input")
            node = network.nodes_[index]
            if not isinstance(node.op, ops.Input):
                raise EmissionError(f"only inputs can be split across devices; {network.describe_symbol(index)} is a {node.name}")
            if index not in arguments:
                raise EmissionError(f"{network.describe_symbol(index)} is not an argument of this plan (not wanted)")
            if self.axis >= node.shape.rank or node.shape[self.axis] % self.devices:
                raise EmissionError(f"cannot split axis {self.axis} of {network.describe_symbol(index)} evenly across {self.devices} devices")
            stated.append((symbol, tuple((self.mesh_axis,) if a == self.axis else () for a in range(node.shape.rank))))
        return Sharded(Mesh({self.mesh_axis: self.devices}), stated).layout(network, arguments, results)


Sharding = DataParallel | Sharded | FullySharded | TensorParallel
"""What ``emission(..., sharding=...)`` takes: each kind reads to one :class:`Layout`."""



_MAP_OPS: Final[dict[ops.MapOperation, str]] = {
    ops.MapOperation.EXP: "stablehlo.exponential",
    ops.MapOperation.LN: "stablehlo.log",
    ops.MapOperation.SQRT: "stablehlo.sqrt",
    ops.MapOperation.TANH: "stablehlo.tanh",
    ops.MapOperation.SIN: "stablehlo.sine",
    ops.MapOperation.COS: "stablehlo.cosine",
    ops.MapOperation.LOG1P: "stablehlo.log_plus_one",
    ops.MapOperation.EXPM1: "stablehlo.exponential_minus_one",
}

class FunctionWriter:
    """Writes the lines of one StableHLO function body for one element.

    The text helpers the emission reading writes with: each appends one operation (or a
    short fixed sequence) to ``lines`` and returns the SSA name it bound. Operations compute
    in the element's storage type unless told another MLIR type; ``wide`` is the compute
    type and ``accumulator`` the accumulation type (bf16 widens to f32 for both). Helper
    values are named ``%v<index>_<suffix>`` after the node being written.

    Example:
        >>> from topos import f32
        >>> writer = FunctionWriter(f32)
        >>> writer.binary("stablehlo.add", "%a", "%b", (2,), "f32", "%c")
        '%c'
        >>> writer.lines
        ['    %c = stablehlo.add %a, %b : tensor<2xf32>']
    """

    def __init__(self, element: ElementType) -> None:
        self.element = element
        self.mlir = element.mlir
        self.wide = element.compute_mlir
        self.accumulator = element.accumulator_mlir
        # Whose literal each type prints: the element itself for storage, else the
        # element storing the wide dtype.
        self.literal_elements: dict[str, ElementType] = {
            self.wide: element_for(element.compute),
            self.accumulator: element_for(element.accumulator),
            self.mlir: element,
        }
        self.lines: list[str] = []
        # (type, dense text) -> the SSA value already holding it: one copy of each constant.
        self.constants: dict[tuple[str, str], str] = {}
        self.index = 0

    def line(self, name: str, text: str) -> str:
        self.lines.append(f"    {name} = {text}")
        return name

    def temp(self, suffix: str) -> str:
        return f"%v{self.index}_{suffix}"

    def ty(self, shape: Shape | Sequence[int], mlir: str | None = None) -> str:
        return tensor_type(shape, mlir or self.mlir)

    def literal(self, value: Any, mlir: str | None = None) -> str:
        """``value`` as a literal of type ``mlir`` (storage by default), by that type's element."""
        return spell(value, self.literal_elements[mlir or self.mlir])

    def constant(self, name: str, dense: str, type_: str) -> str:
        """``name = stablehlo.constant dense : type_``, or the value that already holds it."""
        key = (type_, dense)
        held = self.constants.get(key)
        if held is not None:
            return held
        self.constants[key] = name
        return self.line(name, f"stablehlo.constant {dense} : {type_}")

    def scalar_constant(self, value: float, mlir: str, suffix: str) -> str:
        return self.line(self.temp(suffix), f"stablehlo.constant dense<{self.literal(value, mlir)}> : tensor<{mlir}>")

    def splat(self, value: float, shape: Shape | Sequence[int], mlir: str, suffix: str) -> str:
        one = self.scalar_constant(value, mlir, suffix + "_one")
        return self.broadcast_in_dim(one, (), shape, (), mlir, self.temp(suffix))

    def convert(self, value: str, shape: Shape | Sequence[int], source: str, target: str, suffix: str) -> str:
        return value if source == target else self.convert_named(value, shape, source, target, self.temp(suffix))

    def reshape(
        self, value: str, source: Shape | Sequence[int], target: Shape | Sequence[int], name: str, mlir: str | None = None
    ) -> str:
        return self.line(name, f"stablehlo.reshape {value} : ({self.ty(source, mlir)}) -> {self.ty(target, mlir)}")

    def slice(
        self, value: str, shape: Shape | Sequence[int], ranges: Sequence[str], out: Shape | Sequence[int], name: str,
        mlir: str | None = None,
    ) -> str:
        """``value[ranges]``, one ``start:limit`` (or ``start:limit:step``) per axis."""
        types = f"({self.ty(shape, mlir)}) -> {self.ty(out, mlir)}"
        return self.line(name, f"stablehlo.slice {value} [{', '.join(ranges)}] : {types}")

    def compare(
        self, direction: str, left: str, right: str, shape: Shape | Sequence[int], name: str, mlir: str | None = None
    ) -> str:
        """``left direction right`` elementwise as floats: an i1 tensor of ``shape``."""
        pair = f"({self.ty(shape, mlir)}, {self.ty(shape, mlir)}) -> {tensor_type(shape, 'i1')}"
        return self.line(name, f"stablehlo.compare {direction}, {left}, {right}, FLOAT : {pair}")

    def select(
        self, flag: str, chosen: str, otherwise: str, shape: Shape | Sequence[int], name: str, mlir: str | None = None
    ) -> str:
        types = f"{tensor_type(shape, 'i1')}, {self.ty(shape, mlir)}"
        return self.line(name, f"stablehlo.select {flag}, {chosen}, {otherwise} : {types}")

    def unary(self, opname: str, value: str, shape: Shape | Sequence[int], mlir: str, name: str) -> str:
        return self.line(name, f"{opname} {value} : {self.ty(shape, mlir)}")

    def binary(self, opname: str, left: str, right: str, shape: Shape | Sequence[int], mlir: str, name: str) -> str:
        return self.line(name, f"{opname} {left}, {right} : {self.ty(shape, mlir)}")

    def reduce(
        self, value: str, shape: Shape, axes: Sequence[int], combiner: str, init: float, mlir: str, name: str
    ) -> str:
        zero = self.line(f"{name}_init", f"stablehlo.constant dense<{self.literal(init, mlir)}> : tensor<{mlir}>")
        kept = tuple(a for i, a in enumerate(shape) if i not in axes)
        return self.line(
            name,
            f"stablehlo.reduce({value} init: {zero}) applies {combiner} across dimensions = {ints(axes)} : "
            f"({self.ty(shape, mlir)}, tensor<{mlir}>) -> {self.ty(kept, mlir)}",
        )

    def broadcast_in_dim(
        self, value: str, source: Shape | Sequence[int], target: Shape | Sequence[int], dims: Sequence[int], mlir: str, name: str
    ) -> str:
        return self.line(
            name,
            f"stablehlo.broadcast_in_dim {value}, dims = {ints(dims)} : "
            f"({self.ty(source, mlir)}) -> {self.ty(target, mlir)}",
        )

    def dot(
        self,
        left: str,
        left_shape: Shape | Sequence[int],
        right: str,
        right_shape: Shape | Sequence[int],
        out_shape: Shape | Sequence[int],
        contracting: tuple[Sequence[int], Sequence[int]],
        batching: tuple[Sequence[int], Sequence[int]] = ((), ()),
        name: str = "",
        mlir: str | None = None,
    ) -> str:
        """A dot_general in the accumulator type, narrowed once to storage when it differs."""
        kind = mlir or self.mlir
        acc = self.accumulator if mlir is None else mlir
        lhs = self.convert(left, left_shape, kind, acc, "lhs_wide")
        rhs = self.convert(right, right_shape, kind, acc, "rhs_wide")
        dims = ""
        if batching[0]:
            dims += f"batching_dims = {ints(batching[0])} x {ints(batching[1])}, "
        dims += f"contracting_dims = {ints(contracting[0])} x {ints(contracting[1])}"
        target = name if acc == kind else self.temp("dot_wide")
        out = self.line(
            target,
            f"stablehlo.dot_general {lhs}, {rhs}, {dims} : "
            f"({self.ty(left_shape, acc)}, {self.ty(right_shape, acc)}) -> {self.ty(out_shape, acc)}",
        )
        if acc == kind:
            return out
        return self.line(name, f"stablehlo.convert {out} : ({self.ty(out_shape, acc)}) -> {self.ty(out_shape, kind)}")

    def summed(self, value: str, shape: Shape, axes: Sequence[int], name: str) -> str:
        """A sum from an exact zero in the accumulator type, narrowed once."""
        kept = tuple(a for i, a in enumerate(shape) if i not in axes)
        wide = self.convert(value, shape, self.mlir, self.accumulator, "sum_wide")
        if self.accumulator == self.mlir:
            return self.reduce(wide, shape, axes, "stablehlo.add", 0.0, self.mlir, name)
        total = self.reduce(wide, shape, axes, "stablehlo.add", 0.0, self.accumulator, self.temp("sum"))
        return self.convert_named(total, kept, self.accumulator, self.mlir, name)

    def convert_named(self, value: str, shape: Shape | Sequence[int], source: str, target: str, name: str) -> str:
        return self.line(name, f"stablehlo.convert {value} : ({self.ty(shape, source)}) -> {self.ty(shape, target)}")

    def _erf_derivative(self, x: str, shape: Shape, target: str, suffix: str) -> str:
        """``2/sqrt(pi) * exp(-x*x)`` as ``exp(ln(2/sqrt(pi)) - x*x)``, with ``x*x`` carried as
        ``hi + lo`` (Veltkamp's split) and the exponent's own rounding as a correction.

        Rounding ``x*x`` once would cost up to ``x**2`` ulps of the result (510 in f64 at
        |x| = 26), and scaling after the exponential would let ``exp(-x*x)`` fall into the
        subnormals (which XLA:CPU flushes) where the result is still normal (f32, |x| near
        9.35). The split reads ``x`` clamped to [-64, 64]: beyond, the result is 0 anyway and
        the split's product would overflow.
        """
        wide, t = self.wide, self.temp
        digits = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}.get(wide, 24)
        bound = self.splat(64.0, shape, wide, suffix + "erfd_bound")
        low = self.unary("stablehlo.negate", bound, shape, wide, t(suffix + "erfd_low"))
        held = self.line(t(suffix + "erfd_held"), f"stablehlo.clamp {low}, {x}, {bound} : {self.ty(shape, wide)}")

        def op(name: str, left: str, right: str, tag: str) -> str:
            return self.binary(f"stablehlo.{name}", left, right, shape, wide, t(suffix + tag))

        hi = op("multiply", x, x, "erfd_hi")
        held_hi = op("multiply", held, held, "erfd_held_hi")
        spread = op("multiply", held, self.splat(float(2 ** ((digits + 1) // 2) + 1), shape, wide, suffix + "erfd_split"), "erfd_spread")
        head = op("subtract", spread, op("subtract", spread, held, "erfd_gap"), "erfd_head")
        tail = op("subtract", held, head, "erfd_tail")
        cross = op("multiply", op("multiply", head, tail, "erfd_ht"), self.splat(2.0, shape, wide, suffix + "erfd_two"), "erfd_cross")
        lo = op("add", op("add", op("subtract", op("multiply", head, head, "erfd_hh"), held_hi, "erfd_d"), cross, "erfd_dc"), op("multiply", tail, tail, "erfd_tt"), "erfd_lo")
        # s = ln(2/sqrt(pi)) - hi, with its rounding error e (Knuth's two-sum, no products).
        log_scale = self.splat(0.12078223763524522, shape, wide, suffix + "erfd_lnc")
        minus_hi = self.unary("stablehlo.negate", hi, shape, wide, t(suffix + "erfd_mhi"))
        exponent = op("add", log_scale, minus_hi, "erfd_s")
        back = op("subtract", exponent, log_scale, "erfd_bb")
        error = op("add", op("subtract", log_scale, op("subtract", exponent, back, "erfd_sb"), "erfd_e1"), op("subtract", minus_hi, back, "erfd_e2"), "erfd_e")
        main = self.unary("stablehlo.exponential", exponent, shape, wide, t(suffix + "erfd_exp"))
        correction = op("multiply", main, op("subtract", error, lo, "erfd_el"), "erfd_fix")
        return self.binary("stablehlo.add", main, correction, shape, wide, target)

    def mapped(self, operation: ops.MapOperation, value: str, shape: Shape, name: str, suffix: str = "") -> str:
        """A map computed in the compute type (bf16 through f32), rounded once to storage."""
        wide = self.convert(value, shape, self.mlir, self.wide, suffix + "map_wide")
        widens = self.wide != self.mlir
        target = self.temp(suffix + "map") if widens else name
        if operation is ops.MapOperation.ERF:
            out = self.line(target, f"chlo.erf {wide} : {self.ty(shape, self.wide)} -> {self.ty(shape, self.wide)}")
        elif operation is ops.MapOperation.ERF_DERIVATIVE:
            out = self._erf_derivative(wide, shape, target, suffix)
        elif operation is ops.MapOperation.ATAN:
            # StableHLO has no one-argument arctangent; atan2(x, 1) is the same function.
            one = self.splat(1.0, shape, self.wide, suffix + "atan_one")
            out = self.binary("stablehlo.atan2", wide, one, shape, self.wide, target)
        else:
            out = self.unary(_MAP_OPS[operation], wide, shape, self.wide, target)
        if not widens:
            return out
        return self.convert_named(out, shape, self.wide, self.mlir, name)
