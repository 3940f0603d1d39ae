"""The gradient reading: reverse mode recorded as more spec.

Contract: ``record_vjp(tape, target, seed, wrt)`` runs the engine's reverse scan
(:func:`topos.stages.cotangent.reverse_scan`) over recording values instead of tensors, so
every rule application records ordinary nodes on the tape. There is one scan and one rule
table; the two readings differ only in the payload they run over. The cotangent of each
``wrt`` is returned in :class:`Adjoints`; a ``wrt`` the target does not depend on gets a
recorded zero. Without a seed the target must be rank 0 and is seeded with a recorded one.
A seed is a constant weight of the target's shape (it may be a computed node, such as a
gradient: that is how a Hessian-vector product is spelled); it is never differentiated
through.

What may be named in ``wrt``: parameters, inputs and computed nodes. A constant leaf is
refused (:class:`~topos.errors.NotDifferentiableError`): leaves include the literals a user
never named (``x * 2.0`` records one), and asking for their gradient is nearly always a
mistake; record the value with ``tape.input`` or ``tape.parameter`` to differentiate it.
Every check runs before anything is recorded, so a refused call leaves the tape unchanged.

``gradient(network, target, wrt, seed=None)`` is the same as a pure function over a sealed
network: it returns a longer network of the same lineage (old symbols stay valid, the
original's parameters run it) and the adjoints.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, final

import attrs

from topos._collector import pausing
from topos.errors import (
    BackwardTargetError,
    ForeignSymbolError,
    MixedTapesError,
    NotDifferentiableError,
    SymbolError,
    UnknownSymbolError,
    user_site,
)
from topos.ir import ops
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.stages.cotangent import reverse_scan
from topos.stages.spec import Tape, Value
from topos.state import Parameters
from topos.tensor import Tensor

if TYPE_CHECKING:
    from topos.state import Run

__all__ = ["Adjoints", "gradient", "record_vjp", "recorded_gradients"]


@final
@attrs.frozen(slots=True)
class Adjoints:
    """The symbols a recorded derivative produced: the target and one gradient per ``wrt``.

    ``roots()`` (the target, then every gradient) is the root list of a training entry.
    Adjoints hold only symbols, so a build function may return them (alone or inside a
    tuple) from ``Tape.record`` and they pass through detaching unchanged.

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
        """The gradient symbols, in ``wrt`` order."""
        return self.gradients_

    def of(self, wrt: Symbol) -> Symbol:
        """The gradient symbol recorded for one ``wrt`` symbol."""
        for candidate, gradient_symbol in self.pairs():
            if candidate == wrt:
                return gradient_symbol
        named = ", ".join(f"%{s.index}" for s in self.wrt)
        raise UnknownSymbolError(
            f"{wrt!r} is not among the symbols these adjoints differentiate ({named})"
        )

    def roots(self) -> tuple[Symbol, ...]:
        """The target, then every gradient: the root list of a compiled training entry."""
        return (self.target, *self.gradients_)

    def __len__(self) -> int:
        return len(self.wrt)

    def __iter__(self) -> Iterator[tuple[Symbol, Symbol]]:
        return iter(self.pairs())


def _describe(tape: Tape, index: int) -> str:
    node = tape._nodes[index]
    return f"%{index} {node.name}{node.shape} (recorded at {node.site})"


def _bind(tape: Tape, item: Value | Symbol, role: str, site: str) -> Value:
    if isinstance(item, Value):
        if item.tape is not tape:
            raise MixedTapesError(
                f"{site}: the {role} %{item.index}{item.shape} belongs to a different tape than "
                "the one recording this derivative"
            )
        return item
    if not isinstance(item, Symbol):
        # Said here, not by locate: a tape takes its own Values too, and the message says so.
        raise SymbolError(f"{site}: the {role} must be a Value or a Symbol, got {type(item).__name__}")
    index = tape._lineage.locate(item, role, "the tape recording this derivative")
    return Value(tape, index, tape._nodes[index].shape)


def _wrt_list(wrt: Sequence[Value | Symbol] | Value | Symbol, site: str) -> list[Value | Symbol]:
    if isinstance(wrt, (Value, Symbol)):
        return [wrt]
    if not isinstance(wrt, Sequence):
        raise SymbolError(f"{site}: wrt must be a sequence of values or symbols, got {type(wrt).__name__}")
    return list(wrt)


def record_vjp(
    tape: Tape,
    target: Value | Symbol,
    seed: Value | Symbol | None,
    wrt: Sequence[Value | Symbol] | Value | Symbol,
) -> Adjoints:
    """Record the reverse scan of ``target`` onto ``tape``; see the module contract.

    Example:
        >>> from topos import Tape
        >>> def build(t: Tape):
        ...     x = t.input([1.0, 2.0])
        ...     y = x * x
        ...     return x, record_vjp(t, y, t.input([1.0, 1.0]), [x])
        >>> network, (x, adjoints) = Tape.record(build)
        >>> network.forward(network.parameters()).of(adjoints.of(x)).tolist()
        [2.0, 4.0]
    """
    site = user_site()
    tape._alive(site)
    target_value = _bind(tape, target, "target", site)
    wrt_values = [_bind(tape, item, f"wrt[{k}]", site) for k, item in enumerate(_wrt_list(wrt, site))]
    for k, value in enumerate(wrt_values):
        if isinstance(tape._nodes[value.index].op, ops.Leaf):
            raise NotDifferentiableError(
                f"{site}: wrt[{k}] is {_describe(tape, value.index)}, a constant leaf; only "
                "parameters, inputs and computed values have gradients (record it with "
                "tape.input(...) or tape.parameter(...) to differentiate with respect to it)"
            )
    seed_value: Value | None = None
    if seed is None:
        if target_value.shape.rank != 0:
            raise BackwardTargetError(
                f"{site}: differentiate needs a rank-0 target, but the target "
                f"{_describe(tape, target_value.index)} has rank {target_value.shape.rank} "
                "(reduce it with .sum(), or pass a seed of its shape to vjp)"
            )
    else:
        seed_value = _bind(tape, seed, "seed", site)
        if seed_value.shape != target_value.shape:
            raise BackwardTargetError(
                f"{site}: the seed {_describe(tape, seed_value.index)} does not have the shape of "
                f"the target {_describe(tape, target_value.index)}"
            )
    # Every check has passed: only now may the scan record.
    if seed_value is None:
        seed_value = target_value.one_like()
    # The scan reads nodes through a view of the tape as it stands now; nodes the scan
    # records land after the target, so the scan never walks into its own output.
    snapshot = tape.seal_view()
    shapes = [node.shape for node in snapshot.nodes_]
    cotangents = reverse_scan(snapshot, lambda i: Value(tape, i, shapes[i]), target_value.index, seed_value)
    gradients: list[Symbol] = []
    for value in wrt_values:
        cotangent = cotangents[value.index] if value.index < len(cotangents) else None
        if cotangent is None:
            cotangent = value.zero_like()
        gradients.append(cotangent.symbol)
    return Adjoints(target_value.symbol, tuple(v.symbol for v in wrt_values), tuple(gradients))


@pausing
def gradient(
    network: Network,
    target: Symbol,
    wrt: Sequence[Symbol] | Symbol,
    seed: Symbol | None = None,
) -> tuple[Network, Adjoints]:
    """The derivative of ``target`` with respect to ``wrt``, recorded as a longer network.

    The result is a network of the same lineage: every old symbol stays valid and the
    original's :class:`~topos.state.Parameters` run it. ``network`` itself is untouched.

    Example:
        >>> from topos import Tape
        >>> network, (w, loss) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([1.0, 2.0])))
        >>> longer, adjoints = gradient(network, loss, [w])
        >>> longer.forward(network.parameters()).of(adjoints.of(w)).tolist()
        [2.0, 4.0]
    """
    site = user_site()
    if not isinstance(network, Network):
        raise SymbolError(f"{site}: gradient() takes a Network first, got {type(network).__name__}")
    lineage, holder = network.lineage, "the network being differentiated"
    lineage.locate(target, "target", holder)
    for k, item in enumerate(_wrt_list(wrt, site)):
        lineage.locate(item, f"wrt[{k}]", holder)
    if seed is not None:
        lineage.locate(seed, "seed", holder)
    tape = network.reopen()
    adjoints = record_vjp(tape, target, seed, wrt)
    return tape.seal(), adjoints


def recorded_gradients(run: Run, adjoints: Adjoints) -> Parameters:
    """Copy each recorded gradient's value into its parameter slot; zeros elsewhere.

    ``wrt`` entries that are not parameters (inputs, computed values) are skipped: the
    table is aligned to the network's parameter slots, ready for an optimizer step.
    """
    network = run.network
    if not isinstance(adjoints, Adjoints):
        raise SymbolError(f"recorded_gradients() takes Adjoints, got {type(adjoints).__name__}")
    for symbol in adjoints.roots():
        try:
            network.lineage.locate(symbol, "symbol these adjoints name", "this run's network")
        except ForeignSymbolError as error:
            # The usual cause: the run is of the network before gradient() lengthened it.
            raise ForeignSymbolError(f"{error.detail}; run the network the gradient was recorded on") from None
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
