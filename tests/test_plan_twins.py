"""Twins: a scheduled node that repeats an earlier node's opcode over the same operands is
handed the earlier value instead of computing it again (see ``topos.stages.plan._twins``)."""

from __future__ import annotations

import numpy as np
import pytest

from topos import Numerics, Tape, Value, f32, f64
from topos.ir.element import ElementType
from topos.nn.losses import cross_entropy
from topos.stages.execute import KernelStep, PassStep
from topos.stages.gradient import gradient
from topos.stages.plan import Plan


def _kernel_count(lowered: Plan, name: str) -> int:
    nodes = lowered.network.nodes_
    return sum(1 for s in lowered._program.steps if isinstance(s, KernelStep) and nodes[s.index].name == name)


@pytest.mark.parametrize("numerics", [Numerics.EXACT, Numerics.FAST])
@pytest.mark.parametrize("element", [f32, f64], ids=["f32", "f64"])
def test_a_repeated_computation_runs_once_and_reads_the_same(numerics: Numerics, element: ElementType) -> None:
    rng = np.random.default_rng(3)

    def build(t: Tape) -> tuple[Value, Value, Value]:
        x, p = t.input(rng.standard_normal((5, 7))), t.parameter(rng.standard_normal((5, 7)))
        a = (x * p).exp()  # recorded twice: two Mul nodes, two Exp nodes
        b = (x * p).exp()
        return a, b, (a * b + a).sum()

    network, (a, b, loss) = Tape.record(build, element=element)
    lowered = network.entry(loss).observe(a, b).numerics(numerics).lower()
    assert _kernel_count(lowered, "Exp") == 1 and _kernel_count(lowered, "Mul") == 2
    twins = [s for s in lowered._program.steps if isinstance(s, PassStep)]
    assert {network.nodes_[s.index].name for s in twins} == {"Mul", "Exp"}
    for step in twins:
        # The earlier value outlives every reader of its twin.
        assert lowered.last_use[step.other] >= step.index
    # The repeat's own operands are read by nobody now: they are freed, not kept to the end.
    readable = {i for i, flag in enumerate(lowered.readable_) if flag}
    assert set(lowered._program.kept) <= readable
    run = lowered.forward(network.parameters())
    assert np.array_equal(run.of(a).bits(), run.of(b).bits())
    if numerics is Numerics.EXACT:
        oracle = network.forward(network.parameters())
        for symbol in (a, b, loss):
            assert np.array_equal(run.of(symbol).bits(), oracle.of(symbol).bits())


def test_a_gradient_plan_hands_on_what_the_forward_computed() -> None:
    """The log-softmax rule reads ``exp(logp)``; with softmax in the forward it is a twin."""
    rng = np.random.default_rng(5)

    def build(t: Tape) -> Value:
        x = t.input(rng.standard_normal((6, 9)))
        w = t.parameter(rng.standard_normal((9, 4)) * 0.3)
        attention = x.matmul(w).log_softmax(1).exp()
        target = t.input(np.eye(4)[rng.integers(0, 4, 6)])
        return cross_entropy(attention.matmul(t.parameter(rng.standard_normal((4, 4)))), target)

    network, loss = Tape.record(build, element=f64)
    longer, adjoints = gradient(network, loss, list(network.parameter_symbols()))
    exact = longer.entry(adjoints.roots()).numerics(Numerics.EXACT).lower()
    exps = [i for i in exact.scheduled if longer.nodes_[i].name == "Exp"]
    assert _kernel_count(exact, "Exp") < len(exps)
    for lowered in (exact, longer.entry(adjoints.roots()).lower()):  # Exact, and Fast with its zero passes
        assert set(lowered._program.kept) <= {i for i, flag in enumerate(lowered.readable_) if flag}
    run = exact.forward(longer.parameters())
    engine = network.forward(network.parameters()).backward(loss)
    for parameter, symbol in zip(network.parameter_symbols(), adjoints.gradients(), strict=True):
        assert np.array_equal(run.of(symbol).bits(), engine.of(parameter).bits())
