"""A GPT training step under a ladder of memory budgets: peak, time and what was recomputed.

Each row lowers the same recorded step (loss and every gradient) with
``entry.budget(fraction=f)`` and reports the plan's peak (its own accounting, the bytes the run
holds at once read off its arrays, and what tracemalloc saw numpy allocate, kernels' temporaries
included), the step's median time and CPU share, how many values were recomputed and their
cost, and the time to lower. Every budgeted step's gradients are checked bit for bit against
the unbudgeted step's. Activation memory is the peak less the gradients the step hands back
(they are results, not activations).

Run: ``python -m benchmarks.bench_memory`` (the small GPT with a long context, about two
minutes); ``--shape gpt2`` for GPT-2 124M's blocks at a context where activations dominate
(long); ``--quick`` for a seconds-long smoke run (the tests run it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import workloads
from topos import DeclarationError, Numerics

SHAPES = {
    # Activations dominate the weights: a long context and a wide batch over a small model.
    "gpt": workloads.GptShape(65, 256, 4, 128, 4, 8, 256),
    "gpt2": workloads.GptShape(50257, 512, 12, 768, 12, 4, 1024),
    "quick": workloads.GptShape(65, 32, 2, 32, 2, 2, 32),
}
FRACTIONS = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4)


def _bits(arrays: list[np.ndarray[Any, Any]]) -> list[bytes]:
    return [np.ascontiguousarray(a).view(np.uint8).tobytes() for a in arrays]


def _traced(call: Any) -> int:
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        call()
        return int(tracemalloc.get_traced_memory()[1] - base)
    finally:
        tracemalloc.stop()


def measure(shape_key: str, numerics: Numerics, steps: int) -> dict[str, Any]:
    shape = SHAPES[shape_key]
    workload = workloads._gpt_step("memory", "GPT", shape, 3, np.random.default_rng(7))
    network, roots = workload.network, workload.roots()
    parameters = network.parameters()
    entry = network.entry(roots).numerics(numerics)
    full = entry.lower()
    itemsize = 4
    gradients = sum(network.nodes_[network.index(s)].shape.volume for s in roots)
    want = _bits([full.forward(parameters).of(s).numpy() for s in roots])
    rows: list[dict[str, Any]] = []
    for fraction in FRACTIONS:
        started = time.perf_counter()
        try:
            plan = entry.budget(fraction=fraction).lower()
        except DeclarationError as error:
            rows.append({"fraction": fraction, "refused": str(error).split(": ", 1)[1]})
            break
        lowered = time.perf_counter() - started
        run = plan.forward(parameters)
        same = _bits([run.of(s).numpy() for s in roots]) == want
        del run
        walls, cpus = [], []
        for _ in range(steps):
            w0, c0 = time.perf_counter(), time.process_time()
            plan.forward(parameters)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        peak = plan.memory_peak()
        rows.append({
            "fraction": fraction,
            "peak_mb": peak * itemsize / 1e6,
            "activations_mb": (peak - gradients) * itemsize / 1e6,
            "traced_mb": _traced(lambda plan=plan: plan.forward(parameters)) / 1e6,
            "step_ms": statistics.median(walls) * 1e3,
            "cpu_share": sum(cpus) / sum(walls),
            "recomputed_values": len(plan.recomputed()),
            "recomputations": sum(plan.recomputed().values()),
            "recompute_cost": plan.remat.cost if plan.remat is not None else 0,
            "lower_s": lowered,
            "bits_equal": same,
        })  # fmt: skip
    base = rows[0]
    for row in rows:
        if "step_ms" in row:
            row["time_ratio"] = row["step_ms"] / base["step_ms"]
            row["activation_ratio"] = row["activations_mb"] / base["activations_mb"]
    return {"shape": shape.title(), "numerics": numerics.value, "gradients_mb": gradients * itemsize / 1e6, "rows": rows}


def table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['shape']}, {result['numerics']} plan; gradients handed back {result['gradients_mb']:.1f} MB",
        "| budget | peak MB | activations MB (ratio) | traced MB | step ms (ratio) | CPU share | values recomputed "
        "| recomputations | cost | lower s | bits |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in result["rows"]:
        if "refused" in row:
            lines.append(f"| {row['fraction']:g} | refused: {row['refused']} |")
            continue
        lines.append(
            f"| {row['fraction']:g} | {row['peak_mb']:.1f} | {row['activations_mb']:.1f} ({row['activation_ratio']:.2f}) "
            f"| {row['traced_mb']:.1f} | {row['step_ms']:.1f} ({row['time_ratio']:.2f}) | {row['cpu_share']:.2f} "
            f"| {row['recomputed_values']} | {row['recomputations']} | {row['recompute_cost']:.3g} | {row['lower_s']:.2f} "
            f"| {'equal' if row['bits_equal'] else 'DIFFER'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="gpt")
    parser.add_argument("--quick", action="store_true", help="the seconds-long smoke shape, one step")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--numerics", choices=["fast", "exact"], default="fast")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    shape = "quick" if args.quick else args.shape
    result = measure(shape, Numerics(args.numerics), 1 if args.quick else args.steps)
    print(table(result))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0 if all(row.get("bits_equal", True) for row in result["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
