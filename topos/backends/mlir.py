"""MLIR text of types and values: how a StableHLO module spells a tensor type and a constant.

The spelling is a pure function of its inputs (byte-identical across processes): a literal is
the element's own (:meth:`~topos.ElementType.literal`), printed as the shortest round-trip
decimal when that decimal names exactly the same bits, else as the element's IEEE hex; a
dense constant prints as a splat ``dense<v>``, as nested literals up to
:data:`DECIMAL_LIMIT` elements, or as its stored bytes in hex beyond.

:class:`DataParallel` and :func:`sharding_attributes` are the Shardy annotations of a
data-parallel module. The emission reading (:mod:`topos.stages.emission`) writes its
modules with these.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any, Final, final

import attrs
import numpy as np

from topos.errors import EmissionError
from topos.ir import ops
from topos.ir.element import ElementType, element_storing, stablehlo_name
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.shape import Shape

__all__ = [
    "DECIMAL_LIMIT",
    "DataParallel",
    "dense",
    "dense_i32",
    "element_for",
    "hex_blob",
    "i64_array",
    "ints",
    "literal",
    "sharding_attributes",
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


def _symbols(values: Iterable[Symbol]) -> tuple[Symbol, ...]:
    return tuple(values)


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


def sharding_attributes(
    network: Network, arguments: Sequence[int], sharding: DataParallel
) -> tuple[list[str], str]:
    """Shardy annotations for ``arguments`` (one attribute text each, in order) and the mesh line.

    Refuses, naming the node, a sharded symbol that is not an input argument of the module or
    whose axis does not split evenly over the devices.
    """
    if sharding.devices < 1:
        raise EmissionError(f"data-parallel sharding needs at least one device, got {sharding.devices}")
    split: set[int] = set()
    for symbol in sharding.inputs:
        index = network.index(symbol, "sharded input")
        node = network.nodes_[index]
        if not isinstance(node.op, ops.Input):
            raise EmissionError(
                f"only inputs can be split across devices; {network.describe_symbol(index)} is a {node.name}"
            )
        if index not in arguments:
            raise EmissionError(f"{network.describe_symbol(index)} is not an argument of this plan (not wanted)")
        if sharding.axis >= node.shape.rank or node.shape[sharding.axis] % sharding.devices:
            raise EmissionError(
                f"cannot split axis {sharding.axis} of {network.describe_symbol(index)} "
                f"evenly across {sharding.devices} devices"
            )
        split.add(index)
    attributes = []
    for index in arguments:
        rank = network.nodes_[index].shape.rank
        axes = ['{"' + sharding.mesh_axis + '"}' if (index in split and a == sharding.axis) else "{}" for a in range(rank)]
        attributes.append(f" {{sdy.sharding = #sdy.sharding<@mesh, [{', '.join(axes)}]>}}")
    mesh = f'  sdy.mesh @mesh = <["{sharding.mesh_axis}"={sharding.devices}]>\n'
    return attributes, mesh
