"""Activations: closed, stateless alternatives, recorded through the public surface.

Contract: each activation records exactly the nodes its :class:`~topos.Value` method
records (``tanh`` one Map, ``relu`` a maximum against a recorded zero, ``gelu`` the exact erf
form or the tanh approximation, ``silu`` x / (1 + exp(-x))), so a hand-written formula and the
facade produce the same spec text. :class:`Activation` is the enum form that
:class:`~topos.nn.Mlp` takes; it is a module without parameters.
"""

from __future__ import annotations

import enum
import math

from topos import InvalidArgumentError, Value
from topos.errors import user_site
from topos.nn.module import facade

__all__ = ["Activation", "gelu", "relu", "silu", "tanh"]


def _value(x: object, what: str) -> None:
    if not isinstance(x, Value):
        raise InvalidArgumentError(f"{user_site()}: {what} takes a recorded Value, got {type(x).__name__}")


@facade
def tanh(x: Value) -> Value:
    """Hyperbolic tangent (one node)."""
    _value(x, "tanh")
    return x.tanh()


@facade
def relu(x: Value) -> Value:
    """``maximum(x, 0)``; the derivative at 0 follows the Maximum rule of the core."""
    _value(x, "relu")
    return x.relu()


@facade
def gelu(x: Value, approximate: bool = False) -> Value:
    """GELU: exact ``x * (1 + erf(x / sqrt 2)) / 2``, or with ``approximate`` the tanh form."""
    _value(x, "gelu")
    return x.gelu(approximate=approximate)


@facade
def silu(x: Value) -> Value:
    """SiLU (swish): ``x * sigmoid(x)`` written as ``x / (1 + exp(-x))``."""
    _value(x, "silu")
    return x.silu()


class Activation(enum.Enum):
    """An activation as a value: ``Activation.TANH(x)`` records it.

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: Activation.RELU(t.input([-1.0, 2.0])))
        >>> network.forward(network.parameters()).of(y).tolist()
        [0.0, 2.0]
    """

    TANH = "tanh"
    RELU = "relu"
    GELU = "gelu"
    GELU_TANH = "gelu_tanh"
    SILU = "silu"

    def __call__(self, x: Value) -> Value:
        return self.express(x)

    @facade
    def express(self, x: Value) -> Value:
        if not isinstance(x, Value):
            raise InvalidArgumentError(
                f"{user_site()}: Activation.{self.name} takes a recorded Value, got {type(x).__name__}"
            )
        if self is Activation.TANH:
            return tanh(x)
        if self is Activation.RELU:
            return relu(x)
        if self is Activation.GELU:
            return gelu(x)
        if self is Activation.GELU_TANH:
            return gelu(x, approximate=True)
        return silu(x)

    def gain(self) -> float:
        """The usual init gain: 5/3 for tanh; sqrt 2 for relu and its smooth cousins."""
        if self is Activation.TANH:
            return 5.0 / 3.0
        return math.sqrt(2.0)

    def visit(self, visitor: object) -> None:
        """An activation holds no parameters."""
