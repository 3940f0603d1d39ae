"""Layers: modules that record well-known formulas through the public surface.

Contract: a layer's constructor records its parameters (or inputs) on the given tape and
keeps only their symbols; calling the layer records its formula onto the tape of its input,
unfused, exactly as a user would write it by hand (the equivalence tests compare the spec
text byte for byte). Constructors check shapes before recording anything, so a refused
layer leaves the tape untouched; the error names the layer, the user's line and the shapes.
Facades choose no distributions, learning rates or float constants: initial payloads,
epsilons and masks come from the caller.

Layouts: :class:`Linear` weights are ``[in, out]`` and act on ``[batch, in]`` (or ``[..., in]``, flattened to rows); norms act
along the last axis; :class:`Embedding` is a ``[vocab, dim]`` table gathered by a one-hot
selection ``[count, vocab]``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from topos import (
    ElementType,
    InvalidArgumentError,
    Shape,
    ShapeMismatchError,
    Symbol,
    Tape,
    Tensor,
    ToposError,
    Value,
    f32,
)
from topos.errors import user_site
from topos.ir.checks import integer
from topos.nn.activations import Activation
from topos.nn.functional import (
    BatchNormOutput,
    batch_norm,
    batch_norm_training,
    conv2d,
    epsilon_of,
    max_pool,
)
from topos.nn.module import Module, Visitor, bind, facade

__all__ = [
    "BatchNorm",
    "Conv2d",
    "Dropout",
    "Embedding",
    "LayerNorm",
    "Linear",
    "MaxPool",
    "Mlp",
    "RmsNorm",
    "Sequential",
    "shape_of",
    "spread",
]

Payload = Any
"""A Tensor, a numpy array, nested lists or a number; or a recorded parameter Value to share."""

Init = Callable[[Shape], Tensor]


def shape_of(data: Payload, layer: str = "a layer") -> Shape:
    """The shape a payload (or a recorded value) will have once recorded."""
    if isinstance(data, (Tensor, Value)):
        return data.shape
    try:
        return Shape(tuple(int(a) for a in np.shape(data)))
    except (ToposError, TypeError, ValueError):
        raise ShapeMismatchError(
            f"{user_site()}: {layer}: impossible payload shape {list(np.shape(data))}"
        ) from None


def _check_tape(tape: Tape, layer: str) -> None:
    if not isinstance(tape, Tape):
        raise InvalidArgumentError(f"{user_site()}: {layer}: the first argument must be the Tape to record on, got {type(tape).__name__}")


def _parameter(tape: Tape, data: Payload, layer: str) -> Symbol:
    """Record ``data`` as a parameter, or reuse a recorded value (weight sharing)."""
    if isinstance(data, Value):
        if data.tape is not tape:
            raise InvalidArgumentError(f"{user_site()}: {layer}: a shared parameter must live on the layer's tape")
        return data.symbol
    return tape.parameter(data).symbol


def spread(value: Value, like: Shape) -> Value:
    """Broadcast a ``[D]`` value over the leading axes of ``like`` (``[..., D]``), one node per axis."""
    for axis in range(like.rank - value.rank):
        value = value.broadcast_along(axis, like[axis])
    return value


def _check_input(layer: str, x: Value, expected: str, ok: Callable[[], bool]) -> None:
    """``ok`` is asked only once ``x`` is known to be a Value (it reads x's shape)."""
    if not isinstance(x, Value):
        raise InvalidArgumentError(
            f"{user_site()}: {layer} takes a recorded Value {expected}, got {type(x).__name__}; "
            "record data first with tape.input(...) or tape.leaf(...)"
        )
    if not ok():
        raise ShapeMismatchError(f"{user_site()}: {layer} expects input {expected}; got %{x.index}{x.shape}")


def _drawn(init: Init, shape: Shape, layer: str, name: str) -> Tensor:
    """Draw ``shape`` from ``init`` and check the answer is a Tensor of exactly that shape."""
    if not callable(init):
        raise InvalidArgumentError(f"{user_site()}: {layer}: init must be callable (Shape -> Tensor), got {init!r}")
    drawn = init(shape)
    if not isinstance(drawn, Tensor):
        raise InvalidArgumentError(
            f"{user_site()}: {layer}: init returned {type(drawn).__name__} for {name} {shape}, not a Tensor"
        )
    if drawn.shape != shape:
        raise ShapeMismatchError(
            f"{user_site()}: {layer}: init returned shape {drawn.shape} for {name}, which was "
            f"requested as {shape} (an init must honour the shape it is given)"
        )
    return drawn


class Linear:
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

    __slots__ = ("_bias", "_shape", "_weights")

    @facade
    def __init__(self, tape: Tape, weights: Payload, bias: Payload | None = None) -> None:
        _check_tape(tape, "Linear")
        w = shape_of(weights, "Linear")
        if w.rank != 2:
            raise ShapeMismatchError(f"{user_site()}: Linear: weights must be [in, out]; got {w}")
        if bias is not None:
            b = shape_of(bias, "Linear")
            if b != Shape((w[1],)):
                raise ShapeMismatchError(
                    f"{user_site()}: Linear: bias must be [out] = [{w[1]}] for weights {w}; got {b}"
                )
        self._shape = w
        self._weights = _parameter(tape, weights, "Linear")
        self._bias = None if bias is None else _parameter(tape, bias, "Linear")

    @classmethod
    def init(
        cls, tape: Tape, fan_in: int, fan_out: int, init: Init, bias: bool = True, layer: str = "Linear"
    ) -> Linear:
        """A layer whose weights and bias are drawn from ``init`` (weights first)."""
        _check_tape(tape, layer)
        fan_in = integer(fan_in, f"{layer}: fan_in")
        fan_out = integer(fan_out, f"{layer}: fan_out")
        if fan_in < 1 or fan_out < 1:
            raise ShapeMismatchError(f"{user_site()}: {layer}: extents must be positive; got {fan_in} -> {fan_out}")
        weights = _drawn(init, Shape((fan_in, fan_out)), layer, "weights")
        drawn_bias = _drawn(init, Shape((fan_out,)), layer, "bias") if bias else None
        return cls(tape, weights, drawn_bias)

    @property
    def weights(self) -> Symbol:
        return self._weights

    @property
    def bias(self) -> Symbol | None:
        return self._bias

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
        _check_input("Linear", x, f"[..., {self.fan_in}] (rank >= 2)", lambda: x.rank >= 2 and x.shape[-1] == self.fan_in)
        lead = x.shape.axes[:-1]
        rows = x if x.rank == 2 else x.reshape((Shape(lead).volume, self.fan_in))
        out = rows.matmul(bind(x, self._weights))
        if self._bias is not None:
            out = out + bind(x, self._bias).broadcast_along(0, rows.shape[0])
        return out if x.rank == 2 else out.reshape((*lead, self.fan_out))

    def visit(self, visitor: Visitor) -> None:
        visitor.parameter("weights", self._weights)
        if self._bias is not None:
            visitor.parameter("bias", self._bias)

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
        _check_tape(tape, "Mlp")
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


Stage = Callable[[Value], Value]


class Sequential:
    """Stages applied in order; stage ``i``'s parameters are visited under ``<i>.``.

    A stage is any callable ``Value -> Value``: a module, an :class:`Activation`, a function.

    Example:
        >>> from topos import Tape
        >>> from topos.init import xavier
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
        _check_input("Sequential", x, "(any shape its first stage takes)", lambda: True)
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


class _ScaleShift:
    """The ``[width]`` scale and shift pair (and epsilon) LayerNorm and BatchNorm share."""

    __slots__ = ("_epsilon", "_scale", "_shift", "_width")

    def __init__(
        self, tape: Tape, scale: Payload, shift: Payload, epsilon: float, layer: str, axis: str
    ) -> None:
        _check_tape(tape, layer)
        s, h = shape_of(scale, layer), shape_of(shift, layer)
        if s.rank != 1 or h != s:
            raise ShapeMismatchError(f"{user_site()}: {layer}: scale and shift must both be [{axis}]; got {s} and {h}")
        self._width = s[0]
        self._epsilon = epsilon_of(epsilon, layer)
        self._scale = _parameter(tape, scale, layer)
        self._shift = _parameter(tape, shift, layer)

    @property
    def scale(self) -> Symbol:
        return self._scale

    @property
    def shift(self) -> Symbol:
        return self._shift

    @property
    def epsilon(self) -> float:
        return self._epsilon

    def visit(self, visitor: Visitor) -> None:
        visitor.parameter("scale", self._scale)
        visitor.parameter("shift", self._shift)


def _norm_width(tape: Tape, width: int, layer: str) -> int:
    _check_tape(tape, layer)
    width = integer(width, f"{layer}: width")
    if width < 1:
        raise ShapeMismatchError(f"{user_site()}: {layer}: the width must be positive; got {width}")
    return width


class LayerNorm(_ScaleShift):
    """Normalize along the last axis, then scale and shift (``[D]`` each).

    Records: mean_along, centered, biased variance (mean of squares of the centered value),
    ``sqrt(variance + epsilon)``, divide, times scale, plus shift.

    Example:
        >>> from topos import Tape, f64
        >>> def build(t: Tape):
        ...     norm = LayerNorm(t, [1.0, 1.0], [0.0, 0.0], epsilon=0.0)
        ...     return norm(t.input([[1.0, 3.0]]))
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[-1.0, 1.0]]
    """

    __slots__ = ()

    @facade
    def __init__(self, tape: Tape, scale: Payload, shift: Payload, epsilon: float) -> None:
        super().__init__(tape, scale, shift, epsilon, "LayerNorm", "D")

    @classmethod
    def init(cls, tape: Tape, width: int, epsilon: float, scale: float = 1.0, shift: float = 0.0) -> LayerNorm:
        """A layer over ``[..., width]`` whose scale starts at ``scale`` and shift at ``shift``.

        Example:
            >>> from topos import Tape
            >>> LayerNorm.init(Tape(), 4, epsilon=1e-5).epsilon
            1e-05
        """
        width = _norm_width(tape, width, "LayerNorm")
        return cls(tape, Tensor.filled((width,), scale, tape.element), Tensor.filled((width,), shift, tape.element), epsilon)

    @facade
    def __call__(self, x: Value) -> Value:
        d = self._width
        _check_input("LayerNorm", x, f"[..., {d}]", lambda: x.rank >= 1 and x.shape[-1] == d)
        axis = x.rank - 1
        mean = x.mean_along(axis)
        centered = x - mean.broadcast_along(axis, d)
        variance = (centered * centered).mean_along(axis)
        deviation = (variance + self._epsilon).sqrt()
        normalized = centered / deviation.broadcast_along(axis, d)
        return normalized * spread(bind(x, self._scale), x.shape) + spread(bind(x, self._shift), x.shape)


class RmsNorm:
    """``x / sqrt(mean(x²) + epsilon) * scale`` along the last axis (``scale`` is ``[D]``).

    Example:
        >>> from topos import Tape, f64
        >>> def build(t: Tape):
        ...     return RmsNorm(t, [1.0, 1.0], epsilon=0.0)(t.input([[3.0, 4.0]]))
        >>> network, y = Tape.record(build, element=f64)
        >>> [round(v, 6) for v in network.forward(network.parameters()).of(y).tolist()[0]]
        [0.848528, 1.131371]
    """

    __slots__ = ("_epsilon", "_scale", "_width")

    @facade
    def __init__(self, tape: Tape, scale: Payload, epsilon: float) -> None:
        _check_tape(tape, "RmsNorm")
        s = shape_of(scale, "RmsNorm")
        if s.rank != 1:
            raise ShapeMismatchError(f"{user_site()}: RmsNorm: scale must be [D]; got {s}")
        self._width = s[0]
        self._epsilon = epsilon_of(epsilon, "RmsNorm")
        self._scale = _parameter(tape, scale, "RmsNorm")

    @classmethod
    def init(cls, tape: Tape, width: int, epsilon: float, scale: float = 1.0) -> RmsNorm:
        """A layer over ``[..., width]`` whose scale starts at ``scale``.

        Example:
            >>> from topos import Tape
            >>> RmsNorm.init(Tape(), 4, epsilon=1e-6).width
            4
        """
        width = _norm_width(tape, width, "RmsNorm")
        return cls(tape, Tensor.filled((width,), scale, tape.element), epsilon)

    @property
    def width(self) -> int:
        return self._width

    @property
    def epsilon(self) -> float:
        return self._epsilon

    @property
    def scale(self) -> Symbol:
        return self._scale

    @facade
    def __call__(self, x: Value) -> Value:
        d = self._width
        _check_input("RmsNorm", x, f"[..., {d}]", lambda: x.rank >= 1 and x.shape[-1] == d)
        axis = x.rank - 1
        mean_square = (x * x).mean_along(axis)
        root = (mean_square + self._epsilon).sqrt()
        return x / root.broadcast_along(axis, d) * spread(bind(x, self._scale), x.shape)

    def visit(self, visitor: Visitor) -> None:
        visitor.parameter("scale", self._scale)


class Dropout:
    """Multiply by a mask *input* whose default is all ones: unfed, the layer is the identity.

    Training feeds a seeded mask (see :func:`topos.init.dropout`) through :meth:`feed`; an
    unfed run is inference. No randomness enters the graph.

    Example:
        >>> from topos import Tape, f64
        >>> from topos.init import dropout
        >>> tape = Tape(f64)
        >>> layer = Dropout(tape, (1, 4))
        >>> y = layer(tape.input([[1.0, 2.0, 3.0, 4.0]]))
        >>> network = tape.seal()
        >>> network.forward(network.parameters()).of(y.symbol).tolist()
        [[1.0, 2.0, 3.0, 4.0]]
        >>> feeds = layer.feed(dropout(seed=0, keep=0.5, element=f64)((1, 4)))
        >>> sorted(set(network.forward(network.parameters(), feeds).of(y.symbol).tolist()[0]) - {0.0}) != []
        True
    """

    __slots__ = ("_mask", "_shape")

    @facade
    def __init__(self, tape: Tape, shape: Sequence[int] | Shape) -> None:
        _check_tape(tape, "Dropout")
        try:
            extent = Shape.of(shape)
        except ToposError as error:
            raise ShapeMismatchError(f"{user_site()}: Dropout: impossible shape {shape!r}: {error.detail}") from None
        except (TypeError, ValueError) as error:
            raise ShapeMismatchError(f"{user_site()}: Dropout: impossible shape {shape!r}: {error}") from None
        if extent.volume < 1:
            raise ShapeMismatchError(f"{user_site()}: Dropout: impossible shape {extent}")
        self._shape = extent
        self._mask = tape.input(Tensor.ones(extent, tape.element)).symbol

    @property
    def mask(self) -> Symbol:
        """The mask input's symbol (feed it, or use :meth:`feed`)."""
        return self._mask

    @property
    def shape(self) -> Shape:
        return self._shape

    def feed(self, mask: Tensor) -> dict[Symbol, Tensor]:
        """``{mask: payload}`` for a run's feeds, after checking the mask's shape."""
        given: object = mask
        if isinstance(given, Value):
            raise InvalidArgumentError(f"{user_site()}: Dropout.feed takes a payload (a Tensor), not a recorded Value")
        got = shape_of(mask, "Dropout")
        if got != self._shape:
            raise ShapeMismatchError(
                f"{user_site()}: Dropout: a mask of shape {got} cannot feed a layer of shape {self._shape}"
            )
        return {self._mask: mask}

    @facade
    def __call__(self, x: Value) -> Value:
        _check_input("Dropout", x, str(self._shape), lambda: x.shape == self._shape)
        return x * bind(x, self._mask)

    def visit(self, visitor: Visitor) -> None:
        """The mask is an input, not a parameter: nothing to visit."""


class Embedding:
    """A ``[vocab, dim]`` table; ``embedding(selection)`` gathers rows by a one-hot selection.

    Feed the selection as ``Tensor.selection(indices, vocab)`` (or :meth:`select`), which is
    stored as indices, so a large vocabulary gathers by index. The table is visited as
    ``weights``; :attr:`table` exposes it for tying.

    Example:
        >>> from topos import Tape, Tensor, f64
        >>> def build(t: Tape):
        ...     embed = Embedding(t, [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
        ...     return embed(t.input(Tensor.selection([2, 0], 3, f64)))
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[4.0, 5.0], [0.0, 1.0]]
    """

    __slots__ = ("_shape", "_table")

    @facade
    def __init__(self, tape: Tape, table: Payload) -> None:
        _check_tape(tape, "Embedding")
        t = shape_of(table, "Embedding")
        if t.rank != 2:
            raise ShapeMismatchError(f"{user_site()}: Embedding: table must be [vocab, dim]; got {t}")
        self._shape = t
        self._table = _parameter(tape, table, "Embedding")

    @classmethod
    def init(cls, tape: Tape, vocab: int, dim: int, init: Init) -> Embedding:
        _check_tape(tape, "Embedding")
        vocab = integer(vocab, "Embedding: vocab")
        dim = integer(dim, "Embedding: dim")
        if vocab < 1 or dim < 1:
            raise ShapeMismatchError(f"{user_site()}: Embedding: extents must be positive; got [{vocab}, {dim}]")
        return cls(tape, _drawn(init, Shape((vocab, dim)), "Embedding", "weights"))

    @property
    def table(self) -> Symbol:
        """The ``[vocab, dim]`` weights parameter (share it to tie an output projection)."""
        return self._table

    @property
    def vocab(self) -> int:
        return self._shape[0]

    @property
    def dim(self) -> int:
        return self._shape[1]

    def select(self, indices: Sequence[int] | np.ndarray[Any, Any], element: ElementType = f32) -> Tensor:
        """A one-hot selection ``[len(indices), vocab]`` stored as indices (of the tape's element)."""
        return Tensor.selection(indices, self.vocab, element)

    @facade
    def __call__(self, selection: Value) -> Value:
        _check_input(
            "Embedding",
            selection,
            f"a selection [count, {self.vocab}]",
            lambda: selection.rank == 2 and selection.shape[1] == self.vocab,
        )
        return bind(selection, self._table).gather(selection)

    def visit(self, visitor: Visitor) -> None:
        visitor.parameter("weights", self._table)


class Conv2d:
    """2-D convolution with torch-shaped weights ``[F, C, kh, kw]`` and optional bias ``[F]``.

    Acts on ``[B, C, H, W]`` through :func:`topos.nn.functional.conv2d` (pad, unfold,
    permute, reshape, matmul: the idiom the pattern catalog fuses).

    Example:
        >>> import numpy as np
        >>> from topos import Tape
        >>> tape = Tape()
        >>> conv = Conv2d(tape, np.ones((2, 1, 2, 2)), np.zeros(2), stride=1, padding=0)
        >>> conv(tape.input(np.ones((1, 1, 3, 3)))).shape
        Shape([1, 2, 2, 2])
    """

    __slots__ = ("_bias", "_padding", "_shape", "_stride", "_weights")

    @facade
    def __init__(
        self, tape: Tape, weights: Payload, bias: Payload | None = None, stride: int = 1, padding: int = 0
    ) -> None:
        _check_tape(tape, "Conv2d")
        w = shape_of(weights, "Conv2d")
        if w.rank != 4:
            raise ShapeMismatchError(f"{user_site()}: Conv2d: weights must be [F, C, kh, kw]; got {w}")
        if bias is not None and shape_of(bias, "Conv2d") != Shape((w[0],)):
            raise ShapeMismatchError(
                f"{user_site()}: Conv2d: bias must be [F] = [{w[0]}] for weights {w}; got {shape_of(bias)}"
            )
        for name, value, least in (("stride", stride, 1), ("padding", padding, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise InvalidArgumentError(f"{user_site()}: Conv2d: {name} must be an integer >= {least}; got {value!r}")
        self._shape = w
        self._stride = stride
        self._padding = padding
        self._weights = _parameter(tape, weights, "Conv2d")
        self._bias = None if bias is None else _parameter(tape, bias, "Conv2d")

    @classmethod
    def init(
        cls, tape: Tape, channels: int, filters: int, size: int, init: Init, stride: int = 1, padding: int = 0
    ) -> Conv2d:
        """Weights ``[filters, channels, size, size]`` then bias ``[filters]`` drawn from ``init``."""
        _check_tape(tape, "Conv2d")
        channels = integer(channels, "Conv2d: channels")
        filters = integer(filters, "Conv2d: filters")
        size = integer(size, "Conv2d: size")
        if min(channels, filters, size) < 1:
            raise ShapeMismatchError(
                f"{user_site()}: Conv2d: extents must be positive; got channels={channels} filters={filters} size={size}"
            )
        weights = _drawn(init, Shape((filters, channels, size, size)), "Conv2d", "weights")
        return cls(tape, weights, _drawn(init, Shape((filters,)), "Conv2d", "bias"), stride, padding)

    @property
    def weights(self) -> Symbol:
        return self._weights

    @property
    def bias(self) -> Symbol | None:
        return self._bias

    @facade
    def __call__(self, x: Value) -> Value:
        c = self._shape[1]
        _check_input("Conv2d", x, f"[batch, {c}, height, width]", lambda: x.rank == 4 and x.shape[1] == c)
        bias = None if self._bias is None else bind(x, self._bias)
        return conv2d(x, bind(x, self._weights), bias, self._stride, self._padding)

    def visit(self, visitor: Visitor) -> None:
        visitor.parameter("weights", self._weights)
        if self._bias is not None:
            visitor.parameter("bias", self._bias)


class MaxPool:
    """Max over ``size x size`` windows every ``stride`` (default ``size``); no padding.

    Ties go to the earliest lane of a window (row-major). Holds no parameters.

    Example:
        >>> import numpy as np
        >>> from topos import Tape
        >>> tape = Tape()
        >>> MaxPool(2)(tape.input(np.zeros((1, 1, 4, 4)))).shape
        Shape([1, 1, 2, 2])
    """

    __slots__ = ("_size", "_stride")

    def __init__(self, size: int, stride: int | None = None) -> None:
        step = size if stride is None else stride
        if (
            not isinstance(size, int)
            or isinstance(size, bool)
            or size < 2
            or not isinstance(step, int)
            or isinstance(step, bool)
            or step < 1
        ):
            raise InvalidArgumentError(
                f"{user_site()}: MaxPool: size must be an integer >= 2 and stride >= 1; got size={size!r} stride={stride!r}"
            )
        self._size = size
        self._stride = step

    @facade
    def __call__(self, x: Value) -> Value:
        _check_input("MaxPool", x, "[B, C, H, W]", lambda: x.rank == 4)
        return max_pool(x, self._size, self._stride)

    def visit(self, visitor: Visitor) -> None:
        """No parameters."""


class BatchNorm(_ScaleShift):
    """Batch normalization of ``[N, F]`` with scale and shift ``[F]``.

    Calling the layer records the training form and returns its output;
    :meth:`express` also returns the batch mean and biased variance, readable after a run,
    so the caller can keep running averages (they never live in the graph);
    :meth:`express_with` records the inference form over statistics the caller supplies
    (typically inputs fed with those running averages).

    Example:
        >>> import numpy as np
        >>> from topos import Tape, f64
        >>> tape = Tape(f64)
        >>> norm = BatchNorm(tape, np.ones(2), np.zeros(2), epsilon=1e-5)
        >>> out = norm.express(tape.input(np.array([[1.0, 2.0], [3.0, 6.0]])))
        >>> network = tape.seal()
        >>> network.forward(network.parameters()).of(out.mean.symbol).tolist()
        [2.0, 4.0]
    """

    __slots__ = ()

    @facade
    def __init__(self, tape: Tape, scale: Payload, shift: Payload, epsilon: float) -> None:
        super().__init__(tape, scale, shift, epsilon, "BatchNorm", "F")

    @classmethod
    def init(cls, tape: Tape, width: int, epsilon: float, scale: float = 1.0, shift: float = 0.0) -> BatchNorm:
        """A layer over ``[batch, width]`` whose scale starts at ``scale`` and shift at ``shift``."""
        width = _norm_width(tape, width, "BatchNorm")
        return cls(tape, Tensor.filled((width,), scale, tape.element), Tensor.filled((width,), shift, tape.element), epsilon)

    def _check(self, x: Value) -> None:
        f = self._width
        _check_input("BatchNorm", x, f"[batch, {f}]", lambda: x.rank == 2 and x.shape[1] == f)

    @facade
    def express(self, x: Value) -> BatchNormOutput:
        """Training form: output, batch mean and biased batch variance."""
        self._check(x)
        return batch_norm_training(x, bind(x, self._scale), bind(x, self._shift), self._epsilon)

    @facade
    def express_with(self, x: Value, mean: Value, variance: Value) -> Value:
        """Inference form over supplied ``mean`` and ``variance`` (``[F]`` each)."""
        self._check(x)
        return batch_norm(x, bind(x, self._scale), bind(x, self._shift), self._epsilon, mean, variance)

    @facade
    def __call__(self, x: Value) -> Value:
        return self.express(x).output

