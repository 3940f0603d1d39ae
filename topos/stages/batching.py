"""The batching reading: a network recorded for one example, read over a batch of them.

Contract: ``batch(network, over, size)`` records a new network in which every input and
parameter named in ``over`` gains a leading axis of ``size``, and every node that depends
on one of them is rewritten by its batching rule (:data:`topos.stages.rules.BATCH`, one
exhaustive ``match`` over the sealed opcodes). Nodes that depend on none keep their shape.
The result is an ordinary network: it lowers, fuses, emits, differentiates and batches
again like any other, and each new node keeps the user's line of the node it batches.

The guarantee is exact: under ``Numerics.EXACT`` slice ``b`` of every batched value is,
bit for bit, the value of the original network run on example ``b`` alone, on every exact
road. The rules only move data around the original opcode (repeat an unbatched operand,
shift an axis, lay the examples side by side as columns, merge the examples' rows into one
product with a shared matrix, or select per example and stack the results), so every output
element is the same fold over the same operands in the same order.

What each node sees: only its own example. A node that reduces over an axis the example
already had (a batch normalization's statistics, a loss averaged over the recorded rows)
reduces over that axis of its own example, never across the new axis, as ``jax.vmap``
does. To average over the new axis, reduce the batched result (``.sum_along(0)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import final

import attrs
import numpy as np

from topos._collector import pausing
from topos.errors import InvalidArgumentError, SymbolError, user_site
from topos.ir import ops
from topos.ir.checks import is_integer
from topos.ir.network import Network, as_symbols
from topos.ir.node import Symbol
from topos.stages.gradient import Adjoints
from topos.stages.rules import batch_rule
from topos.stages.spec import Tape, Value
from topos.state import Parameters
from topos.tensor import Tensor

__all__ = ["Batching", "batch"]


@final
@attrs.frozen(slots=True)
class Batching:
    """What :func:`batch` made: the batched network and the map from old symbols to new.

    Example:
        >>> from topos import Tape, batch
        >>> network, (x, y) = Tape.record(lambda t: (lambda x: (x, (x * x).sum()))(t.input([1.0, 2.0])))
        >>> batched, mapping = batch(network, over=x, size=3)
        >>> run = batched.forward(batched.parameters(), {mapping.of(x): [[1.0, 2.0], [0.0, 1.0], [3.0, 0.0]]})
        >>> run.of(mapping.of(y)).tolist()
        [5.0, 1.0, 9.0]
    """

    size: int
    network: Network
    original: Network
    positions: tuple[int, ...]
    batched: tuple[bool, ...]

    def _index(self, symbol: Symbol) -> int:
        return self.original.lineage.locate(symbol, "symbol", "the network that was batched")

    def of(self, symbol: Symbol) -> Symbol:
        """The symbol in the batched network of a symbol of the original."""
        return self.network.lineage.symbol(self.positions[self._index(symbol)])

    def is_batched(self, symbol: Symbol) -> bool:
        """Whether the value of ``symbol`` gained the leading batch axis."""
        return self.batched[self._index(symbol)]

    def adjoints(self, adjoints: Adjoints) -> Adjoints:
        """``adjoints`` recorded on the original, named in the batched network.

        The target and the gradients of a batched network are per example: their first
        axis is the batch (``batch(gradient(...))`` is how per-example gradients are spelled).
        """
        if not isinstance(adjoints, Adjoints):
            raise SymbolError(f"{user_site()}: adjoints() takes Adjoints, got {type(adjoints).__name__}")
        return Adjoints(
            self.of(adjoints.target),
            tuple(self.of(s) for s in adjoints.wrt),
            tuple(self.of(s) for s in adjoints.gradients_),
        )

    def parameters(self, table: Parameters | None = None) -> Parameters:
        """A table for the batched network from one of the original (its initials by default).

        A batched parameter holds the original's payload repeated along the new axis: one
        copy per example, which training may then move apart (an ensemble).
        """
        site = user_site()
        source = self.original.parameters() if table is None else table
        if not isinstance(source, Parameters):
            raise SymbolError(f"{site}: parameters() takes the original network's Parameters, got {type(source).__name__}")
        source.check(self.original, "the table to batch")
        element = self.network.element
        payloads = tuple(
            _repeated(payload, self.size) if self.batched[self._index(symbol)] else payload
            for symbol, payload in source
        )
        return Parameters(self.network.lineage, self.network.parameter_symbols(), tuple(p.convert(element) if p.element != element else p for p in payloads))


def _repeated(payload: Tensor, size: int) -> Tensor:
    array = payload.numpy()
    return Tensor(np.ascontiguousarray(np.broadcast_to(array, (size, *array.shape))), element=payload.element)


def _over(network: Network, over: Symbol | Sequence[Symbol], site: str) -> set[int]:
    chosen: set[int] = set()
    for k, symbol in enumerate(as_symbols(over, "over")):
        index = network.lineage.locate(symbol, f"over[{k}]", "the network being batched")
        node = network.nodes_[index]
        if not isinstance(node.op, (ops.Input, ops.Parameter)):
            raise SymbolError(
                f"{site}: over[{k}] is {network.describe_symbol(index)}, a {node.name}; only inputs and "
                "parameters gain the batch axis (the nodes that read them follow)"
            )
        if index in chosen:
            raise SymbolError(f"{site}: over[{k}] names {network.describe_symbol(index)} twice")
        chosen.add(index)
    if not chosen:
        raise SymbolError(f"{site}: over names no input or parameter, so nothing would be batched")
    return chosen


@pausing
def batch(network: Network, over: Symbol | Sequence[Symbol], size: int) -> tuple[Network, Batching]:
    """Read ``network`` over ``size`` examples: each input or parameter in ``over`` gains
    a leading axis, and so does every node that depends on one of them.

    Returns the batched network (a new recording; the original is untouched) and the
    :class:`Batching` that maps its symbols. See the module contract for the guarantee.

    Example:
        >>> from topos import Tape, batch, gradient
        >>> def build(t):
        ...     w, x = t.parameter([1.0, -1.0]), t.input([0.0, 0.0])
        ...     return w, x, ((w * x).sum() * (w * x).sum())
        >>> network, (w, x, loss) = Tape.record(build)
        >>> longer, adjoints = gradient(network, loss, [w])
        >>> per_example, mapping = batch(longer, over=x, size=2)
        >>> feeds = {mapping.of(x): [[1.0, 0.0], [2.0, 1.0]]}
        >>> run = per_example.forward(per_example.parameters(), feeds)
        >>> run.of(mapping.of(adjoints.of(w))).tolist()
        [[2.0, 0.0], [4.0, 2.0]]
    """
    site = user_site()
    if not isinstance(network, Network):
        raise SymbolError(f"{site}: batch() takes a Network first, got {type(network).__name__}")
    if not is_integer(size) or int(size) < 1:
        raise InvalidArgumentError(f"{site}: batch() size must be a positive integer, got {size!r}")
    size = int(size)
    chosen = _over(network, over, site)
    tape = Tape(network.element)
    values: list[Value] = []
    flags: list[bool] = []
    for index, node in enumerate(network.nodes_):
        start = len(tape._nodes)
        if node.is_source:
            payload = network.sources[index]
            flag = index in chosen
            data = _repeated(payload, size) if flag else payload
            value = tape._source(node.op, data, node.name.lower())
        else:
            operands = [values[i] for i in node.operands]
            operand_flags = [flags[i] for i in node.operands]
            flag = any(operand_flags)
            if flag:
                value = batch_rule(node.op, operands, operand_flags, size)
            else:
                value = tape.record_op(node.op, operands)
        # Every node the rule recorded carries the line of the node it batches, so errors
        # and reports about the batched network point at the user's code, not at this loop.
        tape._nodes[start:] = [attrs.evolve(n, site=node.site) for n in tape._nodes[start:]]
        values.append(value)
        flags.append(flag)
    batched = tape.seal()
    return batched, Batching(size, batched, network, tuple(v.index for v in values), tuple(flags))
