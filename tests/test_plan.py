"""The plan reading: entries, agreement with the interpreter, liveness, describe, bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plan_graphs import OPCODE_STEPS, graphs

from topos import (
    DeclarationError,
    FeedError,
    ForeignSymbolError,
    Network,
    Numerics,
    ParametersError,
    Symbol,
    Tape,
    Tensor,
    ToposError,
    Value,
    f32,
    f64,
)
from topos.errors import BackwardTargetError
from topos.ir import ops
from topos.ir.element import ElementType
from topos.stages.gradient import gradient
from topos.stages.plan import Entry, Plan, plan

Array = np.ndarray[Any, Any]


def bits(t: Tensor) -> Array:
    return t.bits()


def same_bits(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and bool(np.array_equal(bits(a), bits(b)))


def mlp(element: ElementType = f32, batch: int = 4) -> tuple[Network, dict[str, Symbol]]:
    rng = np.random.default_rng(7)

    def build(t: Tape) -> dict[str, Value]:
        x = t.input(rng.standard_normal((batch, 6)))
        w1 = t.parameter(rng.standard_normal((6, 8)) * 0.4)
        w2 = t.parameter(rng.standard_normal((8, 3)) * 0.4)
        hidden = x.matmul(w1).tanh()
        logits = hidden.matmul(w2)
        loss = -(logits.log_softmax(1) * t.leaf(np.eye(batch, 3))).sum()
        return {"x": x, "w1": w1, "w2": w2, "hidden": hidden, "logits": logits, "loss": loss}

    return Tape.record(build, element=element)


# --------------------------------------------------------------------------- agreement


@pytest.mark.parametrize("element", [f32, f64], ids=["f32", "f64"])
@settings(max_examples=25)
@given(data=st.data())
def test_exact_plan_equals_interpreter_bitwise(element: ElementType, data: st.DataObject) -> None:
    graph = data.draw(graphs(element, cover=data.draw(st.booleans())))
    network = graph.network
    parameters = network.parameters()
    reference = network.forward(parameters)
    observed = graph.values[:: max(1, len(graph.values) // 3)]
    for backward in (False, True):
        entry = Entry((graph.loss,), tuple(observed), backward, Numerics.EXACT)
        run = plan(network, entry).forward(parameters)
        for symbol in (graph.loss, *observed):
            assert same_bits(run.of(symbol), reference.of(symbol)), symbol


def test_generated_graphs_cover_every_opcode() -> None:
    seen: set[type] = set()

    @settings(max_examples=5)
    @given(graphs(f64, cover=True))
    def collect(graph: Any) -> None:
        seen.update(type(n.op) for n in graph.network.nodes())

    collect()
    assert seen == set(ops.OPCODES), set(ops.OPCODES) - seen
    assert len(OPCODE_STEPS) == len(ops.OPCODES) - 4  # Leaf, Parameter, Input; Fold rides with Unfold


@pytest.mark.parametrize("element", [f32, f64], ids=["f32", "f64"])
@settings(max_examples=20)
@given(data=st.data())
def test_recorded_gradient_plan_equals_engine_backward(element: ElementType, data: st.DataObject) -> None:
    graph = data.draw(graphs(element, size=6))
    network = graph.network
    longer, adjoints = gradient(network, graph.loss, graph.parameters)
    run = longer.entry(adjoints.roots()).numerics(Numerics.EXACT).lower().forward(longer.parameters())
    forward = network.forward(network.parameters())
    engine = forward.backward(graph.loss)
    assert same_bits(run.of(adjoints.target), forward.of(graph.loss))
    for wrt, symbol in adjoints.pairs():
        assert same_bits(run.of(symbol), engine.of(wrt)), wrt


@settings(max_examples=15)
@given(data=st.data())
def test_training_plan_backward_equals_interpreter_backward(data: st.DataObject) -> None:
    graph = data.draw(graphs(f32, size=6))
    network = graph.network
    parameters = network.parameters()
    run = network.entry(graph.loss).backward().numerics(Numerics.EXACT).lower().forward(parameters)
    assert run.provenance == "training"
    ours = run.backward(graph.loss)
    theirs = network.forward(parameters).backward(graph.loss)
    for symbol in graph.parameters:
        assert same_bits(ours.of(symbol), theirs.of(symbol))


ENVELOPE_STEPS = ("add", "mul", "matmul", "sum", "sum_along", "broadcast_along", "reshape", "permute")


@settings(max_examples=20)
@given(graphs(f32, ENVELOPE_STEPS, size=8))
def test_fast_plan_within_envelope(graph: Any) -> None:
    # Fast differs from Exact only by reassociating sums and products of the same terms.
    # Each reassociated fold of n terms errs by at most n * eps * sum|terms|; we bound the
    # result by the exact value recomputed over magnitudes (|x| everywhere), scaled by the
    # deepest chain: tol = 64 * eps32 * magnitude (drawn graphs have <= 8 steps, sides <= 4).
    network = graph.network
    parameters = network.parameters()
    exact = network.entry(graph.loss).observe(*graph.values).numerics(Numerics.EXACT).lower().forward(parameters)
    fast = network.entry(graph.loss).observe(*graph.values).numerics(Numerics.FAST).lower().forward(parameters)
    magnitude = network.forward(parameters.map(lambda p: Tensor(np.abs(p.numpy()), element=f32)))
    for symbol in (graph.loss, *graph.values):
        e = exact.of(symbol).numpy().astype(np.float64)
        f = fast.of(symbol).numpy().astype(np.float64)
        scale = np.abs(magnitude.of(symbol).numpy().astype(np.float64)) + np.abs(e)
        assert np.all(np.abs(f - e) <= 64 * np.finfo(np.float32).eps * (scale + 1.0)), symbol


def test_fast_mlp_within_envelope_and_exact_is_bitwise() -> None:
    network, s = mlp(batch=16)
    parameters = network.parameters()
    exact = network.entry(s["loss"]).numerics(Numerics.EXACT).lower().forward(parameters)
    fast = network.entry(s["loss"]).lower().forward(parameters)
    reference = network.forward(parameters)
    assert same_bits(exact.of(s["loss"]), reference.of(s["loss"]))
    # 16 rows x 3 classes of O(1) log-probabilities, products over <= 8 terms: 1e-5 relative.
    assert abs(fast.of(s["loss"]).scalar() - reference.of(s["loss"]).scalar()) <= 1e-5 * abs(reference.of(s["loss"]).scalar())


# --------------------------------------------------------------------------- entries and runs


def test_entry_builders_and_results_order() -> None:
    network, s = mlp()
    bound = network.entry([s["loss"], s["hidden"]]).observe(s["loss"], s["logits"]).numerics(Numerics.EXACT)
    assert bound.entry.roots == (s["loss"], s["hidden"])
    assert bound.entry.observe == (s["loss"], s["logits"])
    assert bound.entry.numerics is Numerics.EXACT
    assert bound.backward().entry.backward and not bound.entry.backward
    lowered = bound.lower()
    assert lowered.results() == (s["loss"], s["hidden"], s["logits"])
    assert lowered.numerics is Numerics.EXACT
    assert lowered.scheduled == tuple(sorted(lowered.scheduled))
    assert Entry.of(s["loss"]).numerics is Numerics.FAST
    assert network.entry(s["loss"]).entry == Entry((s["loss"],))


def test_interpret_reads_only_the_declaration() -> None:
    network, s = mlp()
    run = network.entry(s["loss"]).observe(s["hidden"]).interpret(network.parameters())
    assert run.of(s["hidden"]).shape == network.node(s["hidden"]).shape
    with pytest.raises(DeclarationError, match=f"%{s['logits'].index}"):
        run.of(s["logits"])


def test_undeclared_read_raises_even_when_alive() -> None:
    network, s = mlp()
    for backward in (False, True):
        run = plan(network, Entry((s["loss"],), (), backward, Numerics.EXACT)).forward(network.parameters())
        # Training runs hold every value; the declaration still decides what reads.
        assert run.values()[s["logits"].index] is not None or not backward
        with pytest.raises(DeclarationError, match="roots or observes"):
            run.of(s["logits"])


def test_forward_only_plan_frees_and_refuses_backward() -> None:
    network, s = mlp()
    lowered = network.entry(s["loss"]).lower()
    run = lowered.forward(network.parameters())
    assert run.provenance == "observed"
    assert run.values()[s["hidden"].index] is None
    with pytest.raises(BackwardTargetError, match=r"\.backward\(\)"):
        run.backward(s["loss"])


def test_plan_is_stateless_across_parameters_and_reopen() -> None:
    network, s = mlp()
    lowered = network.entry(s["loss"]).numerics(Numerics.EXACT).lower()
    parameters = network.parameters()
    doubled = parameters.map(lambda p: p * 2.0)
    assert same_bits(lowered.forward(doubled).of(s["loss"]), network.forward(doubled).of(s["loss"]))
    assert same_bits(lowered.forward(parameters).of(s["loss"]), network.forward(parameters).of(s["loss"]))
    tape = network.reopen()
    extra = tape.parameter(np.ones(3))
    _ = (tape.resolve(s["logits"]) * extra.broadcast_along(0, 4)).sum()
    longer = tape.seal()
    wider = parameters.carried(longer)
    assert len(wider) == len(parameters) + 1
    assert same_bits(lowered.forward(wider).of(s["loss"]), network.forward(parameters).of(s["loss"]))


def test_feeds_change_results() -> None:
    network, s = mlp()
    lowered = network.entry(s["loss"]).numerics(Numerics.EXACT).lower()
    feed = {s["x"]: np.ones((4, 6), np.float32)}
    assert same_bits(
        lowered.forward(network.parameters(), feed).of(s["loss"]),
        network.forward(network.parameters(), feed).of(s["loss"]),
    )


def test_compile_door_and_nodes() -> None:
    network, s = mlp()
    lowered = network.compile([s["hidden"]], numerics=Numerics.EXACT)
    assert isinstance(lowered, Plan)
    assert len(lowered) == len(lowered.nodes()) < len(network)
    assert lowered.node(s["hidden"]).shape == network.node(s["hidden"]).shape
    with pytest.raises(DeclarationError):
        lowered.node(s["loss"])


# --------------------------------------------------------------------------- liveness


def test_forward_peak_is_at_most_half_of_retain_all_on_an_mlp() -> None:
    network, s = mlp(batch=32)
    lowered = network.entry(s["loss"]).lower()
    peak, _ = lowered.peak()
    assert peak * 2 <= lowered.retain_all()
    series = lowered.live_series()
    assert max(series) == peak and len(series) == len(lowered.scheduled)


def test_training_plan_retains_what_rules_read() -> None:
    network, s = mlp()
    lowered = network.entry(s["loss"]).backward().lower()
    labels = {i: lowered.label(i) for i in lowered.scheduled}
    # tanh's rule reads its output; the product reads both operands.
    assert labels[s["hidden"].index] == "retained"
    assert labels[s["w1"].index] == "retained"
    assert labels[s["loss"].index] == "kept"
    assert lowered.patterns() == []
    series = lowered.live_series()
    assert series == sorted(series)


def test_describe_labels_and_summary_are_byte_stable() -> None:
    network, s = mlp()
    text = network.entry(s["loss"]).observe(s["hidden"]).lower().describe()
    assert "kept" in text and "freed after" in text
    assert "plan: forward, fast numerics;" in text and "live volume: peak" in text
    retain = network.entry(s["loss"]).backward().lower().describe()
    assert "retained" in retain and "releasable after" in retain and "release floor" in retain
    script = (
        "import sys; sys.path.insert(0, 'tests'); from test_plan import mlp; n, s = mlp(); "
        "print(n.entry(s['loss']).observe(s['hidden']).lower().describe(), end='')"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert outputs == {text}


# --------------------------------------------------------------------------- bad input


def test_bad_input_each_a_specific_error() -> None:
    network, s = mlp()
    other, t = mlp()
    with pytest.raises(ForeignSymbolError, match="root"):
        network.entry(t["loss"])
    with pytest.raises(ForeignSymbolError, match="observe"):
        network.entry(s["loss"]).observe(t["hidden"])
    with pytest.raises(DeclarationError, match="at least one root"):
        network.entry([])
    with pytest.raises(DeclarationError, match="at least one root"):
        plan(network, Entry(()))
    lowered = network.entry(s["hidden"]).lower()
    # The hidden plan does not reach the loss leaf or w2; an input it does not take:
    def build(tape: Tape) -> tuple[Value, Value]:
        a = tape.input([1.0, 2.0])
        b = tape.input([3.0])
        return a.exp(), b
    small, (y, unused) = Tape.record(build)
    with pytest.raises(FeedError, match="does not take the input"):
        small.entry(y).lower().forward(small.parameters(), {unused: [4.0]})
    with pytest.raises(FeedError):
        lowered.forward(network.parameters(), {t["x"]: np.ones((4, 6))})
    with pytest.raises(ParametersError, match="different network"):
        lowered.forward(other.parameters())
    shorter = network.parameters()
    from topos import Parameters

    missing = Parameters(shorter.lineage, shorter.symbols[:1], shorter.payloads_[:1])
    full = network.entry(s["loss"]).lower()
    with pytest.raises(ParametersError, match=f"missing the slot %{s['w2'].index}"):
        full.forward(missing)
    with pytest.raises(BackwardTargetError):
        full.forward(network.parameters()).backward(s["loss"])
    with pytest.raises(DeclarationError):
        full.forward(network.parameters()).of(s["hidden"])
    for error in (ForeignSymbolError, DeclarationError, FeedError, ParametersError, BackwardTargetError):
        assert issubclass(error, ToposError)


@pytest.mark.parametrize("numerics", [Numerics.EXACT, Numerics.FAST])
def test_constant_subgraphs_are_computed_once_at_lowering_with_the_same_bits(numerics: Numerics) -> None:
    from topos.stages.execute import KernelStep

    def build(t: Tape) -> tuple[Value, Value]:
        x = t.input(np.linspace(-1.0, 1.0, 6).reshape(2, 3))
        scale = (t.leaf(0.75) * t.leaf(1.5)).exp().broadcast((2, 3))  # constants only
        return x, (x * scale).tanh().sum()

    network, (x, y) = Tape.record(build, element=f32)
    lowered = network.entry(y).numerics(numerics).lower()
    kernels = [step for step in lowered._program.steps if isinstance(step, KernelStep)]
    # Mul, Tanh and Sum run per call; the constant Mul, Exp and Broadcast were folded.
    assert [network.nodes_[step.index].name for step in kernels] == ["Mul", "Tanh", "Sum"]
    feed = {x: np.linspace(-2.0, 2.0, 6).reshape(2, 3)}
    ours = lowered.forward(network.parameters(), feed).of(y)
    oracle = network.forward(network.parameters(), feed).of(y)
    if numerics is Numerics.EXACT:
        assert np.array_equal(ours.bits(), oracle.bits())
    else:
        # FAST may sum the six terms pairwise: a few f32 ulps of a value near 1.
        assert abs(ours.scalar() - oracle.scalar()) <= 1e-6 * max(1.0, abs(oracle.scalar()))
