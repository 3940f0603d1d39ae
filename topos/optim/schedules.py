"""Learning-rate schedules: pure functions of the integer step count.

A schedule is any ``Callable[[int], float]``; the optimizers call it with the number of
updates made so far (0 for the first). These builders compute in Python floats (f64) from
the integer step, so the value at step ``t`` never depends on how many steps came before.
Each refuses, by name, a step that is not an integer ``>= 0`` (``2.5`` or ``True``).

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

from topos.ir.checks import is_integer
from topos.ir.element import f64
from topos.ir.numerics import Numerics
from topos.optim.base import OptimizerError, Schedule, real
from topos.tensor import Tensor

__all__ = ["constant", "cosine_decay", "exponential_decay", "linear_warmup", "piecewise_constant"]


def _check(name: str, value: float) -> float:
    if not real(value) or value < 0:
        raise OptimizerError(f"schedule: {name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _steps(name: str, value: int, least: int = 1) -> int:
    """A step count: an integer >= ``least`` (2.5 steps, or True, is a mistake, not a rounding).

    Every schedule also checks the step it is called with (``least=0``).
    """
    if not is_integer(value) or value < least:
        kind = "a positive integer number of steps" if least else "an integer >= 0 (the updates made so far)"
        raise OptimizerError(f"schedule: {name} must be {kind}, got {value!r}")
    return int(value)


def constant(value: float) -> Schedule:
    """The same rate at every step."""
    rate = _check("value", value)

    def at(step: int) -> float:
        _steps("the step", step, 0)
        return rate

    return at


def linear_warmup(peak: float, warmup: int, after: Schedule | None = None) -> Schedule:
    """Rise linearly to ``peak`` over ``warmup`` steps (reaching it at step ``warmup - 1``),
    then follow ``after`` (shifted to start at 0), or stay at ``peak``."""
    top = _check("peak", peak)
    span = _steps("warmup", warmup)
    if after is not None and not callable(after):
        raise OptimizerError(f"schedule: linear_warmup's after must be a schedule (step -> rate), got {after!r}")

    def rate(step: int) -> float:
        if _steps("the step", step, 0) < span:
            return top * (step + 1) / span
        return after(step - span) if after is not None else top

    return rate


def cosine_decay(initial: float, steps: int, final: float = 0.0) -> Schedule:
    """Half a cosine from ``initial`` at step 0 down to ``final`` at ``steps``, then ``final``."""
    start, end = _check("initial", initial), _check("final", final)
    span = _steps("steps", steps)

    def rate(step: int) -> float:
        progress = min(_steps("the step", step, 0), span) / span
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
    return lambda step: start * _integer_power(ratio, _steps("the step", step, 0) // span)


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
    if not all(isinstance(given, Sequence) and not isinstance(given, str) for given in (boundaries, values)):
        raise OptimizerError(
            f"schedule: piecewise_constant takes sequences of boundaries and values, got "
            f"{type(boundaries).__name__} and {type(values).__name__}"
        )
    for boundary in boundaries:
        if not is_integer(boundary):
            raise OptimizerError(f"schedule: piecewise_constant boundaries must be integer steps, got {boundary!r}")
    edges = [int(b) for b in boundaries]
    rates = [_check("value", v) for v in values]
    if len(rates) != len(edges) + 1 or edges != sorted(edges):
        raise OptimizerError(
            f"schedule: piecewise_constant needs ascending boundaries and one more value than "
            f"boundaries, got {len(edges)} boundaries and {len(rates)} values"
        )

    def rate(step: int) -> float:
        _steps("the step", step, 0)
        for edge, value in zip(edges, rates, strict=False):
            if step < edge:
                return value
        return rates[-1]

    return rate
