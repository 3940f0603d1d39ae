"""check_grad: analytic gradients against central differences, with a report that can fail."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from topos import (
    BackwardTargetError,
    ElementType,
    ShapeMismatchError,
    SymbolError,
    Tape,
    Tensor,
    UnknownSymbolError,
    Value,
    bf16,
    f32,
    f64,
    gradient,
)
from topos.gradcheck import GradCheck, check_grad, f64_twin


def smooth(tape: Tape) -> tuple[Value, Value, Value, Value]:
    w = tape.parameter(np.array([[0.4, -0.3, 0.8], [0.2, 0.5, -0.6]]))
    b = tape.parameter(np.array([0.1, -0.2, 0.3]))
    x = tape.input(np.array([[0.5, -1.0], [1.5, 0.25]]))
    h = (x.matmul(w) + b.broadcast_along(0, 2)).tanh()
    scores = h.log_softmax(1) + (h * h + 1.0).ln() + h.erf()
    return w, b, x, (scores * scores).sum()


@pytest.mark.parametrize("element", [f64, f32, bf16], ids=str)
def test_a_correct_gradient_passes(element: ElementType) -> None:
    network, (w, b, x, loss) = Tape.record(smooth, element=element)
    parameters = network.parameters()
    before = network.describe()
    report = check_grad(network, parameters, loss, wrt=[w, b, x])
    assert isinstance(report, GradCheck)
    assert report.passed, str(report)
    assert [e.symbol for e in report.entries] == [w, b, x]
    assert report.evaluations == 2 * (6 + 3 + 4)
    text = str(report)
    assert text.startswith(f"check_grad of %{loss.index} Sum[] ({element} network): PASSED")
    assert "analytic:  recorded gradient, interpreted in " + str(element) in text
    assert "numerical: central differences in f64" in text
    assert ("replayed onto an f64 tape" in text) == (element != f64)
    assert "%1 Parameter[3]: ok" in text
    # Nothing the check touched changed.
    assert network.describe() == before
    assert parameters.of(w).tolist() == network.parameters().of(w).tolist()


@pytest.mark.parametrize("element", [f64, f32], ids=str)
def test_native_road_passes_with_its_own_step(element: ElementType) -> None:
    network, (w, _, _, loss) = Tape.record(smooth, element=element)
    report = check_grad(network, network.parameters(), loss, numerical="native")
    assert report.passed, str(report)
    assert f"step {dict(f64=1e-06, f32=0.001, bf16=0.1)[element.name]:g} * max(1, |x|)" in report.numerical_side
    assert report.of(w).numerical_side == f"central differences in {element}"


def test_bf16_differences_are_inconclusive_and_do_not_pass() -> None:
    network, (w, _, _, loss) = Tape.record(smooth, element=bf16)
    report = check_grad(network, network.parameters(), loss, numerical="native")
    assert "step 0.1 * max(1, |x|)" in report.numerical_side
    entry = report.of(w)
    assert not entry.conclusive and not entry.passed and not report.passed
    assert entry.noise > entry.tolerance
    assert "INCONCLUSIVE" in str(report) and "use the f64 road" in str(report)
    # The same bf16 gradient, checked against f64 differences, passes conclusively.
    default = check_grad(network, network.parameters(), loss)
    assert default.passed and all(e.conclusive for e in default.entries)


def test_default_wrt_is_every_parameter_and_feeds_are_honoured() -> None:
    def build(t: Tape) -> tuple[Value, Value, Value]:
        w = t.parameter(np.array([1.0, 2.0]))
        x = t.input(np.array([0.0, 0.0]))
        return w, x, (w * x).sum()

    network, (w, x, loss) = Tape.record(build, element=f64)
    fed = {x: np.array([3.0, -4.0])}
    report = check_grad(network, network.parameters(), loss, feeds=fed)
    assert [e.symbol for e in report.entries] == [w]
    assert report.passed
    entry = report.of(w)
    # At the fed point the gradient is the feed; the worst gap is a rounding residue.
    assert entry.max_abs < 1e-8
    assert entry.analytic_at_worst in (3.0, -4.0)


def test_a_wrong_analytic_table_fails_and_says_where() -> None:
    network, (w, b, _, loss) = Tape.record(smooth, element=f32)
    right = check_grad(network, network.parameters(), loss, wrt=[w, b])
    assert right.passed
    longer, adjoints = gradient(network, loss, [b])
    true_b = longer.forward(network.parameters()).of(adjoints.of(b))
    longer_report = check_grad(
        network,
        network.parameters(),
        loss,
        wrt=[w, b],
        analytic={w: np.zeros((2, 3)), b: true_b},
    )
    assert not longer_report.passed
    assert longer_report.of(w).passed is False
    assert longer_report.of(w).analytic_at_worst == 0.0
    assert abs(longer_report.of(w).numerical_at_worst) > 1e-2
    assert longer_report.of(b).passed
    assert [e.symbol for e in longer_report.failures()] == [w]
    text = str(longer_report)
    assert "FAILED" in text and "table supplied by the caller" in text
    assert f"%{w.index} Parameter[2, 3]: FAILED" in text


def test_the_exact_gradient_supplied_by_hand_passes() -> None:
    def build(t: Tape) -> tuple[Value, Value]:
        w = t.parameter(np.array([0.5, -1.25, 2.0]))
        return w, (w.sin() * w).sum()

    network, (w, loss) = Tape.record(build, element=f64)
    values = np.array([0.5, -1.25, 2.0])
    hand = np.cos(values) * values + np.sin(values)
    assert check_grad(network, network.parameters(), loss, analytic={w: hand}).passed
    assert not check_grad(network, network.parameters(), loss, analytic={w: np.cos(values)}).passed


def test_a_kink_fails_the_check() -> None:
    """relu at 0: the rule's one-sided choice (0, as JAX and PyTorch) is not the symmetric
    difference (1/2), and 2 * relu(w) makes the two disagree by 1."""

    def build(t: Tape) -> tuple[Value, Value]:
        w = t.parameter(np.array([0.0, 1.0]))
        return w, (w.relu() * 2.0).sum()

    network, (w, loss) = Tape.record(build, element=f64)
    report = check_grad(network, network.parameters(), loss)
    assert not report.passed
    entry = report.of(w)
    assert entry.worst_at == (0,)
    assert entry.analytic_at_worst == 0.0
    # The symmetric difference of 2*relu at its kink is (2h)/(2h) = 1 up to the rounding
    # of the step itself.
    assert abs(entry.numerical_at_worst - 1.0) < 1e-6


def test_bad_input() -> None:
    network, (w, b, _, loss) = Tape.record(smooth, element=f32)
    parameters = network.parameters()
    tape_nodes = network.nodes_
    hidden = network.symbol(len(tape_nodes) - 3)
    with pytest.raises(BackwardTargetError, match=r"test_gradcheck\.py:\d+: check_grad needs a rank-0 target"):
        check_grad(network, parameters, network.symbol(7))
    with pytest.raises(SymbolError, match=r"is not a parameter or an input"):
        check_grad(network, parameters, loss, wrt=[hidden])
    with pytest.raises(UnknownSymbolError, match=r"no entry for %1 Parameter\[3\]"):
        check_grad(network, parameters, loss, wrt=[w, b], analytic={w: np.zeros((2, 3))})
    with pytest.raises(ShapeMismatchError, match=r"%0 Parameter\[2, 3\] has shape \[3, 2\]"):
        check_grad(network, parameters, loss, wrt=[w], analytic={w: np.zeros((3, 2))})


def test_the_f64_twin_has_the_same_text() -> None:
    def build(t: Tape) -> Any:
        table = t.parameter(np.array([[0.5, 1.0], [2.0, -1.0]]))
        rows = table.gather(t.leaf(Tensor.selection([1, 0, 1], 2, t.element)))
        return (rows * 2.0).sum()

    for element in (f32, bf16):
        network, _ = Tape.record(build, element=element)
        twin = f64_twin(network)
        assert twin.element == f64
        assert twin.describe() == network.describe()
