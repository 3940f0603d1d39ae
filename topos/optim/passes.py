"""The optimizers' arithmetic as fused numpy passes over each slot.

Contract. :class:`Program` is a slot formula (written in :class:`~topos.optim.SlotOps`)
recorded once and replayed per slot, with the same operations, in the same order and with
the same roundings as the tensor arithmetic it replaces
(``m * b1 + g * (1 - b1)`` written with :class:`~topos.tensor.Tensor`), so the results are
the same bits; only the bookkeeping goes. Per operation that bookkeeping was shape
inference, element coercion, a dense copy of every Python number spread over the slot
(the reference kernels lay each operand out as one contiguous run) and a fresh result
array; here a number is a rank-0 scalar of the compute dtype, intermediates land in
scratch buffers, and only the results the caller keeps are allocated.

Why the bits cannot move:

- every operation is one numpy ufunc over one C-contiguous run of the slot's volume (the
  reference's layout rule, :func:`topos.kernels.reference.by_value`), written into a
  contiguous ``out=`` run (the same run as an operand when that operand dies there, or a
  run overlapping none): the same inner loop, the same element positions, each operand in
  the formula's order (kept results start on a 64-byte boundary, which XLA:CPU needs to
  read a numpy argument without copying it);
- numbers are converted exactly as the tensor arithmetic converts them (``element.convert``
  of the Python float, then the compute dtype). A finite scalar operand takes numpy's
  scalar loop instead of a dense one; the two differ only in which of two NaN operands
  survives, and a finite scalar is never NaN (the optimizers refuse non-finite
  hyperparameters);
- an element that widens (bf16 computes in f32) rounds to storage after every operation,
  as the reference kernels do, and the kept results are the rounded values.

Scratch is per thread and grows to the largest slot seen (``SCRATCH`` is never handed
out); every result the caller receives is a fresh array adopted by a read-only tensor, or
an input the formula returned unchanged.
"""

from __future__ import annotations

import functools
import heapq
import threading
from collections.abc import Callable
from typing import Any, Final, NoReturn, final

import numpy as np

from topos.ir.element import ElementType
from topos.optim.base import OptimizerError
from topos.tensor import Tensor

__all__ = ["ALIGNMENT", "FormulaError", "Program", "Recorder", "Ref", "Step", "scratch_bytes"]

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


class FormulaError(OptimizerError, TypeError):
    """A slot formula stepped outside ``SlotOps``: Python arithmetic, a comparison, a truth
    test or a conversion on a recorded value, a handle from another recording, or a result
    of the wrong structure. A ``TypeError`` too, as Python's own refusal would be."""


_OPS_ONLY = "a slot formula's values combine only through its ops (ops.add, ops.sub, ops.mul, ops.div, ops.sqrt), not Python arithmetic, comparisons or conversions"
_LIMIT: Final = 1 << 16  # numbers or table entries of one formula; real ones have a handful


@final
class Ref:
    """A value of a formula being recorded: an opaque handle, combined only through :class:`Recorder`.

    It refuses Python arithmetic, comparisons, conversions, numpy functions and truth tests
    (:class:`FormulaError`), so a formula that computes or branches on values outside
    ``SlotOps`` fails while it is recorded rather than recording nonsense. ``owner`` is the
    recorder that handed it out; a recorder refuses any other handle.
    """

    __slots__ = ("index", "owner")

    def __init__(self, index: int, owner: Recorder | None = None) -> None:
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise FormulaError(f"Ref: index must be an integer >= 0, got {type(index).__name__} {index!r:.40}")
        self.index, self.owner = index, owner

    def __repr__(self) -> str:
        return f"Ref({self.index})"

    def __bool__(self) -> bool:
        raise FormulaError(f"{self!r}: a slot formula's value has no truth value: branch on the slot's flag, not on values")

    def _refuse(self, *operands: object, **options: object) -> NoReturn:
        raise FormulaError(f"{self!r}: {_OPS_ONLY}")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _refuse
    __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __neg__ = __pos__ = __abs__ = __lt__ = __le__ = _refuse
    __gt__ = __ge__ = __float__ = __int__ = __index__ = __complex__ = __round__ = __array_ufunc__ = __array_function__ = __array__ = _refuse


Step = tuple[str, int, int]
"""One recorded value: ``("input", k, -1)``, ``("number", i, -1)``, or a numpy (and jax.numpy)
function's name with its operands' indices (``-1`` for the missing second operand of ``sqrt``)."""


class Recorder:
    """:class:`~topos.optim.SlotOps` over :class:`Ref`: writes down each operation, computes nothing."""

    __slots__ = ("kind", "steps")

    def __init__(self, inputs: int, kind: str) -> None:
        self.kind = kind
        self.steps: list[Step] = [("input", k, -1) for k in range(inputs)]

    def index(self, value: object) -> int:
        """Which recorded value ``value`` is; anything but this recording's handle is refused, naming the optimizer."""
        if not isinstance(value, Ref):
            raise OptimizerError(f"{self.kind}: a slot formula used {value!r:.60} as a value; only its arguments and its ops' results are")
        if value.owner is not self:
            # Its index would point into another recording's steps (or past the end of these).
            raise FormulaError(f"{self.kind}: a slot formula used {value!r}, a handle this recording did not hand out (made by hand, or kept from another formula); only its arguments and its ops' results are values")
        return value.index

    def step(self, operation: str, left: int, right: int = -1) -> Ref:
        """Write down one value and hand back its handle."""
        self.steps.append(_checked_step(self.kind, (operation, left, right), len(self.steps)))
        return Ref(len(self.steps) - 1, self)

    def add(self, left: Ref, right: Ref) -> Ref:
        return self.step("add", self.index(left), self.index(right))

    def sub(self, left: Ref, right: Ref) -> Ref:
        return self.step("subtract", self.index(left), self.index(right))

    def mul(self, left: Ref, right: Ref) -> Ref:
        return self.step("multiply", self.index(left), self.index(right))

    def div(self, left: Ref, right: Ref) -> Ref:
        return self.step("divide", self.index(left), self.index(right))

    def sqrt(self, operand: Ref) -> Ref:
        return self.step("sqrt", self.index(operand))


_OPERATIONS: Final = frozenset({"add", "subtract", "multiply", "divide", "sqrt"})


def _checked_step(kind: str, step: object, at: int) -> Step:
    """``step``, once it is an operation known to both roads over values recorded before ``at``."""
    if not (isinstance(step, tuple) and len(step) == 3):
        raise FormulaError(f"{kind}: step {at} is {step!r:.60}, not (operation, left, right)")
    operation, left, right = step
    integers = all(not isinstance(o, bool) and isinstance(o, int) for o in (left, right))
    if not (isinstance(operation, str) and integers):
        fits = False
    elif operation in ("input", "number"):
        fits = left >= 0 and right == -1
    else:
        fits = operation in _OPERATIONS and 0 <= left < at and (right == -1 if operation == "sqrt" else 0 <= right < at)
    if not fits:
        raise FormulaError(f"{kind}: step {at} is {step!r:.60}: expected ('input' | 'number', position, -1), (one of {sorted(_OPERATIONS - {'sqrt'})}, left, right) or ('sqrt', operand, -1) over values before it")
    return (str(operation), int(left), int(right))


Formula = Callable[[Recorder, tuple[Ref, ...], Ref, Ref, tuple[Ref, ...]], tuple[Ref, tuple[Ref, ...]]]
"""A slot formula as :class:`Program` records it: (ops, numbers, p, g, table entries) -> (new p, new entries)."""


@final
class Program:
    """A slot formula recorded once: the operations its results need, in the order it wrote them.

    The XLA road replays :attr:`steps` (over :attr:`live`) with jax.numpy; :meth:`run`
    replays them with numpy over scratch lanes assigned by a linear scan: a lane is free
    again after its value's last use, so an operation may write into an operand that dies
    there, and a kept result holds its lane to the end.

    Example:
        >>> from topos import Tensor, f32
        >>> program = Program.record(lambda ops, n, p, g, tables: (ops.sub(p, ops.mul(g, n[0])), ()), 1, 0, "sgd")
        >>> p, g = Tensor([1.0, 2.0], element=f32), Tensor([0.5, 0.5], element=f32)
        >>> new, kept = program.run((0.1,), (p, g))
        >>> new.bits().tolist() == (p - g * 0.1).bits().tolist(), kept
        (True, ())
    """

    __slots__ = ("lanes", "live", "outputs", "plan", "steps")

    def __init__(self, steps: list[Step], outputs: tuple[int, ...]) -> None:
        if not isinstance(steps, list | tuple) or not isinstance(outputs, tuple):
            raise FormulaError(f"Program: steps is a list and outputs a tuple, got {type(steps).__name__} and {type(outputs).__name__}")
        steps = [_checked_step("Program", step, at) for at, step in enumerate(steps)]
        for index in outputs:
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(steps):
                raise FormulaError(f"Program: output {index!r:.40} is not one of the {len(steps)} recorded values")
        self.steps, self.outputs = tuple(steps), outputs
        needed = set(outputs)
        for index in range(len(steps) - 1, -1, -1):
            operation, left, right = steps[index]
            if index in needed and operation not in ("input", "number"):
                needed.update((left, right))
        self.live = tuple(i for i in range(len(steps)) if i in needed)
        self.lanes, self.plan = _lanes(self.steps, [i for i in self.live if steps[i][0] != "input"], set(outputs))

    @staticmethod
    def record(formula: Formula, numbers: int, tables: int, kind: str) -> Program:
        """Record ``formula`` over handles (``kind`` names the optimizer in errors)."""
        for name, value in (("numbers", numbers), ("tables", tables)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _LIMIT:
                raise FormulaError(f"{kind}: Program.record: {name} must be an integer in [0, {_LIMIT}], got {value!r:.40}")
        if not callable(formula):
            raise FormulaError(f"{kind}: Program.record: formula must be callable, got {type(formula).__name__}")
        recorder = Recorder(2 + tables, kind)
        given = tuple(recorder.step("number", i) for i in range(numbers))
        inputs = tuple(Ref(k, recorder) for k in range(2 + tables))
        result = formula(recorder, given, inputs[0], inputs[1], inputs[2:])
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], tuple)):
            raise FormulaError(f"{kind}: a slot formula returns (new parameter, tuple of table entries), got {result!r:.60}")
        new, kept = result
        outputs = tuple(recorder.index(value) for value in (new, *kept))
        if any(recorder.steps[index][0] == "number" for index in outputs):
            raise OptimizerError(f"{kind}: a slot formula returned a bare number; combine it with a value first")
        return Program(recorder.steps, outputs)

    def run(self, numbers: tuple[float, ...], inputs: tuple[Tensor, ...]) -> tuple[Tensor, tuple[Tensor, ...]]:
        """The formula over one slot's ``(p, g, *entries)``: the new parameter and the new entries.

        Each operation is one ufunc into a contiguous run: fresh storage for a kept result
        unless the element widens, else a scratch lane (perhaps an operand's, which dies
        there); a widening element rounds to storage after every operation, and its kept
        results are copied to fresh storage at the end.
        """
        like = inputs[0]
        element, shape, size = like.element, like.shape.axes, like.shape.volume
        storage, compute = np.dtype(element.dtype), np.dtype(element.compute)
        narrow = _buffer(storage, 0, size) if element.widens else None
        scratch: list[Array | None] = [None] * self.lanes
        values: list[Any] = [None] * len(self.steps)
        for index, function, left, right, lane, keep in self.plan:
            if function is None:  # a number, converted as tensor arithmetic converts it
                values[index] = _number(element, float(numbers[left]))
                continue
            if function is _LOAD:
                values[index] = _load(inputs[left], lane, narrow is not None, compute, size)
                continue
            if keep and narrow is None:
                out = _fresh(size, storage)
            else:
                out = scratch[lane]
                if out is None:
                    out = scratch[lane] = _buffer(compute, lane, size)
            if right < 0:
                function(values[left], out=out)
            else:
                function(values[left], values[right], out=out)
            if narrow is not None:
                np.copyto(narrow, out, casting="unsafe")
                np.copyto(out, narrow, casting="unsafe")
            values[index] = out
        results: list[Tensor] = []
        for index in self.outputs:
            if self.steps[index][0] == "input":
                results.append(inputs[self.steps[index][1]])  # unchanged: the caller's immutable tensor
                continue
            run = values[index]
            if narrow is not None:
                # Exact: the run already holds storage values (rounded after its last operation).
                run = _fresh(size, storage)
                np.copyto(run, values[index], casting="unsafe")
            results.append(Tensor.adopt(run.reshape(shape), element))
        return results[0], tuple(results[1:])


_LOAD: Final = object()


def _load(payload: Tensor, lane: int, widens: bool, compute: np.dtype[Any], size: int) -> Array:
    """The payload as one contiguous run in the compute dtype (a view when it already is)."""
    array = payload.numpy()
    if not widens and array.flags.c_contiguous and 0 not in array.strides:
        return array.reshape(-1)
    run = _buffer(compute, lane, size)
    # A plain copy (no arithmetic): a constant's zero strides or bf16's exact widening.
    np.copyto(run.reshape(array.shape), array, casting="unsafe")
    return run


def _lanes(steps: tuple[Step, ...], order: list[int], kept: set[int]) -> tuple[int, tuple[tuple[Any, ...], ...]]:
    """The replay plan of ``order`` (each input loaded at its first use) and how many lanes it needs."""
    last: dict[int, int] = {}
    for position, index in enumerate(order):
        if steps[index][0] != "number":
            last[steps[index][1]] = last[steps[index][2]] = position
    free: list[int] = []
    lane_of: dict[int, int] = {}
    plan: list[tuple[Any, ...]] = []

    def take() -> int:  # the lowest free lane, else a new one (every lane not free is held)
        return heapq.heappop(free) if free else len(set(lane_of.values()))

    for position, index in enumerate(order):
        operation, left, right = steps[index]
        if operation == "number":
            plan.append((index, None, left, -1, -1, False))
            continue
        operands = (left,) if right < 0 else (left, right)
        for operand in operands:
            if steps[operand][0] == "input" and operand not in lane_of:
                lane_of[operand] = take()
                plan.append((operand, _LOAD, steps[operand][1], -1, lane_of[operand], False))
        for operand in set(operands):
            if operand in lane_of and operand not in kept and last[operand] == position:
                heapq.heappush(free, lane_of[operand])
        lane_of[index] = take()
        plan.append((index, getattr(np, operation), left, right, lane_of[index], index in kept))
    return len(set(lane_of.values())), tuple(plan)
