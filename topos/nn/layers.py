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
from typing import Any, NamedTuple, overload

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
    avg_pool2d,
    batch_norm,
    batch_norm2d,
    batch_norm2d_training,
    batch_norm_training,
    conv1d,
    conv2d,
    conv_transpose2d,
    epsilon_of,
    group_norm,
    layer_norm,
    max_pool,
    running_average,
)
from topos.nn.module import Module, Visitor, bind, facade

__all__ = [
    "AvgPool2d",
    "BatchNorm",
    "BatchNorm2d",
    "BatchNorm2dStep",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "Dropout",
    "Embedding",
    "GroupNorm",
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


class _Weighted:
    """What every weighted layer shares: ``weights``, an optional ``bias``, and visiting them
    under those names (weights first)."""

    __slots__ = ("_bias", "_shape", "_weights")

    _bias: Symbol | None
    _shape: Shape
    _weights: Symbol

    def _take(self, tape: Tape, weights: Payload, bias: Payload | None, layer: str, shape: Shape) -> None:
        self._shape = shape
        self._weights = _parameter(tape, weights, layer)
        self._bias = None if bias is None else _parameter(tape, bias, layer)

    @property
    def weights(self) -> Symbol:
        return self._weights

    @property
    def bias(self) -> Symbol | None:
        return self._bias

    def visit(self, visitor: Visitor) -> None:
        visitor.parameter("weights", self._weights)
        if self._bias is not None:
            visitor.parameter("bias", self._bias)


class Linear(_Weighted):
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
        self._take(tape, weights, bias, "Linear", w)

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

    __slots__ = ("_epsilon", "_normalized", "_scale", "_shift", "_width")

    def __init__(
        self, tape: Tape, scale: Payload, shift: Payload, epsilon: float, layer: str, axis: str, trailing: bool = False
    ) -> None:
        _check_tape(tape, layer)
        s, h = shape_of(scale, layer), shape_of(shift, layer)
        if s.rank < 1 or (s.rank != 1 and not trailing) or h != s:
            raise ShapeMismatchError(f"{user_site()}: {layer}: scale and shift must both be [{axis}]; got {s} and {h}")
        self._width = s[0]
        self._normalized = s
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
    ``sqrt(variance + epsilon)``, divide, times scale, plus shift. Scale and shift of rank
    ``k`` > 1 (PyTorch's ``normalized_shape``) normalize over the last ``k`` axes together,
    recorded by :func:`topos.nn.functional.layer_norm`.

    Example:
        >>> from topos import Tape, f64
        >>> def build(t: Tape):
        ...     norm = LayerNorm(t, [1.0, 1.0], [0.0, 0.0], epsilon=0.0)
        ...     return norm(t.input([[1.0, 3.0]]))
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[-1.0, 1.0]]
        >>> def over_two_axes(t: Tape):
        ...     norm = LayerNorm.init(t, (2, 2), epsilon=0.0)
        ...     return norm(t.input([[[1.0, 1.0], [3.0, 3.0]]]))
        >>> network, y = Tape.record(over_two_axes, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[[-1.0, -1.0], [1.0, 1.0]]]
    """

    __slots__ = ()

    @facade
    def __init__(self, tape: Tape, scale: Payload, shift: Payload, epsilon: float) -> None:
        super().__init__(tape, scale, shift, epsilon, "LayerNorm", "D", trailing=True)

    @classmethod
    def init(
        cls, tape: Tape, width: int | Sequence[int], epsilon: float, scale: float = 1.0, shift: float = 0.0
    ) -> LayerNorm:
        """A layer over ``[..., width]`` (or the trailing axes ``width`` lists) whose scale
        starts at ``scale`` and shift at ``shift``.

        Example:
            >>> from topos import Tape
            >>> LayerNorm.init(Tape(), 4, epsilon=1e-5).epsilon
            1e-05
            >>> LayerNorm.init(Tape(), (3, 4), epsilon=1e-5).normalized_shape
            Shape([3, 4])
        """
        if isinstance(width, Sequence):
            _check_tape(tape, "LayerNorm")
            extents = tuple(_norm_width(tape, w, "LayerNorm") for w in width)
            if not extents:
                raise ShapeMismatchError(f"{user_site()}: LayerNorm: the normalized shape needs at least one axis; got {width!r}")
        else:
            extents = (_norm_width(tape, width, "LayerNorm"),)
        return cls(tape, Tensor.filled(extents, scale, tape.element), Tensor.filled(extents, shift, tape.element), epsilon)

    @property
    def normalized_shape(self) -> Shape:
        """The trailing axes normalized together (PyTorch's ``normalized_shape``)."""
        return self._normalized

    @facade
    def __call__(self, x: Value) -> Value:
        if self._normalized.rank > 1:
            trailing = self._normalized
            _check_input(
                "LayerNorm",
                x,
                f"[..., {', '.join(map(str, trailing.axes))}]",
                lambda: x.rank >= trailing.rank and x.shape.axes[x.rank - trailing.rank :] == trailing.axes,
            )
            return layer_norm(x, bind(x, self._scale), bind(x, self._shift), self._epsilon)
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


class Conv2d(_Weighted):
    """2-D convolution with torch-shaped weights ``[F, C / groups, kh, kw]`` and optional bias ``[F]``.

    Acts on ``[B, C, H, W]`` through :func:`topos.nn.functional.conv2d` (pad, unfold,
    permute, reshape, matmul: the idiom the pattern catalog fuses). ``stride``, ``padding``
    and ``dilation`` take an int or an ``(h, w)`` pair; ``groups`` must divide ``F`` (and
    the input's ``C``, checked at the call).

    Example:
        >>> import numpy as np
        >>> from topos import Tape
        >>> tape = Tape()
        >>> conv = Conv2d(tape, np.ones((2, 1, 2, 2)), np.zeros(2), stride=1, padding=0)
        >>> conv(tape.input(np.ones((1, 1, 3, 3)))).shape
        Shape([1, 2, 2, 2])
        >>> Conv2d(tape, np.ones((2, 1, 3, 3)), stride=(2, 1), padding=(1, 0))(tape.input(np.ones((1, 1, 5, 5)))).shape
        Shape([1, 2, 3, 3])
    """

    __slots__ = ("_dilation", "_groups", "_padding", "_stride")

    @facade
    def __init__(
        self,
        tape: Tape,
        weights: Payload,
        bias: Payload | None = None,
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] = 0,
        dilation: int | tuple[int, int] = 1,
        groups: int = 1,
    ) -> None:
        _check_tape(tape, "Conv2d")
        w = shape_of(weights, "Conv2d")
        if w.rank != 4:
            raise ShapeMismatchError(f"{user_site()}: Conv2d: weights must be [F, C / groups, kh, kw]; got {w}")
        _check_bias("Conv2d", bias, w[0], w)
        self._stride = _counts("Conv2d", "stride", stride, 1)
        self._padding = _counts("Conv2d", "padding", padding, 0)
        self._dilation = _counts("Conv2d", "dilation", dilation, 1)
        self._groups = _count("Conv2d", "groups", groups, 1)
        if w[0] % self._groups:
            raise ShapeMismatchError(f"{user_site()}: Conv2d: groups={groups} must divide the filters F={w[0]} of weights {w}")
        self._take(tape, weights, bias, "Conv2d", w)

    @classmethod
    def init(
        cls,
        tape: Tape,
        channels: int,
        filters: int,
        size: int,
        init: Init,
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] = 0,
        dilation: int | tuple[int, int] = 1,
        groups: int = 1,
    ) -> Conv2d:
        """Weights ``[filters, channels / groups, size, size]`` then bias ``[filters]`` drawn from ``init``.

        Example:
            >>> from topos import Tape
            >>> from topos.init import xavier
            >>> Conv2d.init(Tape(), 4, 6, 3, xavier(0), groups=2).channels
            4
        """
        _check_tape(tape, "Conv2d")
        channels = integer(channels, "Conv2d: channels")
        filters = integer(filters, "Conv2d: filters")
        size = integer(size, "Conv2d: size")
        if min(channels, filters, size) < 1:
            raise ShapeMismatchError(
                f"{user_site()}: Conv2d: extents must be positive; got channels={channels} filters={filters} size={size}"
            )
        groups = _count("Conv2d", "groups", groups, 1)
        if channels % groups:
            raise ShapeMismatchError(f"{user_site()}: Conv2d: groups={groups} must divide the channels {channels}")
        weights = _drawn(init, Shape((filters, channels // groups, size, size)), "Conv2d", "weights")
        bias = _drawn(init, Shape((filters,)), "Conv2d", "bias")
        return cls(tape, weights, bias, stride, padding, dilation, groups)

    @property
    def channels(self) -> int:
        """The input channels ``C`` the layer takes."""
        return self._shape[1] * self._groups

    @facade
    def __call__(self, x: Value) -> Value:
        c = self.channels
        _check_input("Conv2d", x, f"[batch, {c}, height, width]", lambda: x.rank == 4 and x.shape[1] == c)
        bias = None if self._bias is None else bind(x, self._bias)
        return conv2d(x, bind(x, self._weights), bias, self._stride, self._padding, self._dilation, self._groups)


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



def _count(layer: str, name: str, value: object, least: int) -> int:
    """An integer option of a layer (not a bool), at least ``least``."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)) or value < least:
        raise InvalidArgumentError(f"{user_site()}: {layer}: {name} must be an integer >= {least}; got {value!r}")
    return int(value)


def _counts(layer: str, name: str, value: object, least: int) -> tuple[int, int]:
    """An int or a pair of ints, each at least ``least``, as a pair."""
    if isinstance(value, tuple):
        if len(value) != 2:
            raise InvalidArgumentError(f"{user_site()}: {layer}: {name} must be an int or a pair of ints; got {value!r}")
        return _count(layer, name, value[0], least), _count(layer, name, value[1], least)
    single = _count(layer, name, value, least)
    return single, single


def _check_bias(layer: str, bias: Payload | None, filters: int, weights: Shape) -> None:
    if bias is not None and shape_of(bias, layer) != Shape((filters,)):
        raise ShapeMismatchError(
            f"{user_site()}: {layer}: bias must be [F] = [{filters}] for weights {weights}; got {shape_of(bias, layer)}"
        )


def _flag(layer: str, name: str, value: object) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{user_site()}: {layer}: {name} must be True or False; got {value!r}")
    return bool(value)


class Conv1d(_Weighted):
    """1-D convolution with torch-shaped weights ``[F, C / groups, k]`` and optional bias ``[F]``.

    Acts on ``[B, C, L]`` through :func:`topos.nn.functional.conv1d`. ``padding`` is an int or
    ``(left, right)`` zeros; ``groups`` must divide ``F`` (and the input's ``C``, checked at the call).

    Example:
        >>> import numpy as np
        >>> from topos import Tape, f64
        >>> def build(t: Tape):
        ...     conv = Conv1d(t, np.ones((1, 1, 2)), np.zeros(1), padding=(1, 0))
        ...     return conv(t.input(np.arange(3.0).reshape(1, 1, 3)))
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[[0.0, 1.0, 3.0]]]
    """

    __slots__ = ("_dilation", "_groups", "_padding", "_stride")

    @facade
    def __init__(
        self,
        tape: Tape,
        weights: Payload,
        bias: Payload | None = None,
        stride: int = 1,
        padding: int | tuple[int, int] = 0,
        dilation: int = 1,
        groups: int = 1,
    ) -> None:
        _check_tape(tape, "Conv1d")
        w = shape_of(weights, "Conv1d")
        if w.rank != 3:
            raise ShapeMismatchError(f"{user_site()}: Conv1d: weights must be [F, C / groups, k]; got {w}")
        self._stride = _count("Conv1d", "stride", stride, 1)
        self._padding = _counts("Conv1d", "padding", padding, 0)
        self._dilation = _count("Conv1d", "dilation", dilation, 1)
        self._groups = _count("Conv1d", "groups", groups, 1)
        if w[0] % self._groups:
            raise ShapeMismatchError(f"{user_site()}: Conv1d: groups={groups} must divide the filters F={w[0]} of weights {w}")
        _check_bias("Conv1d", bias, w[0], w)
        self._take(tape, weights, bias, "Conv1d", w)

    @classmethod
    def init(
        cls,
        tape: Tape,
        channels: int,
        filters: int,
        size: int,
        init: Init,
        stride: int = 1,
        padding: int | tuple[int, int] = 0,
        dilation: int = 1,
        groups: int = 1,
    ) -> Conv1d:
        """Weights ``[filters, channels / groups, size]`` then bias ``[filters]`` drawn from ``init``.

        Example:
            >>> from topos import Tape
            >>> from topos.init import xavier
            >>> Conv1d.init(Tape(), 4, 6, 3, xavier(0), groups=2).channels
            4
        """
        _check_tape(tape, "Conv1d")
        channels = _count("Conv1d", "channels", channels, 1)
        filters = _count("Conv1d", "filters", filters, 1)
        size = _count("Conv1d", "size", size, 1)
        groups = _count("Conv1d", "groups", groups, 1)
        if channels % groups:
            raise ShapeMismatchError(f"{user_site()}: Conv1d: groups={groups} must divide the channels {channels}")
        weights = _drawn(init, Shape((filters, channels // groups, size)), "Conv1d", "weights")
        bias = _drawn(init, Shape((filters,)), "Conv1d", "bias")
        return cls(tape, weights, bias, stride, padding, dilation, groups)

    @property
    def channels(self) -> int:
        """The input channels ``C`` the layer takes."""
        return self._shape[1] * self._groups

    @facade
    def __call__(self, x: Value) -> Value:
        c = self.channels
        _check_input("Conv1d", x, f"[batch, {c}, length]", lambda: x.rank == 3 and x.shape[1] == c)
        bias = None if self._bias is None else bind(x, self._bias)
        return conv1d(x, bind(x, self._weights), bias, self._stride, self._padding, self._dilation, self._groups)


class ConvTranspose2d(_Weighted):
    """Transposed 2-D convolution with PyTorch's weights ``[C, F / groups, kh, kw]`` and bias ``[F]``.

    Acts on ``[B, C, H, W]`` through :func:`topos.nn.functional.conv_transpose2d`: the input
    adjoint of a :class:`Conv2d` with the same weights. ``groups`` must divide ``C``;
    ``output_padding`` must be below the stride or the dilation on each axis.

    Example:
        >>> import numpy as np
        >>> from topos import Tape, f64
        >>> def build(t: Tape):
        ...     up = ConvTranspose2d(t, np.ones((1, 1, 2, 2)), np.zeros(1), stride=2)
        ...     return up(t.input(np.array([[[[1.0, 2.0]]]])))
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[[[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0]]]]
    """

    __slots__ = ("_dilation", "_groups", "_output_padding", "_padding", "_stride")

    @facade
    def __init__(
        self,
        tape: Tape,
        weights: Payload,
        bias: Payload | None = None,
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] = 0,
        output_padding: int | tuple[int, int] = 0,
        dilation: int | tuple[int, int] = 1,
        groups: int = 1,
    ) -> None:
        layer = "ConvTranspose2d"
        _check_tape(tape, layer)
        w = shape_of(weights, layer)
        if w.rank != 4:
            raise ShapeMismatchError(f"{user_site()}: {layer}: weights must be [C, F / groups, kh, kw]; got {w}")
        self._stride = _counts(layer, "stride", stride, 1)
        self._padding = _counts(layer, "padding", padding, 0)
        self._output_padding = _counts(layer, "output_padding", output_padding, 0)
        self._dilation = _counts(layer, "dilation", dilation, 1)
        self._groups = _count(layer, "groups", groups, 1)
        if w[0] % self._groups:
            raise ShapeMismatchError(f"{user_site()}: {layer}: groups={groups} must divide the channels C={w[0]} of weights {w}")
        for axis in range(2):
            if self._output_padding[axis] >= max(self._stride[axis], self._dilation[axis]):
                raise InvalidArgumentError(
                    f"{user_site()}: {layer}: output_padding {output_padding!r} must be below the stride "
                    f"{stride!r} or the dilation {dilation!r}"
                )
        _check_bias(layer, bias, w[1] * self._groups, w)
        self._take(tape, weights, bias, layer, w)

    @classmethod
    def init(
        cls,
        tape: Tape,
        channels: int,
        filters: int,
        size: int,
        init: Init,
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] = 0,
        output_padding: int | tuple[int, int] = 0,
        groups: int = 1,
    ) -> ConvTranspose2d:
        """Weights ``[channels, filters / groups, size, size]`` then bias ``[filters]`` drawn from ``init``.

        Example:
            >>> from topos import Tape
            >>> from topos.init import xavier
            >>> ConvTranspose2d.init(Tape(), 4, 2, 3, xavier(0), stride=2, groups=2).filters
            2
        """
        layer = "ConvTranspose2d"
        _check_tape(tape, layer)
        channels = _count(layer, "channels", channels, 1)
        filters = _count(layer, "filters", filters, 1)
        size = _count(layer, "size", size, 1)
        groups = _count(layer, "groups", groups, 1)
        if filters % groups:
            raise ShapeMismatchError(f"{user_site()}: {layer}: groups={groups} must divide the filters {filters}")
        weights = _drawn(init, Shape((channels, filters // groups, size, size)), layer, "weights")
        bias = _drawn(init, Shape((filters,)), layer, "bias")
        return cls(tape, weights, bias, stride, padding, output_padding, 1, groups)

    @property
    def filters(self) -> int:
        """The output channels ``F``."""
        return self._shape[1] * self._groups

    @facade
    def __call__(self, x: Value) -> Value:
        c = self._shape[0]
        _check_input("ConvTranspose2d", x, f"[batch, {c}, height, width]", lambda: x.rank == 4 and x.shape[1] == c)
        bias = None if self._bias is None else bind(x, self._bias)
        return conv_transpose2d(
            x, bind(x, self._weights), bias, self._stride, self._padding, self._output_padding, self._dilation, self._groups
        )


class GroupNorm(_ScaleShift):
    """Normalize ``[N, C, ...]`` over each of ``groups`` channel groups and every trailing axis,
    then scale and shift per channel (``[C]`` each); the variance is biased, as PyTorch's.

    Example:
        >>> from topos import Tape, f64
        >>> def build(t: Tape):
        ...     norm = GroupNorm.init(t, 2, 4, epsilon=0.0)
        ...     return norm(t.input([[1.0, 3.0, 5.0, 9.0]]))
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[-1.0, 1.0, -1.0, 1.0]]
    """

    __slots__ = ("_groups",)

    @facade
    def __init__(self, tape: Tape, groups: int, scale: Payload, shift: Payload, epsilon: float) -> None:
        super().__init__(tape, scale, shift, epsilon, "GroupNorm", "C")
        self._groups = _count("GroupNorm", "groups", groups, 1)
        if self._width % self._groups:
            raise ShapeMismatchError(f"{user_site()}: GroupNorm: groups={groups} must divide the channels C={self._width}")

    @classmethod
    def init(
        cls, tape: Tape, groups: int, channels: int, epsilon: float, scale: float = 1.0, shift: float = 0.0
    ) -> GroupNorm:
        """A layer over ``[N, channels, ...]`` whose scale starts at ``scale`` and shift at ``shift``."""
        channels = _norm_width(tape, channels, "GroupNorm")
        filled = Tensor.filled((channels,), scale, tape.element), Tensor.filled((channels,), shift, tape.element)
        return cls(tape, groups, *filled, epsilon)

    @property
    def groups(self) -> int:
        return self._groups

    @facade
    def __call__(self, x: Value) -> Value:
        c = self._width
        _check_input("GroupNorm", x, f"[batch, {c}, ...]", lambda: x.rank >= 2 and x.shape[1] == c)
        return group_norm(x, self._groups, bind(x, self._scale), bind(x, self._shift), self._epsilon)


class AvgPool2d:
    """Mean over ``window`` every ``stride`` (default: the window) of ``[B, C, H, W]``, as PyTorch's.

    ``padding`` zeros on each side (at most half the window), ``ceil_mode`` and
    ``count_include_pad`` as :func:`topos.nn.functional.avg_pool2d`. Holds no parameters.

    Example:
        >>> import numpy as np
        >>> from topos import Tape, f64
        >>> pool = AvgPool2d(2, padding=1, count_include_pad=False)
        >>> network, y = Tape.record(lambda t: pool(t.input(np.arange(4.0).reshape(1, 1, 2, 2))), element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[[[0.0, 1.0], [2.0, 3.0]]]]
    """

    __slots__ = ("_ceil_mode", "_count_include_pad", "_padding", "_stride", "_window")

    def __init__(
        self,
        window: int | tuple[int, int],
        stride: int | tuple[int, int] | None = None,
        padding: int | tuple[int, int] = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        self._window = _counts("AvgPool2d", "window", window, 1)
        self._stride = self._window if stride is None else _counts("AvgPool2d", "stride", stride, 1)
        self._padding = _counts("AvgPool2d", "padding", padding, 0)
        if any(2 * p > k for p, k in zip(self._padding, self._window, strict=True)):
            raise InvalidArgumentError(
                f"{user_site()}: AvgPool2d: padding {padding!r} must be at most half the window {window!r}"
            )
        self._ceil_mode = _flag("AvgPool2d", "ceil_mode", ceil_mode)
        self._count_include_pad = _flag("AvgPool2d", "count_include_pad", count_include_pad)

    @facade
    def __call__(self, x: Value) -> Value:
        _check_input("AvgPool2d", x, "[B, C, H, W]", lambda: x.rank == 4)
        return avg_pool2d(x, self._window, self._stride, self._padding, self._ceil_mode, self._count_include_pad)

    def visit(self, visitor: Visitor) -> None:
        """No parameters."""


class BatchNorm2dStep(NamedTuple):
    """A training step of :class:`BatchNorm2d`: the output, the batch statistics it used, and
    the running statistics updated with them (read these after the run, feed them to the next)."""

    output: Value
    mean: Value
    variance: Value
    running_mean: Value
    running_variance: Value


class BatchNorm2d(_ScaleShift):
    """Batch normalization of ``[N, C, H, W]`` per channel, with running statistics.

    Scale and shift are ``[C]`` parameters. The running mean and variance are ``[C]`` *inputs*
    (unfed: 0 and 1, PyTorch's starting values), so the graph stays a function and the caller
    carries them from run to run, as with :class:`Dropout`'s mask. Training (calling the
    layer) normalizes with the batch mean and biased variance; :meth:`express` also records
    the updated running statistics ``(1 - momentum) * running + momentum * batch``, whose
    batch variance is Bessel-corrected (``n / (n - 1)``, PyTorch's) unless ``bessel=False``.
    :meth:`evaluation` is the same layer in inference mode: it normalizes with the running
    statistics. ``momentum=None`` (PyTorch's cumulative average) is not built.

    Example:
        >>> import numpy as np
        >>> from topos import Tape, Tensor, f64
        >>> tape = Tape(f64)
        >>> norm = BatchNorm2d.init(tape, 1, epsilon=0.0, momentum=0.5)
        >>> x = tape.input(np.array([1.0, 3.0]).reshape(2, 1, 1, 1))
        >>> step = norm.express(x)
        >>> network = tape.seal()
        >>> run = network.forward(network.parameters())
        >>> run.of(step.output.symbol).numpy().ravel().tolist(), run.of(step.running_variance.symbol).tolist()
        ([-1.0, 1.0], [1.5])
        >>> feeds = norm.feed(run.of(step.running_mean.symbol), run.of(step.running_variance.symbol))
        >>> reopened = network.reopen()
        >>> y = norm.evaluation()(reopened.resolve(x.symbol))
        >>> inference = reopened.seal()
        >>> [round(v, 6) for v in inference.forward(inference.parameters(), feeds).of(y.symbol).numpy().ravel().tolist()]
        [0.0, 1.632993]
    """

    __slots__ = ("_bessel", "_momentum", "_running_mean", "_running_variance", "_training")

    @facade
    def __init__(
        self,
        tape: Tape,
        scale: Payload,
        shift: Payload,
        epsilon: float,
        momentum: float = 0.1,
        bessel: bool = True,
    ) -> None:
        super().__init__(tape, scale, shift, epsilon, "BatchNorm2d", "C")
        if isinstance(momentum, (bool, np.bool_)) or not isinstance(momentum, (int, float, np.integer, np.floating)):
            raise InvalidArgumentError(f"{user_site()}: BatchNorm2d: momentum must be a number in [0, 1]; got {momentum!r}")
        if not 0.0 <= float(momentum) <= 1.0:
            raise InvalidArgumentError(f"{user_site()}: BatchNorm2d: momentum must be in [0, 1]; got {momentum!r}")
        self._momentum = float(momentum)
        self._bessel = _flag("BatchNorm2d", "bessel", bessel)
        self._training = True
        width = (self._width,)
        self._running_mean = tape.input(Tensor.filled(width, 0.0, tape.element)).symbol
        self._running_variance = tape.input(Tensor.filled(width, 1.0, tape.element)).symbol

    @classmethod
    def init(
        cls,
        tape: Tape,
        channels: int,
        epsilon: float,
        momentum: float = 0.1,
        bessel: bool = True,
        scale: float = 1.0,
        shift: float = 0.0,
    ) -> BatchNorm2d:
        """A layer over ``[N, channels, H, W]`` whose scale starts at ``scale`` and shift at ``shift``."""
        channels = _norm_width(tape, channels, "BatchNorm2d")
        filled = Tensor.filled((channels,), scale, tape.element), Tensor.filled((channels,), shift, tape.element)
        return cls(tape, *filled, epsilon, momentum, bessel)

    @property
    def momentum(self) -> float:
        return self._momentum

    @property
    def training(self) -> bool:
        """Whether calling the layer normalizes with the batch (True) or the running statistics."""
        return self._training

    @property
    def running_mean(self) -> Symbol:
        """The running mean input's symbol (feed it, or use :meth:`feed`)."""
        return self._running_mean

    @property
    def running_variance(self) -> Symbol:
        """The running variance input's symbol (feed it, or use :meth:`feed`)."""
        return self._running_variance

    def _moded(self, training: bool) -> BatchNorm2d:
        other = object.__new__(BatchNorm2d)
        for slot in (*_ScaleShift.__slots__, *BatchNorm2d.__slots__):
            object.__setattr__(other, slot, getattr(self, slot))
        object.__setattr__(other, "_training", training)
        return other

    def evaluation(self) -> BatchNorm2d:
        """The same layer (same parameters and running inputs) normalizing with the running statistics."""
        return self._moded(False)

    def train(self) -> BatchNorm2d:
        """The same layer normalizing with the batch statistics (the default)."""
        return self._moded(True)

    def feed(self, mean: Tensor, variance: Tensor) -> dict[Symbol, Tensor]:
        """``{running_mean: mean, running_variance: variance}`` for a run's feeds, shapes checked."""
        for name, given in (("mean", mean), ("variance", variance)):
            payload: object = given
            if isinstance(payload, Value):
                raise InvalidArgumentError(f"{user_site()}: BatchNorm2d.feed takes payloads (Tensors), not a recorded Value")
            if shape_of(given, "BatchNorm2d") != Shape((self._width,)):
                raise ShapeMismatchError(
                    f"{user_site()}: BatchNorm2d: a running {name} of shape {shape_of(given)} cannot feed "
                    f"a layer of {self._width} channels"
                )
        return {self._running_mean: mean, self._running_variance: variance}

    def _check(self, x: Value) -> None:
        c = self._width
        _check_input("BatchNorm2d", x, f"[batch, {c}, height, width]", lambda: x.rank == 4 and x.shape[1] == c)

    @facade
    def express(self, x: Value) -> BatchNorm2dStep:
        """Training form: output, batch mean and biased variance, and the updated running statistics."""
        self._check(x)
        out = batch_norm2d_training(x, bind(x, self._scale), bind(x, self._shift), self._epsilon)
        batch_variance = out.unbiased_variance if self._bessel else out.variance
        mean = running_average(bind(x, self._running_mean), out.mean, self._momentum)
        variance = running_average(bind(x, self._running_variance), batch_variance, self._momentum)
        return BatchNorm2dStep(out.output, out.mean, out.variance, mean, variance)

    @facade
    def __call__(self, x: Value) -> Value:
        self._check(x)
        scale, shift = bind(x, self._scale), bind(x, self._shift)
        if self._training:
            return batch_norm2d_training(x, scale, shift, self._epsilon).output
        mean, variance = bind(x, self._running_mean), bind(x, self._running_variance)
        return batch_norm2d(x, scale, shift, self._epsilon, mean, variance)
