"""Normalization layers: :class:`LayerNorm` and :class:`RmsNorm` along the trailing axes,
:class:`BatchNorm` over ``[N, F]``, :class:`BatchNorm2d` per channel of ``[N, C, H, W]``
with running statistics, and :class:`GroupNorm` over groups of channels.

Epsilons (and the running statistics' momentum) are the caller's. Running statistics are
graph *inputs* that the caller feeds from one run to the next, never state kept inside the
graph. Scale and shift are visited as ``scale`` and ``shift``. The contract every layer
keeps is stated in :mod:`topos.nn.base`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from topos import InvalidArgumentError, Shape, ShapeMismatchError, Symbol, Tape, Tensor, Value
from topos.errors import user_site
from topos.ir.checks import integer
from topos.nn.arguments import epsilon_of
from topos.nn.base import (
    Payload,
    check_input,
    check_tape,
    count_option,
    flag_option,
    parameter_symbol,
    shape_of,
    spread,
)
from topos.nn.functional import (
    BatchNormOutput,
    batch_norm,
    batch_norm2d,
    batch_norm2d_training,
    batch_norm_training,
    group_norm,
    layer_norm,
    running_average,
)
from topos.nn.module import Visitor, bind, facade

__all__ = ["BatchNorm", "BatchNorm2d", "BatchNorm2dStep", "GroupNorm", "LayerNorm", "RmsNorm"]


class _ScaleShift:
    """The ``[width]`` scale and shift pair (and epsilon) LayerNorm and BatchNorm share."""

    __slots__ = ("_epsilon", "_normalized", "_scale", "_shift", "_width")

    def __init__(
        self, tape: Tape, scale: Payload, shift: Payload, epsilon: float, layer: str, axis: str, trailing: bool = False
    ) -> None:
        check_tape(tape, layer)
        s, h = shape_of(scale, layer), shape_of(shift, layer)
        if s.rank < 1 or (s.rank != 1 and not trailing) or h != s:
            raise ShapeMismatchError(f"{user_site()}: {layer}: scale and shift must both be [{axis}]; got {s} and {h}")
        self._width = s[0]
        self._normalized = s
        self._epsilon = epsilon_of(epsilon, layer)
        self._scale = parameter_symbol(tape, scale, layer)
        self._shift = parameter_symbol(tape, shift, layer)

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
    check_tape(tape, layer)
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
            check_tape(tape, "LayerNorm")
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
            check_input(
                "LayerNorm",
                x,
                f"[..., {', '.join(map(str, trailing.axes))}]",
                lambda: x.rank >= trailing.rank and x.shape.axes[x.rank - trailing.rank :] == trailing.axes,
            )
            return layer_norm(x, bind(x, self._scale), bind(x, self._shift), self._epsilon)
        d = self._width
        check_input("LayerNorm", x, f"[..., {d}]", lambda: x.rank >= 1 and x.shape[-1] == d)
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
        check_tape(tape, "RmsNorm")
        s = shape_of(scale, "RmsNorm")
        if s.rank != 1:
            raise ShapeMismatchError(f"{user_site()}: RmsNorm: scale must be [D]; got {s}")
        self._width = s[0]
        self._epsilon = epsilon_of(epsilon, "RmsNorm")
        self._scale = parameter_symbol(tape, scale, "RmsNorm")

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
        check_input("RmsNorm", x, f"[..., {d}]", lambda: x.rank >= 1 and x.shape[-1] == d)
        axis = x.rank - 1
        mean_square = (x * x).mean_along(axis)
        root = (mean_square + self._epsilon).sqrt()
        return x / root.broadcast_along(axis, d) * spread(bind(x, self._scale), x.shape)

    def visit(self, visitor: Visitor) -> None:
        visitor.parameter("scale", self._scale)


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
        check_input("BatchNorm", x, f"[batch, {f}]", lambda: x.rank == 2 and x.shape[1] == f)

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
    carries them from run to run, as with :class:`~topos.nn.Dropout`'s mask. Training (calling the
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
        self._bessel = flag_option("BatchNorm2d", "bessel", bessel)
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
        check_input("BatchNorm2d", x, f"[batch, {c}, height, width]", lambda: x.rank == 4 and x.shape[1] == c)

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
        self._groups = count_option("GroupNorm", "groups", groups, 1)
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
        check_input("GroupNorm", x, f"[batch, {c}, ...]", lambda: x.rank >= 2 and x.shape[1] == c)
        return group_norm(x, self._groups, bind(x, self._scale), bind(x, self._shift), self._epsilon)
