"""Plugins: the three open seams (element types, optimizers, layers) and a typed facade.

topos is a pluggy project named ``topos``. A plugin implements any of the hooks in
:mod:`topos.plugins.hookspecs`, marked with :data:`hookimpl`; an installed package makes
itself known through the entry-point group ``topos``. The built-ins are registered through
the same hooks, first, so a plugin's optimizer has the same standing as Adam.

The facade below reads the process-wide :class:`Registry`, built on first use: the
built-ins, then every installed entry point (a broken one is skipped with a
:class:`PluginLoadWarning`). Its results are typed (no ``Any``):

Example:
    >>> from topos.plugins import element_type, optimizer, optimizers
    >>> sorted(optimizers())[:3]
    ['adam', 'adamw', 'sgd']
    >>> element_type("bf16").accumulator
    dtype('float32')
    >>> sgd = optimizer("sgd")(learning_rate=0.1)
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TypeVar, overload

from topos.ir.element import ElementType
from topos.optim.base import OptimizerFactory
from topos.plugins.hookspecs import SEAMS, hookimpl, hookspec
from topos.plugins.registry import (
    ENTRY_POINT_GROUP,
    Layer,
    LayerFactory,
    LayerKindError,
    PluginFailure,
    PluginLoadWarning,
    Registry,
    UnknownElementError,
    UnknownNameError,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "SEAMS",
    "Layer",
    "LayerFactory",
    "LayerKindError",
    "PluginFailure",
    "PluginLoadWarning",
    "Registry",
    "UnknownElementError",
    "UnknownNameError",
    "element_type",
    "element_types",
    "hookimpl",
    "hookspec",
    "layer",
    "layers",
    "optimizer",
    "optimizers",
    "register",
    "registry",
]

_DEFAULT: list[Registry] = []
_DEFAULT_LOCK = threading.RLock()


def _build_default() -> Registry:
    built = Registry.with_builtins()
    built.load_entry_points()
    return built


def registry() -> Registry:
    """The process-wide registry: built-ins, then installed entry points (built on first use).

    Built exactly once even when many threads ask first: the build runs under a module lock
    and the list is checked again inside it (the check outside keeps later reads lock-free).
    """
    if not _DEFAULT:
        with _DEFAULT_LOCK:
            if not _DEFAULT:
                _DEFAULT.append(_build_default())
    return _DEFAULT[0]


def register(plugin: object, name: str | None = None) -> str:
    """Register a plugin in the process-wide registry (atomically; see :class:`Registry`)."""
    return registry().register(plugin, name)


def element_types() -> Mapping[str, ElementType]:
    """Every registered element type by name."""
    return registry().element_types()


def optimizers() -> Mapping[str, OptimizerFactory]:
    """Every registered optimizer factory by name."""
    return registry().optimizers()


def layers() -> Mapping[str, LayerFactory]:
    """Every registered layer factory by name."""
    return registry().layers()


def element_type(name: str) -> ElementType:
    """The element type registered as ``name``; unknown names list the known ones."""
    return registry().element_type(name)


def optimizer(name: str) -> OptimizerFactory:
    """The optimizer factory registered as ``name``; unknown names list the known ones."""
    return registry().optimizer(name)


_Kind = TypeVar("_Kind")


@overload
def layer(name: str) -> LayerFactory: ...
@overload
def layer(name: str, kind: type[_Kind]) -> type[_Kind]: ...
def layer(name: str, kind: type[_Kind] | None = None) -> LayerFactory | type[_Kind]:
    """The layer factory registered as ``name``; unknown names list the known ones.

    Given ``kind``, the factory is checked to be that class (or a subclass) and typed as
    ``type[kind]``, so a type checker sees the layer's own constructor and methods; a
    mismatch raises ``LayerKindError`` naming both.

    Example:
        >>> from topos.nn import Linear
        >>> layer("linear", Linear).__name__
        'Linear'
    """
    if kind is None:
        return registry().layer(name)
    return registry().layer(name, kind)
