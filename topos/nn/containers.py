"""Containers: :class:`Sequential` applies its stages in order.

A stage is any callable ``Value -> Value``; a stage's parameters are visited under its
position (``<i>.``). Nothing is recorded until the container is called.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import overload

from topos import InvalidArgumentError, Value
from topos.errors import user_site
from topos.nn.base import check_input
from topos.nn.module import Visitor, facade

__all__ = ["Sequential"]


Stage = Callable[[Value], Value]


class Sequential:
    """Stages applied in order; stage ``i``'s parameters are visited under ``<i>.``.

    A stage is any callable ``Value -> Value``: a module, an :class:`~topos.nn.Activation`, a function.

    Example:
        >>> from topos import Tape
        >>> from topos.init import xavier
        >>> from topos.nn import Activation, Linear
        >>> t = Tape()
        >>> model = Sequential(Linear.init(t, 3, 4, xavier(0)), Activation.RELU).then(Linear.init(t, 4, 2, xavier(1)))
        >>> len(model)
        3
    """

    __slots__ = ("_stages",)

    def __init__(self, *stages: Stage) -> None:
        for stage in stages:
            if not callable(stage):
                raise InvalidArgumentError(f"{user_site()}: Sequential: stage {stage!r} is not callable")
        self._stages: tuple[Stage, ...] = tuple(stages)

    def then(self, stage: Stage) -> Sequential:
        """A longer sequence (this one is left unchanged)."""
        return Sequential(*self._stages, stage)

    def __len__(self) -> int:
        return len(self._stages)

    def __iter__(self) -> Iterator[Stage]:
        return iter(self._stages)

    @overload
    def __getitem__(self, index: int) -> Stage: ...
    @overload
    def __getitem__(self, index: slice) -> Sequential: ...
    def __getitem__(self, index: int | slice) -> Stage | Sequential:
        if isinstance(index, slice):
            return Sequential(*self._stages[index])
        return self._stages[index]

    @facade
    def __call__(self, x: Value) -> Value:
        check_input("Sequential", x, "(any shape its first stage takes)", lambda: True)
        for i, stage in enumerate(self._stages):
            x = stage(x)
            if not isinstance(x, Value):
                raise InvalidArgumentError(
                    f"{user_site()}: Sequential: stage {i} ({stage!r}) returned {type(x).__name__}, not a Value"
                )
        return x

    def visit(self, visitor: Visitor) -> None:
        for i, stage in enumerate(self._stages):
            visitor.child(i, stage)
