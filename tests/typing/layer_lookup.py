"""Typed layer lookups (checked by mypy --strict in tests/test_layer_lookup_typing.py; also runs).

``layer(name, kind)`` is typed ``type[kind]``, so the layer's own constructor and methods
reach the type checker; ``layer(name)`` stays the untyped-by-name ``LayerFactory``. The
mistakes that must fail sit in ``layer_mistakes.py`` beside this file.
"""

from __future__ import annotations

from typing import assert_type

from topos import Tape
from topos.init import xavier
from topos.nn import Conv2d, LayerNorm, Linear
from topos.plugins import LayerFactory, Registry, layer

linear = layer("linear", Linear)
assert_type(linear, type[Linear])
assert_type(layer("layer_norm", LayerNorm), type[LayerNorm])
assert_type(Registry.with_builtins().layer("conv2d", Conv2d), type[Conv2d])
assert_type(layer("linear"), LayerFactory)

tape = Tape()
made = linear.init(tape, 3, 2, xavier(0))
assert_type(made, Linear)

