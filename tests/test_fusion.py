"""The pattern catalog: matches by structure, legality, election, fused = composed bitwise."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import Network, Numerics, Symbol, Tape, Tensor, Value, bf16, f32, f64
from topos.ir.element import ElementType
from topos.kernels.dispatch import Backend, Formula, tallied
from topos.nn import batch_norm, batch_norm_training, conv2d, max_pool
from topos.stages.fusion import (
    BatchNormInference,
    BatchNormTraining,
    ReduceWindow,
    WindowProduct,
    pooling,
)
from topos.stages.gradient import gradient
from topos.stages.plan import Entry, plan

Array = np.ndarray[Any, Any]


def same_bits(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.bits(), b.bits()))


def convnet(
    element: ElementType = f32, padding: int = 1, stride: int = 1, bias: bool = True, seed: int = 0
) -> tuple[Network, dict[str, Symbol]]:
    rng = np.random.default_rng(seed)

    def build(t: Tape) -> dict[str, Value]:
        x = t.input(rng.standard_normal((2, 2, 7, 7)))
        k = t.parameter(rng.standard_normal((3, 2, 3, 3)) * 0.3)
        b = t.parameter(rng.standard_normal(3) * 0.1) if bias else None
        h = conv2d(x, k, b, stride=stride, padding=padding).relu()
        pooled = max_pool(h, 2)
        rows = pooled.shape[1] * pooled.shape[2] * pooled.shape[3]
        flat = pooled.reshape((2, rows))
        norm = batch_norm_training(flat, t.parameter(np.ones(rows)), t.parameter(np.zeros(rows)))
        loss = (norm.output * norm.output).sum()
        out: dict[str, Value] = {"x": x, "k": k, "h": h, "pooled": pooled, "loss": loss, "mean": norm.mean}
        out["variance"] = norm.variance
        return out

    return Tape.record(build, element=element)


def kinds(matches: list[Any]) -> list[Formula]:
    return [m.kind for m in matches]


def test_facade_chain_finds_three_idioms_and_fields() -> None:
    network, s = convnet()
    lowered = network.entry(s["loss"]).lower()
    found = lowered.candidates()
    assert kinds(found) == [Formula.WINDOW_PRODUCT, Formula.REDUCE_WINDOW, Formula.BATCH_NORM_TRAINING]
    assert lowered.patterns() == found
    window, pool, norm = found
    assert isinstance(window, WindowProduct) and isinstance(pool, ReduceWindow)
    assert isinstance(norm, BatchNormTraining)
    assert (window.kernel_height, window.kernel_width, window.stride, window.padding) == (3, 3, 1, 1)
    assert (window.batch, window.channels, window.height, window.width, window.filters) == (2, 2, 7, 7, 3)
    assert window.source == s["x"].index and window.bias is not None
    assert pool.size == 2 and pool.stride == 2
    assert norm.named_results == (s["mean"].index, s["variance"].index)
    assert norm.mean == s["mean"].index and isinstance(norm.epsilon, float)
    # The home kernel reads what it is handed and writes its root and named results.
    assert window.reads() == (window.source, window.kernel, window.bias) and window.outputs() == (window.root,)
    assert norm.outputs() == (norm.root, norm.mean, norm.variance)
    for match in found:
        assert match.nodes == tuple(sorted(match.nodes)) and match.root in match.nodes


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=["f32", "f64", "bf16"])
@pytest.mark.parametrize(("padding", "stride", "bias"), [(1, 1, True), (0, 2, False), (2, 1, False)])
def test_fused_plan_equals_composed_bitwise(element: ElementType, padding: int, stride: int, bias: bool) -> None:
    network, s = convnet(element, padding, stride, bias)
    parameters = network.parameters()
    readable = (s["loss"], s["pooled"], s["mean"])
    fused_plan = plan(network, Entry((s["loss"],), readable, False, Numerics.EXACT))
    composed = plan(network, Entry((s["loss"],), readable, False, Numerics.EXACT), fuse=False)
    assert len(fused_plan.patterns()) == 3 and composed.patterns() == []
    with tallied() as services:
        ours = fused_plan.forward(parameters)
    theirs = composed.forward(parameters)
    oracle = network.forward(parameters)
    for symbol in readable:
        assert same_bits(ours.of(symbol), theirs.of(symbol))
        assert same_bits(ours.of(symbol), oracle.of(symbol))
    served = {(row.formula, row.backend) for row in services}
    assert (Formula.WINDOW_PRODUCT, Backend.FUSED) in served
    # Under Exact every offered task fell back to the reference.
    assert all(row.backend in (None, Backend.FUSED) for row in services)


@settings(max_examples=20)
@given(
    batch=st.integers(1, 3),
    channels=st.integers(1, 3),
    side=st.integers(3, 7),
    window=st.integers(1, 3),
    stride=st.integers(1, 2),
    padding=st.integers(0, 1),
    filters=st.integers(1, 3),
    seed=st.integers(0, 1000),
)
def test_windowed_product_kernel_equals_composition(
    batch: int, channels: int, side: int, window: int, stride: int, padding: int, filters: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, channels, side, side)).astype(np.float32)
    k = rng.standard_normal((filters, channels, window, window)).astype(np.float32)

    def build(t: Tape) -> Value:
        return conv2d(t.input(x), t.parameter(k), padding=padding, stride=stride)

    network, y = Tape.record(build, element=f32)
    composed = network.forward(network.parameters()).of(y)
    lowered = network.entry(y).numerics(Numerics.EXACT).lower()
    assert kinds(lowered.patterns()) == [Formula.WINDOW_PRODUCT]
    assert same_bits(lowered.forward(network.parameters()).of(y), composed)


@settings(max_examples=20)
@given(size=st.integers(2, 3), stride=st.integers(1, 3), side=st.integers(3, 8), seed=st.integers(0, 1000))
def test_max_pooled_kernel_equals_composition(size: int, stride: int, side: int, seed: int) -> None:
    if size > side:
        return
    rng = np.random.default_rng(seed)
    # Ties and signed zeros: maximum keeps the left operand's bits, the walk must too.
    x = rng.choice(np.array([-1.0, -0.0, 0.0, 1.0, 2.5]), size=(2, 2, side, side))

    network, y = Tape.record(lambda t: max_pool(t.input(x), size, stride), element=f64)
    composed = network.forward(network.parameters()).of(y)
    lowered = network.entry(y).lower()
    assert kinds(lowered.patterns()) == [Formula.REDUCE_WINDOW]
    assert same_bits(lowered.forward(network.parameters()).of(y), composed)
    direct = pooling.max_pooled(x, size, stride, f64)
    assert np.array_equal(direct.view(np.uint64), composed.bits())


@settings(max_examples=15)
@given(batch=st.integers(1, 5), features=st.integers(1, 6), seed=st.integers(0, 1000))
def test_batch_normalized_kernel_equals_composition(batch: int, features: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, features)) * 3.0

    def build(t: Tape) -> tuple[Value, Value, Value]:
        out = batch_norm_training(t.input(x), t.parameter(rng.standard_normal(features)), t.parameter(np.zeros(features)))
        return out.output, out.mean, out.variance

    for element in (f32, f64):
        network, (y, mean, variance) = Tape.record(build, element=element)
        oracle = network.forward(network.parameters())
        for numerics in (Numerics.EXACT, Numerics.FAST):
            lowered = network.entry(y).observe(mean, variance).numerics(numerics).lower()
            assert kinds(lowered.patterns()) == [Formula.BATCH_NORM_TRAINING]
            if numerics is Numerics.EXACT:
                run = lowered.forward(network.parameters())
                for symbol in (y, mean, variance):
                    assert same_bits(run.of(symbol), oracle.of(symbol))


def hand_rolled(t: Tape, x: Value, k: Value) -> Value:
    """A convolution and pool written by hand with the same primitives, no facade."""
    padded = x.pad(2, 1, 9).pad(3, 1, 9)
    cols = padded.unfold(2, 3, 1).unfold(4, 3, 1).permute((0, 2, 4, 1, 3, 5)).reshape((2 * 7 * 7, 2 * 9))
    out = cols.matmul(k).reshape((2, 7, 7, 4)).permute((0, 3, 1, 2))
    lanes = out.narrow(2, 0, 6).narrow(3, 0, 6).unfold(2, 2, 2).unfold(4, 2, 2)
    lanes = lanes.permute((0, 1, 2, 4, 3, 5)).reshape((2, 4, 3, 3, 4))
    best = lanes.narrow(4, 0, 1)
    for j in range(1, 4):
        best = best.maximum(lanes.narrow(4, j, 1))
    return best.reshape((2, 4, 3, 3)).sum()


def test_hand_rolled_recording_matches_by_structure() -> None:
    rng = np.random.default_rng(3)
    network, loss = Tape.record(
        lambda t: hand_rolled(t, t.input(rng.standard_normal((2, 2, 7, 7))), t.parameter(rng.standard_normal((18, 4)))),
        element=f32,
    )
    lowered = network.entry(loss).numerics(Numerics.EXACT).lower()
    assert kinds(lowered.patterns()) == [Formula.WINDOW_PRODUCT, Formula.REDUCE_WINDOW]
    assert same_bits(lowered.forward(network.parameters()).of(loss), network.forward(network.parameters()).of(loss))


def test_balanced_fold_is_a_documented_false_negative() -> None:
    def build(t: Tape) -> Value:
        x = t.input(np.zeros((1, 1, 4, 4)))
        lanes = x.unfold(2, 2, 2).unfold(4, 2, 2).permute((0, 1, 2, 4, 3, 5)).reshape((1, 1, 2, 2, 4))
        n = [lanes.narrow(4, j, 1) for j in range(4)]
        return n[0].maximum(n[1]).maximum(n[2].maximum(n[3])).reshape((1, 1, 2, 2))

    network, y = Tape.record(build)
    assert network.entry(y).lower().candidates() == []


def test_readable_interior_blocks_unless_named_result() -> None:
    network, s = convnet()
    # The mean is a named result: observing it keeps the batch-norm match.
    with_mean = network.entry(s["loss"]).observe(s["mean"]).lower()
    assert Formula.BATCH_NORM_TRAINING in kinds(with_mean.patterns())
    # An unnamed node of the convolution (its shared patch matrix) made readable blocks that match only.
    patches = next(m for m in with_mean.candidates() if m.kind is Formula.WINDOW_PRODUCT).shared[0]
    blocked = network.entry(s["loss"]).observe(network.symbol(patches)).lower()
    assert Formula.WINDOW_PRODUCT not in kinds(blocked.candidates())
    assert kinds(blocked.patterns()) == [Formula.REDUCE_WINDOW, Formula.BATCH_NORM_TRAINING]


def test_engine_backward_plans_elect_nothing_and_gradients_still_agree() -> None:
    network, s = convnet()
    retain = network.entry(s["loss"]).backward().numerics(Numerics.EXACT).lower()
    assert retain.patterns() == [] and retain.candidates() != []
    run = retain.forward(network.parameters())
    ours = run.backward(s["loss"]).of(s["k"])
    theirs = network.forward(network.parameters()).backward(s["loss"]).of(s["k"])
    assert same_bits(ours, theirs)
    longer, adjoints = gradient(network, s["loss"], [s["k"]])
    step = longer.entry(adjoints.roots()).numerics(Numerics.EXACT).lower()
    assert Formula.WINDOW_KERNEL_GRADIENT in kinds(step.patterns())
    assert same_bits(step.forward(longer.parameters()).of(adjoints.of(s["k"])), theirs)


def test_batch_norm_inference_is_a_candidate_without_home_action() -> None:
    rng = np.random.default_rng(1)

    def build(t: Tape) -> Value:
        x = t.input(rng.standard_normal((4, 3)))
        mean, variance = t.parameter(np.zeros(3)), t.parameter(np.ones(3))
        return batch_norm(x, t.parameter(np.ones(3)), t.parameter(np.zeros(3)), mean=mean, variance=variance)

    network, y = Tape.record(build, element=f64)
    lowered = network.entry(y).lower()
    assert kinds(lowered.candidates()) == [Formula.BATCH_NORM_INFERENCE]
    assert lowered.patterns() == []
    match = lowered.candidates()[0]
    assert isinstance(match, BatchNormInference) and not match.has_home_kernel
    assert list(match.fields)[:6] == ["input", "scale", "shift", "epsilon", "mean", "variance"]
    assert match.named_results == () and {match.mean, match.variance}.isdisjoint(match.nodes)


def test_matches_are_frozen_values_with_a_read_only_fields_view() -> None:
    import attrs

    network, s = convnet()
    window, pool, norm = network.entry(s["loss"]).lower().candidates()
    assert isinstance(window, WindowProduct) and isinstance(pool, ReduceWindow)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        pool.size = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        pool.fields["size"] = 3  # type: ignore[index]
    # The view is the typed fields in declaration order: what describe prints.
    assert list(pool.fields) == ["source", "size", "stride", "batch", "channels", "height", "width"]
    assert pool.describe().endswith(" ".join(f"{k}={v}" for k, v in pool.fields.items()))
    assert list(norm.fields)[-2:] == ["mean_count", "variance_count"]
    assert attrs.evolve(window, bias=None).reads() == (window.source, window.kernel)


def test_describe_shows_fused_groups() -> None:
    network, s = convnet()
    text = network.entry(s["loss"]).lower().describe()
    assert "fused 3 groups" in text and "<- window_product" in text and " fused" in text
    assert "written back, freed after" in text


@pytest.mark.parametrize("numerics", [Numerics.EXACT, Numerics.FAST])
@pytest.mark.parametrize("retain", [False, True])
def test_generated_program_and_step_loop_agree_bit_for_bit(
    numerics: Numerics, retain: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small plans run as one generated function, large ones through the step loop: both
    # must give the same bits, keep the same values readable and free the same ones.
    import topos.stages.execute as execute_module

    network, s = convnet()
    longer, adjoints = gradient(network, s["loss"], [s["k"]])
    entry = longer.entry(adjoints.roots()).observe(s["mean"], s["pooled"]).numerics(numerics)
    if retain:
        entry = entry.backward()
    generated = entry.lower()
    monkeypatch.setattr(execute_module, "STRAIGHT_LINE_LIMIT", 0)
    looped = entry.lower()
    assert generated._program.function is not None and looped._program.function is None
    parameters = longer.parameters()
    first, second = generated.forward(parameters), looped.forward(parameters)
    for symbol in (*adjoints.roots(), s["mean"], s["pooled"]):
        assert same_bits(first.of(symbol), second.of(symbol))
    held = [v is not None for v in first.values()]
    assert held == [v is not None for v in second.values()]
    if numerics is Numerics.EXACT:
        oracle = longer.forward(parameters)
        assert same_bits(first.of(adjoints.of(s["k"])), oracle.of(adjoints.of(s["k"])))
    if retain:
        assert same_bits(first.backward(s["loss"]).of(s["k"]), second.backward(s["loss"]).of(s["k"]))


def test_generated_program_runs_the_fused_kernels_like_the_step_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    import topos.stages.execute as execute_module

    network, s = convnet()
    entry = network.entry(s["loss"]).observe(s["mean"], s["variance"]).numerics(Numerics.EXACT)
    generated = entry.lower()
    assert kinds(generated.patterns()) == [
        Formula.WINDOW_PRODUCT, Formula.REDUCE_WINDOW, Formula.BATCH_NORM_TRAINING
    ]
    monkeypatch.setattr(execute_module, "STRAIGHT_LINE_LIMIT", 0)
    looped = entry.lower()
    parameters = network.parameters()
    first, second = generated.forward(parameters), looped.forward(parameters)
    oracle = network.forward(parameters)
    for symbol in (s["loss"], s["mean"], s["variance"]):
        assert same_bits(first.of(symbol), second.of(symbol))
        assert same_bits(first.of(symbol), oracle.of(symbol))
