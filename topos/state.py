"""State: the payloads a reading takes in and gives back, over one network.

:class:`Parameters` holds one tensor per parameter slot of a network (weights, or any
table aligned to the same slots: gradients, moments, velocities). :class:`Field` holds one
tensor per node (a run's values, or an engine backward's cotangents). Both are values: every
operation returns a new table and leaves its inputs untouched. :class:`Run` is what a
forward execution gives back (the interpreter, a plan, or the XLA road), :class:`Runner`
the one shape those three share, and :func:`check_feeds` the one check of what a caller
feeds in, which every road runs before it reads a feed.

This module sits above :mod:`topos.tensor` (it holds tensors) and below the readings and the
XLA backend, which all speak these types; ``topos.ir`` never imports it at import time.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, final, runtime_checkable

import attrs
import numpy as np

from topos.errors import (
    BackwardTargetError,
    DeclarationError,
    ElementRangeError,
    FeedError,
    InvalidArgumentError,
    ParametersError,
    ShapeMismatchError,
    SymbolError,
    ToposError,
    UnknownSymbolError,
)
from topos.ir import ops
from topos.ir.element import ALIGNED_FROM, ElementType, aligned_cast
from topos.ir.node import Symbol
from topos.ir.numerics import Numerics
from topos.ir.shape import Shape
from topos.tensor import Operand, Tensor, TensorLike

if TYPE_CHECKING:
    from topos.ir.network import Lineage, Network
    from topos.stages.gradient import Adjoints

__all__ = ["Feed", "Field", "Parameters", "Run", "Runner", "check_feeds", "check_payload"]

Array = np.ndarray[Any, Any]
Feed = Array | Tensor
"""A checked feed: an array in the element's storage dtype, or a tensor of the element."""


def check_payload(network: Network, index: int, payload: Tensor, reader: str) -> None:
    """Refuse a parameter payload whose shape or element differs from its recorded node.

    Every reading (the interpreter, plans) checks through here, so a table edited to hold
    another shape fails the same way, naming the slot, wherever it is read.
    """
    node = network.nodes_[index]
    if payload.shape != node.shape or payload.element != network.element:
        raise ParametersError(
            f"parameter {network.describe_symbol(index)} holds a {payload.element}{payload.shape} "
            f"payload; {reader} needs {network.element}{node.shape}"
        )


def _check_same_shape(symbol: Symbol, before: Tensor, after: object, what: str) -> Tensor:
    if not isinstance(after, Tensor):
        raise ParametersError(f"{what} for {symbol!r} returned {type(after).__name__}, not a Tensor")
    if after.shape != before.shape:
        raise ShapeMismatchError(
            f"{what} for {symbol!r} changed its shape from {before.shape} to {after.shape}"
        )
    if after.element != before.element:
        if after.weak:
            return Tensor(after, element=before.element)
        raise ParametersError(
            f"{what} for {symbol!r} changed its element from {before.element} to {after.element}"
        )
    return after


@final
@attrs.frozen(slots=True, eq=False, repr=False)
class Parameters:
    """A slot-aligned table of parameter payloads, owned by the caller.

    Example:
        >>> from topos import Tape, Tensor
        >>> network, w = Tape.record(lambda t: t.parameter([1.0, 2.0]))
        >>> table = network.parameters()
        >>> table.map(lambda p: p * 2.0).of(w).tolist()
        [2.0, 4.0]
    """

    lineage: Lineage
    symbols: tuple[Symbol, ...]
    payloads_: tuple[Tensor, ...]
    _slot: dict[Symbol, int] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_slot", {s: i for i, s in enumerate(self.symbols)})

    @staticmethod
    def initial(network: Network) -> Parameters:
        payloads = tuple(network.sources[i] for i in network.parameter_nodes)
        return Parameters(network.lineage, network.parameter_symbols(), payloads)

    # ----------------------------------------------------------------- reads
    def __len__(self) -> int:
        return len(self.symbols)

    def __iter__(self) -> Iterator[tuple[Symbol, Tensor]]:
        return iter(zip(self.symbols, self.payloads_, strict=True))

    def payloads(self) -> tuple[Tensor, ...]:
        """Payloads in slot order (recording order)."""
        return self.payloads_

    def slot(self, symbol: Symbol) -> int:
        slot = self._slot.get(symbol)
        if slot is None:
            self.lineage.locate(symbol, "symbol", "the network of this table")
            raise UnknownSymbolError(
                f"{symbol!r} is not a parameter slot of this table ({len(self.symbols)} slots)"
            )
        return slot

    def of(self, symbol: Symbol) -> Tensor:
        """The payload held for a parameter symbol."""
        return self.payloads_[self.slot(symbol)]

    def check(self, network: Network, role: str = "parameters") -> None:
        """Raise unless this table covers exactly the network's parameter slots."""
        if not self.lineage.related(network.lineage):
            raise ParametersError(
                f"{role} ({len(self.symbols)} slots) belong to a different network than {network!r}; "
                "use the table made by this network's parameters() (or carried() after reopening)"
            )
        expected = network.parameter_symbols()
        if self.symbols != expected:
            if self.symbols == expected[: len(self.symbols)]:
                missing = ", ".join(network.describe_symbol(s.index) for s in expected[len(self.symbols) :])
                raise ParametersError(
                    f"{role} are missing slots {missing}; extend the table with "
                    "parameters.carried(network)"
                )
            raise ParametersError(
                f"{role} hold {len(self.symbols)} slots, the network has {len(expected)}"
            )

    # ----------------------------------------------------------------- algebra
    def _aligned(self, other: Parameters) -> None:
        if other.symbols != self.symbols:
            mine = ", ".join(f"%{s.index}{p.shape}" for s, p in self)
            theirs = ", ".join(f"%{s.index}{p.shape}" for s, p in other)
            raise ParametersError(
                f"tables are not aligned: this table holds {len(self.symbols)} slots ({mine}), the "
                f"other {len(other.symbols)} ({theirs}); combine tables of the same network's slots"
            )

    def _replace(self, payloads: Iterable[Tensor]) -> Parameters:
        return Parameters(self.lineage, self.symbols, tuple(payloads))

    def map(self, rule: Callable[[Tensor], Tensor]) -> Parameters:
        """Apply ``rule`` to every payload (shape must be kept)."""
        return self._replace(
            _check_same_shape(s, p, rule(p), "map") for s, p in zip(self.symbols, self.payloads_, strict=True)
        )

    def zip(self, other: Parameters, rule: Callable[[Tensor, Tensor], Tensor]) -> Parameters:
        """Deprecated alias of :meth:`step` (the two were identical); warns, then steps."""
        warnings.warn(
            "Parameters.zip(other, rule) is deprecated; use Parameters.step(other, rule), which "
            "does the same",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.step(other, rule)

    def scale(self, factor: Operand) -> Parameters:
        """Multiply every payload by one number (a Python number or a single-element tensor)."""
        return self.map(lambda p: p * factor)

    def __add__(self, other: Parameters) -> Parameters:
        return self.step(other, lambda p, q: p + q)

    def step(self, direction: Parameters, rule: Callable[[Tensor, Tensor], Tensor]) -> Parameters:
        """A new table: ``rule(current, direction)`` per slot, in recording order.

        The one way to combine two aligned tables slot by slot: a parameter update
        (``p - g * lr``) or any other pairing (a moment ``m * beta + g``).

        Example:
            >>> from topos import Tape
            >>> network, w = Tape.record(lambda t: t.parameter([1.0, 2.0]))
            >>> table = network.parameters()
            >>> table.step(table, lambda p, g: p - g * 0.5).of(w).tolist()
            [0.5, 1.0]
        """
        self._aligned(direction)
        return self._replace(
            _check_same_shape(s, p, rule(p, q), "step")
            for s, p, q in zip(self.symbols, self.payloads_, direction.payloads_, strict=True)
        )

    def step_each(
        self, direction: Parameters, rule: Callable[[Symbol, Tensor, Tensor], Tensor]
    ) -> Parameters:
        """Like ``step``, with the slot's symbol passed first (selective decay, clipping)."""
        self._aligned(direction)
        return self._replace(
            _check_same_shape(s, p, rule(s, p, q), "step_each")
            for s, p, q in zip(self.symbols, self.payloads_, direction.payloads_, strict=True)
        )

    def carried(self, network: Network) -> Parameters:
        """This table extended to a reopened network: old slots keep payloads, new take initials."""
        if not self.lineage.related(network.lineage):
            raise ParametersError("carried() needs the network this table came from, or a reopening of it")
        fresh = network.parameters()
        if self.symbols != fresh.symbols[: len(self.symbols)]:
            raise ParametersError("carried(): this table's slots are not a prefix of the network's slots")
        payloads = self.payloads_ + fresh.payloads_[len(self.symbols) :]
        return Parameters(network.lineage, fresh.symbols, payloads)

    def with_payloads(self, pairs: Iterable[tuple[Symbol, Tensor]]) -> Parameters:
        """A table with the named slots replaced (shape-checked; the last write wins)."""
        payloads = list(self.payloads_)
        for symbol, tensor in pairs:
            slot = self.slot(symbol)
            payloads[slot] = _check_same_shape(symbol, payloads[slot], tensor, "with_payloads")
        return self._replace(payloads)

    def __repr__(self) -> str:
        shapes = ", ".join(f"%{s.index}{p.shape}" for s, p in self)
        return f"Parameters({shapes})"

    def _repr_html_(self) -> str:
        from topos.render import parameters_html

        return parameters_html(self)


@final
@attrs.frozen(slots=True, eq=False, repr=False)
class Field:
    """One payload per node of a network (a run's values or an engine backward's cotangents).

    Example:
        >>> from topos import Tape
        >>> network, (w, loss) = Tape.record(lambda t: (lambda w: (w, w * w))(t.parameter(3.0)))
        >>> run = network.forward(network.parameters(), {})
        >>> run.backward(loss).of(w).scalar()
        6.0
    """

    network: Network
    payloads_: tuple[Tensor, ...]

    def of(self, symbol: Symbol) -> Tensor:
        return self.payloads_[self.network.index(symbol)]

    def payloads(self) -> tuple[Tensor, ...]:
        return self.payloads_

    def _replace(self, payloads: Iterable[Tensor]) -> Field:
        return Field(self.network, tuple(payloads))

    def _aligned(self, other: Field) -> None:
        if other.network is not self.network and not (
            other.network.lineage == self.network.lineage
        ):
            raise ParametersError("fields of different networks cannot be combined")

    def map(self, rule: Callable[[Tensor], Tensor]) -> Field:
        return self._replace(
            _check_same_shape(self.network.symbol(i), p, rule(p), "map") for i, p in enumerate(self.payloads_)
        )

    def zip(self, other: Field, rule: Callable[[Tensor, Tensor], Tensor]) -> Field:
        self._aligned(other)
        return self._replace(
            _check_same_shape(self.network.symbol(i), p, rule(p, q), "zip")
            for i, (p, q) in enumerate(zip(self.payloads_, other.payloads_, strict=True))
        )

    def scale(self, factor: Operand) -> Field:
        return self.map(lambda p: p * factor)

    def __add__(self, other: Field) -> Field:
        return self.zip(other, lambda p, q: p + q)

    def parameters(self, parameters: Parameters) -> Parameters:
        """Project node payloads onto the parameter slots of ``parameters``."""
        parameters.check(self.network, "parameters passed to Field.parameters")
        return Parameters(
            parameters.lineage,
            parameters.symbols,
            tuple(self.payloads_[self.network.index(s)] for s in parameters.symbols),
        )

    def __repr__(self) -> str:
        return f"Field({len(self.payloads_)} nodes)"

    def _repr_html_(self) -> str:
        from topos.render import field_html

        return field_html(self)


def _stored(value: object, element: ElementType) -> Array:
    """``value`` as the array a tensor of ``element`` holds: converted once, a private copy
    (64-byte aligned from ``ALIGNED_FROM`` bytes, so it crosses to XLA as it is), read-only.

    These are the steps ``Tensor(value, element)`` takes, without the tensor around them:
    a feed read by the kernels needs only the array.
    """
    source = np.asarray(value)
    array = element.convert(source)
    if array is source:
        array = array.copy() if array.nbytes < ALIGNED_FROM else aligned_cast(array, array.dtype)
    if array.size == 0:
        raise InvalidArgumentError(f"tensors are never empty; got shape {list(array.shape)}")
    array.flags.writeable = False
    return array


def check_feeds(network: Network, feeds: Mapping[Symbol, TensorLike]) -> dict[int, Feed]:
    """Check what a caller feeds into ``network`` and convert it once, keyed by node position.

    The one check every road runs (the interpreter, plans, the XLA road): each key must be
    a Symbol of ``network`` naming an input, each value must convert to the network's
    element and have the input's recorded shape. Array in, array out: a number, list or
    array comes back as the array the kernels read, the one a tensor of the element would
    hold (converted once, a private read-only copy, 64-byte aligned when large); a tensor
    comes back as a tensor of the element (converted when it holds another; a selection
    stays indices, a constant one number). Every refusal names the input and the caller's
    line, and nothing is changed.

    Example:
        >>> from topos import Tape
        >>> network, (x, y) = Tape.record(lambda t: (lambda x: (x, x * 2.0))(t.input([1.0, 2.0])))
        >>> check_feeds(network, {x: [3.0, 4.0]})
        {0: array([3., 4.], dtype=float32)}
    """
    if not isinstance(feeds, Mapping):
        raise FeedError(f"feeds must be a mapping of input symbols to values, got {type(feeds).__name__}")
    element, nodes = network.element, network.nodes_
    checked: dict[int, Feed] = {}
    for symbol, value in feeds.items():
        try:
            index = network.lineage.locate(symbol, "feed")
        except SymbolError as error:
            raise FeedError(error.detail) from None
        node = nodes[index]
        if not isinstance(node.op, ops.Input):
            raise FeedError(f"only inputs can be fed; {network.describe_symbol(index)} is a {node.name}")
        payload: Feed
        try:
            if isinstance(value, Tensor):
                payload = value if value.element == element else value.convert(element)
                axes = payload.shape.axes
            else:
                payload = _stored(value, element)
                axes = payload.shape
        except ElementRangeError as error:
            # A finite value beyond the element is an element error, named with the input.
            raise ElementRangeError(f"feed for {network.describe_symbol(index)}: {error.detail}") from None
        except Exception as error:
            detail = error.detail if isinstance(error, ToposError) else str(error)
            raise FeedError(
                f"feed for {network.describe_symbol(index)} cannot convert to {element}: {detail}"
            ) from None
        if axes != node.shape.axes:
            raise FeedError(
                f"feed for {network.describe_symbol(index)} has shape {Shape(axes)}, "
                f"the input was recorded with shape {node.shape}"
            )
        checked[index] = payload
    return checked


@runtime_checkable
class Runner(Protocol):
    """Anything that runs a recorded network forward and returns the :class:`Run` it read.

    A :class:`~topos.ir.network.Network` (the oracle), a :class:`~topos.stages.plan.Plan`
    and an :class:`~topos.xla.XlaExecutable` all satisfy it structurally, so a training loop
    written against ``Runner`` moves to another road by changing the line that builds it
    and nothing else. ``feeds`` maps input symbols to values (unfed inputs take their
    recorded payloads); ``None`` feeds nothing.

    Example:
        >>> from topos import Runner, Tape, XlaExecutable
        >>> network, y = Tape.record(lambda t: (t.input([1.0, 2.0]) * 3.0).sum())
        >>> plan = network.entry(y).lower()
        >>> runner: Runner = plan                                  # numpy kernels
        >>> runner.forward(network.parameters(), {}).of(y).scalar()
        9.0
        >>> runner = XlaExecutable.of_plan(plan)                   # the same loop on XLA
        >>> runner.forward(network.parameters(), {}).of(y).scalar()
        9.0
    """

    def forward(self, parameters: Parameters, feeds: Mapping[Symbol, TensorLike] | None = None) -> Run:
        """Run forward on ``parameters`` and ``feeds``; the results are read from the Run."""
        ...


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
