"""Pooling layers over ``[B, C, H, W]``: :class:`MaxPool` and :class:`AvgPool2d`.

They hold no parameters and record their windows through :mod:`topos.nn.functional`; the
layer's part is to check the options once, at construction.
"""

from __future__ import annotations

from topos import InvalidArgumentError, Value
from topos.errors import user_site
from topos.nn.arguments import Padding2d
from topos.nn.base import check_input, flag_option, pair_option
from topos.nn.functional import avg_pool2d, max_pool, max_pool2d
from topos.nn.module import Visitor, facade

__all__ = ["AvgPool2d", "MaxPool"]


class MaxPool:
    """Max over ``size x size`` windows every ``stride`` (default ``size``).

    ``padding`` (``p``, ``(ph, pw)`` or ``((top, bottom), (left, right))``, each side at most
    half the window) adds ``-inf``; ``ceil_mode`` keeps PyTorch's last partial window, as
    :func:`topos.nn.functional.max_pool2d`. Without either it records :func:`max_pool`'s
    chain. Ties go to the earliest lane of a window (row-major). Holds no parameters.

    Example:
        >>> import numpy as np
        >>> from topos import Tape
        >>> tape = Tape()
        >>> MaxPool(2)(tape.input(np.zeros((1, 1, 4, 4)))).shape
        Shape([1, 1, 2, 2])
        >>> MaxPool(2, padding=((0, 1), (1, 0)), ceil_mode=True)(tape.input(np.zeros((1, 1, 4, 4)))).shape
        Shape([1, 1, 2, 3])
    """

    __slots__ = ("_ceil_mode", "_padding", "_size", "_stride")

    def __init__(
        self, size: int, stride: int | None = None, padding: Padding2d = 0, ceil_mode: bool = False
    ) -> None:
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
        if isinstance(padding, tuple) and len(padding) == 2 and all(isinstance(side, tuple) for side in padding):
            sides = tuple(pair_option("MaxPool", "padding", side, 0) for side in padding)
        else:
            sides = tuple((p, p) for p in pair_option("MaxPool", "padding", padding, 0))
        if any(2 * side > size for pair in sides for side in pair):
            raise InvalidArgumentError(f"{user_site()}: MaxPool: padding {padding!r} must be at most half the window {size}")
        self._size = size
        self._stride = step
        self._padding: Padding2d = (sides[0], sides[1])
        self._ceil_mode = flag_option("MaxPool", "ceil_mode", ceil_mode)

    @facade
    def __call__(self, x: Value) -> Value:
        check_input("MaxPool", x, "[B, C, H, W]", lambda: x.rank == 4)
        if self._ceil_mode or self._padding != ((0, 0), (0, 0)):
            return max_pool2d(x, self._size, self._stride, self._padding, ceil_mode=self._ceil_mode)
        return max_pool(x, self._size, self._stride)

    def visit(self, visitor: Visitor) -> None:
        """No parameters."""


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
        self._window = pair_option("AvgPool2d", "window", window, 1)
        self._stride = self._window if stride is None else pair_option("AvgPool2d", "stride", stride, 1)
        self._padding = pair_option("AvgPool2d", "padding", padding, 0)
        if any(2 * p > k for p, k in zip(self._padding, self._window, strict=True)):
            raise InvalidArgumentError(
                f"{user_site()}: AvgPool2d: padding {padding!r} must be at most half the window {window!r}"
            )
        self._ceil_mode = flag_option("AvgPool2d", "ceil_mode", ceil_mode)
        self._count_include_pad = flag_option("AvgPool2d", "count_include_pad", count_include_pad)

    @facade
    def __call__(self, x: Value) -> Value:
        check_input("AvgPool2d", x, "[B, C, H, W]", lambda: x.rank == 4)
        return avg_pool2d(x, self._window, self._stride, self._padding, self._ceil_mode, self._count_include_pad)

    def visit(self, visitor: Visitor) -> None:
        """No parameters."""
