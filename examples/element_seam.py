"""The element seam: a custom element type that audits every matrix product.

``audited`` stores and computes exactly like f64, but carries a ``gemm`` hook. The stack
offers the hook every matrix product of that element (forward and backward); this hook
counts the offers and answers with the reference kernel, so training with it must give the
same bits as training in plain f64.

The model is the README's line fit ``y = w * x`` with the product written as a 1 x 1 matrix
product, so there is something to offer. It is trained twice (audited, f64) with the
built-in ``Sgd`` and once in the README's own scalar form with a hand-written step; all
three weights must agree bit for bit. Run with ``python examples/element_seam.py``; it exits
non-zero if any bit differs or no product was offered.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from topos import ElementType, Parameters, Sgd, Tape, Tensor, Value, f64
from topos.backends import reference

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
    return 0 if agree and audit.offers > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
