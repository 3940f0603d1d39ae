"""The map for training: record, train, checkpoint. It moves nothing; every name here is
also importable from where it lives. Its layers are those of :data:`topos.nn.LAYERS`, the
one list of built-in layers (``tests/test_nn_catalog.py`` checks the two agree).

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
    AvgPool2d,
    BatchNorm,
    BatchNorm2d,
    Block,
    Conv1d,
    Conv2d,
    ConvTranspose2d,
    Dropout,
    Embedding,
    GroupNorm,
    LayerNorm,
    Linear,
    MaxPool,
    Mlp,
    Module,
    MultiHeadAttention,
    Path,
    PositionTable,
    RmsNorm,
    Segment,
    Sequential,
    SwiGlu,
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
from topos.stages.spec import Tape, Value
from topos.state import Field, Parameters, Run, Runner
from topos.tensor import Tensor

__all__ = [
    "Activation", "Adam", "AdamW", "Adjoints", "AvgPool2d", "BatchNorm", "BatchNorm2d", "Block", "BoundEntry",
    "Conv1d", "Conv2d", "ConvTranspose2d", "Dropout", "Embedding", "Entry", "Field", "GroupNorm", "LayerNorm",
    "Linear", "MaxPool", "Mlp", "Module", "MultiHeadAttention", "Network", "Optimizer", "OptimizerState",
    "Parameters", "Path", "Plan", "PositionTable", "RmsNorm", "Run", "Runner", "Segment", "Sequential", "Sgd",
    "Shape", "SwiGlu", "Symbol", "Tape", "Tensor", "Value", "Visitable", "Visitor", "batch_norm", "causal_mask",
    "checkpoint", "concat", "conv2d", "cross_entropy", "init", "max_pool", "mse", "named_parameters",
    "parameters", "scaled_dot_product", "schedules", "stack",
]  # fmt: skip
