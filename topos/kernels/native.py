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

from functools import lru_cache
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


def sum_along(a: Array, axis: int, element: ElementType, out: Array | None = None) -> Array:
    """The sum over ``axis``; ``out`` (a C-contiguous result in the accumulator dtype) receives it.

    numpy reduces a leading axis one row at a time, which crawls when rows are short (a
    bias gradient over a convolution's ``[B*OH*OW, F]`` rows); a BLAS product with a vector
    of ones sums the same terms, reassociated, at memory speed.

    Example:
        >>> from topos import f32
        >>> sum_along(np.arange(12, dtype=np.float32).reshape(6, 2), 0, f32).tolist()
        [30.0, 36.0]
    """
    accumulator = element.accumulator
    if axis == 0 and a.ndim >= 2 and a.flags.c_contiguous and accumulator in _BLAS:
        rows, ones = a.astype(accumulator, copy=False).reshape(a.shape[0], -1), _ones(a.shape[0], accumulator)
        if out is not None:
            np.matmul(ones, rows, out=out.reshape(-1))  # a view of out: the result lands there
            return out
        return _down(np.matmul(ones, rows).reshape(a.shape[1:]), element)
    return _down(np.add.reduce(a, axis=axis, dtype=accumulator, out=out), element)


_BLAS = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


@lru_cache(maxsize=64)
def _ones(count: int, dtype: np.dtype[Any]) -> Array:
    ones = np.ones(count, dtype)
    ones.flags.writeable = False
    return ones
