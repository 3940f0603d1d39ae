"""Neural-network facades, written only against the public surface of topos.

The functional idioms (:mod:`topos.nn.functional`) record convolution, pooling and batch
normalization as ordinary nodes; the pattern catalog recognizes them by structure.
"""

from topos.nn.activations import Activation, gelu, relu, silu, tanh
from topos.nn.attention import causal_mask, scaled_dot_product
from topos.nn.functional import (
    BatchNormOutput,
    batch_norm,
    batch_norm_training,
    conv2d,
    max_pool,
)
from topos.nn.layers import (
    BatchNorm,
    Conv2d,
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    MaxPool,
    Mlp,
    RmsNorm,
    Sequential,
)
from topos.nn.losses import cross_entropy, mse
from topos.nn.module import (
    Module,
    Path,
    Segment,
    Visitable,
    Visitor,
    bind,
    facade,
    named_parameters,
    parameters,
)
from topos.nn.transformer import (
    Block,
    KvCache,
    MultiHeadAttention,
    Position,
    PositionTable,
    Rotary,
    SwiGlu,
    TransformerLm,
    causal_fill,
)

__all__ = [
    "Activation",
    "BatchNorm",
    "BatchNormOutput",
    "Block",
    "Conv2d",
    "Dropout",
    "Embedding",
    "KvCache",
    "LayerNorm",
    "Linear",
    "MaxPool",
    "Mlp",
    "Module",
    "MultiHeadAttention",
    "Path",
    "Position",
    "PositionTable",
    "RmsNorm",
    "Rotary",
    "Segment",
    "Sequential",
    "SwiGlu",
    "TransformerLm",
    "Visitable",
    "Visitor",
    "batch_norm",
    "batch_norm_training",
    "bind",
    "causal_fill",
    "causal_mask",
    "conv2d",
    "cross_entropy",
    "facade",
    "gelu",
    "max_pool",
    "mse",
    "named_parameters",
    "parameters",
    "relu",
    "scaled_dot_product",
    "silu",
    "tanh",
]
