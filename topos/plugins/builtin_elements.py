"""Built-in element types (f32, f64, bf16), registered through the element-type hook."""

from __future__ import annotations

from collections.abc import Sequence

from topos.ir.element import ElementType, bf16, f32, f64
from topos.plugins.hookspecs import hookimpl


@hookimpl
def topos_element_types() -> Sequence[ElementType]:
    return (f32, f64, bf16)
