"""Raises: each catalog idiom of a plan becomes one StableHLO operation, verifies, and runs on
XLA within the envelope of the composed interpreter run; the im2col chain never crosses.

Data stay in [0.25, 2] in magnitude (no denormals) and every argument has its own seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from topos import Network, Symbol, Tape, Value, bf16, f32, xla
from topos.ir.element import ElementType
from topos.nn.functional import batch_norm, batch_norm_training, conv2d, max_pool


def data(shape: tuple[int, ...], seed: int, positive: bool = False) -> Any:
    rng = np.random.default_rng(seed)
    magnitude = rng.uniform(0.25, 2.0, size=shape)
    return magnitude if positive else magnitude * rng.choice([-1.0, 1.0], size=shape)


def convnet(t: Tape) -> list[Value]:
    x = t.input(data((2, 3, 8, 8), 1))
    kernel, bias = t.parameter(data((4, 3, 3, 3), 2) * 0.3), t.parameter(data((4,), 3))
    pooled = max_pool(conv2d(x, kernel, bias, stride=1, padding=1), 2)
    flat = pooled.reshape((2, 64))
    normed = batch_norm_training(flat, t.parameter(data((64,), 4, True)), t.parameter(data((64,), 5)))
    inferred = batch_norm(
        flat, t.parameter(data((64,), 6, True)), t.parameter(data((64,), 7)),
        mean=t.input(data((64,), 8)), variance=t.input(data((64,), 9, True)),
    )  # fmt: skip
    loss = (normed.output * inferred).sum()
    return [loss, normed.mean, normed.variance, pooled]


RAISED = {
    "stablehlo.convolution": 1,
    '"stablehlo.reduce_window"': 1,
    '"stablehlo.batch_norm_training"': 1,
    '"stablehlo.batch_norm_inference"': 1,
}


def lowered(element: ElementType) -> tuple[Network, list[Symbol], Any]:
    network, roots = Tape.record(convnet, element=element)
    return network, list(roots), network.entry(roots).lower()


@pytest.mark.parametrize("element", [f32, bf16], ids=str)
def test_every_idiom_raises_to_one_operation_and_verifies(element: ElementType) -> None:
    _, _, plan = lowered(element)
    assert sorted(m.kind.name for m in plan.candidates()) == [
        "BATCH_NORM_INFERENCE", "BATCH_NORM_TRAINING", "REDUCE_WINDOW", "WINDOW_PRODUCT",
    ]  # fmt: skip
    text = plan.emit_stablehlo()
    for operation, count in RAISED.items():
        assert text.count(operation) == count, operation
    # The im2col chain (unfold -> gather, its matmul -> dot_general) never crosses.
    assert "stablehlo.gather" not in text and "dot_general" not in text
    verdict = xla.verify(text)
    assert verdict.ok, verdict.message


def test_raised_module_runs_on_xla_within_the_envelope() -> None:
    network, roots, plan = lowered(f32)
    got = xla.XlaExecutable.of_plan(plan).forward(network.parameters(), {})
    want = network.forward(network.parameters(), {})
    eps = float(np.finfo(np.float32).eps)
    for symbol in roots:
        a, b = got.of(symbol).numpy().astype(np.float64), want.of(symbol).numpy().astype(np.float64)
        # Convolution sums 27 products (|term| <= 2*0.6) in XLA's order; batch-norm over a batch
        # of 2 divides by a deviation that can be as small as the spread of two values, and the
        # loss sums 128 such terms: 2^12 eps relative to the largest magnitude covers it.
        scale = max(1.0, float(np.max(np.abs(b))))
        assert np.max(np.abs(a - b)) <= 4096 * eps * scale, symbol


def test_named_results_of_a_raise_are_readable_and_the_pool_matches_exactly() -> None:
    network, roots, plan = lowered(f32)
    executable = xla.XlaExecutable.of_plan(plan)
    got = executable.forward(network.parameters(), {})
    want = network.forward(network.parameters(), {})
    # Pooled values are convolution outputs (27-term sums, |term| <= 1.2): within 1e-5.
    assert np.max(np.abs(got.of(roots[3]).numpy() - want.of(roots[3]).numpy())) <= 1e-5
    # The mean is a named result the raise writes back: a 2-term average of pooled values.
    assert np.max(np.abs(got.of(roots[1]).numpy() - want.of(roots[1]).numpy())) <= 1e-5


def test_bf16_raises_compute_in_f32_and_convert_back() -> None:
    network, roots, plan = lowered(bf16)
    text = plan.emit_stablehlo()
    assert "tensor<2x3x8x8xf32>" in text and "tensor<2x64xbf16>" in text
    got = xla.XlaExecutable.of_plan(plan).forward(network.parameters(), {})
    want = network.forward(network.parameters(), {})
    # bf16 keeps 8 bits: one rounding each side, through batch-norm of a batch of 2, 2^-4 relative.
    scale = max(1.0, float(np.max(np.abs(want.of(roots[2]).numpy().astype(np.float64)))))
    difference = np.abs(got.of(roots[2]).numpy().astype(np.float64) - want.of(roots[2]).numpy().astype(np.float64))
    assert np.max(difference) <= 2.0**-4 * scale


def test_a_plan_without_matches_emits_the_composition() -> None:
    def build(t: Tape) -> list[Value]:
        return [max_pool(t.input(data((1, 1, 4, 4), 1)), 2).sum()]

    network, roots = Tape.record(build)
    plan = network.entry(list(roots)).lower()
    composed = xla.XlaExecutable.of_network(network, list(roots)).text
    assert "reduce_window" in plan.emit_stablehlo() and "reduce_window" not in composed
    assert xla.verify(composed).ok
