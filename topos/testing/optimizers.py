"""The optimizer conformance check, :func:`check_optimizer`, and its learning-rate search.

Contract: the factory is called as ``factory(learning_rate=rate)``, every other argument at
its default, and held to these properties, always all of them, in this order:

- ``pure``: ``init`` and ``update`` leave their arguments' bits unchanged; the same inputs
  give the same bits, from the same instance and from a second one; two runs of five steps
  agree bit for bit.
- ``aligned``: in each element of ``elements`` (f32, f64, bf16 by default) and on a table
  of four shapes (rank 0 to 3), new parameters keep symbols, shapes and element; every state
  table is aligned slot for slot with the parameters in the same element; scalars are rank
  0; ``state.step`` counts the updates; every value stays finite.
- ``zero gradient``: from a fresh state, zero gradients leave every parameter bit for bit
  unchanged, unless ``weight_decay=True`` is passed, in which case they may only move
  parameters towards zero (``|new| <= |old|`` elementwise).
- ``checkpoint``: ``state.arrays()`` names every table entry ``table/%index`` and holds
  ``count``; the state restored from those arrays, and the state saved to a file with
  :func:`topos.checkpoint.save` and read back with :func:`topos.checkpoint.load_training`,
  each continue bit for bit like the original.
- ``foreign state``: a state made for another network, and gradients of another network,
  are refused with :class:`~topos.errors.ParametersError` (``state.check`` does this).
- ``quadratic`` and ``ill-conditioned``: the learning-rate search below finds a rate that
  converges, in f64. The quadratic is ``sum w_i (v_i - c_i)^2`` over eight coordinates
  (weights 1 to 3), in :data:`QUADRATIC_STEPS` steps, to 1e-4 of its starting loss; the
  ill-conditioned problem is ``1/2 (x - c)^T A (x - c)`` with ``A`` a rotated
  ``diag(1, 100)`` (condition number 100, not aligned with the axes), in
  :data:`ILL_CONDITIONED_STEPS` steps, to 1e-3 of its starting loss. The gradients are
  formed in closed form, so the optimizer is the only thing under test.

The learning-rate search: every rate of :data:`LEARNING_RATES` (``10**(k/3)`` for ``k``
from 0 down to -12, that is 1 down to 1e-4, three per decade) is tried in turn under
``topos.optim.schedules.cosine_decay(rate, steps)`` (the rate decays to 0 over the run,
which lets sign-based and adaptive methods settle); the first that meets the target passes,
and a run whose loss leaves the finite range or grows a million-fold is abandoned. A
failure lists the best loss reached at every rate.

Only :mod:`topos.optim`'s public names are used, so an optimizer is judged by its surface.

Example:
    >>> from topos.optim import Sgd
    >>> check_optimizer(Sgd, name="sgd").of("foreign state").passed
    True
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Sequence

import numpy as np

from topos.errors import ElementError, ParametersError
from topos.ir.element import ElementType, bf16, f32, f64
from topos.ir.network import Network
from topos.optim import Optimizer, OptimizerError, OptimizerFactory
from topos.stages.spec import Tape
from topos.state import Parameters
from topos.tensor import Tensor
from topos.testing.common import (
    PropertyFailed,
    Report,
    Slots,
    argument,
    binds,
    bits,
    expect,
    run_properties,
    state_bits,
    table_bits,
)

__all__ = ["ILL_CONDITIONED_STEPS", "LEARNING_RATES", "QUADRATIC_STEPS", "check_optimizer"]

LEARNING_RATES: tuple[float, ...] = tuple(10.0 ** (k / 3) for k in range(0, -13, -1))
"""The learning-rate grid of the descent properties: 1 down to 1e-4, three per decade."""

QUADRATIC_STEPS = 300
"""Steps the quadratic descent property allows."""

ILL_CONDITIONED_STEPS = 600
"""Steps the ill-conditioned descent property allows."""


def _shapes(element: ElementType) -> Network:
    def build(tape: Tape) -> None:
        tape.parameter(0.5)
        tape.parameter([1.0, -2.0, 3.0])
        tape.parameter([[0.25, -0.5], [1.5, 2.0]])
        tape.parameter(np.linspace(-1.0, 1.0, 12).reshape(2, 3, 2))

    network, _ = Tape.record(build, element=element)
    return network


def _gradients(parameters: Parameters) -> Parameters:
    return parameters.map(lambda p: p * 0.5 - 0.25)


def _finite(table: Parameters) -> bool:
    return all(bool(np.all(np.isfinite(payload.numpy().astype(np.float64)))) for _, payload in table)


def _optimizer_pure(make: Callable[[float], Optimizer]) -> str:
    parameters = _shapes(f32).parameters()
    opt = make(0.01)
    before = table_bits(parameters)
    state = opt.init(parameters)
    expect(table_bits(parameters) == before, "init changed the parameters it was given")
    expect(state_bits(opt.init(parameters)) == state_bits(state), "init gave different bits for the same parameters")
    parameters, state = opt.update(_gradients(parameters), state, parameters)
    gradients = _gradients(parameters)
    inputs = (table_bits(parameters), table_bits(gradients), state_bits(state))
    first = opt.update(gradients, state, parameters)
    second = opt.update(gradients, state, parameters)
    expect(
        (table_bits(parameters), table_bits(gradients), state_bits(state)) == inputs,
        "update changed its inputs (parameters, gradients or state)",
    )
    expect(
        (table_bits(first[0]), state_bits(first[1])) == (table_bits(second[0]), state_bits(second[1])),
        "two updates with the same inputs gave different bits",
    )
    third = make(0.01).update(gradients, state, parameters)
    expect(
        (table_bits(first[0]), state_bits(first[1])) == (table_bits(third[0]), state_bits(third[1])),
        "a second optimizer built with the same arguments gave different bits",
    )
    runs = []
    for _ in range(2):
        opt = make(0.01)
        p = _shapes(f32).parameters()
        s = opt.init(p)
        for _ in range(5):
            p, s = opt.update(_gradients(p), s, p)
        runs.append((table_bits(p), state_bits(s)))
    expect(runs[0] == runs[1], "two runs of five steps from the same start gave different bits")
    return "inputs unchanged; same inputs, same bits (same instance, new instance, five-step runs)"


def _slots_kept(
    parameters: Parameters, table: Parameters, element: ElementType, where: str, words: tuple[str, str]
) -> None:
    """Expect each slot of ``table`` to hold its parameter's shape in ``element``.

    The new parameters and every state table are held to this alike; a failure reads
    ``{where} %i {now} <its shape and element>, {then} <the parameter's>``, ``words``
    being ``(now, then)``.
    """
    now, then = words
    for (symbol, parameter), (_, entry) in zip(parameters, table, strict=True):
        expect(
            (entry.shape, entry.element) == (parameter.shape, element),
            f"{where} %{symbol.index} {now} {entry.shape} {entry.element.name}, {then} {parameter.shape} {element.name}",
        )


def _optimizer_aligned(make: Callable[[float], Optimizer], elements: Sequence[ElementType]) -> str:
    for element in elements:
        opt = make(0.01)
        parameters = _shapes(element).parameters()
        state = opt.init(parameters)
        for step in range(1, 4):
            new, state = opt.update(_gradients(parameters), state, parameters)
            expect(new.symbols == parameters.symbols, f"{element.name}, step {step}: the new table holds other slots")
            _slots_kept(parameters, new, element, f"{element.name}, step {step}: slot", ("became", "was"))
            for name, table in state.tables.items():
                expect(table.symbols == parameters.symbols, f"{element.name}: state table {name!r} is not slot-aligned")
                _slots_kept(parameters, table, element, f"{element.name}: state table {name!r} slot", ("is", "the parameter"))
            for name, scalar in state.scalars.items():
                expect(scalar.shape.rank == 0, f"{element.name}: state scalar {name!r} has shape {scalar.shape}")
            expect(state.step == step, f"{element.name}: state.step is {state.step} after {step} updates")
            expect(_finite(new), f"{element.name}, step {step}: a parameter is not finite")
            parameters = new
    return f"shapes, elements and slots kept in {', '.join(e.name for e in elements)}; step counted"


def _optimizer_zero_gradient(make: Callable[[float], Optimizer], weight_decay: bool) -> str:
    parameters = _shapes(f64).parameters()
    opt = make(0.1)
    zero = parameters.map(lambda p: p * 0.0)
    new, _ = opt.update(zero, opt.init(parameters), parameters)
    for (symbol, before), (_, after) in zip(parameters, new, strict=True):
        if weight_decay:
            old, now = before.numpy(), after.numpy()
            expect(
                bool(np.all(np.abs(now) <= np.abs(old))),
                f"zero gradients moved slot %{symbol.index} away from zero ({old.tolist()} -> {now.tolist()})",
            )
        else:
            expect(
                bits(after) == bits(before),
                f"zero gradients moved slot %{symbol.index} ({before.tolist()} -> {after.tolist()}); "
                "pass weight_decay=True if the optimizer decays weights",
            )
    return "zero gradients only shrink parameters" if weight_decay else "zero gradients change nothing"


def _optimizer_checkpoint(make: Callable[[float], Optimizer]) -> str:
    # Loaded when the property runs, so importing the kit loads neither the checkpoint
    # format nor the nn facade it imports.
    from topos import checkpoint

    for element in (f64, f32):
        opt = make(0.01)
        parameters = _shapes(element).parameters()
        state = opt.init(parameters)
        for _ in range(2):
            parameters, state = opt.update(_gradients(parameters), state, parameters)
        saved = state.arrays()
        expect("count" in saved, f"state.arrays() has no 'count' entry: {sorted(saved)}")
        for name, table in state.tables.items():
            for symbol, _ in table:
                expect(f"{name}/%{symbol.index}" in saved, f"state.arrays() lacks {name}/%{symbol.index}")
        straight = opt.update(_gradients(parameters), state, parameters)
        expected = (table_bits(straight[0]), state_bits(straight[1]))
        restored = opt.init(parameters).restored({key: np.array(value) for key, value in saved.items()})
        again = opt.update(_gradients(parameters), restored, parameters)
        expect(
            (table_bits(again[0]), state_bits(again[1])) == expected,
            f"{element.name}: the state restored from state.arrays() continues differently",
        )
        module = Slots(parameters.symbols)
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "state.safetensors")
            checkpoint.save(path, module, parameters, state)
            loaded, resumed = checkpoint.load_training(path, module, parameters, opt.init(parameters))
        again = opt.update(_gradients(loaded), resumed, loaded)
        expect(
            (table_bits(again[0]), state_bits(again[1])) == expected,
            f"{element.name}: the state saved and loaded with topos.checkpoint continues differently",
        )
    return "restored by name, from arrays and from a checkpoint file, continues bit for bit (f64, f32)"


def _optimizer_foreign(make: Callable[[float], Optimizer]) -> str:
    network, other = _shapes(f32), _shapes(f32)
    opt = make(0.01)
    parameters = network.parameters()
    attempts: list[tuple[str, Callable[[], object]]] = [
        ("a state made for another network", lambda: opt.update(_gradients(parameters), opt.init(other.parameters()), parameters)),
        ("gradients of another network", lambda: opt.update(_gradients(other.parameters()), opt.init(parameters), parameters)),
    ]
    for what, call in attempts:
        try:
            call()
        except ParametersError:
            continue
        except Exception as error:
            raise PropertyFailed(f"{what} raised {type(error).__name__}, not ParametersError: {error}") from None
        raise PropertyFailed(f"{what} was accepted; call state.check(kind, gradients, parameters) first in update")
    return "a foreign state and foreign gradients are refused with ParametersError"


Problem = tuple[Parameters, Callable[[Parameters], Parameters], Callable[[Parameters], float]]


def _quadratic() -> Problem:
    weights = np.linspace(1.0, 3.0, 8)
    target = np.array([1.0, -1.0, 0.5, 0.0, 2.0, -0.5, 1.5, -2.0])
    network, v = Tape.record(lambda t: t.parameter(np.array([3.0, -2.0, 0.5, 1.0, -1.0, 2.0, 0.0, 1.0])), element=f64)
    w, c = Tensor(weights, element=f64), Tensor(target, element=f64)

    def gradient(p: Parameters) -> Parameters:
        return p.map(lambda x: (x - c) * w * 2.0)

    def loss(p: Parameters) -> float:
        d = p.of(v).numpy() - target
        return float(np.sum(weights * d * d))

    return network.parameters(), gradient, loss


def _ill_conditioned() -> Problem:
    angle = math.pi / 6
    rotation = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    matrix = rotation @ np.diag([1.0, 100.0]) @ rotation.T
    target = np.array([1.0, -0.5])
    network, x = Tape.record(lambda t: t.parameter(np.array([-1.0, 1.5])), element=f64)
    a, c = Tensor(matrix, element=f64), Tensor(target, element=f64)

    def gradient(p: Parameters) -> Parameters:
        # A x for a 2-vector, written per row so only elementwise arithmetic is needed.
        return p.map(lambda v: ((v - c).broadcast_along(0, 2) * a).sum_along(1))

    def loss(p: Parameters) -> float:
        d = p.of(x).numpy() - target
        return float(0.5 * d @ matrix @ d)

    return network.parameters(), gradient, loss


def _descent(factory: OptimizerFactory, problem: Callable[[], Problem], steps: int, factor: float) -> str:
    # Beside its one use, like the kit's other deferred imports; topos.optim has loaded it.
    from topos.optim import schedules

    tried: list[str] = []
    for rate in LEARNING_RATES:
        parameters, gradient, loss = problem()
        start = loss(parameters)
        opt = factory(learning_rate=schedules.cosine_decay(rate, steps))
        state = opt.init(parameters)
        best = start
        with np.errstate(all="ignore"):  # a large rate of the grid may overflow before it is abandoned
            for _ in range(steps):
                parameters, state = opt.update(gradient(parameters), state, parameters)
                now = loss(parameters)
                if not math.isfinite(now) or now > 1e6 * start:
                    best = now if not math.isfinite(now) else best
                    break
                best = min(best, now)
        last = loss(parameters)
        if math.isfinite(last) and last <= factor * start:
            return f"loss {start:.3g} -> {last:.3g} in {steps} steps at learning rate {rate:.3g}"
        tried.append(f"{rate:.3g}: {last:.3g}")
    raise PropertyFailed(
        f"no learning rate of the grid reduced the loss {1 / factor:.0e}-fold (start {start:.3g}) in {steps} "
        f"steps under cosine decay; final loss per rate: {'; '.join(tried)}"
    )


def check_optimizer(
    factory: OptimizerFactory,
    *,
    name: str | None = None,
    elements: Sequence[ElementType] = (f32, f64, bf16),
    weight_decay: bool = False,
) -> Report:
    """Hold an optimizer factory to the conformance properties (see the module docstring).

    ``factory(learning_rate=...)`` must build the optimizer with every other argument at its
    default. ``weight_decay=True`` relaxes the zero-gradient property for optimizers that
    decay parameters by default. Raises :class:`~topos.testing.common.ConformanceError`
    listing every property if any fails; returns the :class:`~topos.testing.common.Report`
    otherwise.

    Example:
        >>> from topos.optim import Adam
        >>> print(check_optimizer(Adam).of("quadratic").passed)
        True
    """
    where = "check_optimizer"
    wanted = "a callable building an optimizer from learning_rate= (a class such as Sgd, not an instance)"
    argument(where, "factory", factory, callable(factory), wanted, OptimizerError)
    argument(where, "name", name, name is None or isinstance(name, str), "a string or None")
    given: object = elements  # typed as the caller may really pass it
    sound = isinstance(given, Sequence) and not isinstance(given, str) and len(given) > 0
    argument(where, "elements", given, sound and all(isinstance(e, ElementType) for e in elements),
             "a non-empty sequence of ElementType (f32, not 'f32')", ElementError)  # fmt: skip
    argument(where, "weight_decay", weight_decay, isinstance(weight_decay, bool), "True or False")
    binds(where, factory, "factory(learning_rate=...)", OptimizerError, learning_rate=0.01)
    subject = name or str(getattr(factory, "__name__", repr(factory)))

    def make(rate: float) -> Optimizer:
        return factory(learning_rate=rate)

    return run_properties(
        "optimizer",
        subject,
        [
            ("pure", lambda: _optimizer_pure(make)),
            ("aligned", lambda: _optimizer_aligned(make, elements)),
            ("zero gradient", lambda: _optimizer_zero_gradient(make, weight_decay)),
            ("checkpoint", lambda: _optimizer_checkpoint(make)),
            ("foreign state", lambda: _optimizer_foreign(make)),
            ("quadratic", lambda: _descent(factory, _quadratic, QUADRATIC_STEPS, 1e-4)),
            ("ill-conditioned", lambda: _descent(factory, _ill_conditioned, ILL_CONDITIONED_STEPS, 1e-3)),
        ],
    )

