"""Neural-network facades, written only against the public surface of topos.

The functional idioms (:mod:`topos.nn.functional`) record convolution, pooling and batch
normalization as ordinary nodes; the pattern catalog recognizes them by structure.
"""

from topos.nn.functional import (
    BatchNormOutput,
    batch_norm,
    batch_norm_training,
    conv2d,
    max_pool,
)

__all__ = [
    "BatchNormOutput",
    "batch_norm",
    "batch_norm_training",
    "conv2d",
    "max_pool",
]
