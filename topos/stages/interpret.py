"""The value reading: the interpreter, which is the oracle.

Contract: ``interpret(network, parameters, feeds, roots=None)`` evaluates the spec in
allocation order (which is dependency order) under ``Numerics.EXACT`` unless told otherwise,
with the reference kernels. Sources are supplied: leaves from their payloads, parameters
from the caller's table, inputs from their defaults overlaid by the feeds. With ``roots``,
only the ancestor closure of those nodes is evaluated and reading anything else raises.
Feeds must name inputs, match their recorded shape and convert to the network's element:
:func:`topos.state.check_feeds` checks them, as it does for every road. A failed call
changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from topos.errors import CapacityError, FeedError
from topos.ir import ops
from topos.ir.graph import ancestors
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.numerics import Numerics, numerics_scope
from topos.stages.rules import EXPRESS
from topos.state import Parameters, Run, check_feeds, check_payload
from topos.tensor import Tensor, TensorLike

__all__ = ["interpret"]


def interpret(
    network: Network,
    parameters: Parameters,
    feeds: Mapping[Symbol, TensorLike],
    roots: Sequence[Symbol] | None = None,
    numerics: Numerics = Numerics.EXACT,
) -> Run:
    """Evaluate ``network`` (or the ancestor closure of ``roots``) with the reference kernels."""
    if not isinstance(parameters, Parameters):
        raise FeedError(f"parameters must be a Parameters table, got {type(parameters).__name__}")
    parameters.check(network)
    for position, node_index in enumerate(network.parameter_nodes):
        check_payload(network, node_index, parameters.payloads_[position], "the interpreter")
    nodes = network.nodes_
    # The interpreter computes over tensors: a fed array is wrapped as it is, already checked.
    fed = {
        i: v if isinstance(v, Tensor) else Tensor._trusted(v, network.element, nodes[i].shape)
        for i, v in check_feeds(network, feeds).items()
    }
    wanted: list[bool] | None = None
    if roots is not None:
        wanted = ancestors(network, [network.index(s, "root") for s in roots])
    values: list[Tensor | None] = [None] * len(nodes)
    payloads = parameters.payloads_
    sources = network.sources
    express = EXPRESS
    with numerics_scope(numerics):
        for index, node in enumerate(nodes):
            if wanted is not None and not wanted[index]:
                continue
            op = node.op
            if op.arity == 0:
                if isinstance(op, ops.Parameter):
                    slot = network.parameter_slot(index)
                    assert slot is not None
                    values[index] = payloads[slot]
                elif isinstance(op, ops.Input):
                    values[index] = fed.get(index, sources[index])
                else:
                    values[index] = sources[index]
                continue
            try:
                # Dependency order: every operand of a computed node already holds a payload.
                operands = cast("list[Tensor]", [values[j] for j in node.operands])
                values[index] = express[type(op)](op, operands)
            except (MemoryError, CapacityError):
                raise CapacityError(
                    f"{network.describe_symbol(index)}: the result of {node.name} does not fit in "
                    f"memory ({node.shape.volume} elements of {network.element})"
                ) from None
    readable = None
    if roots is not None:
        declared = [False] * len(nodes)
        for symbol in roots:
            declared[network.index(symbol)] = True
        readable = declared
        # A sliced run keeps its whole closure for backward, but only declared values read.
        del declared
    return Run(network, values, numerics, readable, "complete" if roots is None else "sliced")
