"""Native kernels: numpy and BLAS fast paths, envelope fidelity, served only under FAST.

Each kernel mirrors a reference kernel's signature. They may reorder float math (BLAS
blocking and fused multiply-add, numpy's pairwise sums), so dispatch never admits them
when the posture demands bit-identical results. Each has an ``accepts_*`` test: the run-time
half of an offer, where a kernel declines a task it would not serve well (a cost
threshold, not a correctness boundary); the reference then serves.

Envelope: a native product or sum differs from the reference fold only by reassociation of
the same terms, so for ``n`` terms the difference is bounded by about ``n * eps * sum|terms|``
(eps of the accumulator); tests hold Fast plans to a relative tolerance derived from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topos.ir.element import ElementType

__all__ = ["GEMM_THRESHOLD", "accepts_gemm", "accepts_reduce", "gemm_pays", "matmul", "sum_all", "sum_along"]

Array = np.ndarray[Any, Any]

GEMM_THRESHOLD = 512
"""Below this many multiply-adds per output batch the reference product is as quick."""


def _down(a: Any, element: ElementType) -> Array:
    array = np.asarray(a)
    return array if array.dtype == element.dtype else array.astype(element.dtype)


def accepts_gemm(a: Array, b: Array) -> bool:
    """Serve products large enough for a BLAS call to pay for itself (shapes decide alone)."""
    return gemm_pays(a.shape, b.shape)


def gemm_pays(left: tuple[int, ...], right: tuple[int, ...]) -> bool:
    """:func:`accepts_gemm` over operand shapes (a plan settles it at lowering)."""
    return left[-2] * left[-1] * right[-1] >= GEMM_THRESHOLD


def accepts_reduce(a: Array) -> bool:
    """numpy's pairwise sum equals the ordered fold below eight terms; leave those alone."""
    return a.size >= 8


def matmul(a: Array, b: Array, element: ElementType) -> Array:
    accumulator = element.accumulator
    return _down(np.matmul(a.astype(accumulator, copy=False), b.astype(accumulator, copy=False)), element)


def sum_all(a: Array, element: ElementType) -> Array:
    return _down(np.add.reduce(a, axis=None, dtype=element.accumulator), element)


def sum_along(a: Array, axis: int, element: ElementType) -> Array:
    return _down(np.add.reduce(a, axis=axis, dtype=element.accumulator), element)
