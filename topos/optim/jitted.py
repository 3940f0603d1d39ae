"""An optimizer's update compiled by XLA, next to a step on the XLA road.

Contract. :func:`compiled` wraps an optimizer; the wrapper keeps the pure ``init`` /
``update`` contract and the optimizer's state (a state moves freely between the wrapped and
the plain optimizer). An optimizer that states its formula in jax (:class:`JaxFormula`:
the built-ins do) runs it as one ``jax.jit`` function of (numbers, parameters, gradients,
state tables), traced once per table layout and compiled with the XLA road's options
(``XlaExecutable.compiler_options``: the algebraic simplifier off). Everything the numpy
update settles in Python (the learning rate from a schedule, carried powers, AdamW's decay
mask) is settled the same way in ``jax_prelude``, so a changing learning rate never
recompiles. An optimizer without a jax formula (a plugin written for numpy) runs its own
numpy update unchanged; ``on_xla`` says which road a wrapper takes.

Numerics: the XLA envelope of ``docs/acceleration.md``, not the numpy bits. Every
operation is the numpy update's, in its order, with its roundings (bf16 computes in f32 and
rounds after each operation), but XLA:CPU may contract ``a * b + c`` into one fused
multiply-add and flushes denormals to zero. ``tests/test_optim_compiled.py`` states the
per-update bound it checks.

Needs the optional ``xla`` extra (jax); :func:`compiled` imports it lazily and raises
:class:`~topos.errors.XlaUnavailableError` naming the install command when it is missing.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Protocol, final

import numpy as np

from topos.errors import XlaUnavailableError, user_site
from topos.ir.element import ElementType
from topos.optim.base import (
    JaxFormula,
    JaxPrelude,
    Optimizer,
    OptimizerError,
    OptimizerState,
    check_state,
)
from topos.state import Parameters
from topos.tensor import Tensor

__all__ = ["CompiledUpdate", "compiled"]


class _Traced(Protocol):
    """What the update does with a traced jax array itself (everything else goes through jnp)."""

    def astype(self, dtype: np.dtype[Any], /) -> _Traced: ...
    def __getitem__(self, index: int, /) -> _Traced: ...
    def __add__(self, other: _Traced, /) -> _Traced: ...
    def __sub__(self, other: _Traced, /) -> _Traced: ...
    def __mul__(self, other: _Traced, /) -> _Traced: ...
    def __truediv__(self, other: _Traced, /) -> _Traced: ...


_Tables = tuple[tuple[_Traced, ...], ...]


class _Step(Protocol):
    """The jitted update: numpy arguments in, jax arrays (one per slot, and per table) out."""

    def __call__(
        self,
        numbers: np.ndarray[Any, Any],
        parameters: tuple[np.ndarray[Any, Any], ...],
        gradients: tuple[np.ndarray[Any, Any], ...],
        tables: tuple[tuple[np.ndarray[Any, Any], ...], ...],
        /,
    ) -> tuple[tuple[_Traced, ...], _Tables]: ...


def _import_jax(kind: str) -> ModuleType:
    try:
        import jax
    except ImportError as error:
        raise XlaUnavailableError(
            f"{user_site()}: topos.optim.compiled({kind}) runs the update through jax, which is not "
            f"installed; install the optional extra with `pip install 'topos-autodiff[xla]'` "
            f"(the import failed with: {error})"
        ) from None
    return jax


class _Ops:
    """:class:`~topos.optim.base.SlotOps` over jax arrays of one element."""

    __slots__ = ("_compute", "_numbers", "_storage", "_widens", "jnp")

    def __init__(self, jnp: ModuleType, numbers: _Traced, element: ElementType) -> None:
        self.jnp = jnp
        self._numbers = numbers
        self._storage = np.dtype(element.dtype)
        self._compute = np.dtype(element.compute)
        self._widens = element.widens

    def number(self, index: int) -> _Traced:
        return self._numbers[index].astype(self._storage)

    def _up(self, value: _Traced) -> _Traced:
        return value.astype(self._compute) if self._widens else value

    def _down(self, value: _Traced) -> _Traced:
        return value.astype(self._storage) if self._widens else value

    def add(self, left: _Traced, right: _Traced) -> _Traced:
        return self._down(self._up(left) + self._up(right))

    def sub(self, left: _Traced, right: _Traced) -> _Traced:
        return self._down(self._up(left) - self._up(right))

    def mul(self, left: _Traced, right: _Traced) -> _Traced:
        return self._down(self._up(left) * self._up(right))

    def div(self, left: _Traced, right: _Traced) -> _Traced:
        return self._down(self._up(left) / self._up(right))

    def sqrt(self, operand: _Traced) -> _Traced:
        root: _Traced = self.jnp.sqrt(self._up(operand))  # jnp is untyped: the jax boundary
        return self._down(root)


@final
class CompiledUpdate:
    """An optimizer whose ``update`` runs as one XLA computation (see the module contract).

    Example:
        >>> from topos import Tape, f32
        >>> from topos.optim import Adam, compiled
        >>> network, w = Tape.record(lambda t: t.parameter([1.0, 2.0]), element=f32)
        >>> p = network.parameters()
        >>> adam = compiled(Adam(learning_rate=0.1))
        >>> p, state = adam.update(p.map(lambda w: w * 2.0), adam.init(p), p)
        >>> adam.on_xla, [round(x, 4) for x in p.of(w).tolist()]
        (True, [0.9, 1.9])
    """

    __slots__ = ("_jax", "_jitted", "_lock", "kind", "on_xla", "optimizer")

    def __init__(self, optimizer: Optimizer) -> None:
        if not isinstance(optimizer, Optimizer) or isinstance(optimizer, CompiledUpdate):
            raise OptimizerError(
                f"{user_site()}: topos.optim.compiled takes an optimizer (init and update), got {type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        self.kind: str = str(getattr(optimizer, "kind", type(optimizer).__name__))
        self.on_xla = isinstance(optimizer, JaxFormula)
        self._jax: ModuleType | None = _import_jax(self.kind) if self.on_xla else None
        self._jitted: dict[tuple[tuple[bool, ...], tuple[str, ...], tuple[ElementType, ...]], _Step] = {}
        self._lock = threading.Lock()

    def init(self, parameters: Parameters) -> OptimizerState:
        return self.optimizer.init(parameters)

    def update(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters
    ) -> tuple[Parameters, OptimizerState]:
        """The wrapped optimizer's update, on XLA when it has a jax formula."""
        optimizer = self.optimizer
        if not isinstance(optimizer, JaxFormula):
            return optimizer.update(gradients, state, parameters)
        check_state(self.kind, state).check(self.kind, gradients, parameters)
        prelude = optimizer.jax_prelude(state, parameters)
        elements = tuple(p.element for p in parameters.payloads())
        function = self._function(optimizer, prelude, elements)
        tables = tuple(tuple(t.numpy() for t in state.table(name).payloads()) for name in prelude.tables)
        jax = self._jax
        assert jax is not None  # on_xla: the optimizer has a jax formula, so jax was imported
        with jax.enable_x64(True):  # f64 numbers and slots; f32 and bf16 slots keep their dtype
            news, outs = function(
                np.asarray(prelude.numbers, np.float64),
                tuple(p.numpy() for p in parameters.payloads()),
                tuple(g.numpy() for g in gradients.payloads()),
                tables,
            )
            fresh = _adopted(news, elements)
            kept = {name: _adopted(out, elements) for name, out in zip(prelude.tables, outs, strict=True)}
        following = state.advanced(
            tables={name: Parameters(state.table(name).lineage, parameters.symbols, kept[name]) for name in kept},
            scalars=dict(prelude.scalars),
        )
        return Parameters(parameters.lineage, parameters.symbols, fresh), following

    def _function(self, optimizer: JaxFormula, prelude: JaxPrelude, elements: tuple[ElementType, ...]) -> _Step:
        key = (prelude.flags, prelude.tables, elements)
        with self._lock:
            found = self._jitted.get(key)
            if found is None:
                found = self._jit(optimizer, prelude.flags, elements)
                self._jitted[key] = found
            return found

    def _jit(self, optimizer: JaxFormula, flags: tuple[bool, ...], elements: tuple[ElementType, ...]) -> _Step:
        from topos import XlaExecutable  # at call time: topos imports this package while it starts

        jax = self._jax
        assert jax is not None  # called from update, on the jax road only
        jnp = jax.numpy

        def step(
            numbers: _Traced, parameters: Sequence[_Traced], gradients: Sequence[_Traced], tables: Sequence[Sequence[_Traced]]
        ) -> tuple[tuple[_Traced, ...], _Tables]:
            news: list[_Traced] = []
            outs: list[list[_Traced]] = [[] for _ in tables]
            for slot, (p, g) in enumerate(zip(parameters, gradients, strict=True)):
                ops = _Ops(jnp, numbers, elements[slot])
                new, kept = optimizer.jax_slot(ops, flags[slot], p, g, tuple(t[slot] for t in tables))
                news.append(new)
                for out, value in zip(outs, kept, strict=True):
                    out.append(value)
            return tuple(news), tuple(tuple(out) for out in outs)

        jitted: _Step = jax.jit(step, compiler_options=dict(XlaExecutable.compiler_options))
        return jitted

    def __repr__(self) -> str:
        road = "XLA" if self.on_xla else "numpy (no jax formula)"
        return f"compiled({self.optimizer!r}) on {road}"


def _adopted(arrays: Sequence[_Traced], elements: tuple[ElementType, ...]) -> tuple[Tensor, ...]:
    # np.asarray of a CPU jax array is a read-only view of its buffer: no copy, and nothing
    # else can write it.
    return tuple(Tensor.adopt(np.asarray(a), e) for a, e in zip(arrays, elements, strict=True))


def compiled(optimizer: Optimizer) -> CompiledUpdate:
    """``optimizer`` with its update compiled by XLA (``jax.jit``), or run in numpy without a jax formula.

    Example:
        >>> from topos.optim import Sgd, compiled
        >>> compiled(Sgd(0.1)).on_xla
        True
    """
    return CompiledUpdate(optimizer)
