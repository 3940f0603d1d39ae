"""One list of built-in layers: ``topos.nn.LAYERS`` (``topos/nn/catalog.py``).

Every other enumeration of the layers is checked against it here: the public layer classes
of ``topos.nn`` (found by what they are, so a new one that is not listed fails), the
exports of ``topos.nn`` and ``topos.model``, the plugin registry's built-in layers, and the
table in ``docs/plugins.md``.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import pytest

import topos.model
import topos.nn
from topos.nn import LAYERS
from topos.plugins import Registry, layers, registry

ROOT = Path(__file__).resolve().parent.parent


def _nn_modules() -> list[ModuleType]:
    found = [topos.nn]
    for info in pkgutil.walk_packages(topos.nn.__path__, "topos.nn."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(importlib.import_module(info.name))
    return found


def is_layer(candidate: object) -> bool:
    """A layer: a class (not an enum, not a protocol) whose instances visit their parameters
    and record when called with one recorded value, any further argument being optional."""
    if not inspect.isclass(candidate) or issubclass(candidate, enum.Enum):
        return False
    if getattr(candidate, "_is_protocol", False) or not callable(getattr(candidate, "visit", None)):
        return False
    if not any("__call__" in vars(owner) for owner in candidate.__mro__[:-1]):
        return False
    taken = list(inspect.signature(candidate.__call__).parameters.values())[1:]
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not taken or taken[0].kind not in positional:
        return False
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return all(p.default is not inspect.Parameter.empty or p.kind in variadic for p in taken[1:])


def public_layer_classes() -> set[type]:
    """Every layer class a public module of ``topos.nn`` defines under a public name."""
    return {
        obj
        for module in _nn_modules()
        for name, obj in vars(module).items()
        if not name.startswith("_") and is_layer(obj) and obj.__module__ == module.__name__
    }


def test_every_public_layer_class_is_in_the_one_list() -> None:
    listed = set(LAYERS.values())
    missing = sorted(c.__qualname__ for c in public_layer_classes() - listed)
    assert not missing, f"public layer classes missing from topos.nn.LAYERS (topos/nn/catalog.py): {missing}"
    assert all(is_layer(c) for c in listed), sorted(c.__name__ for c in listed if not is_layer(c))


def test_the_criterion_leaves_out_what_is_not_a_layer() -> None:
    # Rotary needs the positions too and TransformerLm the batch and a mask; an Activation is
    # a value for a stage, and a result type such as BatchNorm2dStep records nothing.
    for name in ("Rotary", "TransformerLm", "Activation", "BatchNorm2dStep", "KvCache", "Position", "Module"):
        assert not is_layer(getattr(topos.nn, name)), name
    assert is_layer(topos.nn.MultiHeadAttention) and is_layer(topos.nn.Sequential)


def test_names_are_snake_case_in_order_and_the_table_is_read_only() -> None:
    assert list(LAYERS) == sorted(LAYERS)
    assert all(re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", name) for name in LAYERS), list(LAYERS)
    assert len(set(LAYERS.values())) == len(LAYERS), "a class listed under two names"
    with pytest.raises(TypeError):
        LAYERS["mine"] = object  # type: ignore[index]


@pytest.mark.parametrize("surface", [topos.nn, topos.model], ids=lambda m: m.__name__)
def test_the_surfaces_export_exactly_the_listed_layers(surface: ModuleType) -> None:
    exported = {name: getattr(surface, name) for name in surface.__all__}
    listed = {cls.__name__: cls for cls in LAYERS.values()}
    assert {name: exported.get(name) for name in listed} == listed
    unlisted = sorted(name for name, obj in exported.items() if is_layer(obj) and obj not in listed.values())
    assert not unlisted, f"{surface.__name__} exports layers that topos.nn.LAYERS does not list: {unlisted}"


def test_the_plugin_registry_holds_exactly_the_list() -> None:
    assert dict(Registry.with_builtins().layers()) == dict(LAYERS)
    default = registry()
    builtins = {
        name: factory
        for name, factory in layers().items()
        if default.owner("topos_layers", name) == "topos.plugins.builtin_layers"
    }
    assert builtins == dict(LAYERS)


def test_the_documented_table_is_the_list() -> None:
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| `topos\.nn\.(\w+)` \|$", section, flags=re.MULTILINE)
    assert rows == [(name, cls.__name__) for name, cls in LAYERS.items()]
