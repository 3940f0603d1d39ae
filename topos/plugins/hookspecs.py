"""The three open seams of topos, as pluggy hook specifications.

A plugin is a module (or any object) defining some of the functions below, each marked
with :data:`topos.plugins.hookimpl`. Third-party packages are discovered through the
entry-point group ``topos``::

    [project.entry-points.topos]
    lion = "topos_lion.plugin"

Every hook takes no arguments and returns a collection; the registry calls each plugin's
implementation once, when the plugin is registered, validates what came back, and refuses
the whole plugin (:class:`~topos.errors.PluginValidationError`, naming it) if anything is
malformed or clashes with a name already registered. Built-in element types, optimizers
and layers are registered through these same hooks.

There are exactly three. Opcodes, fusion patterns and backends are sealed: a plugin that
defines a hook for them (``topos_opcodes``, ``topos_backends``, ...) is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from topos.ir.element import ElementType
    from topos.optim.base import OptimizerFactory
    from topos.plugins.registry import LayerFactory

__all__ = ["SEAMS", "hookimpl", "hookspec", "topos_element_types", "topos_layers", "topos_optimizers"]

PROJECT = "topos"

hookspec = pluggy.HookspecMarker(PROJECT)
"""Marks the specifications below; not for plugins."""

hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a plugin's implementation of a topos hook."""


@hookspec
def topos_element_types() -> Sequence[ElementType]:
    """Contribute element types (number types a tape can record in).

    Return a sequence of :class:`~topos.ir.element.ElementType`. Each is registered under
    its ``name``, which must not be taken. The type must carry floating numpy dtypes for
    storage, compute and accumulation; set ``emittable=False`` when StableHLO has no name for
    it, and optionally a ``gemm`` hook that is offered every matrix product.

    Example::

        @hookimpl
        def topos_element_types():
            return [ElementType("f16", np.float16, np.float32, np.float32, "f16")]
    """
    raise NotImplementedError


@hookspec
def topos_optimizers() -> Mapping[str, OptimizerFactory]:
    """Contribute optimizers by name.

    Return a mapping from a new name to a factory (usually a class) whose instances have
    ``init(parameters) -> OptimizerState`` and ``update(gradients, state, parameters) ->
    (parameters, state)``. Factories must accept ``learning_rate`` as a keyword; every
    registered optimizer is held to the same conformance suite as the built-ins.

    Example::

        @hookimpl
        def topos_optimizers():
            return {"lion": Lion}
    """
    raise NotImplementedError


@hookspec
def topos_layers() -> Mapping[str, LayerFactory]:
    """Contribute layers by name.

    Return a mapping from a new name to a factory (usually a class) that builds a layer:
    something called with a recording value that records onto its tape and returns a
    value (see :mod:`topos.nn`).

    Example::

        @hookimpl
        def topos_layers():
            return {"scaled_linear": ScaledLinear}
    """
    raise NotImplementedError


SEAMS: tuple[str, ...] = ("topos_element_types", "topos_optimizers", "topos_layers")
"""The hook names a plugin may implement; everything else is sealed."""
