"""Optimizer updates on the small GPT's parameter table, and the XLA road's first call.

``python benchmarks/bench_optim.py`` prints one row per measurement; :func:`rows` returns
them as dicts (``workload``, ``system``, ``threads``, ``value``, ``unit``) for the suite.

- ``update``: µs per ``optimizer.update`` over the parameter table of the small GPT
  (``topos.nn.TransformerLm``: vocab 65, context 64, 4 layers, d 128, 4 heads; 52 slots,
  809,856 f32 numbers), Adam, AdamW and SGD with momentum, median of interleaved
  repetitions; with ``--xla`` also the same update compiled by XLA
  (:func:`topos.optim.jitted.compiled`).
- ``first call`` (with ``--xla``): seconds from an emitted training step (batch 16) to its
  first result on the XLA road (compile included), against ``jax.jit``'s first call of the
  same step written in jax.numpy (trace, lower, compile, run), in one process, and how many
  executables each first call compiled.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.workloads import CONTEXT, DIM, HEADS, LAYERS, VOCAB, small_gpt
from topos import Parameters, Tape, Tensor, f32
from topos.optim import Adam, AdamW, Optimizer, Sgd

Row = dict[str, Any]

BATCH = 16


def gpt_table() -> Parameters:
    """The small GPT's parameters (benchmarks/workloads.py's model, drawn from seed 0)."""
    tape = Tape(element=f32)
    small_gpt(tape, seed=0)
    return tape.seal().parameters()


def optimizers() -> dict[str, Optimizer]:
    return {"Adam": Adam(1e-3), "AdamW": AdamW(1e-3, decay=0.01), "SGD momentum": Sgd(1e-2, momentum=0.9)}


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def update_rows(repeats: int = 30, xla: bool = False) -> list[Row]:
    """µs per update of each optimizer over the small GPT's table, interleaved."""
    parameters = gpt_table()
    rng = np.random.default_rng(0)
    gradients = parameters.map(lambda p: Tensor(rng.standard_normal(p.shape.axes).astype(np.float32) * 0.01, f32))
    steps: dict[str, Callable[[], None]] = {}

    def stepper(optimizer: Optimizer) -> Callable[[], None]:
        current, state = parameters, optimizer.init(parameters)

        def step() -> None:
            nonlocal current, state
            current, state = optimizer.update(gradients, state, current)

        step()  # warm: scratch grown, anything compiled
        return step

    for name, optimizer in optimizers().items():
        steps[f"{name}|numpy"] = stepper(optimizer)
        if xla:
            from topos.optim import compiled

            steps[f"{name}|xla"] = stepper(compiled(optimizer))
    if xla:
        steps["AdamW|optax"] = optax_adamw(parameters, gradients)
    samples: dict[str, list[float]] = {key: [] for key in steps}
    for _ in range(repeats):
        for key, step in steps.items():
            begin = time.perf_counter()
            step()
            samples[key].append(time.perf_counter() - begin)
    rows = []
    for key, taken in samples.items():
        name, road = key.split("|")
        system = {"numpy": "topos numpy update", "xla": "topos XLA update", "optax": "optax under jax.jit"}[road]
        # numpy runs the update on one thread; XLA uses its own pool over the visible cores.
        threads = 1 if road == "numpy" else len(os.sched_getaffinity(0))
        rows.append({"workload": f"small GPT {name} update", "system": system, "threads": threads,
                     "value": round(_median_us(taken), 1), "unit": "us"})
    return rows


def alignment_rows(repeats: int = 200) -> list[Row]:
    """µs per XLA call taking one 8 MiB f32 argument, 64-byte aligned against 16-byte aligned.

    XLA:CPU reads an aligned numpy argument in place and copies any other on every call;
    numpy's own allocations are usually 16-byte aligned.
    """
    import jax

    shape = (1024, 2048)
    jit: Any = jax.jit(lambda x: x[0, 0])
    function = jit.lower(np.zeros(shape, np.float32)).compile()

    def placed(offset: int) -> np.ndarray[Any, Any]:
        raw = np.empty(4 * 1024 * 2048 + 128, np.uint8)
        start = -raw.ctypes.data % 64 + offset
        array = raw[start : start + 4 * 1024 * 2048].view(np.float32).reshape(shape)
        array[...] = 1.0
        return array

    arrays = {"64-byte aligned argument": placed(0), "16-byte aligned argument": placed(16)}
    samples: dict[str, list[float]] = {key: [] for key in arrays}
    for _ in range(repeats):
        for key, array in arrays.items():
            begin = time.perf_counter()
            float(function(array))
            samples[key].append(time.perf_counter() - begin)
    return [
        {"workload": "XLA call, one 8 MiB argument", "system": key, "threads": len(os.sched_getaffinity(0)),
         "value": round(_median_us(taken), 1), "unit": "us"}
        for key, taken in samples.items()
    ]


def optax_adamw(parameters: Parameters, gradients: Parameters) -> Callable[[], None]:
    """optax's AdamW over the same table as jax arrays, one jitted update (the peer's best case)."""
    import importlib

    import jax

    optax: Any = importlib.import_module("optax")  # an optional peer, untyped
    transform = optax.adamw(1e-3, weight_decay=0.01)
    held: list[Any] = [[jax.device_put(p.numpy()) for p in parameters.payloads()]]
    grads = [jax.device_put(g.numpy()) for g in gradients.payloads()]
    held.append(transform.init(held[0]))

    def update(p: Any, g: Any, state: Any) -> Any:
        updates, state = transform.update(g, state, p)
        return optax.apply_updates(p, updates), state

    jitted: Any = jax.jit(update)
    ready: Any = jax.block_until_ready

    def step() -> None:
        held[0], held[1] = jitted(held[0], grads, held[1])
        ready(held[0])

    step()
    return step


def rows(repeats: int = 30, xla: bool = False) -> list[Row]:
    """Every row this benchmark measures."""
    found = update_rows(repeats, xla)
    if xla:
        found += first_call_rows() + alignment_rows()
    return found


class CompileCounter:
    """Counts XLA compiles while active: jax's backend entry and the road's client entry."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._undo: list[Callable[[], None]] = []

    def __enter__(self) -> CompileCounter:
        import jax._src.compiler as compiler

        from topos import xla

        for owner, name, label in ((compiler, "backend_compile_and_load", "jax"), (xla, "_compile_on_client", "client")):
            real = getattr(owner, name)

            def counted(*args: Any, _real: Any = real, _label: str = label, **kwargs: Any) -> Any:
                self.calls.append(_label)
                return _real(*args, **kwargs)

            setattr(owner, name, counted)
            self._undo.append(functools.partial(setattr, owner, name, real))
        return self

    def __exit__(self, *exc: object) -> None:
        for undo in reversed(self._undo):
            undo()


def first_call_rows() -> list[Row]:
    """Seconds to the first result of the small GPT's training step: topos XLA road against jax.jit.

    topos: emit the lowered training plan, compile it and run it once (recording,
    differentiating and lowering are timed apart); jax: ``jax.jit(value_and_grad(loss))``
    traced, lowered, compiled and run once. One process; compiles counted for each.
    """
    import jax

    from benchmarks.bench_emission import Config, jax_loss, record_topos, tokens, weights
    from topos import XlaExecutable

    config = Config(layers=LAYERS, dim=DIM, heads=HEADS, vocab=VOCAB, context=CONTEXT, batch=BATCH)
    w = weights(config)
    ids, targets = tokens(config)
    begin = time.perf_counter()
    network, roots = record_topos(config, w, ids, targets)
    plan = network.entry(roots).lower()
    recorded = time.perf_counter() - begin
    with CompileCounter() as topos_count:
        begin = time.perf_counter()
        executable = XlaExecutable.of_plan(plan)
        executable.forward(network.parameters(), {})
        topos_first = time.perf_counter() - begin
    step = jax.jit(jax.value_and_grad(jax_loss(config)))
    with CompileCounter() as jax_count:
        begin = time.perf_counter()
        loss, _ = step(w, ids.astype(np.int32), targets.astype(np.int32))
        float(loss)  # waits for the result
        jax_first = time.perf_counter() - begin
    workload = "small GPT train step first call"
    threads = len(os.sched_getaffinity(0))  # XLA compiles and runs over every visible core
    return [
        {"workload": workload, "system": "topos XLA road (emit+compile+run)", "threads": threads, "value": round(topos_first, 3), "unit": "s"},
        {"workload": workload, "system": "topos record+differentiate+lower", "threads": threads, "value": round(recorded, 3), "unit": "s"},
        {"workload": workload, "system": "jax.jit (trace+lower+compile+run)", "threads": threads, "value": round(jax_first, 3), "unit": "s"},
        {"workload": workload, "system": "topos XLA road compiles", "threads": threads, "value": len(topos_count.calls), "unit": "compiles"},
        {"workload": workload, "system": "jax.jit compiles", "threads": threads, "value": len(jax_count.calls), "unit": "compiles"},
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--xla", action="store_true", help="also the XLA update and the first call's compile")
    args = parser.parse_args(argv)
    for row in rows(args.repeats, args.xla):
        print(f"{row['workload']:<34} {row['system']:<28} threads {row['threads']}  {row['value']:>12} {row['unit']}")


if __name__ == "__main__":
    main()
