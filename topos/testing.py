"""Conformance checks a plugin author runs against an optimizer, an element type or a layer.

Each check runs a fixed list of properties, always all of them, and either returns a
:class:`Report` (every property held) or raises :class:`ConformanceError`, an
``AssertionError`` that is also a :class:`~topos.errors.ToposError`, whose message lists
every property with ``ok`` or ``FAILED`` and why. Being an ``AssertionError``, it fails a
pytest test, a unittest case or a plain script alike; the kit itself needs only topos and
numpy.

The built-ins are held to exactly these checks (``tests/test_testing_kit.py``).

:func:`check_optimizer` (the factory is called as ``factory(learning_rate=rate)``):

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

:func:`check_element_type`, on a small smooth graph (a product, a bias, tanh and a sum):

- ``records``: every node of the recording carries the element.
- ``interprets``: the interpreter's values carry the element, are stored in its dtype, are
  finite, and two runs agree bit for bit.
- ``plans``: an exact plan (``Numerics.EXACT``) of the loss and the gradients equals the
  interpreter bit for bit.
- ``gradient``: the recorded gradient (:func:`topos.gradient`) equals the engine's reverse
  scan (``run.backward``) bit for bit.
- ``check_grad``: :func:`topos.check_grad` passes (f64 central differences) at the
  element's own tolerance (:meth:`~topos.ElementType.gradcheck_tolerance`, derived from its
  unit roundoff exactly as for the built-ins).
- ``checkpoint``: parameters saved with :func:`topos.checkpoint.save` and loaded with
  :func:`topos.checkpoint.load` come back bit for bit.
- ``emits``: an element with ``emittable=True`` emits StableHLO naming its type, byte-stable
  across two emissions; one with ``emittable=False`` is refused with ``EmissionError``.

:func:`check_layer` (the layer is built as ``factory(tape, *args, **kwargs)`` on a fresh
tape of ``element`` and applied to a recorded input):

- ``records``: the output is a value on the same tape, and the layer recorded nodes.
- ``named``: ``visit`` names each parameter by a non-empty, unique module path; every
  parameter the layer recorded is named and every named symbol is a parameter.
- ``deterministic``: recording twice gives the same ``describe()`` text, and two forward
  runs the same bits.
- ``gradient``: the gradient of a fixed weighted sum of the output reaches every named
  parameter, with its shape, finite, and not identically zero.

Example:
    >>> from topos.optim import Sgd
    >>> report = check_optimizer(Sgd, name="sgd")
    >>> report.passed, report.names()[:3]
    (True, ('pure', 'aligned', 'zero gradient'))
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, final

import attrs
import numpy as np

from topos.errors import EmissionError, ParametersError, ToposError
from topos.ir.element import ElementType, bf16, f32, f64
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.numerics import Numerics
from topos.optim.base import Optimizer, OptimizerFactory, OptimizerState
from topos.stages.spec import Tape, Value
from topos.state import Parameters
from topos.tensor import Tensor, TensorLike

if TYPE_CHECKING:
    from topos.nn.module import Visitor

__all__ = [
    "ILL_CONDITIONED_STEPS",
    "LEARNING_RATES",
    "QUADRATIC_STEPS",
    "Check",
    "ConformanceError",
    "Report",
    "check_element_type",
    "check_layer",
    "check_optimizer",
]

Array = np.ndarray[Any, Any]

LEARNING_RATES: tuple[float, ...] = tuple(10.0 ** (k / 3) for k in range(0, -13, -1))
"""The learning-rate grid of the descent properties: 1 down to 1e-4, three per decade."""

QUADRATIC_STEPS = 300
"""Steps the quadratic descent property allows."""

ILL_CONDITIONED_STEPS = 600
"""Steps the ill-conditioned descent property allows."""


class ConformanceError(ToposError, AssertionError):
    """A conformance check failed; ``report`` holds every property and why each failed."""

    def __init__(self, report: Report) -> None:
        super().__init__(str(report))
        self.report = report


@final
@attrs.frozen(slots=True)
class Check:
    """One property: its name, whether it held, and what was seen."""

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


class _Failed(Exception):
    """A property did not hold; the message says why."""


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise _Failed(message)


def _run(kind: str, subject: str, properties: Sequence[tuple[str, Callable[[], str]]]) -> Report:
    checks = []
    for name, prove in properties:
        try:
            detail = prove()
            checks.append(Check(name, True, detail))
        except _Failed as failure:
            checks.append(Check(name, False, str(failure)))
        except Exception as error:  # a crash is a failed property, reported with its type
            checks.append(Check(name, False, f"raised {type(error).__name__}: {error}"))
    report = Report(subject, kind, tuple(checks))
    if not report.passed:
        raise ConformanceError(report)
    return report


def _bits(tensor: Tensor) -> bytes:
    return bytes(tensor.bits().tobytes())


def _table_bits(table: Parameters) -> list[tuple[int, bytes]]:
    return [(symbol.index, _bits(payload)) for symbol, payload in table]


def _state_bits(state: OptimizerState) -> list[tuple[str, str, bytes]]:
    out = []
    for key, value in sorted(state.arrays().items()):
        out.append((key, str(value.dtype), bytes(np.ascontiguousarray(value).tobytes())))
    return out


# --------------------------------------------------------------------------- optimizers


class _Slots:
    """A module naming each slot of a table ``p<index>``, so topos.checkpoint can store it."""

    def __init__(self, symbols: Iterable[Symbol]) -> None:
        self.symbols = tuple(symbols)

    def __call__(self, input: Value, /) -> Value:
        return input

    def visit(self, visitor: Visitor) -> None:
        for symbol in self.symbols:
            visitor.parameter(f"p{symbol.index}", symbol)


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
    before = _table_bits(parameters)
    state = opt.init(parameters)
    _expect(_table_bits(parameters) == before, "init changed the parameters it was given")
    _expect(_state_bits(opt.init(parameters)) == _state_bits(state), "init gave different bits for the same parameters")
    parameters, state = opt.update(_gradients(parameters), state, parameters)
    gradients = _gradients(parameters)
    inputs = (_table_bits(parameters), _table_bits(gradients), _state_bits(state))
    first = opt.update(gradients, state, parameters)
    second = opt.update(gradients, state, parameters)
    _expect(
        (_table_bits(parameters), _table_bits(gradients), _state_bits(state)) == inputs,
        "update changed its inputs (parameters, gradients or state)",
    )
    _expect(
        (_table_bits(first[0]), _state_bits(first[1])) == (_table_bits(second[0]), _state_bits(second[1])),
        "two updates with the same inputs gave different bits",
    )
    third = make(0.01).update(gradients, state, parameters)
    _expect(
        (_table_bits(first[0]), _state_bits(first[1])) == (_table_bits(third[0]), _state_bits(third[1])),
        "a second optimizer built with the same arguments gave different bits",
    )
    runs = []
    for _ in range(2):
        opt = make(0.01)
        p = _shapes(f32).parameters()
        s = opt.init(p)
        for _ in range(5):
            p, s = opt.update(_gradients(p), s, p)
        runs.append((_table_bits(p), _state_bits(s)))
    _expect(runs[0] == runs[1], "two runs of five steps from the same start gave different bits")
    return "inputs unchanged; same inputs, same bits (same instance, new instance, five-step runs)"


def _optimizer_aligned(make: Callable[[float], Optimizer], elements: Sequence[ElementType]) -> str:
    for element in elements:
        opt = make(0.01)
        parameters = _shapes(element).parameters()
        state = opt.init(parameters)
        for step in range(1, 4):
            new, state = opt.update(_gradients(parameters), state, parameters)
            _expect(new.symbols == parameters.symbols, f"{element.name}, step {step}: the new table holds other slots")
            for (symbol, before), (_, after) in zip(parameters, new, strict=True):
                _expect(
                    (after.shape, after.element) == (before.shape, element),
                    f"{element.name}, step {step}: slot %{symbol.index} became {after.shape} {after.element.name}, "
                    f"was {before.shape} {element.name}",
                )
            for name, table in state.tables.items():
                _expect(table.symbols == parameters.symbols, f"{element.name}: state table {name!r} is not slot-aligned")
                for (symbol, p), (_, entry) in zip(parameters, table, strict=True):
                    _expect(
                        (entry.shape, entry.element) == (p.shape, element),
                        f"{element.name}: state table {name!r} slot %{symbol.index} is {entry.shape} "
                        f"{entry.element.name}, the parameter {p.shape} {element.name}",
                    )
            for name, scalar in state.scalars.items():
                _expect(scalar.shape.rank == 0, f"{element.name}: state scalar {name!r} has shape {scalar.shape}")
            _expect(state.step == step, f"{element.name}: state.step is {state.step} after {step} updates")
            _expect(_finite(new), f"{element.name}, step {step}: a parameter is not finite")
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
            _expect(
                bool(np.all(np.abs(now) <= np.abs(old))),
                f"zero gradients moved slot %{symbol.index} away from zero ({old.tolist()} -> {now.tolist()})",
            )
        else:
            _expect(
                _bits(after) == _bits(before),
                f"zero gradients moved slot %{symbol.index} ({before.tolist()} -> {after.tolist()}); "
                "pass weight_decay=True if the optimizer decays weights",
            )
    return "zero gradients only shrink parameters" if weight_decay else "zero gradients change nothing"


def _optimizer_checkpoint(make: Callable[[float], Optimizer]) -> str:
    from topos import checkpoint

    for element in (f64, f32):
        opt = make(0.01)
        parameters = _shapes(element).parameters()
        state = opt.init(parameters)
        for _ in range(2):
            parameters, state = opt.update(_gradients(parameters), state, parameters)
        saved = state.arrays()
        _expect("count" in saved, f"state.arrays() has no 'count' entry: {sorted(saved)}")
        for name, table in state.tables.items():
            for symbol, _ in table:
                _expect(f"{name}/%{symbol.index}" in saved, f"state.arrays() lacks {name}/%{symbol.index}")
        straight = opt.update(_gradients(parameters), state, parameters)
        expected = (_table_bits(straight[0]), _state_bits(straight[1]))
        restored = opt.init(parameters).restored({key: np.array(value) for key, value in saved.items()})
        again = opt.update(_gradients(parameters), restored, parameters)
        _expect(
            (_table_bits(again[0]), _state_bits(again[1])) == expected,
            f"{element.name}: the state restored from state.arrays() continues differently",
        )
        module = _Slots(parameters.symbols)
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "state.safetensors")
            checkpoint.save(path, module, parameters, state)
            loaded, resumed = checkpoint.load_training(path, module, parameters, opt.init(parameters))
        again = opt.update(_gradients(loaded), resumed, loaded)
        _expect(
            (_table_bits(again[0]), _state_bits(again[1])) == expected,
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
            raise _Failed(f"{what} raised {type(error).__name__}, not ParametersError: {error}") from None
        raise _Failed(f"{what} was accepted; call state.check(kind, gradients, parameters) first in update")
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
    raise _Failed(
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
    decay parameters by default. Raises :class:`ConformanceError` listing every property
    if any fails; returns the :class:`Report` otherwise.

    Example:
        >>> from topos.optim import Adam
        >>> print(check_optimizer(Adam).of("quadratic").passed)
        True
    """
    subject = name or str(getattr(factory, "__name__", repr(factory)))

    def make(rate: float) -> Optimizer:
        return factory(learning_rate=rate)

    return _run(
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


# --------------------------------------------------------------------------- element types


def _smooth(tape: Tape) -> tuple[Value, Value, Value]:
    w = tape.parameter(np.array([[0.5, -0.25, 1.0], [0.75, 1.0, -0.125]]))
    b = tape.parameter(np.array([0.125, -0.25, 0.375]))
    x = tape.leaf(np.array([[1.0, 0.5], [-0.5, 0.25], [0.25, -1.0]]))
    out = (x.matmul(w) + b.broadcast_along(0, 3)).tanh()
    return w, b, (out * out).sum() * 0.5


def check_element_type(element: ElementType) -> Report:
    """Hold an element type to the conformance properties (see the module docstring).

    Raises :class:`ConformanceError` listing every property if any fails; returns the
    :class:`Report` otherwise.

    Example:
        >>> from topos import f32
        >>> check_element_type(f32).passed
        True
    """
    from topos import checkpoint
    from topos.gradcheck import check_grad
    from topos.stages.emission import emit_network
    from topos.stages.gradient import gradient

    def recorded() -> tuple[Network, tuple[Symbol, Symbol, Symbol]]:
        return Tape.record(_smooth, element=element)

    def records() -> str:
        network, _ = recorded()
        strays = [node for node in network.nodes_ if node.element != element]
        _expect(not strays, f"{len(strays)} nodes carry another element, e.g. {strays[:1]}")
        return f"{len(network.nodes_)} nodes, all {element.name}"

    def interprets() -> str:
        network, (_, _, loss) = recorded()
        runs = [network.forward(network.parameters()) for _ in range(2)]
        value = runs[0].of(loss)
        _expect(value.element == element, f"the loss came back as {value.element.name}")
        _expect(value.numpy().dtype == np.dtype(element.dtype), f"the loss is stored as {value.numpy().dtype}")
        _expect(bool(np.isfinite(float(value.scalar()))), f"the loss is {value.scalar()}")
        _expect(_bits(value) == _bits(runs[1].of(loss)), "two runs gave different bits")
        return f"loss {value.scalar():.6g}, stored as {value.numpy().dtype}, same bits twice"

    def roots() -> tuple[Network, Network, list[Symbol], list[Symbol]]:
        network, (w, b, loss) = recorded()
        grown, adjoints = gradient(network, loss, [w, b])
        return network, grown, [w, b, loss], [loss, *adjoints.gradients()]

    def plans() -> str:
        _, grown, _, wanted = roots()
        parameters = grown.parameters()
        oracle = grown.forward(parameters)
        plan = grown.entry(wanted).numerics(Numerics.EXACT).lower()
        run = plan.forward(parameters)
        for symbol in wanted:
            _expect(
                _bits(run.of(symbol)) == _bits(oracle.of(symbol)),
                f"the exact plan differs from the interpreter at {grown.describe_symbol(grown.index(symbol, 'root'))}",
            )
        return f"exact plan equals the interpreter bit for bit on {len(wanted)} roots"

    def gradient_property() -> str:
        network, (w, b, loss) = recorded()
        grown, adjoints = gradient(network, loss, [w, b])
        parameters = network.parameters()
        run = grown.forward(parameters)
        engine = network.forward(parameters).backward(loss)
        for symbol in (w, b):
            got = run.of(adjoints.of(symbol))
            _expect(got.element == element, f"the recorded gradient of %{symbol.index} is {got.element.name}")
            _expect(
                _bits(got) == _bits(engine.of(symbol)),
                f"the recorded gradient of %{symbol.index} differs from the engine's: "
                f"{got.tolist()} vs {engine.of(symbol).tolist()}",
            )
        return "recorded gradient equals the engine bit for bit"

    def gradcheck() -> str:
        network, (_, _, loss) = recorded()
        report = check_grad(network, network.parameters(), loss)
        _expect(report.passed, f"check_grad failed:\n{report}")
        return (
            f"check_grad passes against f64 differences at tolerance {element.gradcheck_tolerance():g} "
            f"(from the unit roundoff {element.roundoff:.3g} of {element.dtype})"
        )

    def checkpoints() -> str:
        network, _ = recorded()
        parameters = network.parameters().map(lambda p: p * 0.75 + 0.125)
        module = _Slots(network.parameter_symbols())
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "weights.safetensors")
            checkpoint.save(path, module, parameters)
            loaded = checkpoint.load(path, module, network.parameters())
        _expect(_table_bits(loaded) == _table_bits(parameters), "loaded parameters differ from the saved ones")
        _expect(all(p.element == element for _, p in loaded), "loaded parameters changed element")
        return "saved and loaded bit for bit"

    def emits() -> str:
        _, grown, _, wanted = roots()
        if not element.emittable:
            try:
                emit_network(grown, wanted)
            except EmissionError:
                return "not emittable, and emission says so"
            raise _Failed("emittable=False, yet emission produced a module")
        text = emit_network(grown, wanted)
        _expect(f"x{element.mlir}>" in text, f"the module never names tensor<...x{element.mlir}>")
        _expect(emit_network(grown, wanted) == text, "two emissions gave different text")
        return f"emits StableHLO in {element.mlir}, byte-stable"

    return _run(
        "element type",
        element.name,
        [
            ("records", records),
            ("interprets", interprets),
            ("plans", plans),
            ("gradient", gradient_property),
            ("check_grad", gradcheck),
            ("checkpoint", checkpoints),
            ("emits", emits),
        ],
    )


# --------------------------------------------------------------------------- layers


def check_layer(
    factory: Callable[..., Any],
    *args: Any,
    input: TensorLike,
    element: ElementType = f64,
    name: str | None = None,
    **kwargs: Any,
) -> Report:
    """Hold a layer factory to the conformance properties (see the module docstring).

    The layer is built as ``factory(tape, *args, **kwargs)`` and applied to
    ``tape.input(input)``. Raises :class:`ConformanceError` listing every property if any
    fails; returns the :class:`Report` otherwise.

    Example:
        >>> from topos.nn import Linear
        >>> check_layer(Linear, [[1.0, 2.0], [3.0, 4.0]], [0.5, 0.5], input=[[1.0, -1.0]]).passed
        True
    """
    from topos.nn.module import named_parameters

    subject = name or str(getattr(factory, "__name__", repr(factory)))

    def recorded() -> tuple[Network, Any, Symbol, Symbol]:
        tape = Tape(element)
        layer = factory(tape, *args, **kwargs)
        x = tape.input(input)
        out = layer(x)
        if not isinstance(out, Value):
            raise _Failed(f"calling the layer returned {type(out).__name__}, not a Value")
        if out.tape is not tape:
            raise _Failed("the layer's output records onto another tape")
        if out.index <= x.index:
            raise _Failed("the layer recorded nothing after its input")
        weights = Tensor(np.linspace(-1.0, 1.0, max(1, out.shape.volume)).reshape(tuple(out.shape)), element=element)
        loss = (out * tape.leaf(weights)).sum()
        output, target = out.symbol, loss.symbol
        return tape.seal(), layer, output, target

    def records() -> str:
        network, _, out, _ = recorded()
        shape = network.nodes_[network.index(out, "output")].shape
        return f"output {shape} recorded on the input's tape, {len(network.nodes_)} nodes"

    def named() -> str:
        network, layer, _, _ = recorded()
        pairs = [(str(path), symbol) for path, symbol in named_parameters(layer)]
        paths = [path for path, _ in pairs]
        _expect(all(paths), f"a parameter has an empty path: {paths}")
        _expect(len(set(paths)) == len(paths), f"paths repeat: {paths}")
        recorded_symbols = set(network.parameter_symbols())
        named_symbols = {symbol for _, symbol in pairs}
        unnamed = sorted(s.index for s in recorded_symbols - named_symbols)
        strays = sorted(path for path, s in pairs if s not in recorded_symbols)
        _expect(not unnamed, f"parameters recorded but not reported by visit: {['%' + str(i) for i in unnamed]}")
        _expect(not strays, f"paths naming something that is not a parameter of the recording: {strays}")
        return f"{len(paths)} parameters named: {', '.join(paths) or '(none)'}"

    def deterministic() -> str:
        first, _, out, _ = recorded()
        second, _, _, _ = recorded()
        _expect(first.describe() == second.describe(), "recording twice gave different describe() text")
        runs = [first.forward(first.parameters()).of(out) for _ in range(2)]
        _expect(_bits(runs[0]) == _bits(runs[1]), "two forward runs gave different bits")
        return "same describe() text and same bits twice"

    def gradient_property() -> str:
        network, layer, _, loss = recorded()
        parameters = network.parameters()
        field = network.forward(parameters).backward(loss)
        for path, symbol in named_parameters(layer):
            got = field.of(symbol)
            expected = parameters.of(symbol)
            _expect(got.shape == expected.shape, f"{path}: gradient {got.shape}, parameter {expected.shape}")
            values = got.numpy().astype(np.float64)
            _expect(bool(np.all(np.isfinite(values))), f"{path}: the gradient is not finite: {values.tolist()}")
            _expect(bool(np.any(values != 0.0)), f"{path}: the gradient is zero everywhere; the output ignores it")
        return "every named parameter has a finite, non-zero gradient of its shape"

    return _run(
        "layer",
        subject,
        [("records", records), ("named", named), ("deterministic", deterministic), ("gradient", gradient_property)],
    )
