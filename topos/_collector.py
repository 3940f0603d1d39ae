"""Pause Python's cyclic garbage collector while a reading builds a large graph.

Recording, differentiating and lowering allocate several objects per node and keep them
all alive, so every generation-2 collection the allocation count triggers walks the
whole graph built so far: per-node cost grows with the graph. These structures hold no
reference cycles worth collecting mid-pass, so the readings run with the collector
paused and restore it afterwards. Pauses nest and may overlap across threads: the
collector is re-enabled once the last pause ends, and only if it was enabled before the
first one began.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

__all__ = ["paused", "pausing"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def paused() -> Iterator[None]:
    """Run the body with the cyclic collector off (re-entrant, thread-safe).

    Example:
        >>> import gc
        >>> with paused():
        ...     gc.isenabled()
        False
    """
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def pausing(function: Callable[P, R]) -> Callable[P, R]:
    """Decorate a reading so it runs under :func:`paused`."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with paused():
            return function(*args, **kwargs)

    return wrapper
