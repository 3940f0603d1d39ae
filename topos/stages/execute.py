"""Plan execution: the typed steps a plan lowers to, and the two ways they run.

Contract:
- Lowering (:mod:`topos.stages.plan`) turns each scheduled position into one step:
  :class:`ParameterStep`, :class:`InputStep`, :class:`ConstantStep` (a recorded leaf or a
  value folded at lowering), :class:`PassStep` (an ``Add`` of a recorded zero under
  ``Numerics.FAST``), :class:`KernelStep` (one opcode's kernel closure), :class:`FusedStep`
  (an elected pattern's home kernel) or :class:`SkipStep` (an interior or named result of
  a fused group). Every step carries the positions released right after it.
- A step is the one source of its semantics, read two ways: :meth:`Step.run` performs it
  on the step loop's value list, :meth:`Step.source` writes the same action as one line of
  Python over locals ``v<position>``, calling the same objects (kernels, constants, home
  kernels). Both executors read parameters from ``P`` and inputs from ``I``, two mappings
  prepared once per run, and the buffers lent to kernel steps (``KernelStep.out``, passed
  as the kernel's last argument) from ``B``, the set the run borrows from the plan's
  :class:`~topos.kernels.arena.Arena` and returns when it succeeds.
- :class:`Program` holds the steps of one plan. Plans of at most ``STRAIGHT_LINE_LIMIT``
  steps run as one generated straight-line function whose releases are ``del``
  statements (so it frees exactly what the loop frees); larger ones run the step loop.
  Constants and passes write no line there: a position is read under the name holding its
  value (the constant the function binds, the passed value's local), and a local is
  deleted once every position holding it is released.
  The generated source depends only on the plan (no ids, no clock), is registered with
  :mod:`linecache` under ``<topos plan DIGEST>`` (the digest of the source, so the same
  plan has the same name in every process), and each line ends with a comment naming its
  node and the user's recording line, so a traceback through a plan shows where the
  failing step came from. Either executor adds that same text as a note to an exception
  raised by a step.
- :func:`execute` checks parameters, and feeds through :func:`topos.state.check_feeds` (the
  check every road runs; a fed array reaches the steps as it comes back from there), runs
  the program under the plan's numerics posture with floating-point warnings silenced, and
  turns a ``MemoryError`` into a :class:`~topos.errors.CapacityError` naming the plan's
  largest value. :func:`raw` is how a tensor becomes a step's payload.

Example:
    >>> from topos import Tape, Numerics
    >>> network, y = Tape.record(lambda t: (t.parameter([1.0, 2.0]) * 3.0).sum())
    >>> execute(network.entry(y).numerics(Numerics.EXACT).lower(), network.parameters(), {}).of(y).scalar()
    9.0
    >>> KernelStep(5, (3,), abs, (3, 4)).source({})
    'v5 = k5(v3, v4)'
"""

from __future__ import annotations

import copy
import hashlib
import linecache
import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Protocol, cast, final

import attrs
import numpy as np

from topos.errors import CapacityError, FeedError, ParametersError, SymbolError
from topos.ir.element import ElementType
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.numerics import numerics_scope
from topos.kernels.arena import Arena, Layout
from topos.kernels.binding import Array, Kernel
from topos.stages.fusion import PatternMatch
from topos.state import Feed, Parameters, Run, check_feeds, check_payload
from topos.tensor import Tensor, TensorLike

if TYPE_CHECKING:
    from topos.stages.plan import Plan

__all__ = [
    "STRAIGHT_LINE_LIMIT",
    "ConstantStep",
    "FusedStep",
    "InputStep",
    "KernelStep",
    "ParameterStep",
    "PassStep",
    "Program",
    "SkipStep",
    "Step",
    "execute",
    "raw",
]

Payload = Array | Tensor
"""A value inside a run: an array in the element's storage dtype, or a selection tensor."""

Values = list[Payload | None]
Sources = Mapping[int, Payload]
Buffers = tuple[Array, ...]

STRAIGHT_LINE_LIMIT: Final = 20_000
"""Plans of at most this many steps run as one generated function (larger ones loop)."""


class _Names(Protocol):
    def __setitem__(self, name: str, value: object) -> None: ...


def raw(payload: Tensor) -> Payload:
    """A tensor as a step's payload: its array, or the tensor itself for a selection (the
    kernels read its indices).

    Example:
        >>> from topos import Tensor
        >>> raw(Tensor([1.0, 2.0])).tolist(), raw(Tensor.selection([1], 3)).is_selection
        ([1.0, 2.0], True)
    """
    return payload if payload.is_selection else payload.numpy()


def _fed(feed: Feed) -> Payload:
    # A fed array is already what the steps read; only a fed tensor needs unwrapping.
    return raw(feed) if isinstance(feed, Tensor) else feed


def _dense(payload: Payload | None) -> Array:
    assert payload is not None
    return payload.numpy() if isinstance(payload, Tensor) else payload


def _locals(positions: Sequence[int], local: Mapping[int, str] | None = None) -> str:
    return ", ".join(local[p] if local and p in local else f"v{p}" for p in positions)


@attrs.frozen(slots=True)
class Step:
    """One scheduled position: what it writes (:meth:`writes`) and what it frees after."""

    index: int
    release: tuple[int, ...]

    def writes(self) -> tuple[int, ...]:
        """The positions this step defines."""
        return (self.index,)

    def run(self, values: Values, parameters: Sources, inputs: Sources, buffers: Buffers) -> None:
        """Perform the step on the loop's value list."""
        raise NotImplementedError(type(self).__name__)

    def source(self, names: _Names, local: dict[int, str] | None = None) -> str | None:
        """The step as one Python line (binding what it calls in ``names``), or None.

        Given ``local`` (the name holding each position's value where it is not ``v<position>``),
        a step that only names a value (a constant, a pass) records that name there instead of
        writing a line, and a step's operands are read under their names.
        """
        raise NotImplementedError(type(self).__name__)


@final
@attrs.frozen(slots=True)
class SkipStep(Step):
    """An interior or named result of an elected group: its root's step computes it."""

    def writes(self) -> tuple[int, ...]:
        return ()

    def run(self, values: Values, parameters: Sources, inputs: Sources, buffers: Buffers) -> None:
        return None

    def source(self, names: _Names, local: dict[int, str] | None = None) -> str | None:
        return None


@final
@attrs.frozen(slots=True)
class ParameterStep(Step):
    """Read the caller's parameter payload."""

    def run(self, values: Values, parameters: Sources, inputs: Sources, buffers: Buffers) -> None:
        values[self.index] = parameters[self.index]

    def source(self, names: _Names, local: dict[int, str] | None = None) -> str | None:
        return f"v{self.index} = P[{self.index}]"


@final
@attrs.frozen(slots=True)
class InputStep(Step):
    """Read the fed input (or the payload recorded with it)."""

    def run(self, values: Values, parameters: Sources, inputs: Sources, buffers: Buffers) -> None:
        values[self.index] = inputs[self.index]

    def source(self, names: _Names, local: dict[int, str] | None = None) -> str | None:
        return f"v{self.index} = I[{self.index}]"


@final
@attrs.frozen(slots=True)
class ConstantStep(Step):
    """A value settled at lowering: a recorded leaf, or one folded from constants alone."""

    value: Payload = attrs.field(eq=False)

    def run(self, values: Values, parameters: Sources, inputs: Sources, buffers: Buffers) -> None:
        values[self.index] = self.value

    def source(self, names: _Names, local: dict[int, str] | None = None) -> str | None:
        names[f"c{self.index}"] = self.value
        if local is not None:  # read where it is used, under the name the program binds
            local[self.index] = f"c{self.index}"
            return None
        return f"v{self.index} = c{self.index}"


@final
@attrs.frozen(slots=True)
class PassStep(Step):
    """Hand on another position's value unchanged."""

    other: int

    def run(self, values: Values, parameters: Sources, inputs: Sources, buffers: Buffers) -> None:
        values[self.index] = values[self.other]

    def source(self, names: _Names, local: dict[int, str] | None = None) -> str | None:
        if local is not None:  # one more name for the other's value
            local[self.index] = local.get(self.other, f"v{self.other}")
            return None
        return f"v{self.index} = v{self.other}"


@final
@attrs.frozen(slots=True)
class KernelStep(Step):
    """One opcode's kernel closure over its operands' payloads."""

    kernel: Kernel = attrs.field(eq=False)
    operands: tuple[int, ...]
    out: int | None = None
    """The run's buffer the kernel writes into (its argument ``out``), if the plan lent one."""
    scalar: bool = False
    """A rank-0 result: ufuncs hand back numpy scalars for rank-0 operands; payloads stay arrays."""

    def run(self, values: Values, parameters: Sources, inputs: Sources, buffers: Buffers) -> None:
        lent = {} if self.out is None else {"out": buffers[self.out]}
        value = self.kernel(*[values[j] for j in self.operands], **lent)
        values[self.index] = np.asarray(value) if self.scalar else value

    def source(self, names: _Names, local: dict[int, str] | None = None) -> str | None:
        names[f"k{self.index}"], names["asarray"] = self.kernel, np.asarray
        call = f"k{self.index}({_locals(self.operands, local)}{'' if self.out is None else f', out=b{self.out}'})"
        return f"v{self.index} = {f'asarray({call})' if self.scalar else call}"


@final
@attrs.frozen(slots=True)
class FusedStep(Step):
    """An elected pattern's home kernel: reads its inputs, writes its root and named results."""

    match: PatternMatch
    element: ElementType

    def writes(self) -> tuple[int, ...]:
        return self.match.outputs()

    def call(self, *payloads: Payload | None) -> tuple[Array, ...]:
        """The home kernel over the payloads of ``match.reads()``."""
        return self.match.home_kernel([_dense(p) for p in payloads], self.element)

    def run(self, values: Values, parameters: Sources, inputs: Sources, buffers: Buffers) -> None:
        results = self.call(*[values[j] for j in self.match.reads()])
        for position, value in zip(self.match.outputs(), results, strict=True):
            values[position] = value

    def source(self, names: _Names, local: dict[int, str] | None = None) -> str | None:
        names[f"f{self.index}"] = self.call
        return f"{_locals(self.match.outputs())}, = f{self.index}({_locals(self.match.reads(), local)})"


def _origin(network: Network, step: Step) -> str:
    """``%12 Add recorded at file:line`` (for a fused step, the kind too)."""
    node = network.nodes_[step.index]
    what = f"%{step.index} {node.name}"
    if isinstance(step, FusedStep):
        what += f" ({step.match.kind.value} of {len(step.match.nodes)} nodes)"
    # A site is a path and a line number; keep it on one line whatever the path holds.
    site = node.site.replace("\n", " ").replace("\r", " ")
    return f"{what} recorded at {site}"


_REGISTERED: dict[str, int] = {}
"""Live programs per linecache name (identical plans share one name and one entry)."""


def _register(filename: str, source: str) -> None:
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    _REGISTERED[filename] = _REGISTERED.get(filename, 0) + 1


def _unregister(filename: str) -> None:
    left = _REGISTERED.get(filename, 0) - 1
    if left > 0:
        _REGISTERED[filename] = left
        return
    _REGISTERED.pop(filename, None)
    linecache.cache.pop(filename, None)


ProgramFunction = Callable[[Sources, Sources, Buffers], tuple[Payload, ...]]


@final
class Program:
    """The steps of one plan and the executor that runs them (generated or looped).

    ``function`` is the generated straight-line function (None when the plan loops),
    ``filename`` its linecache name, ``source`` its text; ``arena`` lends each run the
    buffers of ``layout`` (see :mod:`topos.kernels.arena`), None when no step writes into one.
    """

    __slots__ = (
        "__weakref__", "_lines", "arena", "filename", "function", "inputs", "kept", "network", "parameters",
        "read", "recorded", "shapes", "size", "source", "steps",
    )  # fmt: skip

    def __init__(self, network: Network, steps: Sequence[Step], layout: Layout | None = None) -> None:
        self.steps: tuple[Step, ...] = tuple(steps)
        self.size = len(network)
        self.arena = Arena(layout) if layout is not None and layout.views else None
        # Settled once: what a run reads from the caller, and what it hands back.
        self.parameters = tuple((s.index, network.symbol(s.index)) for s in steps if isinstance(s, ParameterStep))
        self.inputs = tuple(s.index for s in steps if isinstance(s, InputStep))
        self.recorded: dict[int, Payload] = {i: raw(network.sources[i]) for i in self.inputs}
        released = {gone for step in steps for gone in step.release}
        self.kept = tuple(i for i in dict.fromkeys(i for step in steps for i in step.writes()) if i not in released)
        self.shapes = tuple(network.nodes_[i].shape for i in self.kept)
        # Origins are written from the network when a line or a note needs one: a string per
        # step, held for the plan's life, was about a twelfth of a large chain's peak memory.
        self.network = network
        self.function: ProgramFunction | None = None
        self.filename: str | None = None
        self.source: str | None = None
        self._lines: dict[int, int] = {}
        self.read: tuple[Parameters | None, dict[int, Payload]] = (None, {})
        if len(self.steps) <= STRAIGHT_LINE_LIMIT:
            self._generate()

    def _generate(self) -> None:
        names: dict[str, object] = {}
        lent = len(self.arena.layout.views) if self.arena is not None else 0
        body = [", ".join(f"b{i}" for i in range(lent)) + ", = B"] if lent else []
        # Constants and passes write no line: a position is read under the name holding its
        # value (a constant's global, the passed value's local), and a local is deleted once
        # every position holding it is released, where the loop drops its last reference.
        local: dict[int, str] = {}
        holding: Counter[str] = Counter()
        for position, step in enumerate(self.steps):
            line = step.source(names, local)
            if line is not None:
                body.append(f"{line}  # {_origin(self.network, step)}")
                # Line 1 is the def, so body line k is source line k + 1.
                self._lines[len(body) + 1] = position
            holding.update(local.setdefault(w, f"v{w}") for w in step.writes())
            holding.subtract(local[r] for r in step.release)
            # A local goes once no position holds it; a constant's global lives as long as its step.
            gone = dict.fromkeys(local[r] for r in step.release if local[r][0] == "v" and not holding[local[r]])
            if gone:
                body.append(f"del {', '.join(gone)}")
        lines = ["def program(P, I, B):", *(f"    {line}" for line in body)]
        lines.append("    return (" + "".join(f"{local[i]}, " for i in self.kept) + ")")
        source = "\n".join(lines) + "\n"
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        filename = f"<topos plan {digest}>"
        exec(compile(source, filename, "exec"), names)
        _register(filename, source)
        weakref.finalize(self, _unregister, filename)
        self.function = cast(ProgramFunction, names["program"])
        self.filename, self.source = filename, source

    def __call__(self, parameters: Sources, inputs: Sources) -> Values:
        """Run every step; the values the run keeps, by position (None where freed or unread)."""
        values: Values = [None] * self.size
        buffers = self.arena.borrow() if self.arena is not None else ()
        if self.function is not None:
            try:
                kept = self.function(parameters, inputs, buffers)
            except Exception as error:
                self._note(error, self._generated_step(error))
                raise
            for index, value in zip(self.kept, kept, strict=True):
                values[index] = value
        else:
            step: Step | None = None
            try:
                for step in self.steps:
                    step.run(values, parameters, inputs, buffers)
                    for gone in step.release:
                        values[gone] = None
            except Exception as error:
                # Steps are values with distinct positions, so index() finds the one that raised.
                self._note(error, None if step is None else self.steps.index(step))
                raise
        if self.arena is not None:
            self.arena.give_back(buffers)
        return values

    def looped(self) -> Program:
        """The same steps run by the step loop (what plans above the size limit do)."""
        twin = copy.copy(self)
        twin.function, twin.filename, twin.source, twin._lines, twin.read = None, None, None, {}, (None, {})
        return twin

    def _generated_step(self, error: BaseException) -> int | None:
        """The step whose generated line raised (the innermost frame in this program)."""
        line: int | None = None
        trace = error.__traceback__
        while trace is not None:
            if self.filename is not None and trace.tb_frame.f_code.co_filename == self.filename:
                line = trace.tb_lineno
            trace = trace.tb_next
        return None if line is None else self._lines.get(line)

    def _note(self, error: Exception, position: int | None) -> None:
        if position is not None and position < len(self.steps):
            error.add_note(f"in a topos plan step: {self.origin(position)}")

    def origin(self, position: int) -> str:
        """``%12 Add recorded at file:line``: the node and recording site of step ``position``."""
        return _origin(self.network, self.steps[position])


def _parameter_payloads(plan_: Plan, parameters: Parameters) -> dict[int, Payload]:
    network, (last, read) = plan_.network, plan_._program.read
    if last is parameters:  # a table is immutable: the same one reads the same again
        return read
    if not isinstance(parameters, Parameters):
        raise ParametersError(f"parameters must be a Parameters table, got {type(parameters).__name__}")
    if not parameters.lineage.related(network.lineage):
        raise ParametersError(
            f"these parameters ({len(parameters)} slots) belong to a different network than the plan's "
            f"{plan_.network!r}; pass the table of the network the plan was lowered from"
        )
    payloads: dict[int, Payload] = {}
    tensors, element, nodes = parameters.payloads_, network.element, network.nodes_
    for index, symbol in plan_._program.parameters:
        try:
            payload = tensors[parameters.slot(symbol)]
        except SymbolError:
            raise ParametersError(
                f"parameters are missing the slot {network.describe_symbol(index)} that this plan reads"
            ) from None
        if payload.element is not element or payload.shape.axes != nodes[index].shape.axes:
            check_payload(network, index, payload, "the plan")
        payloads[index] = raw(payload)
    plan_._program.read = (parameters, payloads)
    return payloads


def execute(plan_: Plan, parameters: Parameters, feeds: Mapping[Symbol, TensorLike]) -> Run:
    """Run ``plan_`` over ``parameters`` and ``feeds``; see the module contract."""
    network, program = plan_.network, plan_._program
    try:
        payloads = _parameter_payloads(plan_, parameters)
        # The steps work on raw payloads (arrays, or selection tensors); tensors are made once
        # at the end, for the values the run keeps.
        inputs = program.recorded
        if type(feeds) is not dict or feeds:  # an empty dict feeds nothing: there is nothing to check
            fed = check_feeds(network, feeds)
            for index in fed:
                if index not in plan_.scheduled_set:
                    raise FeedError(
                        f"this plan does not take the input {network.describe_symbol(index)}: none of its roots "
                        "or observes depends on it (declare a root that reads it, or drop the feed)"
                    )
            if fed:
                inputs = {i: _fed(fed[i]) if i in fed else payload for i, payload in inputs.items()}
        with numerics_scope(plan_.entry.numerics), np.errstate(all="ignore"):
            values = program(payloads, inputs)
    except MemoryError:
        # The generated straight-line program does not say which step failed; the largest
        # value the plan computes is the one to shrink (or to feed in smaller batches).
        largest = max(plan_.scheduled, key=lambda i: network.nodes_[i].shape.volume)
        node = network.nodes_[largest]
        raise CapacityError(
            f"a step of this plan ran out of memory; its largest value is "
            f"{network.describe_symbol(largest)} ({node.shape.volume} elements of {network.element})"
        ) from None
    kept: list[Tensor | None] = [None] * len(values)
    for i, shape in zip(program.kept, program.shapes, strict=True):
        v = values[i]
        if v is not None:
            kept[i] = v if isinstance(v, Tensor) else Tensor._trusted(np.asarray(v), network.element, shape)
    provenance = "training" if plan_.entry.backward else "observed"
    return Run(network, kept, plan_.entry.numerics, plan_.readable_, provenance)
