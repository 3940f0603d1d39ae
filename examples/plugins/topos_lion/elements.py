"""``f16``: IEEE half precision, computing in f32 and accumulating in f32.

Storage is numpy's float16; each elementwise operation widens to f32, computes, and rounds
once to f16; sums and matrix products fold in f32 and round once. StableHLO spells it
``f16``, so modules using it can be emitted.
"""

from __future__ import annotations

import numpy as np

from topos import ElementType

__all__ = ["f16"]

f16 = ElementType("f16", np.float16, np.float32, np.float32, "f16")
