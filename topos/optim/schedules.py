"""Learning-rate schedules: pure functions of the integer step count.

A schedule is any ``Callable[[int], float]``; the optimizers call it with the number of
updates made so far (0 for the first). These builders compute in Python floats (f64) from
the integer step, so the value at step ``t`` never depends on how many steps came before.

Example:
    >>> from topos.optim import Adam, schedules
    >>> rate = schedules.linear_warmup(0.5, warmup=4)
    >>> [rate(t) for t in range(6)]
    [0.125, 0.25, 0.375, 0.5, 0.5, 0.5]
    >>> optimizer = Adam(learning_rate=schedules.cosine_decay(0.1, steps=100))
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from topos.ir.element import f64
from topos.ir.numerics import Numerics
from topos.optim.base import OptimizerError, Schedule
from topos.tensor import Tensor

__all__ = ["constant", "cosine_decay", "exponential_decay", "linear_warmup", "piecewise_constant"]


def _check(name: str, value: float, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise OptimizerError(f"schedule: {name} must be a finite number {bound}, got {value!r}")
    return float(value)


def _steps(name: str, value: int) -> int:
    """A step count: a positive integer (2.5 steps, or True, is a mistake, not a rounding)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OptimizerError(f"schedule: {name} must be a positive integer number of steps, got {value!r}")
    return value


def constant(value: float) -> Schedule:
    """The same rate at every step."""
    rate = _check("value", value)
    return lambda step: rate


def linear_warmup(peak: float, warmup: int, after: Schedule | None = None) -> Schedule:
    """Rise linearly to ``peak`` over ``warmup`` steps (reaching it at step ``warmup - 1``),
    then follow ``after`` (shifted to start at 0), or stay at ``peak``."""
    top = _check("peak", peak)
    span = _steps("warmup", warmup)
    if after is not None and not callable(after):
        raise OptimizerError(f"schedule: linear_warmup's after must be a schedule (step -> rate), got {after!r}")

    def rate(step: int) -> float:
        if step < span:
            return top * (step + 1) / span
        return after(step - span) if after is not None else top

    return rate


def cosine_decay(initial: float, steps: int, final: float = 0.0) -> Schedule:
    """Half a cosine from ``initial`` at step 0 down to ``final`` at ``steps``, then ``final``."""
    start, end = _check("initial", initial), _check("final", final)
    span = _steps("steps", steps)

    def rate(step: int) -> float:
        progress = min(step, span) / span
        # The portable cosine: a schedule's rates are the same on every machine.
        with Numerics.exactly():
            cosine = Tensor(math.pi * progress, f64).cos().scalar()
        return end + (start - end) * 0.5 * (1.0 + cosine)

    return rate


def exponential_decay(initial: float, factor: float, every: int) -> Schedule:
    """``initial * factor ** (step // every)``: a staircase computed from the integer step."""
    start, ratio = _check("initial", initial), _check("factor", factor)
    span = _steps("every", every)
    # An integer power by repeated squaring in f64: the same bits everywhere, unlike the
    # platform's pow.
    return lambda step: start * _integer_power(ratio, step // span)


def _integer_power(base: float, exponent: int) -> float:
    """``base ** exponent`` for an integer ``exponent >= 0``, by squaring (no platform pow)."""
    result, square = 1.0, base
    while exponent > 0:
        if exponent & 1:
            result *= square
        square *= square
        exponent >>= 1
    return result


def piecewise_constant(boundaries: Sequence[int], values: Sequence[float]) -> Schedule:
    """``values[i]`` for steps before ``boundaries[i]``; the last value after the last boundary."""
    for boundary in boundaries:
        if isinstance(boundary, bool) or not isinstance(boundary, int):
            raise OptimizerError(f"schedule: piecewise_constant boundaries must be integer steps, got {boundary!r}")
    edges = [int(b) for b in boundaries]
    rates = [_check("value", v) for v in values]
    if len(rates) != len(edges) + 1 or edges != sorted(edges):
        raise OptimizerError(
            f"schedule: piecewise_constant needs ascending boundaries and one more value than "
            f"boundaries, got {len(edges)} boundaries and {len(rates)} values"
        )

    def rate(step: int) -> float:
        for edge, value in zip(edges, rates, strict=False):
            if step < edge:
                return value
        return rates[-1]

    return rate
