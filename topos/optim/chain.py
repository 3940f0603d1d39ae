"""Optimizers as chains of transforms: each formula written once, read by both roads.

Contract. A :class:`Transform` is one piece of an update, in the spirit of optax's
gradient transformations: it keeps zero or more parameter-aligned tables (moments,
velocities) and carried scalars, settles its numbers in Python once per update
(:meth:`Transform.prelude`), and states what it does to one slot in :class:`SlotOps`
(:meth:`Transform.slot`). :func:`chain` threads the gradient through its transforms in
order and subtracts what comes out from the parameters, so ``chain(scale_by_adam(),
scale_by_learning_rate(lr))`` is Adam. A :class:`Chain` is an optimizer: ``init`` and
``update`` are pure, and its state is one :class:`~topos.optim.OptimizerState` holding every
transform's tables and scalars under their own names (two transforms may not use one name).

The slot formulas are recorded once per shape of the formula (the transforms' per-slot flags
and how many numbers each settles) as a :class:`topos.optim.passes.Program`, and both roads
read that one recording: the numpy road (:meth:`Chain.update`) replays it as fused numpy
passes, one rounding per operation as tensor arithmetic does, and the XLA road
(:func:`topos.optim.compiled`) replays it with jax.numpy under ``jax.jit``.

Numbers (rates, betas, bias corrections) are settled in f64 by the preludes and reach a
formula as values rounded to the element, never as Python floats, so a schedule changes no
recorded formula and recompiles nothing.

Example:
    >>> from topos import Tape, f64
    >>> from topos.optim import chain, scale_by_adam, scale_by_learning_rate
    >>> network, w = Tape.record(lambda t: t.parameter(1.0), element=f64)
    >>> p = network.parameters()
    >>> adam = chain(scale_by_adam(), scale_by_learning_rate(0.1), kind="my-adam")
    >>> p, state = adam.update(p.map(lambda w: w * 2.0), adam.init(p), p)
    >>> round(p.of(w).scalar(), 6), sorted(state.tables)
    (0.9, ['first', 'second'])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Protocol, TypeVar, final, runtime_checkable

import attrs
import numpy as np

from topos.errors import user_site
from topos.optim.base import OptimizerError, OptimizerState, check_state, check_table, zeros_like
from topos.optim.passes import FormulaError, Program, Recorder, Ref
from topos.state import Parameters
from topos.tensor import Tensor

__all__ = ["Chain", "Prelude", "Road", "Settled", "SlotOps", "Transform", "chain"]

_V = TypeVar("_V")


class SlotOps(Protocol[_V]):
    """The arithmetic a slot formula is written in.

    Every operation computes in the element's compute dtype and rounds once to storage, as
    tensor arithmetic does (bf16 computes in f32). A formula is generic in the value type
    ``_V``: it combines values only through these operations (the recorder's handles refuse
    Python arithmetic and truth tests).
    """

    def add(self, left: _V, right: _V) -> _V: ...
    def sub(self, left: _V, right: _V) -> _V: ...
    def mul(self, left: _V, right: _V) -> _V: ...
    def div(self, left: _V, right: _V) -> _V: ...
    def sqrt(self, operand: _V) -> _V: ...


@final
@attrs.frozen(slots=True)
class Prelude:
    """What a transform settles in Python for one update, before any slot runs.

    ``numbers`` (f64; the slot formula receives them as values rounded to the element),
    ``flags`` (one static bool per parameter slot, e.g. whether weight decay applies;
    ``None`` when the formula is the same for every slot) and ``scalars`` (the next values
    of the transform's carried scalars).

    Example:
        >>> Prelude((0.1,)).numbers, Prelude((0.1,)).flags
        ((0.1,), None)
    """

    numbers: tuple[float, ...] = ()
    flags: tuple[bool, ...] | None = None
    scalars: Mapping[str, Tensor] = MappingProxyType({})


@runtime_checkable
class Transform(Protocol):
    """One piece of an optimizer: its state's names, its Python prelude, its slot formula.

    ``slot(ops, numbers, flag, p, update, tables)`` receives this update's numbers from the
    prelude (as values), the slot's flag, the parameter ``p``, the update so far (the
    gradient, for the first transform of a chain) and this transform's own table entries in
    the order ``tables()`` names them; it returns the new update and the new table entries in
    that order. It is recorded, not run per element: branch on ``flag`` and on the
    transform's own fields, never on values.
    """

    def tables(self) -> tuple[str, ...]:
        """The parameter-aligned tables this transform keeps (each starts at zero)."""
        ...

    def carried(self) -> Mapping[str, float]:
        """The carried scalars this transform keeps, with their values before the first update."""
        ...

    def prelude(self, kind: str, state: OptimizerState, parameters: Parameters) -> Prelude:
        """This update's numbers, flags and next scalars (``kind`` names the optimizer in errors)."""
        ...

    def slot(self, ops: SlotOps[_V], numbers: tuple[_V, ...], flag: bool, p: _V, update: _V, tables: tuple[_V, ...]) -> tuple[_V, tuple[_V, ...]]:
        """One slot's formula: the new update and this transform's new table entries."""
        ...


@final
@attrs.frozen(slots=True)
class Settled:
    """A chain's preludes for one update, joined: what either road needs besides the tensors.

    ``numbers`` is every transform's numbers in chain order, ``programs`` the recorded
    formula of each slot, ``scalars`` every transform's next carried scalars.
    """

    numbers: tuple[float, ...]
    programs: tuple[Program, ...]
    scalars: Mapping[str, Tensor]


Road = Callable[[Settled, Sequence[tuple[Tensor, ...]]], Sequence[tuple[Tensor, tuple[Tensor, ...]]]]
"""How a road runs one update: every slot's ``(p, g, *entries)`` to its new parameter and entries."""


@final
@attrs.frozen(slots=True)
class Chain:
    """An optimizer made of transforms, applied in order; the result is subtracted from ``p``.

    Build one with :func:`chain`. ``kind`` names the optimizer in its state and in errors.

    Example:
        >>> from topos.optim import chain, scale_by_learning_rate, trace
        >>> sgd = chain(trace(0.9), scale_by_learning_rate(0.1), kind="momentum")
        >>> sgd.tables, sgd.kind
        (('velocity',), 'momentum')
    """

    kind: str
    transforms: tuple[Transform, ...]
    _programs: dict[tuple[tuple[int, ...], tuple[bool, ...]], Program] = attrs.field(
        init=False, factory=dict, eq=False, repr=False
    )

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind:
            raise OptimizerError(f"{user_site()}: chain: kind must be a non-empty name, got {self.kind!r}")
        if not isinstance(self.transforms, tuple):
            raise OptimizerError(f"chain: transforms must be a tuple of Transforms, got {type(self.transforms).__name__}")
        owners: dict[str, str] = {"count": "the step count"}
        for position, transform in enumerate(self.transforms):
            if not isinstance(transform, Transform):
                raise OptimizerError(f"{user_site()}: chain: transform {position} is a {type(transform).__name__}, not a Transform")
            for name in (*transform.tables(), *transform.carried()):
                if name in owners:
                    raise OptimizerError(f"{user_site()}: chain: {transform!r} names its state {name!r}, already {owners[name]}'s")
                owners[name] = f"transform {position} ({transform!r})"

    @property
    def tables(self) -> tuple[str, ...]:
        """Every transform's table names, in chain order (the order the formula reads them)."""
        return tuple(name for transform in self.transforms for name in transform.tables())

    @property
    def chain(self) -> Chain:
        """This chain: :func:`~topos.optim.compiled` runs ``optimizer.chain``, and a chain is its own."""
        return self

    def init(self, parameters: Parameters) -> OptimizerState:
        """Every table at zero and every carried scalar at its start, step 0."""
        check_table(f"{self.kind}.init", "parameters", parameters)
        carried = {name: value for t in self.transforms for name, value in t.carried().items()}
        return OptimizerState.start(self.kind, parameters, {name: zeros_like(parameters) for name in self.tables}, carried)

    def update(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters
    ) -> tuple[Parameters, OptimizerState]:
        """One step on the numpy road: each slot's recorded formula replayed as fused passes."""
        return self.step(gradients, state, parameters, _numpy_road)

    def step(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters, road: Road
    ) -> tuple[Parameters, OptimizerState]:
        """One step on ``road``: check, settle the preludes, run the slots, assemble the state."""
        check_state(self.kind, state).check(self.kind, gradients, parameters)
        settled = self.settle(state, parameters)
        held = [state.table(name) for name in self.tables]
        slots = [(p, g, *entries) for p, g, *entries in zip(parameters.payloads(), gradients.payloads(), *(t.payloads() for t in held), strict=True)]
        results = road(settled, slots)
        columns = list(zip(*(kept for _, kept in results), strict=True)) or [()] * len(held)
        tables = {name: Parameters(t.lineage, t.symbols, tuple(c)) for name, t, c in zip(self.tables, held, columns, strict=True)}
        following = state.advanced(tables=tables, scalars=settled.scalars)
        return Parameters(parameters.lineage, parameters.symbols, tuple(new for new, _ in results)), following

    def settle(self, state: OptimizerState, parameters: Parameters) -> Settled:
        """Run every transform's prelude for this update and find each slot's recorded formula."""
        width = len(parameters.symbols)
        preludes = [transform.prelude(self.kind, state, parameters) for transform in self.transforms]
        for transform, prelude in zip(self.transforms, preludes, strict=True):
            if not isinstance(prelude, Prelude):
                raise OptimizerError(f"{self.kind}: {transform!r}.prelude returned {type(prelude).__name__}, not a Prelude")
        columns = [(False,) * width if q.flags is None else tuple(bool(f) for f in q.flags) for q in preludes]
        for transform, flags in zip(self.transforms, columns, strict=True):
            if len(flags) != width:
                raise OptimizerError(f"{self.kind}: {transform!r} settled {len(flags)} flags for {width} parameter slots")
        counts = tuple(len(q.numbers) for q in preludes)
        rows = zip(*columns, strict=True) if columns else [()] * width
        return Settled(
            tuple(float(n) for q in preludes for n in q.numbers),
            tuple(self.program(counts, flags) for flags in rows),
            MappingProxyType({name: value for q in preludes for name, value in q.scalars.items()}),
        )

    def program(self, counts: tuple[int, ...], flags: tuple[bool, ...]) -> Program:
        """The chain's formula for one slot, recorded once per ``(counts, flags)``."""
        found = self._programs.get((counts, flags))
        if found is not None:
            return found

        def formula(ops: Recorder, numbers: tuple[Ref, ...], p: Ref, g: Ref, tables: tuple[Ref, ...]) -> tuple[Ref, tuple[Ref, ...]]:
            update, start, at = g, 0, 0
            kept: list[Ref] = []
            for transform, count, flag in zip(self.transforms, counts, flags, strict=True):
                width = len(transform.tables())
                result = transform.slot(ops, numbers[start : start + count], flag, p, update, tables[at : at + width])
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise FormulaError(f"{self.kind}: {transform!r}.slot returned {result!r:.60}; a slot returns (update, tuple of its {width} table entries)")
                update, entries = result
                if not isinstance(entries, tuple) or len(entries) != width:
                    raise OptimizerError(f"{self.kind}: {transform!r} returned {entries!r} where its {width} table entries belong")
                kept.extend(entries)
                start, at = start + count, at + width
            return ops.sub(p, update), tuple(kept)

        # A race records it twice, harmlessly.
        found = self._programs[counts, flags] = Program.record(formula, sum(counts), len(self.tables), self.kind)
        return found


def _numpy_road(settled: Settled, slots: Sequence[tuple[Tensor, ...]]) -> list[tuple[Tensor, tuple[Tensor, ...]]]:
    with np.errstate(all="ignore"):  # as tensor arithmetic: IEEE results, no warnings
        return [program.run(settled.numbers, inputs) for program, inputs in zip(settled.programs, slots, strict=True)]


def chain(*transforms: Transform, kind: str = "chain") -> Chain:
    """An optimizer applying ``transforms`` in order (optax's ``chain``), named ``kind``.

    The gradient enters the first transform; what the last one returns is subtracted from
    the parameters. The transforms' table and scalar names must differ from each other (and
    from ``count``, the step count); the chain refuses them otherwise, naming both.

    Example:
        >>> from topos import Tape, f64
        >>> from topos.optim import add_decayed_weights, chain, scale_by_adam, scale_by_learning_rate
        >>> network, w = Tape.record(lambda t: t.parameter([[1.0]]), element=f64)
        >>> p = network.parameters()
        >>> adamw = chain(scale_by_adam(), add_decayed_weights(0.1), scale_by_learning_rate(0.5), kind="adamw")
        >>> p, _ = adamw.update(p.map(lambda w: w * 0.0), adamw.init(p), p)
        >>> p.of(w).tolist()   # a zero gradient: only the decay moves the matrix
        [[0.95]]
    """
    return Chain(kind, transforms)
