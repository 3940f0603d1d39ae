"""The benchmark suite (``python -m benchmarks``): it runs from the repository root, prints the
table with the rows it promises, and its markdown layout does not depend on the figures.

Nothing here asserts a timing: the machines that run tests are shared.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.measure import LABELS
from benchmarks.suite import GRADIENT_TOLERANCE, agreement, chosen_workloads, table
from benchmarks.workloads import HEAVY, KEYS, ZERO_GRADIENTS, vgg_names

ROOT = Path(__file__).resolve().parent.parent


def test_quick_run_prints_every_row_and_writes_the_page(tmp_path: Path) -> None:
    command = [
        sys.executable, "-m", "benchmarks", "--quick", "--threads", "1", "--only", "mlp,makemore,graphs",
        "--systems", "fast,exact,numpy", "--graph-sizes", "200,400", "--out", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    page = (tmp_path / "performance.md").read_text(encoding="utf-8")
    assert page in done.stdout
    rows = [line for line in page.splitlines() if line.startswith("| MLP 784-256-10 b64 |") or line.startswith("| makemore MLP b32 |")]
    timed = [r for r in rows if r.count("|") == 8]
    named = [(r.split("|")[1].strip(), r.split("|")[2].strip()) for r in timed]
    assert named == [
        (workload, system)
        for workload in ("MLP 784-256-10 b64", "makemore MLP b32")
        for system in ("topos Fast plan", "topos Exact plan", "numpy by hand *")
    ]
    # The baseline's own ratio is exactly one; every other ratio is a positive number.
    for row in timed:
        ratio = row.split("|")[4].strip()
        assert float(ratio) > 0
        if row.split("|")[2].strip().endswith("*"):
            assert ratio == "1.00"
    checks = [line for line in page.splitlines() if line.startswith("| ") and line.rstrip().endswith(("| yes |", "| **NO** |"))]
    assert len(checks) == 4  # Exact plan and numpy against the Fast plan, per workload
    assert all(line.endswith("| yes |") for line in checks), checks
    assert re.search(r"^\| 200 \|.*\n\| 400 \|.*\n\| 400 / 200 \|", page, re.MULTILINE)
    assert "| machine |" in page and "| BLAS (numpy, 1 thread) |" in page
    chart = tmp_path / "images" / "performance.png"
    assert chart.exists() or "chart skipped: matplotlib is not installed" in done.stdout


def test_quick_vgg_runs_and_its_hand_numpy_agrees_with_the_fast_plan(tmp_path: Path) -> None:
    command = [
        sys.executable, "-m", "benchmarks", "--quick", "--threads", "1", "--only", "vgg", "--systems", "fast,numpy", "--out", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    page = (tmp_path / "performance.md").read_text(encoding="utf-8")
    title = "VGG block 32x32x3 b32"
    timed = [line for line in page.splitlines() if line.startswith(f"| {title} |") and line.count("|") == 8]
    assert [r.split("|")[2].strip() for r in timed] == ["topos Fast plan", "numpy by hand *"]
    assert all(float(r.split("|")[3]) > 0 for r in timed)
    assert f"| {title} | numpy by hand |" in page and page.count("| yes |") == 1 and "**NO**" not in page
    first = next(line for line in page.splitlines() if line.startswith(f"| {title} |") and line.count("|") == 6)
    assert all(float(cell) > 0 for cell in first.split("|")[2:5])  # record + gradient(), Fast plan, numpy


def test_the_heavy_workload_runs_only_when_asked() -> None:
    assert HEAVY == ("gpt2",)
    default = chosen_workloads("", slow=False)
    assert "gpt2" not in default and [k for k in KEYS if k in default] == [k for k in KEYS if k not in HEAVY]
    assert "gpt2" in chosen_workloads("", slow=True)
    assert chosen_workloads("gpt2", slow=False) == ["gpt2"]
    assert chosen_workloads(" vgg, gpt2 ", slow=False) == ["vgg", "gpt2"]


def _save(path: Path, loss: float, gradients: dict[str, Any]) -> None:
    arrays: dict[str, Any] = {"loss": np.float32(loss), **gradients}
    np.savez(path, **arrays)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(1e-9, 1e-5))
def test_agreement_judges_a_cancelled_gradient_against_the_largest_entry(seed: int, noise: float) -> None:
    """The conv biases ahead of a batch norm have a zero gradient: rounding noise there is
    within tolerance whatever its size relative to itself, while the same relative error in a
    live gradient is not."""
    import tempfile

    rng = np.random.default_rng(seed)
    names = vgg_names()
    zero = set(ZERO_GRADIENTS["vgg"])
    live = {n: rng.standard_normal(8).astype(np.float32) + 2.0 for n in names if n not in zero}
    fast = {**live, **{n: (rng.standard_normal(8) * noise).astype(np.float32) for n in zero}}
    other = {**live, **{n: (rng.standard_normal(8) * noise).astype(np.float32) for n in zero}}
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        _save(scratch / "t1-vgg-fast.npz", 1.5, fast)
        _save(scratch / "t1-vgg-torch.npz", 1.5, other)
        broken = dict(other)
        broken["out.bias"] = other["out.bias"] * np.float32(1 + 4 * GRADIENT_TOLERANCE)
        _save(scratch / "t1-vgg-jax.npz", 1.5, broken)
        rows = agreement(scratch, ["vgg"], ["fast", "torch", "jax"])
    assert [(r["system"], r["ok"]) for r in rows] == [("torch", True), ("jax", False)]
    largest = max(float(np.max(np.abs(v))) for v in fast.values())
    diffs = {n: float(np.max(np.abs(other[n].astype(np.float64) - fast[n]))) for n in zero}
    assert rows[0]["gradient"] == max(diffs.values()) / largest
    # Against its own scale the noise would fail: the rule is what lets it pass.
    assert max(diffs[n] / float(np.max(np.abs(fast[n]))) for n in zero) > GRADIENT_TOLERANCE


def _gathered(seconds: list[float]) -> dict[str, Any]:
    systems = ["fast", "exact", "numpy"]
    rows = [
        {"workload": key, "system": s, "median_s": seconds[i % len(seconds)], "rounds": 7, "note": "", "faults": 3.0,
         "rss_growth": 0.0, "traced_peak": 1e6}
        for i, (key, s) in enumerate((k, s) for k in ("mlp", "wide") for s in systems)
    ]  # fmt: skip
    firsts = [
        {"workload": key, "system": s, "first_s": seconds[i % len(seconds)] * 10}
        for i, (key, s) in enumerate((k, s) for k in ("mlp", "wide") for s in ["record", *systems])
    ]
    workers = [
        {"threads": t, "report": {"blas": "b", "xla_flags": "f"}, "rows": rows, "skips": [], "firsts": firsts,
         "peak_gflops": seconds[0] * 100}
        for t in (1, 2)
    ]  # fmt: skip
    graphs = [{"nodes": n, "record": seconds[0], "gradient": 1.0, "lower": 1.0, "emit": 1.0} for n in (10_000, 300_000)]
    return {"threads": [1, 2], "keys": ["mlp", "wide"], "systems": systems, "workers": workers, "graphs": graphs, "decode": None}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(1e-5, 10.0), min_size=6, max_size=6), st.lists(st.floats(1e-5, 10.0), min_size=6, max_size=6))
def test_layout_is_the_same_whatever_the_figures(first: list[float], second: list[float]) -> None:
    def masked(seconds: list[float]) -> list[str]:
        text = table(_gathered(seconds), [], "python -m benchmarks", "")
        return [re.sub(r"\d[\d,.]*(e[+-]\d+)?", "#", line) for line in text.splitlines()]

    assert masked(first) == masked(second)
    # mlp, wide, the wide GFLOP/s table, and the first calls' header
    assert sum(LABELS["fast"] in line for line in masked(first)) == 4


def test_quick_maps_rows_print_every_map_and_both_steps(tmp_path: Path) -> None:
    """``python -m benchmarks.bench_maps --quick``: a throughput row per map and dtype, an
    (a)/(b) row per workload and system whose swap reached numpy's maps, and the suite renders
    the same rows under ``--only maps`` (no timing is asserted)."""
    from benchmarks.bench_maps import MAPS, STEP_SYSTEMS, markdown

    out = tmp_path / "maps.json"
    command = [sys.executable, "-m", "benchmarks.bench_maps", "--quick", "--json", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    throughput = [line.split("|")[1:-1] for line in lines if line.startswith("| 1 |") and line.count("|") == 9]
    assert [(c[1].strip(), c[2].strip()) for c in throughput] == [(m, d) for m in MAPS for d in ("f32", "f64")]
    for cells in throughput:
        assert float(cells[3]) > 0
        if "n/a" in cells[5]:  # erf without scipy
            assert cells[1].strip() == "erf" and cells[4].strip() == "n/a"
        else:
            assert float(cells[4]) > 0
    steps = [line.split("|")[1:-1] for line in lines if line.startswith("| 1 |") and line.count("|") == 12]
    titles = ("GPT v65 ctx64 L4 d128 h4 b16", "LeNet 28x28 b64")
    assert [(c[1].strip(), c[2].strip()) for c in steps] == [(t, s) for t in titles for s in STEP_SYSTEMS.values()]
    for cells in steps:
        assert float(cells[3]) > 0 and float(cells[5]) > 0  # timed: the swap reached numpy's maps
        assert cells[7].strip().startswith("withheld") or float(cells[7]) > 0
        assert float(cells[10]) < 1e-3  # the same step, numpy's maps close to the portable ones
    result = json.loads(out.read_text())
    assert all(row["maps_portable"] and row["maps_numpy"] for row in result["steps"])
    inside = [line for line in lines if line.startswith("| GPT v65") and "| tanh | f32 |" in line]
    assert len(inside) == 2  # the GPT's tanh-GELU, in the Exact plan and in the interpreter
    page = table({**_gathered([1e-3] * 6), "maps": [result]}, [], "python -m benchmarks --only maps", "")
    assert "\n".join(markdown([result])) in page
    assert "maps" not in chosen_workloads("", slow=True) and chosen_workloads("maps", slow=False) == ["maps"]


def test_quick_batching_rows_check_every_road_and_render_in_the_suite(tmp_path: Path) -> None:
    """``python -m benchmarks.bench_batching --quick`` at tiny sizes: a row per workload and
    system, every per-example gradient agreeing with the loop's, the Exact plan's slices bit
    for bit the example alone, and the suite renders the same rows under ``--only batching``."""
    from benchmarks.bench_batching import KEYS as BATCHING_KEYS
    from benchmarks.bench_batching import LABELS as BATCHING_LABELS
    from benchmarks.bench_batching import TOLERANCE, markdown

    out = tmp_path / "batching.json"
    systems = ("loop", "exact", "fast")
    command = [sys.executable, "-m", "benchmarks.bench_batching", "--quick", "--systems", ",".join(systems), "--json", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert [row["workload"] for row in result["rows"]] == list(BATCHING_KEYS)
    for row in result["rows"]:
        assert sorted(row["systems"]) == sorted(systems)  # the JSON sorts its keys
        assert all(s["median_s"] > 0 and s["cpu_share"] > 0 for s in row["systems"].values())
        assert row["exact_alone"] is True
        assert all(diff <= TOLERANCE for diff in row["agreement"].values()), row["agreement"]
    lines = done.stdout.split("Targets:", 1)[0].splitlines()  # the timings' table, not the verdicts'
    timed = [line for line in lines if line.startswith("| 1 |") and line.count("|") == 9]
    assert [line.split("|")[3].strip() for line in timed] == [BATCHING_LABELS[s] for _ in BATCHING_KEYS for s in systems]
    assert sum("bit for bit alone: yes" in line for line in timed) == len(BATCHING_KEYS)
    page = table({**_gathered([1e-3] * 6), "batching": [result]}, [], "python -m benchmarks --only batching", "")
    assert "\n".join(markdown([result])) in page and "## Per-example gradients" in page
    assert "batching" not in chosen_workloads("", slow=True) and chosen_workloads("batching", slow=False) == ["batching"]


def test_peak_memory_row_reports_peak_baseline_and_bytes_per_node(tmp_path: Path) -> None:
    # The same row three ways: one size in this form, its JSON line, and the suite's table.
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.graphs", "--peak", "2000"], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = re.search(r"chain of 2,000 nodes: peak ([\d,.]+) MB, baseline ([\d,.]+) MB, ([\d,.]+) bytes per node", done.stdout)
    assert found, done.stdout
    peak, baseline, per_node = (float(g.replace(",", "")) for g in found.groups())
    assert peak > baseline > 0 and per_node > 0
    command = [sys.executable, "-m", "benchmarks", "--quick", "--only", "graph-memory", "--graph-sizes", "1000,2000", "--out", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    page = (tmp_path / "performance.md").read_text(encoding="utf-8")
    assert "## Peak memory of large graphs" in page and "| nodes | peak MB | baseline MB | bytes/node |" in page
    rows = [line.split("|")[1:-1] for line in page.splitlines() if re.match(r"^\| [12],000 \|", line)]
    assert [r[0].strip() for r in rows] == ["1,000", "2,000"]
    for row in rows:
        figures = [float(cell.strip().replace(",", "")) for cell in row[1:]]
        assert len(figures) == 3 and all(f > 0 for f in figures)


def test_quick_memory_ladder_keeps_bits_and_shrinks_the_peak(tmp_path: Path) -> None:
    """``python -m benchmarks.bench_memory --quick``: every budget of the ladder either runs with
    the unbudgeted gradients' bits or is refused naming its floor, and the peak falls with it."""
    out = tmp_path / "memory.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_memory", "--quick", "--out", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(out.read_text())["rows"]
    ran = [row for row in rows if "peak_mb" in row]
    assert len(ran) >= 10 and all(row["bits_equal"] for row in ran)
    peaks = [row["peak_mb"] for row in ran]
    assert peaks == sorted(peaks, reverse=True) and peaks[-1] < peaks[0]
    assert any(row["recomputations"] > 0 for row in ran)
