"""docs/layout.md's size budgets, counted: code lines per floor, and no oversized room.

Contract:
- One counter, :func:`code_lines`: a line of a module counts when a token of code sits on
  it. Blank lines, comment-only lines and the lines of docstrings (a bare string that opens
  a module, class or function body) do not count; a statement spread over five lines counts
  five. It reads the source with ``tokenize`` and ``ast`` only, so it counts the same on
  every machine.
- The floors and their budgets are the table under "Size budgets" in ``docs/layout.md``:
  each row names a floor (a folder, or a list of top-level modules) and its budget. Every
  module of the package belongs to exactly one floor; a module no row claims fails the test,
  so a new file cannot slip between the lines the counter draws. The row ``core`` is the sum
  of the floors it names and has a budget of its own.
- No module is longer than :data:`ROOM` physical lines unless its opening docstring has a
  line starting ``Size:`` that says why.
- ``python tests/test_size.py`` prints each floor's count beside its budget.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parent.parent
PACKAGE: Final = ROOT / "topos"
LAYOUT: Final = ROOT / "docs" / "layout.md"
ROOM: Final = 800
_SKIPPED: Final = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_lines(source: str) -> int:
    """The code lines of ``source``: lines a code token sits on, docstrings excluded.

    Example:
        >>> code_lines('\"\"\"Doc.\"\"\"\\n\\n# why\\nx = (\\n    1,\\n)\\n')
        3
    """
    docs = _docstring_lines(ast.parse(source))
    counted: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _SKIPPED:
            counted.update(n for n in range(token.start[0], token.end[0] + 1) if n not in docs)
    return len(counted)


def budgets() -> dict[str, tuple[tuple[str, ...], int]]:
    """``{floor: (members, budget)}`` from the "Size budgets" table of docs/layout.md.

    A member is a path under ``topos/`` (``ir/``, ``tensor.py``) or, for ``core``, another
    floor's name.
    """
    text = LAYOUT.read_text()
    section = text.split("## Size budgets", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[tuple[str, ...], int]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[2].replace(",", "").isdigit():
            continue
        members = tuple(m.strip("` ") for m in cells[1].split(","))
        rows[cells[0].strip("` ")] = (members, int(cells[2].replace(",", "")))
    return rows


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _claims(member: str, module: Path) -> bool:
    relative = module.relative_to(PACKAGE).as_posix()
    return relative.startswith(member) if member.endswith("/") else relative == member


def floor_of(module: Path, table: dict[str, tuple[tuple[str, ...], int]]) -> list[str]:
    """The floors whose members claim ``module`` (the longest folder wins: ``kernels/libm/``
    over ``kernels/``)."""
    best: list[tuple[int, str]] = []
    for name, (members, _) in table.items():
        if name == "core":
            continue
        for member in members:
            if _claims(member, module):
                best.append((len(member), name))
    if not best:
        return []
    longest = max(length for length, _ in best)
    return sorted(name for length, name in best if length == longest)


def counts() -> dict[str, int]:
    """Code lines per floor, and ``core`` as the sum of the floors it names."""
    table = budgets()
    found = {name: 0 for name in table}
    for module in _modules():
        for name in floor_of(module, table)[:1]:
            found[name] += code_lines(module.read_text())
    if "core" in table:
        found["core"] = sum(found[name] for name in table["core"][0])
    return found


# ---------------------------------------------------------------- the tests
def test_the_counter_counts_code_only() -> None:
    source = '"""Module.\n\nMore."""\n\nimport os  # why\n\n\ndef f(\n    a: int,\n) -> int:\n    """Doc."""\n    # only a comment\n    return a + len(\n        os.sep\n    )\n'
    # The import, the three lines of the signature and the three of the return.
    assert code_lines(source) == 7


def test_the_layout_states_budgets() -> None:
    table = budgets()
    assert "core" in table and len(table) >= 8, f"docs/layout.md's Size budgets table has {sorted(table)}"
    assert all(member in table for member in table["core"][0]), table["core"]


def test_every_module_belongs_to_one_floor() -> None:
    table = budgets()
    unclaimed = [str(m.relative_to(ROOT)) for m in _modules() if not floor_of(m, table)]
    twice = [str(m.relative_to(ROOT)) for m in _modules() if len(floor_of(m, table)) > 1]
    assert unclaimed == [], "add these modules to a floor in docs/layout.md's Size budgets"
    assert twice == []


@pytest.mark.parametrize("floor", sorted(budgets()))
def test_floor_within_its_budget(floor: str) -> None:
    counted = counts()[floor]
    budget = budgets()[floor][1]
    assert counted <= budget, f"{floor} holds {counted} code lines, over its budget of {budget} (docs/layout.md)"


def test_no_room_too_large_to_hold() -> None:
    oversized = []
    for module in _modules():
        text = module.read_text()
        lines = text.count("\n") + (not text.endswith("\n"))
        if lines > ROOM:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if not re.search(r"^Size: \S", doc, re.M):
                oversized.append(f"{module.relative_to(ROOT)} ({lines} lines)")
    assert oversized == [], f"modules over {ROOM} lines whose contract does not say why (a 'Size:' line)"


def main() -> int:
    table = budgets()
    found = counts()
    for name, (members, budget) in table.items():
        print(f"{name:12} {found[name]:6,} / {budget:6,}  {', '.join(members)}")
    return 0 if all(found[n] <= b for n, (_, b) in table.items()) else 1


if __name__ == "__main__":
    sys.exit(main())
