"""The benchmark suite against peers: ``python -m benchmarks [--quick] [--threads 1,2]
[--separate] [--only mlp,gpt,graphs] [--slow] [--out DIR]``.

This driver imports neither topos nor any peer: it starts measuring processes
(``python -m benchmarks --worker``, see ``benchmarks/measure.py``), one per thread count by
default (every system of every workload shares it, interleaved) or, with ``--separate``, one
per system, workload and thread count (sharing a process with torch or jax changes glibc's
allocator state, which flatters or hurts the others). It then checks that every system
computed the same loss and gradients as topos's Fast plan, and prints a markdown table; with
``--out DIR`` it writes ``DIR/performance.md`` and ``DIR/images/performance.png``.

The GPT-2 124M step (``gpt2``) runs only when ``--only`` names it or with ``--slow``: it holds
about 0.5 GB of weights and as much of gradients per system and takes seconds a step. The
portable maps' rows (``maps``, ``benchmarks/bench_maps.py``: their throughput against numpy's,
and the Exact plan's and interpreter's steps with numpy's maps swapped in) run only when
``--only`` names them, one measuring process per thread count; so do the per-example
gradients' rows (``batching``, ``benchmarks/bench_batching.py``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.measure import LABELS, SYSTEMS, TRACED
from benchmarks.workloads import HEAVY, KEYS, ZERO_GRADIENTS

ROOT = Path(__file__).resolve().parent.parent
#: Extra row groups ``--only`` accepts beside the workloads.
EXTRAS = ("graphs", "graph-memory", "decode", "maps", "batching")
#: Row groups only ``--only`` runs (they repeat the Exact plan's slow steps twice over).
OPT_IN = ("maps", "batching")
GRAPH_SIZES, QUICK_GRAPH_SIZES = (10_000, 100_000, 300_000), (1_000, 3_000)
#: Agreement with topos's Fast plan: float32 steps summed in other orders (and, for the
#: peers, other kernels) differ in the last bits, and a GPT step compounds that over four
#: blocks. Loss: relative difference; gradients: largest difference over the largest entry.
LOSS_TOLERANCE, GRADIENT_TOLERANCE = 1e-4, 2e-3
#: The rows' baseline, first present wins.
BASELINES = ("numpy", "torch", "fast")
PINNED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
PEERS = ("numpy", "torch", "jax", "jaxlib", "optax", "threadpoolctl")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few repetitions and small graphs: a smoke test in seconds")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    parser.add_argument("--separate", action="store_true", help="each system in a process of its own")
    parser.add_argument(
        "--only", default="", help=f"comma-separated subset of {', '.join(KEYS + EXTRAS)} (default: all but {', '.join(HEAVY + OPT_IN)})"
    )
    parser.add_argument("--systems", default="", help=f"comma-separated subset of {', '.join(SYSTEMS)}")
    parser.add_argument("--out", type=Path, help="write DIR/performance.md and DIR/images/performance.png")
    parser.add_argument("--graph-sizes", default="", help="chain lengths of the large-graph row (default 10000,100000,300000)")
    parser.add_argument("--slow", action="store_true", help="also time the pairs too slow to repeat (the Exact plan on the wide layers) and the heavy workloads (gpt2)")
    parser.add_argument("--remark", default="", help="a sentence printed under the title (e.g. 'Provisional: ...')")
    # The measuring processes' own flags.
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--graphs", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--graph-memory", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--decode", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--maps", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--batching", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _subset(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()] or list(allowed)
    unknown = [c for c in chosen if c not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what} {unknown}; choose from {', '.join(allowed)}")
    return [a for a in allowed if a in chosen]


def xla_flags(threads: int) -> str:
    """XLA's CPU thread settings: one thread means no Eigen thread pool at all."""
    if threads == 1:
        return "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    return f"--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={threads}"


def child_environment(threads: int) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k not in PINNED}
    environment.update(
        OMP_NUM_THREADS=str(threads),
        OPENBLAS_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
        XLA_FLAGS=xla_flags(threads),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")])),
    )
    return environment


def spawn(flags: list[str], threads: int) -> None:
    command = [sys.executable, "-m", "benchmarks", *flags]
    print("$ " + " ".join(shlex.quote(c) for c in command[1:]), flush=True)
    done = subprocess.run(command, cwd=ROOT, env=child_environment(threads), check=False)
    if done.returncode:
        raise SystemExit(f"a measuring process failed (exit {done.returncode}): {' '.join(command)}")


# --------------------------------------------------------------------------- gathering


def chosen_workloads(only: str, slow: bool) -> list[str]:
    """The workloads and extra row groups to run: ``only``'s, else all but the heavy ones
    (which ``--slow`` adds) and the opt-in row groups."""
    chosen = _subset(only, KEYS + EXTRAS, "workload")
    if not only.strip():
        chosen = [c for c in chosen if c not in OPT_IN and (slow or c not in HEAVY)]
    return chosen


def measure(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    chosen = chosen_workloads(args.only, args.slow)
    keys = [k for k in chosen if k in KEYS]
    systems = _subset(args.systems, SYSTEMS, "system")
    quick = (["--quick"] if args.quick else []) + (["--slow"] if args.slow else [])
    results: list[dict[str, Any]] = []
    for count in threads:
        jobs: list[tuple[list[str], list[str]]] = (
            [([k], [s]) for k in keys for s in systems] if args.separate else ([(keys, systems)] if keys else [])
        )
        for number, (ks, ss) in enumerate(jobs):
            out = scratch / f"t{count}-{number}.json"
            spawn(["--worker", str(out), "--threads", str(count), "--only", ",".join(ks), "--systems", ",".join(ss), *quick], count)
            results.append(json.loads(out.read_text()))
    graphs = None
    if "graphs" in chosen:
        out = scratch / "graphs.json"
        sizes = ["--graph-sizes", args.graph_sizes] if args.graph_sizes else []
        spawn(["--graphs", str(out), *sizes, *quick], 1)
        graphs = json.loads(out.read_text())
    graph_memory = None
    if "graph-memory" in chosen:
        out = scratch / "graph-memory.json"
        sizes = ["--graph-sizes", args.graph_sizes] if args.graph_sizes else []
        spawn(["--graph-memory", str(out), *sizes, *quick], 1)
        graph_memory = json.loads(out.read_text())
    decode = None
    if "decode" in chosen:
        out = scratch / "decode.json"
        spawn(["--decode", str(out), *quick], 1)
        decode = json.loads(out.read_text())
    maps: list[dict[str, Any]] = []
    if "maps" in chosen:
        for count in threads:
            out = scratch / f"maps-t{count}.json"
            spawn(["--maps", str(out), "--threads", str(count), *quick], count)
            maps.append(json.loads(out.read_text()))
    batching: list[dict[str, Any]] = []
    if "batching" in chosen:
        for count in threads:
            out = scratch / f"batching-t{count}.json"
            spawn(["--batching", str(out), "--threads", str(count), *quick], count)
            batching.append(json.loads(out.read_text()))
    return {"threads": threads, "keys": keys, "systems": systems, "workers": results, "graphs": graphs, "decode": decode, "maps": maps,
            "batching": batching, "graph_memory": graph_memory}


def agreement(scratch: Path, keys: list[str], systems: list[str]) -> list[dict[str, Any]]:
    """Each system's loss and gradients against the Fast plan's (the first thread count's)."""
    rows: list[dict[str, Any]] = []
    for key in keys:
        files = sorted(scratch.glob(f"t*-{key}-fast.npz"))
        if not files:
            continue
        with np.load(files[0]) as loaded:
            reference = {name: loaded[name] for name in loaded.files}
        names = [n for n in reference if n != "loss"]
        largest = {n: float(np.max(np.abs(reference[n]))) for n in names}
        # A gradient that is zero in exact arithmetic is measured against the workload's largest entry.
        scale = {n: max(largest.values()) if n in ZERO_GRADIENTS.get(key, ()) else max(largest[n], 1e-30) for n in names}
        for system in systems:
            if system == "fast":
                continue
            found = sorted(scratch.glob(f"t*-{key}-{system}.npz"))
            if not found:
                continue
            with np.load(found[0]) as loaded:
                got = {name: loaded[name] for name in loaded.files}
            loss = abs(float(got["loss"]) - float(reference["loss"])) / max(abs(float(reference["loss"])), 1e-30)
            gradient = max(float(np.max(np.abs(got[n].astype(np.float64) - reference[n]))) / scale[n] for n in names)
            del got
            rows.append(
                {
                    "workload": key,
                    "system": system,
                    "loss": loss,
                    "gradient": gradient,
                    "ok": loss <= LOSS_TOLERANCE and gradient <= GRADIENT_TOLERANCE,
                }
            )
    return rows


# --------------------------------------------------------------------------- reporting


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.3f}"


def _mib(count: float | None) -> str:
    return "—" if count is None else f"{count / 2**20:.1f}"


def _title(key: str) -> str:
    from benchmarks import workloads

    return {
        "mlp": "MLP 784-256-10 b64",
        "lenet": "LeNet 28x28 b64",
        "vgg": f"VGG block 32x32x3 b{workloads.VGG_BATCH}",
        "wide": f"wide {'-'.join(map(str, workloads.WIDE))} b{workloads.WIDE_BATCH}",
        "gpt": f"GPT {workloads.SMALL_GPT.title()}",
        "makemore": f"makemore MLP b{workloads.MM_BATCH}",
        "gpt2": f"GPT-2 124M {workloads.GPT2_124M.title()}",
    }[key]


def table(gathered: dict[str, Any], checks: list[dict[str, Any]], command: str, remark: str) -> str:
    threads: list[int] = gathered["threads"]
    medians: dict[tuple[str, str, int], float] = {}
    extra: dict[tuple[str, str], dict[str, Any]] = {}
    reports: dict[int, dict[str, str]] = {}
    skips: dict[tuple[str, str], str] = {}
    peaks: dict[int, float] = {}
    rounds: set[int] = set()
    for worker in gathered["workers"]:
        count = worker["threads"]
        reports.setdefault(count, worker["report"])
        if worker["peak_gflops"] is not None:
            peaks[count] = worker["peak_gflops"]
        for row in worker["rows"]:
            medians[row["workload"], row["system"], count] = row["median_s"]
            rounds.add(row["rounds"])
            if count == threads[0]:
                extra[row["workload"], row["system"]] = row
        for skip in worker["skips"]:
            skips.setdefault((skip["workload"], skip["system"]), skip["reason"])
    first = reports.get(threads[0], {})
    lines = ["# Performance", ""]
    if remark:
        lines += [f"_{remark}_", ""]
    process = (
        "each system in a process of its own (`--separate`), so repetitions interleave only within a system"
        if "--separate" in command.split()
        else "one process per thread count, shared by every system of every workload, which run interleaved "
        "(torch and jax change the allocator state the others see; `--separate` gives each its own)"
    )
    lines += [
        f"Regenerate with `{command}` from the repository root; `python -m benchmarks --help` lists the flags.",
        "",
        "| setting | value |",
        "|---|---|",
        f"| date | {datetime.date.today().isoformat()} |",
        f"| machine | {_cpu()} |",
        f"| cores | {os.cpu_count()} |",
        f"| BLAS (numpy, {threads[0]} thread{'s' if threads[0] > 1 else ''}) | {first.get('blas', 'unknown')} |",
        f"| threads | {', '.join(map(str, threads))} (threadpoolctl for numpy's BLAS, `torch.set_num_threads`, XLA flags below) |",
        f"| torch threads ({threads[0]}) | {first.get('torch', 'torch not loaded')} |",
        f"| XLA flags ({threads[0]}) | `{first.get('xla_flags', '')}` |",
        f"| processes | {process} |",
        f"| repetitions | medians of {', '.join(map(str, sorted(rounds))) or '0'} rounds after two warm-up calls |",
        f"| python | {platform.python_version()} |",
        f"| versions | {', '.join(f'{p} {_version(p)}' for p in PEERS)} |",
        "",
        "## Training steps",
        "",
        "A step is the loss and the gradient of every parameter, handed back as host arrays (numpy, or",
        "torch's CPU tensors; jax.jit's results are read into numpy as the topos XLA road's are).",
        "Milliseconds are medians; each ratio",
        "divides by the workload's baseline (marked *) at the same thread count, so lower is faster.",
        f"Page faults are minor faults per step (getrusage) at {threads[0]} thread{'s' if threads[0] > 1 else ''}; RSS growth is the",
        "resident high-water mark of one step above the resting RSS (VmHWM after a reset through",
        "/proc/self/clear_refs): zero when the allocator reuses resident memory. Traced peak is",
        "tracemalloc's peak during one step, which sees numpy's buffers only (— for the others).",
        "",
    ]
    header = "| workload | system | " + " | ".join(f"{t} thr ms | ×base" for t in threads) + " | faults/step | RSS growth MiB | traced peak MiB |"
    lines += [header, "|---|---|" + "---:|---:|" * len(threads) + "---:|---:|---:|"]
    systems: list[str] = gathered["systems"]
    for key in gathered["keys"]:
        present = [s for s in systems if (key, s, threads[0]) in medians]
        base = next((b for b in BASELINES if b in present), present[0] if present else "fast")
        for system in systems:
            if (key, system) in skips and system not in present:
                continue
            cells = []
            for t in threads:
                value = medians.get((key, system, t))
                reference = medians.get((key, base, t))
                cells.append(_ms(value))
                cells.append("—" if value is None or not reference else f"{value / reference:.2f}")
            row = extra.get((key, system), {})
            faults = row.get("faults")
            label = LABELS[system] + (" *" if system == base else "")
            lines.append(
                f"| {_title(key)} | {label} | " + " | ".join(cells)
                + f" | {'—' if faults is None else f'{faults:,.0f}'} | {_mib(row.get('rss_growth'))} | "
                + f"{_mib(row.get('traced_peak')) if system in TRACED else '—'} |"
            )
    if "wide" in gathered["keys"]:
        from benchmarks.workloads import wide_flops

        lines += [
            "",
            "## Wide layers against the BLAS peak",
            "",
            "GFLOP/s of the step's matmuls (both layers forward, both weight gradients, the hidden",
            "layer's input gradient); the peak is numpy's own single matmul at the first layer's shape,",
            "best of five, at the same thread count (peers use their own BLAS against that same peak).",
            "",
            "| system | " + " | ".join(f"{t} thr GFLOP/s | fraction of peak" for t in threads) + " |",
            "|---|" + "---:|---:|" * len(threads),
            "| numpy matmul peak | " + " | ".join(f"{peaks[t]:.1f} | 1.00" if t in peaks else "— | —" for t in threads) + " |",
        ]
        for system in systems:
            cells = []
            for t in threads:
                value = medians.get(("wide", system, t))
                gflops = None if value is None else wide_flops() / value / 1e9
                cells.append("—" if gflops is None else f"{gflops:.1f}")
                cells.append("—" if gflops is None or t not in peaks else f"{gflops / peaks[t]:.2f}")
            if any(c != "—" for c in cells):
                lines.append(f"| {LABELS[system]} | " + " | ".join(cells) + " |")
    lines += first_calls(gathered)
    if checks:
        lines += [
            "",
            "## Agreement with the Fast plan",
            "",
            f"Checked once per workload before timing. Tolerance: loss relative difference ≤ {LOSS_TOLERANCE:g}, largest",
            f"gradient difference over the gradient's largest entry ≤ {GRADIENT_TOLERANCE:g} (float32 in other summation orders",
            "and kernels). A gradient that is zero in exact arithmetic (the VGG's convolution biases, which the",
            "batch norm after them cancels) is measured against the workload's largest gradient entry instead.",
            "",
            "| workload | system | loss rel. diff | gradient diff / max | agrees |",
            "|---|---|---:|---:|---|",
        ]
        lines += [
            f"| {_title(c['workload'])} | {LABELS[c['system']]} | {c['loss']:.1e} | {c['gradient']:.1e} | {'yes' if c['ok'] else '**NO**'} |"
            for c in checks
        ]
    if skips:
        lines += ["", "## Skipped", ""]
        lines += [f"- {_title(k)}, {LABELS[s]}: {reason}" for (k, s), reason in sorted(skips.items(), key=lambda kv: (KEYS.index(kv[0][0]), SYSTEMS.index(kv[0][1])))]
    graphs = gathered["graphs"]
    if graphs:
        from benchmarks.graphs import STAGES

        first_row, last_row = graphs[0], graphs[-1]
        lines += [
            "",
            "## Large graphs",
            "",
            "Microseconds per node of a chain of `tanh` nodes (see `benchmarks/graphs.py`), one thread,",
            "the cyclic garbage collector on. Every stage divides by the chain's length.",
            "",
            "| nodes | " + " | ".join(f"{s} µs/node" for s in STAGES) + " |",
            "|---:|" + "---:|" * len(STAGES),
        ]
        lines += [f"| {g['nodes']:,} | " + " | ".join(f"{g[s]:.2f}" for s in STAGES) + " |" for g in graphs]
        lines.append(
            f"| {_nodes(last_row['nodes'])} / {_nodes(first_row['nodes'])} | "
            + " | ".join(f"{last_row[s] / first_row[s]:.2f}×" for s in STAGES) + " |"
        )
    memory = gathered.get("graph_memory")
    if memory:
        lines += [
            "",
            "## Peak memory of large graphs",
            "",
            "The same chain, recorded, differentiated, lowered and emitted once in a fresh process per size:",
            "the peak resident set, the process's baseline after importing topos, and the peak less the",
            "baseline per node of the chain (`python -m benchmarks.graphs --peak N`).",
            "",
            "| nodes | peak MB | baseline MB | bytes/node |",
            "|---:|---:|---:|---:|",
        ]
        lines += [f"| {m['nodes']:,} | {m['peak_mb']:,.1f} | {m['baseline_mb']:,.1f} | {m['bytes_per_node']:,.0f} |" for m in memory]
    decode = gathered["decode"]
    if decode is not None:
        lines += ["", "## Decoding", ""]
        if isinstance(decode, str):
            lines.append(decode)
        elif decode:
            columns = list(decode[0])
            lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            lines += ["| " + " | ".join(_cell(r.get(c)) for c in columns) + " |" for r in decode]
    if gathered.get("maps"):
        from benchmarks.bench_maps import markdown

        lines += ["", *markdown(gathered["maps"])]
    if gathered.get("batching"):
        from benchmarks.bench_batching import markdown as batching_markdown

        lines += ["", *batching_markdown(gathered["batching"])]
    lines += ["", "![Ratios against each workload's baseline](images/performance.png)", ""]
    return "\n".join(lines)


def first_calls(gathered: dict[str, Any]) -> list[str]:
    """Seconds from the recorded step to each system's first result, at the first thread count."""
    count = gathered["threads"][0]
    seconds: dict[tuple[str, str], float] = {}
    for worker in gathered["workers"]:
        if worker["threads"] == count:
            for first in worker.get("firsts", []):
                if first["first_s"] is not None:
                    seconds[first["workload"], first["system"]] = first["first_s"]
    if not seconds:
        return []
    keys = [k for k in gathered["keys"] if any(kk == k for kk, _ in seconds)]
    systems = [s for s in gathered["systems"] if any(ss == s for _, ss in seconds)]
    lines = [
        "",
        "## First calls",
        "",
        f"Seconds to each system's first result at {count} thread{'s' if count > 1 else ''}: the topos plans from the",
        "differentiated network (lowering, and for the XLA road emission and compile, included); jax.jit",
        "and torch from the parameters as numpy arrays (copies, tracing and compiles included). Imports",
        "are not counted. Recording and `gradient()`, which every topos system shares, are the first column.",
        "",
        "| workload | topos record + gradient() | " + " | ".join(LABELS[s] for s in systems) + " | XLA road / jax.jit |",
        "|---|---:|" + "---:|" * len(systems) + "---:|",
    ]
    for key in keys:
        cells = [_seconds(seconds.get((key, "record")))] + [_seconds(seconds.get((key, s))) for s in systems]
        xla, jax = seconds.get((key, "xla")), seconds.get((key, "jax"))
        cells.append("—" if xla is None or not jax else f"{xla / jax:.2f}")
        lines.append(f"| {_title(key)} | " + " | ".join(cells) + " |")
    return lines


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _nodes(count: int) -> str:
    return f"{count // 1000}k" if count % 1000 == 0 else str(count)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def chart(gathered: dict[str, Any], path: Path) -> str:
    """Bars of each system's ratio to its workload's baseline at the first thread count."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "chart skipped: matplotlib is not installed (pip install topos-autodiff[viz])"
    count = gathered["threads"][0]
    medians = {(r["workload"], r["system"]): r["median_s"] for w in gathered["workers"] if w["threads"] == count for r in w["rows"]}
    keys: list[str] = [k for k in gathered["keys"] if any(kk == k for kk, _ in medians)]
    systems: list[str] = [s for s in gathered["systems"] if any(ss == s for _, ss in medians)]
    figure, axes = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / max(len(systems), 1)
    for i, system in enumerate(systems):
        heights = []
        for key in keys:
            base = next((b for b in BASELINES if (key, b) in medians), None)
            value = medians.get((key, system))
            heights.append(0.0 if value is None or base is None else value / medians[key, base])
        axes.bar([k + i * width for k in range(len(keys))], heights, width, label=LABELS[system])
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_xticks([k + width * (len(systems) - 1) / 2 for k in range(len(keys))], [_title(k) for k in keys], fontsize=7)
    axes.set_ylabel("step time / baseline (lower is faster)")
    axes.set_yscale("log")
    axes.set_title(f"Training steps at {count} thread{'s' if count > 1 else ''} (baseline: numpy by hand, else torch eager)")
    axes.legend(fontsize=7, ncol=4)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(figure)
    return f"wrote {path}"


# --------------------------------------------------------------------------- entry points


def decode_rows(quick: bool) -> list[dict[str, Any]] | str:
    """``benchmarks/bench_decode.py``'s rows (tokens/s of KV-cache decoding), at one thread."""
    try:
        from benchmarks import bench_decode
    except ImportError:
        return "benchmarks/bench_decode.py is not present."
    return list(bench_decode.rows(threads=(1,), repeats=2 if quick else 7, echo=lambda _: None))


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.worker is not None:
        from benchmarks.measure import work

        work(_subset(args.only, KEYS, "workload"), _subset(args.systems, SYSTEMS, "system"), int(args.threads), args.quick, args.worker, args.slow)
        return
    if args.graphs is not None:
        from benchmarks.graphs import rows

        sizes = tuple(int(n) for n in args.graph_sizes.split(",")) if args.graph_sizes else None
        args.graphs.write_text(json.dumps(rows(sizes or (QUICK_GRAPH_SIZES if args.quick else GRAPH_SIZES))))
        return
    if args.graph_memory is not None:
        from benchmarks.graphs import memory_rows

        sizes = tuple(int(n) for n in args.graph_sizes.split(",")) if args.graph_sizes else None
        args.graph_memory.write_text(json.dumps(memory_rows(sizes or (QUICK_GRAPH_SIZES if args.quick else GRAPH_SIZES))))
        return
    if args.decode is not None:
        args.decode.write_text(json.dumps(decode_rows(args.quick)))
        return
    if args.maps is not None:
        from benchmarks.bench_maps import measure as maps_measure

        args.maps.write_text(json.dumps(maps_measure(args.quick, int(args.threads))))
        return
    if args.batching is not None:
        from benchmarks.bench_batching import measure as batching_measure

        args.batching.write_text(json.dumps(batching_measure(args.quick, int(args.threads))))
        return
    command = "python -m benchmarks " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    with tempfile.TemporaryDirectory(prefix="topos-bench-") as folder:
        scratch = Path(folder)
        gathered = measure(args, scratch)
        checks = agreement(scratch, gathered["keys"], gathered["systems"])
    for c in checks:
        print(f"agreement {c['workload']} {LABELS[c['system']]}: loss {c['loss']:.1e}, gradients {c['gradient']:.1e} "
              f"({'within' if c['ok'] else 'OUTSIDE'} {LOSS_TOLERANCE:g} / {GRADIENT_TOLERANCE:g})")
    text = table(gathered, checks, command.strip(), args.remark)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "performance.md").write_text(text, encoding="utf-8")
        print(f"wrote {args.out / 'performance.md'}")
        if gathered["keys"]:
            print(chart(gathered, args.out / "images" / "performance.png"))
