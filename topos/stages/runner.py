"""The one shape every forward reading shares: ``forward(parameters, feeds) -> Run``.

A :class:`~topos.ir.network.Network` (the oracle), a :class:`~topos.stages.plan.Plan` and
an :class:`~topos.xla.XlaExecutable` all satisfy :class:`Runner` structurally, so a
training loop written against ``Runner`` moves to another road by changing the line that
builds it and nothing else.

Example:
    >>> from topos import Runner, Tape
    >>> network, y = Tape.record(lambda t: (t.input([1.0, 2.0]) * 3.0).sum())
    >>> runner: Runner = network.entry(y).lower()
    >>> runner.forward(network.parameters(), {}).of(y).scalar()
    9.0
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from topos.ir.node import Symbol
    from topos.state import Parameters, Run
    from topos.tensor import TensorLike

__all__ = ["Runner"]


@runtime_checkable
class Runner(Protocol):
    """Anything that runs a recorded network forward and returns the :class:`~topos.state.Run` it read.

    ``feeds`` maps input symbols to values (unfed inputs take their recorded payloads);
    ``None`` feeds nothing.

    Example:
        >>> from topos import Runner, Tape, XlaExecutable
        >>> network, y = Tape.record(lambda t: (t.input([1.0, 2.0]) * 3.0).sum())
        >>> plan = network.entry(y).lower()
        >>> runner: Runner = plan                                  # numpy kernels
        >>> runner = XlaExecutable.of_plan(plan)                   # the same loop on XLA
        >>> runner.forward(network.parameters(), {}).of(y).scalar()
        9.0
    """

    def forward(self, parameters: Parameters, feeds: Mapping[Symbol, TensorLike] | None = None) -> Run:
        """Run forward on ``parameters`` and ``feeds``; the results are read from the Run."""
        ...
