"""The settings CI runs the portability checks under, as shell assignments.

``python .ci/portability.py`` prints one line per setting: a label, a tab, then the
environment assignments for it. Only the levels this CPU has are printed (a CPU without
AVX-512 cannot be asked for it, and numpy refuses a feature the machine lacks), and the
names are the ones this numpy understands: numpy 2.4 dispatches by the x86-64 levels
(``X86_V3`` is AVX2 with its companions, ``X86_V4`` AVX-512), older releases by single
features (``AVX2``, ``AVX512F``, ``AVX512_SKX``).

Each setting also pins OpenBLAS or not, and the BLAS thread count, so that between them the
checks see OpenBLAS's own kernel choice and a pinned one, and one and two threads.
"""

from __future__ import annotations

import importlib
from typing import Any


def _umath() -> Any:
    try:  # numpy 2
        return importlib.import_module("numpy._core._multiarray_umath")
    except ImportError:  # numpy 1.26
        return importlib.import_module("numpy.core._multiarray_umath")


__cpu_dispatch__: list[str] = list(_umath().__cpu_dispatch__)
__cpu_features__: dict[str, bool] = dict(_umath().__cpu_features__)


def settings() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    levels = set(__cpu_dispatch__)
    if "X86_V3" in levels or "X86_V4" in levels:
        above_baseline = " ".join(sorted(levels))
        if __cpu_features__.get("X86_V4"):
            found.append(("avx512 (all numpy dispatches), OpenBLAS's own kernel, 1 thread", "OPENBLAS_NUM_THREADS=1"))
        if __cpu_features__.get("X86_V3"):
            found.append(("avx2 (X86_V3), OpenBLAS pinned to Haswell, 2 threads",
                          "NPY_ENABLE_CPU_FEATURES='X86_V2 X86_V3' OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=2"))
        found.append(("baseline (no dispatch), 1 thread", f"NPY_DISABLE_CPU_FEATURES='{above_baseline}' OPENBLAS_NUM_THREADS=1"))
    elif "AVX2" in levels:
        avx512 = [f for f in levels if f.startswith("AVX512")]
        if __cpu_features__.get("AVX512F"):
            found.append(("avx512 (all numpy dispatches), OpenBLAS's own kernel, 1 thread", "OPENBLAS_NUM_THREADS=1"))
        if __cpu_features__.get("AVX2"):
            found.append(("avx2 (AVX-512 disabled), OpenBLAS pinned to Haswell, 2 threads",
                          f"NPY_DISABLE_CPU_FEATURES='{' '.join(sorted(avx512))}' OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=2"))
        found.append(("baseline (no dispatch), 1 thread", f"NPY_DISABLE_CPU_FEATURES='{' '.join(sorted(levels))}' OPENBLAS_NUM_THREADS=1"))
    else:
        # Not x86 (an ARM machine: NEON is the baseline): the machine as it is, at 1 and 2 threads.
        found.append(("as the machine is, 1 thread", "OPENBLAS_NUM_THREADS=1"))
        found.append(("as the machine is, 2 threads", "OPENBLAS_NUM_THREADS=2"))
    return found


if __name__ == "__main__":
    for label, assignments in settings():
        print(f"{label}\t{assignments}")
