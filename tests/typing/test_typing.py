"""Run mypy --strict on the typing files: the public surface must pass, the mistakes must fail.

``public_surface.py`` pins inferred types with ``assert_type``; ``mistakes.py`` marks each
line that must fail with ``# E: <code>[, <code>]``. Exactly those lines may fail, with
exactly those error codes, so a loosened annotation (an ``Any`` creeping into the surface)
shows up here as an unexpected pass.
"""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[a-z0-9-]+)\]$")
MARKER = re.compile(r"#\s*E:\s*(?P<codes>[a-z0-9-]+(?:\s*,\s*[a-z0-9-]+)*)\s*$")


def mypy(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--no-pretty",
         "--show-error-codes", str(path.relative_to(ROOT))],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )


def expected_errors(path: Path) -> set[tuple[int, str]]:
    wanted: set[tuple[int, str]] = set()
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        marker = MARKER.search(text)
        if marker is not None:
            wanted.update((number, code.strip()) for code in marker["codes"].split(","))
    return wanted


def test_the_public_surface_type_checks() -> None:
    done = mypy(HERE / "public_surface.py")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_public_surface_file_also_runs() -> None:
    runpy.run_path(str(HERE / "public_surface.py"), run_name="public_surface")


def test_each_marked_mistake_fails_and_nothing_else_does() -> None:
    path = HERE / "mistakes.py"
    wanted = expected_errors(path)
    assert len(wanted) >= 15
    done = mypy(path)
    assert done.returncode == 1, done.stdout + done.stderr
    found = {
        (int(match["line"]), match["code"])
        for match in map(ERROR.match, done.stdout.splitlines())
        if match is not None
    }
    assert found == wanted, (
        f"unexpected: {sorted(found - wanted)}\nmissing (these mistakes now pass mypy): "
        f"{sorted(wanted - found)}\n{done.stdout}"
    )


# 57 mentions of Any in 36 public signatures before the Runner/TensorLike pass; what remains
# is numpy's own generics (ndarray[Any, Any]), ElementType's dtype plumbing, pass-through
# arguments (check_layer's factory), and Tape.record's catch-all for nested structures.
ANY_CEILING = 37


def test_any_in_public_signatures_stays_under_its_ceiling() -> None:
    module = runpy.run_path(str(HERE / "any_census.py"))
    assert len(module["_objects"]()) > 100, "the census is not reading the public surface"
    census = module["census"]()
    total = sum(census.values())
    assert total <= ANY_CEILING, "\n".join(f"{hits:3d}  {key}" for key, hits in census.items())
    for name in ("Network.forward", "Plan.forward", "XlaExecutable.forward", "XlaExecutable.of_plan",
                 "Run.recorded_gradients", "Tape.parameter", "Tape.input", "checkpoint.save"):
        assert not [key for key in census if key.endswith(name)], f"{name} takes or returns Any again"
