"""An optimizer's update compiled by XLA, next to a step on the XLA road.

Contract. :func:`compiled` wraps an optimizer; the wrapper keeps the pure ``init`` /
``update`` contract and the optimizer's state (a state moves freely between the wrapped and
the plain optimizer). An optimizer made of transforms (a :class:`~topos.optim.Chain`, or one
that holds a chain as ``.chain``: the built-ins do) replays its slot formulas, the same
recorded :class:`~topos.optim.passes.Program` its numpy update replays, in jax.numpy as one
``jax.jit`` function of (numbers, each slot's parameter, gradient and table entries), traced
once per formula shape and element layout and compiled with the XLA road's options
(``XlaExecutable.compiler_options``: the algebraic simplifier off).
Everything the numpy update settles in Python (the learning rate from a schedule, carried
powers, AdamW's decay mask) comes from the same :meth:`~topos.optim.Chain.settle`, so a
changing learning rate never recompiles. Any other optimizer (a plugin written for numpy)
runs its own numpy update unchanged; ``on_xla`` says which road a wrapper takes.

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
from topos.optim.base import Optimizer, OptimizerError, OptimizerState, check_table
from topos.optim.chain import Chain, Settled
from topos.optim.passes import Program
from topos.state import Parameters
from topos.tensor import Tensor

__all__ = ["CompiledUpdate", "compiled"]


class _Traced(Protocol):
    """What the update does with a traced jax array itself (everything else goes through jnp)."""

    def astype(self, dtype: np.dtype[Any], /) -> _Traced: ...
    def __getitem__(self, index: int, /) -> _Traced: ...


_Results = tuple[tuple[_Traced, tuple[_Traced, ...]], ...]
_Key = tuple[tuple[Program, ...], tuple[ElementType, ...]]
"""What one jitted function is specialised to: each slot's recorded formula and element."""


class _Step(Protocol):
    """The jitted update: numbers and each slot's ``(p, g, *entries)`` in, each slot's results out."""

    def __call__(self, numbers: np.ndarray[Any, Any], slots: tuple[tuple[np.ndarray[Any, Any], ...], ...], /) -> _Results: ...


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


def _replayed(jnp: ModuleType, program: Program, numbers: _Traced, element: ElementType, inputs: Sequence[_Traced]) -> list[_Traced]:
    """``program`` over one slot in jax.numpy: each operation in the compute dtype, rounded once to storage."""
    storage, compute, widens = np.dtype(element.dtype), np.dtype(element.compute), element.widens
    values: dict[int, _Traced] = {}
    for index in program.live:
        operation, left, right = program.steps[index]
        if operation == "input":
            values[index] = inputs[left]
        elif operation == "number":
            values[index] = numbers[left].astype(storage)
        else:
            operands = [values[left]] if right < 0 else [values[left], values[right]]
            result: _Traced = getattr(jnp, operation)(*(v.astype(compute) if widens else v for v in operands))
            values[index] = result.astype(storage) if widens else result
    return [values[index] for index in program.outputs]


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
        if isinstance(optimizer, type):
            # The class has init and update too, so the protocol check alone would take it.
            raise OptimizerError(
                f"{user_site()}: topos.optim.compiled takes an optimizer, got the class {optimizer.__name__}; "
                f"build one first, e.g. compiled({optimizer.__name__}(learning_rate=...))"
            )
        if not isinstance(optimizer, Optimizer) or isinstance(optimizer, CompiledUpdate):
            raise OptimizerError(
                f"{user_site()}: topos.optim.compiled takes an optimizer (init and update), got {type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        self.kind: str = str(getattr(optimizer, "kind", type(optimizer).__name__))
        self.on_xla = isinstance(getattr(optimizer, "chain", None), Chain)
        self._jax: ModuleType | None = _import_jax(self.kind) if self.on_xla else None
        self._jitted: dict[_Key, _Step] = {}
        self._lock = threading.Lock()

    def init(self, parameters: Parameters) -> OptimizerState:
        check_table(f"compiled({self.kind}).init", "parameters", parameters)
        return self.optimizer.init(parameters)

    def update(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters
    ) -> tuple[Parameters, OptimizerState]:
        """The wrapped optimizer's update, on XLA when it is made of transforms."""
        formula = getattr(self.optimizer, "chain", None)
        if not isinstance(formula, Chain):
            # The chain checks its own arguments; a plugin's numpy update gets them checked here.
            check_table(f"compiled({self.kind}).update", "gradients", gradients)
            check_table(f"compiled({self.kind}).update", "parameters", parameters)
            return self.optimizer.update(gradients, state, parameters)
        return formula.step(gradients, state, parameters, self._road)

    def _road(self, settled: Settled, slots: Sequence[tuple[Tensor, ...]]) -> list[tuple[Tensor, tuple[Tensor, ...]]]:
        elements = tuple(inputs[0].element for inputs in slots)
        key = (settled.programs, elements)
        with self._lock:
            function = self._jitted.get(key)
            if function is None:
                function = self._jitted[key] = self._jit(*key)
        jax = self._jax
        assert jax is not None  # on_xla: the optimizer is made of transforms, so jax was imported
        with jax.enable_x64(True):  # f64 numbers and slots; f32 and bf16 slots keep their dtype
            results = function(
                np.asarray(settled.numbers, np.float64), tuple(tuple(t.numpy() for t in inputs) for inputs in slots)
            )
            # np.asarray of a CPU jax array is a read-only view of its buffer: no copy, and
            # nothing else can write it.
            return [
                (Tensor.adopt(np.asarray(new), e), tuple(Tensor.adopt(np.asarray(k), e) for k in kept))
                for (new, kept), e in zip(results, elements, strict=True)
            ]

    def _jit(self, programs: tuple[Program, ...], elements: tuple[ElementType, ...]) -> _Step:
        from topos import XlaExecutable  # at call time: topos imports this package while it starts

        jax = self._jax
        assert jax is not None  # called from update, on the jax road only
        jnp = jax.numpy

        def step(numbers: _Traced, slots: Sequence[Sequence[_Traced]]) -> _Results:
            out = []
            for program, element, inputs in zip(programs, elements, slots, strict=True):
                new, *kept = _replayed(jnp, program, numbers, element, inputs)
                out.append((new, tuple(kept)))
            return tuple(out)

        jitted: _Step = jax.jit(step, compiler_options=dict(XlaExecutable.compiler_options))
        return jitted

    def __repr__(self) -> str:
        road = "XLA" if self.on_xla else "numpy (not made of transforms)"
        return f"compiled({self.optimizer!r}) on {road}"


def compiled(optimizer: Optimizer) -> CompiledUpdate:
    """``optimizer`` with its update compiled by XLA (``jax.jit``); one not made of transforms runs in numpy.

    Example:
        >>> from topos.optim import Sgd, compiled
        >>> compiled(Sgd(0.1)).on_xla
        True
    """
    return CompiledUpdate(optimizer)
