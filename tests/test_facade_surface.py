"""The facade gate: facades compose through the public surface only.

Every facade source (``topos/nn``, ``topos/optim``, ``topos/init.py``,
``topos/checkpoint.py``) is parsed and refused if it imports a private name (any dotted
segment or imported name starting with ``_``), imports from the readings or kernels
(``topos.stages``, ``topos.kernels``, ``topos.xla``), reaches into another object's private attribute
(``value._x``; ``self._x`` and dunders are fine), or silences the type checker wholesale.
A name imported from a topos module outside the facades must be in that module's
``__all__``: the surface is what a module exports, not whatever it happens to define.
(``tests/test_layering.py`` checks the rest of docs/layout.md.)
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "topos"
FACADES = sorted(
    [*ROOT.joinpath("nn").glob("*.py"), *ROOT.joinpath("optim").glob("*.py"), ROOT / "init.py", ROOT / "checkpoint.py"]
)
INTERNAL = ("topos.stages", "topos.kernels", "topos.xla")
OWN = ("topos.nn", "topos.optim")  # facade packages import their own modules freely


def _private(segment: str) -> bool:
    return segment.startswith("_") and not (segment.startswith("__") and segment.endswith("__"))


def violations(source: str) -> list[str]:
    """Every breach of the facade rules in ``source``, as ``line: what``."""
    found: list[str] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                found.append(f"{node.lineno}: relative import (spell the public module)")
            if any(_private(s) for s in module.split(".")) or module.startswith(INTERNAL):
                found.append(f"{node.lineno}: imports from {module}")
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{node.lineno}: imports private name {alias.name} from {module}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if any(_private(s) for s in alias.name.split(".")) or alias.name.startswith(INTERNAL):
                    found.append(f"{node.lineno}: imports {alias.name}")
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"{node.lineno}: reaches into private attribute .{node.attr}")
    for number, line in enumerate(source.splitlines(), 1):
        if "# type: ignore" in line and "# type: ignore[" not in line:
            found.append(f"{number}: blanket type: ignore")
        if "# mypy:" in line or ("noqa" in line and "noqa:" not in line):
            found.append(f"{number}: blanket lint suppression")
    return found


def test_there_are_facades_to_scan() -> None:
    names = {p.name for p in FACADES}
    assert {"linear.py", "module.py", "attention.py", "losses.py", "init.py", "checkpoint.py"} <= names


@pytest.mark.parametrize("path", FACADES, ids=lambda p: str(p.relative_to(ROOT)))
def test_facade_uses_only_the_public_surface(path: Path) -> None:
    assert violations(path.read_text()) == []


@pytest.mark.parametrize(
    "source",
    [
        "from topos.stages.spec import Tape\n",
        "from topos.kernels import reference\n",
        "import topos.stages.interpret\n",
        "from topos.errors import _inside_package\n",
        "from topos._private import thing\n",
        "def f(tape):\n    return tape._nodes\n",
        "from .layers import Linear\n",
        "x = 1  # type: ignore\n",
    ],
)
def test_the_gate_catches_each_kind_of_breach(source: str) -> None:
    assert violations(source), source


def test_the_gate_allows_the_public_surface() -> None:
    source = (
        "from topos import Tape, Value\n"
        "from topos.errors import user_site\n"
        "class A:\n"
        "    def f(self):\n"
        "        return self._x, type(self).__slots__\n"
    )
    assert violations(source) == []


def unexported(source: str) -> list[str]:
    """Names ``source`` imports from a topos module (not a facade's own) that it does not export."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or node.level:
            continue
        module = node.module or ""
        if module.split(".")[0] != "topos" or module.startswith(OWN):
            continue
        exported = getattr(importlib.import_module(module), "__all__", None)
        for alias in node.names:
            if exported is None or alias.name not in exported:
                found.append(f"{node.lineno}: {alias.name} is not exported by {module}")
    return found


@pytest.mark.parametrize("path", FACADES, ids=lambda p: str(p.relative_to(ROOT)))
def test_facade_imports_only_exported_names(path: Path) -> None:
    assert unexported(path.read_text()) == []


def test_the_export_gate_catches_a_helper_outside_all() -> None:
    assert unexported("from topos.state import check_payload, Parameters\n") == []
    assert unexported("from topos.stages.interpret import EXPRESS\n")
    assert unexported("from topos.ir.ops import Map\nfrom topos.ir.ops import attrs\n")
