"""The element seam: what an ElementType carries, the gemm hook, and a plugin's f16.

A user's element registered by a plugin (``f16`` from ``examples/plugins``: IEEE half
storage, f32 arithmetic and accumulation) must record, run, plan, differentiate, pass the
gradient checker, round-trip through a checkpoint and emit like a built-in, with nothing
about it written anywhere but on its ``ElementType``; a custom element whose gemm hook
answers with the reference kernel must train bit for bit like f64
(``examples/element_seam.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topos.plugins
from topos import (
    CheckpointError,
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
    xla,
)
from topos import checkpoint as ckpt
from topos.gradcheck import check_grad
from topos.ir.element import element_storing, stablehlo_name, stablehlo_storage
from topos.kernels import reference
from topos.plugins import Registry
from topos.stages.emission import emit_network, literal
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


def test_the_element_seam_example_takes_the_plugin_f16_down_every_road() -> None:
    example = load_example("element_seam")
    f16 = example.plugin_f16()
    assert f16 == F16
    roads = example.f16_roads(f16)
    assert list(roads) == [
        "exact plan == interpreter",
        "recorded gradient == engine",
        "check_grad at tolerance 0.02",
        "checkpoint as F16, bit for bit",
        "StableHLO verifies",
        "runs on XLA within eight f16 ulps",
    ]
    assert all(roads.values()), roads


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


# ----------------------------------------------------------------- knowledge derived on ElementType

FLOATS = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64), np.dtype(ml_dtypes.bfloat16)]


@pytest.fixture
def f16_registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process-wide registry holds the plugin (as an installed entry point would), for one test."""
    monkeypatch.setattr(topos.plugins, "_DEFAULT", [REGISTRY])
    yield


@pytest.fixture
def builtins_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(topos.plugins, "_DEFAULT", [Registry.with_builtins()])
    yield


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_names_on_other_roads_follow_from_the_storage_dtype(dtype: np.dtype[Any]) -> None:
    element = ElementType("probe", dtype, np.float32, np.float32, str(stablehlo_name(dtype)))
    bits = 8 * dtype.itemsize
    ieee = dtype != ml_dtypes.bfloat16
    assert element.safetensors == (f"F{bits}" if ieee else "BF16")
    assert stablehlo_name(dtype) == (f"f{bits}" if ieee else "bf16")
    assert stablehlo_storage(str(stablehlo_name(dtype))) == dtype
    assert element.disk_unit == np.dtype(f"<u{dtype.itemsize}")
    finfo: Any = ml_dtypes.finfo  # untyped
    assert element.roundoff == float(finfo(dtype).eps) / 2
    assert (element.compute_mlir, element.accumulator_mlir) == ("f32", "f32")


# float8_e4m3fn and float8_e5m2 have safetensors names (F8_E4M3, F8_E5M2; tests/test_element_widths.py).
@pytest.mark.parametrize("dtype", [np.int32, np.bool_, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz])
def test_dtypes_without_a_name_elsewhere_have_none(dtype: Any) -> None:
    assert stablehlo_name(dtype) is None
    if np.dtype(dtype).kind == "V":
        element = ElementType("narrow", dtype, np.float32, np.float32, "narrow", emittable=False)
        assert element.safetensors is None
        with pytest.raises(CheckpointError, match="element narrow has no safetensors dtype"):
            ckpt.write("unused.safetensors", {"x": Tensor([1.0], element=element)})


def test_names_that_are_no_floating_type_have_no_storage() -> None:
    assert [stablehlo_storage(n) for n in ("i32", "f8E4M3FN", "f128", "f", "fx")] == [None] * 5
    # longdouble is x87 extended where it is wider than f64: not an IEEE interchange format.
    assert stablehlo_name(np.longdouble) is None or np.dtype(np.longdouble) == np.float64


def test_the_builtin_gradcheck_numbers_are_the_documented_ones() -> None:
    # What the gradient checker has always used for the built-ins; now derived, not tabled.
    assert [e.gradcheck_step for e in (f64, f32, bf16, F16)] == [1e-6, 1e-3, 1e-1, 1e-2]
    assert [e.gradcheck_tolerance("f64") for e in (f64, f32, bf16, F16)] == [1e-6, 1e-3, 5e-2, 2e-2]
    assert [e.gradcheck_tolerance("native") for e in (f64, f32, bf16, F16)] == [1e-6, 2e-2, 5e-2, 2e-2]
    with pytest.raises(ElementError, match="'f64' or 'native'"):
        f32.gradcheck_tolerance("fast")  # type: ignore[arg-type]


LADDER = sorted(float(f"{m}e{k}") for m in (1, 2, 5) for k in range(-20, 2))
NARROW = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e3m4, ml_dtypes.float6_e2m3fn]


@pytest.mark.parametrize("dtype", FLOATS + [np.dtype(d) for d in NARROW], ids=str)
def test_gradcheck_numbers_follow_the_documented_rule_for_any_float(dtype: np.dtype[Any]) -> None:
    """With c the cube root of the unit roundoff: the step is the power of ten at or below
    c, the f64-road tolerance is c / 3 rounded down to the 1-2-5 ladder, and the native
    road never tightens it nor widens it past max(that, 2e-2)."""
    element = ElementType("probe", dtype, np.float32, np.float32, "probe", emittable=False)
    c = element.roundoff ** (1 / 3)
    step = element.gradcheck_step
    assert step in LADDER and math.log10(step) == round(math.log10(step))
    assert step <= c < 10 * step
    tolerance = element.gradcheck_tolerance("f64")
    assert tolerance in LADDER and tolerance <= c / 3
    assert [t for t in LADDER if tolerance < t <= c / 3] == []
    native = element.gradcheck_tolerance("native")
    assert tolerance <= native <= max(tolerance, 2e-2) and native in LADDER


def test_gradcheck_numbers_tighten_as_precision_grows() -> None:
    ordered = [bf16, F16, f32, f64]
    for tolerances in ([e.gradcheck_tolerance("f64") for e in ordered], [e.gradcheck_tolerance("native") for e in ordered]):
        assert tolerances == sorted(tolerances, reverse=True)
    steps = [e.gradcheck_step for e in ordered]
    assert steps == sorted(steps, reverse=True)


# ----------------------------------------------------------------- the f16 seam, end to end


def test_a_float16_array_takes_the_registered_f16(f16_registered: None) -> None:
    values = np.array([[0.1, -2.5], [65504.0, 2.0**-24]], dtype=np.float16)
    tensor = Tensor(values)
    assert tensor.element is F16 and not tensor.weak
    assert tensor.bits().tolist() == values.view(np.uint16).tolist()
    assert element_storing(np.float16) is F16
    assert element_storing(np.float32) is f32  # built-ins before any plugin


def test_a_float16_array_without_an_element_is_refused_by_name(builtins_only: None) -> None:
    with pytest.raises(ElementError, match=r"test_element_seam\.py:\d+: no element type stores numpy dtype float16; registered elements: bf16, f32, f64"):
        Tensor(np.zeros(2, np.float16))
    assert element_storing(np.float16) is None


def test_f16_exact_plan_equals_the_interpreter_bit_for_bit() -> None:
    network, (w, b, _, loss) = Tape.record(affine, element=F16)
    grown, adjoints = gradient(network, loss, [w, b])
    roots = [loss, *adjoints.gradients()]
    parameters = grown.parameters()
    oracle = grown.forward(parameters)
    run = grown.entry(roots).numerics(Numerics.EXACT).lower().forward(parameters)
    for symbol in roots:
        assert run.of(symbol).element is F16
        assert run.of(symbol).bits().tolist() == oracle.of(symbol).bits().tolist()


def test_f16_passes_the_gradient_checker_and_a_wrong_gradient_fails_it() -> None:
    network, (w, b, x, loss) = Tape.record(affine, element=F16)
    report = check_grad(network, network.parameters(), loss, wrt=[w, b, x])
    assert report.passed, str(report)
    assert all(e.tolerance == F16.gradcheck_tolerance() == 2e-2 for e in report.entries)
    assert "step 1e-06 * max(1, |x|) rounded to f64" in report.numerical_side
    # The same check sees a gradient off by 5% (more than f16's 2e-2 allowance).
    longer, adjoints = gradient(network, loss, [w, b])
    true = longer.forward(network.parameters())
    scaled = {s: true.of(adjoints.of(s)).numpy().astype(np.float64) * 1.05 for s in (w, b)}
    wrong = check_grad(network, network.parameters(), loss, wrt=[w, b], analytic=scaled)
    assert not wrong.passed
    # Differences taken in f16 itself use f16's own step and tolerance; a correct gradient
    # is never reported FAILED there, at worst inconclusive (their noise floor is wide).
    native = check_grad(network, network.parameters(), loss, numerical="native")
    assert "step 0.01 * max(1, |x|) rounded to f16" in native.numerical_side
    assert all(e.tolerance == F16.gradcheck_tolerance("native") for e in native.entries)
    assert all(e.passed or not e.conclusive for e in native.entries), str(native)


def test_f16_round_trips_through_a_checkpoint_as_F16(tmp_path: Path, builtins_only: None) -> None:
    network, (w, b, _, _) = Tape.record(affine, element=F16)
    parameters = network.parameters().map(lambda p: p * 0.7 + 0.01)
    module = Slots({"w": w, "b": b})
    path = tmp_path / "f16.safetensors"
    ckpt.save(path, module, parameters)
    raw = path.read_bytes()
    header = json.loads(raw[8 : 8 + int.from_bytes(raw[:8], "little")])
    assert {header[k]["dtype"] for k in ("w", "b")} == {"F16"}
    assert json.loads(header["__metadata__"]["topos.elements"]) == {"b": "f16", "w": "f16"}
    # Into a template the element needs no registration: the template holds it.
    loaded = ckpt.load(path, module, network.parameters())
    for symbol in (w, b):
        assert loaded.of(symbol).element is F16
        assert loaded.of(symbol).bits().tolist() == parameters.of(symbol).bits().tolist()
    # Read alone, the file holds a dtype no element of this process stores: said so.
    with pytest.raises(CheckpointError, match=r"dtype 'F16' is not one of \['BF16', 'F32', 'F64'\].*register the plugin"):
        ckpt.read(path)


def test_a_read_finds_f16_by_name_and_a_foreign_file_by_dtype(tmp_path: Path, f16_registered: None) -> None:
    values = np.array([0.1, -0.0, np.inf, 6.1e-5], dtype=np.float16)
    path = tmp_path / "named.safetensors"
    ckpt.write(path, {"x": Tensor(values)})
    got = ckpt.read(path).entries["x"]
    assert got.element is F16 and got.bits().tolist() == values.view(np.uint16).tolist()
    # A foreign file (no topos metadata) storing F16: the registered element storing float16.
    body = values.astype("<f2").tobytes()
    head = json.dumps({"x": {"dtype": "F16", "shape": [4], "data_offsets": [0, len(body)]}}).encode()
    foreign = tmp_path / "foreign.safetensors"
    foreign.write_bytes(len(head).to_bytes(8, "little") + head + body)
    theirs = ckpt.read(foreign, foreign=True).entries["x"]
    assert theirs.element is F16 and theirs.bits().tolist() == values.view(np.uint16).tolist()


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=0xFFFF))
def test_f16_literals_are_the_elements_and_cross_the_mlir_parser(word: int) -> None:
    stored = np.array([word], dtype=np.uint16).view(np.float16)[0]
    text = literal(stored, np.float16)
    if math.isfinite(float(stored)):
        assert not text.startswith("0x") and F16.literal(float(text)) == F16.literal(stored)
    else:
        assert text == F16.literal(stored)  # non-finite: exactly the element's hex, NaN payload kept
    module = (
        f"func.func @main() -> tensor<f16> {{\n  %0 = stablehlo.constant dense<{text}> : tensor<f16>\n"
        "  return %0 : tensor<f16>\n}\n"
    )
    (back,) = xla.evaluate_module(module)
    assert back.reshape(-1).view(np.uint16).tolist() == [word]


def test_f16_constants_in_an_emitted_module_cross_exactly() -> None:
    special = np.array([0.1, -0.0, np.inf, -np.inf, np.nan, 65504.0, 6.1035156e-05, 2.0**-24], dtype=np.float16)
    network, out = Tape.record(lambda t: t.leaf(Tensor(special, element=F16)), element=F16)
    text = emit_network(network, [out])
    constant = re.search(r"stablehlo.constant dense<\[(.*)\]> : tensor<8xf16>", text)
    assert constant is not None, text
    words = constant.group(1).split(", ")
    # Each word names the element's bits: its hex literal, or a decimal that F16 rounds to them.
    for word, value in zip(words, special, strict=True):
        assert word == F16.literal(value) or F16.literal(float(word)) == F16.literal(value), (word, value)
    assert words[2:5] == [F16.literal(np.inf), F16.literal(-np.inf), F16.literal(special[4])] and words[1] == "-0.0"
    (got,) = xla.run_module(text)
    assert got.dtype == np.float16
    assert got.view(np.uint16).tolist() == special.view(np.uint16).tolist()


class Slots:
    """A module whose parameters are named by hand (the checkpoint's view of a module)."""

    def __init__(self, named: dict[str, Symbol]) -> None:
        self.named = named

    def __call__(self, input: Value, /) -> Value:
        return input

    def visit(self, visitor: Any) -> None:
        for name, symbol in self.named.items():
            visitor.parameter(name, symbol)
