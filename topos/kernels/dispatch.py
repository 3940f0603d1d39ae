"""Dispatch: which backend serves a task, at what fidelity, and a tally of who served.

Contract:
- The backends are sealed: :class:`Backend` lists every one, and each declares a
  :class:`Coverage` per :class:`Formula` (may it serve? at which fidelity? for which
  :class:`Precision`?). Users cannot add a backend; the XLA backend's row is declared here
  and served by the emission reading (``Dispatch.TRANSLATED``).
- An *offered* task (``offer_gemm``, ``offer_sum``, ``offer_sum_along``) walks its formula's
  chain for its precision. A member is admitted only when its fidelity meets the demand of
  the current numerics posture (``EXACT`` demands bit-identical, so every envelope backend
  declines), and it may still decline at run time (cost thresholds, zero-stride operands).
  When every member declines the reference kernel serves: that is the fixed point, and the
  reference defines the bits.
- *Elected* formulas (the fused home kernels) are chosen onto a plan when it is lowered;
  they are never offered.
- :func:`tallied` records which backend served each task (``None`` = the reference), as
  :class:`Service` rows in a stable order. Outside a tally, dispatch counts nothing.

Example:
    >>> import numpy as np
    >>> from topos import f32
    >>> from topos.ir.numerics import Numerics
    >>> a = np.ones((64, 64), np.float32)
    >>> with Numerics.exactly(), tallied() as services:
    ...     _ = offer_gemm(a, a, f32)
    >>> [(s.formula.value, s.backend) for s in services]
    [('gemm', None)]
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
from collections.abc import Iterator
from typing import Any, final

import attrs
import numpy as np

from topos.ir.element import ElementType
from topos.ir.numerics import Fidelity, Numerics, current_numerics
from topos.kernels import native, reference

__all__ = [
    "Backend",
    "Coverage",
    "Dispatch",
    "Formula",
    "Precision",
    "Service",
    "chain",
    "native_first",
    "offer_gemm",
    "offer_sum",
    "offer_sum_along",
    "tallied",
]

Array = np.ndarray[Any, Any]


class Formula(enum.Enum):
    """A named computation a backend may serve.

    The first three are the offered tasks. Every later member is the one name of a fusion
    idiom: the ``kind`` of its match class in the catalog of :mod:`topos.stages.fusion`,
    the formula its home kernel tallies under, and the key of its row in the fused
    backend's coverage (an idiom without a home kernel has none). The fusion catalog's
    tests check that the catalog and these members agree, one for one.
    """

    GEMM = "gemm"
    REDUCE = "reduce"
    MAP = "map"
    WINDOW_PRODUCT = "window_product"
    WINDOW_INPUT_GRADIENT = "window_input_gradient"
    WINDOW_KERNEL_GRADIENT = "window_kernel_gradient"
    REDUCE_WINDOW = "reduce_window"
    REDUCE_WINDOW_GRADIENT = "reduce_window_gradient"
    BATCH_NORM_TRAINING = "batch_norm_training"
    BATCH_NORM_INFERENCE = "batch_norm_inference"


class Precision(enum.Enum):
    """The accumulation precision of a task (bf16 rides the f32 chain)."""

    F32 = "f32"
    F64 = "f64"

    @staticmethod
    def of(element: ElementType) -> Precision:
        return Precision.F64 if element.accumulator == np.float64 else Precision.F32


class Dispatch(enum.Enum):
    """How a backend is reached."""

    OFFERED = "offered"
    """Tasks are offered to it at run time; it may decline."""
    ELECTED = "elected"
    """Chosen onto a plan when it is lowered, in-process."""
    TRANSLATED = "translated"
    """Chosen at emission and executed by a foreign runtime."""


@final
@attrs.frozen(slots=True)
class Coverage:
    """What one backend declares for one formula: absent, or a fidelity over precisions.

    Example:
        >>> Backend.NATIVE.coverage(Formula.GEMM).meets(Fidelity.BIT_IDENTICAL)
        False
    """

    fidelity: Fidelity | None = None
    precisions: tuple[Precision, ...] = ()

    @property
    def serves(self) -> bool:
        return self.fidelity is not None

    def meets(self, required: Fidelity) -> bool:
        return self.fidelity is not None and self.fidelity.meets(required)

    def admits(self, precision: Precision) -> bool:
        return self.fidelity is not None and precision in self.precisions


_BOTH = (Precision.F32, Precision.F64)
_ABSENT = Coverage()


class Backend(enum.Enum):
    """The sealed backends. The reference is not listed: it is what serves when none does."""

    NATIVE = "native"
    """numpy and BLAS fast paths (envelope; served only under ``Numerics.FAST``)."""
    FUSED = "fused"
    """The in-process home kernels elected onto plans."""
    XLA = "xla"
    """The emitted module run through jaxlib (served by the emission reading)."""

    def coverage(self, formula: Formula) -> Coverage:
        return _COVERAGE[self].get(formula, _ABSENT)

    def serves(self, formula: Formula, precision: Precision) -> bool:
        return self.coverage(formula).admits(precision)

    def dispatch(self) -> Dispatch:
        return _DISPATCH[self]


# numpy's own ufuncs are the reference maps, so a native map would buy nothing: absent.
# The fused rows are the idioms whose match class has a home kernel, at that kernel's
# fidelity (tests/test_fusion_catalog.py holds them to the catalog).
_COVERAGE: dict[Backend, dict[Formula, Coverage]] = {
    Backend.NATIVE: {
        Formula.GEMM: Coverage(Fidelity.ENVELOPE, _BOTH),
        Formula.REDUCE: Coverage(Fidelity.ENVELOPE, _BOTH),
    },
    Backend.FUSED: {
        Formula.WINDOW_PRODUCT: Coverage(Fidelity.COMPOSED, _BOTH),
        Formula.WINDOW_INPUT_GRADIENT: Coverage(Fidelity.COMPOSED, _BOTH),
        Formula.WINDOW_KERNEL_GRADIENT: Coverage(Fidelity.COMPOSED, _BOTH),
        Formula.REDUCE_WINDOW: Coverage(Fidelity.BIT_IDENTICAL, _BOTH),
        Formula.REDUCE_WINDOW_GRADIENT: Coverage(Fidelity.COMPOSED, _BOTH),
        Formula.BATCH_NORM_TRAINING: Coverage(Fidelity.COMPOSED, _BOTH),
    },
    Backend.XLA: {formula: Coverage(Fidelity.ENVELOPE, _BOTH) for formula in Formula},
}
_DISPATCH = {Backend.NATIVE: Dispatch.OFFERED, Backend.FUSED: Dispatch.ELECTED, Backend.XLA: Dispatch.TRANSLATED}
_CHAINS: dict[Formula, tuple[Backend, ...]] = {Formula.GEMM: (Backend.NATIVE,), Formula.REDUCE: (Backend.NATIVE,)}


def chain(formula: Formula, precision: Precision) -> tuple[Backend, ...]:
    """The offered backends for a formula, in the order they are asked."""
    return tuple(b for b in _CHAINS.get(formula, ()) if b.serves(formula, precision))


@final
@attrs.frozen(slots=True, order=True)
class Service:
    """One tally row: how many tasks of a formula and precision a backend served."""

    formula: Formula = attrs.field(order=lambda f: f.value)
    precision: Precision = attrs.field(order=lambda p: p.value)
    backend: Backend | None = attrs.field(order=lambda b: "" if b is None else b.value)
    count: int = 0


_TALLY: contextvars.ContextVar[dict[tuple[Formula, Precision, Backend | None], int] | None] = (
    contextvars.ContextVar("topos_tally", default=None)
)


@contextlib.contextmanager
def tallied() -> Iterator[list[Service]]:
    """Count which backend served each task inside the block.

    The yielded list is filled when the block exits, sorted by formula, precision, backend.
    """
    rows: list[Service] = []
    counts: dict[tuple[Formula, Precision, Backend | None], int] = {}
    token = _TALLY.set(counts)
    try:
        yield rows
    finally:
        _TALLY.reset(token)
        rows.extend(sorted(Service(f, p, b, n) for (f, p, b), n in counts.items()))


def record_service(formula: Formula, element: ElementType, backend: Backend | None) -> None:
    """Count one task (a no-op outside :func:`tallied`)."""
    counts = _TALLY.get()
    if counts is not None:
        key = (formula, Precision.of(element), backend)
        counts[key] = counts.get(key, 0) + 1


_ADMITTED: dict[tuple[Formula, Any, Any], tuple[Backend, ...]] = {}


def _admitted(formula: Formula, element: ElementType) -> tuple[Backend, ...]:
    # Coverage and chains are sealed constants, so the answer depends only on the formula,
    # the accumulator and the posture: computed once per combination, not per task.
    posture = current_numerics()
    key = (formula, element.accumulator, posture)
    admitted = _ADMITTED.get(key)
    if admitted is None:
        demand = posture.fidelity()
        admitted = tuple(b for b in chain(formula, Precision.of(element)) if b.coverage(formula).meets(demand))
        _ADMITTED[key] = admitted
    return admitted


def native_first(formula: Formula, element: ElementType, posture: Numerics) -> bool:
    """True when an offer of ``formula`` under ``posture`` asks the native backend first and
    nothing before it (no element hook), so its shapes alone decide who serves.

    Coverage and chains are sealed, so a plan settles this once, at lowering.
    """
    if formula is Formula.GEMM and element.gemm is not None:
        return False
    demand = posture.fidelity()
    admitted = [b for b in chain(formula, Precision.of(element)) if b.coverage(formula).meets(demand)]
    return admitted[:1] == [Backend.NATIVE]


def offer_gemm(a: Array, b: Array, element: ElementType) -> Array:
    """A (batched) matrix product served by the first admitted backend that accepts it.

    A custom element's ``gemm`` hook is offered the product before any backend, on every
    road that multiplies matrices (plain products and the fused convolution alike).
    """
    offered = element.offer_gemm(a, b)
    if offered is not None:
        return offered
    for backend in _admitted(Formula.GEMM, element):
        if backend is Backend.NATIVE and native.accepts_gemm(a, b):
            record_service(Formula.GEMM, element, backend)
            return native.matmul(a, b, element)
    record_service(Formula.GEMM, element, None)
    return reference.matmul(a, b, element)


def offer_sum(a: Array, element: ElementType) -> Array:
    """The sum of every element."""
    for backend in _admitted(Formula.REDUCE, element):
        if backend is Backend.NATIVE and native.accepts_reduce(a):
            record_service(Formula.REDUCE, element, backend)
            return native.sum_all(a, element)
    record_service(Formula.REDUCE, element, None)
    return reference.sum_all(a, element)


def offer_sum_along(a: Array, axis: int, element: ElementType) -> Array:
    """The sum along one axis."""
    for backend in _admitted(Formula.REDUCE, element):
        if backend is Backend.NATIVE and native.accepts_reduce(a):
            record_service(Formula.REDUCE, element, backend)
            return native.sum_along(a, axis, element)
    record_service(Formula.REDUCE, element, None)
    return reference.sum_along(a, axis, element)
