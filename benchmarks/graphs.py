"""Large graphs: microseconds per node of recording, ``gradient()``, lowering and emission.

A chain of ``n`` unary nodes (``tanh`` of ``tanh`` of ... a parameter of four elements, then a
sum) keeps the arithmetic negligible, so the figures are the stack's own bookkeeping. Every
stage is divided by the same ``n``, the length of the recorded chain, whatever the stage
adds (``gradient()`` about doubles the graph). Python's cyclic garbage collector stays on:
its share of the time is part of what this row watches.
"""

from __future__ import annotations

import gc
import time
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
