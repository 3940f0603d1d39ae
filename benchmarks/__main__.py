"""``python -m benchmarks``: the suite against peers (see ``benchmarks/suite.py``).

OpenBLAS reads ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` once, when numpy loads it; a
host that pins them (to a conservative core type) would measure a slower kernel than the
machine has. The suite drops them from its own environment and re-executes itself before
anything imports numpy; its measuring processes inherit the cleaned environment.
"""

from __future__ import annotations

import os
import sys

_PINNED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if any(name in os.environ for name in _PINNED) and os.environ.get("TOPOS_BENCH_REEXEC") != "1":
    environment = {k: v for k, v in os.environ.items() if k not in _PINNED}
    environment["TOPOS_BENCH_REEXEC"] = "1"
    os.execve(sys.executable, [sys.executable, "-m", "benchmarks", *sys.argv[1:]], environment)

from benchmarks.suite import main  # noqa: E402

main()
