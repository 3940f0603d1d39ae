"""Built-in layers, registered through the layer hook like any plugin's.

The layers live in :mod:`topos.nn` (a facade over the public surface). To register one,
add a ``(registry name, attribute of topos.nn)`` pair to :data:`BUILTIN_LAYERS`; the
attribute is looked up when the registry is built (on first use, never at ``import topos``),
so ``topos.nn`` may itself import ``topos``. While ``topos.nn`` is not importable the hook
contributes nothing; a listed attribute that is missing is a bug and refuses the plugin.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from topos.plugins.hookspecs import hookimpl
from topos.plugins.registry import LayerFactory

BUILTIN_LAYERS: tuple[tuple[str, str], ...] = (
    ("batch_norm", "BatchNorm"),
    ("conv2d", "Conv2d"),
    ("dropout", "Dropout"),
    ("embedding", "Embedding"),
    ("layer_norm", "LayerNorm"),
    ("linear", "Linear"),
    ("max_pool", "MaxPool"),
    ("mlp", "Mlp"),
    ("rms_norm", "RmsNorm"),
    ("sequential", "Sequential"),
)
"""``(name, attribute)`` pairs, e.g. ``("linear", "Linear")`` registers ``topos.nn.Linear``."""

LAYER_MODULE = "topos.nn"


@hookimpl
def topos_layers() -> Mapping[str, LayerFactory]:
    if not BUILTIN_LAYERS:
        return {}
    try:
        module = importlib.import_module(LAYER_MODULE)
    except ModuleNotFoundError as error:
        if error.name == LAYER_MODULE:
            return {}
        raise
    found: dict[str, LayerFactory] = {}
    for name, attribute in BUILTIN_LAYERS:
        factory = getattr(module, attribute, None)
        if factory is None:
            raise LookupError(f"{LAYER_MODULE} has no attribute {attribute!r} (listed as layer {name!r})")
        found[name] = factory
    return found
