"""Training plans fuse the max-pool: its forward and the maximum rule's backward, as a pair.

A step over ``max_pool`` lowered over ``adjoints.roots()`` elects ``reduce_window`` and
``reduce_window_gradient`` (the lanes and running maxima are shared between them and never
materialized); under ``Numerics.EXACT`` the fused plan, the composed plan (``fuse=False``)
and the engine's backward agree bit for bit (f32, f64 and bf16), ties, signed zeros,
infinities and NaNs included. The emitted module raises the backward to one ``stablehlo.select_and_scatter``,
whose tie rule (the earliest maximum in row-major window order) is the recorded one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import Network, Numerics, Symbol, Tape, Tensor, Value, bf16, f32, f64
from topos.ir import ops
from topos.ir.element import ElementType
from topos.ir.graph import ancestors
from topos.kernels.dispatch import Backend, Formula, tallied
from topos.nn import max_pool
from topos.stages.emission import emission, emit_network
from topos.stages.fusion import ReduceWindow, ReduceWindowGradient, consumers_of, elect
from topos.stages.gradient import Adjoints, gradient
from topos.stages.plan import Entry, Plan, plan

Array = np.ndarray[Any, Any]

POOL_KINDS = [Formula.REDUCE_WINDOW, Formula.REDUCE_WINDOW_GRADIENT]
# Few distinct values, so windows tie often; both zeros, so ties between -0 and +0 happen too.
TIED = [-2.0, -1.0, -0.0, 0.0, 1.0, 2.0]
EDGES = [np.inf, -np.inf, np.nan]


def same_bits(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.bits(), b.bits()))


def pooled_step(
    element: ElementType, x: Array, weights: Array, size: int, stride: int
) -> tuple[Network, Symbol, Symbol, Network, Adjoints]:
    """``sum(max_pool(x) * weights)`` and its gradient by ``x``: the pool's ``g`` is ``weights``."""

    def build(t: Tape) -> tuple[Value, Value]:
        source = t.parameter(x)
        return (max_pool(source, size, stride) * t.input(weights)).sum(), source

    network, (loss, source) = Tape.record(build, element=element)
    longer, adjoints = gradient(network, loss, [source])
    return network, loss, source, longer, adjoints


def lowered(longer: Network, adjoints: Adjoints, *, fuse: bool = True) -> Plan:
    return plan(longer, Entry(tuple(adjoints.roots())).with_numerics(Numerics.EXACT), fuse=fuse)


@st.composite
def pools(draw: st.DrawFn, edges: bool) -> tuple[Array, Array, int, int]:
    size = draw(st.integers(2, 3))
    stride = draw(st.integers(1, 3))
    height, width = draw(st.integers(size, 7)), draw(st.integers(size, 7))
    batch, channels = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    values = st.sampled_from(TIED + EDGES) if edges else st.sampled_from(TIED)
    x = np.array(draw(st.lists(values, min_size=batch * channels * height * width, max_size=batch * channels * height * width)))
    out_h, out_w = (height - size) // stride + 1, (width - size) // stride + 1
    count = batch * channels * out_h * out_w
    weights = np.array(draw(st.lists(values, min_size=count, max_size=count)))
    return (
        x.reshape(batch, channels, height, width), weights.reshape(batch, channels, out_h, out_w), size, stride
    )  # fmt: skip


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=["f32", "f64", "bf16"])
@settings(max_examples=40, deadline=None)
@given(case=pools(edges=True))
def test_fused_pool_gradient_equals_composed_and_engine_bitwise(
    element: ElementType, case: tuple[Array, Array, int, int]
) -> None:
    x, weights, size, stride = case
    network, loss, source, longer, adjoints = pooled_step(element, x, weights, size, stride)
    fused_plan, composed = lowered(longer, adjoints), lowered(longer, adjoints, fuse=False)
    assert [m.kind for m in fused_plan.patterns()] == POOL_KINDS
    assert composed.patterns() == []
    parameters = longer.parameters()
    with tallied() as services:
        ours = fused_plan.forward(parameters)
    served = {(row.formula, row.backend): row.count for row in services}
    assert served[Formula.REDUCE_WINDOW_GRADIENT, Backend.FUSED] == 1
    assert served[Formula.REDUCE_WINDOW, Backend.FUSED] == 1
    theirs = composed.forward(parameters)
    engine = network.forward(network.parameters()).backward(loss)
    (symbol,) = adjoints.gradients()
    assert same_bits(ours.of(adjoints.target), theirs.of(adjoints.target))
    assert same_bits(ours.of(symbol), theirs.of(symbol))
    assert same_bits(ours.of(symbol), engine.of(source))


@settings(max_examples=30, deadline=None)
@given(case=pools(edges=False))
def test_the_gradient_goes_to_the_first_maximum_of_each_window(case: tuple[Array, Array, int, int]) -> None:
    """The recorded rule, stated independently: each window sends its ``g`` to the first
    position (row-major) holding its maximum; overlapping windows add."""
    x, weights, size, stride = case
    _, _, _, longer, adjoints = pooled_step(f64, x, weights, size, stride)
    got = lowered(longer, adjoints).forward(longer.parameters()).of(adjoints.gradients()[0]).numpy()
    expected = np.zeros(x.shape)
    batch, channels, out_h, out_w = weights.shape
    for b, c, i, j in np.ndindex(batch, channels, out_h, out_w):
        window = x[b, c, i * stride : i * stride + size, j * stride : j * stride + size]
        row, column = divmod(int(np.argmax(window)), size)  # argmax returns the first maximum
        expected[b, c, i * stride + row, j * stride + column] += weights[b, c, i, j]
    assert np.array_equal(got, expected)  # small integers: every sum is exact


def test_the_pair_is_elected_together_or_not_at_all() -> None:
    rng = np.random.default_rng(5)
    _, _, _, longer, adjoints = pooled_step(f64, rng.standard_normal((2, 2, 6, 6)), rng.standard_normal((2, 2, 3, 3)), 2, 2)
    pool = lowered(longer, adjoints).candidates()
    forward, backward = pool
    assert isinstance(forward, ReduceWindow) and isinstance(backward, ReduceWindowGradient)
    # Both recompute the lanes and running maxima from the source: the same shared nodes.
    assert forward.shared == backward.shared and forward.reads() == (backward.source,)
    assert backward.reads() == (backward.source, backward.gradient)
    wanted = ancestors(longer, [longer.index(s, "root") for s in adjoints.roots()])
    consumers = consumers_of(longer, wanted)
    # Alone, the forward leaves its lanes to the maximum rule's steps: not closed, dropped.
    assert elect(pool, [Formula.REDUCE_WINDOW], consumers) == []
    assert elect(pool, [Formula.REDUCE_WINDOW_GRADIENT], consumers) == []
    assert elect(pool, POOL_KINDS, consumers) == [forward, backward]
    assert backward.describe().startswith(f"reduce_window_gradient at %{backward.root} over {len(backward.nodes)} nodes: ")


def test_a_lane_read_elsewhere_keeps_the_pool_composed() -> None:
    rng = np.random.default_rng(6)

    def build(t: Tape) -> tuple[Value, Value]:
        x = t.parameter(rng.standard_normal((1, 2, 4, 4)))
        pooled = max_pool(x, 2)
        return (pooled * pooled).sum(), x

    network, (loss, x) = Tape.record(build, element=f64)
    longer, adjoints = gradient(network, loss, [x])
    # Reading a running maximum as a result makes it readable: neither side may skip it.
    first_maximum = next(i for i, node in enumerate(longer.nodes_) if isinstance(node.op, ops.Maximum))
    readable = longer.entry([*adjoints.roots(), longer.symbol(first_maximum)]).numerics(Numerics.EXACT).lower()
    assert readable.patterns() == []
    assert [m.kind for m in longer.entry(adjoints.roots()).lower().patterns()] == POOL_KINDS


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=["f32", "f64", "bf16"])
@pytest.mark.parametrize(("size", "stride", "side"), [(2, 2, 6), (3, 2, 7), (2, 1, 5), (3, 3, 8)])
def test_xla_select_and_scatter_splits_ties_as_recorded(element: ElementType, size: int, stride: int, side: int) -> None:
    from topos.xla import XlaExecutable

    rng = np.random.default_rng(side + size)
    x = rng.choice(TIED, (2, 3, side, side + 1))
    out_h, out_w = (side - size) // stride + 1, (side + 1 - size) // stride + 1
    weights = rng.choice(TIED, (2, 3, out_h, out_w))
    _, _, _, longer, adjoints = pooled_step(element, x, weights, size, stride)
    exact = lowered(longer, adjoints)
    text = emission(exact)
    assert text.count('"stablehlo.select_and_scatter"') == 1 and text.count('"stablehlo.reduce_window"') == 1
    composed_text = emit_network(longer, list(adjoints.roots()))
    assert "stablehlo.concatenate" in composed_text and "stablehlo.concatenate" not in text
    assert "stablehlo.slice" not in text
    ours = XlaExecutable.of_plan(exact).forward(longer.parameters())
    theirs = exact.forward(longer.parameters())
    for symbol in (adjoints.target, *adjoints.gradients()):
        # Small integers: every sum is exact in any order, so the envelope is zero here and
        # a tie sent to another lane would show as a whole unit.
        assert np.array_equal(ours.of(symbol).numpy(), theirs.of(symbol).numpy()), symbol
