"""The emission reading: every opcode, map and element writes StableHLO that verifies, runs on
XLA within a stated envelope of the interpreter, and — for the non-transcendental opcodes —
evaluates on the StableHLO reference interpreter to exactly the interpreter's bits.

Data rules: arguments are distinct and asymmetric (different seeds, non-square shapes) so a
swapped argument changes the answer; magnitudes stay in [0.25, 2] so no product or sum
reaches a denormal (XLA:CPU flushes them; the reference keeps them).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import (
    EmissionError,
    MapOperation,
    Network,
    Symbol,
    Tape,
    Tensor,
    Value,
    bf16,
    f32,
    f64,
    xla,
)
from topos.ir import ops
from topos.ir.element import ElementType
from topos.stages.emission import LOWERINGS, emit_module, emit_network, literal

Array = np.ndarray[Any, Any]
Build = Callable[[Tape], list[Value]]


def data(shape: tuple[int, ...], seed: int, positive: bool = False) -> Array:
    """Magnitudes in [0.25, 2], signs random unless ``positive``: no denormal can appear."""
    rng = np.random.default_rng(seed)
    magnitude: Array = rng.uniform(0.25, 2.0, size=shape)
    if positive:
        return magnitude
    signed: Array = magnitude * rng.choice([-1.0, 1.0], size=shape)
    return signed


def inputs(t: Tape, *shapes: tuple[int, ...], positive: bool = False, seed: int = 0) -> list[Value]:
    return [t.input(data(s, seed + 17 * i + 1, positive)) for i, s in enumerate(shapes)]


# --------------------------------------------------------------------------- cases
# Each case: (name, build, envelope). Envelope kinds, derived below in ``check_envelope``:
#   "exact": no rounding beyond one correctly rounded primitive (XLA agrees bit for bit).
#   "sum":   a reduction or product of K terms in XLA's own order: |d| <= (K+1) eps sum|terms|.
#   "ulp":   a transcendental: XLA's and numpy's libm differ by a few ulp.


def _selection() -> Tensor:
    return Tensor.selection([4, 0, 2, 4], 5, f32)


def _two(op: Callable[[Value, Value], Value], a: tuple[int, ...], b: tuple[int, ...], positive: bool = False) -> Build:
    def build(t: Tape) -> list[Value]:
        x, y = inputs(t, a, b, positive=positive)
        return [op(x, y)]

    return build


def _one(op: Callable[[Value], Value], shape: tuple[int, ...], positive: bool = False) -> Build:
    def build(t: Tape) -> list[Value]:
        return [op(inputs(t, shape, positive=positive)[0])]

    return build


def _step_with_ties(t: Tape) -> list[Value]:
    operand = data((3, 4), 3)
    threshold = np.where(np.arange(12).reshape(3, 4) % 3 == 0, operand, data((3, 4), 4))
    return [t.input(operand).step(t.input(threshold))]


def _broadcasts(t: Tape) -> list[Value]:
    return [inputs(t, (1, 1))[0].broadcast((2, 3)), inputs(t, (), seed=5)[0].broadcast((3,))]


def _gathered(table: tuple[int, ...], leaf: bool = False) -> Build:
    def build(t: Tape) -> list[Value]:
        selection = t.leaf(_selection()) if leaf else t.input(_selection())
        return [t.parameter(data(table, 7)).gather(selection)]

    return build


def _scattered(t: Tape) -> list[Value]:
    return [inputs(t, (4, 3))[0].scatter(t.input(_selection()))]


def _leaf_dense(t: Tape) -> list[Value]:
    return [t.leaf(data((2, 3), 9)) * inputs(t, (2, 3))[0]]


def _leaf_constant(t: Tape) -> list[Value]:
    return [t.constant((2, 3), 0.1) + inputs(t, (2, 3))[0]]


def _parameter_then_input(t: Tape) -> list[Value]:
    x = t.input(data((3, 4), 11))
    w = t.parameter(data((4, 2), 12))
    return [x.matmul(w) - x.sum_along(1).broadcast_along(1, 2)]


CASES: dict[str, tuple[Build, str]] = {
    "add": (_two(lambda a, b: a + b, (3, 4), (3, 4)), "exact"),
    "sub": (_two(lambda a, b: a - b, (3, 4), (3, 4)), "exact"),
    "mul": (_two(lambda a, b: a * b, (3, 4), (3, 4)), "exact"),
    "div": (_two(lambda a, b: a / b, (3, 4), (3, 4)), "exact"),
    "neg": (_one(lambda a: -a, (3, 4)), "exact"),
    "maximum": (_two(lambda a, b: a.maximum(b), (3, 4), (3, 4)), "exact"),
    "step": (_step_with_ties, "exact"),
    "powf": (_two(lambda a, b: a.powf(b), (3, 4), (3, 4), positive=True), "ulp"),
    "matmul": (_two(lambda a, b: a.matmul(b), (3, 4), (4, 5)), "sum"),
    "matmul_batched": (_two(lambda a, b: a.matmul(b), (2, 3, 4), (2, 4, 5)), "sum"),
    "sum": (_one(lambda a: a.sum(), (3, 4, 5)), "sum"),
    "sum_rank0": (_one(lambda a: a.sum(), ()), "exact"),
    "sum_along": (_one(lambda a: a.sum_along(1), (3, 4, 5)), "sum"),
    "broadcast": (_broadcasts, "exact"),
    "broadcast_along": (_one(lambda a: a.broadcast_along(1, 3), (3, 4)), "exact"),
    "reshape": (_one(lambda a: a.reshape((2, 6)), (3, 4)), "exact"),
    "permute": (_one(lambda a: a.permute((2, 0, 1)), (2, 3, 4)), "exact"),
    "narrow": (_one(lambda a: a.narrow(1, 1, 2), (3, 4)), "exact"),
    "pad": (_one(lambda a: a.pad(0, 1, 5), (3, 4)), "exact"),
    "unfold": (_one(lambda a: a.unfold(1, 3, 2, 2), (2, 9)), "exact"),
    "fold": (_one(lambda a: a.fold(1, 3, 2, 2, 9), (2, 3, 3)), "sum"),
    "fold_leading": (_one(lambda a: a.fold(0, 2, 1, 1, 5), (4, 2, 3)), "sum"),
    "gather": (_gathered((5, 3)), "exact"),
    "gather_rank3": (_gathered((5, 2, 3)), "exact"),
    "scatter": (_scattered, "sum"),
    "log_softmax": (_one(lambda a: a.log_softmax(1), (3, 4)), "ulp"),
    "logsumexp": (_one(lambda a: a.logsumexp(0), (3, 4)), "ulp"),
    "leaf_dense": (_leaf_dense, "exact"),
    "leaf_constant": (_leaf_constant, "exact"),
    "leaf_selection": (_gathered((5, 3), leaf=True), "exact"),
    "parameter_then_input": (_parameter_then_input, "sum"),
}
_DOMAIN = {
    MapOperation.LN: True, MapOperation.SQRT: True, MapOperation.LOG1P: True,
}
for _op in MapOperation:
    CASES[f"map_{_op.value}"] = (
        _one(lambda a, op=_op: a.map(op), (3, 4), positive=_DOMAIN.get(_op, False)),  # type: ignore[misc]
        "exact" if _op is MapOperation.SQRT else "ulp",
    )

EXACT_ON_REFERENCE_INTERPRETER = sorted(
    name for name, (_, kind) in CASES.items() if kind in ("exact", "sum") and name not in ("powf",)
)


def record(build: Build, element: ElementType = f32) -> tuple[Network, list[Symbol]]:
    network, symbols = Tape.record(build, element=element)
    return network, list(symbols)


def check_envelope(kind: str, got: Array, want: Array, bound: Array, eps: float, what: str) -> None:
    got64 = got.astype(np.float64)
    want64 = want.astype(np.float64)
    if kind == "exact":
        assert got.tobytes() == want.tobytes(), f"{what}: XLA differs from the interpreter's bits"
        return
    if kind == "sum":
        # Any summation order of K terms is within (K+1) eps sum|terms| of the true sum; the
        # reference's is too, so twice that bounds their difference. ``bound`` is sum|terms|.
        limit = 2.0 * bound * eps
    else:
        # Transcendentals: XLA's polynomial kernels vs numpy's libm, a few ulp (8 is generous
        # against the 1-5 measured), plus the same on the operand they consumed.
        limit = 16.0 * eps * np.maximum(np.abs(want64), 1.0)
    difference = np.abs(got64 - want64)
    assert np.all(difference <= limit), f"{what}: max |XLA - interpreter| {difference.max()} exceeds the envelope"


def _magnitude_bound(network: Network, run: Any, symbol: Symbol) -> Array:
    """(K+1) * sum|terms| for the result: terms' magnitudes from the operands (loose, safe)."""
    node = network.node(symbol)
    total = 1.0
    count = 1
    for operand in node.operands:
        values = np.abs(np.asarray(run.values()[operand].numpy(), dtype=np.float64))
        total *= float(values.max()) if values.size else 1.0
        count = max(count, values.size)
    return np.full(node.shape.axes, (count + 1) * total * count)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_case_verifies_and_runs_on_xla_within_its_envelope(name: str) -> None:
    build, kind = CASES[name]
    network, roots = record(build)
    text = emit_network(network, roots)
    verdict = xla.verify(text)
    assert verdict.ok, verdict.message
    executable = xla.XlaExecutable.of_network(network, roots)
    got = executable.forward(network.parameters(), {})
    want = network.forward(network.parameters(), {})
    eps = float(np.finfo(np.float32).eps)
    for symbol in roots:
        check_envelope(kind, got.of(symbol).numpy(), want.of(symbol).numpy(), _magnitude_bound(network, want, symbol), eps, name)


def test_the_lowering_table_covers_every_opcode() -> None:
    assert set(LOWERINGS) == set(ops.OPCODES)


def test_arguments_are_parameters_then_inputs_in_recording_order_and_results_in_declared_order() -> None:
    def build(t: Tape) -> list[Value]:
        x = t.input(data((2, 3), 1))
        w = t.parameter(data((3, 4), 2))
        y = t.input(data((2, 4), 3))
        b = t.parameter(data((4,), 4))
        out = x.matmul(w) + b.broadcast_along(0, 2) - y
        return [out.sum(), out]

    network, roots = record(build)
    text = emit_network(network, roots)
    header = text.splitlines()[1]
    assert header.index("%arg0: tensor<3x4xf32>") < header.index("%arg1: tensor<4xf32>")
    assert "%arg2: tensor<2x3xf32>" in header and "%arg3: tensor<2x4xf32>" in header
    assert header.endswith("-> (tensor<f32>, tensor<2x4xf32>) {")
    # Asymmetric arguments: swapping two of equal shape would change the answer.
    executable = xla.XlaExecutable.of_network(network, roots)
    arrays = executable.arrays(network.parameters(), {})
    right = xla.run_module(text, *arrays)
    swapped = xla.run_module(text, arrays[0], arrays[1], arrays[2], arrays[3] * -1.0)
    assert not np.array_equal(right[1], swapped[1])
    reference = network.forward(network.parameters(), {})
    np.testing.assert_allclose(right[1], reference.of(roots[1]).numpy(), rtol=0, atol=1e-5)  # 3-term sums


def test_literals_print_shortest_round_trip_decimal_and_non_finite_as_hex() -> None:
    assert literal(0.1, np.float32) == "0.1"
    assert literal(1.0, np.float64) == "1.0"
    assert literal(-0.0, np.float32) == "-0.0"
    assert literal(1e-8, np.float32) == "1.0e-08"
    assert literal(float("inf"), np.float32) == "0x7F800000"
    assert literal(float("-inf"), np.float64) == "0xFFF0000000000000"
    assert literal(float("inf"), ml_dtypes.bfloat16) == "0x7F80"
    assert literal(float("nan"), np.float32) == "0x7FC00000"


@settings(max_examples=30, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False), st.sampled_from(["f32", "f64", "bf16"]))
def test_literals_round_trip_through_the_mlir_parser(value: float, name: str) -> None:
    dtype = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16}[name]
    stored = np.asarray(value).astype(dtype)
    text = literal(stored, dtype)
    assert not text.startswith("0x")
    module = (
        f"func.func @main() -> tensor<{name}> {{\n  %0 = stablehlo.constant dense<{text}> : tensor<{name}>\n"
        f"  return %0 : tensor<{name}>\n}}\n"
    )
    assert xla.verify(module).ok
    (back,) = xla.evaluate_module(module)
    assert back.tobytes() == stored.tobytes()


def test_non_finite_and_extreme_literals_cross_exactly() -> None:
    special = np.array([0.1, -0.0, np.inf, -np.inf, np.nan, 3.4028235e38, 1.1754944e-38, 1e-8], dtype=np.float32)
    network, roots = record(lambda t: [t.leaf(special)])
    text = emit_network(network, roots)
    assert "0x7F800000" in text and "0xFF800000" in text and "-0.0" in text
    (got,) = xla.run_module(text)
    assert got.view(np.uint32).tolist() == special.view(np.uint32).tolist()


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=str)
def test_elements_emit_their_own_types_and_accumulate_wide(element: ElementType) -> None:
    def build(t: Tape) -> list[Value]:
        x, w = t.input(data((3, 4), 1)), t.parameter(data((4, 5), 2))
        h = x.matmul(w)
        return [h.sum_along(0), h.tanh().log_softmax(1), h.unfold(1, 2, 1).fold(1, 2, 1, 1, 5), h.erf()]

    network, roots = record(build, element)
    text = emit_network(network, roots)
    assert xla.verify(text).ok
    assert f"x{element.mlir}>" in text
    if element is bf16:
        # bf16 products and sums run in f32 and convert back once.
        assert "tensor<3x4xf32>" in text and "stablehlo.convert" in text
    executable = xla.XlaExecutable.of_network(network, roots)
    got = executable.forward(network.parameters(), {})
    want = network.forward(network.parameters(), {})
    eps = float(np.finfo(np.float32).eps) if element is not f64 else float(np.finfo(np.float64).eps)
    if element is bf16:
        eps = 2.0**-7  # one bf16 rounding may land on either side when the f32 values differ
    for symbol in roots:
        a = got.of(symbol).numpy().astype(np.float64)
        b = want.of(symbol).numpy().astype(np.float64)
        # Sums of 4 terms and a 4-term log-sum-exp of |x| <= 2*2*4: the budget is 64 eps * max(|b|, 1).
        assert np.all(np.abs(a - b) <= 64 * eps * np.maximum(np.abs(b), 1.0)), (element, symbol)


def test_text_is_byte_identical_across_processes(tmp_path: Path) -> None:
    script = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "import test_emission as m\n"
        "from topos.stages.emission import emit_network\n"
        "net, roots = m.record(m.CASES['parameter_then_input'][0])\n"
        "print(emit_network(net, roots) + emit_network(*m.record(m.CASES['log_softmax'][0])))\n"
    )
    outputs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    network, roots = record(CASES["parameter_then_input"][0])
    assert outputs[0].startswith(emit_network(network, roots))


def test_an_emission_error_names_the_node_and_the_operation() -> None:
    network, roots = record(lambda t: [inputs(t, (3, 4))[0].exp().sum()])
    with pytest.raises(EmissionError, match=r"%2 Sum\[\] .*operation Sum.*operand %1 is not scheduled"):
        emit_module(network, [0, 2], roots)
    with pytest.raises(EmissionError, match=r"result %2 Sum.*not scheduled"):
        emit_module(network, [0, 1], roots)


def test_a_training_step_emits_as_one_function() -> None:
    def build(t: Tape) -> list[Value]:
        x = t.input(data((4, 3), 1))
        labels = t.input(np.eye(2)[[0, 1, 1, 0]])
        w1, b1 = t.parameter(data((3, 5), 2) * 0.5), t.parameter(data((5,), 3) * 0.1)
        w2 = t.parameter(data((5, 2), 4) * 0.5)
        hidden = (x.matmul(w1) + b1.broadcast_along(0, 4)).maximum(t.constant((4, 5), 0.0))
        loss = -(hidden.matmul(w2).log_softmax(1) * labels).sum() / 4.0
        adjoints = t.differentiate(loss, [w1, b1, w2])
        return [loss, *(t.resolve(g) for g in adjoints.gradients())]

    network, roots = record(build)
    text = emit_network(network, roots)
    assert text.count("func.func") == 1
    assert xla.verify(text).ok
    got = xla.XlaExecutable.of_network(network, roots).forward(network.parameters(), {})
    want = network.forward(network.parameters(), {})
    for symbol in roots:
        a, b = got.of(symbol).numpy(), want.of(symbol).numpy()
        # A handful of 3-5 term sums and one log-softmax: well inside 1e-5 absolute at these magnitudes.
        assert np.max(np.abs(a.astype(np.float64) - b)) <= 1e-5


# --------------------------------------------------------------------------- the reference interpreter

_EVALUATE = """
import json, sys
import ml_dtypes
import numpy as np
from topos import xla
folder = sys.argv[1]
names = json.load(open(folder + '/names.json'))
for name in names:
    text = open(f'{folder}/{name}.mlir').read()
    args = np.load(f'{folder}/{name}.in.npz')
    arrays = [args[f'a{i}'] for i in range(len(args.files))]
    # npz keeps bf16 only as raw 2-byte records.
    arrays = [a.view(ml_dtypes.bfloat16) if a.dtype.kind == 'V' else a for a in arrays]
    outs = xla.evaluate_module(text, *arrays)
    np.savez(f'{folder}/{name}.out.npz', **{f'o{i}': o for i, o in enumerate(outs)})
print('done')
"""


def _stage(folder: Path, name: str, network: Network, roots: list[Symbol]) -> None:
    text = emit_network(network, roots)
    arrays = xla.XlaExecutable.of_network(network, roots).arrays(network.parameters(), {})
    (folder / f"{name}.mlir").write_text(text)
    named: dict[str, Any] = {f"a{i}": a for i, a in enumerate(arrays)}
    np.savez(folder / f"{name}.in.npz", **named)


def _evaluate_in_subprocess(folder: Path, names: list[str]) -> None:
    (folder / "names.json").write_text(json.dumps(names))
    # The reference interpreter can kill its process (SIGFPE); keep it away from pytest's.
    done = subprocess.run([sys.executable, "-c", _EVALUATE, str(folder)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


def _products(t: Tape) -> list[Value]:
    a, b = inputs(t, (3, 4), (4, 2))
    return [a.matmul(b), a.sum(), (a * a).sum_along(0), a.unfold(1, 2, 1).fold(1, 2, 1, 1, 4)]


def test_the_reference_interpreter_reproduces_the_interpreters_bits(tmp_path: Path) -> None:
    staged: dict[str, tuple[Network, list[Symbol]]] = {}
    for name in EXACT_ON_REFERENCE_INTERPRETER:
        staged[name] = record(CASES[name][0])
    for name, element in (("bf16_products", bf16), ("f64_products", f64)):
        staged[name] = record(_products, element)
    for name, (network, roots) in staged.items():
        _stage(tmp_path, name, network, roots)
    _evaluate_in_subprocess(tmp_path, sorted(staged))
    for name, (network, roots) in staged.items():
        outs = np.load(tmp_path / f"{name}.out.npz")
        want = network.forward(network.parameters(), {})
        for i, symbol in enumerate(roots):
            expected = want.of(symbol).numpy()
            got = outs[f"o{i}"]
            if got.dtype.kind == "V":  # bf16 comes back from npz as raw 2-byte records
                got = got.view(expected.dtype)
            assert got.dtype == expected.dtype, name
            assert got.tobytes() == expected.tobytes(), f"{name}: result {i} differs from the interpreter's bits"


def test_the_reference_interpreter_keeps_transcendentals_within_their_envelope(tmp_path: Path) -> None:
    names = sorted(n for n, (_, kind) in CASES.items() if kind == "ulp")
    staged = {name: record(CASES[name][0]) for name in names}
    for name, (network, roots) in staged.items():
        _stage(tmp_path, name, network, roots)
    _evaluate_in_subprocess(tmp_path, names)
    eps = float(np.finfo(np.float32).eps)
    for name, (network, roots) in staged.items():
        outs = np.load(tmp_path / f"{name}.out.npz")
        want = network.forward(network.parameters(), {})
        for i, symbol in enumerate(roots):
            expected = want.of(symbol).numpy().astype(np.float64)
            # C++'s libm against the portable maps: about 1 ulp each, 4 ulp budget per result.
            assert np.all(np.abs(outs[f"o{i}"] - expected) <= 4 * eps * np.maximum(np.abs(expected), 1.0)), name


def test_erf_derivative_is_one_exponential_of_a_two_word_exponent() -> None:
    """exp(ln(2/sqrt(pi)) - x*x) with x*x split in two words (tests/test_map_envelopes.py
    measures the accuracy this buys): one exponential, the log of the scale as a literal,
    the split's clamp, and no exponential of -x*x alone to be flushed."""
    network, roots = record(lambda t: [inputs(t, (2, 2))[0].erf_derivative()])
    text = emit_network(network, roots)
    body = [line.split("=", 1)[1].split()[0] for line in text.splitlines() if " = stablehlo." in line]
    assert body.count("stablehlo.exponential") == 1 and "stablehlo.clamp" in body
    assert literal(0.12078223763524522, np.float32) in text
    assert literal(2.0 / math.sqrt(math.pi), np.float32) not in text
