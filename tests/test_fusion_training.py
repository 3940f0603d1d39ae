"""Training plans fuse the convolution (its product, kernel gradient and input gradient) and the max-pool.

A LeNet-like step (conv-relu-pool-conv-relu-pool-linear) lowered over ``adjoints.roots()``
elects the window idioms of the forward and of the backward; under ``Numerics.EXACT`` the
fused plan, the composed plan (``fuse=False``) and the engine's backward agree bit for bit,
and the emitted module raises each convolution and each of its gradients to
``stablehlo.convolution``, each max-pool to ``reduce_window`` and its gradient to
``select_and_scatter`` (``tests/test_fusion_pool_training.py`` tests the pool pair alone).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import Network, Numerics, Symbol, Tape, Tensor, Value, bf16, f32, f64
from topos.ir.element import ElementType
from topos.ir.graph import ancestors
from topos.kernels.dispatch import Backend, Formula, tallied
from topos.nn import conv2d, max_pool
from topos.stages.emission import emission, emit_network
from topos.stages.fusion import (
    CATALOG,
    PatternMatch,
    WindowInputGradient,
    WindowKernelGradient,
    WindowProduct,
    consumers_of,
    elect,
)
from topos.stages.fusion.windows import patch_columns, window_input_gradient, window_kernel_gradient
from topos.stages.gradient import Adjoints, gradient
from topos.stages.plan import Entry, Plan, plan

Array = np.ndarray[Any, Any]

WINDOW_KINDS = {Formula.WINDOW_PRODUCT, Formula.WINDOW_INPUT_GRADIENT, Formula.WINDOW_KERNEL_GRADIENT}
EVERY_KIND = [idiom.kind for idiom in CATALOG]


def same_bits(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.bits(), b.bits()))


def lenet(
    element: ElementType, *, batch: int = 3, side: int = 12, stride: int = 1, padding: int = 1, seed: int = 0
) -> tuple[Network, Symbol, list[Symbol]]:
    """conv(pad)-relu-pool-conv-relu-pool-linear with a cross-entropy loss."""
    rng = np.random.default_rng(seed)

    def build(t: Tape) -> tuple[Value, list[Value]]:
        x = t.input(rng.standard_normal((batch, 2, side, side)))
        labels = t.input(np.eye(5)[rng.integers(0, 5, batch)])
        k1 = t.parameter(rng.standard_normal((3, 2, 3, 3)) * 0.3)
        c1 = t.parameter(rng.standard_normal(3) * 0.1)
        k2 = t.parameter(rng.standard_normal((4, 3, 3, 2)) * 0.3)
        c2 = t.parameter(rng.standard_normal(4) * 0.1)
        h = max_pool(conv2d(x, k1, c1, stride=stride, padding=padding).relu(), 2)
        h = max_pool(conv2d(h, k2, c2, padding=padding).relu(), 2)
        flat = h.reshape((batch, h.shape.volume // batch))
        w = t.parameter(rng.standard_normal((flat.shape[1], 5)) * 0.3)
        logits = flat.matmul(w)
        return -(logits.log_softmax(1) * labels).sum(), [k1, c1, k2, c2, w]

    network, (loss, params) = Tape.record(build, element=element)
    return network, loss, params


def training_plan(element: ElementType, numerics: Numerics, **shape: int) -> tuple[Network, Adjoints, Plan, Network, Symbol, list[Symbol]]:
    network, loss, params = lenet(element, **shape)
    longer, adjoints = gradient(network, loss, params)
    return longer, adjoints, longer.entry(adjoints.roots()).numerics(numerics).lower(), network, loss, params


@pytest.mark.parametrize("element", [f32, f64], ids=["f32", "f64"])
@pytest.mark.parametrize(("stride", "padding", "side"), [(1, 1, 12), (2, 0, 20), (1, 2, 12)])
def test_training_plan_fuses_and_equals_composed_and_engine_bitwise(
    element: ElementType, stride: int, padding: int, side: int
) -> None:
    longer, adjoints, fused_plan, network, loss, params = training_plan(
        element, Numerics.EXACT, stride=stride, padding=padding, side=side
    )
    elected = [m.kind for m in fused_plan.patterns()]
    # Two products, two kernel gradients, and the second layer's input gradient (the first
    # layer's source is an input, whose gradient the step does not want).
    assert sorted(k.value for k in elected if k in WINDOW_KINDS) == sorted(
        ["window_product"] * 2 + ["window_kernel_gradient"] * 2 + ["window_input_gradient"]
    )
    # Each max-pool elects its forward and its source gradient as a pair.
    assert sorted(k.value for k in elected if k not in WINDOW_KINDS) == ["reduce_window"] * 2 + ["reduce_window_gradient"] * 2
    described = fused_plan.describe()
    assert "<- window_input_gradient of" in described and "<- window_kernel_gradient of" in described
    composed = plan(longer, Entry(tuple(adjoints.roots())).with_numerics(Numerics.EXACT), fuse=False)
    assert composed.patterns() == []
    parameters = longer.parameters()
    with tallied() as services:
        ours = fused_plan.forward(parameters)
    served = {(row.formula, row.backend): row.count for row in services}
    assert served[Formula.WINDOW_INPUT_GRADIENT, Backend.FUSED] == 1
    assert served[Formula.WINDOW_KERNEL_GRADIENT, Backend.FUSED] == 2
    assert served[Formula.REDUCE_WINDOW_GRADIENT, Backend.FUSED] == 2
    theirs = composed.forward(parameters)
    engine = network.forward(network.parameters()).backward(loss)
    assert same_bits(ours.of(adjoints.target), theirs.of(adjoints.target))
    for parameter, symbol in zip(params, adjoints.gradients(), strict=True):
        assert same_bits(ours.of(symbol), theirs.of(symbol)), symbol
        assert same_bits(ours.of(symbol), engine.of(parameter)), symbol


def test_fast_training_plan_fuses_within_the_envelope() -> None:
    longer, adjoints, fast, *_ = training_plan(f32, Numerics.FAST)
    exact = longer.entry(adjoints.roots()).numerics(Numerics.EXACT).lower()
    assert {m.kind for m in fast.patterns()} >= WINDOW_KINDS
    parameters = longer.parameters()
    ours, theirs = fast.forward(parameters), exact.forward(parameters)
    for symbol in adjoints.gradients():
        a, b = ours.of(symbol).numpy(), theirs.of(symbol).numpy()
        # Native gemm may reassociate the products' inner sums (tens of terms): a few ulps.
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def _emission_counts(text: str) -> tuple[int, int]:
    return text.count("stablehlo.convolution"), text.count("stablehlo.slice") + text.count("stablehlo.concatenate")


@pytest.mark.parametrize(("stride", "padding", "side"), [(1, 1, 12), (2, 0, 20), (1, 2, 12)])
def test_emitted_training_module_raises_the_convolutions(stride: int, padding: int, side: int) -> None:
    longer, adjoints, lowered, *_ = training_plan(f32, Numerics.EXACT, stride=stride, padding=padding, side=side)
    raised = emission(lowered)
    convolutions, moves = _emission_counts(raised)
    assert convolutions == 5
    _, composed_moves = _emission_counts(emit_network(longer, list(adjoints.roots())))
    # The patch chains, the folds and the max-pools' lanes are gone: each pool and its
    # gradient are one reduce_window and one select_and_scatter.
    assert moves < composed_moves and "stablehlo.concatenate" not in raised
    assert raised.count('"stablehlo.reduce_window"') == 2 and raised.count('"stablehlo.select_and_scatter"') == 2
    slices = [line for line in raised.splitlines() if "stablehlo.slice" in line]
    assert all("_convolution_slice = stablehlo.slice" in line for line in slices)
    # The first layer's kernel gradient dilates its window by that layer's stride.
    assert f"rhs_dilate = [{stride}, {stride}]" in raised
    assert raised == emission(lowered)


@pytest.mark.parametrize("element", [f32, f64], ids=["f32", "f64"])
@pytest.mark.parametrize(("stride", "padding", "side"), [(1, 1, 13), (2, 0, 21), (2, 2, 13)])
def test_xla_road_runs_the_raised_training_step_within_the_envelope(
    element: ElementType, stride: int, padding: int, side: int
) -> None:
    from topos.xla import XlaExecutable

    longer, adjoints, lowered, *_ = training_plan(element, Numerics.EXACT, stride=stride, padding=padding, side=side)
    parameters = longer.parameters()
    ours = XlaExecutable.of_plan(lowered).forward(parameters)
    theirs = lowered.forward(parameters)
    # XLA's convolutions sum in their own order: the envelope of a few-ulp reassociation
    # over sums of at most a few hundred terms, relative to the gradient's scale.
    tolerance = 1e-5 if element is f32 else 1e-12
    for symbol in (adjoints.target, *adjoints.gradients()):
        a, b = ours.of(symbol).numpy(), theirs.of(symbol).numpy()
        scale = max(1.0, float(np.max(np.abs(b))))
        assert float(np.max(np.abs(a - b))) <= tolerance * scale, symbol


@settings(max_examples=20, deadline=None)
@given(
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.integers(1, 3),
    padding=st.integers(0, 2),
    side=st.integers(4, 8),
    seed=st.integers(0, 1000),
)
def test_gradient_kernels_equal_their_compositions(
    kernel: tuple[int, int], stride: int, padding: int, side: int, seed: int
) -> None:
    """The home kernels against the recorded compositions they replace, interpreted.

    Under the Exact posture: outside one the kernels' products are offered to BLAS, whose
    order is the library's and the CPU's (it matched only where OpenBLAS was pinned to a
    kernel that happened to add in the written order)."""
    with Numerics.exactly():
        _gradient_kernels_against_compositions(kernel, stride, padding, side, seed)


def _gradient_kernels_against_compositions(
    kernel: tuple[int, int], stride: int, padding: int, side: int, seed: int
) -> None:
    kh, kw = kernel
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 2, side, side)).astype(np.float32)
    out_h = (side + 2 * padding - kh) // stride + 1
    out_w = (side + 2 * padding - kw) // stride + 1
    g = rng.standard_normal((2 * out_h * out_w, 3)).astype(np.float32)
    k = rng.standard_normal((3, 2 * kh * kw)).astype(np.float32)
    source = Tensor(x, f32)
    if padding:
        source = source.pad(2, padding, side + 2 * padding).pad(3, padding, side + 2 * padding)
    windows = source.unfold(2, kh, stride).unfold(4, kw, stride)
    rows = windows.permute((0, 2, 4, 1, 3, 5)).reshape((2 * out_h * out_w, 2 * kh * kw))
    expected_kernel = rows.permute((1, 0)).matmul(Tensor(g, f32))
    # The column fill is the recorded patch matrix, transposed, entry for entry.
    assert np.array_equal(patch_columns(x, kh, kw, stride, padding, f32).T, rows.numpy())
    got_kernel = window_kernel_gradient(x, g, kh, kw, stride, padding, f32)
    assert np.array_equal(got_kernel.view(np.uint32), expected_kernel.bits())
    spread = Tensor(g, f32).matmul(Tensor(k, f32)).reshape((2, out_h, out_w, 2, kh, kw)).permute((0, 3, 1, 4, 2, 5))
    folded = spread.fold(4, kw, stride, 1, side + 2 * padding).fold(2, kh, stride, 1, side + 2 * padding)
    if padding:
        folded = folded.narrow(3, padding, side).narrow(2, padding, side)
    got_input = window_input_gradient(g, k, (2, 2, side, side), kh, kw, stride, padding, f32)
    assert np.array_equal(np.ascontiguousarray(got_input).view(np.uint32), folded.bits())


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=["f32", "f64", "bf16"])
@pytest.mark.parametrize(("kernel", "stride", "padding"), [((3, 2), 1, 1), ((2, 3), 2, 0), ((3, 3), 3, 2)])
def test_input_gradient_folds_keep_the_reference_bits_on_special_values(
    element: ElementType, kernel: tuple[int, int], stride: int, padding: int
) -> None:
    """NaNs with distinct payloads, infinities of both signs and signed zeros in the cotangent:
    the home kernel's folds, which read the product in place, keep the reference folds' bits.

    Every bit but a NaN's sign and payload: where two NaNs meet in an addition, which one
    numpy's loop keeps depends on the loop (a strided run or a dense one) and on its CPU
    dispatch (at numpy's baseline the two differ), and IEEE 754 leaves it open
    (docs/portability.md). The NaNs' positions are compared, and everything else bit for bit."""
    kh, kw = kernel
    side = 7
    rng = np.random.default_rng(kh * 10 + stride)
    out_h = (side + 2 * padding - kh) // stride + 1
    out_w = (side + 2 * padding - kw) // stride + 1
    g = rng.standard_normal((2 * out_h * out_w, 3))
    g.ravel()[rng.choice(g.size, 12, replace=False)] = [np.inf, -np.inf, 0.0, -0.0] * 3
    quiet = np.array([0x7FC00001, 0xFFC00002, 0x7FC0ABCD], np.uint32).view(np.float32)
    g.ravel()[rng.choice(g.size, 3, replace=False)] = quiet
    k = rng.standard_normal((3, 2 * kh * kw))
    gradient_, kernel_ = element.convert(g), element.convert(k)
    spread = Tensor(gradient_, element).matmul(Tensor(kernel_, element))
    spread = spread.reshape((2, out_h, out_w, 2, kh, kw)).permute((0, 3, 1, 4, 2, 5))
    folded = spread.fold(4, kw, stride, 1, side + 2 * padding).fold(2, kh, stride, 1, side + 2 * padding)
    if padding:
        folded = folded.narrow(3, padding, side).narrow(2, padding, side)
    with np.errstate(all="ignore"):  # plans call home kernels with warnings silenced
        got = window_input_gradient(gradient_, kernel_, (2, 2, side, side), kh, kw, stride, padding, element)
    assert got.flags.c_contiguous and got.dtype == element.dtype
    want = folded.numpy()
    assert np.isnan(want.astype(np.float64)).any()
    nan = np.isnan(want.astype(np.float64))
    assert np.array_equal(np.isnan(got.astype(np.float64)), nan)
    assert got[~nan].tobytes() == want[~nan].tobytes()


def test_kernel_gradient_alone_cannot_skip_a_patch_matrix_the_product_reads() -> None:
    longer, adjoints, lowered, *_ = training_plan(f64, Numerics.EXACT)
    pool = lowered.candidates()
    wanted = ancestors(longer, [longer.index(s, "root") for s in adjoints.roots()])
    consumers = consumers_of(longer, wanted)
    # Without the product in the repertoire its matmul reads the patch matrix as a value:
    # the kernel gradient sharing that chain is dropped, the input gradient stays.
    only_gradients = elect(pool, [Formula.WINDOW_KERNEL_GRADIENT, Formula.WINDOW_INPUT_GRADIENT], consumers)
    assert [m.kind for m in only_gradients] == [Formula.WINDOW_INPUT_GRADIENT]
    # Without consumers an election cannot close a shared chain, so it takes none.
    blind = elect(pool, EVERY_KIND)
    assert all(not m.shared for m in blind)
    both = elect(pool, EVERY_KIND, consumers)
    assert {m.kind for m in both} >= WINDOW_KINDS
    products = [m for m in both if isinstance(m, WindowProduct)]
    gradients = [m for m in both if isinstance(m, WindowKernelGradient)]
    # Each product shares its patch chain with exactly one kernel gradient, and with nothing else.
    assert sorted(m.shared for m in products) == sorted(m.shared for m in gradients)
    exclusive: list[int] = [i for m in both for i in m.exclusive]
    assert len(exclusive) == len(set(exclusive))
    assert all(isinstance(m, PatternMatch) for m in both)


def test_input_gradient_fields_describe_the_transposed_convolution() -> None:
    _, _, lowered, *_ = training_plan(f32, Numerics.EXACT, stride=2, padding=2, side=13)
    (match,) = [m for m in lowered.patterns() if isinstance(m, WindowInputGradient)]
    assert (match.kernel_height, match.kernel_width, match.stride, match.padding) == (3, 2, 1, 2)
    assert (match.batch, match.channels, match.filters) == (3, 3, 4)
    assert match.describe().startswith(f"window_input_gradient at %{match.root} over {len(match.nodes)} nodes: ")
    assert match.reads() == (match.gradient, match.kernel)


def test_pool_free_training_module_has_no_slice_chains() -> None:
    rng = np.random.default_rng(3)

    def build(t: Tape) -> tuple[Value, list[Value]]:
        x = t.input(rng.standard_normal((2, 2, 9, 9)))
        k1, k2 = t.parameter(rng.standard_normal((3, 2, 3, 3))), t.parameter(rng.standard_normal((2, 3, 2, 2)))
        h = conv2d(conv2d(x, k1, padding=1, stride=2).relu(), k2, padding=1)
        return (h * h).sum(), [k1, k2]

    network, (loss, params) = Tape.record(build, element=f64)
    longer, adjoints = gradient(network, loss, params)
    text = emission(longer.entry(adjoints.roots()).numerics(Numerics.EXACT).lower())
    assert text.count("stablehlo.convolution") == 5
    assert "stablehlo.concatenate" not in text
    # The only slices left drop a padding or the rows a stride leaves unread, one per raise at most.
    slices = [line for line in text.splitlines() if "stablehlo.slice" in line]
    assert all("_convolution_slice = stablehlo.slice" in line for line in slices) and len(slices) <= 5
