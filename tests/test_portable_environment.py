"""Importing topos or the benchmarks changes nothing about the importing process.

A machine that pins OpenBLAS (``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE``) once saw the whole
suite replaced by a benchmark module that re-executed itself at import time: every xdist
worker went down and pytest ran no test. The property checked here is the general one: in a
fresh interpreter with those variables set, importing every module of ``topos`` and of
``benchmarks`` (but their ``__main__`` entry points) keeps the process (no re-execution) and its
environment exactly as they were.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PROBE = r"""
import importlib, os, pkgutil, sys
try:
    import jax  # noqa: F401  (jax sets its own logging variables when loaded: not ours to check)
except ImportError:
    pass
before = dict(os.environ)
marker = os.environ["TOPOS_PROBE_MARKER"]
names = []
import topos, benchmarks
for package in (topos, benchmarks):
    names.append(package.__name__)
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if info.name.endswith(".__main__"):
            continue  # entry points (``python -m``): running is what they are for
        names.append(info.name)
for name in names:
    importlib.import_module(name)
    if dict(os.environ) != before:
        changed = sorted(set(os.environ.items()) ^ set(before.items()))
        raise SystemExit(f"importing {name} changed the environment: {changed}")
print(marker, len(names))
"""


def test_importing_every_module_keeps_the_process_and_its_environment() -> None:
    environment = {
        **os.environ,
        "OPENBLAS_CORETYPE": "Haswell",
        "OPENBLAS_L2_SIZE": "262144",
        "TOPOS_PROBE_MARKER": "probe-ran-once",
    }
    environment.pop("TOPOS_BENCH_REEXEC", None)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # A module that re-executed the interpreter would have run the probe again from the top
    # without the pinned variables; the probe's own check or this count would then differ.
    lines = done.stdout.split()
    assert lines[0] == "probe-ran-once" and len(lines) == 2, done.stdout
    assert int(lines[1]) > 80, f"only {lines[1]} modules imported: the walk missed packages"
