"""Built-in layers, registered through the layer hook like any plugin's.

The layers live in :mod:`topos.nn` (a facade over the public surface), and the one list of
them is its table ``LAYERS`` (:mod:`topos.nn.catalog`: registry name -> class); this hook
registers exactly that table, so a new built-in layer is added there and nowhere else. The
table is looked up when the registry is built (on first use, never at ``import topos``), so
``topos.nn`` may itself import ``topos``. While ``topos.nn`` is not importable the hook
contributes nothing; an importable ``topos.nn`` without the table is a bug and refuses the
plugin.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from topos.plugins.hookspecs import hookimpl
from topos.plugins.registry import LayerFactory

LAYER_MODULE = "topos.nn"
"""The module holding the layer table (imported when the registry is built)."""

LAYER_TABLE = "LAYERS"
"""The attribute of :data:`LAYER_MODULE` that maps each registry name to its layer class."""


@hookimpl
def topos_layers() -> Mapping[str, LayerFactory]:
    try:
        module = importlib.import_module(LAYER_MODULE)
    except ModuleNotFoundError as error:
        if error.name == LAYER_MODULE:
            return {}
        raise
    table = getattr(module, LAYER_TABLE, None)
    if not isinstance(table, Mapping):
        raise LookupError(
            f"{LAYER_MODULE} has no layer table {LAYER_TABLE!r} (a mapping from registry name to layer class)"
        )
    return dict(table)
