"""Shared helpers for the foundation tests: element parameters, value strategies, bit checks.

The independent computations live in the test files themselves; this module only supplies
plumbing (strategies, recording one opcode over inputs, comparing bit patterns).
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from topos import Network, Symbol, Tape, Tensor, Value, bf16, f32, f64
from topos.ir.element import ElementType

# The multi-process child joins a jax.distributed job at import (its process id and peers come
# from argv), so the doctest collector must not import it; tests run it as a script.
collect_ignore = ["multihost_fsdp_child.py"]

Array = np.ndarray[Any, Any]

ELEMENTS: tuple[ElementType, ...] = (f32, f64, bf16)

settings.register_profile(
    "topos",
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
settings.load_profile("topos")


each_element = pytest.mark.parametrize("element", ELEMENTS, ids=[e.name for e in ELEMENTS])
"""Run a test once per built-in element type (a mark, not a fixture, so hypothesis is happy)."""


def here() -> int:
    """The caller's current line number (to check that errors name the user's line)."""
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


def shapes(min_dims: int = 1, max_dims: int = 3, max_side: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side)


def values(
    shape: tuple[int, ...], element: ElementType, low: float = -4.0, high: float = 4.0
) -> st.SearchStrategy[Array]:
    """Arrays in ``element``'s storage dtype with entries drawn from ``[low, high]``.

    Entries are drawn as f64 and rounded once to storage, so bf16 and f32 see values that
    exercise their rounding too.
    """
    floats = st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    # Magnitudes below 1e-30 become a signed 0: they would be subnormal (or vanish) in bf16 and f32.
    return hnp.arrays(np.float64, shape, elements=floats).map(
        lambda a: np.where(np.abs(a) < 1e-30, a * 0.0, a).astype(element.dtype)
    )


def bits(array: Any) -> Array:
    """The bit pattern of an array or tensor (uint of the same width)."""
    if isinstance(array, Tensor):
        return array.bits()
    dense = np.ascontiguousarray(np.asarray(array))
    width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dense.dtype.itemsize]
    return dense.view(width)


def assert_bits(actual: Tensor | Array, expected: Array) -> None:
    """Bitwise equality, with dtype and shape; the message shows both as floats."""
    got = actual.numpy() if isinstance(actual, Tensor) else np.asarray(actual)
    assert got.dtype == expected.dtype, f"dtype {got.dtype} != {expected.dtype}"
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    if not np.array_equal(bits(got), bits(expected)):
        raise AssertionError(
            "bits differ:\n actual   "
            f"{got.astype(np.float64).tolist()}\n expected {expected.astype(np.float64).tolist()}"
        )


def rounded(array: Any, element: ElementType) -> Array:
    """Round a compute-dtype result once to ``element``'s storage."""
    out: Array = np.asarray(array).astype(element.dtype)
    return out


def stored(wide: Array, element: ElementType) -> Array:
    """f64 data rounded once to ``element``'s storage, computed without ml_dtypes' casts.

    For bf16 (8 significant bits) the rounding is done in f64 with frexp/rint (exact there,
    round half to even), for normal values; the result is then representable and casts
    exactly. f32 and f64 use numpy's own one-step cast.
    """
    wide = np.asarray(wide, dtype=np.float64)
    if element is not bf16:
        return wide.astype(element.dtype)
    mantissa, exponent = np.frexp(wide)
    exact = np.ldexp(np.rint(np.ldexp(mantissa, 8)), exponent - 8)
    out: Array = exact.astype(element.dtype)
    assert np.array_equal(out.astype(np.float64), exact)
    return out


def up(array: Array, element: ElementType) -> Array:
    """Widen storage to the compute dtype (bf16 computes in f32)."""
    out: Array = np.asarray(array).astype(element.compute)
    return out


def forward_op(
    element: ElementType,
    build: Callable[..., Value],
    *operands: Array | Tensor,
) -> Tensor:
    """Record ``build`` over one input per operand, run the interpreter, return the result."""

    def record(tape: Tape) -> Value:
        inputs = [tape.input(o) for o in operands]
        return build(*inputs)

    network, out = Tape.record(record, element=element)
    return network.forward(network.parameters()).of(out)


def record_with(
    element: ElementType, build: Callable[[Tape], Any]
) -> tuple[Network, Any]:
    return Tape.record(build, element=element)


def symbols_of(structure: Sequence[Symbol]) -> list[Symbol]:
    return list(structure)


def topos_command(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m topos ARGS`` in a fresh interpreter that imports this checkout's topos."""
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run(
        [sys.executable, "-m", "topos", *args], capture_output=True, text=True, env=env, cwd=cwd or root, timeout=120
    )


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a jax.distributed coordinator)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def supervise(children: Sequence[subprocess.Popen[Any]], logs: Sequence[Any], timeout_s: float, meanwhile: Callable[[], Any] | None = None) -> Any:
    """Wait for every child process, killing all of them at the first failure or at the
    deadline, so a lost peer can never hang the suite; assert each exited 0, naming the
    tail of each one's log otherwise. Returns what ``meanwhile`` computed while they ran."""
    import time

    deadline = time.monotonic() + timeout_s
    result = None
    try:
        result = meanwhile() if meanwhile is not None else None
        while any(c.poll() is None for c in children):
            if time.monotonic() > deadline or any(c.returncode not in (None, 0) for c in children):
                break
            time.sleep(0.1)
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=10)
    reports = []
    for i, (child, log) in enumerate(zip(children, logs, strict=True)):
        log.seek(0)
        text = log.read()
        log.close()
        reports.append(f"process {i} exited {child.returncode}:\n{text[-3000:]}")
    assert all(c.returncode == 0 for c in children), "\n".join(reports)
    return result
