"""Seeded initializers: reproducible payloads with no global random state.

Contract: each factory here takes an explicit seed and returns an :class:`Initializer`, a
callable ``initializer(shape) -> Tensor`` that owns its own generator: successive calls
continue one stream, two initializers built with the same seed produce the same tensors,
and nothing outside the object is read or written (no ``numpy.random``, no clock).

The generator is splitmix64 written out in numpy ``uint64`` arithmetic (wrapping), so the
raw stream is the same on every machine. Every sample is computed in f64 and converted once
to the element type. Uniform samples use the top 53 bits of a draw; normal samples use
Box-Muller (the cosine half only: two draws per element), whose f64 ``log1p`` and ``cos``
are the exact posture's portable maps (a tensor's ``log1p`` and ``cos``): the same bits on
every machine, so a
seeded payload is too (the tests pin the first values of each stream).

Conventions for weight layouts: rank 2 is ``[in, out]`` (the :class:`~topos.nn.Linear`
layout); rank 4 is torch's convolution layout ``[out, in, kh, kw]``, whose fans count the
receptive field.

Example:
    >>> from topos import f64
    >>> draw = uniform(seed=7, scale=0.5, element=f64)
    >>> first = draw((2, 3))
    >>> again = uniform(seed=7, scale=0.5, element=f64)((2, 3))
    >>> bool((first.bits() == again.bits()).all())
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, final

import numpy as np

from topos import ElementType, InvalidArgumentError, Numerics, Shape, Tensor, f32, f64

__all__ = [
    "Initializer",
    "dropout",
    "kaiming",
    "normal",
    "splitmix64",
    "uniform",
    "xavier",
    "zeros",
]

Array = np.ndarray[Any, Any]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_MASK = (1 << 64) - 1


def splitmix64(seed: int, start: int, count: int) -> Array:
    """Draws ``start .. start+count`` of the splitmix64 stream seeded with ``seed`` (uint64).

    Draw ``k`` mixes the state ``seed + (k + 1) * golden`` (mod 2**64), so any stretch of
    the stream is computed directly, without stepping through the ones before it.
    """
    base = np.uint64(int(seed) & _MASK)
    steps = np.arange(start + 1, start + count + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = base + steps * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        out: Array = z ^ (z >> np.uint64(31))
    return out


def _unit(draws: Array) -> Array:
    """Uniform f64 in [0, 1) from the top 53 bits of each draw."""
    result: Array = (draws >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
    return result


def _fans(shape: Shape, what: str) -> tuple[int, int]:
    if shape.rank == 2:
        return shape[0], shape[1]
    if shape.rank >= 3:
        receptive = 1
        for extent in shape.axes[2:]:
            receptive *= extent
        return shape[1] * receptive, shape[0] * receptive
    raise InvalidArgumentError(f"{what} needs rank >= 2 to compute fans; got {shape}")


@final
class Initializer:
    """A seeded stream of tensors: ``initializer(shape)`` draws the next payload.

    Built by :func:`uniform`, :func:`normal`, :func:`xavier`, :func:`kaiming`,
    :func:`dropout` and :func:`zeros`; the state is the seed and a draw counter, nothing more.
    """

    __slots__ = ("_drawn", "_element", "_kind", "_rank1", "_seed", "_value")

    def __init__(
        self,
        kind: Literal["uniform", "normal", "xavier", "kaiming", "dropout", "zeros"],
        seed: int,
        value: float,
        element: ElementType,
        rank1: Literal["zeros", "draw"] = "draw",
    ) -> None:
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise InvalidArgumentError(f"an initializer seed must be an integer, got {seed!r}")
        if not isinstance(element, ElementType):
            raise InvalidArgumentError(f"element must be an ElementType, got {type(element).__name__}")
        self._kind = kind
        self._seed = int(seed)
        self._value = float(value)
        self._element = element
        self._rank1 = rank1
        self._drawn = 0

    @property
    def drawn(self) -> int:
        """How many raw draws this stream has consumed."""
        return self._drawn

    def _draws(self, count: int) -> Array:
        draws = splitmix64(self._seed, self._drawn, count)
        self._drawn += count
        return draws

    def _uniform(self, shape: Shape, scale: float) -> Array:
        unit = _unit(self._draws(shape.volume))
        result: Array = ((2.0 * unit - 1.0) * scale).reshape(shape.axes)
        return result

    def _normal(self, shape: Shape, deviation: float) -> Array:
        draws = self._draws(2 * shape.volume)
        first = _unit(draws[0::2])
        second = _unit(draws[1::2])
        # 1 - u lies in (0, 1], so the logarithm is finite.
        with Numerics.exactly():
            logs = Tensor(-first, f64).log1p().numpy()
            cosines = Tensor(2.0 * np.pi * second, f64).cos().numpy()
        radius = np.sqrt(-2.0 * logs)
        result: Array = (radius * cosines * deviation).reshape(shape.axes)
        return result

    def sample(self, shape: Sequence[int] | Shape) -> Array:
        """The next payload as an f64 array (before the one conversion)."""
        extent = Shape.of(shape)
        if extent.volume == 0:
            raise InvalidArgumentError(f"cannot initialize an empty shape {extent}")
        kind = self._kind
        if kind == "zeros" or (extent.rank < 2 and self._rank1 == "zeros"):
            return np.zeros(extent.axes, dtype=np.float64)
        if kind == "uniform":
            return self._uniform(extent, self._value)
        if kind == "normal":
            return self._normal(extent, self._value)
        if kind == "xavier":
            fan_in, fan_out = _fans(extent, "xavier")
            return self._uniform(extent, float(np.sqrt(6.0 / (fan_in + fan_out))))
        if kind == "kaiming":
            fan_in, _ = _fans(extent, "kaiming")
            return self._normal(extent, float(np.sqrt(2.0 / fan_in)))
        unit = _unit(self._draws(extent.volume)).reshape(extent.axes)
        mask: Array = np.where(unit < self._value, 1.0 / self._value, 0.0)
        return mask

    def __call__(self, shape: Sequence[int] | Shape) -> Tensor:
        return Tensor(self.sample(shape), element=self._element)

    def __repr__(self) -> str:
        return f"Initializer({self._kind}, seed={self._seed}, drawn={self._drawn}, element={self._element})"


def uniform(seed: int, scale: float, element: ElementType = f32) -> Initializer:
    """Uniform samples in ``[-scale, scale)``.

    Example:
        >>> uniform(seed=1, scale=1.0)((4,)).shape
        Shape([4])
    """
    if not scale > 0:
        raise InvalidArgumentError(f"uniform: scale must be positive, got {scale!r}")
    return Initializer("uniform", seed, scale, element)


def normal(seed: int, deviation: float, element: ElementType = f32) -> Initializer:
    """Normal samples with mean 0 and standard deviation ``deviation`` (Box-Muller).

    Example:
        >>> normal(seed=1, deviation=0.02)((2, 2)).shape
        Shape([2, 2])
    """
    if not deviation > 0:
        raise InvalidArgumentError(f"normal: deviation must be positive, got {deviation!r}")
    return Initializer("normal", seed, deviation, element)


def xavier(seed: int, element: ElementType = f32) -> Initializer:
    """Glorot uniform: ``±sqrt(6 / (fan_in + fan_out))`` for rank >= 2; rank 0 and 1 are zeros.

    Example:
        >>> xavier(seed=0)((3,)).tolist()
        [0.0, 0.0, 0.0]
    """
    return Initializer("xavier", seed, 0.0, element, rank1="zeros")


def kaiming(seed: int, element: ElementType = f32) -> Initializer:
    """He normal: deviation ``sqrt(2 / fan_in)`` for rank >= 2; rank 0 and 1 are zeros.

    Example:
        >>> kaiming(seed=0)((8, 4)).shape
        Shape([8, 4])
    """
    return Initializer("kaiming", seed, 0.0, element, rank1="zeros")


def dropout(seed: int, keep: float, element: ElementType = f32) -> Initializer:
    """Dropout masks: each element is ``1/keep`` with probability ``keep``, else ``0``.

    Feed the result to a :class:`~topos.nn.Dropout` layer's mask input during training.

    Example:
        >>> sorted(set(dropout(seed=3, keep=0.5, element=f32)((64,)).tolist()))
        [0.0, 2.0]
    """
    if not 0.0 < keep <= 1.0:
        raise InvalidArgumentError(f"dropout: keep must lie in (0, 1], got {keep!r}")
    return Initializer("dropout", seed, keep, element)


def zeros(element: ElementType = f32) -> Initializer:
    """Zeros of every requested shape (consumes no draws)."""
    return Initializer("zeros", 0, 0.0, element)
