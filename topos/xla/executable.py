"""The executable: a topos plan or network compiled on the XLA road and run with tables.

Contract:
- :class:`XlaExecutable` is a sealed, translated backend for one plan (or the ancestor
  closure of a network's roots): ``forward(parameters, feeds)`` returns a
  :class:`~topos.state.Run` holding the results, the reading a numpy plan gives, so a
  training loop swaps one for the other in one line.
- It emits with :mod:`topos.stages.emission` (imported at module level: this is the top
  floor) and compiles through :func:`~topos.xla.module.compile_module`, so executables of
  one text share one compiled module and its cache.
- Parameters are checked by :meth:`~topos.state.Parameters.check` and feeds by
  :func:`~topos.state.check_feeds`, the checks the interpreter and plans run; an argument
  that still does not fit ``@main`` goes through the module's own check, which names it.
- ``devices`` above one shards the ``split`` inputs' axis 0 through the SPMD partitioner;
  ``sharding=`` (a :data:`~topos.stages.stablehlo.Sharding`: the FSDP policy
  :class:`~topos.stages.stablehlo.FullySharded`, or a stated one) lays the module out over
  its mesh instead (``docs/sharding.md``). Asking for more devices than the process has
  raises :class:`~topos.xla.module.XlaDeviceError`.

Example:
    >>> from topos import Tape
    >>> network, y = Tape.record(lambda t: (t.input([1.0, 2.0]) * 3.0).sum())
    >>> XlaExecutable.of_network(network, [y]).forward(network.parameters(), {}).of(y).scalar()
    9.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, final

import numpy as np

from topos.errors import FeedError, user_site
from topos.ir.graph import ancestors, module_arguments
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.numerics import Numerics
from topos.ir.shape import Shape
from topos.stages.emission import DataParallel, emission, emit_network
from topos.stages.stablehlo import Sharding
from topos.state import Feed, Parameters, Run, check_feeds
from topos.tensor import Tensor, TensorLike
from topos.xla.module import IEEE_COMPILER_OPTIONS, Array, XlaDeviceError, compile_module

if TYPE_CHECKING:
    from topos.stages.plan import Plan

__all__ = ["XlaExecutable"]


@final
class XlaExecutable:
    """A plan compiled by XLA: ``forward(parameters, feeds)`` returns the plan's results.

    Arguments are the plan's wanted parameters then its wanted inputs (recording order);
    results are the plan's results in declared order. Feeds are checked and converted by
    :func:`topos.state.check_feeds`, the check the interpreter and plans run; a fed array
    crosses as the array that check hands back. Unfed inputs take their recorded defaults.

    Example:
        >>> from topos import Tape
        >>> network, (w, y) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([1.0, 2.0])))
        >>> XlaExecutable.of_network(network, [y]).forward(network.parameters(), {}).of(y).scalar()
        5.0
    """

    __slots__ = (
        "_arguments", "_checked", "_fits", "_labels", "_parameter_slots", "_plan", "_readable", "_result_nodes",
        "_shapes", "compiled", "devices", "network", "results", "text",
    )  # fmt: skip

    compiler_options: ClassVar[Mapping[str, str]] = IEEE_COMPILER_OPTIONS
    """The XLA options every module of the road is compiled with (see ``IEEE_COMPILER_OPTIONS``);
    :func:`topos.optim.jitted.compiled` jits optimizer updates with them too."""

    def __init__(self, network: Network, text: str, results: Sequence[Symbol], arguments: Sequence[int], devices: int = 1) -> None:
        self.network = network
        self.text = text
        self.results = tuple(results)
        self._result_nodes = tuple(network.index(symbol) for symbol in self.results)
        readable = [False] * len(network)
        for index in self._result_nodes:
            readable[index] = True
        self._readable = tuple(readable)  # Run never writes it: every run shares this one
        self.devices = devices
        self._arguments = tuple(arguments)
        slots = []
        for index in self._arguments:
            slot = network.parameter_slot(index)
            slots.append(-1 if slot is None else slot)
        self._parameter_slots = tuple(slots)
        self._labels = tuple(network.describe_symbol(i) for i in self._arguments)
        self.compiled = compile_module(text, devices)
        # Settled once per executable, not per call: each argument's node, parameter slot,
        # whether it crosses as row indices, and the shape and dtype @main expects of it.
        expected = self.compiled.signature.inputs
        self._fits = len(expected) == len(self._arguments)
        self._plan = tuple(
            (index, slot, dtype.kind == "i", shape, dtype)
            for index, slot, (shape, dtype) in zip(self._arguments, self._parameter_slots, expected, strict=False)
        )
        # Results in the network's storage dtype are wrapped with their shapes as settled here.
        outputs = self.compiled.signature.outputs
        trusted = all(dtype == network.element.dtype for _, dtype in outputs)
        self._shapes = tuple(Shape(shape) for shape, _ in outputs) if trusted else None
        # The (lineage, symbols) of the last parameter table that passed Parameters.check: both
        # are immutable, so a table sharing them (every table an optimizer derives) passes again.
        self._checked: tuple[object, object] | None = None

    @staticmethod
    def of_plan(plan: Plan, devices: int = 1, split: Sequence[Symbol] = (), *, sharding: Sharding | None = None) -> XlaExecutable:
        """Emit ``plan`` (raises elected), compile it, and wrap it; ``split`` shards inputs' axis 0,
        or ``sharding`` (e.g. :class:`~topos.stages.stablehlo.FullySharded`) lays out the module
        over its mesh's devices."""
        sharding = _sharding(devices, split, sharding)
        text = emission(plan, sharding=sharding)
        devices = 1 if sharding is None else sharding.devices
        return XlaExecutable(plan.network, text, plan.results(), module_arguments(plan.network, plan.scheduled), devices)

    @staticmethod
    def of_network(
        network: Network, roots: Sequence[Symbol], devices: int = 1, split: Sequence[Symbol] = (), *, sharding: Sharding | None = None
    ) -> XlaExecutable:
        """The same for the ancestor closure of ``roots`` without a plan (no raises)."""
        sharding = _sharding(devices, split, sharding)
        text = emit_network(network, roots, sharding=sharding)
        devices = 1 if sharding is None else sharding.devices
        mask = ancestors(network, [network.index(s, "root") for s in roots])
        results: list[Symbol] = []
        for symbol in roots:
            if symbol not in results:
                results.append(symbol)
        return XlaExecutable(network, text, results, module_arguments(network, [i for i, m in enumerate(mask) if m]), devices)

    def arrays(self, parameters: Parameters, feeds: Mapping[Symbol, TensorLike] | None = None) -> list[Array]:
        """The argument arrays for one call, checked like the interpreter checks them."""
        return self._gather(parameters, feeds)[0]

    def _gather(self, parameters: Parameters, feeds: Mapping[Symbol, TensorLike] | None) -> tuple[list[Array], bool]:
        """The argument arrays, and whether each has the shape and dtype @main expects."""
        if not isinstance(parameters, Parameters):
            raise FeedError(f"parameters must be a Parameters table, got {type(parameters).__name__}")
        checked = self._checked
        if checked is None or checked[0] is not parameters.lineage or checked[1] is not parameters.symbols:
            parameters.check(self.network)
            self._checked = (parameters.lineage, parameters.symbols)
        fed = check_feeds(self.network, feeds) if feeds else {}
        payloads = parameters.payloads_
        sources = self.network.sources
        out: list[Array] = []
        fits = self._fits
        for position, (index, slot, rows, shape, dtype) in enumerate(self._plan):
            given = payloads[slot] if slot >= 0 else fed.get(index, sources[index])
            array = self._indices(position, index, given, dtype) if rows else _argument_array(given)
            if array.shape != shape or array.dtype != dtype:
                fits = False
            out.append(array)
        if len(out) < len(self._arguments):  # @main takes fewer: the rest cross unchecked, then fail
            for index, slot in zip(self._arguments[len(out) :], self._parameter_slots[len(out) :], strict=True):
                given = payloads[slot] if slot >= 0 else fed.get(index, sources[index])
                out.append(_argument_array(given))
        return out, fits

    def _indices(self, position: int, index: int, given: Feed, dtype: np.dtype[Any]) -> Array:
        """The row indices of a selection fed to an index argument (see ``index_argument``)."""
        recorded = self.network.sources[index]
        label = self._labels[position]
        if not isinstance(given, Tensor) or given.indices is None:
            shape = given.shape if isinstance(given, Tensor) else Shape(given.shape)
            raise FeedError(
                f"{label} crosses to XLA as row indices (argument %arg{position} of @main, "
                f"{dtype.name}[{shape[0] if shape.rank else 0}]): feed a selection "
                f"(Tensor.selection(indices, {recorded.shape[1]})), not a dense {shape} tensor "
                f"(called at {user_site()})"
            )
        if given.selection_one != recorded.selection_one:
            raise FeedError(
                f"{label} was recorded with selection value {recorded.selection_one!r} and the module "
                f"holds it; the feed marks its rows with {given.selection_one!r} (called at {user_site()})"
            )
        return given.indices.astype(dtype, copy=False)

    def __call__(self, parameters: Parameters, feeds: Mapping[Symbol, TensorLike] | None = None) -> list[Tensor]:
        """The results as tensors, in the plan's declared order."""
        element = self.network.element
        arrays, fits = self._gather(parameters, feeds)
        # A misfit goes through the module's own check, which names the argument and raises.
        outputs = self.compiled.run_trusted(arrays) if fits else self.compiled.run(arrays, self._labels)
        if self._shapes is None:
            return [Tensor._wrap(a, element) for a in outputs]
        return [Tensor._trusted(a, element, shape) for a, shape in zip(outputs, self._shapes, strict=True)]

    def forward(self, parameters: Parameters, feeds: Mapping[Symbol, TensorLike] | None = None) -> Run:
        """Run on XLA; a forward-only :class:`~topos.state.Run` where exactly the results are readable."""
        outputs = self(parameters, feeds)
        values: list[Tensor | None] = [None] * len(self.network)
        for index, value in zip(self._result_nodes, outputs, strict=True):
            values[index] = value
        return Run(self.network, values, Numerics.FAST, self._readable, "observed")

    def position_of(self, symbol: Symbol) -> int | None:
        """Where ``symbol`` (a parameter or an input) sits among the module's arguments;
        None when the module does not read it."""
        index = self.network.index(symbol)
        return self._arguments.index(index) if index in self._arguments else None

    def argument(self, symbol: Symbol, value: TensorLike) -> Array:
        """One feed converted to its argument array exactly as :meth:`arrays` converts it
        (an index argument takes the selection's rows), checked against the recorded input."""
        position = self.position_of(symbol)
        if position is None:
            raise FeedError(f"{self.network.describe_symbol(self.network.index(symbol))} is not an argument of this module (called at {user_site()})")
        index = self._arguments[position]
        given = check_feeds(self.network, {symbol: value})[index]
        if position < len(self._plan) and self._plan[position][2]:  # crosses as row indices
            return self._indices(position, index, given, self._plan[position][4])
        return _argument_array(given)

    def __repr__(self) -> str:
        return f"XlaExecutable({len(self._arguments)} arguments, {len(self.results)} results, devices={self.devices})"


def _sharding(devices: int, split: Sequence[Symbol], sharding: Sharding | None) -> Sharding | None:
    """The sharding a constructor emits with: ``sharding`` as given, else ``split`` over ``devices``."""
    if sharding is None:
        return DataParallel(devices, tuple(split)) if devices > 1 else None
    if devices != 1 or split:
        raise XlaDeviceError(f"give a sharding or devices and split, not both (the sharding spans {sharding.devices} devices)")
    return sharding


def _argument_array(given: Feed) -> Array:
    """A dense argument's array: a checked feed's own, a tensor's own, or a selection's
    one-hot built here."""
    if not isinstance(given, Tensor):
        return given
    return _dense_selection(given) if given.is_selection else given.numpy()


def _dense_selection(tensor: Tensor) -> Array:
    """A selection's one-hot for a dense argument, built here: ``Tensor.numpy()`` would keep
    it on the caller's tensor (count x vocab numbers left behind on every feed)."""
    indices = tensor.indices
    assert indices is not None
    dense = np.zeros(tensor.shape.axes, dtype=tensor.element.dtype)
    dense[np.arange(indices.size), indices] = tensor.selection_one
    return dense

