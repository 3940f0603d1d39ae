"""The sharded training step: topos's XLA road under ``FullySharded`` against ``jax.jit`` with ``jax.sharding``.

Run it with ``python -m benchmarks.bench_sharding [--quick] [--devices 2,4] [--json PATH]``
from the repository root.

Contract:

- Workload: the suite's small GPT (``benchmarks/workloads.py``'s
  :data:`~benchmarks.workloads.SMALL_GPT`: vocab 65, context 64, 4 layers, d 128, 4 heads,
  16 sequences of 64 tokens) taking one training step: the loss, every gradient, and SGD
  with momentum (rate :data:`RATE`, momentum :data:`MOMENTUM`) carried in the step, so the
  updated parameters and momenta are results that the next step takes as they are.
- Systems: ``topos``: the step recorded once, compiled on the XLA road with
  ``FullySharded(Mesh({"data": N}), batch=[tokens, targets], state=momenta)`` and run with
  ``compiled.on_device``, its updates fed back on the devices; ``jax``: the same step
  written in jax (``benchmarks/peers.py``'s GPT loss, ``jax.value_and_grad``) under
  ``jax.jit`` with ``NamedSharding``/``PartitionSpec`` over a ``jax.sharding.Mesh`` of the
  same N devices and the same splits: every parameter and momentum whose first axis divides
  N split along it (``P("data")``) and pinned whole where the loss reads it
  (``with_sharding_constraint(p, P())``, what topos's gathered parameters are), the rest
  replicated, the batch split along its rows, the gradients, updates and new momenta split
  like their parameters. Both start from the same weights and the same batch.
- One measuring process per device count (``XLA_FLAGS=--xla_force_host_platform_device_count=N``
  is read once, when jax loads), both systems in it, timed in interleaved rounds (each
  system once per round) after a warm-up step each; each step waits for every result
  (``jax.block_until_ready``). The median and fastest are kept, and the CPU share of the
  process while each system ran (process CPU time over wall time). N host devices run
  their programs on threads of their own, so the process should keep ``min(N, cores)``
  cores busy; a ratio is marked starved when either side's share is below :data:`STARVED`
  of that (a conservative reading: a step whose collectives make devices wait may keep fewer
  busy even alone, and is marked all the same). The load average before and after is
  printed beside it.
- Checks before timing: topos's loss and every updated parameter against jax's, the largest
  difference over the largest magnitude (float32 in other orders; reported, not asserted).
- ``--quick``: a one-layer GPT of width 32 on 2 devices, two rounds: a smoke run (about 12 s).
  Nothing is asserted: the figures are for reading. The issue's target is
  :data:`TARGET` (topos at most 1.1 times jax's step).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import workloads
from benchmarks.bench_batching import timed_once, timing_summary

RATE, MOMENTUM = 0.1, 0.9
#: A ratio is marked when either side's process ran below this share of the cores its
#: devices could keep busy (``min(devices, cores)``): a starved run measures its neighbours.
STARVED = 0.9
#: The issue's target: topos's sharded step at most this many times jax's.
TARGET = 1.1
QUICK_GPT = workloads.GptShape(vocab=65, context=8, layers=1, dim=32, heads=2, batch=4, table=8)
LABELS = {"topos": "topos XLA road, FullySharded", "jax": "jax.jit, NamedSharding"}
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Runner:
    """One system's step (returns its results, waited for) and its samples."""

    step: Callable[[], list[Any]]
    first_s: float
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def once(self) -> None:
        timed_once(self.step, self.wall, self.cpu)

    def summary(self) -> dict[str, float]:
        return timing_summary(self.wall, self.cpu, self.first_s)


@dataclass
class Step:
    """The recorded step: its network, roots, parameter paths and symbols, batch and momenta."""

    network: Any
    roots: list[Any]
    names: list[str]
    weights: list[Any]
    batch: list[Any]
    momenta: list[Any]
    tokens: Any
    targets: Any


def record(shape: workloads.GptShape) -> Step:
    """The GPT step with SGD with momentum carried in it: loss, gradients, updates, new momenta."""
    from topos import Tape, Tensor, f32
    from topos.nn import causal_mask, cross_entropy, named_parameters

    ids = np.random.default_rng(workloads.SEEDS["gpt"]).integers(0, shape.vocab, (shape.batch, shape.context + 1))
    tokens, targets = ids[:, :-1].reshape(-1), ids[:, 1:].reshape(-1)

    def build(t: Tape) -> tuple[list[Any], list[str], list[Any], list[Any], list[Any]]:
        lm = workloads.transformer(t, shape, 3)
        tok = t.input(Tensor.selection(tokens, shape.vocab))
        tgt = t.input(Tensor.selection(targets, shape.vocab))
        positions = t.input(Tensor.selection(np.arange(shape.context), shape.table))
        loss = cross_entropy(lm(tok, shape.batch, t.leaf(causal_mask(shape.context, workloads.CLOSED)), positions), tgt)
        named = named_parameters(lm)
        weights = [symbol for _, symbol in named]
        gradients = [t.resolve(g) for g in t.differentiate(loss, weights).gradients()]
        momenta = [t.input(np.zeros(t.resolve(w).shape.axes)) for w in weights]
        moved = [m * MOMENTUM + g for m, g in zip(momenta, gradients, strict=True)]
        updated = [t.resolve(w) - m * RATE for w, m in zip(weights, moved, strict=True)]
        return [loss, *gradients, *updated, *moved], [str(p) for p, _ in named], weights, [tok, tgt], momenta

    network, (roots, names, weights, batch, momenta) = Tape.record(build, element=f32)
    return Step(network, list(roots), names, weights, batch, momenta, tokens, targets)


def _topos(step: Step, devices: int) -> tuple[Runner, list[Any]]:
    import jax

    from topos import XlaExecutable
    from topos.stages.stablehlo import FullySharded, Mesh

    started = time.perf_counter()
    policy = FullySharded(Mesh({"data": devices}), step.batch, state=step.momenta)
    executable = XlaExecutable.of_network(step.network, step.roots, sharding=policy)
    compiled = executable.compiled
    state = compiled.to_device(executable.arrays(step.network.parameters(), {}))
    count = len(step.weights)
    carried = [executable.position_of(s) for s in (*step.weights, *step.momenta)]
    ready: Any = jax.block_until_ready  # jax's stubs leave it untyped

    def run() -> list[Any]:
        out = ready(compiled.on_device(state))
        for k, position in enumerate(carried):
            if position is not None:  # a training loop feeds its updates back as they are
                state[position] = out[1 + count + k]
        return list(out)

    first = run()
    return Runner(run, time.perf_counter() - started), [np.asarray(first[0]), *(np.asarray(a) for a in first[1 + count : 1 + 2 * count])]


def _jax(step: Step, shape: workloads.GptShape, devices: int) -> tuple[Runner, list[Any]]:
    import functools

    import jax
    from jax.sharding import Mesh, NamedSharding

    from benchmarks.peers import jax_loss

    # jax's stubs leave these untyped.
    spec: Any = jax.sharding.PartitionSpec
    constrain: Any = jax.lax.with_sharding_constraint
    ready: Any = jax.block_until_ready
    started = time.perf_counter()
    loss_of = jax_loss("gpt")
    assert isinstance(loss_of, functools.partial)
    formula = functools.partial(loss_of.func, shape)
    mesh = Mesh(np.array(jax.devices()[:devices]), ("data",))
    weights = {n: np.asarray(step.network.parameters().of(s).numpy()) for n, s in zip(step.names, step.weights, strict=True)}
    split = {n: spec("data") if a.shape[0] % devices == 0 else spec() for n, a in weights.items()}
    held = {n: NamedSharding(mesh, s) for n, s in split.items()}
    whole = NamedSharding(mesh, spec())
    rows = NamedSharding(mesh, spec("data"))

    def gathered(p: dict[str, Any], d: dict[str, Any]) -> Any:
        # Pinned whole where read, as topos's gathered parameters: one all-gather per step.
        return formula({n: constrain(a, whole) for n, a in p.items()}, d)

    def train(p: dict[str, Any], m: dict[str, Any], d: dict[str, Any]) -> Any:
        loss, grads = jax.value_and_grad(gathered)(p, d)
        moved = {n: m[n] * MOMENTUM + grads[n] for n in p}
        return loss, grads, {n: p[n] - moved[n] * RATE for n in p}, moved

    jitted = jax.jit(train, in_shardings=(held, held, rows), out_shardings=(whole, held, held, held))
    state = {
        "p": {n: jax.device_put(a, held[n]) for n, a in weights.items()},
        "m": {n: jax.device_put(np.zeros_like(a), held[n]) for n, a in weights.items()},
    }
    data = {"tokens": jax.device_put(step.tokens.astype(np.int32), rows), "labels": jax.device_put(step.targets.astype(np.int32), rows)}

    def run() -> list[Any]:
        out = ready(jitted(state["p"], state["m"], data))
        state["p"], state["m"] = out[2], out[3]
        return list(out)

    first = run()
    return Runner(run, time.perf_counter() - started), [np.asarray(first[0]), *(np.asarray(first[2][n]) for n in step.names)]


def _agreement(got: list[Any], want: list[Any]) -> float:
    """The largest difference over the largest magnitude, over the loss and every update."""
    return max(float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30) for a, b in zip(got, want, strict=True))


def worker(devices: int, quick: bool) -> dict[str, Any]:
    """Both systems on ``devices`` host devices in this process (jax already sees them)."""
    import jax

    if len(jax.devices()) < devices:
        raise SystemExit(f"this process has {len(jax.devices())} devices, wanted {devices}; set XLA_FLAGS before jax loads")
    shape = QUICK_GPT if quick else workloads.SMALL_GPT
    started = time.perf_counter()
    step = record(shape)
    record_s = time.perf_counter() - started
    topos, topos_first = _topos(step, devices)
    peer, peer_first = _jax(step, shape, devices)
    agreement = _agreement(topos_first, peer_first)
    least, most, budget = (2, 2, 0.0) if quick else (10, 60, 30.0)
    load = os.getloadavg()[0]
    runners = {"topos": topos, "jax": peer}
    begun = time.perf_counter()
    for runner in runners.values():
        runner.step()
    per_round = max(time.perf_counter() - begun, 1e-6)
    rounds = max(least, min(most, int(budget / per_round)))
    for _ in range(rounds):
        for runner in runners.values():
            runner.once()
    return {
        "devices": devices, "quick": quick, "title": f"GPT {shape.title()}", "record_s": record_s, "rounds": rounds,
        "agreement": agreement, "load_before": load, "load_after": os.getloadavg()[0], "cores": len(os.sched_getaffinity(0)),
        "systems": {name: runner.summary() for name, runner in runners.items()},
    }  # fmt: skip


def measure(devices: list[int], quick: bool) -> list[dict[str, Any]]:
    """One measuring process per device count (XLA reads its device count once, at import)."""
    rows = []
    for count in devices:
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "row.json"
            env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={count}", "TF_CPP_MIN_LOG_LEVEL": "3"}
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
            command = [sys.executable, "-m", "benchmarks.bench_sharding", "--worker", str(count), "--json", str(out)]
            done = subprocess.run([*command, *(["--quick"] if quick else [])], cwd=ROOT, env=env, timeout=1800, check=False)
            if done.returncode != 0:
                raise SystemExit(f"the measuring process for {count} devices exited {done.returncode}")
            rows.append(json.loads(out.read_text(encoding="utf-8")))
    return rows


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    """The table: per device count, each system's median and fastest ms, CPU share, and the ratio."""
    lines = [
        f"Sharded training step ({rows[0]['title'] if rows else ''}, SGD with momentum carried in the step); medians of",
        "interleaved rounds in one process per device count; CPU share is process CPU time over wall time.",
        "",
        "| host devices | system | ms / step | fastest ms | CPU share | first step s | topos / jax | agreement | load avg |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        s = row["systems"]
        share = min(s["topos"]["cpu_share"], s["jax"]["cpu_share"])
        ratio = s["topos"]["median_s"] / s["jax"]["median_s"]
        busy = min(row["devices"], row["cores"])
        cell = f"{ratio:.2f}" + (f" (starved: CPU share {share:.2f} of {busy})" if share < STARVED * busy else "")
        for name in ("topos", "jax"):
            m = s[name]
            lines.append(
                f"| {row['devices']} | {LABELS[name]} | {m['median_s'] * 1e3:.2f} | {m['fastest_s'] * 1e3:.2f} | {m['cpu_share']:.2f} | "
                f"{m['first_s']:.2f} | {cell if name == 'topos' else ''} | {row['agreement']:.1e} | "
                f"{row['load_before']:.2f} / {row['load_after']:.2f} |"
            )
    lines += ["", f"Target: topos / jax at most {TARGET}."]
    return lines


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_sharding", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a one-layer GPT of width 32 on 2 devices, two rounds: a smoke test")
    parser.add_argument("--devices", default="", help="comma-separated host device counts (default 2,4; --quick: 2)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON to this file")
    parser.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.worker:
        row = worker(args.worker, args.quick)
        assert args.json is not None
        args.json.write_text(json.dumps(row, indent=1, sort_keys=True), encoding="utf-8")
        return
    chosen = [int(n) for n in args.devices.split(",") if n.strip()] or ([2] if args.quick else [2, 4])
    rows = measure(chosen, args.quick)
    print("\n".join(markdown(rows)))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1, sort_keys=True), encoding="utf-8")


if __name__ == "__main__":
    main()
