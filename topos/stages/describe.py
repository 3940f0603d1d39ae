"""The describe reading: a spec (or a plan) as text.

Contract: one line per node: position right-aligned in four columns, the opcode name (a
Map prints its map's name), operand positions, parameters as ``key=value``, then the shape;
then a summary line. The text depends only on the recorded structure, so it is
byte-identical across processes and across re-recordings of the same build function.
"""

from __future__ import annotations

from collections.abc import Sequence

from topos.ir import ops
from topos.ir.network import Network
from topos.ir.node import Node

__all__ = ["describe_network", "describe_nodes"]


def describe_nodes(nodes: Sequence[Node], label: str) -> str:
    lines = [node.line(i) for i, node in enumerate(nodes)]
    parameters = sum(1 for n in nodes if isinstance(n.op, ops.Parameter))
    inputs = sum(1 for n in nodes if isinstance(n.op, ops.Input))
    lines.append(f"{label}: {len(nodes)} nodes, {parameters} parameters, {inputs} inputs")
    return "\n".join(lines) + "\n"


def describe_network(network: Network) -> str:
    """The text listing of ``network``, one line per node (what ``Network.describe`` prints)."""
    return describe_nodes(network.nodes_, "network")
