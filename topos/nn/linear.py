"""Affine layers: :class:`Linear`, and :class:`Mlp`, a stack of them with an activation between.

Layout: weights are ``[in, out]`` and act on ``[batch, in]``; an input of higher rank
``[..., in]`` is flattened to rows for the product and given its leading axes back.
Parameters are visited as ``weights`` then ``bias`` (under ``layers.<i>.`` in an
:class:`Mlp`). The contract every layer keeps is stated in :mod:`topos.nn.base`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from topos import InvalidArgumentError, Shape, ShapeMismatchError, Tape, Value
from topos.errors import user_site
from topos.ir.checks import integer
from topos.nn.activations import Activation
from topos.nn.base import Init, Payload, Weighted, check_input, check_tape, draw, shape_of
from topos.nn.module import Module, Visitor, bind, facade

__all__ = ["Linear", "Mlp"]


class Linear(Weighted):
    """An affine map ``x.matmul(weights) + bias.broadcast_along(0, batch)``.

    Example:
        >>> from topos import Tape, Tensor, f64
        >>> def build(t: Tape):
        ...     layer = Linear(t, [[1.0, 2.0], [3.0, 4.0]], [0.5, 0.5])
        ...     return layer(t.input([[1.0, 1.0]]))
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[4.5, 6.5]]
    """

    __slots__ = ()

    @facade
    def __init__(self, tape: Tape, weights: Payload, bias: Payload | None = None) -> None:
        check_tape(tape, "Linear")
        w = shape_of(weights, "Linear")
        if w.rank != 2:
            raise ShapeMismatchError(f"{user_site()}: Linear: weights must be [in, out]; got {w}")
        if bias is not None:
            b = shape_of(bias, "Linear")
            if b != Shape((w[1],)):
                raise ShapeMismatchError(
                    f"{user_site()}: Linear: bias must be [out] = [{w[1]}] for weights {w}; got {b}"
                )
        self._take(tape, weights, bias, "Linear", w)

    @classmethod
    def init(
        cls, tape: Tape, fan_in: int, fan_out: int, init: Init, bias: bool = True, layer: str = "Linear"
    ) -> Linear:
        """A layer whose weights and bias are drawn from ``init`` (weights first)."""
        check_tape(tape, layer)
        fan_in = integer(fan_in, f"{layer}: fan_in")
        fan_out = integer(fan_out, f"{layer}: fan_out")
        if fan_in < 1 or fan_out < 1:
            raise ShapeMismatchError(f"{user_site()}: {layer}: extents must be positive; got {fan_in} -> {fan_out}")
        weights = draw(init, Shape((fan_in, fan_out)), layer, "weights")
        drawn_bias = draw(init, Shape((fan_out,)), layer, "bias") if bias else None
        return cls(tape, weights, drawn_bias)

    @property
    def fan_in(self) -> int:
        return self._shape[0]

    @property
    def fan_out(self) -> int:
        return self._shape[1]

    @facade
    def __call__(self, x: Value) -> Value:
        """``[batch, in] -> [batch, out]``; a higher rank ``[..., in]`` is flattened to rows
        for the product and given its leading axes back (``[..., out]``)."""
        check_input("Linear", x, f"[..., {self.fan_in}] (rank >= 2)", lambda: x.rank >= 2 and x.shape[-1] == self.fan_in)
        lead = x.shape.axes[:-1]
        rows = x if x.rank == 2 else x.reshape((Shape(lead).volume, self.fan_in))
        out = rows.matmul(bind(x, self._weights))
        if self._bias is not None:
            out = out + bind(x, self._bias).broadcast_along(0, rows.shape[0])
        return out if x.rank == 2 else out.reshape((*lead, self.fan_out))

    def __repr__(self) -> str:
        return f"Linear({self.fan_in} -> {self.fan_out}, bias={self._bias is not None})"


class Mlp:
    """Linear stages with an activation between hidden stages; the output stage is affine.

    ``topology`` lists the widths, input first: ``[2, 16, 16, 1]`` is three Linear stages.
    Parameters are drawn from ``init`` in stage order (weights, then bias). Paths are
    ``layers.<i>.weights`` and ``layers.<i>.bias``.

    Example:
        >>> from topos import Tape
        >>> from topos.init import xavier
        >>> mlp = Mlp(Tape(), [2, 4, 1], Activation.TANH, xavier(seed=0))
        >>> len(mlp.layers)
        2
    """

    __slots__ = ("_activation", "_layers")

    @facade
    def __init__(self, tape: Tape, topology: Sequence[int], activation: Activation, init: Init) -> None:
        check_tape(tape, "Mlp")
        if isinstance(topology, (str, bytes)) or not isinstance(topology, Sequence):
            raise InvalidArgumentError(f"{user_site()}: Mlp: topology must be a sequence of widths, got {topology!r}")
        widths = list(topology)
        if len(widths) < 2 or any(
            not isinstance(w, (int, np.integer)) or isinstance(w, bool) or w < 1 for w in widths
        ):
            raise ShapeMismatchError(
                f"{user_site()}: Mlp: topology needs at least two positive widths; got {widths}"
            )
        if not isinstance(activation, Activation):
            raise InvalidArgumentError(f"{user_site()}: Mlp: activation must be an Activation, got {activation!r}")
        self._activation = activation
        self._layers = tuple(
            Linear.init(tape, a, b, init, layer=f"Mlp layers.{i}")
            for i, (a, b) in enumerate(itertools.pairwise(widths))
        )

    @property
    def layers(self) -> tuple[Linear, ...]:
        return self._layers

    @property
    def activation(self) -> Activation:
        return self._activation

    @facade
    def __call__(self, x: Value) -> Value:
        last = len(self._layers) - 1
        for i, layer in enumerate(self._layers):
            x = layer(x)
            if i < last:
                x = self._activation(x)
        return x

    def visit(self, visitor: Visitor) -> None:
        for i, layer in enumerate(self._layers):
            visitor.child("layers", _Indexed(i, layer))


class _Indexed:
    """Visits ``module`` under one child index (``layers.<i>``)."""

    __slots__ = ("index", "module")

    def __init__(self, index: int, module: Module) -> None:
        self.index = index
        self.module = module

    def visit(self, visitor: Visitor) -> None:
        visitor.child(self.index, self.module)
