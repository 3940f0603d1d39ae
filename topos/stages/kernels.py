"""Plan kernels: the binding table, and how a plan hands payloads to it.

Contract: ``KERNELS`` is :data:`topos.kernels.binding.KERNELS`, the one table binding each
opcode to its kernel (``Tensor`` computes through the same table, so a plan under
``Numerics.EXACT`` reproduces the interpreter bit for bit). :func:`raw` turns a tensor
into a plan payload.
"""

from __future__ import annotations

from topos.kernels.binding import KERNELS, Array, Kernel
from topos.tensor import Tensor

__all__ = ["KERNELS", "Kernel", "raw"]


def raw(payload: Tensor) -> Array | Tensor:
    """A tensor as a plan payload: its array, or the tensor itself for a selection."""
    return payload if payload.is_selection else payload.numpy()
