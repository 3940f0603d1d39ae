"""Neural-network facades, written only against the public surface of topos.

The layers live by family: :mod:`topos.nn.linear`, :mod:`~topos.nn.convolution`,
:mod:`~topos.nn.normalization`, :mod:`~topos.nn.pooling`, :mod:`~topos.nn.embedding`,
:mod:`~topos.nn.dropout` and :mod:`~topos.nn.containers`, over the helpers of
:mod:`topos.nn.base`; the transformer's in :mod:`topos.nn.transformer`. :data:`LAYERS`
(:mod:`topos.nn.catalog`) is the one list of them by registry name. The functional idioms
(:mod:`topos.nn.functional`) record convolution, pooling and batch normalization as
ordinary nodes; the pattern catalog recognizes them by structure.
"""

from topos.nn.activations import Activation, gelu, relu, silu, tanh
from topos.nn.attention import causal_mask, scaled_dot_product
from topos.nn.catalog import LAYERS
from topos.nn.containers import Sequential
from topos.nn.convolution import Conv1d, Conv2d, ConvTranspose2d
from topos.nn.dropout import Dropout
from topos.nn.embedding import Embedding
from topos.nn.functional import (
    BatchNorm2dOutput,
    BatchNormOutput,
    avg_pool2d,
    batch_norm,
    batch_norm2d,
    batch_norm2d_training,
    batch_norm_training,
    conv1d,
    conv2d,
    conv_transpose2d,
    group_norm,
    layer_norm,
    max_pool,
    max_pool2d,
    pad,
    running_average,
)
from topos.nn.linear import Linear, Mlp
from topos.nn.losses import (
    binary_cross_entropy_with_logits,
    class_targets,
    cross_entropy,
    huber,
    mse,
    nll,
    smooth_l1,
)
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
from topos.nn.normalization import (
    BatchNorm,
    BatchNorm2d,
    BatchNorm2dStep,
    GroupNorm,
    LayerNorm,
    RmsNorm,
)
from topos.nn.pooling import AvgPool2d, MaxPool
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
    "LAYERS",
    "Activation",
    "AvgPool2d",
    "BatchNorm",
    "BatchNorm2d",
    "BatchNorm2dOutput",
    "BatchNorm2dStep",
    "BatchNormOutput",
    "Block",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "Dropout",
    "Embedding",
    "GroupNorm",
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
    "avg_pool2d",
    "batch_norm",
    "batch_norm2d",
    "batch_norm2d_training",
    "batch_norm_training",
    "binary_cross_entropy_with_logits",
    "bind",
    "causal_fill",
    "causal_mask",
    "class_targets",
    "conv1d",
    "conv2d",
    "conv_transpose2d",
    "cross_entropy",
    "facade",
    "gelu",
    "group_norm",
    "huber",
    "layer_norm",
    "max_pool",
    "max_pool2d",
    "mse",
    "named_parameters",
    "nll",
    "pad",
    "parameters",
    "relu",
    "running_average",
    "scaled_dot_product",
    "silu",
    "smooth_l1",
    "tanh",
]
