"""Numerics postures: which kernels may serve a computation.

``EXACT`` demands the reference bits; ``FAST`` admits envelope kernels (BLAS products,
numpy's pairwise sums). The posture is a value carried by entries and plans and installed
for the duration of a run; host-side tensor arithmetic outside any run uses ``FAST``.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
from collections.abc import Iterator

__all__ = ["Fidelity", "Numerics", "current_numerics", "numerics_scope"]


class Fidelity(enum.Enum):
    """How faithful a kernel is to the reference bits."""

    BIT_IDENTICAL = "bit-identical"
    COMPOSED = "composed"
    ENVELOPE = "envelope"

    def meets(self, required: Fidelity) -> bool:
        """Bit-identical and composed kernels meet every demand; envelope meets envelope only."""
        if self is Fidelity.ENVELOPE:
            return required is Fidelity.ENVELOPE
        return True


class Numerics(enum.Enum):
    """A numerics posture.

    Example:
        >>> Numerics.EXACT.fidelity()
        <Fidelity.BIT_IDENTICAL: 'bit-identical'>
    """

    EXACT = "exact"
    FAST = "fast"

    def fidelity(self) -> Fidelity:
        return Fidelity.BIT_IDENTICAL if self is Numerics.EXACT else Fidelity.ENVELOPE

    @staticmethod
    @contextlib.contextmanager
    def exactly() -> Iterator[None]:
        """Run the enclosed host-side calls under ``EXACT``."""
        with numerics_scope(Numerics.EXACT):
            yield


_POSTURE: contextvars.ContextVar[Numerics] = contextvars.ContextVar(
    "topos_numerics", default=Numerics.FAST
)


def current_numerics() -> Numerics:
    return _POSTURE.get()


class numerics_scope:  # lower case: callers use it as the function it replaced
    """Install ``posture`` for the enclosed block (a class, not a generator: a plan enters
    one per run, and this costs a fraction)."""

    __slots__ = ("_posture", "_token")

    def __init__(self, posture: Numerics) -> None:
        self._posture = posture

    def __enter__(self) -> None:
        self._token = _POSTURE.set(self._posture)

    def __exit__(self, *exc: object) -> None:
        _POSTURE.reset(self._token)
