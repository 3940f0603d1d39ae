"""Count ``Any`` in the public surface's signatures: ``python tests/typing/any_census.py [-v]``.

The surface is what ``topos``, ``topos.model``, ``topos.compiler``, ``topos.nn``,
``topos.optim``, ``topos.checkpoint`` and ``topos.testing`` export (and the modules they
export, one level down). Each function, and each public method, property and annotated
field of each exported class, is one signature; an object exported from several maps is
counted once. ``test_typing.py`` holds the count under a ceiling, so a new ``Any`` in a
public signature has to be argued for.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

SURFACE = ("topos", "topos.model", "topos.compiler", "topos.nn", "topos.optim", "topos.checkpoint", "topos.testing")
ANY = re.compile(r"\bAny\b")
_PUBLIC_DUNDERS = frozenset({"__init__", "__call__"})


def _annotations(function: Callable[..., object]) -> str:
    """The signature's annotations as text (``from __future__ import annotations`` keeps them strings)."""
    raw = getattr(inspect.unwrap(function), "__annotations__", {})
    return " ".join(str(annotation) for annotation in raw.values())


def _members(owner: type) -> Iterator[tuple[str, str]]:
    for name, member in vars(owner).items():
        if name.startswith("_") and name not in _PUBLIC_DUNDERS:
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if isinstance(member, property) and member.fget is not None:
            yield name, _annotations(member.fget)
        elif inspect.isfunction(member):
            yield name, _annotations(member)
    for name, annotation in inspect.get_annotations(owner).items():
        if not name.startswith("_"):
            yield name, str(annotation)


def _objects() -> dict[str, object]:
    found: dict[str, object] = {}
    modules: list[types.ModuleType] = [importlib.import_module(name) for name in SURFACE]
    seen: set[str] = set()
    while modules:
        module = modules.pop(0)
        if module.__name__ in seen:
            continue
        seen.add(module.__name__)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, types.ModuleType):
                if value.__name__.startswith("topos.") and module.__name__ in SURFACE:
                    modules.append(value)
                continue
            key = f"{getattr(value, '__module__', module.__name__)}.{getattr(value, '__qualname__', name)}"
            found.setdefault(key, value)
    return found


def census() -> dict[str, int]:
    """``{"module.Qualified.name": count}`` for every public signature that mentions ``Any``."""
    counts: dict[str, int] = {}
    for key, value in sorted(_objects().items()):
        if inspect.isclass(value):
            for member, text in _members(value):
                if hits := len(ANY.findall(text)):
                    counts[f"{key}.{member}"] = counts.get(f"{key}.{member}", 0) + hits
        elif inspect.isfunction(value) and (hits := len(ANY.findall(_annotations(value)))):
            counts[key] = hits
    return counts


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's topos
    counts = census()
    if "-v" in sys.argv:
        for key, hits in counts.items():
            print(f"{hits:3d}  {key}")
    print(f"{len(counts)} public signatures mention Any, {sum(counts.values())} times in all")
