"""Transformer facades agree with independent jax implementations: values and gradients.

Everything runs in f64 on both sides (jax with x64 enabled) over hypothesis-drawn small
shapes. Envelope: relative and absolute 1e-10, as in tests/test_nn_layers.py: the same
formulas in f64 differ only in summation order and fused multiply-adds (a few ulps per
reduction); a wrong head split, a missing scale or a swapped rotation half is off by 1e-2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import InvalidArgumentError, ShapeMismatchError, Tape, Tensor, Value, f64
from topos.init import dropout as dropout_mask
from topos.nn import BatchNorm, Dropout, LayerNorm, Linear, RmsNorm, named_parameters
from topos.nn.transformer import Block, MultiHeadAttention, Rotary, SwiGlu

Array = np.ndarray[Any, Any]
TOL = 1e-10
SETTINGS = settings(max_examples=5, deadline=None)


def close(actual: Any, expected: Any) -> None:
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64), rtol=TOL, atol=TOL)


def agree(
    build: Callable[[Tape, list[Value], list[Value]], Value],
    reference: Callable[..., Any],
    parameters: Sequence[Array],
    inputs: Sequence[Array],
    constants: Sequence[Array] = (),
    seed: int = 0,
) -> None:
    """Record ``build`` over parameter and input payloads; compare the output and the
    gradients of ``sum(out * probe)`` with jax's of ``reference(*parameters, *inputs, *constants)``."""
    tape = Tape(f64)
    ps = [tape.parameter(p) for p in parameters]
    xs = [tape.input(x) for x in inputs]
    out = build(tape, ps, xs + [tape.input(c) for c in constants])
    probe = np.random.default_rng(seed + 99).normal(size=out.shape.axes)
    loss = (out * tape.leaf(probe)).sum()
    network = tape.seal()
    run = network.forward(network.parameters())
    cotangents = run.backward(loss.symbol)
    with jax.enable_x64(True):
        fixed = [jnp.asarray(c) for c in constants]

        def objective(params: list[Any], given: list[Any]) -> Any:
            return jnp.sum(reference(*params, *given, *fixed) * probe)

        jp = [jnp.asarray(p) for p in parameters]
        jx = [jnp.asarray(x) for x in inputs]
        close(run.of(out.symbol).numpy(), reference(*jp, *jx, *fixed))
        grad_p, grad_x = jax.grad(objective, argnums=(0, 1))(jp, jx)
        for value, expected in zip(ps + xs, [*grad_p, *grad_x], strict=True):
            close(cotangents.of(value.symbol).numpy(), expected)


def causal(t: int) -> Array:
    return np.where(np.triu(np.ones((t, t)), 1) > 0, -np.inf, 0.0)


def jax_rope(x: Any, positions: Any, base: float = 10000.0) -> Any:
    hd = x.shape[-1]
    inverse = base ** (-jnp.arange(0, hd, 2) / hd)
    angles = positions[:, None] * inverse[None, :]
    cos, sin = jnp.cos(angles), jnp.sin(angles)
    x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
    # The two halves rotate as complex pairs (x1 + i x2) * e^(i angle), written without rotate_half.
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def jax_attention(
    x: Any, wq: Any, wk: Any, wv: Any, wo: Any, mask: Any, heads: int, kv_heads: int, rope: bool, biases: Sequence[Any] = ()
) -> Any:
    b, t, _ = x.shape
    hd = wo.shape[0] // heads

    def split(y: Any, n: int) -> Any:
        return y.reshape(b, t, n, hd).transpose(0, 2, 1, 3)

    bq, bk, bv, bo = biases if biases else (0.0, 0.0, 0.0, 0.0)
    q, k, v = split(x @ wq + bq, heads), split(x @ wk + bk, kv_heads), split(x @ wv + bv, kv_heads)
    if rope:
        positions = jnp.arange(t, dtype=jnp.float64)
        q, k = jax_rope(q, positions), jax_rope(k, positions)
    k, v = jnp.repeat(k, heads // kv_heads, axis=1), jnp.repeat(v, heads // kv_heads, axis=1)
    scores = jnp.einsum("bhtd,bhsd->bhts", q, k) / jnp.sqrt(float(hd))
    scores = scores + (mask[None, None] if mask.ndim == 2 else mask[:, None])
    weights = jax.nn.softmax(scores, axis=-1)
    return (weights @ v).transpose(0, 2, 1, 3).reshape(b, t, heads * hd) @ wo + bo


shapes = st.fixed_dictionaries(
    {
        "batch": st.integers(1, 2),
        "length": st.integers(1, 4),
        "kv_heads": st.integers(1, 2),
        "group": st.integers(1, 2),
        "head_dim": st.sampled_from([2, 4]),
        "seed": st.integers(0, 2**16),
    }
)


@SETTINGS
@given(shapes)
def test_fused_causal_attention_agrees_with_jax(s: dict[str, int]) -> None:
    b, t, kv, hd = s["batch"], s["length"], s["kv_heads"], s["head_dim"]
    h = kv * s["group"]
    d = h * hd
    r = np.random.default_rng(s["seed"])
    w = r.normal(size=(d, (h + 2 * kv) * hd)) * 0.5
    bias = r.normal(size=(h + 2 * kv) * hd) * 0.1
    wo, bo = r.normal(size=(d, d)) * 0.5, r.normal(size=d) * 0.1
    x = r.normal(size=(b, t, d))

    def build(tape: Tape, p: list[Value], i: list[Value]) -> Value:
        attention = MultiHeadAttention(Linear(tape, p[0], p[1]), Linear(tape, p[2], p[3]), h, kv)
        return attention(i[0], i[1])

    def reference(w_: Any, b_: Any, wo_: Any, bo_: Any, x_: Any, mask: Any) -> Any:
        qd, kd = h * hd, kv * hd
        parts = (w_[:, :qd], w_[:, qd : qd + kd], w_[:, qd + kd :])
        biases = (b_[:qd], b_[qd : qd + kd], b_[qd + kd :], bo_)
        return jax_attention(x_, *parts, wo_, mask, h, kv, False, biases)

    agree(build, reference, [w, bias, wo, bo], [x], [causal(t)], s["seed"])


@SETTINGS
@given(shapes)
def test_grouped_rotary_attention_with_padding_agrees_with_jax(s: dict[str, int]) -> None:
    b, t, kv, hd = s["batch"], s["length"], s["kv_heads"], s["head_dim"]
    h = kv * s["group"]
    d = h * hd + 2  # the model width need not equal heads * head_dim
    r = np.random.default_rng(s["seed"])
    wq, wk, wv = r.normal(size=(d, h * hd)), r.normal(size=(d, kv * hd)), r.normal(size=(d, kv * hd))
    wo = r.normal(size=(h * hd, d))
    x = r.normal(size=(b, t, d)) * 0.5
    # Padding: row j keeps its first lengths[j] keys (at least one), on top of causality.
    lengths = r.integers(1, t + 1, size=b)
    padding = np.where(np.arange(t)[None, None, :] >= lengths[:, None, None], -np.inf, 0.0)
    mask = causal(t)[None] + padding
    selection = Tensor.selection(list(range(t)), 8, f64)

    def build(tape: Tape, p: list[Value], i: list[Value]) -> Value:
        rotary = Rotary(tape, hd, 8)
        attention = MultiHeadAttention(
            [Linear(tape, p[0]), Linear(tape, p[1]), Linear(tape, p[2])], Linear(tape, p[3]), h, kv, rotary
        )
        return attention(i[0], i[1], tape.input(selection))

    def reference(wq_: Any, wk_: Any, wv_: Any, wo_: Any, x_: Any, mask_: Any) -> Any:
        return jax_attention(x_, wq_, wk_, wv_, wo_, mask_, h, kv, True)

    agree(build, reference, [wq, wk, wv, wo], [x], [mask], s["seed"])


def test_attention_dropout_multiplies_the_weights() -> None:
    b, t, h, hd = 2, 3, 2, 2
    d = h * hd
    r = np.random.default_rng(3)
    wq, wk, wv, wo = (r.normal(size=(d, d)) for _ in range(4))
    x = r.normal(size=(b, t, d))
    keep = dropout_mask(seed=1, keep=0.7, element=f64)((b, h, t, t)).numpy()

    def build(tape: Tape, p: list[Value], i: list[Value]) -> Value:
        attention = MultiHeadAttention([Linear(tape, p[0]), Linear(tape, p[1]), Linear(tape, p[2])], Linear(tape, p[3]), h)
        return attention(i[0], i[1], dropout=i[2])

    def reference(wq_: Any, wk_: Any, wv_: Any, wo_: Any, x_: Any, mask: Any, keep_: Any) -> Any:
        q, k, v = ((x_ @ w_).reshape(b, t, h, hd).transpose(0, 2, 1, 3) for w_ in (wq_, wk_, wv_))
        weights = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(float(hd)) + mask, axis=-1) * keep_
        return (weights @ v).transpose(0, 2, 1, 3).reshape(b, t, d) @ wo_

    agree(build, reference, [wq, wk, wv, wo], [x], [causal(t), keep])


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 5), st.integers(0, 2**16))
def test_swiglu_over_rank_three_agrees_with_jax(b: int, t: int, f: int, seed: int) -> None:
    d = 3
    r = np.random.default_rng(seed)
    gate, up, down = r.normal(size=(d, f)), r.normal(size=(d, f)), r.normal(size=(f, d))
    x = r.normal(size=(b, t, d))

    def build(tape: Tape, p: list[Value], i: list[Value]) -> Value:
        return SwiGlu(Linear(tape, p[0]), Linear(tape, p[1]), Linear(tape, p[2]))(i[0])

    agree(build, lambda g, u, w, x_: (jax.nn.silu(x_ @ g) * (x_ @ u)) @ w, [gate, up, down], [x], seed=seed)


@SETTINGS
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.integers(1, 4), st.integers(0, 2**16))
def test_linear_and_norms_over_any_leading_axes_agree_with_jax(lead: list[int], d: int, seed: int) -> None:
    r = np.random.default_rng(seed)
    w, bias, scale, shift = r.normal(size=(d, 3)), r.normal(size=3), r.normal(size=3), r.normal(size=3)
    x = r.normal(size=(*lead, d))

    def build(tape: Tape, p: list[Value], i: list[Value]) -> Value:
        y = Linear(tape, p[0], p[1])(i[0])
        return RmsNorm(tape, p[2], 1e-6)(LayerNorm(tape, p[2], p[3], 1e-5)(y))

    def reference(w_: Any, b_: Any, s_: Any, h_: Any, x_: Any) -> Any:
        y = x_ @ w_ + b_
        y = jax.nn.standardize(y, axis=-1, epsilon=1e-5) * s_ + h_
        return y / jnp.sqrt(jnp.mean(y * y, axis=-1, keepdims=True) + 1e-6) * s_

    agree(build, reference, [w, bias, scale, shift], [x], seed=seed)


def test_llama_block_agrees_with_jax() -> None:
    b, t, h, kv, hd, f = 2, 4, 4, 2, 2, 12
    d = h * hd
    r = np.random.default_rng(5)
    arrays = [
        r.normal(size=d),  # norm1
        r.normal(size=(d, h * hd)), r.normal(size=(d, kv * hd)), r.normal(size=(d, kv * hd)), r.normal(size=(h * hd, d)),
        r.normal(size=d),  # norm2
        r.normal(size=(d, f)) * 0.3, r.normal(size=(d, f)) * 0.3, r.normal(size=(f, d)) * 0.3,
    ]
    x = r.normal(size=(b, t, d))
    selection = Tensor.selection(list(range(t)), t, f64)

    def build(tape: Tape, p: list[Value], i: list[Value]) -> Value:
        attention = MultiHeadAttention(
            [Linear(tape, p[1]), Linear(tape, p[2]), Linear(tape, p[3])], Linear(tape, p[4]), h, kv, Rotary(tape, hd, t)
        )
        block = Block(
            RmsNorm(tape, p[0], 1e-5), attention, RmsNorm(tape, p[5], 1e-5), SwiGlu(Linear(tape, p[6]), Linear(tape, p[7]), Linear(tape, p[8]))
        )
        return block(i[0], i[1], tape.input(selection))

    def reference(n1: Any, wq: Any, wk: Any, wv: Any, wo: Any, n2: Any, g: Any, u: Any, w: Any, x_: Any, mask: Any) -> Any:
        def rms(y: Any, s_: Any) -> Any:
            return y / jnp.sqrt(jnp.mean(y * y, axis=-1, keepdims=True) + 1e-5) * s_

        y = x_ + jax_attention(rms(x_, n1), wq, wk, wv, wo, mask, h, kv, True)
        z = rms(y, n2)
        return y + (jax.nn.silu(z @ g) * (z @ u)) @ w

    agree(build, reference, arrays, [x], [causal(t)])


def test_norm_constructors_start_at_scale_and_shift() -> None:
    tape = Tape(f64)
    layer, rms, batch = LayerNorm.init(tape, 3, 1e-5), RmsNorm.init(tape, 3, 1e-6, scale=2.0), BatchNorm.init(tape, 4, 1e-5)
    table = tape.seal().parameters()
    named = {str(p): table.of(s).tolist() for module in (layer, rms, batch) for p, s in named_parameters(module)}
    assert table.of(layer.scale).tolist() == [1.0] * 3 and table.of(layer.shift).tolist() == [0.0] * 3
    assert table.of(rms.scale).tolist() == [2.0] * 3
    assert table.of(batch.scale).tolist() == [1.0] * 4 and table.of(batch.shift).tolist() == [0.0] * 4
    assert set(named) == {"scale", "shift"}
    with pytest.raises(ShapeMismatchError, match=r"test_transformer\.py.*LayerNorm: the width must be positive"):
        LayerNorm.init(Tape(), 0, 1e-5)


def test_refused_attention_leaves_the_tape_unchanged() -> None:
    tape = Tape(f64)
    attention = MultiHeadAttention.init(tape, 4, 2, lambda shape: Tensor.zeros(shape, f64))
    x = tape.input(Tensor.zeros((1, 3, 4), f64))
    before = len(tape)
    with pytest.raises(ShapeMismatchError, match=r"test_transformer\.py:\d+.*mask must be \[3, 3\]"):
        attention(x, tape.input(Tensor.zeros((3, 2), f64)))
    assert len(tape) == before + 1  # only the refused mask input, recorded by the caller
    with pytest.raises(ShapeMismatchError, match="x must be"):
        attention(tape.input(Tensor.zeros((3, 4), f64)))
    with pytest.raises(InvalidArgumentError, match="rotary attention needs positions"):
        MultiHeadAttention.init(tape, 4, 2, lambda shape: Tensor.zeros(shape, f64), rotary=Rotary(tape, 2, 3))(x)
    with pytest.raises(ShapeMismatchError, match="heads into 2 groups"):
        MultiHeadAttention.init(tape, 6, 3, lambda shape: Tensor.zeros(shape, f64), kv_heads=2)
    with pytest.raises(ShapeMismatchError, match="dropout must be"):
        attention(x, dropout=Dropout(tape, (1, 2, 3, 2)))
