"""Gradient clipping by global norm and weight-decay masks, against numpy written out by hand.

The norm and the decay follow the same order of operations as the helpers, so the
comparisons are bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import Parameters, Tape, bf16, f32, f64
from topos.ir.element import ElementType
from topos.optim import (
    OptimizerError,
    Sgd,
    add_weight_decay,
    clip_by_global_norm,
    decay_mask,
    global_norm,
    masked,
)

EPS = {"f32": 2.0**-23, "f64": 2.0**-52, "bf16": 2.0**-7}


def table(seed: int, element: ElementType, scale: float) -> tuple[Parameters, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (4,), (2, 2, 3), ()]
    arrays = [rng.normal(0.0, scale, s) for s in shapes]
    network, _ = Tape.record(lambda t: tuple(t.parameter(a) for a in arrays), element=element)
    p = network.parameters()
    return p, [x.numpy() for x in p.payloads()]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([f32, f64, bf16]), st.floats(1e-3, 1e3), st.floats(1e-2, 1e2))
def test_clipping_matches_the_formula_bit_for_bit(seed: int, element: ElementType, scale: float, bound: float) -> None:
    gradients, arrays = table(seed, element, scale)
    total = 0.0
    for a in arrays:
        wide = a.astype(np.float64)
        total += float(np.sum(wide * wide))
    norm = math.sqrt(total)
    assert global_norm(gradients) == norm
    clipped = clip_by_global_norm(gradients, bound)
    for a, c in zip(arrays, clipped.payloads(), strict=True):
        expected = a if norm <= bound else (a * a.dtype.type(bound / norm)).astype(a.dtype)
        assert np.array_equal(c.numpy().reshape(-1).view(np.uint8), np.ascontiguousarray(expected).reshape(-1).view(np.uint8))
    if norm > bound:
        # Each element is rounded once in its element (relative error <= eps/2), so the clipped
        # norm sits on the bound within eps; 4 eps leaves room for the factor's own rounding.
        assert abs(global_norm(clipped) - bound) <= 4 * EPS[element.name] * bound
    else:
        assert clipped is gradients


def test_clipping_refuses_a_bad_bound_and_a_non_finite_gradient() -> None:
    gradients, _ = table(0, f32, 1.0)
    for bound in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(OptimizerError, match="max_norm must be finite and > 0"):
            clip_by_global_norm(gradients, bound)
    broken = gradients.map(lambda g: g * float("inf"))
    with pytest.raises(OptimizerError, match="NaN or infinite"):
        clip_by_global_norm(broken, 1.0)


def test_decay_masks_and_coupled_decay_match_numpy() -> None:
    parameters, arrays = table(3, f32, 1.0)
    symbols = [s for s, _ in parameters]
    mask = decay_mask(parameters, exclude=[symbols[2]])
    # Rank >= 2 by default, minus the excluded kernel: only the first matrix.
    assert masked(parameters, mask) == (symbols[0],)
    assert masked(parameters, decay_mask(parameters, where=lambda s, p: True)) == tuple(symbols)
    other, grads = table(4, f32, 1.0)
    gradients = parameters.with_payloads(zip(symbols, other.payloads(), strict=True))
    decayed = add_weight_decay(gradients, parameters, 0.25, where=mask)
    for i, (g, p, out) in enumerate(zip(grads, arrays, decayed.payloads(), strict=True)):
        expected = g + p * np.float32(0.25) if i == 0 else g
        assert np.array_equal(out.numpy().view(np.uint32), expected.astype(np.float32).view(np.uint32))
    # The mask is the predicate AdamW and the SGD path share: one Sgd step with coupled decay.
    stepped, _ = Sgd(learning_rate=0.5).update(decayed, Sgd(learning_rate=0.5).init(parameters), parameters)
    assert np.array_equal(stepped.payloads()[1].numpy(), arrays[1] - grads[1] * np.float32(0.5))


def test_masks_refuse_symbols_from_elsewhere() -> None:
    parameters, _ = table(0, f64, 1.0)
    other, _ = table(1, f64, 1.0)
    with pytest.raises(OptimizerError, match="exclude names symbols not in the table"):
        decay_mask(parameters, exclude=[next(iter(other))[0]])
    with pytest.raises(OptimizerError, match="rate must be finite"):
        add_weight_decay(parameters, parameters, -1.0)
