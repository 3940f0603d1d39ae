"""The plugin module the ``topos`` entry point names: two hook implementations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from topos import ElementType
from topos.optim import OptimizerFactory
from topos.plugins import hookimpl
from topos_lion.elements import f16
from topos_lion.lion import Lion


@hookimpl
def topos_optimizers() -> Mapping[str, OptimizerFactory]:
    return {"lion": Lion}


@hookimpl
def topos_element_types() -> Sequence[ElementType]:
    return [f16]
