"""The gradient reading: reverse mode recorded as more spec.

Contract: ``record_vjp(tape, target, seed, wrt)`` runs the engine's reverse scan
(:func:`topos.stages.cotangent.reverse_scan`) over recording values instead of tensors, so
every rule application records ordinary nodes on the tape. The cotangent of each ``wrt`` is
returned in :class:`Adjoints`; a ``wrt`` the target does not depend on gets a recorded zero.
Without a seed the target must be rank 0 and is seeded with a recorded one. A seed is a
constant weight: it is never differentiated through.

``gradient(network, target, wrt, seed=None)`` is the same as a pure function over a sealed
network: it returns a longer network of the same lineage (old symbols stay valid, the
original's parameters run it) and the adjoints.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, final

import attrs

from topos.errors import BackwardTargetError, SymbolError, user_site
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.state import Parameters
from topos.stages.cotangent import reverse_scan
from topos.stages.spec import Tape, Value
from topos.tensor import Tensor

if TYPE_CHECKING:
    from topos.stages.interpret import Run

__all__ = ["Adjoints", "gradient", "record_vjp", "recorded_gradients"]


@final
@attrs.frozen(slots=True)
class Adjoints:
    """The symbols a recorded derivative produced: the target and one gradient per ``wrt``.

    Example:
        >>> from topos import Tape
        >>> def build(t: Tape):
        ...     w = t.parameter(3.0)
        ...     loss = w * w
        ...     return loss, t.differentiate(loss, [w])
        >>> network, (loss, adjoints) = Tape.record(build)
        >>> run = network.forward(network.parameters())
        >>> run.of(adjoints.of(adjoints.wrt[0])).scalar()
        6.0
    """

    target: Symbol
    wrt: tuple[Symbol, ...]
    gradients_: tuple[Symbol, ...]

    def pairs(self) -> list[tuple[Symbol, Symbol]]:
        """``(wrt, gradient)`` in ``wrt`` order."""
        return list(zip(self.wrt, self.gradients_, strict=True))

    def gradients(self) -> tuple[Symbol, ...]:
        return self.gradients_

    def of(self, wrt: Symbol) -> Symbol:
        """The gradient symbol recorded for one ``wrt`` symbol."""
        for candidate, gradient_symbol in self.pairs():
            if candidate == wrt:
                return gradient_symbol
        raise SymbolError(f"{wrt!r} is not among the {len(self.wrt)} symbols these adjoints differentiate")

    def roots(self) -> tuple[Symbol, ...]:
        """The target, then every gradient: the root list of a compiled training entry."""
        return (self.target, *self.gradients_)

    def __iter__(self) -> Iterator[tuple[Symbol, Symbol]]:
        return iter(self.pairs())


def _bind(tape: Tape, item: Value | Symbol, role: str) -> Value:
    if isinstance(item, Value):
        if item.tape is not tape:
            raise SymbolError(f"{user_site()}: the {role} %{item.index} belongs to a different tape")
        return item
    if isinstance(item, Symbol):
        try:
            return tape.resolve(item)
        except SymbolError:
            raise SymbolError(f"{user_site()}: the {role} {item!r} belongs to a different network") from None
    raise SymbolError(f"{user_site()}: the {role} must be a Value or a Symbol, got {type(item).__name__}")


def record_vjp(
    tape: Tape, target: Value | Symbol, seed: Value | Symbol | None, wrt: Sequence[Value | Symbol]
) -> Adjoints:
    """Record the reverse scan of ``target`` onto ``tape``; see the module contract."""
    tape._alive()
    target_value = _bind(tape, target, "target")
    wrt_values = [_bind(tape, item, "wrt") for item in wrt]
    if seed is None:
        if target_value.shape.rank != 0:
            raise BackwardTargetError(
                f"{user_site()}: differentiate needs a rank-0 target; %{target_value.index} has shape "
                f"{target_value.shape} (reduce it with .sum(), or pass an explicit seed to vjp)"
            )
        seed_value = target_value.one_like()
    else:
        seed_value = _bind(tape, seed, "seed")
        if seed_value.shape != target_value.shape:
            raise BackwardTargetError(
                f"{user_site()}: the seed %{seed_value.index} has shape {seed_value.shape}, "
                f"the target %{target_value.index} has shape {target_value.shape}"
            )
    # The scan reads nodes through a network view of the tape as it stands now.
    snapshot = tape.seal_view()
    cotangents = reverse_scan(snapshot, lambda i: Value(tape, i, snapshot.nodes_[i].shape), target_value.index, seed_value)
    gradients: list[Symbol] = []
    for value in wrt_values:
        cotangent = cotangents[value.index] if value.index < len(cotangents) else None
        if cotangent is None:
            cotangent = value.zero_like()
        gradients.append(cotangent.symbol)
    return Adjoints(target_value.symbol, tuple(v.symbol for v in wrt_values), tuple(gradients))


def gradient(
    network: Network, target: Symbol, wrt: Sequence[Symbol], seed: Symbol | None = None
) -> tuple[Network, Adjoints]:
    """The derivative of ``target`` with respect to ``wrt``, recorded as a longer network."""
    network.index(target, "target")
    for item in wrt:
        network.index(item, "wrt")
    if seed is not None:
        network.index(seed, "seed")
    tape = network.reopen()
    adjoints = record_vjp(tape, target, seed, list(wrt))
    return tape.seal(), adjoints


def recorded_gradients(run: Run, adjoints: Adjoints) -> Parameters:
    """Copy each recorded gradient's value into its parameter slot; zeros elsewhere."""
    network = run.network
    table = network.parameters()
    named = dict(adjoints.pairs())
    payloads: list[Tensor] = []
    for symbol, initial in table:
        gradient_symbol = named.get(symbol)
        if gradient_symbol is None:
            payloads.append(Tensor.zeros(initial.shape, network.element))
        else:
            payloads.append(run.of(gradient_symbol))
    return Parameters(table.lineage, table.symbols, tuple(payloads))
