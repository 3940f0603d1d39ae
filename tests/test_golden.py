"""The golden texts in ``tests/golden/`` match what this checkout writes, byte for byte.

The cases and how to review a changed file are in ``tests/golden_cases.py``; a mismatch
prints a short unified diff and the command that regenerates every file.
"""

from __future__ import annotations

import difflib
import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from golden_cases import CASES, GOLDEN, READINGS, texts

ROOT = Path(__file__).resolve().parent.parent
NAMES = [f"{case}.{suffix}" for case in CASES for suffix in READINGS]
REGENERATE = "python tests/golden_cases.py --write"
DIFF_LINES = 60
"""A longer diff is cut here: the message points at the files, it does not replace them."""


@functools.cache
def generated() -> dict[str, str]:
    return texts()


def _diff(stored: str, fresh: str, name: str) -> str:
    lines = list(
        difflib.unified_diff(
            stored.splitlines(keepends=True), fresh.splitlines(keepends=True), f"stored/{name}", f"generated/{name}"
        )
    )
    shown = "".join(lines[:DIFF_LINES])
    if len(lines) > DIFF_LINES:
        shown += f"... ({len(lines) - DIFF_LINES} more diff lines)\n"
    return shown


def test_the_folder_holds_exactly_the_cases_files() -> None:
    stored = sorted(path.name for path in GOLDEN.iterdir() if path.is_file())
    assert stored == sorted(NAMES), f"tests/golden/ is out of step with the cases; run {REGENERATE}"


@pytest.mark.parametrize("name", NAMES)
def test_stored_text_matches_this_checkout(name: str) -> None:
    path = GOLDEN / name
    assert path.is_file(), f"{path} is missing; run {REGENERATE}"
    stored = path.read_bytes()
    fresh = generated()[name]
    if stored != fresh.encode():
        pytest.fail(
            f"{name} differs from what this checkout writes (stored {len(stored)} bytes, "
            f"generated {len(fresh.encode())}).\n{_diff(stored.decode(errors='replace'), fresh, name)}"
            f"If the change is intended, regenerate with `{REGENERATE}` and review `git diff tests/golden/`.",
            pytrace=False,
        )


def test_a_fresh_interpreter_writes_the_same_bytes(tmp_path: Path) -> None:
    # Another hash seed reorders every set and dict of strings, and a new process moves every
    # id(): text that leaned on either would differ here even when this process agrees.
    seed = "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT))
    script = Path(__file__).resolve().parent / "golden_cases.py"
    done = subprocess.run(
        [sys.executable, str(script), "--write", "--out", str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    differing = [name for name in NAMES if (tmp_path / name).read_bytes() != generated()[name].encode()]
    assert not differing, (
        f"PYTHONHASHSEED={seed} in a fresh interpreter writes different bytes for {differing}:\n"
        + "".join(_diff(generated()[n], (tmp_path / n).read_text(), n) for n in differing[:2])
    )
