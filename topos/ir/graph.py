"""Graph reads over a network's node list: pure functions, no payloads.

The readings (interpreter, plan, emission) and the XLA backend share these, so none of them
imports another reading just to walk the graph.
"""

from __future__ import annotations

from collections.abc import Iterable

from topos.ir.network import Network

__all__ = ["ancestors", "module_arguments"]


def ancestors(network: Network, roots: Iterable[int]) -> list[bool]:
    """The ancestor closure of ``roots`` (each root included), as a mask over nodes.

    Example:
        >>> from topos import Tape
        >>> network, (a, b) = Tape.record(lambda t: (t.input(1.0) * 2.0, t.input(3.0)))
        >>> ancestors(network, [network.index(a)])
        [True, True, True, False]
    """
    wanted = [False] * len(network)
    stack = list(roots)
    nodes = network.nodes_
    while stack:
        index = stack.pop()
        if wanted[index]:
            continue
        wanted[index] = True
        stack.extend(nodes[index].operands)
    return wanted


def module_arguments(network: Network, scheduled: Iterable[int]) -> list[int]:
    """The node positions a module built over ``scheduled`` takes as arguments, in order.

    Parameters first (slot order), then inputs (recording order); leaves are baked in. Both
    emission (``@main``'s ``%argN``) and the XLA backend (the arrays it passes) read this
    one order, so they cannot disagree.

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: t.input([1.0]) * t.parameter([2.0]))
        >>> module_arguments(network, range(len(network)))
        [1, 0]
    """
    wanted = set(scheduled)
    parameters = [i for i in network.parameter_nodes if i in wanted]
    inputs = [i for i in network.input_nodes if i in wanted]
    return parameters + inputs
