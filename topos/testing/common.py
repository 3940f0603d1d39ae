"""What every conformance check shares: the report, the runner, and bit-level comparisons.

Contract:

- A check is a fixed list of named properties, each a function that returns what it saw or
  raises :class:`PropertyFailed` saying why it did not hold. :func:`run_properties` runs
  every one of them, always all, in order: any other exception a property raises is a
  failure too, reported with its type. All held: it returns the :class:`Report`; one did
  not: it raises :class:`ConformanceError` carrying that report.
- :class:`ConformanceError` is both a :class:`~topos.errors.ToposError` and an
  ``AssertionError``, so a failed check fails a pytest test, a unittest case or a plain
  script alike; its message is the report, every property marked ``ok`` or ``FAILED``.
- Equality in the checks is equality of bits: :func:`bits`, :func:`table_bits` and
  :func:`state_bits` give bytes to compare, so ``-0.0`` differs from ``0.0`` and a NaN
  payload counts.
- A check's own arguments are checked before any property runs: a misuse raises a named
  :class:`~topos.errors.ToposError` (:func:`argument`), never a report of failed properties.
- :class:`Slots` is the smallest module :mod:`topos.checkpoint` can store a table through:
  it names each slot ``p<index>``.

Example:
    >>> report = run_properties("layer", "identity", [("records", lambda: "one node")])
    >>> print(report)
    layer identity: all 1 properties hold
      ok      records: one node
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, final

import attrs
import numpy as np

from topos.errors import InvalidArgumentError, ToposError
from topos.ir.node import Symbol
from topos.optim import OptimizerState
from topos.stages.spec import Value
from topos.state import Parameters
from topos.tensor import Tensor

if TYPE_CHECKING:
    from topos.nn.module import Visitor

__all__ = [
    "Check",
    "ConformanceError",
    "PropertyFailed",
    "Report",
    "Slots",
    "argument",
    "binds",
    "bits",
    "expect",
    "run_properties",
    "state_bits",
    "table_bits",
]


class ConformanceError(ToposError, AssertionError):
    """A conformance check failed; ``report`` holds every property and why each failed.

    Example:
        >>> try:
        ...     run_properties("layer", "broken", [("named", lambda: expect(False, "no paths"))])
        ... except ConformanceError as error:
        ...     print(error.report.failures()[0].detail)
        no paths
    """

    def __init__(self, report: Report) -> None:
        super().__init__(str(report))
        self.report = report


@final
@attrs.frozen(slots=True)
class Check:
    """One property: its name, whether it held, and what was seen.

    Example:
        >>> Check("pure", True, "inputs unchanged").passed
        True
    """

    name: str
    passed: bool
    detail: str


@final
@attrs.frozen(slots=True)
class Report:
    """What a conformance check found: every property, in order.

    Example:
        >>> report = Report("sgd", "optimizer", (Check("pure", True, "ok"),))
        >>> print(report)
        optimizer sgd: all 1 properties hold
          ok      pure: ok
    """

    subject: str
    kind: str
    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def names(self) -> tuple[str, ...]:
        return tuple(check.name for check in self.checks)

    def failures(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if not check.passed)

    def of(self, name: str) -> Check:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"{self.kind} {self.subject}: no property named {name!r}; known: {', '.join(self.names())}")

    def __str__(self) -> str:
        failed = self.failures()
        head = (
            f"{self.kind} {self.subject}: all {len(self.checks)} properties hold"
            if not failed
            else f"{self.kind} {self.subject}: {len(failed)} of {len(self.checks)} properties FAILED "
            f"({', '.join(check.name for check in failed)})"
        )
        lines = [head]
        for check in self.checks:
            lines.append(f"  {'ok    ' if check.passed else 'FAILED'}  {check.name}: {check.detail}")
        return "\n".join(lines)


class PropertyFailed(Exception):
    """A property did not hold; the message says why. :func:`run_properties` catches it.

    Example:
        >>> try:
        ...     expect(1 + 1 == 3, "arithmetic is off")
        ... except PropertyFailed as failure:
        ...     print(failure)
        arithmetic is off
    """


def expect(condition: bool, message: str) -> None:
    """Raise :class:`PropertyFailed` with ``message`` unless ``condition`` holds.

    Example:
        >>> expect(True, "never shown")
    """
    if not condition:
        raise PropertyFailed(message)


def run_properties(kind: str, subject: str, properties: Sequence[tuple[str, Callable[[], str]]]) -> Report:
    """Run every property and report them all; raise :class:`ConformanceError` if any failed.

    Example:
        >>> run_properties("element type", "f32", [("records", lambda: "7 nodes")]).names()
        ('records',)
    """
    checks = []
    for name, prove in properties:
        try:
            detail = prove()
            checks.append(Check(name, True, detail))
        except PropertyFailed as failure:
            checks.append(Check(name, False, str(failure)))
        except Exception as error:  # a crash is a failed property, reported with its type
            checks.append(Check(name, False, f"raised {type(error).__name__}: {error}"))
    report = Report(subject, kind, tuple(checks))
    if not report.passed:
        raise ConformanceError(report)
    return report


def argument(
    where: str, role: str, value: object, ok: bool, wanted: str, error: type[ToposError] = InvalidArgumentError
) -> None:
    """Refuse a check's own argument by name, before any property runs (a misuse is not a failed property).

    Example:
        >>> try:
        ...     argument("check_layer", "name", 3, False, "a string or None")
        ... except InvalidArgumentError as refused:
        ...     print(refused.detail)
        check_layer: name must be a string or None, got int 3
    """
    if not ok:
        raise error(f"{where}: {role} must be {wanted}, got {type(value).__name__} {value!r:.60}")


def binds(
    where: str, factory: Callable[..., object], call: str, error: type[ToposError], *args: object, **kwargs: object
) -> None:
    """Refuse arguments ``factory``'s signature cannot take (``call`` shows how the check calls it).

    A factory without a readable signature (a builtin) is let through: the properties will say.
    """
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as mismatch:
        name = getattr(factory, "__name__", type(factory).__name__)
        raise error(f"{where}: the factory {name} cannot be called as {call}: {mismatch}") from None


def bits(tensor: Tensor) -> bytes:
    """A tensor's storage as bytes, for bit-for-bit comparison.

    Example:
        >>> bits(Tensor.zeros((1,))) == bits(Tensor.zeros((1,)) * -1.0)
        False
    """
    return bytes(tensor.bits().tobytes())


def table_bits(table: Parameters) -> list[tuple[int, bytes]]:
    """Each slot's index and :func:`bits`, in slot order.

    Example:
        >>> from topos import Tape
        >>> network, _ = Tape.record(lambda t: t.parameter([1.0]))
        >>> [index for index, _ in table_bits(network.parameters())]
        [0]
    """
    return [(symbol.index, bits(payload)) for symbol, payload in table]


def state_bits(state: OptimizerState) -> list[tuple[str, str, bytes]]:
    """Each of ``state.arrays()``: its key, dtype and bytes, sorted by key.

    Example:
        >>> from topos import Tape
        >>> from topos.optim import Sgd
        >>> network, _ = Tape.record(lambda t: t.parameter([1.0]))
        >>> [key for key, _, _ in state_bits(Sgd(0.1).init(network.parameters()))]
        ['count']
    """
    out = []
    for key, value in sorted(state.arrays().items()):
        out.append((key, str(value.dtype), bytes(np.ascontiguousarray(value).tobytes())))
    return out


class Slots:
    """A module naming each slot of a table ``p<index>``, so topos.checkpoint can store it.

    Example:
        >>> from topos import Tape
        >>> from topos.nn.module import named_parameters
        >>> network, _ = Tape.record(lambda t: t.parameter([1.0]))
        >>> [str(path) for path, _ in named_parameters(Slots(network.parameter_symbols()))]
        ['p0']
    """

    def __init__(self, symbols: Iterable[Symbol]) -> None:
        self.symbols = tuple(symbols)

    def __call__(self, input: Value, /) -> Value:
        return input

    def visit(self, visitor: Visitor) -> None:
        for symbol in self.symbols:
            visitor.parameter(f"p{symbol.index}", symbol)
