"""Fusion idioms: one module per idiom family, behind one catalog.

Contract:
- An idiom is a recorded composition the plans may replace by a home kernel and emission
  raises to one StableHLO operation. Each one lives, whole, in its family's module: its
  match class, its matcher, its home kernel and its raise.

  - :mod:`~topos.stages.fusion.windows`: window products and their gradients (convolution
    forward, input gradient, kernel gradient).
  - :mod:`~topos.stages.fusion.pooling`: the reduce window (max-pool) and its gradient.
  - :mod:`~topos.stages.fusion.normalization`: batch normalization, training and inference.

- :mod:`~topos.stages.fusion.catalog` holds :data:`~topos.stages.fusion.catalog.CATALOG`,
  the one list of idioms, and the readings over it: :func:`~topos.stages.fusion.catalog.discover`
  (the candidate pool) and :func:`~topos.stages.fusion.catalog.elect` (one consumer's choice).
- :mod:`~topos.stages.fusion.base` is what every idiom derives from (the match value, the
  catalog entry, the matcher's view, legality, the raise's writer);
  :mod:`~topos.stages.fusion.shared` the helpers several idioms use.
- The idiom's one name is its :class:`~topos.kernels.dispatch.Formula` member: the match's
  ``kind``, the tally's row, the key of the fused backend's coverage. The kernels floor
  never imports this package.
- Floors: :mod:`topos.stages.stablehlo` (the text writer) sits below the idiom modules,
  which sit below :mod:`topos.stages.emission`; a raise writes through
  :class:`~topos.stages.fusion.base.RaiseWriter` and never imports emission. Emission and
  plans ask the catalog (:func:`~topos.stages.fusion.catalog.idiom_of`) for a match's parts.

Adding an idiom:

1. One new file, ``topos/stages/fusion/<family>.py`` (or a section in the family's module):
   a frozen match class deriving from :class:`~topos.stages.fusion.base.PatternMatch` with
   its ``kind``, typed fields, ``reads()`` (and ``outputs()`` if it writes named results),
   and ``home_kernel`` calling the home kernel defined beside it (or
   ``has_home_kernel = False``); its matcher ``(view, index) -> match | None``; its raise
   ``(writer, match) -> None``; and its entry, ``Idiom(match class, matcher, raise)``.
2. One catalog line: the entry in :data:`~topos.stages.fusion.catalog.CATALOG`, at the
   place its matcher should run (earlier entries win overlapping elections).

Its name, on the kernels floor (which may not import the stages), is one
:class:`~topos.kernels.dispatch.Formula` member, with a fused coverage row in
``topos/kernels/dispatch.py`` when it has a home kernel. ``tests/test_fusion_catalog.py``
fails until every part is there and the catalog and the enum agree.

Example:
    >>> from topos.stages.fusion import CATALOG
    >>> [idiom.kind.value for idiom in CATALOG if not idiom.match.has_home_kernel]
    ['batch_norm_inference']
"""

from topos.stages.fusion.base import (
    Idiom,
    PatternMatch,
    RaiseWriter,
    View,
    consumers_of,
    legal_match,
)
from topos.stages.fusion.catalog import CATALOG, discover, elect, idiom_of
from topos.stages.fusion.normalization import (
    BatchNormInference,
    BatchNormTraining,
    batch_normalized,
)
from topos.stages.fusion.pooling import (
    PoolMatch,
    ReduceWindow,
    ReduceWindowGradient,
    max_pool_gradient,
    max_pooled,
)
from topos.stages.fusion.windows import (
    WindowInputGradient,
    WindowKernelGradient,
    WindowMatch,
    WindowProduct,
    patch_columns,
    window_input_gradient,
    window_kernel_gradient,
    windowed_product,
)

__all__ = [
    "CATALOG",
    "BatchNormInference",
    "BatchNormTraining",
    "Idiom",
    "PatternMatch",
    "PoolMatch",
    "RaiseWriter",
    "ReduceWindow",
    "ReduceWindowGradient",
    "View",
    "WindowInputGradient",
    "WindowKernelGradient",
    "WindowMatch",
    "WindowProduct",
    "batch_normalized",
    "consumers_of",
    "discover",
    "elect",
    "idiom_of",
    "legal_match",
    "max_pool_gradient",
    "max_pooled",
    "patch_columns",
    "window_input_gradient",
    "window_kernel_gradient",
    "windowed_product",
]
