"""Buffers assigned at lowering: where each pooled value of a plan lives, and the storage runs borrow.

Contract:
- :func:`assign` takes a plan's :class:`Request` rows (a step that can write its result into
  a buffer: its time, its shape, its dtype, and the last time anything aliasing the result
  is read) and lays them over as few storages as it can: a storage is reused once every
  value that lived in it is dead, best fit by size, and grown at lowering when none fits.
  The :class:`Layout` depends only on the requests (no ids, no clock).
- :class:`Arena` holds the storage sets of one layout. Each run borrows a set (allocated
  only when every set is in use, so concurrent runs, on threads or re-entrant, never share
  one) and gives it back when it returns; a run that raises keeps its set (its frames may
  still show the values). In steady state a run allocates and faults none of this storage.
- Callers request only values nothing outside the run can observe: never a value the run
  hands back, nor one a handed-back value may be a view of.

Example:
    >>> layout = assign([Request(0, (2, 3), np.dtype(np.float32), 1), Request(2, (6,), np.dtype(np.float32), 2)])
    >>> layout.storages, layout.views
    (((dtype('float32'), 6),), ((0, (2, 3)), (0, (6,))))
    >>> arena = Arena(layout)
    >>> first = arena.borrow(); arena.give_back(first)
    >>> arena.borrow() is first
    True
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence
from typing import Any, final

import attrs
import numpy as np

__all__ = ["Arena", "Layout", "Request", "assign"]

Array = np.ndarray[Any, Any]


@final
@attrs.frozen(slots=True)
class Request:
    """A value written at ``time`` into a buffer, dead after ``dies`` (``dies >= time``)."""

    time: int
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    dies: int


@final
@attrs.frozen(slots=True)
class Layout:
    """Storages (dtype, elements) and, per request in order, its storage and shape."""

    storages: tuple[tuple[np.dtype[Any], int], ...]
    views: tuple[tuple[int, tuple[int, ...]], ...]


def assign(requests: Sequence[Request]) -> Layout:
    """Lay ``requests`` (in ascending time) over reused storages; see the module contract."""
    dtypes: list[np.dtype[Any]] = []
    sizes: list[int] = []
    views: list[tuple[int, tuple[int, ...]]] = []
    dying: list[tuple[int, int]] = []  # (dies, storage), a heap
    # Free storages per dtype: the distinct sizes sorted, and per size a heap of storage
    # numbers. Best fit is one bisection over the sizes (few) and one heap pop, so a plan of
    # 300k nodes lays out in n log n; a single sorted list of every free storage paid a
    # memmove of the whole list per insertion.
    free: dict[np.dtype[Any], tuple[list[int], dict[int, list[int]]]] = {}
    for request in requests:
        while dying and dying[0][0] < request.time:
            gone = heapq.heappop(dying)[1]
            distinct, by_size = free.setdefault(dtypes[gone], ([], {}))
            same = by_size.get(sizes[gone])
            if same is None:
                by_size[sizes[gone]] = [gone]
                bisect.insort(distinct, sizes[gone])
            else:
                heapq.heappush(same, gone)
        volume = math.prod(request.shape)
        pool = free.get(request.dtype)
        if pool and pool[0]:
            # The smallest storage that holds it, else the largest one (lowest number among
            # equals), grown to fit.
            distinct, by_size = pool
            at = min(bisect.bisect_left(distinct, volume), len(distinct) - 1)
            same = by_size[distinct[at]]
            storage = heapq.heappop(same)
            if not same:
                del by_size[distinct[at]]
                distinct.pop(at)
            sizes[storage] = max(sizes[storage], volume)
        else:
            storage = len(sizes)
            dtypes.append(request.dtype)
            sizes.append(volume)
        views.append((storage, request.shape))
        heapq.heappush(dying, (request.dies, storage))
    return Layout(tuple(zip(dtypes, sizes, strict=True)), tuple(views))


@final
class Arena:
    """The storage sets of one :class:`Layout`, lent to runs one set at a time."""

    __slots__ = ("_free", "layout")

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._free: list[tuple[Array, ...]] = []

    def borrow(self) -> tuple[Array, ...]:
        """A set of buffers (one per request) that no other run holds."""
        try:
            # list.pop is atomic: two threads never receive the same set.
            return self._free.pop()
        except IndexError:
            storages = [np.empty(size, dtype) for dtype, size in self.layout.storages]
            return tuple(storages[s][: math.prod(shape)].reshape(shape) for s, shape in self.layout.views)

    def give_back(self, buffers: tuple[Array, ...]) -> None:
        """Return a set once the run that borrowed it has finished with it."""
        self._free.append(buffers)
