"""Where a NaN came from: the origin of a run's non-finite results, and checked runners.

Contract:

- :func:`nonfinite` runs a :class:`~topos.state.Runner` once: a network on the interpreter
  (``Numerics.EXACT``), a plan, an :class:`~topos.xla.XlaExecutable`, or any other runner.
  When every result it returns is finite it returns None. Otherwise it walks back from the
  non-finite results through the operands that are not finite either, and reports the first
  node of that chain in schedule order (allocation order), the *origin*: its value holds a
  NaN or an infinity while none of its operands does. The origin may be a source (a feed, a
  parameter payload, an input default, a constant); the report says which. A non-finite value
  that no non-finite result descends from (the discarded side of a ``where``) is not reported.
- Results: a plan's and an executable's declared results, a network's ``roots`` (by
  default its sinks: the nodes no other node reads), or those of ``roots`` a runner returns.
- A plan releases the values inside it and XLA keeps them on the device, so on those roads
  the origin is located by re-running the same network on the interpreter with the same
  parameters and feeds, and the report says so. It also names every result whose finiteness
  the road and the interpreter disagree about (Fast maps differ from the reference within an
  envelope; XLA may flush denormals and uses its own transcendentals). When the interpreter
  finds the road's non-finite results finite, the origin is the road's first non-finite result.
- Given the :class:`~topos.stages.gradient.Adjoints` of a recorded gradient (from
  ``Tape.differentiate`` or :func:`~topos.stages.gradient.gradient`), a report whose origin
  the gradient recorded names the forward node whose derivative rule recorded it, with its
  operands. Nothing is kept per node when a gradient is recorded: the attribution replays the
  same reverse scan over a reopened tape and checks that it records the very nodes the network
  holds. A gradient recorded from an explicit seed (``Tape.vjp``) does not replay; its
  nodes are reported without a rule.
- :func:`checked` returns the runner itself when ``on`` is false, else a runner that checks
  every result of each forward (``np.isfinite(...).all()``) and raises
  :class:`~topos.errors.NonFiniteError` carrying the report at the first call whose results
  are not all finite; the locating runs only then.
- Reports are frozen values with byte-stable text. Misuse (a runner, table or adjoints of
  the wrong type or network) raises a named :class:`~topos.errors.ToposError` before anything runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import final

import attrs
import numpy as np

from topos.errors import FeedError, NonFiniteError, SymbolError
from topos.ir import ops
from topos.ir.network import Network, as_symbols
from topos.ir.node import Symbol
from topos.ir.shape import Shape
from topos.stages.cotangent import reverse_scan
from topos.stages.gradient import Adjoints
from topos.stages.interpret import interpret
from topos.stages.plan import Plan
from topos.stages.spec import Value
from topos.state import Parameters, Run, Runner
from topos.tensor import Tensor, TensorLike
from topos.xla import XlaExecutable

__all__ = ["SMALL", "Adjoint", "Checked", "NodeSummary", "NonFiniteReport", "checked", "nonfinite"]

SMALL = 8
"""A value of at most this many elements is listed in full in a report."""

_NAMES = "xyz"  # operands in a rule's words: Select, the widest opcode, has three
_SOURCES = {
    "": "none of its operands did",
    "feed": "it was fed that way",
    "default": "its recorded default holds it",
    "parameter": "the parameter table holds it",
    "constant": "it was recorded as a constant",
    "road": "the interpreter computes it finite: the road's own numerics made it",
}


def _number(value: float | None) -> str:
    return "none" if value is None else format(value, ".6g")


@final
@attrs.frozen
class NodeSummary:
    """One node and what its value held on a run: the least and greatest values that are not
    NaN (None when every value is), the counts of NaN, +inf and -inf, and every value when
    there are at most :data:`SMALL`."""

    node: int
    op_name: str
    shape: Shape
    site: str
    minimum: float | None
    maximum: float | None
    nans: int
    positive_infinities: int
    negative_infinities: int
    values: tuple[float, ...] | None

    @property
    def finite(self) -> bool:
        return not (self.nans or self.positive_infinities or self.negative_infinities)

    def label(self) -> str:
        return f"%{self.node} {self.op_name}{self.shape} (recorded at {self.site})"

    def __str__(self) -> str:
        if self.values is not None:
            held = "[" + ", ".join(_number(v) for v in self.values) + "]"
        else:
            held = (
                f"min {_number(self.minimum)}, max {_number(self.maximum)}, {self.nans} NaN, "
                f"{self.positive_infinities} +inf, {self.negative_infinities} -inf"
            )
        return f"{self.label()}: {held}"


@final
@attrs.frozen
class Adjoint:
    """The forward node whose derivative rule recorded a gradient node, its operands on the
    run, and each operand's value at the gradient node's first non-finite element (None for
    an operand of another shape, whose elements do not line up)."""

    node: int
    op_name: str
    shape: Shape
    site: str
    operands: tuple[NodeSummary, ...]
    at: tuple[float | None, ...]

    @property
    def rule(self) -> str:
        return f"the adjoint of `{self.op_name}`"

    def lines(self) -> list[str]:
        at = ", ".join(f"{_NAMES[k]} = {_number(v)}" for k, v in enumerate(self.at) if v is not None)
        head = f"  recorded by {self.rule} at %{self.node} {self.op_name}{self.shape} (recorded at {self.site})"
        return [head + (f", at {at}" if at else ""), *(f"    {_NAMES[k]}: {o}" for k, o in enumerate(self.operands))]


@final
@attrs.frozen
class NonFiniteReport:
    """Where a run's non-finite results came from; ``str()`` is the readable, byte-stable text.

    ``origin`` is the first non-finite node, ``first`` the position of its first non-finite
    element, ``source`` what made a source non-finite (``feed``, ``default``, ``parameter``,
    ``constant``; ``road`` when only the road computed it so; empty for a computed node),
    ``operands`` the origin's operands, ``adjoint`` the rule that recorded a gradient node,
    ``results`` the road's non-finite results, ``located`` whether the interpreter re-ran to
    find the origin, and ``disagreements`` the results whose finiteness the road and the
    interpreter disagree about.
    """

    road: str
    origin: NodeSummary
    first: tuple[int, ...]
    source: str
    operands: tuple[NodeSummary, ...]
    adjoint: Adjoint | None
    results: tuple[int, ...]
    located: bool
    disagreements: tuple[int, ...]

    @property
    def node(self) -> int:
        return self.origin.node

    @property
    def op_name(self) -> str:
        return self.origin.op_name

    @property
    def shape(self) -> Shape:
        return self.origin.shape

    @property
    def site(self) -> str:
        return self.origin.site

    @property
    def file(self) -> str:
        return self.origin.site.rsplit(":", 1)[0]

    @property
    def line(self) -> int:
        return int(self.origin.site.rsplit(":", 1)[1])

    def __str__(self) -> str:
        o = self.origin
        kinds = ((o.nans, "NaN"), (o.positive_infinities, "+inf"), (o.negative_infinities, "-inf"))
        counts = " and ".join(f"{n} {kind}" for n, kind in kinds if n)
        where = f", first at [{', '.join(map(str, self.first))}]" if self.first else ""
        lines = [
            f"the first non-finite value on the {self.road}: {o.label()}",
            f"  it holds {counts} of {o.shape.volume}{where}; {_SOURCES[self.source]}",
            *(f"  {_NAMES[k]}: {s}" for k, s in enumerate(self.operands)),
            *(self.adjoint.lines() if self.adjoint else ()),
            "  non-finite results: " + ", ".join(f"%{i}" for i in self.results),
        ]
        if self.located:
            lines.append("  located by re-running on the interpreter")
        if self.disagreements:
            named = ", ".join(f"%{i}" for i in self.disagreements)
            lines.append(
                f"  the {self.road} and the interpreter disagree about the finiteness of {named} (Fast maps "
                "differ within an envelope; XLA may flush denormals and uses its own transcendentals)"
            )
        return "\n".join(lines)


def _finite(tensor: Tensor) -> bool:
    if tensor.is_selection:
        return math.isfinite(tensor.selection_one)
    fill = tensor.fill
    return math.isfinite(fill) if fill is not None else bool(np.isfinite(tensor.numpy()).all())


def _held(values: Sequence[Tensor | None], index: int) -> Tensor:
    value = values[index]
    assert value is not None, index  # a result, or an operand of a node the run computed
    return value


def _summary(network: Network, index: int, tensor: Tensor) -> NodeSummary:
    node = network.nodes_[index]
    data = tensor.numpy().astype(np.float64).reshape(-1)
    nan = np.isnan(data)
    kept = data[~nan]
    low, high = (float(kept.min()), float(kept.max())) if kept.size else (None, None)
    small = tuple(data.tolist()) if data.size <= SMALL else None
    return NodeSummary(
        index, node.name, node.shape, node.site, low, high, int(nan.sum()),
        int((data == np.inf).sum()), int((data == -np.inf).sum()), small,
    )  # fmt: skip


def _road(runner: Runner) -> str:
    if isinstance(runner, Network):
        return "interpreter"
    if isinstance(runner, Plan):
        return f"{runner.numerics.value.capitalize()} plan"
    return "XLA road" if isinstance(runner, XlaExecutable) else type(runner).__name__


def _results(runner: Runner, run: Run, roots: Sequence[Symbol] | None) -> tuple[int, ...]:
    network = run.network
    if roots is not None:
        return tuple(dict.fromkeys(network.index(s, "root") for s in roots))
    if isinstance(runner, Network):
        read = [False] * len(network)
        for node in network.nodes_:
            for j in node.operands:
                read[j] = True
        return tuple(i for i, was in enumerate(read) if not was)
    if isinstance(runner, Plan):
        return runner.results_
    if isinstance(runner, XlaExecutable):
        return tuple(network.index(s) for s in runner.results)
    return tuple(i for i in range(len(network)) if run.holds(network.symbol(i)))


def _chain(network: Network, values: Sequence[Tensor | None], bad: Sequence[int]) -> int | None:
    """The first node, in allocation order, of the non-finite values ``bad`` descend from
    through non-finite operands (None when the interpreter computes them all finite)."""
    finite: dict[int, bool] = {}

    def poisoned(i: int) -> bool:
        value = values[i]
        if value is None:
            return False
        if i not in finite:
            finite[i] = _finite(value)
        return not finite[i]

    seen: set[int] = set()
    stack = [i for i in bad if poisoned(i)]
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(j for j in network.nodes_[i].operands if j not in seen and poisoned(j))
    return min(seen) if seen else None


def _rule_spans(network: Network, adjoints: Adjoints) -> list[tuple[int, int, int]]:
    """``(start, stop, forward node)`` per rule application of the recorded gradient (forward
    node -1 for the seed and recorded zeros), in node positions of ``network``; empty when
    replaying the reverse scan does not record exactly the nodes the network holds."""
    target = network.index(adjoints.target, "target of the adjoints")
    tape = network.reopen()
    start = len(tape)
    shapes = [node.shape for node in network.nodes_]
    marks: list[tuple[int, int]] = []
    last, length = -1, start

    def grown(owner: int) -> None:
        nonlocal last, length
        if len(tape) != length:
            marks.append((length, last))
            length = len(tape)
        last = owner

    def value_of(i: int) -> Value:
        # The scan reads a node's operands, then the node itself, then applies its rule: the
        # nodes recorded since the tape last grew belong to the last node read.
        grown(i)
        return Value(tape, i, shapes[i])

    cotangents = reverse_scan(network, value_of, target, Value(tape, target, shapes[target]).one_like())
    grown(-1)
    replayed: list[int] = []
    for symbol in adjoints.wrt:
        position = network.index(symbol, "wrt of the adjoints")
        cotangent = cotangents[position] if position < len(cotangents) else None
        if cotangent is None:
            cotangent = Value(tape, position, shapes[position]).zero_like()
        replayed.append(cotangent.index)
    grown(-1)
    nodes = tape.seal().nodes_
    shift = {g.index - r for g, r in zip(adjoints.gradients_, replayed, strict=True)}
    if len(shift) != 1:
        return []
    offset = shift.pop()
    if start + offset <= target or len(nodes) + offset > len(network):
        return []
    for position in range(start, len(nodes)):
        real, again = network.nodes_[position + offset], nodes[position]
        moved = tuple(o + offset if o >= start else o for o in again.operands)
        if real.op != again.op or real.shape != again.shape or real.operands != moved:
            return []
    stops = [m[0] for m in marks[1:]] + [len(nodes)]
    return [(a + offset, b + offset, f) for (a, f), b in zip(marks, stops, strict=True)]


def _adjoint(
    network: Network, origin: int, first: tuple[int, ...], adjoints: Adjoints, values: list[Tensor | None],
    parameters: Parameters, feeds: Mapping[Symbol, TensorLike],
) -> Adjoint | None:  # fmt: skip
    forward = next((f for a, b, f in _rule_spans(network, adjoints) if a <= origin < b), -1)
    if forward < 0:
        return None
    node = network.nodes_[forward]
    missing = [j for j in node.operands if values[j] is None]
    if missing:
        extra = interpret(network, parameters, feeds, network.symbols_of(missing)).values()
        values = [v if v is not None else extra[i] for i, v in enumerate(values)]
    operands = [(j, values[j]) for j in node.operands]
    shape = network.nodes_[origin].shape
    at = tuple(
        float(t.numpy().astype(np.float64)[first]) if t is not None and t.shape == shape else None for _, t in operands
    )
    summaries = tuple(_summary(network, j, t) for j, t in operands if t is not None)
    return Adjoint(forward, node.name, node.shape, node.site, summaries, at)


def _examine(
    runner: Runner, run: Run, parameters: Parameters, feeds: Mapping[Symbol, TensorLike],
    roots: Sequence[Symbol] | None, adjoints: Adjoints | None,
) -> NonFiniteReport | None:  # fmt: skip
    network = run.network
    results = _results(runner, run, roots)
    seen = {i: run.of(network.symbol(i)) for i in results}
    bad = tuple(i for i in results if not _finite(seen[i]))
    if not bad:
        return None
    located = not isinstance(runner, Network)
    values = run.values()
    disagreements: tuple[int, ...] = ()
    if located:
        values = interpret(network, parameters, feeds, network.symbols_of(results)).values()
        disagreements = tuple(i for i in results if (i in bad) == _finite(_held(values, i)))
    origin = _chain(network, values, bad)
    source = ""
    if origin is None:
        origin, source = bad[0], "road"
        values[origin] = seen[origin]
    tensor = _held(values, origin)
    data = tensor.numpy().astype(np.float64)
    flat = int(np.flatnonzero(~np.isfinite(data))[0])
    first = tuple(int(k) for k in np.unravel_index(flat, data.shape))
    node = network.nodes_[origin]
    if node.is_source and not source:
        fed = {network.index(s) for s in feeds}
        kinds = {ops.Input: "feed" if origin in fed else "default", ops.Parameter: "parameter", ops.Leaf: "constant"}
        source = kinds[type(node.op)]
    # On the interpreter's values: where only the road went non-finite, they show what it read.
    operands = tuple(_summary(network, j, v) for j in node.operands if (v := values[j]) is not None)
    adjoint = None if adjoints is None or node.is_source else _adjoint(network, origin, first, adjoints, values, parameters, feeds)
    return NonFiniteReport(
        _road(runner), _summary(network, origin, tensor), first, source, operands, adjoint, bad, located, disagreements
    )


def _check(runner: object, adjoints: object) -> None:
    if not isinstance(runner, Runner) or isinstance(runner, type):
        raise SymbolError(f"the runner must be a Network, a Plan, an XlaExecutable or another Runner, got {type(runner).__name__}")
    if adjoints is not None and not isinstance(adjoints, Adjoints):
        raise SymbolError(f"adjoints must be the Adjoints of a recorded gradient, got {type(adjoints).__name__}")
    network = runner if isinstance(runner, Network) else getattr(runner, "network", None)
    if isinstance(adjoints, Adjoints) and isinstance(network, Network):
        for symbol in adjoints.roots():
            network.lineage.locate(symbol, "symbol the adjoints name", "the runner's network")


def nonfinite(
    runner: Runner,
    parameters: Parameters,
    feeds: Mapping[Symbol, TensorLike] | None = None,
    roots: Sequence[Symbol] | None = None,
    adjoints: Adjoints | None = None,
) -> NonFiniteReport | None:
    """Run ``runner`` once; None when its results are finite, else where the first non-finite
    value came from (see the module contract).

    Example:
        >>> from topos import Tape
        >>> network, (x, y) = Tape.record(lambda t: (lambda x: (x, x.ln()))(t.input([1.0, 0.0])))
        >>> report = nonfinite(network, network.parameters(), {x: [1.0, 0.0]})
        >>> report.op_name, report.node, report.origin.negative_infinities, report.source
        ('Ln', 1, 1, '')
        >>> nonfinite(network, network.parameters(), {x: [1.0, 2.0]}) is None
        True
    """
    _check(runner, adjoints)
    runner = runner.runner if isinstance(runner, Checked) else runner
    if not isinstance(parameters, Parameters):
        raise FeedError(f"parameters must be a Parameters table, got {type(parameters).__name__}")
    symbols = None if roots is None else as_symbols(roots, "roots")
    given = {} if feeds is None else feeds
    if isinstance(runner, Network):
        run = interpret(runner, parameters, given, symbols)
    else:
        run = runner.forward(parameters, given)
    return _examine(runner, run, parameters, given, symbols, adjoints)


@final
class Checked:
    """A runner whose every forward is checked for non-finite results (see :func:`checked`);
    ``calls`` counts the forwards so far."""

    __slots__ = ("_symbols", "adjoints", "calls", "runner")

    def __init__(self, runner: Runner, adjoints: Adjoints | None) -> None:
        self.runner = runner
        self.adjoints = adjoints
        self.calls = 0
        self._symbols: tuple[Symbol, ...] | None = None

    def forward(self, parameters: Parameters, feeds: Mapping[Symbol, TensorLike] | None = None) -> Run:
        """The runner's forward; raises NonFiniteError when a result is not finite."""
        run = self.runner.forward(parameters, feeds)
        self.calls += 1
        symbols = self._symbols
        if symbols is None:
            symbols = self._symbols = run.network.symbols_of(_results(self.runner, run, None))
        for symbol in symbols:
            if not _finite(run.of(symbol)):
                report = _examine(self.runner, run, parameters, {} if feeds is None else feeds, None, self.adjoints)
                assert report is not None
                raise NonFiniteError(f"call {self.calls} of this checked runner returned a non-finite result\n{report}", report)
        return run

    def __repr__(self) -> str:
        return f"Checked({self.runner!r}, {self.calls} calls)"


def checked(runner: Runner, adjoints: Adjoints | None = None, on: bool = True) -> Runner:
    """``runner`` itself when ``on`` is false, else a :class:`Checked` runner over it that
    raises :class:`~topos.errors.NonFiniteError` at the first forward whose results are not
    all finite (pass ``adjoints`` to name the rule behind a gradient node).

    Example:
        >>> from topos import NonFiniteError, Tape
        >>> network, (x, y) = Tape.record(lambda t: (lambda x: (x, x.sqrt().sum()))(t.input([4.0])))
        >>> runner = checked(network.entry(y).lower())
        >>> runner.forward(network.parameters(), {x: [4.0]}).of(y).scalar()
        2.0
        >>> try:
        ...     runner.forward(network.parameters(), {x: [-1.0]})
        ... except NonFiniteError as error:
        ...     print(error.report.op_name, error.report.located)
        Sqrt True
    """
    if not isinstance(on, bool):
        raise SymbolError(f"checked(): on must be True or False, got {type(on).__name__}")
    _check(runner, adjoints)
    return Checked(runner, adjoints) if on else runner
