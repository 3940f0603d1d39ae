"""Each facade's forward values and gradients agree with the same layer written in jax.

Everything runs in f64 on both sides (jax with x64 enabled), on seeded random inputs.

Envelope: relative and absolute 1e-10. Both sides evaluate the same formula in f64 but jax
(XLA:CPU) may sum in another order and fuse multiply-adds, so they differ by a few ulps per
reduction (measured below 1e-14 here). A wrong formula (a missing epsilon, a transposed
weight, a biased/unbiased variance mix-up) shows at 1e-3 or more, so 1e-10 still fails it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from topos import Network, Shape, ShapeMismatchError, Symbol, Tape, Tensor, ToposError, Value, f64
from topos.init import normal
from topos.nn import (
    BatchNorm,
    Conv2d,
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    MaxPool,
    Mlp,
    RmsNorm,
    Sequential,
)
from topos.nn.activations import Activation, gelu, relu, silu, tanh
from topos.nn.attention import causal_mask, scaled_dot_product
from topos.nn.losses import cross_entropy, mse

Array = np.ndarray[Any, Any]
RTOL = 1e-10
ATOL = 1e-10


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def close(actual: Any, expected: Any) -> None:
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64), rtol=RTOL, atol=ATOL)


def agree(
    build: Callable[[Tape, list[Value], list[Value]], Value],
    reference: Callable[..., Any],
    parameters: Sequence[Array],
    inputs: Sequence[Array],
    extra_feeds: Callable[[Network, list[Symbol]], dict[Symbol, Any]] | None = None,
) -> None:
    """Record ``build`` in f64, compare output and every gradient with jax.

    The probe makes the rank-0 objective ``sum(out * probe)`` so every output element
    matters to the gradients.
    """
    probe_holder: list[Array] = []

    def record(tape: Tape) -> tuple[Value, Value, list[Value], list[Value]]:
        ps = [tape.parameter(p) for p in parameters]
        xs = [tape.input(x) for x in inputs]
        out = build(tape, ps, xs)
        probe = rng(99).normal(size=out.shape.axes)
        probe_holder.append(probe)
        loss = (out * tape.leaf(probe)).sum() if out.rank else out * tape.leaf(probe)
        return out, loss, ps, xs

    network, (out, loss, ps, xs) = Tape.record(record, element=f64)
    run = network.forward(network.parameters())
    cotangents = run.backward(loss)
    probe = probe_holder[0]

    with jax.enable_x64(True):
        jparams = [jnp.asarray(p, dtype=jnp.float64) for p in parameters]
        jinputs = [jnp.asarray(x, dtype=jnp.float64) for x in inputs]

        def objective(params: list[Any], xs_: list[Any]) -> Any:
            return jnp.sum(reference(*params, *xs_) * probe)

        expected_out = reference(*jparams, *jinputs)
        grad_params, grad_inputs = jax.grad(objective, argnums=(0, 1))(jparams, jinputs)
        close(run.of(out).numpy(), expected_out)
        for symbol, expected in zip(ps, grad_params, strict=True):
            close(cotangents.of(symbol).numpy(), expected)
        for symbol, expected in zip(xs, grad_inputs, strict=True):
            close(cotangents.of(symbol).numpy(), expected)


def test_linear_agrees_with_jax() -> None:
    g = rng(0)
    w, b, x = g.normal(size=(4, 3)), g.normal(size=(3,)), g.normal(size=(5, 4))
    agree(
        lambda t, p, i: Linear(t, p[0], p[1])(i[0]),
        lambda w_, b_, x_: x_ @ w_ + b_,
        [w, b],
        [x],
    )


def test_linear_without_bias_agrees_with_jax() -> None:
    g = rng(1)
    w, x = g.normal(size=(4, 3)), g.normal(size=(2, 4))
    agree(lambda t, p, i: Linear(t, p[0])(i[0]), lambda w_, x_: x_ @ w_, [w], [x])


@pytest.mark.parametrize(
    ("activation", "jax_form"),
    [
        (Activation.TANH, jnp.tanh),
        (Activation.RELU, jax.nn.relu),
        (Activation.GELU, lambda x: jax.nn.gelu(x, approximate=False)),
        (Activation.GELU_TANH, lambda x: jax.nn.gelu(x, approximate=True)),
        (Activation.SILU, jax.nn.silu),
    ],
    ids=lambda a: a.value if isinstance(a, Activation) else "",
)
def test_activations_agree_with_jax_nn(activation: Activation, jax_form: Callable[[Any], Any]) -> None:
    x = rng(2).normal(size=(3, 5)) * 2.0
    agree(lambda t, p, i: activation(i[0]), jax_form, [], [x])


def test_activation_functions_match_enum() -> None:
    for fn, member in ((tanh, Activation.TANH), (relu, Activation.RELU), (gelu, Activation.GELU), (silu, Activation.SILU)):
        a = Tape.record(lambda t, fn=fn: fn(t.input([[0.5, -1.0]])))[0].describe()  # type: ignore[misc]
        b = Tape.record(lambda t, m=member: m(t.input([[0.5, -1.0]])))[0].describe()  # type: ignore[misc]
        assert a == b


def test_mlp_agrees_with_jax() -> None:
    init = normal(seed=3, deviation=0.5, element=f64)
    x = rng(3).normal(size=(6, 3))
    shapes = [(3, 5), (5,), (5, 4), (4,), (4, 2), (2,)]
    params = [init.sample(s) for s in shapes]

    def build(t: Tape, p: list[Value], i: list[Value]) -> Value:
        mlp = Mlp(t, [3, 5, 4, 2], Activation.TANH, lambda shape: Tensor(np.zeros(shape.axes)))
        # Install the drawn payloads through a Sequential of Linear layers sharing the parameters.
        shared = Sequential(
            Linear(t, p[0], p[1]), Activation.TANH, Linear(t, p[2], p[3]), Activation.TANH, Linear(t, p[4], p[5])
        )
        del mlp
        return shared(i[0])

    def reference(w0: Any, b0: Any, w1: Any, b1: Any, w2: Any, b2: Any, x_: Any) -> Any:
        h = jnp.tanh(x_ @ w0 + b0)
        h = jnp.tanh(h @ w1 + b1)
        return h @ w2 + b2

    agree(build, reference, params, [x])


def test_mlp_matches_its_sequential_spelling() -> None:
    """Mlp records exactly what Linear/activation stages record."""
    init_a = normal(seed=4, deviation=0.3, element=f64)
    init_b = normal(seed=4, deviation=0.3, element=f64)

    def with_mlp(t: Tape) -> Value:
        return Mlp(t, [3, 4, 2], Activation.RELU, init_a)(t.input(np.ones((2, 3))))

    def with_sequential(t: Tape) -> Value:
        first = Linear.init(t, 3, 4, init_b)
        second = Linear.init(t, 4, 2, init_b)
        return Sequential(first, Activation.RELU, second)(t.input(np.ones((2, 3))))

    a, ya = Tape.record(with_mlp, element=f64)
    b, yb = Tape.record(with_sequential, element=f64)
    assert a.describe() == b.describe()
    ra = a.forward(a.parameters()).of(ya)
    rb = b.forward(b.parameters()).of(yb)
    assert np.array_equal(ra.bits(), rb.bits())


def test_layer_norm_agrees_with_jax_standardize() -> None:
    g = rng(5)
    scale, shift, x = g.normal(size=(6,)), g.normal(size=(6,)), g.normal(size=(2, 3, 6)) * 3.0
    agree(
        lambda t, p, i: LayerNorm(t, p[0], p[1], epsilon=1e-5)(i[0]),
        lambda s, h, x_: jax.nn.standardize(x_, axis=-1, epsilon=1e-5) * s + h,
        [scale, shift],
        [x],
    )


def test_rms_norm_agrees_with_jax() -> None:
    g = rng(6)
    scale, x = g.normal(size=(5,)), g.normal(size=(4, 5))
    agree(
        lambda t, p, i: RmsNorm(t, p[0], epsilon=1e-6)(i[0]),
        lambda s, x_: x_ / jnp.sqrt(jnp.mean(x_ * x_, axis=-1, keepdims=True) + 1e-6) * s,
        [scale],
        [x],
    )


def test_embedding_agrees_with_jax_take() -> None:
    g = rng(7)
    table = g.normal(size=(10, 4))
    indices = np.array([3, 0, 9, 3, 7])

    def build(t: Tape, p: list[Value], i: list[Value]) -> Value:
        embed = Embedding(t, p[0])
        return embed(t.input(embed.select(indices, f64)))

    agree(build, lambda tab: jnp.take(tab, jnp.asarray(indices), axis=0), [table], [])


def test_dropout_agrees_with_a_masked_product_and_is_identity_unfed() -> None:
    from topos.init import dropout

    x = rng(8).normal(size=(3, 4))
    mask = dropout(seed=5, keep=0.75, element=f64)((3, 4))
    tape = Tape(f64)
    layer = Dropout(tape, (3, 4))
    xin = tape.input(x)
    y = layer(xin)
    loss = y.sum()
    network = tape.seal()
    unfed = network.forward(network.parameters()).of(y.symbol)
    assert np.array_equal(unfed.bits(), Tensor(x, f64).bits())
    run = network.forward(network.parameters(), layer.feed(mask))
    close(run.of(y.symbol).numpy(), x * mask.numpy())
    with jax.enable_x64(True):
        expected = jax.grad(lambda v: jnp.sum(v * jnp.asarray(mask.numpy())))(jnp.asarray(x))
    close(run.backward(loss.symbol).of(xin.symbol).numpy(), expected)


def test_scaled_dot_product_agrees_with_jax() -> None:
    g = rng(9)
    q, k, v = g.normal(size=(4, 3)), g.normal(size=(5, 3)), g.normal(size=(5, 2))
    mask = np.where(g.random(size=(4, 5)) < 0.3, -1e9, 0.0)
    scale = 1.0 / np.sqrt(3.0)

    def build(t: Tape, p: list[Value], i: list[Value]) -> Value:
        return scaled_dot_product(i[0], i[1], i[2], i[3], t.leaf(scale))

    def reference(q_: Any, k_: Any, v_: Any, m_: Any) -> Any:
        return jax.nn.softmax(q_ @ k_.T * scale + m_, axis=1) @ v_

    agree(build, reference, [], [q, k, v, mask])


def test_scaled_dot_product_agrees_with_jax_dot_product_attention() -> None:
    """jax's fused attention computes its softmax in f32 even for f64 operands.

    Envelope: 1e-6 relative (a few f32 ulps through exp, sum and divide).
    """
    g = rng(14)
    q, k, v = g.normal(size=(4, 3)), g.normal(size=(4, 3)), g.normal(size=(4, 3))
    mask = causal_mask(4, -np.inf, f64)
    assert mask.tolist()[0] == [0.0, -np.inf, -np.inf, -np.inf]

    def build(t: Tape) -> Value:
        return scaled_dot_product(t.input(q), t.input(k), t.input(v), t.leaf(mask), t.leaf(0.5))

    network, out = Tape.record(build, element=f64)
    ours = network.forward(network.parameters()).of(out).numpy()
    with jax.enable_x64(True):
        theirs = jax.nn.dot_product_attention(
            jnp.asarray(q)[None, :, None, :],
            jnp.asarray(k)[None, :, None, :],
            jnp.asarray(v)[None, :, None, :],
            scale=0.5,
            is_causal=True,
        )[0, :, 0, :]
    np.testing.assert_allclose(ours, np.asarray(theirs, dtype=np.float64), rtol=1e-6, atol=1e-6)


def test_causal_attention_agrees_with_jax() -> None:
    g = rng(10)
    q, k, v = g.normal(size=(4, 3)), g.normal(size=(4, 3)), g.normal(size=(4, 3))
    mask = causal_mask(4, -np.inf, f64)
    allowed = np.tril(np.ones((4, 4), dtype=bool))

    def build(t: Tape, p: list[Value], i: list[Value]) -> Value:
        return scaled_dot_product(i[0], i[1], i[2], t.leaf(mask), t.leaf(0.5))

    def reference(q_: Any, k_: Any, v_: Any) -> Any:
        return jax.nn.softmax(q_ @ k_.T * 0.5, axis=1, where=jnp.asarray(allowed)) @ v_

    agree(build, reference, [], [q, k, v])


def test_cross_entropy_agrees_with_jax_log_softmax() -> None:
    g = rng(11)
    logits = g.normal(size=(6, 5)) * 3.0
    labels = np.array([0, 4, 2, 2, 1, 3])

    def build(t: Tape, p: list[Value], i: list[Value]) -> Value:
        return cross_entropy(i[0], t.input(Tensor.selection(labels, 5, f64)))

    def reference(z: Any) -> Any:
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(z, axis=1), jnp.asarray(labels)[:, None], axis=1))

    agree(build, reference, [], [logits])


def test_cross_entropy_soft_targets_agree_with_jax() -> None:
    g = rng(12)
    logits = g.normal(size=(3, 4))
    targets = g.random(size=(3, 4))
    agree(
        lambda t, p, i: cross_entropy(i[0], i[1]),
        lambda z, y: -jnp.sum(y * jax.nn.log_softmax(z, axis=1)) / z.shape[0],
        [],
        [logits, targets],
    )


def test_cross_entropy_stays_finite_where_softmax_underflows() -> None:
    """The stable form never multiplies a zero target by log(0) = -inf.

    A class 1000 below the others has softmax exactly 0 in f64; the naive
    ``-(targets * log(softmax(logits))).sum()`` turns that into 0 * -inf = NaN.
    """
    logits = np.array([[0.0, -1000.0, 1.0], [2.0, 0.5, -1000.0]])
    targets = Tensor.selection([2, 0], 3, f64)

    def build(t: Tape) -> tuple[Value, Value]:
        z, y = t.input(logits), t.input(targets)
        naive = -(y * z.softmax(1).ln()).sum() / y.sum()
        return cross_entropy(z, y), naive

    network, (loss, naive) = Tape.record(build, element=f64)
    with np.errstate(all="ignore"):
        run = network.forward(network.parameters())
    expected = -np.mean([1.0 - np.log(1.0 + np.e), 2.0 - np.log(np.exp(2.0) + np.exp(0.5))])
    assert np.isnan(run.of(naive).scalar())
    assert abs(run.of(loss).scalar() - expected) < 1e-12


def test_mse_agrees_with_jax() -> None:
    g = rng(13)
    agree(
        lambda t, p, i: mse(i[0], i[1]),
        lambda a, b: jnp.mean((a - b) ** 2),
        [],
        [g.normal(size=(4, 2)), g.normal(size=(4, 2))],
    )


@pytest.mark.parametrize(("stride", "padding"), [(1, 0), (2, 1)])
def test_conv2d_agrees_with_jax_conv_general_dilated(stride: int, padding: int) -> None:
    g = rng(20 + stride)
    w, b, x = g.normal(size=(4, 3, 3, 2)), g.normal(size=(4,)), g.normal(size=(2, 3, 6, 5))

    def reference(w_: Any, b_: Any, x_: Any) -> Any:
        out = jax.lax.conv_general_dilated(
            x_, w_, (stride, stride), [(padding, padding), (padding, padding)],
            dimension_numbers=("NCHW", "OIHW", "NCHW"),
        )
        return out + b_[None, :, None, None]

    agree(lambda t, p, i: Conv2d(t, p[0], p[1], stride, padding)(i[0]), reference, [w, b], [x])


def test_max_pool_agrees_with_jax_reduce_window() -> None:
    x = rng(23).normal(size=(2, 3, 6, 6))

    def reference(x_: Any) -> Any:
        return jax.lax.reduce_window(x_, -jnp.inf, jax.lax.max, (1, 1, 3, 3), (1, 1, 2, 2), "VALID")

    agree(lambda t, p, i: MaxPool(3, 2)(i[0]), reference, [], [x])


def test_batch_norm_training_agrees_with_jax() -> None:
    g = rng(24)
    scale, shift, x = g.normal(size=(3,)), g.normal(size=(3,)), g.normal(size=(8, 3)) * 2.0 + 1.0

    def reference(s: Any, h: Any, x_: Any) -> Any:
        mean = jnp.mean(x_, axis=0)
        variance = jnp.var(x_, axis=0)  # biased, as the layer documents
        return (x_ - mean) / jnp.sqrt(variance + 1e-5) * s + h

    agree(lambda t, p, i: BatchNorm(t, p[0], p[1], 1e-5)(i[0]), reference, [scale, shift], [x])

    tape = Tape(f64)
    norm = BatchNorm(tape, scale, shift, 1e-5)
    out = norm.express(tape.input(x))
    network = tape.seal()
    run = network.forward(network.parameters())
    close(run.of(out.mean.symbol).numpy(), x.mean(axis=0))
    close(run.of(out.variance.symbol).numpy(), x.var(axis=0))


def test_batch_norm_inference_agrees_with_jax() -> None:
    g = rng(25)
    scale, shift, x = g.normal(size=(3,)), g.normal(size=(3,)), g.normal(size=(5, 3))
    mean, variance = g.normal(size=(3,)), g.random(size=(3,)) + 0.5

    def build(t: Tape, p: list[Value], i: list[Value]) -> Value:
        return BatchNorm(t, p[0], p[1], 1e-3).express_with(i[0], i[1], i[2])

    def reference(s: Any, h: Any, x_: Any, m: Any, v: Any) -> Any:
        return (x_ - m) / jnp.sqrt(v + 1e-3) * s + h

    agree(build, reference, [scale, shift], [x, mean, variance])


# ----------------------------------------------------------------------------- bad input
def test_impossible_layer_shapes_name_the_layer_and_shapes() -> None:
    tape = Tape()
    before = len(tape)
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: Linear(tape, np.zeros((2, 3)), np.zeros((4,))), "Linear"),
        (lambda: Linear(tape, np.zeros((2, 3, 1))), "Linear"),
        (lambda: LayerNorm(tape, np.zeros((3,)), np.zeros((4,)), 1e-5), "LayerNorm"),
        (lambda: RmsNorm(tape, np.zeros((3, 3)), 1e-5), "RmsNorm"),
        (lambda: Embedding(tape, np.zeros((5,))), "Embedding"),
        (lambda: Mlp(tape, [3], Activation.TANH, normal(0, 1.0)), "Mlp"),
        (lambda: Mlp(tape, [3, 0, 2], Activation.TANH, normal(0, 1.0)), "Mlp"),
        (lambda: Dropout(tape, (0, 3)), "Dropout"),
        (lambda: Conv2d(tape, np.zeros((4, 3, 2)), None), "Conv2d"),
        (lambda: Conv2d(tape, np.zeros((4, 3, 2, 2)), np.zeros((3,))), "Conv2d"),
        (lambda: BatchNorm(tape, np.zeros((3,)), np.zeros((2,)), 1e-5), "BatchNorm"),
    ]
    for make, name in cases:
        with pytest.raises(ShapeMismatchError) as caught:
            make()
        message = str(caught.value)
        assert name in message and "test_nn_layers.py" in message, message
        assert "[" in message
    assert len(tape) == before, "a refused layer recorded nothing"


def test_layer_applied_to_a_wrong_input_names_layer_and_shapes() -> None:
    tape = Tape()
    layer = Linear(tape, np.zeros((3, 2)), np.zeros((2,)))
    x = tape.input(np.zeros((4, 5)))
    with pytest.raises(ShapeMismatchError, match=r"Linear expects input \[\.\.\., 3\] \(rank >= 2\); got %\d+\[4, 5\]"):
        layer(x)
    norm = LayerNorm(tape, np.ones(3), np.zeros(3), 1e-5)
    with pytest.raises(ShapeMismatchError, match="LayerNorm"):
        norm(x)
    embed = Embedding(tape, np.zeros((7, 2)))
    with pytest.raises(ShapeMismatchError, match="Embedding"):
        embed(tape.input(Tensor.selection([1], 6)))


def test_dropout_mask_of_the_wrong_shape_is_refused() -> None:
    from topos.init import dropout

    tape = Tape()
    layer = Dropout(tape, (2, 3))
    with pytest.raises(ShapeMismatchError, match=r"Dropout: a mask of shape \[3, 2\] cannot feed a layer of shape \[2, 3\]"):
        layer.feed(dropout(seed=0, keep=0.5)((3, 2)))
    with pytest.raises(ShapeMismatchError, match="Dropout expects input"):
        layer(tape.input(np.zeros((3, 2))))
    y = layer(tape.input(np.zeros((2, 3))))
    network = tape.seal()
    with pytest.raises(ToposError, match="shape"):
        network.forward(network.parameters(), {layer.mask: np.ones((3, 2), dtype=np.float32)})
    del y


def test_attention_with_mismatched_head_dimensions_is_refused() -> None:
    tape = Tape()
    q = tape.input(np.zeros((4, 3)))
    k = tape.input(np.zeros((5, 2)))
    v = tape.input(np.zeros((5, 2)))
    before = len(tape)
    with pytest.raises(ShapeMismatchError, match=r"head dimensions differ: q \[4, 3\] and k \[5, 2\]"):
        scaled_dot_product(q, k, v, None, 1.0)
    k3 = tape.input(np.zeros((5, 3)))
    v4 = tape.input(np.zeros((4, 2)))
    with pytest.raises(ShapeMismatchError, match="different lengths"):
        scaled_dot_product(q, k3, v4, None, 1.0)
    with pytest.raises(ShapeMismatchError, match=r"mask must be \[4, 5\]"):
        scaled_dot_product(q, k3, v, tape.input(np.zeros((5, 4))), 1.0)
    with pytest.raises(ShapeMismatchError, match="scale must be rank 0"):
        scaled_dot_product(q, k3, v, None, tape.input(np.zeros((1,))))
    assert len(tape) == before + 4  # only the four inputs this test recorded itself


def test_shapes_helper_reads_payloads() -> None:
    from topos.nn.base import shape_of

    assert shape_of(np.zeros((2, 3))) == Shape((2, 3))
    assert shape_of(Tensor.zeros((4,))) == Shape((4,))
