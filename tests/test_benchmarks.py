"""The benchmark suite (``python -m benchmarks``): it runs from the repository root, prints the
table with the rows it promises, and its markdown layout does not depend on the figures.

Nothing here asserts a timing: the machines that run tests are shared.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.measure import LABELS
from benchmarks.suite import table

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


def _gathered(seconds: list[float]) -> dict[str, Any]:
    systems = ["fast", "exact", "numpy"]
    rows = [
        {"workload": key, "system": s, "median_s": seconds[i % len(seconds)], "rounds": 7, "note": "", "faults": 3.0,
         "rss_growth": 0.0, "traced_peak": 1e6}
        for i, (key, s) in enumerate((k, s) for k in ("mlp", "wide") for s in systems)
    ]  # fmt: skip
    workers = [
        {"threads": t, "report": {"blas": "b", "xla_flags": "f"}, "rows": rows, "skips": [], "peak_gflops": seconds[0] * 100}
        for t in (1, 2)
    ]
    graphs = [{"nodes": n, "record": seconds[0], "gradient": 1.0, "lower": 1.0, "emit": 1.0} for n in (10_000, 300_000)]
    return {"threads": [1, 2], "keys": ["mlp", "wide"], "systems": systems, "workers": workers, "graphs": graphs, "decode": None}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(1e-5, 10.0), min_size=6, max_size=6), st.lists(st.floats(1e-5, 10.0), min_size=6, max_size=6))
def test_layout_is_the_same_whatever_the_figures(first: list[float], second: list[float]) -> None:
    def masked(seconds: list[float]) -> list[str]:
        text = table(_gathered(seconds), [], "python -m benchmarks", "")
        return [re.sub(r"\d[\d,.]*(e[+-]\d+)?", "#", line) for line in text.splitlines()]

    assert masked(first) == masked(second)
    assert sum(LABELS["fast"] in line for line in masked(first)) == 3  # mlp, wide, and the wide GFLOP/s table
