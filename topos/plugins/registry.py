"""The registry: a pluggy manager whose hook results are validated once and held typed.

Contract: :meth:`Registry.register` registers one plugin atomically. It refuses, with a
:class:`~topos.errors.PluginValidationError` that names the plugin and what is wrong, and
leaves the registry exactly as it was, when the plugin

- defines a ``topos_*`` function that is not one of the three seams (opcodes, fusions and
  backends are sealed), or a seam function not marked ``@hookimpl``;
- has an implementation pluggy rejects (for instance one that takes arguments);
- raises while its hooks are called, or returns a mapping or sequence that raises when read;
- returns something malformed (not a sequence of element types, not a mapping from names
  to callables);
- claims a name another plugin (or the same one twice) already holds.

Entry-point discovery (:meth:`Registry.load_entry_points`) never raises for one bad
package: it warns (:class:`PluginLoadWarning`, naming the entry point and distribution),
records the failure in :meth:`Registry.failures` and goes on with the rest.

Lookups are typed: ``element_types()`` is a ``Mapping[str, ElementType]`` and so on, never
``Any``; an unknown name raises an error listing the known ones. ``layer(name, kind)``
returns ``type[kind]`` after checking that the registered factory is that class. Iteration order is the
sorted order of names, so nothing depends on discovery order.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar, cast, final, overload

import attrs
import pluggy

from topos.errors import ElementError, PluginValidationError, ToposError, user_site
from topos.ir.element import ElementType
from topos.optim.base import OptimizerFactory
from topos.plugins import hookspecs
from topos.plugins.hookspecs import PROJECT, SEAMS

if TYPE_CHECKING:
    from topos.stages.spec import Value

__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "Layer",
    "LayerFactory",
    "LayerKindError",
    "PluginFailure",
    "PluginLoadWarning",
    "Registry",
    "UnknownElementError",
    "UnknownNameError",
]

ENTRY_POINT_GROUP = "topos"

BUILTIN_PLUGINS: tuple[str, ...] = (
    "topos.plugins.builtin_elements",
    "topos.plugins.builtin_optimizers",
    "topos.plugins.builtin_layers",
)
"""Modules registered first, through the same hooks as third-party plugins."""

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


class Layer(Protocol):
    """What a layer factory builds: something that records onto its input's tape."""

    def __call__(self, input: Value, /) -> Value: ...


LayerFactory: TypeAlias = Callable[..., Layer]
"""What the layer registry holds: a callable (usually a class) building a layer."""


class UnknownNameError(ToposError, LookupError):
    """A lookup by name found nothing; the message lists the known names."""


class LayerKindError(ToposError, TypeError):
    """The layer registered under a name is not the class a typed lookup asked for."""


_Kind = TypeVar("_Kind")


class UnknownElementError(UnknownNameError, ElementError):
    """No element type is registered under the name."""


class PluginLoadWarning(UserWarning):
    """An entry-point plugin failed to load or register; the others were kept."""


@final
@attrs.frozen(slots=True)
class PluginFailure:
    """A plugin discovered through an entry point that could not be registered."""

    plugin: str
    reason: str


@final
@attrs.frozen(slots=True)
class _Tables:
    elements: Mapping[str, ElementType]
    optimizers: Mapping[str, OptimizerFactory]
    layers: Mapping[str, LayerFactory]
    owners: Mapping[tuple[str, str], str]


_SEAM_KIND = {
    "topos_element_types": "element type",
    "topos_optimizers": "optimizer",
    "topos_layers": "layer",
}


def _describe(plugin: object) -> str:
    name = getattr(plugin, "__name__", None)
    if isinstance(name, str):
        return name
    kind = type(plugin)
    return f"{kind.__module__}.{kind.__qualname__}"


def _listed(plugin_name: str, seam: str, result: Sequence[object]) -> list[object]:
    """The items of a hook's sequence, read once; a sequence that raises while read is the plugin's fault."""
    try:
        return list(result)
    except Exception as error:
        raise PluginValidationError(
            f"plugin {plugin_name!r}: the sequence its {seam} hook returned raised {type(error).__name__} "
            f"when read: {error}"
        ) from error


def _known(names: Mapping[str, object]) -> str:
    return ", ".join(sorted(names)) or "(none)"


class Registry:
    """Element types, optimizers and layers contributed by plugins, validated and typed.

    ``Registry()`` is empty; :func:`topos.plugins.registry` gives the process-wide one with
    the built-ins and the installed entry points loaded.

    Example:
        >>> import numpy as np
        >>> from topos import ElementType
        >>> from topos.plugins import Registry, hookimpl
        >>> class Half:
        ...     @hookimpl
        ...     def topos_element_types(self):
        ...         return [ElementType("f16", np.float16, np.float32, np.float32, "f16")]
        >>> registry = Registry()
        >>> registry.register(Half(), "half")
        'half'
        >>> registry.element_type("f16").accumulator
        dtype('float32')
    """

    def __init__(self) -> None:
        self._manager = pluggy.PluginManager(PROJECT)
        self._manager.add_hookspecs(hookspecs)
        self._tables = _Tables(MappingProxyType({}), MappingProxyType({}), MappingProxyType({}), MappingProxyType({}))
        self._failures: list[PluginFailure] = []
        # pluggy's manager is not thread-safe, and register reads, merges and commits the
        # tables in three steps: one reentrant lock makes each register one atomic step
        # (reentrant because load_entry_points calls register while holding it).
        self._lock = threading.RLock()

    @classmethod
    def with_builtins(cls) -> Registry:
        """A registry holding only the built-ins (no entry points)."""
        registry = cls()
        for module_name in BUILTIN_PLUGINS:
            registry.register(importlib.import_module(module_name), module_name)
        return registry

    # ----------------------------------------------------------------- registration
    def register(self, plugin: object, name: str | None = None) -> str:
        """Register ``plugin`` (a module or object with ``@hookimpl`` functions); see the module contract.

        Returns the name it was registered under. Safe to call from many threads at once:
        registrations are serialized, so none is lost.
        """
        with self._lock:
            return self._register(plugin, name)

    def _register(self, plugin: object, name: str | None) -> str:
        plugin_name = name if name is not None else _describe(plugin)
        if self._manager.has_plugin(plugin_name):
            raise PluginValidationError(f"plugin {plugin_name!r}: a plugin of that name is already registered")
        self._check_hook_names(plugin_name, plugin)
        try:
            self._manager.register(plugin, plugin_name)
        except (pluggy.PluginValidationError, ValueError) as error:
            # pluggy records the plugin before it verifies the hooks; take it back out.
            if self._manager.has_plugin(plugin_name):
                self._manager.unregister(name=plugin_name)
            raise PluginValidationError(f"plugin {plugin_name!r}: {error}") from None
        try:
            tables = self._merged(plugin_name, plugin)
        except BaseException:
            self._manager.unregister(plugin, plugin_name)
            raise
        self._tables = tables
        return plugin_name

    def _check_hook_names(self, plugin_name: str, plugin: object) -> None:
        for attribute in sorted(dir(plugin)):
            if attribute.startswith("__"):
                continue
            try:
                value = getattr(plugin, attribute)
            except Exception:  # a property that raises is no hook; pluggy skips it too
                continue
            if not callable(value) or isinstance(value, type):
                continue
            marked = getattr(value, f"{PROJECT}_impl", None) is not None
            hook = attribute
            if marked:
                specname = getattr(value, f"{PROJECT}_impl", {}).get("specname")
                hook = specname or attribute
            if not (marked or attribute.startswith(f"{PROJECT}_")):
                continue
            if hook not in SEAMS:
                raise PluginValidationError(
                    f"plugin {plugin_name!r}: {hook!r} is not a topos hook. Plugins may add "
                    f"element types, optimizers and layers ({', '.join(SEAMS)}); opcodes, "
                    "fusions and backends are sealed."
                )
            if not marked:
                raise PluginValidationError(
                    f"plugin {plugin_name!r}: {attribute!r} is not marked with @topos.plugins.hookimpl, "
                    "so it would never be called"
                )

    def _results(self, plugin_name: str, plugin: object, seam: str) -> list[object]:
        caller: pluggy.HookCaller = getattr(self._manager.hook, seam)
        results: list[object] = []
        for implementation in caller.get_hookimpls():
            if implementation.plugin is not plugin:
                continue
            try:
                results.append(implementation.function())
            except Exception as error:
                raise PluginValidationError(
                    f"plugin {plugin_name!r} raised {type(error).__name__} in {seam}: {error}"
                ) from error
        return results

    def _merged(self, plugin_name: str, plugin: object) -> _Tables:
        owners = dict(self._tables.owners)
        elements = dict(self._tables.elements)
        optimizers = dict(self._tables.optimizers)
        layers = dict(self._tables.layers)

        def claim(seam: str, name: object, table: Mapping[str, object]) -> str:
            kind = _SEAM_KIND[seam]
            if not isinstance(name, str) or not _NAME.match(name):
                raise PluginValidationError(
                    f"plugin {plugin_name!r}: {seam} gave {kind} name {name!r}; names are non-empty "
                    "strings of letters, digits, '_', '-' and '.'"
                )
            if name in table:
                holder = owners[(seam, name)]
                who = "itself, twice" if holder == plugin_name else f"plugin {holder!r}"
                raise PluginValidationError(
                    f"plugin {plugin_name!r}: the {kind} name {name!r} is already registered by {who}"
                )
            owners[(seam, name)] = plugin_name
            return name

        for result in self._results(plugin_name, plugin, "topos_element_types"):
            if not isinstance(result, Sequence) or isinstance(result, (str, bytes)):
                raise PluginValidationError(
                    f"plugin {plugin_name!r}: topos_element_types must return a sequence of ElementType, "
                    f"got {type(result).__name__}"
                )
            for item in _listed(plugin_name, "topos_element_types", result):
                if not isinstance(item, ElementType):
                    raise PluginValidationError(
                        f"plugin {plugin_name!r}: topos_element_types returned a {type(item).__name__}, "
                        "not an ElementType"
                    )
                elements[claim("topos_element_types", item.name, elements)] = item
        for name, factory in self._factories(plugin_name, plugin, "topos_optimizers"):
            # Only callability is checkable here; the conformance suite holds the behaviour.
            optimizers[claim("topos_optimizers", name, optimizers)] = cast(OptimizerFactory, factory)
        for name, factory in self._factories(plugin_name, plugin, "topos_layers"):
            layers[claim("topos_layers", name, layers)] = cast(LayerFactory, factory)
        return _Tables(
            MappingProxyType(dict(sorted(elements.items()))),
            MappingProxyType(dict(sorted(optimizers.items()))),
            MappingProxyType(dict(sorted(layers.items()))),
            MappingProxyType(owners),
        )

    def _factories(self, plugin_name: str, plugin: object, seam: str) -> list[tuple[object, object]]:
        found: list[tuple[object, object]] = []
        for result in self._results(plugin_name, plugin, seam):
            if not isinstance(result, Mapping):
                raise PluginValidationError(
                    f"plugin {plugin_name!r}: {seam} must return a mapping from names to factories, "
                    f"got {type(result).__name__}"
                )
            try:
                # A plugin's own mapping type may fail while it is read: that is the plugin's
                # fault, refused by name like a hook that raises.
                pairs = sorted(result.items(), key=lambda pair: str(pair[0]))
            except Exception as error:
                raise PluginValidationError(
                    f"plugin {plugin_name!r}: the mapping its {seam} hook returned raised "
                    f"{type(error).__name__} when read: {error}"
                ) from error
            for name, factory in pairs:
                if not callable(factory):
                    raise PluginValidationError(
                        f"plugin {plugin_name!r}: {seam} gave {name!r} a {type(factory).__name__}, "
                        "which is not callable"
                    )
                found.append((name, factory))
        return found

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> list[str]:
        """Register every installed ``group`` entry point, in name order; returns those registered.

        A package that fails to import or register is skipped with a
        :class:`PluginLoadWarning`; see :meth:`failures`.
        """
        with self._lock:
            return self._load_entry_points(group)

    def _load_entry_points(self, group: str) -> list[str]:
        loaded: list[str] = []
        points = sorted(importlib.metadata.entry_points(group=group), key=lambda p: (p.name, p.value))
        for point in points:
            distribution = f" (distribution {point.dist.name} {point.dist.version})" if point.dist else ""
            label = f"{point.name}{distribution}"
            try:
                plugin = point.load()
                loaded.append(self.register(plugin, point.name))
            except Exception as error:
                reason = error.detail if isinstance(error, PluginValidationError) else f"{type(error).__name__}: {error}"
                self._failures.append(PluginFailure(point.name, reason))
                warnings.warn(
                    f"topos plugin {label!r} was not loaded: {reason}", PluginLoadWarning, stacklevel=2
                )
        return loaded

    # ----------------------------------------------------------------- reads
    def plugins(self) -> list[str]:
        """Names of the registered plugins, in registration order."""
        with self._lock:
            return [name for name, _ in self._manager.list_name_plugin()]

    def failures(self) -> tuple[PluginFailure, ...]:
        """Entry-point plugins that could not be registered, and why."""
        with self._lock:
            return tuple(self._failures)

    def owner(self, seam: str, name: str) -> str:
        """The plugin that registered ``name`` in ``seam`` (e.g. ``owner("topos_optimizers", "adam")``)."""
        found = self._tables.owners.get((seam, name))
        if found is None:
            raise UnknownNameError(f"nothing is registered as {name!r} in {seam}")
        return found

    def element_types(self) -> Mapping[str, ElementType]:
        return self._tables.elements

    def optimizers(self) -> Mapping[str, OptimizerFactory]:
        return self._tables.optimizers

    def layers(self) -> Mapping[str, LayerFactory]:
        return self._tables.layers

    def element_type(self, name: str) -> ElementType:
        found = self._tables.elements.get(_name(name, "an element type", UnknownElementError))
        if found is None:
            raise UnknownElementError(
                f"no element type is named {name!r}; known: {_known(self._tables.elements)}"
            )
        return found

    def optimizer(self, name: str) -> OptimizerFactory:
        found = self._tables.optimizers.get(_name(name, "an optimizer", UnknownNameError))
        if found is None:
            raise UnknownNameError(f"no optimizer is named {name!r}; known: {_known(self._tables.optimizers)}")
        return found

    @overload
    def layer(self, name: str) -> LayerFactory: ...
    @overload
    def layer(self, name: str, kind: type[_Kind]) -> type[_Kind]: ...
    def layer(self, name: str, kind: type[_Kind] | None = None) -> LayerFactory | type[_Kind]:
        """The layer factory named ``name``; given ``kind``, checked to be that class (or a subclass).

        With ``kind`` the result is typed ``type[kind]`` for a type checker, and a factory that
        is not such a class raises ``LayerKindError`` naming both.
        """
        found = self._tables.layers.get(_name(name, "a layer", UnknownNameError))
        if found is None:
            raise UnknownNameError(f"no layer is named {name!r}; known: {_known(self._tables.layers)}")
        if kind is None:
            return found
        given: object = kind  # typed as the caller may really pass it
        if not isinstance(given, type):
            raise LayerKindError(
                f"{user_site()}: layer({name!r}, kind): kind must be a class, got {type(given).__name__} {given!r:.60}"
            )
        if not (isinstance(found, type) and issubclass(found, kind)):
            shown = found.__qualname__ if isinstance(found, type) else f"the factory {found!r:.60}"
            raise LayerKindError(
                f"{user_site()}: layer({name!r}, {kind.__qualname__}): the layer registered as {name!r} "
                f"is {shown}, not {kind.__qualname__} or a subclass of it"
            )
        return found

    def __repr__(self) -> str:
        return (
            f"Registry({len(self._tables.elements)} element types, {len(self._tables.optimizers)} "
            f"optimizers, {len(self._tables.layers)} layers, plugins {self.plugins()})"
        )


def _name(name: object, what: str, error: type[ToposError]) -> str:
    """A lookup key that is a str; anything else (an unhashable list, too) is refused by name."""
    if not isinstance(name, str):
        raise error(f"the name of {what} must be a str, got {type(name).__name__} {name!r:.60}")
    return name
