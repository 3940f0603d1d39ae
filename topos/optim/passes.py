"""The built-in optimizers' arithmetic as fused numpy passes over each slot.

Contract. :class:`SlotPass` computes one slot's update with the same operations, in the
same order and with the same roundings as the tensor arithmetic it replaces
(``m * b1 + g * (1 - b1)`` written with :class:`~topos.tensor.Tensor`), so the results are
the same bits; only the bookkeeping goes. Per operation that bookkeeping was shape
inference, element coercion, a dense copy of every Python number spread over the slot
(the reference kernels lay each operand out as one contiguous run) and a fresh result
array; here a number is a rank-0 scalar of the compute dtype, intermediates land in
scratch buffers, and only the results the caller keeps are allocated.

Why the bits cannot move:

- every operation is one numpy ufunc over one C-contiguous run of the slot's volume (the
  reference's layout rule, :func:`topos.kernels.reference.by_value`), written into a
  contiguous ``out=`` run: the same inner loop, the same element positions (kept results start on a
  64-byte boundary, which XLA:CPU needs to read a numpy argument without copying it);
- numbers are converted exactly as the tensor arithmetic converts them (``element.convert``
  of the Python float, then the compute dtype). A finite scalar operand takes numpy's
  scalar loop instead of a dense one; the two differ only in which of two NaN operands
  survives, and a finite scalar is never NaN (the optimizers refuse non-finite
  hyperparameters);
- an element that widens (bf16 computes in f32) rounds to storage after every operation,
  as the reference kernels do, and the kept results are the rounded values.

Scratch is per thread and grows to the largest slot seen (``SCRATCH`` is never handed
out); every result the caller receives is a fresh array adopted by a read-only tensor.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Final

import numpy as np

from topos.ir.element import ElementType
from topos.tensor import Tensor

__all__ = ["ALIGNMENT", "SlotPass", "scratch_bytes"]

Array = np.ndarray[Any, Any]


class _Scratch(threading.local):
    """Each thread's buffers, by (dtype, lane): 1-d, as long as the largest slot so far."""

    def __init__(self) -> None:
        self.buffers: dict[tuple[np.dtype[Any], int], Array] = {}


SCRATCH: Final = _Scratch()


def scratch_bytes() -> int:
    """How many bytes of scratch this thread holds (for tests and memory reports)."""
    return sum(buffer.nbytes for buffer in SCRATCH.buffers.values())


ALIGNMENT: Final = 64
"""Byte alignment of every kept result: XLA:CPU takes a 64-byte aligned numpy argument
without a copy and copies any other on every call (8 MiB: about 2 ms), so parameters an
update returns cross to the XLA road for free."""


def _fresh(size: int, dtype: np.dtype[Any]) -> Array:
    """An uninitialized 1-d array of ``size`` elements starting on an ``ALIGNMENT`` boundary."""
    raw = np.empty(size * dtype.itemsize + ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start : start + size * dtype.itemsize].view(dtype)


def _buffer(dtype: np.dtype[Any], lane: int, size: int) -> Array:
    key = (dtype, lane)
    found = SCRATCH.buffers.get(key)
    if found is None or found.size < size:
        found = np.empty(size, dtype)
        SCRATCH.buffers[key] = found
    return found[:size]


@functools.lru_cache(maxsize=256)
def _number(element: ElementType, value: float) -> Any:
    # Cached: the conversion checks for overflow, which costs more than a slot's multiply.
    # An overflow raises every time (exceptions are not cached).
    stored = element.convert(value)
    return np.asarray(stored).astype(element.compute).reshape(())[()]


class SlotPass:
    """One slot's arithmetic: numpy ufuncs over contiguous runs, rounded like the tensors.

    Lanes number the scratch runs a formula uses; a lane is reused across slots, so the
    scratch a whole table needs is a few runs of its largest slot.

    Example:
        >>> import numpy as np
        >>> from topos import Tensor, f32
        >>> p, g = Tensor([1.0, 2.0], element=f32), Tensor([0.5, 0.5], element=f32)
        >>> run = SlotPass(f32, p)
        >>> step = run.scratch(0)
        >>> run.binary(np.multiply, run.load(g, 1), run.number(0.1), step)
        >>> new = run.target(2)
        >>> run.binary(np.subtract, run.load(p, 3), step, new)
        >>> run.result(new).bits().tolist() == (p - g * 0.1).bits().tolist()
        True
    """

    __slots__ = ("_compute", "_element", "_narrow", "_shape", "_size", "_storage", "_widens")

    def __init__(self, element: ElementType, like: Tensor) -> None:
        self._element = element
        self._storage: np.dtype[Any] = np.dtype(element.dtype)
        self._compute: np.dtype[Any] = np.dtype(element.compute)
        self._widens = element.widens
        self._shape = like.shape.axes
        self._size = like.shape.volume
        self._narrow: Array | None = _buffer(self._storage, 0, self._size) if self._widens else None

    def number(self, value: float) -> Any:
        """``value`` as the tensor arithmetic sees it: rounded to the element, then computed."""
        return _number(self._element, float(value))

    def load(self, payload: Tensor, lane: int) -> Array:
        """The payload as one contiguous run in the compute dtype (a view when it already is)."""
        array = payload.numpy()
        if not self._widens and array.flags.c_contiguous and 0 not in array.strides:
            return array.reshape(-1)
        run = _buffer(self._compute, lane, self._size)
        # A plain copy (no arithmetic): a constant's zero strides or bf16's exact widening.
        np.copyto(run.reshape(self._shape), array, casting="unsafe")
        return run

    def scratch(self, lane: int) -> Array:
        """A run for an intermediate value (never handed to the caller)."""
        return _buffer(self._compute, lane, self._size)

    def target(self, lane: int) -> Array:
        """A run for a kept result: fresh storage, or scratch when the element widens."""
        if self._widens:
            return _buffer(self._compute, lane, self._size)
        return _fresh(self._size, self._storage)

    def binary(self, ufunc: Any, left: Any, right: Any, out: Array) -> None:
        """``out = ufunc(left, right)``, rounded to storage when the element widens."""
        ufunc(left, right, out=out)
        self._round(out)

    def unary(self, ufunc: Any, operand: Array, out: Array) -> None:
        ufunc(operand, out=out)
        self._round(out)

    def _round(self, out: Array) -> None:
        narrow = self._narrow
        if narrow is not None:
            np.copyto(narrow, out, casting="unsafe")
            np.copyto(out, narrow, casting="unsafe")

    def result(self, run: Array) -> Tensor:
        """A kept run as a read-only tensor of the slot's shape (a fresh array it owns)."""
        if self._widens:
            stored = _fresh(self._size, self._storage)
            # Exact: the run already holds storage values (rounded after its last operation).
            np.copyto(stored, run, casting="unsafe")
            run = stored
        return Tensor.adopt(run.reshape(self._shape), self._element)
