"""The element seam: a custom element type that audits every matrix product.

``audited`` stores and computes exactly like f64, but carries a ``gemm`` hook. The stack
offers the hook every matrix product of that element (forward and backward); this hook
counts the offers and answers with the reference kernel, so training with it must give the
same bits as training in plain f64.

The model is the README's line fit ``y = w * x`` with the product written as a 1 x 1 matrix
product, so there is something to offer. It is trained twice (audited, f64) with the
built-in ``Sgd`` and once in the README's own scalar form with a hand-written step; all
three weights must agree bit for bit.

The second half takes the example plugin's ``f16`` (``examples/plugins/topos_lion``: half
storage, f32 arithmetic) through every road a built-in travels, with nothing about f16
written anywhere but on its ``ElementType``: an exact plan equals the interpreter bit for
bit, the recorded gradient equals the engine's, the gradient checker passes at f16's own
tolerance, a checkpoint stores ``F16`` and loads back bit for bit, and the emitted StableHLO
verifies and runs on XLA within eight f16 ulps.

Run with ``python examples/element_seam.py``; it exits non-zero if any bit differs, no
product was offered, or an f16 road fails.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from topos import (
    ElementType,
    Numerics,
    Parameters,
    Sgd,
    Symbol,
    Tape,
    Tensor,
    Value,
    checkpoint,
    f64,
    xla,
)
from topos.gradcheck import check_grad
from topos.kernels import reference
from topos.stages.emission import emit_network
from topos.stages.gradient import gradient

Array = np.ndarray[Any, Any]
SAMPLES = [(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]
STEPS = 100


class Audit:
    """A gemm hook: counts what it is offered and answers with the reference product."""

    def __init__(self) -> None:
        self.offers = 0

    def __call__(self, a: Array, b: Array, element: ElementType) -> Array | None:
        self.offers += 1
        return reference.matmul(a, b, element)


def audited_element(audit: Audit) -> ElementType:
    # Same dtypes as f64; not emittable, because StableHLO cannot carry the hook.
    return ElementType("audited", np.float64, np.float64, np.float64, "f64", emittable=False, gemm=audit)


def line_as_product(tape: Tape) -> tuple[Value, Value, Value, Value]:
    w = tape.parameter([[0.0]])
    x = tape.input([[0.0]])
    y = tape.input([[0.0]])
    error = x.matmul(w) - y
    return w, x, y, (error * error).sum()


def train_product(element: ElementType) -> Tensor:
    network, (w, x, y, loss) = Tape.record(line_as_product, element=element)
    optimizer = Sgd(learning_rate=0.02)
    parameters = network.parameters()
    state = optimizer.init(parameters)
    for step in range(STEPS):
        sample_x, sample_y = SAMPLES[step % len(SAMPLES)]
        run = network.forward(parameters, {x: [[sample_x]], y: [[sample_y]]})
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = optimizer.update(gradients, state, parameters)
    return parameters.of(w)


def train_readme() -> Tensor:
    """The README's training loop, verbatim in substance: scalar w, a hand-written step."""

    def line(tape: Tape) -> tuple[Value, Value, Value, Value]:
        w = tape.parameter(0.0)
        x = tape.input(0.0)
        y = tape.input(0.0)
        error = w * x - y
        return w, x, y, error * error

    network, (w, x, y, loss) = Tape.record(line, element=f64)
    parameters: Parameters = network.parameters()
    for step in range(STEPS):
        sample_x, sample_y = SAMPLES[step % len(SAMPLES)]
        run = network.forward(parameters, {x: sample_x, y: sample_y})
        gradients = run.backward(loss).parameters(parameters)
        parameters = parameters.step(gradients, lambda w, g: w - g * Tensor(0.02))
    return parameters.of(w)


def plugin_f16() -> ElementType:
    """The plugin's f16, imported from the checkout (an installed plugin registers it itself)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "plugins"))
    element: ElementType = importlib.import_module("topos_lion.elements").f16
    return element


def affine(tape: Tape) -> tuple[Value, Value, Value]:
    w = tape.parameter(np.array([[0.5, -0.25, 1.0], [0.75, 1.0, -0.125]]))
    b = tape.parameter(np.array([0.1, -0.2, 0.3]))
    x = tape.leaf(np.array([[1.0, 2.0], [-0.5, 0.3]]))
    out = (x.matmul(w) + b.broadcast_along(0, 2)).tanh()
    return w, b, (out * out).sum() * 0.5


class Named:
    """A two-parameter module for the checkpoint: paths ``w`` and ``b``."""

    def __init__(self, w: Symbol, b: Symbol) -> None:
        self.w, self.b = w, b

    def __call__(self, input: Value, /) -> Value:
        return input

    def visit(self, visitor: Any) -> None:
        visitor.parameter("w", self.w)
        visitor.parameter("b", self.b)


def f16_roads(f16: ElementType) -> dict[str, bool]:
    """Each road a built-in travels, travelled by the plugin's f16: road -> held."""
    network, (w, b, loss) = Tape.record(affine, element=f16)
    grown, adjoints = gradient(network, loss, [w, b])
    roots = [loss, *adjoints.gradients()]
    parameters = network.parameters()
    oracle = grown.forward(parameters)
    planned = grown.entry(roots).numerics(Numerics.EXACT).lower().forward(parameters)
    engine = network.forward(parameters).backward(loss)
    held = {
        "exact plan == interpreter": all(planned.of(s).bits().tolist() == oracle.of(s).bits().tolist() for s in roots),
        "recorded gradient == engine": all(
            oracle.of(adjoints.of(s)).bits().tolist() == engine.of(s).bits().tolist() for s in (w, b)
        ),
        f"check_grad at tolerance {f16.gradcheck_tolerance():g}": check_grad(network, parameters, loss).passed,
    }
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "f16.safetensors")
        module = Named(w, b)
        checkpoint.save(path, module, parameters)
        loaded = checkpoint.load(path, module, network.parameters())
        stored_as = f'"dtype":"{f16.safetensors}"'.encode()
        with open(path, "rb") as handle:
            on_disk = stored_as in handle.read()
    held[f"checkpoint as {f16.safetensors}, bit for bit"] = on_disk and all(
        loaded.of(s).bits().tolist() == parameters.of(s).bits().tolist() for s in (w, b)
    )
    text = emit_network(grown, roots)
    held["StableHLO verifies"] = xla.verify(text).ok
    outputs = xla.run_module(text, parameters.of(w).numpy(), parameters.of(b).numpy())
    # XLA:CPU is an envelope road, and its f16 envelope is the CPU's: it may contract
    # multiply-adds, and where the CPU has AVX512-FP16 it computes f16 maps natively in f16
    # (tanh and its gradient land 6 f16 ulps away there, 2 with XLA_FLAGS=--xla_cpu_max_isa=AVX2).
    # Eight f16 ulps at each value holds on both.
    within = True
    for symbol, out in zip(roots, outputs, strict=True):
        expected = oracle.of(symbol).numpy().astype(np.float64)
        within &= out.dtype == f16.dtype and bool(
            np.all(np.abs(out.astype(np.float64) - expected) <= 8 * np.spacing(np.abs(expected.astype(f16.dtype))))
        )
    held["runs on XLA within eight f16 ulps"] = within
    return held


def main() -> int:
    audit = Audit()
    audited = train_product(audited_element(audit)).numpy().reshape(())
    plain = train_product(f64).numpy().reshape(())
    readme = train_readme().numpy().reshape(())
    bits = [int(np.asarray(v).view(np.uint64)) for v in (audited, plain, readme)]
    print(f"gemm offers     : {audit.offers}")
    print(f"audited weight  : {float(audited)!r}  bits {bits[0]:#018x}")
    print(f"f64 weight      : {float(plain)!r}  bits {bits[1]:#018x}")
    print(f"README weight   : {float(readme)!r}  bits {bits[2]:#018x}")
    agree = len(set(bits)) == 1
    print("bit for bit     :", "yes" if agree else "NO")
    roads = f16_roads(plugin_f16())
    for road, ok in roads.items():
        print(f"f16 {road:<34}: {'yes' if ok else 'NO'}")
    return 0 if agree and audit.offers > 0 and all(roads.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
