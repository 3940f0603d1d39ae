"""Fixed cost and page faults of a plan's training step (issue 15, items 2 and 3).

Run it with ``python benchmarks/bench_step_cost.py [--profile]``. Rows, single BLAS thread:

- the MLP 784-256-10 b64 training step (benchmarks/run.py's) as the Fast plan, the Exact
  plan, the interpreter with engine backward and hand-written numpy: median µs per step
  over interleaved rounds;
- function calls per step (cProfile: Python and C functions; ufunc calls are invisible to
  it), with ``--profile`` also the Fast plan's top entries; the fixed cost: CPU µs of the
  same step over 16-32-4 arrays, where numpy's arithmetic is negligible;
- minor page faults per step in steady state (``ru_minflt`` over 100 steps after a warm-up)
  for the MLP and a small GPT (vocab 65, context 64, 4 layers, d 128, 4 heads, batch 16).

Nothing is asserted: the figures are for reading, and on a shared host only their medians
of interleaved runs mean anything.
"""

from __future__ import annotations

import cProfile
import pstats
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.run import BATCH, mlp_data, mlp_numpy, mlp_record
from benchmarks.workloads import CONTEXT, VOCAB, small_gpt
from topos import Numerics, Parameters, Tape, Tensor
from topos.nn.losses import cross_entropy
from topos.stages.gradient import gradient


def faults_per_step(step: Callable[[], object], count: int = 100) -> float:
    for _ in range(5):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(count):
        step()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / count


def calls_per_step(step: Callable[[], object], show: bool) -> int:
    """Function calls per step as cProfile counts them: Python functions and C functions.

    Calling a ufunc (``np.add(a, b)``) is invisible to the profiler, so this counts the
    bookkeeping around numpy more than numpy itself.
    """
    step()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(10):
        step()
    profile.disable()
    stats = pstats.Stats(profile)
    if show:
        stats.sort_stats("tottime").print_stats(25)
    total: int = stats.total_calls  # type: ignore[attr-defined]
    return round(total / 10)


def medians(steps: dict[str, tuple[Callable[[], object], int]], rounds: int) -> dict[str, float]:
    """Median seconds per call of each step, over ``rounds`` interleaved rounds of its count."""
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for step, _ in steps.values():
        step()
    for _ in range(rounds):
        for name, (step, inner) in steps.items():
            start = time.perf_counter()
            for _ in range(inner):
                step()
            samples[name].append((time.perf_counter() - start) / inner)
    return {name: statistics.median(times) for name, times in samples.items()}


def fixed_cost() -> str:
    """The MLP step's graph over arrays too small to matter (every product still native)."""
    rng = np.random.default_rng(0)
    d = {
        "x": rng.standard_normal((BATCH, 16)).astype(np.float32),
        "y": np.eye(4, dtype=np.float32)[rng.integers(0, 4, BATCH)],
        "w1": (rng.standard_normal((16, 32)) * 0.1).astype(np.float32), "b1": np.zeros(32, np.float32),
        "w2": (rng.standard_normal((32, 4)) * 0.1).astype(np.float32), "b2": np.zeros(4, np.float32),
    }  # fmt: skip
    network, symbols = mlp_record(d)
    longer, adjoints = gradient(network, symbols["loss"], symbols["params"])
    parameters = longer.parameters()
    fast = longer.entry(adjoints.roots()).numerics(Numerics.FAST).lower()
    steps: dict[str, Callable[[], object]] = {"fast plan": lambda: fast.forward(parameters), "numpy by hand": mlp_numpy(d)}
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(60):
        for name, step in steps.items():
            start = time.process_time()
            for _ in range(50):
                step()
            samples[name].append((time.process_time() - start) / 50)
    return ", ".join(f"{name} {min(times) * 1e6:.1f}" for name, times in samples.items())


def gpt_step() -> Callable[[], object]:
    vocab, context, batch = VOCAB, CONTEXT, 16
    tape = Tape()
    model = small_gpt(tape, seed=0)
    rng = np.random.default_rng(0)
    tokens = tape.input(Tensor.selection(rng.integers(0, vocab, batch * context).tolist(), vocab))
    mask = tape.leaf(Tensor(np.where(np.triu(np.ones((context, context)), 1) > 0, -np.inf, 0.0), tape.element))
    positions = tape.input(Tensor.selection(list(range(context)) , context))
    targets = tape.input(Tensor.selection(rng.integers(0, vocab, batch * context).tolist(), vocab))
    loss = cross_entropy(model(tokens, batch, mask, positions), targets)
    network = tape.seal()
    longer, adjoints = gradient(network, loss.symbol, list(network.parameter_symbols()))
    plan = longer.entry(adjoints.roots()).lower()
    parameters: Parameters = longer.parameters()
    return lambda: plan.forward(parameters)


def main() -> None:
    show = "--profile" in sys.argv
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        d = mlp_data(np.random.default_rng(0))
        network, symbols = mlp_record(d)
        longer, adjoints = gradient(network, symbols["loss"], symbols["params"])
        parameters = longer.parameters()
        fast = longer.entry(adjoints.roots()).numerics(Numerics.FAST).lower()
        exact = longer.entry(adjoints.roots()).numerics(Numerics.EXACT).lower()
        base = network.parameters()
        steps: dict[str, Callable[[], object]] = {
            "numpy by hand": mlp_numpy(d),
            "fast plan": lambda: fast.forward(parameters),
            "exact plan": lambda: exact.forward(parameters),
            "interpreter": lambda: network.forward(base).backward(symbols["loss"]),
        }
        print(f"MLP 784-256-10 b{BATCH}, one BLAS thread")
        counts = {"numpy by hand": 20, "fast plan": 20, "exact plan": 1, "interpreter": 1}
        timed = medians({name: (step, counts[name]) for name, step in steps.items()}, 15)
        for name, seconds in timed.items():
            print(f"  {name:<16} {seconds * 1e6:8.1f} µs/step")
        print(f"  function calls per step (cProfile): fast plan {calls_per_step(steps['fast plan'], show)}, "
              f"exact plan {calls_per_step(steps['exact plan'], False)}, numpy by hand {calls_per_step(steps['numpy by hand'], False)}")
        print(f"  fixed cost (the same step over 16-32-4, CPU µs, min of 60): {fixed_cost()}")
        print(f"  page faults per step: fast plan {faults_per_step(steps['fast plan']):.1f}, "
              f"exact plan {faults_per_step(steps['exact plan']):.1f}, numpy by hand {faults_per_step(steps['numpy by hand']):.1f}")
        gpt = gpt_step()
        start = time.perf_counter()
        faults = faults_per_step(gpt, 20)
        print(f"small GPT b16 fast plan: page faults per step {faults:.0f}, {(time.perf_counter() - start) / 25 * 1e3:.1f} ms/step (wall)")


if __name__ == "__main__":
    main()
