"""The whole stack on one graph: each reading of the same spec, and the runs that must agree.

Run it with ``python examples/walkthrough.py``. Every comparison it prints is checked: the
script exits non-zero if an exact road disagrees with the interpreter by a single bit.

The graph: ``x[1, 2] . W[2, 2] -> tanh -> hidden``, ``loss = sum(hidden^2)``.
"""

from __future__ import annotations

import numpy as np

from topos import Network, Parameters, Symbol, Tape, Value, f32

Graph = tuple[Network, dict[str, Symbol]]


def record() -> Graph:
    """The spec reading: record once, seal, print the dump."""

    def build(tape: Tape) -> dict[str, Value]:
        weights = tape.parameter(np.array([[0.5, -0.25], [0.75, 1.0]]))
        x = tape.input(np.array([[1.0, 2.0]]))
        hidden = x.matmul(weights).tanh()
        loss = (hidden * hidden).sum()
        return {"weights": weights, "x": x, "hidden": hidden, "loss": loss}

    network, symbols = Tape.record(build, element=f32)
    print("== spec ==")
    print(network.describe())
    return network, symbols


def run_and_backward(graph: Graph, parameters: Parameters) -> None:
    """The value and cotangent readings: the interpreter (the oracle) and engine backward."""
    network, s = graph
    run = network.forward(parameters, {s["x"]: np.array([[1.0, 2.0]], dtype=np.float32)})
    print("== value ==")
    print("hidden =", run.of(s["hidden"]).tolist())
    print("loss   =", run.of(s["loss"]).scalar())
    gradients = run.backward(s["loss"])
    print("== cotangent ==")
    print("dloss/dweights =", gradients.of(s["weights"]).tolist())
    print()


def main() -> None:
    graph = record()
    parameters = graph[0].parameters()
    run_and_backward(graph, parameters)


if __name__ == "__main__":
    main()
