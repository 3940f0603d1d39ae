"""One measuring process: build the systems of some workloads, time them, count their faults.

The driver (``benchmarks/suite.py``) starts this as ``python -m benchmarks --worker ...`` with
the thread count already in the environment (XLA reads its flags once, at import), so every
figure a worker reports was taken under one thread setting. Results go to a JSON file; each
system's loss and gradients go to an ``.npz`` beside it, which the driver compares against
topos's Fast plan (peers may run in other processes, so the check cannot live here).
"""

from __future__ import annotations

import gc
import json
import os
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import workloads
from benchmarks.workloads import Workload

Array = np.ndarray[Any, Any]

#: System keys in table order, and how the table names them.
SYSTEMS = ("fast", "exact", "interp", "xla", "numpy", "jax", "torch", "compile")
LABELS = {
    "fast": "topos Fast plan",
    "exact": "topos Exact plan",
    "interp": "topos interpreter",
    "xla": "topos XLA road",
    "numpy": "numpy by hand",
    "jax": "jax.jit",
    "torch": "torch eager",
    "compile": "torch.compile",
}
#: Systems whose buffers are numpy arrays, which tracemalloc sees.
TRACED = ("fast", "exact", "interp", "numpy")


class Skip(Exception):
    """A system that cannot run here; the message says why."""


@dataclass
class Runner:
    """A timed step and the arrays it computes (loss, then gradients in ``names`` order).

    ``first_s`` is the wall time from the recorded step (topos: the differentiated network;
    a peer: the parameters as numpy arrays) to the first result, every lowering, tracing and
    compile included, imports not."""

    step: Callable[[], object]
    arrays: Callable[[], list[Array]]
    note: str = ""
    samples: list[float] = field(default_factory=list)
    first_s: float | None = None


def _topos(w: Workload, system: str) -> Runner:
    from topos import Numerics

    parameters = w.network.parameters()
    roots = w.roots()
    if system == "xla":
        from topos import XlaExecutable
        from topos.xla import available

        if not available():
            raise Skip("the XLA road needs the xla extra (jax and jaxlib); pip install topos-autodiff[xla]")
        started = time.perf_counter()
        executable = XlaExecutable.of_plan(w.network.entry(roots).lower())
        compiled = time.perf_counter() - started

        def xla_step() -> Any:
            return executable.forward(parameters, {})

        def xla_arrays() -> list[Array]:
            run = xla_step()
            return [run.of(s).numpy() for s in roots]

        xla_step()
        return Runner(xla_step, xla_arrays, f"lower + emit + compile {compiled:.2f} s", first_s=time.perf_counter() - started)
    if system == "interp":
        # The oracle reading of the same recorded step (forward and recorded gradient), which
        # the Exact plan promises never to be slower than.
        network = w.network
        started = time.perf_counter()

        def interpret() -> Any:
            return network.forward(parameters)

        def interpreted() -> list[Array]:
            run = interpret()
            return [run.of(s).numpy() for s in roots]

        interpret()
        return Runner(interpret, interpreted, first_s=time.perf_counter() - started)
    numerics = Numerics.FAST if system == "fast" else Numerics.EXACT
    started = time.perf_counter()
    plan = w.network.entry(roots).numerics(numerics).lower()

    def step() -> Any:
        return plan.forward(parameters)

    def arrays() -> list[Array]:
        run = step()
        return [run.of(s).numpy() for s in roots]

    step()
    return Runner(step, arrays, first_s=time.perf_counter() - started)


def _jax(w: Workload) -> Runner:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as error:
        raise Skip(f"jax is not installed ({error}); pip install topos-autodiff[peers]") from error
    from benchmarks.peers import jax_loss

    started = time.perf_counter()
    params = {k: jnp.asarray(v) for k, v in w.params.items()}
    data = {k: jnp.asarray(v) for k, v in w.data.items()}
    compiled = jax.jit(jax.value_and_grad(jax_loss(w.key)))

    def step() -> list[Array]:
        # Host numpy arrays, as the topos XLA road hands back: both sides pay that crossing
        # (np.asarray waits for the result and views XLA:CPU's buffer without a copy).
        loss, grads = compiled(params, data)
        return [np.asarray(loss), *(np.asarray(grads[n]) for n in w.names)]

    def arrays() -> list[Array]:
        return step()

    step()
    first = time.perf_counter() - started
    return Runner(step, arrays, f"trace + compile {first:.2f} s", first_s=first)


def _torch(w: Workload, compiled: bool) -> Runner:
    try:
        import torch
    except ImportError as error:
        raise Skip(f"torch is not installed ({error}); pip install topos-autodiff[peers]") from error
    from benchmarks.peers import torch_loss

    started = time.perf_counter()
    params = {k: torch.from_numpy(v.copy()).requires_grad_() for k, v in w.params.items()}
    ordered = [params[n] for n in w.names]
    data = {k: torch.from_numpy(v) for k, v in w.data.items()}
    loss_of = torch_loss(w.key)
    if compiled:
        loss_of = torch.compile(loss_of)

    def step() -> Any:
        loss = loss_of(params, data)
        return loss, torch.autograd.grad(loss, ordered)

    def arrays() -> list[Array]:
        loss, grads = step()
        return [loss.detach().numpy(), *(g.numpy() for g in grads)]

    try:
        step()
    except Exception as error:  # torch.compile fails in many environment-specific ways
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise Skip(f"{type(error).__name__}: {first[:160]}") from error
    seconds = time.perf_counter() - started
    return Runner(step, arrays, f"compile {seconds:.2f} s" if compiled else "", first_s=seconds)


#: Pairs too slow to repeat: the Exact plan's matmuls fold in one fixed order (no BLAS), which
#: at the wide layers' 15 GFLOP takes tens of seconds a step.
SLOW = {
    ("wide", "exact"): "the Exact plan folds the wide matmuls without BLAS (tens of seconds a step); --slow times it",
    ("gpt2", "compile"): "torch.compile of the 124M step compiles for minutes; --slow times it",
    ("wide", "interp"): "the interpreter folds the wide matmuls without BLAS, as the Exact plan does; --slow times it",
}
#: Pairs never timed, even with ``--slow``.
NEVER = {
    ("gpt2", "exact"): "the Exact plan folds matmuls without BLAS: about 95 GFLOP a step, six times the wide layers' (minutes)",
    ("gpt2", "interp"): "the interpreter folds matmuls without BLAS, as the Exact plan does (minutes a step)",
}


def build(w: Workload, system: str, quick: bool, slow: bool = False) -> Runner:
    """The runner of ``system`` on ``w``, its first call made; raises :class:`Skip` with the
    reason when it cannot run."""
    if (w.key, system) in NEVER:
        raise Skip(NEVER[w.key, system])
    if (w.key, system) in SLOW and not slow:
        raise Skip(SLOW[w.key, system])
    if system in ("fast", "exact", "xla", "interp"):
        return _topos(w, system)
    if system == "numpy":
        if w.numpy_step is None:
            raise Skip("no hand-written numpy for this workload")
        step = w.numpy_step
        started = time.perf_counter()
        step()
        return Runner(step, lambda: [np.asarray(a) for a in step()], first_s=time.perf_counter() - started)
    if system == "jax":
        return _jax(w)
    if quick and system == "compile":
        raise Skip("--quick leaves torch.compile out (its first call compiles for tens of seconds)")
    return _torch(w, system == "compile")


# --------------------------------------------------------------------------- measuring


def interleaved(runners: list[Runner], budget_s: float, least: int, most: int) -> int:
    """Time the runners in rounds, each once per round, after two warm-up calls each.

    Alternating exposes every system to the same neighbours on a shared host. The number of
    rounds fits ``budget_s`` from the warm-up's cost, within ``[least, most]``.
    """
    started = time.perf_counter()
    for runner in runners:
        runner.step()
        runner.step()
    per_round = max((time.perf_counter() - started) / 2, 1e-6)
    rounds = max(least, min(most, int(budget_s / per_round)))
    for _ in range(rounds):
        for runner in runners:
            start = time.perf_counter()
            runner.step()
            runner.samples.append(time.perf_counter() - start)
    return rounds


def _status(field_name: str) -> int:
    """A ``kB`` figure of /proc/self/status (0 where there is none)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _reset_high_water() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where the kernel refuses."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        return False
    return True


def footprint(runner: Runner, traced: bool, steps: int = 2) -> dict[str, float | None]:
    """Page faults per step, the RSS high-water growth of one step, and (for numpy-backed
    systems) the peak of tracemalloc's traced bytes during one step."""
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        runner.step()
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / steps
    growth: float | None = None
    if _reset_high_water():
        resting = _status("VmRSS")
        runner.step()
        growth = float(max(0, _status("VmHWM") - resting))
    peak: float | None = None
    if traced:
        tracemalloc.start()
        tracemalloc.reset_peak()
        runner.step()
        peak = float(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return {"faults": faults, "rss_growth": growth, "traced_peak": peak}


def blas_peak(threads: int) -> float:
    """GFLOP/s of numpy's single matmul at the wide workload's first-layer shape."""
    rng = np.random.default_rng(99)
    a, b = workloads.WIDE[0], workloads.WIDE[1]
    x = rng.standard_normal((workloads.WIDE_BATCH, a)).astype(np.float32)
    m = rng.standard_normal((a, b)).astype(np.float32)
    x @ m
    best = min(_timed(lambda: x @ m) for _ in range(5))
    return 2.0 * workloads.WIDE_BATCH * a * b / best / 1e9


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def environment_report(threads: int) -> dict[str, str]:
    """What actually ran: the BLAS library, kernel and threads, torch's and XLA's settings."""
    report: dict[str, str] = {"xla_flags": os.environ.get("XLA_FLAGS", ""), "omp": os.environ.get("OMP_NUM_THREADS", "")}
    try:
        from threadpoolctl import threadpool_info

        report["blas"] = "; ".join(
            f"{i.get('internal_api')} {i.get('version')} kernel {i.get('architecture')} threads {i.get('num_threads')}"
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        )
    except ImportError:
        report["blas"] = "threadpoolctl not installed: kernel and threads unknown"
    if "torch" in sys.modules:
        import torch

        report["torch"] = f"intra-op {torch.get_num_threads()}, inter-op {torch.get_num_interop_threads()}"
    return report


def set_threads(threads: int, systems: list[str]) -> Any:
    """Limit numpy's BLAS (threadpoolctl) and torch to ``threads``; returns the limiter to hold.

    torch is imported only when a torch system runs here: loading it changes the process
    (its allocator hooks, its thread pools) for the systems measured beside it."""
    limiter: Any = None
    try:
        from threadpoolctl import threadpool_limits

        limiter = threadpool_limits(limits=threads, user_api="blas")
    except ImportError:
        pass
    if "torch" not in systems and "compile" not in systems:
        return limiter
    try:
        import torch

        torch.set_num_threads(threads)
        torch.set_num_interop_threads(1)
    except ImportError:
        pass
    return limiter


def preload(systems: list[str]) -> None:
    """Import what the XLA road and jax load lazily, so no first call pays for an import."""
    if "xla" in systems or "jax" in systems:
        try:
            from topos.xla import available

            available()
            import jax  # noqa: F401
        except ImportError:
            pass


def work(keys: list[str], systems: list[str], threads: int, quick: bool, out: Path, slow: bool = False) -> None:
    """Measure ``systems`` on each workload of ``keys`` in this process; write ``out``."""
    limiter = set_threads(threads, systems)
    rows: list[dict[str, Any]] = []
    skips: list[dict[str, str]] = []
    budget, least, most = (0.5, 3, 3) if quick else (12.0, 7, 40)
    firsts: list[dict[str, Any]] = []
    preload(systems)
    for key in keys:
        started = time.perf_counter()
        w = workloads.workload(key)
        firsts.append({"workload": key, "system": "record", "first_s": time.perf_counter() - started})
        runners: dict[str, Runner] = {}
        for system in systems:
            try:
                runners[system] = build(w, system, quick, slow)
            except Skip as reason:
                skips.append({"workload": key, "system": system, "reason": str(reason)})
                print(f"  {key}: skipping {LABELS[system]}: {reason}", flush=True)
        for system, runner in runners.items():
            firsts.append({"workload": key, "system": system, "first_s": runner.first_s})
            # Saved by name: the agreement check treats some gradients by name (ZERO_GRADIENTS).
            computed: dict[str, Any] = dict(zip(("loss", *w.names), runner.arrays(), strict=True))
            np.savez(out.with_name(f"{out.stem}-{key}-{system}.npz"), **computed)
            del computed
        rounds = interleaved(list(runners.values()), budget, least, most)
        for system, runner in runners.items():
            rows.append(
                {
                    "workload": key,
                    "system": system,
                    "median_s": statistics.median(runner.samples),
                    "rounds": rounds,
                    "note": runner.note,
                    **footprint(runner, system in TRACED),
                }
            )
            print(f"  {key}: {LABELS[system]} {rows[-1]['median_s'] * 1e3:.3f} ms", flush=True)
        del runners, w
        gc.collect()
    result = {
        "threads": threads,
        "report": environment_report(threads),
        "rows": rows,
        "skips": skips,
        "firsts": firsts,
        "peak_gflops": blas_peak(threads) if "wide" in keys else None,
    }
    out.write_text(json.dumps(result, indent=1, sort_keys=True))
    del limiter
