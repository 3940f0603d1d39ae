"""Convolution layers with PyTorch's weight layouts: :class:`Conv1d`, :class:`Conv2d` and
:class:`ConvTranspose2d`.

Each records through its idiom in :mod:`topos.nn.functional` (the form the pattern catalog
recognizes); the layer checks its options and shapes first and holds ``weights`` and
``bias`` as a :class:`~topos.nn.base.Weighted`. Options take an int or an ``(h, w)`` pair
where the idiom does; ``groups`` must divide the grouped extent. The contract every layer
keeps is stated in :mod:`topos.nn.base`.
"""

from __future__ import annotations

from topos import InvalidArgumentError, Shape, ShapeMismatchError, Tape, Tensor, Value
from topos.errors import user_site
from topos.ir.checks import integer
from topos.nn.base import (
    Init,
    Payload,
    Weighted,
    check_input,
    check_tape,
    count_option,
    draw,
    pair_option,
    shape_of,
)
from topos.nn.functional import conv1d, conv2d, conv_transpose2d
from topos.nn.module import bind, facade

__all__ = ["Conv1d", "Conv2d", "ConvTranspose2d"]


def _check_bias(layer: str, bias: Payload | None, filters: int, weights: Shape) -> None:
    if bias is not None and shape_of(bias, layer) != Shape((filters,)):
        raise ShapeMismatchError(
            f"{user_site()}: {layer}: bias must be [F] = [{filters}] for weights {weights}; got {shape_of(bias, layer)}"
        )


def _weights_shape(layer: str, tape: Tape, weights: Payload, rank: int, layout: str) -> Shape:
    """The tape checked, then the shape of ``weights``, refused unless of ``rank`` (``layout``
    spells the axes for the message)."""
    check_tape(tape, layer)
    shape = shape_of(weights, layer)
    if shape.rank != rank:
        raise ShapeMismatchError(f"{user_site()}: {layer}: weights must be {layout}; got {shape}")
    return shape


def _group_count(layer: str, groups: object, extent: int, what: str) -> int:
    """``groups`` as a count that divides ``extent``, the axis it splits (``what`` names that
    axis for the message); the constructors and the ``init`` classmethods alike ask this."""
    count = count_option(layer, "groups", groups, 1)
    if extent % count:
        raise ShapeMismatchError(f"{user_site()}: {layer}: groups={groups} must divide the {what}")
    return count


def _extents(layer: str, channels: object, filters: object, size: object) -> tuple[int, int, int]:
    """``channels``, ``filters`` and ``size`` of an ``init``, each a count of at least 1."""
    named = (("channels", channels), ("filters", filters), ("size", size))
    first, second, third = (count_option(layer, name, value, 1) for name, value in named)
    return first, second, third


def _drawn(layer: str, init: Init, weights: tuple[int, ...], filters: int) -> tuple[Tensor, Tensor]:
    """Weights of shape ``weights``, then bias ``[filters]``, drawn from ``init`` in that order."""
    return draw(init, Shape(weights), layer, "weights"), draw(init, Shape((filters,)), layer, "bias")


class Conv1d(Weighted):
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
        w = _weights_shape("Conv1d", tape, weights, 3, "[F, C / groups, k]")
        self._stride = count_option("Conv1d", "stride", stride, 1)
        self._padding = pair_option("Conv1d", "padding", padding, 0)
        self._dilation = count_option("Conv1d", "dilation", dilation, 1)
        self._groups = _group_count("Conv1d", groups, w[0], f"filters F={w[0]} of weights {w}")
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
        check_tape(tape, "Conv1d")
        channels, filters, size = _extents("Conv1d", channels, filters, size)
        groups = _group_count("Conv1d", groups, channels, f"channels {channels}")
        weights, bias = _drawn("Conv1d", init, (filters, channels // groups, size), filters)
        return cls(tape, weights, bias, stride, padding, dilation, groups)

    @property
    def channels(self) -> int:
        """The input channels ``C`` the layer takes."""
        return self._shape[1] * self._groups

    @facade
    def __call__(self, x: Value) -> Value:
        c = self.channels
        check_input("Conv1d", x, f"[batch, {c}, length]", lambda: x.rank == 3 and x.shape[1] == c)
        bias = None if self._bias is None else bind(x, self._bias)
        return conv1d(x, bind(x, self._weights), bias, self._stride, self._padding, self._dilation, self._groups)


class Conv2d(Weighted):
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
        w = _weights_shape("Conv2d", tape, weights, 4, "[F, C / groups, kh, kw]")
        _check_bias("Conv2d", bias, w[0], w)
        self._stride = pair_option("Conv2d", "stride", stride, 1)
        self._padding = pair_option("Conv2d", "padding", padding, 0)
        self._dilation = pair_option("Conv2d", "dilation", dilation, 1)
        self._groups = _group_count("Conv2d", groups, w[0], f"filters F={w[0]} of weights {w}")
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
        check_tape(tape, "Conv2d")
        channels = integer(channels, "Conv2d: channels")
        filters = integer(filters, "Conv2d: filters")
        size = integer(size, "Conv2d: size")
        if min(channels, filters, size) < 1:
            raise ShapeMismatchError(
                f"{user_site()}: Conv2d: extents must be positive; got channels={channels} filters={filters} size={size}"
            )
        groups = _group_count("Conv2d", groups, channels, f"channels {channels}")
        weights, bias = _drawn("Conv2d", init, (filters, channels // groups, size, size), filters)
        return cls(tape, weights, bias, stride, padding, dilation, groups)

    @property
    def channels(self) -> int:
        """The input channels ``C`` the layer takes."""
        return self._shape[1] * self._groups

    @facade
    def __call__(self, x: Value) -> Value:
        c = self.channels
        check_input("Conv2d", x, f"[batch, {c}, height, width]", lambda: x.rank == 4 and x.shape[1] == c)
        bias = None if self._bias is None else bind(x, self._bias)
        return conv2d(x, bind(x, self._weights), bias, self._stride, self._padding, self._dilation, self._groups)


class ConvTranspose2d(Weighted):
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
        w = _weights_shape(layer, tape, weights, 4, "[C, F / groups, kh, kw]")
        self._stride = pair_option(layer, "stride", stride, 1)
        self._padding = pair_option(layer, "padding", padding, 0)
        self._output_padding = pair_option(layer, "output_padding", output_padding, 0)
        self._dilation = pair_option(layer, "dilation", dilation, 1)
        self._groups = _group_count(layer, groups, w[0], f"channels C={w[0]} of weights {w}")
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
        check_tape(tape, layer)
        channels, filters, size = _extents(layer, channels, filters, size)
        groups = _group_count(layer, groups, filters, f"filters {filters}")
        weights, bias = _drawn(layer, init, (channels, filters // groups, size, size), filters)
        return cls(tape, weights, bias, stride, padding, output_padding, 1, groups)

    @property
    def filters(self) -> int:
        """The output channels ``F``."""
        return self._shape[1] * self._groups

    @facade
    def __call__(self, x: Value) -> Value:
        c = self._shape[0]
        check_input("ConvTranspose2d", x, f"[batch, {c}, height, width]", lambda: x.rank == 4 and x.shape[1] == c)
        bias = None if self._bias is None else bind(x, self._bias)
        return conv_transpose2d(
            x, bind(x, self._weights), bias, self._stride, self._padding, self._output_padding, self._dilation, self._groups
        )
