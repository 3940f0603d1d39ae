"""topos.finiteness: where a NaN came from (docs/nonfinite.md), on every road.

Every case asserts the origin's node (its symbol index), its opcode name, this file's line
in its site and its operands' summary. The maps are driven to their poles and domain edges
(and past them by a non-finite feed), then division, products, sums and powers; the losses;
sources (feed, default, parameter, constant); recorded gradients with the rule that recorded
each node; the four roads; the checked runner; misuse; the text; the command line; and the
guide's own blocks, run as written.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import here

from topos import (
    DeclarationError,
    FeedError,
    ForeignSymbolError,
    MapOperation,
    Network,
    NonFiniteError,
    NonFiniteReport,
    Numerics,
    Parameters,
    Runner,
    Symbol,
    SymbolError,
    Tape,
    Tensor,
    ToposError,
    Value,
    XlaExecutable,
    checked,
    gradient,
    nonfinite,
    xla,
)
from topos.cli import main
from topos.finiteness import Checked
from topos.nn import cross_entropy

ROOT = Path(__file__).resolve().parent.parent
INF, NAN = math.inf, math.nan
needs_xla = pytest.mark.skipif(not xla.available(), reason="jax is not installed")


def at(line: int) -> str:
    """The site a node recorded on ``line`` of this file carries."""
    return f"{__file__}:{line}"


def counts(report: NonFiniteReport) -> tuple[int, int, int]:
    o = report.origin
    return o.nans, o.positive_infinities, o.negative_infinities


# --------------------------------------------------------------------------- the maps
def mapped(operation: MapOperation, values: list[float]) -> tuple[Network, Symbol, int]:
    """%0 the input, %1 the map (recorded on the returned line), %2 its sum."""
    line = 0

    def build(t: Tape) -> tuple[Value, Value]:
        nonlocal line
        x = t.input(values)
        y, line = x.map(operation), here()
        return x, y.sum()

    network, (x, _) = Tape.record(build)
    return network, x, line


# operation, fed values, (NaN, +inf, -inf) of the map's output, first non-finite element
POLES = [
    (MapOperation.EXP, [1.0, 1e4], (0, 1, 0), 1),
    (MapOperation.EXP, [89.0], (0, 1, 0), 0),
    (MapOperation.LN, [1.0, 0.0], (0, 0, 1), 1),
    (MapOperation.LN, [-1.0, 2.0], (1, 0, 0), 0),
    (MapOperation.LN, [-0.0], (0, 0, 1), 0),
    (MapOperation.SQRT, [-1.0, 4.0], (1, 0, 0), 0),
    (MapOperation.SQRT, [4.0, -1e-30], (1, 0, 0), 1),
    (MapOperation.LOG1P, [0.0, -1.0], (0, 0, 1), 1),
    (MapOperation.LOG1P, [-2.0], (1, 0, 0), 0),
    (MapOperation.EXPM1, [1e4, -1e4], (0, 1, 0), 0),
    (MapOperation.EXPM1, [88.0, 89.0], (0, 1, 0), 1),
]


@pytest.mark.parametrize(("operation", "values", "kinds", "first"), POLES, ids=[f"{p[0]}{p[1]}" for p in POLES])
def test_a_map_at_its_pole_or_past_its_domain_is_the_origin(
    operation: MapOperation, values: list[float], kinds: tuple[int, int, int], first: int
) -> None:
    network, x, line = mapped(operation, values)
    report = nonfinite(network, network.parameters(), {x: values})
    assert report is not None
    assert (report.node, report.op_name, report.site, report.line) == (1, str(operation), at(line), line)
    assert counts(report) == kinds and report.first == (first,) and report.source == ""
    (operand,) = report.operands
    assert (operand.node, operand.op_name, operand.finite) == (0, "Input", True)
    assert operand.values == tuple(float(np.float32(v)) for v in values)
    assert report.results == (2,) and not report.located and report.adjoint is None


# operation, fed values: finite everywhere the map is defined, at its extremes
EDGES = [
    (MapOperation.TANH, [1e4, -1e4]),
    (MapOperation.SIN, [1e30, -3.4e38]),
    (MapOperation.COS, [1e30, 3.4e38]),
    (MapOperation.ERF, [1e30, -1e30]),
    (MapOperation.ERF_DERIVATIVE, [1e20, -1e20]),
    (MapOperation.ATAN, [3.4e38, -3.4e38]),
    (MapOperation.EXPM1, [-1e4, 88.0]),
    (MapOperation.EXP, [-1e4, 88.0]),
    (MapOperation.SQRT, [0.0, -0.0]),
]


@pytest.mark.parametrize(("operation", "values"), EDGES, ids=[f"{e[0]}{e[1]}" for e in EDGES])
def test_a_map_finite_at_its_extremes_reports_none(operation: MapOperation, values: list[float]) -> None:
    network, x, _ = mapped(operation, values)
    assert nonfinite(network, network.parameters(), {x: values}) is None


@pytest.mark.parametrize("operation", list(MapOperation), ids=str)
def test_a_nan_feed_through_any_map_is_its_own_origin(operation: MapOperation) -> None:
    network, x, _ = mapped(operation, [1.0, NAN])
    report = nonfinite(network, network.parameters(), {x: [1.0, NAN]})
    assert report is not None
    assert (report.node, report.op_name, report.source, report.first, report.operands) == (0, "Input", "feed", (1,), ())
    assert report.origin.nans == 1 and report.origin.minimum == report.origin.maximum == 1.0


@pytest.mark.parametrize(
    ("operation", "value", "reaches"),
    [(MapOperation.SIN, INF, True), (MapOperation.COS, -INF, True), (MapOperation.TANH, INF, False),
     (MapOperation.ATAN, -INF, False), (MapOperation.ERF, INF, False), (MapOperation.EXP, -INF, False)],
)  # fmt: skip
def test_an_infinite_feed_is_reported_only_when_it_reaches_a_result(operation: MapOperation, value: float, reaches: bool) -> None:
    # sin(inf) is NaN; tanh, atan and erf of an infinity are finite, and so is exp(-inf).
    network, x, _ = mapped(operation, [value])
    report = nonfinite(network, network.parameters(), {x: [value]})
    if not reaches:
        assert report is None
        return
    assert report is not None
    assert (report.node, report.op_name, report.source, report.results) == (0, "Input", "feed", (2,))
    assert counts(report) == ((0, 1, 0) if value > 0 else (0, 0, 1))


def test_the_origin_is_the_first_of_a_non_finite_chain() -> None:
    # exp overflows, inf - inf is NaN, sin(NaN) is NaN: the chain ends at the Exp.
    def build(t: Tape) -> tuple[Value, Value, int]:
        x = t.input([1e4, 1.0])
        e, line = x.exp(), here()
        return x, ((e - e).sin() + x).sum(), line

    network, (_, _, line) = Tape.record(build)
    report = nonfinite(network, network.parameters())
    assert report is not None
    assert (report.node, report.op_name, report.site, counts(report)) == (1, "Exp", at(line), (0, 1, 0))
    assert report.operands[0].values == (1e4, 1.0)


def test_a_non_finite_value_a_where_discards_is_not_reported() -> None:
    # sqrt(-1) is NaN in the lane the mask sends to the other side: no result descends from it.
    def build(t: Tape) -> tuple[Value, Value]:
        x = t.input([-1.0, 4.0])
        return x, (x > 0.0).select(x.sqrt(), x.zero_like()).sum()

    network, (_, total) = Tape.record(build)
    assert nonfinite(network, network.parameters()) is None
    assert network.forward(network.parameters()).of(total).scalar() == 2.0


# --------------------------------------------------------------------------- arithmetic
def binary(expression: Callable[[Value, Value], Value], a: Any, b: Any) -> tuple[Network, int]:
    """%0, %1 the inputs; the expression's nodes from %2, recorded on the expression's own
    line (the innermost line outside topos is the lambda's, in the table below)."""
    network, _ = Tape.record(lambda t: expression(t.input(a), t.input(b)).sum())
    return network, expression.__code__.co_firstlineno


# name, expression, a, b, (origin node, opcode), (NaN, +inf, -inf), first element, operand values
ARITHMETIC = [
    ("div-by-zero", lambda x, y: x / y, [1.0, 2.0], [0.0, 1.0], (2, "Div"), (0, 1, 0), (0,), ((1.0, 2.0), (0.0, 1.0))),
    ("negative-div-by-zero", lambda x, y: x / y, [2.0, -1.0], [1.0, 0.0], (2, "Div"), (0, 0, 1), (1,), ((2.0, -1.0), (1.0, 0.0))),
    ("zero-over-zero", lambda x, y: x / y, [0.0], [0.0], (2, "Div"), (1, 0, 0), (0,), ((0.0,), (0.0,))),
    ("product-overflow", lambda x, y: x * y, [1e30, 1.0], [1e30, 1.0], (2, "Mul"), (0, 1, 0), (0,), None),
    ("matmul-overflow", lambda x, y: x.matmul(y), [[1e20, 1e20]], [[1e20], [1e20]], (2, "MatMul"), (0, 1, 0), (0, 0), None),
    ("sum-overflow", lambda x, y: x.sum() + y.sum(), [3e38, 3e38], [1.0], (2, "Sum"), (0, 1, 0), (), None),
    ("sub-of-overflows", lambda x, y: x * y - x * y, [1e30], [1e30], (2, "Mul"), (0, 1, 0), (0,), None),
    ("powf-zero-to-negative", lambda x, y: x.powf(y), [0.0, 2.0], [-1.0, 2.0], (2, "Powf"), (0, 1, 0), (0,), ((0.0, 2.0), (-1.0, 2.0))),
    ("powf-negative-base", lambda x, y: x.powf(y), [-8.0], [1.0 / 3.0], (2, "Powf"), (1, 0, 0), (0,), None),
    ("powf-overflow", lambda x, y: x.powf(y), [10.0], [100.0], (2, "Powf"), (0, 1, 0), (0,), ((10.0,), (100.0,))),
    ("powf-of-zero-negative-odd", lambda x, y: x.powf(y), [-0.0], [-3.0], (2, "Powf"), (0, 0, 1), (0,), None),
    ("maximum-of-overflow", lambda x, y: (x * x).maximum(y), [1e20], [0.0], (2, "Mul"), (0, 1, 0), (0,), None),
]


@pytest.mark.parametrize(
    ("expression", "a", "b", "origin", "kinds", "first", "operands"), [c[1:] for c in ARITHMETIC], ids=[c[0] for c in ARITHMETIC]
)
def test_arithmetic_that_leaves_the_finite_numbers_is_the_origin(
    expression: Callable[[Value, Value], Value], a: Any, b: Any, origin: tuple[int, str],
    kinds: tuple[int, int, int], first: tuple[int, ...], operands: tuple[tuple[float, ...], ...] | None,
) -> None:  # fmt: skip
    network, line = binary(expression, a, b)
    report = nonfinite(network, network.parameters())
    assert report is not None
    assert ((report.node, report.op_name), report.site, counts(report), report.first) == (origin, at(line), kinds, first)
    assert all(o.finite for o in report.operands) and report.source == ""
    if operands is not None:
        assert tuple(o.values for o in report.operands) == operands
        assert tuple(o.node for o in report.operands) == (0, 1)


def test_powf_zero_to_zero_is_one_and_finite() -> None:
    network, _ = binary(lambda x, y: x.powf(y), [0.0], [0.0])
    assert nonfinite(network, network.parameters()) is None


# --------------------------------------------------------------------------- losses and sources
def test_the_log_of_a_zero_probability_in_cross_entropy_is_the_origin() -> None:
    line = 0

    def build(t: Tape) -> Value:
        nonlocal line
        probabilities = t.input([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]])
        logits, line = probabilities.ln(), here()
        return cross_entropy(logits, t.input(Tensor.selection([0, 2], 3)))

    network, loss = Tape.record(build)
    report = nonfinite(network, network.parameters())
    assert report is not None
    assert (report.node, report.op_name, report.site, counts(report), report.first) == (1, "Ln", at(line), (0, 0, 1), (0, 2))
    (operand,) = report.operands
    assert (operand.node, operand.minimum, operand.maximum, operand.values) == (0, 0.0, 0.5, (0.5, 0.5, 0.0, 0.25, 0.25, 0.5))
    assert report.results == (network.index(loss),) and report.origin.values is not None


def test_a_minus_infinity_logit_in_cross_entropy_is_reported_at_its_parameter() -> None:
    line = 0

    def build(t: Tape) -> Value:
        nonlocal line
        logits, line = t.parameter([[0.0, -INF, 1.0]]), here()
        return cross_entropy(logits, t.input(Tensor.selection([0], 3)))

    network, _ = Tape.record(build)
    report = nonfinite(network, network.parameters())
    assert report is not None
    assert (report.node, report.op_name, report.site, report.source) == (0, "Parameter", at(line), "parameter")
    assert counts(report) == (0, 0, 1) and report.first == (0, 1) and report.operands == ()


def test_a_nan_parameter_is_the_origin_and_says_so() -> None:
    network, (w, _) = Tape.record(lambda t: (lambda w: (w, (w * 2.0).sum()))(t.parameter([1.0, 2.0])))
    poisoned = network.parameters().with_payloads([(w, Tensor([1.0, NAN]))])
    report = nonfinite(network, poisoned)
    assert report is not None
    assert (report.node, report.op_name, report.source, report.first, report.results) == (0, "Parameter", "parameter", (1,), (3,))
    assert nonfinite(network, network.parameters()) is None


def test_a_recorded_default_and_a_constant_are_origins_too() -> None:
    def build(t: Tape) -> tuple[Value, Value]:
        x = t.input([INF, 1.0])
        return x, (x * t.constant((2,), 1.0)).sum()

    network, (x, _) = Tape.record(build)
    report = nonfinite(network, network.parameters())
    assert report is not None and (report.node, report.source) == (0, "default")
    assert nonfinite(network, network.parameters(), {x: [1.0, 2.0]}) is None
    constant, _ = Tape.record(lambda t: (t.input([1.0]) + t.constant((1,), -INF)).sum())
    report = nonfinite(constant, constant.parameters())
    assert report is not None and (report.node, report.op_name, report.source) == (1, "Leaf", "constant")


# --------------------------------------------------------------------------- gradients
def differentiated(forward: Callable[[Tape], tuple[Value, Value, int]]) -> tuple[Network, Any, Symbol, int, int]:
    """The network of ``forward`` (wrt, loss, its line) with its gradient recorded on the
    returned gradient line: (longer network, adjoints, wrt, forward line, gradient line)."""
    network, (wrt, loss, line) = Tape.record(forward)  # type: ignore[arg-type]
    (longer, adjoints), recorded = gradient(network, loss, [wrt]), here()
    return longer, adjoints, wrt, line, recorded


def sqrt_forward(t: Tape) -> tuple[Value, Value, int]:
    x = t.parameter([4.0, 0.0])
    y, line = x.sqrt(), here()
    return x, y.sum(), line


def ln_forward(t: Tape) -> tuple[Value, Value, int]:
    x = t.parameter([2.0, 0.0])
    y, line = x.ln(), here()
    return x, y.sum(), line


def log1p_forward(t: Tape) -> tuple[Value, Value, int]:
    x = t.parameter([-1.0, 1.0])
    y, line = x.log1p(), here()
    return x, y.sum(), line


def div_forward(t: Tape) -> tuple[Value, Value, int]:
    x = t.parameter([1.0, 2.0])
    y, line = x / t.input([4.0, 0.0]), here()
    return x, y.sum(), line


def powf_forward(t: Tape) -> tuple[Value, Value, int]:
    x = t.parameter([1.0, 0.0])
    y, line = x.powf(t.constant((2,), 0.5)), here()
    return x, y.sum(), line


def log_softmax_forward(t: Tape) -> tuple[Value, Value, int]:
    # Finite forward (weights below the largest float32 in every product and sum), but the
    # rule's sum of the seed along the axis, 3.4e38 + 3 * 1e37, overflows.
    x = t.parameter([[1.0, 0.0, 0.0, 0.0]])
    y, line = x.log_softmax(1), here()
    return x, (y * t.input([[3.4e38, 1e37, 1e37, 1e37]])).sum(), line


# forward, roots (the gradient alone, or the target too), (origin node, opcode), (forward node, opcode),
# (NaN, +inf, -inf), first element, the forward operands' values at that element
GRADIENTS = [
    ("sqrt-at-zero", sqrt_forward, (8, "Div"), (1, "Sqrt"), (0, 1, 0), (1,), (0.0,)),
    ("ln-at-zero", ln_forward, (7, "Div"), (1, "Ln"), (0, 1, 0), (1,), (0.0,)),
    ("log1p-at-minus-one", log1p_forward, (9, "Div"), (1, "Log1p"), (0, 1, 0), (0,), (-1.0,)),
    ("div-by-zero", div_forward, (8, "Div"), (2, "Div"), (0, 1, 0), (1,), (2.0, 0.0)),
    ("powf-at-zero", powf_forward, (16, "Powf"), (2, "Powf"), (0, 1, 0), (1,), (0.0, 0.5)),
]


@pytest.mark.parametrize(
    ("forward", "origin", "rule", "kinds", "first", "values"), [g[1:] for g in GRADIENTS], ids=[g[0] for g in GRADIENTS]
)
def test_a_gradient_node_names_the_forward_rule_that_recorded_it(
    forward: Callable[[Tape], tuple[Value, Value, int]], origin: tuple[int, str], rule: tuple[int, str],
    kinds: tuple[int, int, int], first: tuple[int, ...], values: tuple[float, ...],
) -> None:  # fmt: skip
    longer, adjoints, _, line, recorded = differentiated(forward)
    report = nonfinite(longer, Parameters.initial(longer), None, adjoints.gradients(), adjoints)
    assert report is not None
    assert ((report.node, report.op_name), report.site, counts(report), report.first) == (origin, at(recorded), kinds, first)
    adjoint = report.adjoint
    assert adjoint is not None
    assert ((adjoint.node, adjoint.op_name), adjoint.site, adjoint.rule) == (rule, at(line), f"the adjoint of `{rule[1]}`")
    assert adjoint.at == values and adjoint.operands[0].node == 0
    assert report.results == (adjoints.gradients()[0].index,)
    # Without the adjoints the same node is found, with no rule named.
    plain = nonfinite(longer, Parameters.initial(longer), None, adjoints.gradients())
    assert plain is not None and plain.node == report.node and plain.adjoint is None


def test_the_adjoint_of_log_softmax_overflowing_its_sum_is_named() -> None:
    longer, adjoints, _, line, recorded = differentiated(log_softmax_forward)
    parameters = Parameters.initial(longer)
    assert np.isfinite(longer.forward(parameters).of(adjoints.target).numpy()).all()
    report = nonfinite(longer, parameters, None, adjoints.roots(), adjoints)
    assert report is not None
    assert (report.op_name, report.site, counts(report), report.first) == ("SumAlong", at(recorded), (0, 1, 0), (0,))
    assert report.operands[0].values == tuple(float(np.float32(v)) for v in (3.4e38, 1e37, 1e37, 1e37))
    adjoint = report.adjoint
    assert adjoint is not None and (adjoint.node, adjoint.op_name, adjoint.site) == (1, "LogSoftmax", at(line))
    assert adjoint.at == (None,)  # [1, 4] against the origin's [1]: the elements do not line up


def test_a_seeded_vjp_is_reported_without_a_rule() -> None:
    def build(t: Tape) -> tuple[Value, Any]:
        x = t.parameter([4.0, 0.0])
        return x, t.vjp(x.sqrt(), t.input([1.0, 1.0]), [x])

    network, (_, adjoints) = Tape.record(build)
    report = nonfinite(network, network.parameters(), None, adjoints.gradients(), adjoints)
    assert report is not None and report.op_name == "Div" and report.adjoint is None


# --------------------------------------------------------------------------- every road
ROADS = ["interpreter", "exact", "fast", pytest.param("xla", marks=needs_xla)]


def road(name: str, network: Network, roots: tuple[Symbol, ...]) -> Runner:
    if name == "interpreter":
        return network
    if name == "xla":
        return XlaExecutable.of_plan(network.entry(roots).numerics(Numerics.FAST).lower())
    return network.entry(roots).numerics(Numerics(name)).lower()


ROAD_NAMES = {"interpreter": "interpreter", "exact": "Exact plan", "fast": "Fast plan", "xla": "XLA road"}


@pytest.mark.parametrize("name", ROADS)
def test_every_road_finds_a_forward_origin(name: str) -> None:
    line = 0

    def build(t: Tape) -> tuple[Value, Value]:
        nonlocal line
        x = t.input([4.0, 1.0, -1.0])
        y, line = (x * 2.0).sqrt(), here()
        return x, (y + x).sum()

    network, (x, loss) = Tape.record(build)
    runner = road(name, network, (loss,))
    assert nonfinite(runner, network.parameters(), {x: [4.0, 1.0, 9.0]}, [loss]) is None
    report = nonfinite(runner, network.parameters(), {x: [4.0, 1.0, -1.0]}, [loss])
    assert report is not None
    assert (report.road, report.node, report.op_name, report.site, report.first) == (ROAD_NAMES[name], 3, "Sqrt", at(line), (2,))
    assert report.operands[0].values == (8.0, 2.0, -2.0) and report.operands[0].node == 2
    assert report.located == (name != "interpreter") and report.disagreements == () and report.results == (5,)


@pytest.mark.parametrize("name", ROADS)
def test_every_road_names_the_rule_behind_a_gradient_origin(name: str) -> None:
    longer, adjoints, _, line, recorded = differentiated(sqrt_forward)
    runner = road(name, longer, adjoints.roots())
    report = nonfinite(runner, Parameters.initial(longer), None, None, adjoints)
    assert report is not None
    assert (report.road, report.node, report.op_name, report.site) == (ROAD_NAMES[name], 8, "Div", at(recorded))
    assert report.adjoint is not None and (report.adjoint.node, report.adjoint.site, report.adjoint.at) == (1, at(line), (0.0,))
    assert report.results == (adjoints.gradients()[0].index,) and report.located == (name != "interpreter")


@needs_xla
def test_the_xla_road_flushing_a_denormal_disagrees_with_the_interpreter() -> None:
    line = 0

    def build(t: Tape) -> tuple[Value, Value]:
        nonlocal line
        x = t.input([1.0, 1.0])
        y, line = x.ln(), here()
        return x, y

    network, (x, y) = Tape.record(build)
    executable = XlaExecutable.of_network(network, [y])
    report = nonfinite(executable, network.parameters(), {x: [1e-40, 1.0]})
    assert report is not None
    assert (report.road, report.node, report.op_name, report.site, report.source) == ("XLA road", 1, "Ln", at(line), "road")
    assert counts(report) == (0, 0, 1) and report.disagreements == (1,) and report.located
    assert report.operands[0].minimum == float(np.float32(1e-40))  # what XLA read, as the interpreter holds it
    assert "disagree about the finiteness of %1" in str(report)


# --------------------------------------------------------------------------- the checked runner
@pytest.mark.parametrize("name", ROADS)
def test_the_checked_runner_raises_at_the_first_bad_step_and_not_before(name: str) -> None:
    longer, adjoints, x, line, recorded = differentiated(sqrt_forward)
    plain = road(name, longer, adjoints.roots())
    runner = checked(plain, adjoints)
    assert isinstance(runner, Checked) and isinstance(runner, Runner) and checked(plain, on=False) is plain
    table = Parameters.initial(longer)
    steps = [[4.0, 1.0], [9.0, 0.25], [1.0, 0.0], [4.0, 4.0]]
    reached = []
    with pytest.raises(NonFiniteError) as raised:
        for step, values in enumerate(steps):
            parameters = table.with_payloads([(x, Tensor(values))])
            run = runner.forward(parameters)
            assert run.of(adjoints.target).tolist() == plain.forward(parameters).of(adjoints.target).tolist()
            reached.append(step)
    assert reached == [0, 1] and runner.calls == 3  # type: ignore[attr-defined]
    error = raised.value
    assert isinstance(error, ToposError) and isinstance(error, ArithmeticError)
    assert (error.report.node, error.report.op_name, error.report.site) == (8, "Div", at(recorded))
    assert error.report.adjoint is not None and error.report.adjoint.site == at(line)
    assert "call 3 of this checked runner" in str(error) and str(error.report) in str(error)


# --------------------------------------------------------------------------- misuse
def test_misuse_raises_named_errors_and_changes_nothing() -> None:
    network, (x, y) = Tape.record(lambda t: (lambda x: (x, x.ln().sum()))(t.input([0.0])))
    other, (w, loss) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([1.0])))
    _, adjoints = gradient(other, loss, [w])
    parameters = network.parameters()
    before = (network.describe(), len(network), [p.numpy().tolist() for p in parameters.payloads()])
    plan = network.entry(y).lower()
    with pytest.raises(SymbolError, match="runner must be a Network") as refused:
        nonfinite(3, parameters)  # type: ignore[arg-type]
    assert str(refused.value).startswith(f"{at(here() - 1)}: ")  # the line of the call
    with pytest.raises(SymbolError, match="runner must be a Network"):
        nonfinite(Network, parameters)  # type: ignore[arg-type]
    with pytest.raises(FeedError, match="Parameters table"):
        nonfinite(network, "weights")  # type: ignore[arg-type]
    with pytest.raises(SymbolError, match="Adjoints"):
        nonfinite(network, parameters, adjoints=(1, 2))  # type: ignore[arg-type]
    with pytest.raises(ForeignSymbolError):
        nonfinite(network, parameters, adjoints=adjoints)
    with pytest.raises(SymbolError, match="roots"):
        nonfinite(network, parameters, roots=[3])  # type: ignore[list-item]
    with pytest.raises(FeedError):
        nonfinite(network, parameters, {y: 1.0})
    with pytest.raises(DeclarationError):
        nonfinite(plan, parameters, roots=[x])
    with pytest.raises(SymbolError, match="runner must be a Network"):
        checked("plan")  # type: ignore[arg-type]
    with pytest.raises(SymbolError, match="on must be True or False"):
        checked(plan, on="yes")  # type: ignore[arg-type]
    with pytest.raises(ForeignSymbolError):
        checked(plan, adjoints)
    assert before == (network.describe(), len(network), [p.numpy().tolist() for p in parameters.payloads()])
    report = nonfinite(network, parameters)
    assert report is not None and report.node == 1
    # A checked runner passed to nonfinite is read through: the report, not its error.
    wrapped = nonfinite(checked(plan), parameters)
    assert wrapped is not None and (wrapped.road, wrapped.node) == ("Fast plan", 1)


# --------------------------------------------------------------------------- the text
def test_the_text_is_byte_stable_and_readable() -> None:
    longer, adjoints, _, line, recorded = differentiated(sqrt_forward)
    report = nonfinite(longer, Parameters.initial(longer), None, adjoints.gradients(), adjoints)
    assert report is not None
    assert str(report).replace(__file__, "T") == (
        f"the first non-finite value on the interpreter: %8 Div[2] (recorded at T:{recorded})\n"
        "  it holds 1 +inf of 2, first at [1]; none of its operands did\n"
        f"  x: %6 Add[2] (recorded at T:{recorded}): [1, 1]\n"
        f"  y: %7 Add[2] (recorded at T:{recorded}): [4, 0]\n"
        f"  recorded by the adjoint of `Sqrt` at %1 Sqrt[2] (recorded at T:{line}), at x = 0\n"
        f"    x: %0 Parameter[2] (recorded at T:{line - 1}): [4, 0]\n"
        "  non-finite results: %10"
    )
    assert report == nonfinite(longer, Parameters.initial(longer), None, adjoints.gradients(), adjoints)
    big, x = Tape.record(lambda t: t.input(np.arange(12.0)))
    summary = nonfinite(big, big.parameters(), {x: np.where(np.arange(12) == 5, -INF, np.arange(12.0))})
    assert summary is not None and summary.origin.values is None
    assert str(summary).splitlines()[1] == "  it holds 1 -inf of 12, first at [5]; it was fed that way"


def test_the_text_is_the_same_in_another_process_under_another_hash_seed() -> None:
    script = (
        "import numpy as np\nfrom topos import Tape, gradient, nonfinite\n"
        "n, (x, l) = Tape.record(lambda t: (lambda x: (x, (x.sqrt() + x.ln()).sum()))(t.parameter([1.0, 0.0])))\n"
        "g, a = gradient(n, l, [x])\nprint(nonfinite(g, n.parameters(), None, a.gradients(), a))\n"
        "print(nonfinite(n, n.parameters()))\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT,
            env=dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT)),
        ).stdout
        for seed in ("0", "12345")
    }  # fmt: skip
    assert len(outputs) == 1 and "recorded by the adjoint of `Ln` at %2 Ln[2]" in outputs.pop()


# --------------------------------------------------------------------------- topos check --nan
def test_check_nan_names_the_origin_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    guide = (ROOT / "docs" / "command-line.md").read_text()
    source = next(b for b in re.findall(r"```python\n(.*?)```", guide, flags=re.DOTALL) if b.startswith("# nan.py"))
    model = tmp_path / "nan.py"
    model.write_text(source)
    assert main(["check", "--nan", f"{model}:build"]) == 1
    printed = capsys.readouterr().out.replace(str(model), "/home/me/nan.py")
    documented = guide.split("non-finite values:\n", 1)[1].split("```", 1)[0]
    assert printed.endswith("non-finite values:\n" + documented)
    fine = tmp_path / "fine.py"
    fine.write_text("def build(t):\n    w = t.parameter([0.5, 2.0])\n    return {'loss': w.sqrt().sum()}\n")
    assert main(["check", "--nan", f"{fine}:build"]) == 0
    assert capsys.readouterr().out.endswith("non-finite values: none in the forward or the gradient\n")


def test_check_nan_reports_a_gradient_origin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "grad.py"
    model.write_text("def build(t):\n    w = t.parameter([0.5, 0.0])\n    return {'loss': w.sqrt().sum()}\n")
    assert main(["check", f"{model}:build"]) == 0 and "non-finite" not in capsys.readouterr().out
    assert main(["check", "--nan", f"{model}:build"]) == 1
    out = capsys.readouterr().out
    assert "%8 Div[2]" in out and f"recorded by the adjoint of `Sqrt` at %1 Sqrt[2] (recorded at {model}:3), at x = 0" in out


# --------------------------------------------------------------------------- the guide
def test_the_guide_runs_as_written_and_prints_what_it_shows() -> None:
    text = (ROOT / "docs" / "nonfinite.md").read_text()
    namespace: dict[str, Any] = {}
    blocks = list(re.finditer(r"```python\n(.*?)```(?:\n\n```text\n(.*?)```)?", text, flags=re.DOTALL))
    assert len(blocks) >= 6
    for block in blocks:
        if "XlaExecutable" in block.group(1) and not xla.available():
            continue
        # Padded to the block's own line, so every site names the guide's line.
        padding = "\n" * text.count("\n", 0, block.start(1))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(padding + block.group(1), "docs/nonfinite.md", "exec"), namespace)
        assert printed.getvalue() == (block.group(2) or ""), block.group(1)
