"""Large graphs: microseconds per node of recording, ``gradient()``, lowering and emission.

A chain of ``n`` unary nodes (``tanh`` of ``tanh`` of ... a parameter of four elements, then a
sum) keeps the arithmetic negligible, so the figures are the stack's own bookkeeping. Every
stage is divided by the same ``n``, the length of the recorded chain, whatever the stage
adds (``gradient()`` about doubles the graph). Python's cyclic garbage collector stays on:
its share of the time is part of what this row watches.

Peak memory (``python -m benchmarks.graphs --peak 300000``) runs the same four stages once,
in a fresh process per size, and reads the process's peak resident set
(``getrusage(RUSAGE_SELF).ru_maxrss``): the baseline is read after importing topos, and
bytes per node is the peak less the baseline over the chain's length.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from topos import Tape, Value, f32
from topos.stages.emission import emission
from topos.stages.gradient import gradient

STAGES = ("record", "gradient", "lower", "emit")


def chain(length: int) -> dict[str, float]:
    """Seconds of each stage on a chain of ``length`` nodes."""
    gc.collect()

    def build(t: Tape) -> tuple[Value, Value]:
        x = t.parameter(np.full(4, 0.5, np.float32))
        y = x
        for _ in range(length):
            y = y.tanh()
        return y.sum(), x

    started = time.perf_counter()
    network, (loss, x) = Tape.record(build, element=f32)
    recorded = time.perf_counter()
    longer, adjoints = gradient(network, loss, [x])
    differentiated = time.perf_counter()
    plan = longer.entry(adjoints.roots()).lower()
    lowered = time.perf_counter()
    text = emission(plan)
    emitted = time.perf_counter()
    del network, longer, plan, text
    return {
        "record": recorded - started,
        "gradient": differentiated - recorded,
        "lower": lowered - differentiated,
        "emit": emitted - lowered,
    }


def rows(sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    """One row per size: ``nodes`` and each stage's microseconds per node."""
    out: list[dict[str, Any]] = []
    chain(200)  # the first graph pays for imports and caches, not per node
    for size in sizes:
        seconds = chain(size)
        out.append({"nodes": size, **{stage: seconds[stage] / size * 1e6 for stage in STAGES}})
        print(f"  chain of {size:,} nodes: " + ", ".join(f"{s} {out[-1][s]:.2f} us/node" for s in STAGES), flush=True)
    return out


def _resident_mb() -> float:
    # VmHWM is the high-water mark of this process's own memory map. ru_maxrss is not: Linux
    # carries it across fork and exec, so a child of a 276 MB pytest worker starts at 276 MB
    # and a small chain never shows above it.
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        status = ""
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    # Linux reports ru_maxrss in KiB (macOS in bytes, which this row does not run on).
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak(length: int) -> dict[str, Any]:
    """This process's peak resident set (MB) over one chain of ``length`` nodes, its
    baseline (read first, after the imports) and the bytes each node added to the peak.

    Meaningful once per process: the peak never goes down, so a second call reads the first's.
    """
    baseline = _resident_mb()
    chain(length)
    top = _resident_mb()
    return {"nodes": length, "peak_mb": top, "baseline_mb": baseline, "bytes_per_node": (top - baseline) * 2**20 / length}


def memory_rows(sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    """One row per size, each measured in a fresh process: ``nodes``, ``peak_mb``,
    ``baseline_mb`` and ``bytes_per_node``."""
    out: list[dict[str, Any]] = []
    for size in sizes:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.graphs", "--peak", str(size), "--json"],
            capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parent.parent,
        )  # fmt: skip
        out.append(json.loads(done.stdout.splitlines()[-1]))
        print("  " + _peak_line(out[-1]), flush=True)
    return out


def _peak_line(row: dict[str, Any]) -> str:
    return (
        f"chain of {row['nodes']:,} nodes: peak {row['peak_mb']:,.1f} MB, baseline {row['baseline_mb']:,.1f} MB, "
        f"{row['bytes_per_node']:,.0f} bytes per node"
    )


def main(argv: list[str] | None = None) -> None:
    """``python -m benchmarks.graphs --peak N [--json]``: the peak-memory row of one size."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.graphs", description=main.__doc__)
    parser.add_argument("--peak", type=int, required=True, help="chain length to measure in this process")
    parser.add_argument("--json", action="store_true", help="print the row as one JSON line")
    args = parser.parse_args(argv)
    row = peak(args.peak)
    print(json.dumps(row) if args.json else _peak_line(row), flush=True)


if __name__ == "__main__":
    main()
