"""The map for training: record, train, checkpoint. It moves nothing; every name here is
also importable from where it lives.

Example:
    >>> from topos.model import Tape, Linear, cross_entropy, Adam
    >>> Linear.__name__
    'Linear'
"""

from topos import checkpoint, init
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.shape import Shape
from topos.joins import concat, stack
from topos.nn import (
    Activation,
    BatchNorm,
    Conv2d,
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    MaxPool,
    Mlp,
    Module,
    Path,
    RmsNorm,
    Segment,
    Sequential,
    Visitable,
    Visitor,
    batch_norm,
    causal_mask,
    conv2d,
    cross_entropy,
    max_pool,
    mse,
    named_parameters,
    parameters,
    scaled_dot_product,
)
from topos.optim import Adam, AdamW, Optimizer, OptimizerState, Sgd, schedules
from topos.stages.gradient import Adjoints
from topos.stages.plan import BoundEntry, Entry, Plan
from topos.stages.runner import Runner
from topos.stages.spec import Tape, Value
from topos.state import Field, Parameters, Run
from topos.tensor import Tensor

__all__ = [
    "Activation", "Adam", "AdamW", "Adjoints", "BatchNorm", "BoundEntry", "Conv2d", "Dropout",
    "Embedding", "Entry", "Field", "LayerNorm", "Linear", "MaxPool", "Mlp", "Module", "Network",
    "Optimizer", "OptimizerState", "Parameters", "Path", "Plan", "RmsNorm", "Run", "Runner", "Segment",
    "Sequential", "Sgd", "Shape", "Symbol", "Tape", "Tensor", "Value", "Visitable", "Visitor", "batch_norm",
    "causal_mask", "checkpoint", "concat", "conv2d", "cross_entropy", "init", "max_pool", "mse",
    "named_parameters", "parameters", "scaled_dot_product", "schedules", "stack",
]  # fmt: skip
