"""The typed layer lookup: mypy --strict sees ``type[kind]``, and the check holds at run time."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from topos.nn import LAYERS, Conv2d
from topos.plugins import LayerKindError, Registry, layer

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FILE = HERE / "typing" / "layer_lookup.py"
MISTAKES = HERE / "typing" / "layer_mistakes.py"
ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[a-z0-9-]+)\]$")
MARKER = re.compile(r"#\s*E:\s*(?P<code>[a-z0-9-]+)\s*$")


def test_mypy_reports_exactly_the_marked_lines() -> None:
    wanted = {
        (number, marker["code"])
        for number, text in enumerate(MISTAKES.read_text().splitlines(), start=1)
        if (marker := MARKER.search(text)) is not None
    }
    assert len(wanted) == 3
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--no-pretty",
         "--show-error-codes", str(MISTAKES.relative_to(ROOT))],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    found = {
        (int(match["line"]), match["code"])
        for match in map(ERROR.match, done.stdout.splitlines())
        if match is not None
    }
    assert found == wanted, done.stdout + done.stderr


def test_the_lookups_type_check_clean() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--no-pretty",
         str(FILE.relative_to(ROOT))],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_typing_file_runs() -> None:
    runpy.run_path(str(FILE), run_name="layer_lookup")


def test_every_builtin_layer_comes_back_as_its_own_class_and_no_other() -> None:
    registry = Registry.with_builtins()
    for name, cls in LAYERS.items():
        assert registry.layer(name, cls) is cls
        assert layer(name, object) is cls  # every class is a subclass of object
        for other in set(LAYERS.values()) - {cls}:
            if not issubclass(cls, other):
                with pytest.raises(LayerKindError, match=rf"{name!r}.*{cls.__qualname__}.*{other.__qualname__}"):
                    registry.layer(name, other)


def test_a_kind_that_is_not_a_class_is_refused_by_name() -> None:
    bad: object = "Linear"
    with pytest.raises(LayerKindError, match=r"test_layer_lookup_typing\.py:\d+: .*kind must be a class, got str"):
        layer("linear", bad)  # type: ignore[call-overload]
    assert layer("conv2d", Conv2d) is Conv2d
