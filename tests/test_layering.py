"""docs/layout.md, checked: which topos modules each layer imports, and when.

Two kinds of evidence. A fresh interpreter imports a layer's modules with the package's
``__init__`` bypassed (``topos/__init__.py`` imports the whole surface, which would hide
every layer behind it) and reports what else came in: that is "at import time", measured.
The sources are parsed for the rest: the module-level import graph has no cycle and points
down the layers, and the only function-level imports (doors) from ``topos.ir`` and
``topos.kernels`` into the layers above are the ones listed here.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "topos"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imported_at_import_time(modules: list[str]) -> set[str]:
    """The topos modules a fresh interpreter holds after importing ``modules`` alone."""
    script = (
        "import json, sys, types\n"
        f"root = types.ModuleType('topos'); root.__path__ = [{str(PACKAGE)!r}]\n"
        "sys.modules['topos'] = root\n"
        "import importlib\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('topos.'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout))


def _under(prefix: str) -> list[str]:
    return [m for m in MODULES if m == prefix or m.startswith(prefix + ".")]


# ---------------------------------------------------------------- measured in a fresh process
def test_ir_imports_only_ir_and_errors_at_import_time() -> None:
    loaded = _imported_at_import_time(_under("topos.ir"))
    assert set(_under("topos.ir")) <= loaded  # the probe really imported the layer
    outside = sorted(m for m in loaded if not (m.startswith("topos.ir") or m == "topos.errors"))
    assert outside == []


@pytest.mark.parametrize("module", _under("topos.kernels"))
def test_the_kernels_import_only_the_ir_and_errors_at_import_time(module: str) -> None:
    loaded = _imported_at_import_time([module])
    assert module in loaded
    outside = sorted(m for m in loaded if not m.startswith(("topos.kernels", "topos.ir")) and m != "topos.errors")
    assert outside == []


def test_the_probe_sees_a_layer_break() -> None:
    # A module that imports the tensor drags the kernels and the IR in; the probe reports them.
    loaded = _imported_at_import_time(["topos.state"])
    assert {"topos.tensor", "topos.kernels.reference", "topos.ir.node"} <= loaded


# ---------------------------------------------------------------- read from the sources
def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The topos modules an import statement loads (``from topos import x`` may name a module)."""
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names if a.name.split(".")[0] == "topos")
        return
    base = node.module or ""
    if node.level:
        # Relative: ``level`` 1 is the module's own package.
        package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
        kept = package[: len(package) - node.level + 1]
        base = ".".join([*kept, base] if base else kept)
    if base.split(".")[0] != "topos":
        return
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        yield submodule if submodule in MODULES else base


def _module_level_imports(module: str) -> set[str]:
    """Imports run when ``module`` is imported: top level, not under ``if TYPE_CHECKING``."""
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for statement in statements:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                found.update(_targets(module, statement))
            elif isinstance(statement, ast.If):
                if not _type_checking(statement.test):
                    visit(statement.body)
                visit(statement.orelse)
            elif isinstance(statement, ast.Try):
                visit(statement.body)
                for handler in statement.handlers:
                    visit(handler.body)
                visit(statement.orelse)
                visit(statement.finalbody)

    visit(ast.parse(MODULES[module].read_text()).body)
    return found - {module}


def _function_level_imports(module: str) -> set[tuple[str, str]]:
    """``(qualified function, imported module)`` for every import inside a function body.

    A class body runs at import time, so only imports under a ``def`` count as lazy.
    """
    found: set[tuple[str, str]] = set()

    def visit(node: ast.AST, scope: tuple[str, ...], in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, (*scope, child.name), True)
            elif isinstance(child, ast.ClassDef):
                visit(child, (*scope, child.name), in_function)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                if in_function:
                    found.update((".".join(scope), target) for target in _targets(module, child))
            else:
                visit(child, scope, in_function)

    visit(ast.parse(MODULES[module].read_text()), (), False)
    return found


# The doors: the only imports from the data into the layers above them. Each runs when the
# method is called; importing the IR never runs one.
IR_DOORS = {
    ("topos.ir.network", "Network.parameters", "topos.state"),
    ("topos.ir.network", "Network.describe", "topos.stages.describe"),
    ("topos.ir.network", "Network.forward", "topos.stages.interpret"),
    ("topos.ir.network", "Network.entry", "topos.stages.plan"),
    ("topos.ir.network", "Network.compile", "topos.stages.plan"),
    ("topos.ir.network", "Network.reopen", "topos.stages.spec"),
    ("topos.ir.network", "Network.to_dot", "topos.render"),
    ("topos.ir.network", "Network._repr_html_", "topos.render"),
    # A dtype no built-in stores may belong to a registered plugin element.
    ("topos.ir.element", "element_storing", "topos.plugins"),
}


def _lazy(prefix: str) -> set[tuple[str, str, str]]:
    return {
        (module, scope, target)
        for module in _under(prefix)
        for scope, target in _function_level_imports(module)
        if not target.startswith(prefix)
    }


def test_the_ir_reaches_up_only_through_its_listed_doors() -> None:
    assert _lazy("topos.ir") == IR_DOORS


def test_the_kernels_have_no_door_upward() -> None:
    assert _lazy("topos.kernels") == set()


def _layer(module: str) -> tuple[int, str]:
    """``(rank, group)`` per docs/layout.md: imports point to a lower rank or the same group."""
    if module in ("topos.errors", "topos._collector"):
        return 0, "base"
    if module.startswith("topos.ir"):
        return 1, "ir"
    if module.startswith("topos.kernels"):
        return 2, "kernels"
    if module in ("topos.vocabulary", "topos.composites", "topos.tensor"):
        return 3, "tensor"  # the vocabulary (and its composites) spelled once; Tensor computes it
    if module == "topos.state":
        return 4, "state"
    if module.startswith("topos.stages"):
        return 5, "stages"
    return 6, "above"  # the surface, the maps, facades, tools: free among themselves


def test_module_level_imports_point_down_the_layers() -> None:
    breaks = []
    for module in MODULES:
        rank, group = _layer(module)
        for target in sorted(_module_level_imports(module)):
            their_rank, their_group = _layer(target)
            if not (their_rank < rank or their_group == group):
                breaks.append(f"{module} ({group}) imports {target} ({their_group}) at import time")
    assert breaks == []


# ---------------------------------------------------------------- the floors inside stages/
IDIOM_INFRASTRUCTURE = ("base", "shared", "catalog")


def named_floors() -> list[str]:
    """The stages below the idioms, one module per floor, from the bottom up."""
    return ["spec", "rules", "interpret", "cotangent", "gradient", "batching", "describe", "stablehlo", "fusion.base", "fusion.shared"]


def stage_floors() -> list[tuple[str, ...]]:
    """The stages' floors from the bottom up, as docs/layout.md lists them: every file added to
    ``stages/fusion/`` that is not its infrastructure is an idiom and lands on the idioms' floor."""
    idioms = tuple(
        m
        for m in _under("topos.stages.fusion")
        if m != "topos.stages.fusion" and m.rsplit(".", 1)[1] not in IDIOM_INFRASTRUCTURE
    )
    return [
        *((f"topos.stages.{n}",) for n in named_floors()),
        idioms,
        ("topos.stages.fusion.catalog",),
        ("topos.stages.fusion",),
        ("topos.stages.execute",),
        ("topos.stages.remat",),
        ("topos.stages.plan",),
        ("topos.stages.emission",),
    ]


def _stage_floor(module: str) -> int:
    return next(i for i, floor in enumerate(stage_floors()) if module in floor)


def test_every_stage_module_has_one_floor() -> None:
    placed = [m for floor in stage_floors() for m in floor]
    assert sorted(placed) == sorted(m for m in _under("topos.stages") if m != "topos.stages")
    assert len(placed) == len(set(placed))
    assert len(stage_floors()[len(named_floors())]) >= 3, "the idioms' floor holds the idiom families"


def test_stages_import_only_lower_floors() -> None:
    breaks = []
    for module in _under("topos.stages"):
        if module == "topos.stages":
            continue
        for target in sorted(_module_level_imports(module)):
            if target.startswith("topos.stages.") and _stage_floor(target) >= _stage_floor(module):
                breaks.append(f"{module} imports {target}, which is not below it (docs/layout.md)")
    assert breaks == []


def test_the_stage_floor_check_sees_a_break() -> None:
    # An idiom importing emission, or two idioms importing each other, would break the floors.
    assert _stage_floor("topos.stages.emission") > _stage_floor("topos.stages.fusion.windows")
    assert _stage_floor("topos.stages.fusion.pooling") == _stage_floor("topos.stages.fusion.windows")
    assert _stage_floor("topos.stages.stablehlo") < _stage_floor("topos.stages.fusion.base")
    assert _stage_floor("topos.stages.describe") < _stage_floor("topos.stages.plan")
    assert _stage_floor("topos.stages.execute") < _stage_floor("topos.stages.plan")


# ---------------------------------------------------------------- the file list of docs/layout.md
def listed_in_layout() -> list[str]:
    """The module paths the file list of docs/layout.md names (relative to ``topos/``)."""
    text = (PACKAGE.parent / "docs" / "layout.md").read_text()
    block = text.split("## Every file, floor by floor", 1)[1].split("```", 2)[1]
    return [line.split()[0] for line in block.splitlines() if line.startswith("  ") and line.split()[0].endswith(".py")]


def test_the_layout_lists_every_module() -> None:
    listed = listed_in_layout()
    on_disk = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))
    assert sorted(set(listed)) == on_disk, "docs/layout.md's file list and topos/ differ"
    assert len(listed) == len(set(listed))


def test_the_layout_lists_stages_in_floor_order() -> None:
    order = [f"topos.{p[:-3].replace('/', '.')}".removesuffix(".__init__") for p in listed_in_layout() if p.startswith("stages/")]
    floors = [_stage_floor(m) for m in order if m != "topos.stages"]
    assert floors == sorted(floors), "docs/layout.md lists the stages out of their floor order"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_no_import_cycle_at_import_time() -> None:
    graph = {module: _module_level_imports(module) for module in MODULES}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_source_reader_sees_what_runs_when() -> None:
    # Module level, TYPE_CHECKING and a door, on a module whose imports are known.
    assert "topos.stages.rules" in _module_level_imports("topos.stages.interpret")
    assert "topos.stages.plan" not in _module_level_imports("topos.ir.network")  # TYPE_CHECKING only
    assert ("Network.forward", "topos.stages.interpret") in _function_level_imports("topos.ir.network")


def _unit(module: str) -> str:
    """The subpackage (or layer) a module belongs to, for the cycle check between them."""
    rank, group = _layer(module)
    if rank < 6:
        return group
    parts = module.split(".")
    return ".".join(parts[:2])


def test_no_import_cycle_between_subpackages_at_import_time() -> None:
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        edges = graph.setdefault(_unit(module), set())
        edges.update(_unit(t) for t in _module_level_imports(module) if _unit(t) != _unit(module))
    assert _cycles(graph) == []
