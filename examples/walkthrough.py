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


def gradient_section(graph: Graph, parameters: Parameters) -> None:
    """The gradient reading: the chain rule recorded as more spec, equal to the engine's bits."""
    from topos import gradient

    network, s = graph
    longer, adjoints = gradient(network, s["loss"], [s["weights"], s["x"]])
    print("== gradient (the derivative as spec) ==")
    print(longer.describe())
    feeds = {s["x"]: np.array([[1.0, 2.0]], dtype=np.float32)}
    recorded = longer.forward(parameters, feeds)
    engine = network.forward(parameters, feeds).backward(s["loss"])
    for wrt, gradient_symbol in adjoints:
        same = np.array_equal(recorded.of(gradient_symbol).bits(), engine.of(wrt).bits())
        print(
            f"d loss / d %{wrt.index} = %{gradient_symbol.index} = {recorded.of(gradient_symbol).tolist()}; "
            f"engine backward: bits {'equal' if same else 'DIFFER'}"
        )
        if not same:
            raise SystemExit(f"the recorded gradient of %{wrt.index} differs from the engine's")
    print()


def plan_section(graph: Graph, parameters: Parameters) -> None:
    """The plan reading: a declared entry lowered to a plan, equal to the interpreter's bits."""
    from topos import Numerics
    from topos.stages.gradient import gradient

    network, s = graph
    feeds = {s["x"]: np.array([[1.0, 2.0]], dtype=np.float32)}
    plan = network.entry(s["loss"]).observe(s["hidden"]).numerics(Numerics.EXACT).lower()
    print("== plan (loss, observing hidden) ==")
    print(plan.describe())
    run = plan.forward(parameters, feeds)
    oracle = network.forward(parameters, feeds)
    for name in ("loss", "hidden"):
        same = np.array_equal(run.of(s[name]).bits(), oracle.of(s[name]).bits())
        print(f"{name}: exact plan {run.of(s[name]).tolist()}; interpreter bits {'equal' if same else 'DIFFER'}")
        if not same:
            raise SystemExit(f"the exact plan's {name} differs from the interpreter's")
    longer, adjoints = gradient(network, s["loss"], [s["weights"]])
    training = longer.entry(adjoints.roots()).numerics(Numerics.EXACT).lower()
    print("== training plan (loss and gradients, no backward pass) ==")
    print(training.describe())
    step = training.forward(parameters.carried(longer), feeds)
    engine = oracle.backward(s["loss"])
    for wrt, gradient_symbol in adjoints:
        same = np.array_equal(step.of(gradient_symbol).bits(), engine.of(wrt).bits())
        print(f"d loss / d %{wrt.index} from the plan: engine backward bits {'equal' if same else 'DIFFER'}")
        if not same:
            raise SystemExit(f"the training plan's gradient of %{wrt.index} differs from run.backward")
    print()


def emission_section(graph: Graph, parameters: Parameters) -> None:
    """The emission reading: the training plan as StableHLO, verified, run by XLA, compared."""
    from topos import xla
    from topos.stages.gradient import gradient

    network, s = graph
    feeds = {s["x"]: np.array([[1.0, 2.0]], dtype=np.float32)}
    longer, adjoints = gradient(network, s["loss"], [s["weights"]])
    plan = longer.entry(adjoints.roots()).lower()
    text = plan.emit_stablehlo()
    print("== emission (the training plan as StableHLO) ==")
    print(text)
    verdict = xla.verify(text)
    print("verified by jaxlib's MLIR bindings:", "ok" if verdict.ok else "\n".join(verdict.diagnostics))
    if not verdict.ok:
        raise SystemExit("the emitted module does not verify")
    on_xla = xla.XlaExecutable.of_plan(plan).forward(parameters.carried(longer), feeds)
    oracle = longer.forward(parameters.carried(longer), feeds)
    for symbol in plan.results():
        ours, theirs = oracle.of(symbol).numpy(), on_xla.of(symbol).numpy()
        gap = float(np.max(np.abs(ours.astype(np.float64) - theirs)))
        print(f"%{symbol.index}: interpreter {ours.tolist()}  XLA {theirs.tolist()}  max |difference| {gap:.3g}")
        # XLA is an envelope road (its own tanh, fused multiply-adds): a few ulp at these magnitudes.
        if gap > 1e-5:
            raise SystemExit(f"XLA's %{symbol.index} is outside the envelope of the interpreter")
    print()


def main() -> None:
    graph = record()
    parameters = graph[0].parameters()
    run_and_backward(graph, parameters)
    gradient_section(graph, parameters)
    plan_section(graph, parameters)
    emission_section(graph, parameters)


if __name__ == "__main__":
    main()
