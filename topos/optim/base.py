"""The optimizer contract: a pair of pure functions over caller-held state.

An optimizer is any object with

- ``init(parameters) -> OptimizerState``
- ``update(gradients, state, parameters) -> (parameters, state)``

Both are pure: they read their arguments, never change them (every payload is immutable),
and return new values; the same inputs give the same bits. The state is an
:class:`OptimizerState`: a frozen record of named tables, each aligned slot for slot with
the parameters (moments, velocities), plus named rank-0 tensors carried from step to step
(the step count, the bias-correction powers). Because every entry has a name, a state
checkpoints and restores by name (:meth:`OptimizerState.arrays`,
:meth:`OptimizerState.restored`).

Carried scalars are f64 whatever the parameters' element: a power such as ``0.999**t`` is
multiplied once per step in f64 (never recomputed from a float step count), and a bf16
power would round to 1 and divide by zero in the bias correction.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Protocol, TypeAlias, TypeGuard, cast, final, runtime_checkable

import attrs
import numpy as np
import numpy.typing as npt

from topos.errors import ParametersError, ToposError
from topos.ir.element import f64
from topos.ir.node import Symbol
from topos.state import Parameters
from topos.tensor import Tensor

__all__ = [
    "LearningRate",
    "Optimizer",
    "OptimizerError",
    "OptimizerFactory",
    "OptimizerState",
    "Schedule",
    "check_state",
    "check_table",
    "check_unit",
    "learning_rate_at",
    "real",
    "zeros_like",
]

Schedule: TypeAlias = Callable[[int], float]
"""A learning rate as a function of the step count (0 for the first update)."""

LearningRate: TypeAlias = float | Schedule
"""A constant learning rate, or a schedule of the step count."""


class OptimizerError(ToposError):
    """An optimizer was built with, or handed, something it cannot use."""


@runtime_checkable
class Optimizer(Protocol):
    """The optimizer seam: ``init`` and ``update``, both pure.

    Example:
        >>> from topos import Tape, f64
        >>> from topos.optim import Sgd
        >>> network, w = Tape.record(lambda t: t.parameter(1.0), element=f64)
        >>> parameters = network.parameters()
        >>> gradients = parameters.map(lambda p: p * 0.0 + 2.0)
        >>> optimizer = Sgd(learning_rate=0.25)
        >>> parameters, state = optimizer.update(gradients, optimizer.init(parameters), parameters)
        >>> parameters.of(w).scalar(), state.step
        (0.5, 1)
    """

    def init(self, parameters: Parameters) -> OptimizerState:
        """The state before the first update."""
        ...

    def update(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters
    ) -> tuple[Parameters, OptimizerState]:
        """One step: new parameters and the state to pass to the next update."""
        ...


OptimizerFactory: TypeAlias = Callable[..., Optimizer]
"""What the optimizer registry holds: a callable (usually a class) building an optimizer."""


def _frozen_tables(value: Mapping[str, Parameters]) -> Mapping[str, Parameters]:
    return MappingProxyType(dict(sorted(value.items())))


def _frozen_scalars(value: Mapping[str, Tensor]) -> Mapping[str, Tensor]:
    return MappingProxyType(dict(sorted(value.items())))


@final
@attrs.frozen(slots=True, eq=False, repr=False)
class OptimizerState:
    """Named, parameter-aligned tables plus carried rank-0 scalars; the step count is one.

    ``kind`` names the optimizer that made the state, so a state handed to another
    optimizer is refused rather than misread.

    Example:
        >>> from topos import Tape
        >>> from topos.optim import Adam
        >>> network, w = Tape.record(lambda t: t.parameter([1.0, 2.0]))
        >>> state = Adam(learning_rate=1e-3).init(network.parameters())
        >>> sorted(state.tables), sorted(state.scalars), state.step
        (['first', 'second'], ['count', 'first_power', 'second_power'], 0)
    """

    kind: str
    slots: str
    """Which parameter slots the state was made for (symbols as ``family.index``).

    A plain string on purpose: it identifies the network within this process, and record
    walkers (checkpoints) treat it as part of the template rather than as stored data.
    """
    tables: Mapping[str, Parameters] = attrs.field(converter=_frozen_tables)
    scalars: Mapping[str, Tensor] = attrs.field(converter=_frozen_scalars)

    @staticmethod
    def start(
        kind: str,
        parameters: Parameters,
        tables: Mapping[str, Parameters] | None = None,
        scalars: Mapping[str, float] | None = None,
    ) -> OptimizerState:
        """A fresh state at step 0: ``scalars`` become f64 rank-0 tensors beside ``count``."""
        check_table(f"{kind}.init", "parameters", parameters)
        tables = dict(tables or {})
        for name, table in tables.items():
            _aligned(kind, name, table, parameters)
        carried = {name: Tensor(float(value), element=f64) for name, value in (scalars or {}).items()}
        if "count" in carried:
            raise OptimizerError(f"{kind}: 'count' is the carried step count; name the scalar otherwise")
        carried["count"] = Tensor(0.0, element=f64)
        return OptimizerState(kind, _slot_key(parameters.symbols), tables, carried)

    @property
    def step(self) -> int:
        """How many updates produced this state."""
        return int(self.scalars["count"].scalar())

    def table(self, name: str) -> Parameters:
        found = self.tables.get(name)
        if found is None:
            raise OptimizerError(f"{self.kind} state has no table {name!r}; it holds {sorted(self.tables)}")
        return found

    def scalar(self, name: str) -> Tensor:
        found = self.scalars.get(name)
        if found is None:
            raise OptimizerError(f"{self.kind} state has no scalar {name!r}; it holds {sorted(self.scalars)}")
        return found

    def check(self, kind: str, gradients: Parameters, parameters: Parameters) -> None:
        """Raise unless this state was made by ``kind`` for the slots of ``parameters``.

        Called first by every built-in ``update`` so a failed call changes nothing.
        """
        check_table(f"{kind}.update", "gradients", gradients)
        check_table(f"{kind}.update", "parameters", parameters)
        if self.kind != kind:
            raise OptimizerError(f"topos.optim {kind}.update was handed a state made by {self.kind}.init")
        if self.slots != _slot_key(parameters.symbols):
            mine = {int(item.split(".")[0]) for item in self.slots.split(",") if item}
            theirs = {s.family for s in parameters.symbols}
            if mine and theirs and not mine & theirs:
                raise ParametersError(
                    f"{kind}.update: the state belongs to a different network than the parameters"
                )
            raise ParametersError(
                f"{kind}.update: the state was made for slots "
                f"[{', '.join('%' + item.split('.')[1] for item in self.slots.split(',') if item)}], "
                f"the parameters hold {_slots(parameters.symbols)}"
            )
        _aligned(kind, "gradients", gradients, parameters)
        _payloads_fit(kind, "gradients", gradients, parameters)
        for name, table in self.tables.items():
            _aligned(kind, f"state table {name!r}", table, parameters)
            _payloads_fit(kind, f"state table {name!r}", table, parameters)

    def advanced(
        self, tables: Mapping[str, Parameters] | None = None, scalars: Mapping[str, Tensor] | None = None
    ) -> OptimizerState:
        """The next state: replaced tables and scalars, the step count one higher."""
        merged_tables = {**self.tables, **(tables or {})}
        merged_scalars = {**self.scalars, **(scalars or {})}
        merged_scalars["count"] = self.scalars["count"] + 1.0
        return OptimizerState(self.kind, self.slots, merged_tables, merged_scalars)

    # ----------------------------------------------------------------- checkpoints
    def arrays(self) -> dict[str, np.ndarray[Any, Any]]:
        """Every entry by a stable name: ``table/%index`` per slot, then each scalar's name."""
        out: dict[str, np.ndarray[Any, Any]] = {}
        for name, table in self.tables.items():
            for symbol, payload in table:
                out[f"{name}/%{symbol.index}"] = np.array(payload.numpy())
        for name, scalar in self.scalars.items():
            out[name] = np.array(scalar.numpy())
        return out

    def restored(self, arrays: Mapping[str, npt.ArrayLike]) -> OptimizerState:
        """This state (the template) with every entry read from ``arrays`` by name.

        Missing or unexpected names and changed shapes are refused, naming the entry, and so
        is a step count that is not a whole number from 0 to 2**53 (``step`` would round it,
        and past 2**53 an f64 count stops advancing).
        """
        if not isinstance(arrays, Mapping):
            raise OptimizerError(
                f"{self.kind} state: restored takes a mapping of entry names to arrays (as state.arrays() "
                f"gives), got {type(arrays).__name__}"
            )
        expected = self.arrays()
        missing = sorted(set(expected) - set(arrays))
        unexpected = sorted(set(arrays) - set(expected))
        if missing or unexpected:
            raise OptimizerError(
                f"{self.kind} state does not fit: missing {missing}, unexpected {unexpected}"
            )
        for name, template in expected.items():
            shape = np.shape(arrays[name])
            if shape != template.shape:
                raise OptimizerError(
                    f"{self.kind} state entry {name!r} has shape {list(shape)}, expected {list(template.shape)}"
                )
        try:
            count = float(np.asarray(arrays["count"], dtype=np.float64).reshape(()))
        except (TypeError, ValueError):
            raise OptimizerError(
                f"{self.kind} state entry 'count' holds {arrays['count']!r}, not a number"
            ) from None
        if not (math.isfinite(count) and 0.0 <= count <= 2.0**53 and count == math.floor(count)):
            raise OptimizerError(
                f"{self.kind} state entry 'count' holds {count!r}; a step count is a whole number "
                "from 0 to 2**53"
            )
        tables = {
            name: table.with_payloads(
                (symbol, Tensor(arrays[f"{name}/%{symbol.index}"], element=payload.element))
                for symbol, payload in table
            )
            for name, table in self.tables.items()
        }
        scalars = {name: Tensor(arrays[name], element=f64) for name in self.scalars}
        return OptimizerState(self.kind, self.slots, tables, scalars)

    def __repr__(self) -> str:
        return f"OptimizerState({self.kind}, step {self.step}, tables {sorted(self.tables)})"


def _aligned(kind: str, role: str, table: Parameters, parameters: Parameters) -> None:
    if table.symbols == parameters.symbols:
        return
    if not table.lineage.related(parameters.lineage):
        raise ParametersError(
            f"{kind}.update: the {role} belong to a different network than the parameters "
            f"({len(table.symbols)} and {len(parameters.symbols)} slots)"
        )
    raise ParametersError(
        f"{kind}.update: the {role} hold slots {_slots(table.symbols)}, "
        f"the parameters hold {_slots(parameters.symbols)}"
    )


def check_table(where: str, role: str, table: object) -> Parameters:
    """``table`` as a Parameters table, or OptimizerError naming ``where`` (``sgd.init``) and ``role``."""
    if not isinstance(table, Parameters):
        raise OptimizerError(f"topos.optim {where}: {role} must be a Parameters table, got {type(table).__name__}")
    return table


def real(value: object) -> TypeGuard[float]:
    """Whether ``value`` is a finite real number: an int or float (numpy's too), never a bool, a string or a NaN."""
    numeric = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    return numeric and math.isfinite(cast(float, value))


def check_state(kind: str, state: object) -> OptimizerState:
    """``state`` as an OptimizerState, refused by name before any update reads it."""
    if not isinstance(state, OptimizerState):
        raise OptimizerError(
            f"topos.optim {kind}.update: state must be an OptimizerState (from {kind}.init(parameters)), "
            f"got {type(state).__name__}"
        )
    return state


def _payloads_fit(kind: str, role: str, table: Parameters, parameters: Parameters) -> None:
    """Slot by slot, the same shape and element as the parameters (named, before any arithmetic)."""
    for (symbol, payload), current in zip(table, parameters.payloads_, strict=True):
        if payload.shape != current.shape or payload.element != current.element:
            raise ParametersError(
                f"topos.optim {kind}.update: the {role} slot %{symbol.index} holds "
                f"{payload.element}{payload.shape}, the parameter holds {current.element}{current.shape}"
            )


def _slot_key(symbols: Iterable[Symbol]) -> str:
    return ",".join(f"{s.family}.{s.index}" for s in symbols)


def _slots(symbols: Iterable[Symbol]) -> str:
    return "[" + ", ".join(f"%{s.index}" for s in symbols) + "]"


def zeros_like(parameters: Parameters) -> Parameters:
    """A table of zeros aligned with ``parameters`` (each stored as one number)."""
    return parameters.map(lambda p: p.zero_like())


def learning_rate_at(kind: str, learning_rate: LearningRate, step: int) -> float:
    """The learning rate for ``step``: the constant, or the schedule's value (checked finite and ``>= 0``).

    A schedule that raises is reported under OptimizerError, naming the step.
    """
    try:
        value = learning_rate(step) if callable(learning_rate) else learning_rate
    except ToposError:
        raise
    except Exception as error:
        raise OptimizerError(
            f"{kind}: the learning-rate schedule raised {type(error).__name__} at step {step}: {error}"
        ) from error
    if not real(value) or value < 0:
        raise OptimizerError(f"{kind}: the learning rate at step {step} is {value!r}, not a finite number >= 0")
    return float(value)


def check_unit(kind: str, name: str, value: float, *, closed: bool = False) -> float:
    """Refuse a hyperparameter outside ``[0, 1)`` (``[0, 1]`` when ``closed``)."""
    if not real(value) or not (0.0 <= value < 1.0 or (closed and value == 1.0)):
        bound = "[0, 1]" if closed else "[0, 1)"
        raise OptimizerError(f"{kind}: {name} must lie in {bound}, got {value!r}")
    return float(value)


def check_learning_rate(kind: str, learning_rate: LearningRate) -> LearningRate:
    """Refuse a constant learning rate that is not a finite number ``>= 0`` (a schedule is checked per step)."""
    if callable(learning_rate):
        return learning_rate
    if not real(learning_rate) or learning_rate < 0:
        raise OptimizerError(f"{kind}: learning_rate must be a finite number >= 0 or a schedule, got {learning_rate!r}")
    return float(learning_rate)
