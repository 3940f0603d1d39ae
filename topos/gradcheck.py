"""Gradient checking for users: analytic gradients against central differences.

Contract: ``check_grad(network, parameters, target, feeds, wrt)`` compares, for every
element of every ``wrt`` (parameters by default; inputs may be named too), the analytic
gradient of the rank-0 ``target`` with a central difference, and returns a
:class:`GradCheck` report that says, per input, which side is which, the worst absolute and
relative gap, where it occurs, and whether it is inside the tolerance.

- The analytic side is the recorded gradient (:func:`topos.gradient`) interpreted in the
  network's own element, or a table the caller supplies (``analytic=``), which is how a
  hand-written derivative is checked.
- The numerical side is evaluated in f64 by default: the network is replayed node by node
  onto an f64 tape (the spec is executable IR, so the twin has the same structure and
  describe text, only wider numbers), and sources are widened exactly. With
  ``numerical="native"`` the network's own element is used instead.
- The step is chosen per element type of the numerical evaluation, relative to the
  element's magnitude: ``h = r * max(1, |x|)`` with ``r`` the element's
  :attr:`~topos.ElementType.gradcheck_step` (1e-6 for f64, 1e-3 f32, 1e-2 f16, 1e-1 bf16),
  the power of ten near the cube root of its unit roundoff, which balances truncation
  against cancellation. The difference quotient divides by the step actually taken
  (``x + h`` and ``x - h`` rounded to the element), not by ``2h``.
- An element passes when ``|analytic - numerical| <= tol * max(1, |numerical|) + noise``;
  ``tol`` is the analytic element's :meth:`~topos.ElementType.gradcheck_tolerance` for the
  numerical road (derived from its unit roundoff; see :mod:`topos.ir.element`), so a
  plugin's element is checked like a built-in; ``noise = 8 u max(|f(x+h)|, |f(x-h)|) / (2h)`` is the cancellation
  floor of the difference quotient itself (``u`` the unit roundoff of the road's element):
  the evaluations cannot resolve a derivative finer than that. It is negligible on the
  f64 road and dominant for bf16 differences, which is why f64 is the default. Where the
  floor is wider than the tolerance band the entry is *inconclusive*, and an inconclusive
  entry does not pass: a check that cannot see an error must not vouch for its absence.

The check costs two evaluations of the target's ancestor closure per checked element: it
is meant for small networks and slices, as in tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, final

import attrs
import numpy as np

from topos.errors import (
    BackwardTargetError,
    ShapeMismatchError,
    SymbolError,
    UnknownSymbolError,
    user_site,
)
from topos.ir import ops
from topos.ir.element import ElementType, f64
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.stages.gradient import gradient
from topos.stages.interpret import interpret
from topos.stages.rules import express
from topos.stages.spec import Tape, Value
from topos.state import Parameters, check_feeds
from topos.tensor import Tensor, TensorLike

__all__ = ["GradCheck", "GradCheckEntry", "check_grad"]

Array = np.ndarray[Any, Any]
Road = Literal["f64", "native"]


@final
@attrs.frozen(slots=True)
class GradCheckEntry:
    """The comparison for one ``wrt``: which side is which, and the worst gap."""

    symbol: Symbol
    name: str
    analytic_side: str
    numerical_side: str
    max_abs: float
    max_rel: float
    worst_at: tuple[int, ...]
    analytic_at_worst: float
    numerical_at_worst: float
    tolerance: float
    noise: float
    conclusive: bool
    passed: bool

    def __str__(self) -> str:
        if self.passed:
            verdict = "ok"
        elif not self.conclusive:
            verdict = "INCONCLUSIVE (the differences are below their noise floor; use the f64 road)"
        else:
            verdict = "FAILED"
        return (
            f"{self.name}: {verdict}  max abs {self.max_abs:.3e}  max rel {self.max_rel:.3e}  "
            f"(tol {self.tolerance:.2g}, noise floor {self.noise:.1e}); worst at {list(self.worst_at)}: "
            f"analytic {self.analytic_at_worst:.9g}, numerical {self.numerical_at_worst:.9g}"
        )


@final
@attrs.frozen(slots=True)
class GradCheck:
    """A gradient check report; ``passed`` is True when every entry is inside tolerance.

    Example:
        >>> from topos import Tape, f64
        >>> from topos.gradcheck import check_grad
        >>> network, (w, loss) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([1.0, -2.0])), element=f64)
        >>> report = check_grad(network, network.parameters(), loss)
        >>> report.passed
        True
        >>> print(str(report).splitlines()[0])
        check_grad of %2 Sum[] (f64 network): PASSED (1 inputs, 4 evaluations)
    """

    target: str
    element: str
    analytic_side: str
    numerical_side: str
    entries: tuple[GradCheckEntry, ...]
    evaluations: int

    @property
    def passed(self) -> bool:
        return all(entry.passed for entry in self.entries)

    def failures(self) -> tuple[GradCheckEntry, ...]:
        return tuple(entry for entry in self.entries if not entry.passed)

    def of(self, symbol: Symbol) -> GradCheckEntry:
        for entry in self.entries:
            if entry.symbol == symbol:
                return entry
        raise UnknownSymbolError(f"{symbol!r} was not checked by this report")

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        lines = [
            f"check_grad of {self.target} ({self.element} network): {verdict} "
            f"({len(self.entries)} inputs, {self.evaluations} evaluations)",
            f"  analytic:  {self.analytic_side}",
            f"  numerical: {self.numerical_side}",
        ]
        lines.extend(f"  {entry}" for entry in self.entries)
        return "\n".join(lines)


def _name(network: Network, index: int) -> str:
    node = network.nodes_[index]
    return f"%{index} {node.name}{node.shape}"


def _widen(tensor: Tensor) -> Tensor:
    """The same numbers as f64 (exact: every element type here embeds in f64)."""
    if tensor.fill is not None:
        return Tensor.filled(tensor.shape, tensor.fill, f64)
    indices = tensor.indices
    if indices is not None:
        one = float(np.asarray(tensor.numpy())[0, int(indices[0])])
        return Tensor.selection(indices, tensor.shape[1], f64, one)
    return Tensor(np.asarray(tensor.numpy(), dtype=np.float64), element=f64)


def f64_twin(network: Network) -> Network:
    """Replay ``network`` onto an f64 tape: same nodes and text, sources widened exactly.

    Node ``i`` of the twin is node ``i`` of ``network``; symbols differ (another family).
    """
    if network.element == f64:
        return network

    def build(tape: Tape) -> None:
        values: list[Value] = []
        for index, node in enumerate(network.nodes_):
            match node.op:
                case ops.Parameter():
                    values.append(tape.parameter(_widen(network.sources[index])))
                case ops.Input():
                    values.append(tape.input(_widen(network.sources[index])))
                case ops.Leaf():
                    values.append(tape.leaf(_widen(network.sources[index])))
                case _:
                    values.append(express(node.op, [values[j] for j in node.operands]))

    twin, _ = Tape.record(build, element=f64)
    return twin


def _rounded(values: Array, element: ElementType) -> Array:
    return np.asarray(element.convert(values), dtype=np.float64)


def check_grad(
    network: Network,
    parameters: Parameters,
    target: Symbol,
    feeds: Mapping[Symbol, TensorLike] | None = None,
    wrt: Sequence[Symbol] | None = None,
    *,
    analytic: Mapping[Symbol, Any] | None = None,
    numerical: Road = "f64",
    steps: Mapping[str, float] | None = None,
    tolerance: float | None = None,
) -> GradCheck:
    """Compare analytic gradients of ``target`` with central differences; see the module contract.

    ``wrt`` defaults to every parameter; inputs may be named (they are perturbed through
    the feeds). ``analytic`` replaces the recorded gradient with a caller's table, keyed by
    the ``wrt`` symbols. ``steps`` overrides the road element's step (keyed by element name),
    ``tolerance`` the analytic element's tolerance. The network, the parameters and the
    feeds are left untouched.

    Example:
        >>> from topos import Tape, f32
        >>> network, (w, loss) = Tape.record(lambda t: (lambda w: (w, w.tanh().sum()))(t.parameter([0.5, -1.0])), element=f32)
        >>> check_grad(network, network.parameters(), loss).passed
        True
    """
    site = user_site()
    if numerical not in ("f64", "native"):
        raise SymbolError(f"{site}: numerical must be 'f64' or 'native', got {numerical!r}")
    if not isinstance(parameters, Parameters):
        raise SymbolError(f"{site}: check_grad takes a Parameters table second, got {type(parameters).__name__}")
    parameters.check(network)
    fed = check_feeds(network, feeds or {})
    target_index = network.index(target, "target")
    if network.nodes_[target_index].shape.rank != 0:
        raise BackwardTargetError(
            f"{site}: check_grad needs a rank-0 target; {network.describe_symbol(target_index)} is not"
        )
    symbols = list(wrt) if wrt is not None else list(network.parameter_symbols())
    if not symbols:
        raise BackwardTargetError(f"{site}: nothing to check: the network has no parameters and wrt names none")
    indices = [network.index(s, "wrt") for s in symbols]
    for index in indices:
        if not isinstance(network.nodes_[index].op, (ops.Parameter, ops.Input)):
            raise SymbolError(
                f"{site}: check_grad perturbs sources; {network.describe_symbol(index)} is not a "
                "parameter or an input"
            )

    # ---------------------------------------------------------------- analytic side
    element = network.element
    analytic_values: list[Array] = []
    if analytic is None:
        longer, adjoints = gradient(network, target, symbols)
        # The derivative adds no parameter slots: the caller's table runs the longer network.
        run = longer.forward(parameters, feeds)
        for symbol in symbols:
            analytic_values.append(np.asarray(run.of(adjoints.of(symbol)).numpy(), dtype=np.float64))
        analytic_side = f"recorded gradient, interpreted in {element}"
    else:
        for symbol, index in zip(symbols, indices, strict=True):
            if symbol not in analytic:
                raise UnknownSymbolError(f"{site}: the analytic table has no entry for {_name(network, index)}")
            supplied = np.asarray(analytic[symbol], dtype=np.float64)
            if supplied.shape != network.nodes_[index].shape.axes:
                raise ShapeMismatchError(
                    f"{site}: the analytic entry for {_name(network, index)} has shape "
                    f"{list(supplied.shape)}"
                )
            analytic_values.append(supplied)
        analytic_side = "table supplied by the caller"

    # ---------------------------------------------------------------- numerical side
    evaluated = f64_twin(network) if numerical == "f64" else network
    road_element = evaluated.element
    relative = (steps or {}).get(road_element.name, road_element.gradcheck_step)
    base_parameters = [_rounded(np.asarray(p.numpy()), road_element) for p in parameters.payloads()]
    base_inputs = {
        i: _rounded(np.asarray(fed.get(i, network.sources[i])), road_element) for i in network.input_nodes
    }
    twin_target = evaluated.symbol(target_index)
    twin_parameters = evaluated.parameters()

    def evaluate(index: int, flat: int, value: float) -> float:
        payloads = list(base_parameters)
        inputs = dict(base_inputs)
        slot = network.parameter_slot(index)
        if slot is not None:
            changed = payloads[slot].copy()
            changed.reshape(-1)[flat] = value
            payloads[slot] = changed
        else:
            changed = inputs[index].copy()
            changed.reshape(-1)[flat] = value
            inputs[index] = changed
        table = Parameters(
            twin_parameters.lineage,
            twin_parameters.symbols,
            tuple(Tensor(p, element=road_element) for p in payloads),
        )
        twin_feeds = {evaluated.symbol(i): Tensor(a, element=road_element) for i, a in inputs.items()}
        run = interpret(evaluated, table, twin_feeds, roots=[twin_target])
        return run.of(twin_target).scalar()

    roundoff = road_element.roundoff
    limit = tolerance if tolerance is not None else element.gradcheck_tolerance(numerical)
    entries: list[GradCheckEntry] = []
    evaluations = 0
    for symbol, index, wanted in zip(symbols, indices, analytic_values, strict=True):
        slot = network.parameter_slot(index)
        base = base_parameters[slot] if slot is not None else base_inputs[index]
        numeric = np.zeros(base.shape, dtype=np.float64)
        floor = np.zeros(base.shape, dtype=np.float64)
        for flat, x in enumerate(base.reshape(-1)):
            h = relative * max(1.0, abs(float(x)))
            up = float(_rounded(np.asarray(x + h), road_element))
            down = float(_rounded(np.asarray(x - h), road_element))
            high, low = evaluate(index, flat, up), evaluate(index, flat, down)
            numeric.reshape(-1)[flat] = (high - low) / (up - down)
            floor.reshape(-1)[flat] = 8.0 * roundoff * max(abs(high), abs(low)) / (up - down)
            evaluations += 2
        gap = np.abs(wanted - numeric)
        # How far past the floor the gap reaches, in units of max(1, |numerical|).
        scaled = np.maximum(gap - floor, 0.0) / np.maximum(1.0, np.abs(numeric))
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(gap == 0.0, 0.0, gap / np.abs(numeric))
        # A NaN gap is the worst gap of all.
        ranked = np.where(np.isnan(scaled), np.inf, scaled)
        worst_at = tuple(int(i) for i in np.unravel_index(int(np.argmax(ranked)), base.shape))
        band = limit * np.maximum(1.0, np.abs(numeric))
        conclusive = bool(np.all(floor <= band))
        passed = conclusive and bool(np.all(scaled <= limit))
        entries.append(
            GradCheckEntry(
                symbol=symbol,
                name=_name(network, index),
                analytic_side=analytic_side,
                numerical_side=f"central differences in {road_element}",
                max_abs=float(np.max(gap)),
                max_rel=float(np.max(rel)),
                worst_at=worst_at,
                analytic_at_worst=float(wanted[worst_at]),
                numerical_at_worst=float(numeric[worst_at]),
                tolerance=limit,
                noise=float(np.max(floor)),
                conclusive=conclusive,
                passed=passed,
            )
        )
    numerical_side = (
        f"central differences in {road_element}"
        + (" (the network replayed onto an f64 tape)" if evaluated is not network else "")
        + f", step {relative:g} * max(1, |x|) rounded to {road_element}"
    )
    return GradCheck(
        target=_name(network, target_index),
        element=element.name,
        analytic_side=analytic_side,
        numerical_side=numerical_side,
        entries=tuple(entries),
        evaluations=evaluations,
    )
