"""Two things the topos reference needs beyond autodoc.

``.. topos-map:: MODULE`` lists every name in ``MODULE.__all__`` with a link to where the
object is documented (the module that defines it) and the first line of its docstring. The
maps (``topos``, ``topos.model``, ``topos.compiler``) re-export; nothing is documented twice.
Because the build is nitpicky, a re-exported name with no documented home fails the build.

A reference that names an object by a path it is merely importable from (``topos.Tensor``,
``Entry`` inside a module that imports it) is resolved the way Python resolves it: import
the path from the referring module's namespace, then link the object's defining location.
A path that Python cannot resolve, or whose object is not documented, stays a warning.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from types import ModuleType
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective

_MISSING = object()


def _defining_module(owner: ModuleType, attr: str, value: object) -> str:
    """The topos module whose source assigns ``attr`` (data has no ``__module__``)."""
    pattern = re.compile(rf"^{re.escape(attr)}\s*(:[^=\n]*)?=", re.MULTILINE)
    for name in sorted(sys.modules):
        module = sys.modules[name]
        if not name.startswith("topos") or getattr(module, attr, _MISSING) is not value:
            continue
        try:
            source = inspect.getsource(module)
        except (OSError, TypeError):
            continue
        if pattern.search(source):
            return name
    return owner.__name__


def locate(path: str) -> str | None:
    """The documented home of the object ``path`` names, or None if Python cannot find it."""
    parts = path.split(".")
    obj: Any = None
    start = 0
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        start = cut
        break
    if obj is None:
        return None
    where = obj.__name__
    for attr in parts[start:]:
        child = getattr(obj, attr, _MISSING)
        if child is _MISSING:
            return None
        if inspect.ismodule(child):
            where = child.__name__
        elif (inspect.isclass(child) or inspect.isroutine(child)) and str(
            getattr(child, "__module__", "")
        ).startswith("topos"):
            where = f"{child.__module__}.{child.__qualname__}"
        elif inspect.ismodule(obj):
            where = f"{_defining_module(obj, attr, child)}.{attr}"
        else:
            where = f"{where}.{attr}"
        obj = child
    return str(where)


def _summary(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ")
    return re.sub(r":\w+:`~?([^`]+)`", r"\1", first)


class ToposMap(SphinxDirective):
    """A two-column table: each exported name, linked to its home, and its summary."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        module = importlib.import_module(self.arguments[0])
        names: list[str] = list(module.__all__)
        table = nodes.table(classes=["topos-map"])
        group = nodes.tgroup(cols=2)
        table += group
        group += nodes.colspec(colwidth=30)
        group += nodes.colspec(colwidth=70)
        body = nodes.tbody()
        group += body
        for name in names:
            home = locate(f"{module.__name__}.{name}")
            if home is None:
                raise self.error(f"{module.__name__}.{name} does not resolve")
            obj = getattr(module, name)
            reference = addnodes.pending_xref(
                "",
                refdomain="py",
                reftype="mod" if inspect.ismodule(obj) else "obj",
                reftarget=home,
                refexplicit=True,
                refwarn=True,
            )
            reference += nodes.literal(name, name)
            row = nodes.row()
            row += nodes.entry("", nodes.paragraph("", "", reference))
            row += nodes.entry("", nodes.paragraph("", _summary(obj)))
            body += row
        return [table]


def _resolve(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    if node.get("refdomain") != "py":
        return None
    target = str(node.get("reftarget", "")).lstrip("~.")
    context = node.get("py:module") or ""
    owner = node.get("py:class") or ""
    candidates = [target]
    if context:
        candidates.append(f"{context}.{target}")
        if owner:
            candidates.append(f"{context}.{owner}.{target}")
    domain = env.get_domain("py")
    for candidate in reversed(candidates):
        home = locate(candidate)
        if home is None or home == target:
            continue
        found = domain.resolve_any_xref(env, node["refdoc"], app.builder, home, node, contnode)
        exact = [r for role, r in found if r is not None]
        if exact:
            return exact[0]
    return None


def _examples(app: Any, what: str, name: str, obj: object, options: Any, lines: list[str]) -> None:
    """Turn the docstrings' ``Example:`` heading into a rubric over its (dedented) block."""
    out: list[str] = []
    base: int | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if base is not None and stripped and indent <= base:
            base = None
        if base is None and stripped in ("Example:", "Examples:"):
            base = indent
            out += [" " * indent + ".. rubric:: " + stripped[:-1], ""]
            continue
        if base is not None and stripped:
            # The block sat 4 columns deeper than the heading; a rubric has no body.
            line = line[:base] + line[base + 4 :] if line[base : base + 4] == "    " else line
        out.append(line)
    lines[:] = _open_lists(out)


def _open_lists(lines: list[str]) -> list[str]:
    """A blank line between a heading such as ``Contract:`` and the list right under it.

    Plain text reads the list as belonging to the heading; reST needs the blank line, or it
    reports the list as an unexpected indentation.
    """
    out: list[str] = []
    for line in lines:
        if out and out[-1].rstrip().endswith(":") and line.lstrip().startswith("- "):
            if len(line) - len(line.lstrip()) == len(out[-1]) - len(out[-1].lstrip()):
                out.append("")
        out.append(line)
    return out


def setup(app: Any) -> dict[str, Any]:
    app.connect("autodoc-process-docstring", _examples)
    app.add_directive("topos-map", ToposMap)
    app.connect("missing-reference", _resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
