"""Built-in optimizers (sgd, adam, adamw), registered through the optimizer hook."""

from __future__ import annotations

from collections.abc import Mapping

from topos.optim.base import OptimizerFactory
from topos.optim.optimizers import Adam, AdamW, Sgd
from topos.plugins.hookspecs import hookimpl


@hookimpl
def topos_optimizers() -> Mapping[str, OptimizerFactory]:
    return {"sgd": Sgd, "adam": Adam, "adamw": AdamW}
