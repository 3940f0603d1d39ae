"""Per-example gradients: ``batch(gradient(...))`` on each topos road against a loop and peers.

Run it with ``python -m benchmarks.bench_batching [--quick] [--threads N] [--only ...]
[--systems ...] [--json PATH]`` from the repository root; the suite runs the same rows with
``python -m benchmarks --only batching`` (one measuring process per thread count, see
``benchmarks/suite.py``) and renders them with :func:`markdown`.

Contract:

- Workloads (:data:`KEYS`): the gradient of every parameter, one per example, of
  (``mlp``) the suite's MLP 784-256-10 (tanh, cross-entropy; ``benchmarks/run.py``'s draws)
  over 64 examples; (``classifier``) the 196-64-10 classifier of ``examples/per_example``
  (MNIST at 14x14) over 64 examples; (``gpt``) the suite's small GPT
  (``benchmarks/workloads.py``'s :data:`~benchmarks.workloads.SMALL_GPT`: vocab 65, context
  64, 4 layers, d 128, 4 heads) over 16 sequences of 64 tokens, every parameter (52 tensors,
  809,856 numbers per example). One example is what the network is recorded over (a row,
  a sequence); the data are fixed random draws from one seed.
- Systems (:data:`SYSTEMS`): ``loop``, the baseline: the unbatched gradient's Fast plan
  run once per example in a Python loop (feeds built beforehand); ``exact``, ``fast`` and
  ``xla``: ``batch(gradient(network, loss, wrt), over=[inputs], size=B)`` lowered as the
  Exact plan, the Fast plan, and compiled for the XLA road (``XlaExecutable.of_plan``);
  ``jax``: ``jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0)))``; ``torch``:
  ``torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))``. The peers' losses are
  ``benchmarks/peers.py``'s formulas at a batch of one. A call hands back every per-example
  gradient as host arrays (jax's read into numpy, torch's CPU tensors). Peers are optional:
  a missing one is skipped with the reason.
- Checks before timing: each system's per-example gradients against the loop's (largest
  difference over the gradient's largest entry, within :data:`TOLERANCE`), and the Exact
  plan's slices of the first and the last example against the unbatched Exact plan run on
  that example alone, bit for bit (``batch()``'s guarantee).
- Timing: interleaved rounds (every system once per round) after a warm-up call each; the
  median and the fastest are kept, with the CPU share of the process while each row ran
  (process CPU time over wall time, summed over its timed calls; it can reach the thread
  count). Ratios divide medians measured in the same rounds: ``loop / best topos road`` and
  ``best topos road / fastest peer``; a ratio whose either side ran below
  :data:`STARVED` of one core is marked, since a starved row measures the neighbours.
- One thread count per process: threadpoolctl for numpy's BLAS, ``torch.set_num_threads``,
  and the suite's XLA flags (set here before jax loads when the environment has none). The
  BLAS library and kernel that ran are reported through threadpoolctl. Run as the main
  program, this file drops ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` by re-executing itself
  before numpy loads; importing it changes nothing. Nothing is asserted:
  the figures are for reading. The issue's targets (:data:`TARGETS`) are printed beside them.

Example:
    >>> case = build_case("classifier", quick=True)
    >>> case.size, len(case.names)
    (4, 4)
"""

from __future__ import annotations

import os
import sys

_PINNED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# Only as the main program: importing this module (the suite's driver does) must neither
# replace the importing process nor change its environment.
if __name__ == "__main__" and any(name in os.environ for name in _PINNED) and os.environ.get("TOPOS_BENCH_REEXEC") != "1":
    _environment = {k: v for k, v in os.environ.items() if k not in _PINNED}
    _environment["TOPOS_BENCH_REEXEC"] = "1"
    _argv = ["-m", "benchmarks.bench_batching", *sys.argv[1:]] if __package__ else sys.argv
    os.execve(sys.executable, [sys.executable, *_argv], _environment)
if __package__ in (None, ""):
    # Run as a script, the checkout's topos (beside this folder) comes first, not an installed one.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import functools  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks import workloads  # noqa: E402
from topos import Network, Numerics, Symbol, Tape, Tensor, XlaExecutable, batch, f32, gradient  # noqa: E402
from topos.nn import causal_mask, cross_entropy, named_parameters  # noqa: E402

Array = np.ndarray[Any, Any]
Gradients = dict[str, Array]

#: Workload keys in table order, and the systems in table order with their labels.
KEYS = ("mlp", "classifier", "gpt")
SYSTEMS = ("loop", "exact", "fast", "xla", "jax", "torch")
LABELS = {
    "loop": "topos loop over examples (Fast plan)",
    "exact": "topos batched, Exact plan",
    "fast": "topos batched, Fast plan",
    "xla": "topos batched, XLA road",
    "jax": "jax.jit(jax.vmap(jax.grad))",
    "torch": "torch.func.vmap(torch.func.grad)",
}
TOPOS_ROADS, PEERS = ("exact", "fast", "xla"), ("jax", "torch")
#: Per-example gradients agree with the loop's when the largest difference over the
#: gradient's largest entry stays below this (float32 summed in other orders and kernels).
TOLERANCE = 2e-3
#: A ratio is marked when either side's process ran below this CPU share (a starved run).
STARVED = 0.9
#: The issue's targets: the best topos road this many times faster than the loop, and at
#: most this many times the fastest peer's time.
TARGETS = {"loop / best topos": 10.0, "best topos / fastest peer": 1.0}
#: MLP sizes (inputs, hidden, classes) and batch per workload; the GPT's come from workloads.
MLP_SIZES = {"mlp": (784, 256, 10), "classifier": (196, 64, 10)}
BATCHES = {"mlp": 64, "classifier": 64, "gpt": workloads.SMALL_GPT.batch}
#: ``--quick``: a smoke test in seconds (tiny batches, a one-layer GPT of width 32).
QUICK_BATCH = 4
QUICK_GPT = workloads.GptShape(vocab=65, context=8, layers=1, dim=32, heads=2, batch=2, table=8)


# --------------------------------------------------------------------------- the workloads


@dataclass
class Case:
    """One workload: the unbatched gradient, its batched reading, and every feed prepared."""

    key: str
    title: str
    size: int
    names: tuple[str, ...]
    longer: Network
    roots: tuple[Symbol, ...]
    wrt: tuple[Symbol, ...]
    gradients: tuple[Symbol, ...]
    wide: Network
    wide_roots: tuple[Symbol, ...]
    wide_gradients: tuple[Symbol, ...]
    wide_feeds: dict[Symbol, Tensor]
    loop_feeds: list[dict[Symbol, Tensor]]
    params: dict[str, Array]
    data: dict[str, Array]
    gpt: workloads.GptShape | None = None


def _finish(
    key: str, title: str, size: int, network: Network, loss: Symbol, wrt: list[Symbol], names: tuple[str, ...],
    inputs: list[Symbol], loop_feeds: list[dict[Symbol, Tensor]], stacked: list[Array], data: dict[str, Array],
    gpt: workloads.GptShape | None = None,
) -> Case:
    longer, adjoints = gradient(network, loss, wrt)
    wide, mapping = batch(longer, inputs, size)
    mapped = mapping.adjoints(adjoints)
    table = network.parameters()
    params = {name: table.of(symbol).numpy().copy() for name, symbol in zip(names, wrt, strict=True)}
    feeds = {mapping.of(symbol): Tensor(array) for symbol, array in zip(inputs, stacked, strict=True)}
    return Case(
        key, title, size, names, longer, adjoints.roots(), tuple(wrt), adjoints.gradients(), wide, mapped.roots(),
        mapped.gradients(), feeds, loop_feeds, params, data, gpt,
    )


def _mlp(key: str, size: int) -> Case:
    inputs, hidden, classes = MLP_SIZES[key]
    rng = np.random.default_rng({"mlp": 0, "classifier": 21}[key])
    if key == "mlp":
        from benchmarks.run import mlp_data

        d = mlp_data(rng)  # the suite's draws (its batch of 64 rows)
        x, labels = d["x"][:size], d["y"][:size].argmax(1)
        weights = {k: d[k] for k in ("w1", "b1", "w2", "b2")}
    else:
        x = rng.standard_normal((size, inputs)).astype(np.float32)
        labels = rng.integers(0, classes, size)
        weights = {
            "w1": (rng.standard_normal((inputs, hidden)) / np.sqrt(inputs)).astype(np.float32), "b1": np.zeros(hidden, np.float32),
            "w2": (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32), "b2": np.zeros(classes, np.float32),
        }  # fmt: skip
    one_hot = np.eye(classes, dtype=np.float32)[labels]
    names = ("w1", "b1", "w2", "b2")

    def build(t: Tape) -> tuple[Symbol, Symbol, Symbol, list[Symbol]]:
        xs, ys = t.input(x[:1]), t.input(one_hot[:1])
        w1, b1, w2, b2 = (t.parameter(weights[k]) for k in names)
        hidden_ = (xs.matmul(w1) + b1.broadcast_along(0, 1)).tanh()
        loss = cross_entropy(hidden_.matmul(w2) + b2.broadcast_along(0, 1), ys)
        return xs.symbol, ys.symbol, loss.symbol, [w1.symbol, b1.symbol, w2.symbol, b2.symbol]

    network, (xs, ys, loss, wrt) = Tape.record(build, element=f32)
    loop = [{xs: Tensor(x[b : b + 1]), ys: Tensor(one_hot[b : b + 1])} for b in range(size)]
    data = {"x": x[:, None, :], "labels": labels[:, None]}
    title = f"MLP {inputs}-{hidden}-{classes}, {size} examples"
    return _finish(key, title, size, network, loss, wrt, names, [xs, ys], loop, [x[:, None, :], one_hot[:, None, :]], data)


def _gpt(shape: workloads.GptShape) -> Case:
    size = shape.batch
    rng = np.random.default_rng(workloads.SEEDS["gpt"])
    ids = rng.integers(0, shape.vocab, (size, shape.context + 1))
    tokens, targets = ids[:, :-1], ids[:, 1:]

    def build(t: Tape) -> tuple[Symbol, Symbol, Symbol, list[Symbol], tuple[str, ...]]:
        lm = workloads.transformer(t, shape, 3)
        positions = t.input(Tensor.selection(np.arange(shape.context), shape.table))
        tok = t.input(Tensor.selection(tokens[0], shape.vocab))
        tgt = t.input(Tensor.selection(targets[0], shape.vocab))
        logits = lm(tok, 1, t.leaf(causal_mask(shape.context, workloads.CLOSED)), positions)
        loss = cross_entropy(logits, tgt)
        named = named_parameters(lm)
        return tok.symbol, tgt.symbol, loss.symbol, [s for _, s in named], tuple(str(p) for p, _ in named)

    network, (tok, tgt, loss, wrt, names) = Tape.record(build, element=f32)
    loop = [
        {tok: Tensor.selection(tokens[b], shape.vocab), tgt: Tensor.selection(targets[b], shape.vocab)} for b in range(size)
    ]
    # A batched selection is fed dense ([B, count, vocab]): a selection payload has rank two.
    eye = np.eye(shape.vocab, dtype=np.float32)
    data = {"tokens": tokens, "labels": targets}
    title = f"GPT v{shape.vocab} ctx{shape.context} L{shape.layers} d{shape.dim} h{shape.heads}, {size} sequences"
    return _finish("gpt", title, size, network, loss, wrt, names, [tok, tgt], loop, [eye[tokens], eye[targets]], data, shape)


def build_case(key: str, quick: bool = False) -> Case:
    """The workload ``key`` (tiny sizes with ``quick``), recorded, differentiated and batched."""
    if key == "gpt":
        return _gpt(QUICK_GPT if quick else workloads.SMALL_GPT)
    return _mlp(key, QUICK_BATCH if quick else BATCHES[key])


# --------------------------------------------------------------------------- the systems


class Skip(Exception):
    """A system that cannot run here; the message says why."""


@dataclass
class Runner:
    """A timed call handing back every per-example gradient, and its samples."""

    call: Callable[[], object]
    gradients: Callable[[], Gradients]
    first_s: float
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def once(self) -> None:
        timed_once(self.call, self.wall, self.cpu)

    def summary(self) -> dict[str, float]:
        return timing_summary(self.wall, self.cpu, self.first_s)


def timed_once(call: Callable[[], object], wall: list[float], cpu: list[float]) -> None:
    """Run ``call`` once, appending its wall and CPU seconds (CPU share is their ratio)."""
    started, used = time.perf_counter(), time.process_time()
    call()
    cpu.append(time.process_time() - used)
    wall.append(time.perf_counter() - started)


def timing_summary(wall: list[float], cpu: list[float], first_s: float) -> dict[str, float]:
    """Median and fastest wall time, the CPU share over every sample, and the first call."""
    return {
        "median_s": statistics.median(wall),
        "fastest_s": min(wall),
        "cpu_share": sum(cpu) / max(sum(wall), 1e-12),
        "first_s": first_s,
    }


def _loop(case: Case) -> Runner:
    started = time.perf_counter()
    plan = case.longer.entry(case.roots).numerics(Numerics.FAST).lower()
    parameters = case.longer.parameters()

    def call() -> list[Any]:
        return [plan.forward(parameters, feeds) for feeds in case.loop_feeds]

    def gradients() -> Gradients:
        runs = call()
        return {n: np.stack([r.of(g).numpy() for r in runs]) for n, g in zip(case.names, case.gradients, strict=True)}

    call()
    return Runner(call, gradients, time.perf_counter() - started)


def _batched(case: Case, system: str) -> Runner:
    started = time.perf_counter()
    parameters = case.wide.parameters()
    runner: Any
    if system == "xla":
        from topos.xla import available

        if not available():
            raise Skip("the XLA road needs the xla extra (jax and jaxlib); pip install topos-autodiff[xla]")
        runner = XlaExecutable.of_plan(case.wide.entry(case.wide_roots).lower())
    else:
        numerics = Numerics.EXACT if system == "exact" else Numerics.FAST
        runner = case.wide.entry(case.wide_roots).numerics(numerics).lower()

    def call() -> Any:
        return runner.forward(parameters, case.wide_feeds)

    def gradients() -> Gradients:
        run = call()
        return {n: run.of(g).numpy() for n, g in zip(case.names, case.wide_gradients, strict=True)}

    call()
    return Runner(call, gradients, time.perf_counter() - started)


def _peer_loss(table: Callable[[str], Any], case: Case) -> Callable[[dict[str, Any], dict[str, Any]], Any]:
    """``benchmarks/peers.py``'s loss of the workload at a batch of one example."""
    loss = table("mlp" if case.gpt is None else "gpt")
    if case.gpt is None:
        return loss  # type: ignore[no-any-return]
    # The peers' GPT is a partial over its shape: the same formula, over one sequence.
    assert isinstance(loss, functools.partial)
    return functools.partial(loss.func, dataclasses.replace(case.gpt, batch=1))


def _jax(case: Case) -> Runner:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as error:
        raise Skip(f"jax is not installed ({error}); pip install topos-autodiff[peers]") from error
    from benchmarks.peers import jax_loss

    started = time.perf_counter()
    params = {k: jnp.asarray(v) for k, v in case.params.items()}
    data = {k: jnp.asarray(v) for k, v in case.data.items()}
    per_example = jax.jit(jax.vmap(jax.grad(_peer_loss(jax_loss, case)), in_axes=(None, 0)))

    def call() -> Gradients:
        grads = per_example(params, data)
        return {n: np.asarray(grads[n]) for n in case.names}

    call()
    return Runner(call, call, time.perf_counter() - started)


def _torch(case: Case) -> Runner:
    try:
        import torch
        import torch.func
    except ImportError as error:
        raise Skip(f"torch is not installed ({error}); pip install topos-autodiff[peers]") from error
    from benchmarks.peers import torch_loss

    started = time.perf_counter()
    params = {k: torch.from_numpy(v.copy()) for k, v in case.params.items()}
    data = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in case.data.items()}
    per_example = torch.func.vmap(torch.func.grad(_peer_loss(torch_loss, case)), in_dims=(None, 0))

    def call() -> Any:
        return per_example(params, data)

    def gradients() -> Gradients:
        grads = call()
        return {n: grads[n].detach().numpy() for n in case.names}

    call()
    return Runner(call, gradients, time.perf_counter() - started)


def build(case: Case, system: str) -> Runner:
    """The runner of ``system`` on ``case``, its first call made; :class:`Skip` when it cannot run."""
    if system == "loop":
        return _loop(case)
    if system in TOPOS_ROADS:
        return _batched(case, system)
    return _jax(case) if system == "jax" else _torch(case)


# --------------------------------------------------------------------------- checks


def _difference(got: Gradients, want: Gradients) -> float:
    """The largest difference over the gradient's largest entry, across every gradient."""
    worst = 0.0
    for name, expected in want.items():
        scale = max(float(np.max(np.abs(expected))), 1e-30)
        worst = max(worst, float(np.max(np.abs(got[name].astype(np.float64) - expected))) / scale)
    return worst


def exact_alone(case: Case, wide: Gradients, examples: tuple[int, ...]) -> bool:
    """Whether the batched Exact plan's slices of ``examples`` are, bit for bit, the
    unbatched Exact plan run on each example alone."""
    plan = case.longer.entry(case.roots).numerics(Numerics.EXACT).lower()
    parameters = case.longer.parameters()
    for b in examples:
        run = plan.forward(parameters, case.loop_feeds[b])
        for name, symbol in zip(case.names, case.gradients, strict=True):
            if not np.array_equal(run.of(symbol).bits(), Tensor(wide[name][b]).bits()):
                return False
    return True


# --------------------------------------------------------------------------- measuring


def interleaved(runners: list[Runner], least: int, most: int, budget_s: float) -> int:
    """Every runner once per round after a warm-up call each; the number of rounds fits
    ``budget_s`` from the warm-up's cost, within ``[least, most]``."""
    started = time.perf_counter()
    for runner in runners:
        runner.call()
    per_round = max(time.perf_counter() - started, 1e-6)
    rounds = max(least, min(most, int(budget_s / per_round)))
    for _ in range(rounds):
        for runner in runners:
            runner.once()
    return rounds


def measure_case(key: str, systems: list[str], quick: bool, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """One workload's rows in this process: checks, then interleaved timings."""
    started = time.perf_counter()
    case = build_case(key, quick)
    row: dict[str, Any] = {"workload": key, "title": case.title, "size": case.size, "record_s": time.perf_counter() - started}
    runners: dict[str, Runner] = {}
    skips: dict[str, str] = {}
    for system in systems:
        try:
            runners[system] = build(case, system)
        except Skip as reason:
            skips[system] = str(reason)
            echo(f"  {key}: skipping {LABELS[system]}: {reason}")
    reference = runners["loop"].gradients() if "loop" in runners else None
    agreement: dict[str, float] = {}
    for system, runner in runners.items():
        got = runner.gradients()
        if reference is not None and system != "loop":
            agreement[system] = _difference(got, reference)
        if system == "exact":
            row["exact_alone"] = exact_alone(case, got, (0, case.size - 1))
        del got
    del reference
    gc.collect()
    least, most, budget = (1, 1, 0.0) if quick else (5, 25, 40.0)
    row["rounds"] = interleaved(list(runners.values()), least, most, budget)
    row["systems"] = {system: runner.summary() for system, runner in runners.items()}
    row["agreement"], row["skips"] = agreement, skips
    for system, summary in row["systems"].items():
        echo(f"  {key}: {LABELS[system]} {summary['median_s'] * 1e3:.2f} ms (CPU share {summary['cpu_share']:.2f})")
    return row


def measure(quick: bool, threads: int, keys: list[str] | None = None, systems: list[str] | None = None) -> dict[str, Any]:
    """Every row of ``keys`` over ``systems`` in this process at ``threads`` threads, with what ran."""
    from benchmarks.measure import environment_report, set_threads
    from benchmarks.suite import xla_flags

    chosen = list(systems or SYSTEMS)
    os.environ.setdefault("XLA_FLAGS", xla_flags(threads))  # read once, when jax loads
    limiter = set_threads(threads, ["torch"] if "torch" in chosen else [])
    started = time.perf_counter()
    rows = [measure_case(key, chosen, quick) for key in (keys or list(KEYS))]
    result = {
        "threads": threads,
        "quick": quick,
        "report": environment_report(threads),
        "rows": rows,
        "wall_s": time.perf_counter() - started,
    }
    del limiter
    return result


# --------------------------------------------------------------------------- reporting


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}" if seconds < 1.0 else f"{seconds * 1e3:,.0f}"


def ratios(row: dict[str, Any]) -> dict[str, Any]:
    """The best topos road, the fastest peer, and the two target ratios of one row (medians).

    Each ratio comes with the lower CPU share of its two sides."""
    timed: dict[str, dict[str, float]] = row["systems"]
    roads = [s for s in TOPOS_ROADS if s in timed]
    peers = [s for s in PEERS if s in timed]
    out: dict[str, Any] = {"best": None, "peer": None, "loop": None, "versus_peer": None}
    if roads:
        best = min(roads, key=lambda s: timed[s]["median_s"])
        out["best"] = best
        if "loop" in timed:
            out["loop"] = (timed["loop"]["median_s"] / timed[best]["median_s"], min(timed["loop"]["cpu_share"], timed[best]["cpu_share"]))
        if peers:
            peer = min(peers, key=lambda s: timed[s]["median_s"])
            out["peer"] = peer
            out["versus_peer"] = (timed[best]["median_s"] / timed[peer]["median_s"], min(timed[peer]["cpu_share"], timed[best]["cpu_share"]))
    return out


def _ratio_cell(pair: tuple[float, float] | None) -> str:
    if pair is None:
        return "—"
    value, share = pair
    return f"{value:.2f}" + (f" (starved: CPU share {share:.2f})" if share < STARVED else "")


def markdown(results: list[dict[str, Any]]) -> list[str]:
    """The rows of one or more measuring processes (one per thread count) as markdown."""
    if not results:
        return []
    first = results[0]
    counts = ", ".join(str(r["threads"]) for r in results)
    lines = [
        "## Per-example gradients",
        "",
        "Every parameter's gradient, one per example: `batch(gradient(network, loss, wrt), over=inputs, size=B)`",
        "on each topos road, against the loop over examples (the unbatched gradient's Fast plan run B times:",
        "the baseline), `jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0)))` and",
        "`torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))` (see `benchmarks/bench_batching.py`).",
        f"At {counts} thread(s), one measuring process each (BLAS: {first['report'].get('blas', 'unknown')}).",
        "Milliseconds per batch are medians of interleaved rounds; CPU share is the process's CPU time over",
        "wall time during the row's timed calls (up to the thread count), and a ratio either of whose sides",
        f"ran below {STARVED} is marked starved. Agreement is the largest difference from the loop's gradients",
        f"over the gradient's largest entry (within {TOLERANCE:g} agrees); the Exact plan's first and last",
        "examples are compared bit for bit with the unbatched Exact plan run on each alone.",
        "",
        "| threads | workload | system | ms / batch | × loop | CPU share | first call s | agreement |",
        "|---:|---|---|---:|---:|---:|---:|---|",
    ]
    verdicts: list[str] = []
    for result in results:
        for row in result["rows"]:
            timed = row["systems"]
            loop = timed.get("loop")
            for system in SYSTEMS:
                if system not in timed:
                    continue
                s = timed[system]
                times = "—" if loop is None else f"{s['median_s'] / loop['median_s']:.2f}"
                if system == "loop":
                    check = "reference"
                else:
                    diff = row["agreement"].get(system)
                    check = "—" if diff is None else f"{diff:.1e} {'yes' if diff <= TOLERANCE else '**NO**'}"
                if system == "exact" and "exact_alone" in row:
                    check += "; bit for bit alone: " + ("yes" if row["exact_alone"] else "**NO**")
                lines.append(
                    f"| {result['threads']} | {row['title']} | {LABELS[system]} | {_ms(s['median_s'])} | {times} | "
                    f"{s['cpu_share']:.2f} | {s['first_s']:.2f} | {check} |"
                )
            r = ratios(row)
            if r["best"] is not None:
                loop_pair, peer_pair = r["loop"], r["versus_peer"]
                met_loop = "—" if loop_pair is None else ("met" if loop_pair[0] >= TARGETS["loop / best topos"] else "**not met**")
                met_peer = "—" if peer_pair is None else ("met" if peer_pair[0] <= TARGETS["best topos / fastest peer"] else "**not met**")
                verdicts.append(
                    f"| {result['threads']} | {row['title']} | {LABELS[r['best']]} | {_ratio_cell(loop_pair)} | {met_loop} | "
                    f"{'—' if r['peer'] is None else LABELS[r['peer']]} | {_ratio_cell(peer_pair)} | {met_peer} |"
                )
    lines += [
        "",
        f"Targets: the best topos road at least {TARGETS['loop / best topos']:g}× faster than the loop, and no slower than the fastest peer.",
        "",
        "| threads | workload | best topos road | loop / best | ≥ 10 | fastest peer | best / peer | ≤ 1 |",
        "|---:|---|---|---:|---|---|---:|---|",
        *verdicts,
    ]
    skipped = sorted({f"- {row['title']}, {LABELS[s]}: {why}" for r in results for row in r["rows"] for s, why in row["skips"].items()})
    if skipped:
        lines += ["", "Skipped:", "", *skipped]
    return lines


def _subset(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()] or list(allowed)
    unknown = [c for c in chosen if c not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what} {unknown}; choose from {', '.join(allowed)}")
    return [a for a in allowed if a in chosen]


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_batching", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"batches of {QUICK_BATCH} and a one-layer GPT, one round: a smoke test")
    parser.add_argument("--threads", type=int, default=1, help="threads for BLAS, torch and XLA (default 1)")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {', '.join(KEYS)}")
    parser.add_argument("--systems", default="", help=f"comma-separated subset of {', '.join(SYSTEMS)}")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON to this file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    result = measure(args.quick, args.threads, _subset(args.only, KEYS, "workload"), _subset(args.systems, SYSTEMS, "system"))
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {result['wall_s']:.1f} s")
    print("\n".join(markdown([result])))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
