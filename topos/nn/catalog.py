"""The one list of built-in layers: :data:`LAYERS`, from registry name to layer class.

Everything else that enumerates the layers follows it. The layer hook of
:mod:`topos.plugins.builtin_layers` registers exactly this table (read when the registry is
built, never at ``import topos``); ``topos.nn`` and ``topos.model`` export each class by
name, and the table in ``docs/plugins.md`` lists them. The exports stay spelled out in those
modules so that a type checker sees them; ``tests/test_nn_catalog.py`` checks that they
and the documented table agree with this one, and that no public layer class of
:mod:`topos.nn` is missing from it.

A layer, here, is a public class of :mod:`topos.nn` whose instances visit their parameters
(the :class:`~topos.nn.Module` protocol) and record when called with one recorded Value,
any further argument being optional: what a layer factory of the registry builds. By that
reading the transformer's :class:`~topos.nn.MultiHeadAttention`, :class:`~topos.nn.Block`,
:class:`~topos.nn.SwiGlu` and :class:`~topos.nn.PositionTable` are layers;
:class:`~topos.nn.Rotary` (which needs the positions too) and
:class:`~topos.nn.TransformerLm` (a whole model, called with the batch and a mask) are
not, nor is :class:`~topos.nn.Activation` (a value to put in a stage, not something built).

Names are snake_case, with an extent's digits kept on the word (``conv2d``,
``batch_norm2d``), as the functional idioms spell them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from topos.nn.containers import Sequential
from topos.nn.convolution import Conv1d, Conv2d, ConvTranspose2d
from topos.nn.dropout import Dropout
from topos.nn.embedding import Embedding
from topos.nn.linear import Linear, Mlp
from topos.nn.normalization import BatchNorm, BatchNorm2d, GroupNorm, LayerNorm, RmsNorm
from topos.nn.pooling import AvgPool2d, MaxPool
from topos.nn.transformer import Block, MultiHeadAttention, PositionTable, SwiGlu

__all__ = ["LAYERS"]

LAYERS: Mapping[str, type[object]] = MappingProxyType(
    {
        "avg_pool2d": AvgPool2d,
        "batch_norm": BatchNorm,
        "batch_norm2d": BatchNorm2d,
        "block": Block,
        "conv1d": Conv1d,
        "conv2d": Conv2d,
        "conv_transpose2d": ConvTranspose2d,
        "dropout": Dropout,
        "embedding": Embedding,
        "group_norm": GroupNorm,
        "layer_norm": LayerNorm,
        "linear": Linear,
        "max_pool": MaxPool,
        "mlp": Mlp,
        "multi_head_attention": MultiHeadAttention,
        "position_table": PositionTable,
        "rms_norm": RmsNorm,
        "sequential": Sequential,
        "swiglu": SwiGlu,
    }
)
"""Registry name -> built-in layer class, in name order (read-only).

Example:
    >>> from topos.nn import LAYERS
    >>> LAYERS["conv2d"].__name__, LAYERS["max_pool"].__name__
    ('Conv2d', 'MaxPool')
"""
