"""Native kernels: numpy and BLAS fast paths, envelope fidelity, served only under FAST.

Each function mirrors a reference kernel's signature. They may reorder float math (BLAS
blocking and fused multiply-add, numpy's pairwise sums), so they are never used when the
posture demands bit-identical results.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topos.ir.element import ElementType

__all__ = ["matmul", "sum_all", "sum_along"]

Array = np.ndarray[Any, Any]


def _down(a: Any, element: ElementType) -> Array:
    array = np.asarray(a)
    return array if array.dtype == element.dtype else array.astype(element.dtype)


def matmul(a: Array, b: Array, element: ElementType) -> Array:
    accumulator = element.accumulator
    return _down(np.matmul(a.astype(accumulator, copy=False), b.astype(accumulator, copy=False)), element)


def sum_all(a: Array, element: ElementType) -> Array:
    return _down(np.sum(a, dtype=element.accumulator), element)


def sum_along(a: Array, axis: int, element: ElementType) -> Array:
    return _down(np.sum(a, axis=axis, dtype=element.accumulator), element)
