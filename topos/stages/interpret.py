"""The value reading: the interpreter, which is the oracle.

Contract: ``interpret(network, parameters, feeds, roots=None)`` evaluates the spec in
allocation order (which is dependency order) under ``Numerics.EXACT`` unless told otherwise,
with the reference kernels. Sources are supplied: leaves from their payloads, parameters
from the caller's table, inputs from their defaults overlaid by the feeds. With ``roots``,
only the ancestor closure of those nodes is evaluated and reading anything else raises.
Feeds must name inputs, match their recorded shape and convert to the network's element.
A failed call changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from topos.errors import (
    BackwardTargetError,
    CapacityError,
    DeclarationError,
    ElementRangeError,
    FeedError,
    ForeignSymbolError,
    SymbolError,
    ToposError,
    UnknownSymbolError,
)
from topos.ir import ops
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.numerics import Numerics, numerics_scope
from topos.ir.state import Field, Parameters, check_payload
from topos.stages.rules import EXPRESS
from topos.tensor import Tensor, TensorLike

if TYPE_CHECKING:
    from topos.stages.gradient import Adjoints

__all__ = ["Run", "ancestors", "interpret", "resolve_feeds"]


def ancestors(network: Network, roots: Iterable[int]) -> list[bool]:
    """The ancestor closure of ``roots`` (each root included), as a mask over nodes."""
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


def resolve_feeds(network: Network, feeds: Mapping[Symbol, TensorLike]) -> dict[int, Tensor]:
    """Check and convert feeds; keyed by node position."""
    if not isinstance(feeds, Mapping):
        raise FeedError(f"feeds must be a mapping of input symbols to values, got {type(feeds).__name__}")
    resolved: dict[int, Tensor] = {}
    for symbol, value in feeds.items():
        try:
            index = network.index(symbol, "feed")
        except ForeignSymbolError as error:
            raise FeedError(f"cannot feed {symbol!r}: {error.detail}") from None
        except SymbolError as error:
            raise FeedError(str(error)) from None
        node = network.nodes_[index]
        if not isinstance(node.op, ops.Input):
            raise FeedError(
                f"only inputs can be fed; {network.describe_symbol(index)} is a {node.name}"
            )
        try:
            if isinstance(value, Tensor):
                tensor = value if value.element == network.element else value.convert(network.element)
            else:
                tensor = Tensor(np.asarray(value), element=network.element)
        except ElementRangeError as error:
            # A finite value beyond the element is an element error, named with the input.
            raise ElementRangeError(f"feed for {network.describe_symbol(index)}: {error.detail}") from None
        except Exception as error:
            detail = error.detail if isinstance(error, ToposError) else str(error)
            raise FeedError(
                f"feed for {network.describe_symbol(index)} cannot convert to {network.element}: {detail}"
            ) from None
        if tensor.shape != node.shape:
            raise FeedError(
                f"feed for {network.describe_symbol(index)} has shape {tensor.shape}, "
                f"the input was recorded with shape {node.shape}"
            )
        resolved[index] = tensor
    return resolved


class Run:
    """The payloads of one forward execution.

    A run owns its values and outlives its network's reopening. ``of(symbol)`` reads a value;
    ``backward(target)`` runs the engine reverse scan (rank-0 target).

    Example:
        >>> from topos import Tape
        >>> network, (w, loss) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([1.0, 2.0])))
        >>> run = network.forward(network.parameters())
        >>> run.of(loss).scalar()
        5.0
    """

    __slots__ = ("_provenance", "_readable", "_values", "network", "numerics")

    def __init__(
        self,
        network: Network,
        values: Sequence[Tensor | None],
        numerics: Numerics,
        readable: Sequence[bool] | None,
        provenance: str,
    ) -> None:
        self.network = network
        self._values = list(values)
        self.numerics = numerics
        self._readable = readable
        self._provenance = provenance

    @property
    def provenance(self) -> str:
        """``complete`` (whole spec), ``sliced`` (an entry's closure), ``observed`` or ``training`` (plans)."""
        return self._provenance

    def _index(self, symbol: Symbol) -> int:
        index = self.network.index(symbol)
        if index >= len(self._values):
            raise UnknownSymbolError(f"{symbol!r} was recorded after this run's network was sealed")
        return index

    def of(self, symbol: Symbol) -> Tensor:
        """The value this run computed for ``symbol``."""
        index = self._index(symbol)
        value = self._values[index]
        if (self._readable is not None and not self._readable[index]) or value is None:
            raise DeclarationError(
                f"{self.network.describe_symbol(index)} was not declared readable by this "
                f"{self._provenance} run; add it to the entry's roots or observes"
            )
        return value

    def holds(self, symbol: Symbol) -> bool:
        index = self._index(symbol)
        return self._values[index] is not None and (self._readable is None or self._readable[index])

    def values(self) -> list[Tensor | None]:
        """Every slot (None where the run holds nothing); a copy."""
        return list(self._values)

    def field(self) -> Field:
        """Every slot as a Field (zeros of the recorded shape where nothing was kept)."""
        payloads = tuple(
            v if v is not None else Tensor.zeros(n.shape, self.network.element)
            for v, n in zip(self._values, self.network.nodes_, strict=True)
        )
        return Field(self.network, payloads)

    def backward(self, target: Symbol) -> Field:
        """The engine reverse scan from a rank-0 ``target``: one cotangent per node."""
        from topos.stages.cotangent import backward

        return backward(self, target)

    def recorded_gradients(self, adjoints: Adjoints) -> Parameters:
        """Copy recorded gradient values into parameter slots (zeros where not named)."""
        from topos.stages.gradient import recorded_gradients

        return recorded_gradients(self, adjoints)

    def _require_backward(self) -> None:
        if self._provenance == "observed":
            raise BackwardTargetError(
                "backward is refused on a forward-only plan run: its plan released the values the "
                "rules read; lower the entry with .backward() to keep them"
            )

    def __repr__(self) -> str:
        return f"Run({self._provenance}, {len(self._values)} nodes, {self.numerics.value})"

    def _repr_html_(self) -> str:
        from topos.render import run_html

        return run_html(self)


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
    fed = resolve_feeds(network, feeds)
    nodes = network.nodes_
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
