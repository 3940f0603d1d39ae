"""The element seam: what an ElementType carries, the gemm hook, and a plugin's f16.

A user's element registered by a plugin (``f16`` from ``examples/plugins``: IEEE half
storage, f32 arithmetic and accumulation) must record, run, differentiate and emit like a
built-in; a custom element whose gemm hook answers with the reference kernel must train
bit for bit like f64 (``examples/element_seam.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from topos import (
    ElementError,
    ElementType,
    Network,
    Numerics,
    Symbol,
    Tape,
    Tensor,
    Value,
    bf16,
    f32,
    f64,
)
from topos.backends import reference, xla
from topos.plugins import Registry
from topos.stages.emission import emit_network
from topos.stages.gradient import gradient

Array = np.ndarray[Any, Any]
ROOT = Path(__file__).resolve().parent.parent


def load_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plugin_registry() -> Registry:
    sys.path.insert(0, str(ROOT / "examples" / "plugins"))
    registry = Registry.with_builtins()
    registry.register(importlib.import_module("topos_lion.plugin"), "topos_lion.plugin")
    return registry


REGISTRY = plugin_registry()
F16 = REGISTRY.element_type("f16")


# ----------------------------------------------------------------- what an element carries


def test_the_five_argument_construction_still_works_with_defaults() -> None:
    mine = ElementType("mine", np.float32, np.float32, np.float32, "f32")
    assert mine.emittable and mine.gemm is None and mine == ElementType("mine", np.float32, np.float32, np.float32, "f32")


def test_zero_one_sample_and_literals() -> None:
    assert f32.zero().dtype == np.float32 and float(f32.zero()) == 0.0 and float(bf16.one()) == 1.0
    assert bf16.sample(1.0 / 3.0).dtype == ml_dtypes.bfloat16
    assert F16.sample(0.1).tobytes() == np.float16(0.1).tobytes()
    assert f32.literal(1.0) == "0x3F800000"
    assert f64.literal(-2.0) == "0xC000000000000000"
    assert bf16.literal(1.0) == "0x3F80"
    assert F16.literal(1.0) == "0x3C00"
    assert F16.literal(float("inf")) == "0x7C00"
    assert (bf16.accumulator_mlir, F16.accumulator_mlir, f64.accumulator_mlir) == ("f32", "f32", "f64")


@pytest.mark.parametrize("dtype", [None, np.int32, "not a dtype", np.dtype([("a", np.float32)])])
def test_an_element_needs_a_floating_numpy_dtype(dtype: Any) -> None:
    with pytest.raises(ElementError, match="numpy dtype"):
        ElementType("broken", dtype, np.float32, np.float32, "f32")
    with pytest.raises(ElementError, match="numpy dtype"):
        ElementType("broken", np.float32, np.float32, dtype, "f32")


# ----------------------------------------------------------------- the gemm hook


class Counting:
    def __init__(self, answer: bool = True, shape: tuple[int, ...] | None = None) -> None:
        self.offers: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        self.answer = answer
        self.shape = shape

    def __call__(self, a: Array, b: Array, element: ElementType) -> Array | None:
        self.offers.append((a.shape, b.shape))
        if not self.answer:
            return None
        if self.shape is not None:
            return np.zeros(self.shape)
        return reference.matmul(a, b, element)


def product_graph(element: ElementType) -> tuple[Network, tuple[Symbol, Symbol, Symbol]]:
    def build(tape: Tape) -> tuple[Value, Value, Value]:
        w = tape.parameter(np.array([[0.5, -1.25, 2.0], [0.75, 1.5, -0.5]]))
        x = tape.input(np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.25], [2.0, 2.0]]))
        return w, x, x.matmul(w).tanh().sum()

    return Tape.record(build, element=element)


def test_the_hook_is_offered_every_product_forward_and_backward() -> None:
    hook = Counting()
    element = ElementType("counted", np.float64, np.float64, np.float64, "f64", emittable=False, gemm=hook)
    network, (w, _, loss) = product_graph(element)
    run = network.forward(network.parameters())
    assert hook.offers == [((4, 2), (2, 3))]
    got = run.backward(loss).of(w)
    # Backward offers two products: the cotangent of w (x^T . g) and of x (g . w^T).
    assert sorted(hook.offers) == sorted([((4, 2), (2, 3)), ((2, 4), (4, 3)), ((4, 3), (3, 2))])
    plain, (pw, _, ploss) = product_graph(f64)
    expected = plain.forward(plain.parameters()).backward(ploss).of(pw)
    assert got.numpy().view(np.uint64).tolist() == expected.numpy().view(np.uint64).tolist()


def test_a_declining_hook_leaves_the_product_to_the_kernels() -> None:
    hook = Counting(answer=False)
    element = ElementType("declines", np.float64, np.float64, np.float64, "f64", gemm=hook)
    a = Tensor([[1.0, 2.0]], element=element)
    b = Tensor([[3.0], [4.0]], element=element)
    with Numerics.exactly():
        assert a.matmul(b).tolist() == [[11.0]]
    assert hook.offers == [((1, 2), (2, 1))]


def test_a_hook_answering_the_wrong_shape_is_refused() -> None:
    element = ElementType("wrong", np.float64, np.float64, np.float64, "f64", gemm=Counting(shape=(2, 2)))
    with pytest.raises(ElementError, match=r"wrong: the gemm hook answered shape \[2, 2\] for a product of shape \[1, 1\]"):
        Tensor([[1.0, 2.0]], element=element).matmul(Tensor([[3.0], [4.0]], element=element))


def test_the_element_seam_example_trains_bit_for_bit_like_f64() -> None:
    example = load_example("element_seam")
    audit = example.Audit()
    audited = example.train_product(example.audited_element(audit))
    plain = example.train_product(f64)
    readme = example.train_readme()
    assert audit.offers == 3 * example.STEPS  # one product forward, two backward, per step
    assert audited.element.name == "audited"
    bits = {t.numpy().reshape(()).view(np.uint64).item() for t in (audited, plain, readme)}
    assert len(bits) == 1, [t.scalar() for t in (audited, plain, readme)]
    assert abs(readme.scalar() - 2.0) < 1e-6
    assert example.main() == 0


# ----------------------------------------------------------------- a plugin's f16


def up(a: Any) -> Array:
    out: Array = np.asarray(a, dtype=np.float16).astype(np.float32)
    return out


def down(a: Any) -> Array:
    out: Array = np.asarray(a, dtype=np.float32).astype(np.float16)
    return out


def affine(tape: Tape) -> tuple[Value, Value, Value, Value]:
    w = tape.parameter(np.array([[0.5, -0.25, 1.0], [0.75, 1.0, -0.125]]))
    b = tape.parameter(np.array([0.1, -0.2, 0.3]))
    x = tape.input(np.array([[1.0, 2.0], [-0.5, 0.3]]))
    out = x.matmul(w) + b.broadcast_along(0, 2)
    return w, b, x, (out * out).sum() * 0.5


def test_f16_records_and_runs_like_a_builtin() -> None:
    assert REGISTRY.owner("topos_element_types", "f16") == "topos_lion.plugin"
    network, (_, _, x, loss) = Tape.record(affine, element=F16)
    assert network.element is F16 and all(node.element is F16 for node in network.nodes())
    feeds = {x: np.array([[1.0, 2.0], [-0.5, 0.3]])}
    run = network.forward(network.parameters(), feeds)
    # Independently: each operation computes in f32 and rounds once to f16; the product
    # and the sum fold in f32 from zero in ascending order.
    W, B, X = (np.asarray(a, np.float16) for a in ([[0.5, -0.25, 1.0], [0.75, 1.0, -0.125]], [0.1, -0.2, 0.3],
                                                     [[1.0, 2.0], [-0.5, 0.3]]))
    product = np.zeros((2, 3), np.float32)
    for k in range(2):
        product = product + up(X[:, k : k + 1]) * up(W[k : k + 1, :])
    out = down(up(down(product)) + up(np.broadcast_to(B, (2, 3))))
    squared = down(up(out) * up(out))
    total = np.float32(0.0)
    for value in up(squared).reshape(-1):
        total = np.float32(total + value)
    expected = down(up(down(total)) * np.float32(np.float16(0.5)))
    got = run.of(loss)
    assert got.element is F16
    assert got.numpy().view(np.uint16).tolist() == expected.view(np.uint16).tolist()


def test_f16_differentiates_like_a_builtin() -> None:
    network, (w, b, _, loss) = Tape.record(affine, element=F16)
    grown, adjoints = gradient(network, loss, [w, b])
    parameters = network.parameters()
    run = grown.forward(parameters)
    engine = network.forward(parameters).backward(loss)
    for symbol in (w, b):
        recorded = run.of(adjoints.of(symbol))
        assert recorded.element is F16
        # One derivative rule, two readings: the recorded gradient equals the engine's bits.
        assert recorded.bits().tolist() == engine.of(symbol).bits().tolist()
    # Against the f64 gradient: f16 keeps about 3 decimal digits over these few operations.
    twin, (tw, tb, _, tloss) = Tape.record(affine, element=f64)
    exact = twin.forward(twin.parameters()).backward(tloss)
    for symbol, twin_symbol in ((w, tw), (b, tb)):
        np.testing.assert_allclose(
            engine.of(symbol).numpy().astype(np.float64), exact.of(twin_symbol).numpy(), rtol=1e-2, atol=2e-3
        )


def test_f16_emits_and_runs_on_xla_like_a_builtin() -> None:
    network, (w, b, x, loss) = Tape.record(affine, element=F16)
    grown, adjoints = gradient(network, loss, [w, b])
    text = emit_network(grown, [loss, *adjoints.gradients()])
    assert "tensor<2x3xf16>" in text and "xf32>" in text  # stored in f16, products widened to f32
    assert xla.verify(text).ok
    assert emit_network(grown, [loss, *adjoints.gradients()]) == text
    parameters = grown.parameters()
    run = grown.forward(parameters)
    arrays = [parameters.of(w).numpy(), parameters.of(b).numpy(), np.asarray(grown.payload(x))]
    outputs = xla.run_module(text, *arrays)
    for symbol, out in zip([loss, *adjoints.gradients()], outputs, strict=True):
        expected = run.of(symbol).numpy()
        assert out.dtype == np.float16 and out.shape == expected.shape
        # XLA:CPU is an envelope road (it may fuse multiply-add inside its f32 compute);
        # allow two f16 ulps at each value.
        gap = np.abs(out.astype(np.float64) - expected.astype(np.float64))
        assert np.all(gap <= 2 * np.spacing(np.abs(expected)).astype(np.float64)), (out, expected)


def test_an_element_that_cannot_be_emitted_says_so() -> None:
    from topos.errors import EmissionError

    audited = ElementType("audited", np.float64, np.float64, np.float64, "f64", emittable=False)
    network, (_, _, loss) = product_graph(audited)
    with pytest.raises(EmissionError, match="audited has no StableHLO spelling"):
        emit_network(network, [loss])


def test_f16_trains_with_the_plugin_optimizer_by_name() -> None:
    network, (_, _, _, loss) = Tape.record(affine, element=F16)
    lion = REGISTRY.optimizer("lion")(learning_rate=0.01)
    parameters = network.parameters()
    state = lion.init(parameters)
    first = network.forward(parameters).of(loss).scalar()
    for _ in range(30):
        gradients = network.forward(parameters).backward(loss).parameters(parameters)
        parameters, state = lion.update(gradients, state, parameters)
    assert all(p.element is F16 for _, p in parameters)
    assert all(m.element is F16 for _, m in state.table("momentum"))
    assert network.forward(parameters).of(loss).scalar() < 0.5 * first
