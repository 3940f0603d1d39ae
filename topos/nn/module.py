"""Modules: recordable layers that name their parameters by structured path.

Contract: a module is anything with ``__call__(input: Value) -> Value`` that records onto
the tape of its input, and ``visit(visitor)`` that reports each parameter it holds by a
field name, descending into children through :meth:`Visitor.child`. Modules hold symbols
(names of recorded nodes), never payloads: weights live in the caller's
:class:`~topos.Parameters` table. Because a symbol stays valid across ``network.reopen()``,
a module recorded once can be applied again on the reopened tape.

Paths are structured (a tuple of field names and child indices) and print dotted, e.g.
``blocks.0.attention.query.weights``; checkpoints key their entries by that text.

This file uses only the public surface of topos.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import ParamSpec, Protocol, TypeVar, final, runtime_checkable

import attrs

from topos import InvalidArgumentError, Symbol, Tape, Value

__all__ = [
    "Module",
    "Path",
    "Segment",
    "Visitable",
    "Visitor",
    "bind",
    "facade",
    "named_parameters",
    "parameters",
]

P = ParamSpec("P")
R = TypeVar("R")


def _tapes_among(items: object, found: list[Tape]) -> None:
    """Collect the tapes of every Value (or Tape) among ``items``, one level into sequences."""
    if isinstance(items, Mapping):
        values: list[object] = list(items.values())
    elif isinstance(items, (tuple, list)):
        values = list(items)
    else:
        return
    for item in values:
        tape = item.tape if isinstance(item, Value) else item if isinstance(item, Tape) else None
        if tape is not None:
            if all(tape is not other for other in found):
                found.append(tape)
        elif isinstance(item, (tuple, list)):
            _tapes_among(item, found)


def facade(function: Callable[P, R]) -> Callable[P, R]:
    """Make a facade entry all or nothing: if it raises, its tape is rolled back to the start.

    The tapes are those of the recorded values (and tapes) among the arguments; a call that
    records several nodes and then refuses one leaves no partial recording behind on any.

    Example:
        >>> from topos import Tape, ShapeMismatchError
        >>> @facade
        ... def double_then_add(x: Value, y: Value) -> Value:
        ...     return x * 2.0 + y
        >>> tape = Tape()
        >>> x, y = tape.input([1.0, 2.0]), tape.input([1.0, 2.0, 3.0])
        >>> try:
        ...     double_then_add(x, y)
        ... except ShapeMismatchError:
        ...     pass
        >>> len(tape)
        2
    """

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        tapes: list[Tape] = []
        _tapes_among(args, tapes)
        _tapes_among(kwargs, tapes)
        if not tapes:
            return function(*args, **kwargs)
        # Every tape among the arguments is rolled back: a refused call that mixed two tapes
        # may have recorded on both before the mix was noticed.
        with contextlib.ExitStack() as stack:
            for tape in tapes:
                stack.enter_context(tape.transaction())
            return function(*args, **kwargs)

    return call

Segment = str | int
"""One step of a path: a field name or a child's position."""


@final
@attrs.frozen(slots=True)
class Path:
    """A structured parameter path; ``str(path)`` is the dotted form.

    Example:
        >>> str(Path(("blocks", 0, "attention", "query", "weights")))
        'blocks.0.attention.query.weights'
    """

    segments: tuple[Segment, ...]

    def __str__(self) -> str:
        return ".".join(str(segment) for segment in self.segments)

    def __truediv__(self, segment: Segment) -> Path:
        return Path((*self.segments, segment))


@runtime_checkable
class Visitable(Protocol):
    """Anything that reports its parameters: all :func:`named_parameters` and checkpoints need.

    A layer whose ``__call__`` takes several values (or none) is still visitable.

    Example:
        >>> from topos import Tape, Value
        >>> class Gate:
        ...     def __init__(self, tape: Tape) -> None:
        ...         self.mix = tape.parameter(0.5).symbol
        ...     def __call__(self, left: Value, right: Value) -> Value:
        ...         mix = bind(left, self.mix)
        ...         return left * mix + right * (1.0 - mix)
        ...     def visit(self, visitor: Visitor) -> None:
        ...         visitor.parameter("mix", self.mix)
        >>> [str(p) for p, _ in named_parameters(Gate(Tape()))]
        ['mix']
    """

    def visit(self, visitor: Visitor) -> None: ...


@runtime_checkable
class Module(Visitable, Protocol):
    """What a one-input layer is: it records onto its input's tape and visits its parameters.

    Example:
        >>> from topos import Tape, Value
        >>> class Scale:
        ...     def __init__(self, tape: Tape) -> None:
        ...         self.factor = tape.parameter(2.0).symbol
        ...     def __call__(self, input: Value) -> Value:
        ...         return input * bind(input, self.factor).broadcast(input.shape)
        ...     def visit(self, visitor: Visitor) -> None:
        ...         visitor.parameter("factor", self.factor)
        >>> tape = Tape()
        >>> [str(p) for p, _ in named_parameters(Scale(tape))]
        ['factor']
    """

    def __call__(self, input: Value, /) -> Value: ...


class Visitor:
    """Walks a module tree, keeping the current path; collects ``(path, symbol)`` pairs.

    Subclass and override :meth:`parameter` for other walks; :meth:`child` keeps the stack.
    """

    def __init__(self) -> None:
        self._stack: list[Segment] = []
        self.found: list[tuple[Path, Symbol]] = []

    @property
    def path(self) -> Path:
        return Path(tuple(self._stack))

    def parameter(self, name: str, symbol: Symbol) -> None:
        """Report one parameter held under field ``name`` of the current module."""
        if not isinstance(symbol, Symbol):
            raise InvalidArgumentError(
                f"parameter {self.path / name} must be reported as a Symbol, got {type(symbol).__name__}"
            )
        self.found.append((self.path / name, symbol))

    def child(self, segment: Segment, module: object) -> None:
        """Descend into ``module`` under ``segment``; modules without ``visit`` hold nothing."""
        visit = getattr(module, "visit", None)
        if visit is None:
            return
        self._stack.append(segment)
        try:
            visit(self)
        finally:
            self._stack.pop()


def named_parameters(module: Visitable) -> list[tuple[Path, Symbol]]:
    """Every ``(path, symbol)`` a module reports, in visit order (a tied symbol appears per path).

    Example:
        >>> from topos import Tape, Tensor
        >>> from topos.nn import Linear
        >>> layer = Linear(Tape(), Tensor.zeros((2, 3)), Tensor.zeros((3,)))
        >>> [str(path) for path, _ in named_parameters(layer)]
        ['weights', 'bias']
    """
    visitor = Visitor()
    module.visit(visitor)
    return visitor.found


def parameters(module: Visitable) -> list[Symbol]:
    """The distinct parameter symbols of a module, in first-visit order."""
    seen: dict[Symbol, None] = {}
    for _, symbol in named_parameters(module):
        seen.setdefault(symbol, None)
    return list(seen)


def bind(input: Value | Tape, symbol: Symbol) -> Value:
    """The recording value of ``symbol`` on the tape ``input`` records onto."""
    tape = input if isinstance(input, Tape) else input.tape
    return tape.resolve(symbol)


def walk(module: Visitable) -> Iterator[tuple[str, Symbol]]:
    """Dotted ``(path, symbol)`` pairs; the form checkpoints key entries by."""
    for path, symbol in named_parameters(module):
        yield str(path), symbol
