"""The cotangent reading: the engine reverse scan.

Contract: ``backward(run, target)`` seeds a rank-0 target with one, scans node positions
from the target down to zero, and at each ancestor applies that opcode's rule (from
``topos.stages.rules``) to get one cotangent per operand. A contribution marks its operand
as an ancestor and is *added* to the operand's accumulator, which starts as a zero of the
operand's shape; a ``None`` (a data operand) leaves the operand outside the scan. Nodes the
scan never reaches get zeros, so a singular branch that does not lead to the target cannot
poison the result. The scan runs under the run's numerics posture.

:func:`reverse_scan` is the scan itself, generic over the recordable type: the gradient
reading runs the very same function over recording values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from topos.errors import BackwardTargetError
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.numerics import numerics_scope
from topos.stages.rules import VJP, Recordable
from topos.state import Field, Run
from topos.tensor import Tensor

__all__ = ["backward", "reverse_scan"]

R = TypeVar("R", bound=Recordable)


def reverse_scan(
    network: Network,
    value_of: Callable[[int], R],
    target: int,
    seed: R,
) -> list[R | None]:
    """Cotangents per node position (None where the scan never arrived)."""
    nodes = network.nodes_
    cotangents: list[R | None] = [None] * (target + 1)
    cotangents[target] = seed
    rules = VJP
    for index in range(target, -1, -1):
        g = cotangents[index]
        if g is None:
            continue
        node = nodes[index]
        if node.op.arity == 0:
            continue
        operands = [value_of(j) for j in node.operands]
        contributions = rules[type(node.op)](node.op, operands, value_of(index), g)
        for slot, (position, contribution) in enumerate(zip(node.operands, contributions, strict=True)):
            if contribution is None:
                continue
            held = cotangents[position]
            if held is None:
                held = operands[slot].zero_like()
            cotangents[position] = held + contribution
    return cotangents


def backward(run: Run, target: Symbol) -> Field:
    """Engine backward of ``run`` from the rank-0 ``target``."""
    network = run.network
    run._require_backward()
    index = network.index(target, "backward target")
    node = network.nodes_[index]
    if node.shape.rank != 0:
        raise BackwardTargetError(
            f"backward target {network.describe_symbol(index)} has shape {node.shape}; "
            "a target must be rank 0 (reduce it with .sum() first)"
        )
    values = run._values
    if values[index] is None:
        # Outside a sliced run's closure the rules would read placeholders: refuse loudly.
        raise BackwardTargetError(
            f"backward target {network.describe_symbol(index)} was not computed by this "
            f"{run.provenance} run; include it in the entry's roots"
        )

    def value_of(position: int) -> Tensor:
        value = values[position]
        if value is None:
            # Released or outside the closure; rules reading only shapes get a placeholder.
            return Tensor.zeros(network.nodes_[position].shape, network.element)
        return value

    with numerics_scope(run.numerics):
        seed = value_of(index).one_like()
        cotangents = reverse_scan(network, value_of, index, seed)
    payloads: list[Tensor] = []
    for position, node in enumerate(network.nodes_):
        cotangent = cotangents[position] if position < len(cotangents) else None
        payloads.append(cotangent if cotangent is not None else Tensor.zeros(node.shape, network.element))
    return Field(network, tuple(payloads))
