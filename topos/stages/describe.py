"""The describe reading: a spec as text, node by node.

Contract: one line per node: position right-aligned in four columns, the opcode name (a
Map prints its map's name), operand positions, parameters as ``key=value``, then the shape;
then a summary line. The text depends only on the recorded structure, so it is
byte-identical across processes and across re-recordings of the same build function.

This module owns every piece of that text: :func:`op_params` (an opcode's parameters),
:func:`node_line` (one row), :func:`describe_nodes`, :func:`describe_network` and the plan's
listing, :func:`describe_plan` (these rows beside the plan's liveness labels, then its
summary; ``Plan.describe`` prints it). It sits below the plan and reads a plan only through
its public reads, so it names :class:`~topos.stages.plan.Plan` for typing alone.
:mod:`topos.render` draws the same parameters in its cards.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from topos.ir import ops
from topos.ir.network import Network
from topos.ir.node import Node
from topos.ir.shape import Shape

if TYPE_CHECKING:
    from topos.stages.plan import Plan

__all__ = ["describe_network", "describe_nodes", "describe_plan", "node_line", "op_params"]


def op_params(op: ops.Op) -> str:
    """An opcode's parameters as ``key=value`` pairs in declaration order (empty for a Map).

    Example:
        >>> from topos.ir.ops import Narrow
        >>> op_params(Narrow(axis=0, start=1, length=2))
        'axis=0 start=1 length=2'
    """
    if isinstance(op, ops.Map):
        return ""
    parts: list[str] = []
    for field in attrs.fields(type(op)):
        value = getattr(op, field.name)
        if isinstance(value, Shape):
            text = str(value)
        elif isinstance(value, tuple):
            text = "[" + ",".join(str(v) for v in value) + "]"
        else:
            text = str(value)
        parts.append(f"{field.name}={text}")
    return " ".join(parts)


def node_line(node: Node, index: int) -> str:
    """The row ``describe`` prints for ``node`` at position ``index``.

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: t.input([1.0, 2.0, 3.0]).narrow(0, 1, 2))
        >>> node_line(network.node(y), y.index)
        '   1  Narrow          0           axis=0 start=1 length=2 [2]'
    """
    operands = ",".join(str(o) for o in node.operands)
    params = op_params(node.op)
    # Columns pad to 16 and 12; a longer name or operand list still keeps one space.
    text = f"{index:>4}  {node.name:<15} {operands:<11} "
    if params:
        text += params + " "
    return text + str(node.shape)


def describe_nodes(nodes: Sequence[Node], label: str) -> str:
    """Every row of ``nodes`` and a summary line headed ``label`` (a tape's or a network's)."""
    lines = [node_line(node, i) for i, node in enumerate(nodes)]
    parameters = sum(1 for n in nodes if isinstance(n.op, ops.Parameter))
    inputs = sum(1 for n in nodes if isinstance(n.op, ops.Input))
    lines.append(f"{label}: {len(nodes)} nodes, {parameters} parameters, {inputs} inputs")
    return "\n".join(lines) + "\n"


def describe_network(network: Network) -> str:
    """The text listing of ``network``, one line per node (what ``Network.describe`` prints).

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: t.parameter([1.0, 2.0]).sum())
        >>> print(describe_network(network), end="")
           0  Parameter                   [2]
           1  Sum             0           []
        network: 2 nodes, 1 parameters, 0 inputs
    """
    return describe_nodes(network.nodes_, "network")


def describe_plan(plan_: Plan) -> str:
    """The plan as text: each scheduled node's spec line and liveness, then a summary.

    Example:
        >>> from topos import Tape, Numerics
        >>> network, y = Tape.record(lambda t: (t.parameter([1.0, 2.0]) * 3.0).sum())
        >>> print(describe_plan(network.entry(y).numerics(Numerics.EXACT).lower()), end="")
           0  Parameter                   [2]  freed after 2
           1  Leaf                        [2]  freed after 2
           2  Mul             0,1         [2]  freed after 3
           3  Sum             2           []   kept
        plan: forward, exact numerics; 4 of 4 nodes evaluated, 1 readable
        live volume: peak 2 elements at node 2, retain-all 3
    """
    network = plan_.network
    nodes = network.nodes_
    roots = {m.root: m for m in plan_.patterns_}
    redone = plan_.recomputed()
    specs = [node_line(nodes[i], i) for i in plan_.scheduled]
    width = max(len(line) for line in specs) + 2
    lines: list[str] = []
    for index, spec in zip(plan_.scheduled, specs, strict=True):
        text = f"{spec:<{width}}{plan_.label(index)}"
        match = roots.get(index)
        if match is not None:
            text += f"  <- {match.kind.value} of {len(match.nodes)} nodes"
        if index in redone:
            text += f"  recomputed x{redone[index]}"
        lines.append(text)
    posture = "retain" if plan_.entry.backward else "forward"
    readable = sum(1 for flag in plan_.readable_ if flag)
    lines.append(
        f"plan: {posture}, {plan_.numerics.value} numerics; {len(plan_.scheduled)} of {len(nodes)} "
        f"nodes evaluated, {readable} readable"
    )
    if plan_.patterns_:
        replaced = sum(len(m.nodes) for m in plan_.patterns_)
        lines.append(f"fused {len(plan_.patterns_)} groups, {replaced} nodes replaced")
    peak, at = plan_.peak()
    total = plan_.retain_all()
    if plan_.entry.backward:
        lines.append(f"live volume: retain-all {total}, release floor {peak} at node {at}")
    else:
        lines.append(f"live volume: peak {peak} elements at node {at}, retain-all {total}")
    if plan_.remat is not None:
        r = plan_.remat
        lines.append(
            f"memory budget {r.budget} elements: peak {r.peak} while a step runs (unbudgeted {r.unbudgeted}); "
            f"{len(r.recomputed)} values recomputed {sum(r.recomputed.values())} times, cost {r.cost}"
        )
    return "\n".join(lines) + "\n"
