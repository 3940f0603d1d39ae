"""The named jobs whose digests topos pins: ``every-op``, ``makemore``, ``lenet``, ``gpt``.

Contract: :data:`JOBS` lists each job once, with its smoke sizes; a job records its network in
an element and returns it with its roots (the loss first) and its feeds (:class:`Prepared`).
The feeds come from :mod:`topos.digest.run`'s draws only, so a job is a pure function of
its element.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs
import ml_dtypes
import numpy as np

from topos.digest.run import (
    RATE,
    UNSIGNED,
    Array,
    Feeds,
    bit_draws,
    digest_run,
    index_draws,
    uniform_draws,
)
from topos.init import xavier
from topos.ir.element import ElementType
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.ops import MapOperation
from topos.kernels import libm
from topos.stages.spec import Tape, Value
from topos.tensor import Tensor, TensorLike

__all__ = [
    "GPT",
    "JOBS",
    "LENET",
    "MAKEMORE",
    "GptSizes",
    "Job",
    "LenetSizes",
    "MakemoreSizes",
    "Prepared",
    "special_values",
]


# --------------------------------------------------------------------------- the named jobs


@attrs.frozen
class Prepared:
    """A job recorded in one element: the network, its roots (the loss first) and its feeds."""

    network: Network
    roots: tuple[Symbol, ...]
    feeds: Feeds | None


@attrs.frozen
class Job:
    """A named digest: how to record it in an element, how many steps, at which rate."""

    name: str
    steps: int
    sizes: str
    prepare: Callable[[ElementType], Prepared]
    rate: float = RATE

    def digest(self, element: ElementType, nans: Literal["canonical", "bits"] = "canonical") -> str:
        """This job's digest in ``element`` (see :func:`digest_run`); the table's use ``nans="canonical"``.

        Example:
            >>> from topos import f64
            >>> from topos.digest import read_table
            >>> job = JOBS[1]
            >>> job.name, job.digest(f64) == read_table()["jobs"][job.name]["digests"]["f64"]
            ('makemore', True)
        """
        prepared = self.prepare(element)
        return digest_run(
            prepared.network, prepared.roots, steps=self.steps, rate=self.rate, feeds=prepared.feeds, nans=nans
        )


# ml_dtypes.finfo is untyped (numpy's finfo does not know bfloat16); the bound name gives
# mypy its signature.
_ml_finfo: Callable[[np.dtype[Any]], Any] = ml_dtypes.finfo


def _finfo(element: ElementType) -> Any:
    return _ml_finfo(element.dtype)


def _stored(element: ElementType, values: Any) -> Array:
    stored: Array = element.convert(np.asarray(values, dtype=np.float64))
    return stored


def _neighbour(element: ElementType, value: float, up: bool) -> float:
    # The next representable number away from or toward zero, by the bits (np.nextafter
    # knows no bfloat16); only used for finite nonzero values.
    stored = np.ascontiguousarray(_stored(element, [value]))
    bits = stored.view(UNSIGNED[stored.dtype.itemsize]).copy()
    if up:
        bits += 1
    else:
        bits -= 1
    return float(bits.view(element.dtype).astype(np.float64)[0])


def special_values(element: ElementType) -> Array:
    """The special values ``every-op`` feeds every map, in ``element``'s storage.

    Zeros of both signs, both infinities, a quiet NaN, subnormals, the smallest normal, the
    largest finite, ±1 and its neighbours, and the maps' edges: where ``exp`` overflows and
    underflows, ``log1p``'s pole at -1, ``tanh`` and ``erf`` saturating, ``sin`` and ``cos``
    at multiples of π/2 and at a huge argument, ``atan`` far out.

    Example:
        >>> from topos import f32
        >>> v = special_values(f32)
        >>> bool(np.isnan(v).any() and np.isposinf(v).any() and np.isneginf(v).any())
        True
    """
    info = _finfo(element)
    sub = float(info.smallest_subnormal)
    tiny = float(info.smallest_normal)
    huge = float(info.max)
    # The portable log: the platform's math.log could move these inputs by an ulp, and the
    # digest with them.
    overflow = libm.scalar(MapOperation.LN, huge)
    underflow = libm.scalar(MapOperation.LN, sub)
    values = [
        0.0, -0.0, math.inf, -math.inf, math.nan,
        sub, -sub, tiny - sub, tiny, -tiny, huge, -huge, huge / 2.0,
        1.0, -1.0, _neighbour(element, 1.0, up=True), _neighbour(element, 1.0, up=False),
        _neighbour(element, -1.0, up=False), _neighbour(element, -1.0, up=True), 0.5, -0.5, 2.0, -3.0,
        overflow, _neighbour(element, overflow, up=True), underflow, -20.0, 9.0, 20.0,
        2.0**-30, -(2.0**-30), math.pi / 2.0, math.pi, -math.pi, 3.0 * math.pi / 2.0, 1e22, -1e22,
        1e10, -1e10, 0.1, 7.25, -100.0,
    ]  # fmt: skip
    return _stored(element, values)


_BINARY_VALUES: Final = (
    0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, 2.0, -3.0, 3.0, -0.25, 7.5,
)  # fmt: skip


def _binary_values(element: ElementType) -> Array:
    info = _finfo(element)
    extra = [float(info.smallest_subnormal), float(info.smallest_normal), float(info.max), -float(info.max)]
    return _stored(element, [*_BINARY_VALUES, *extra])


def _weights(seed: int, shape: tuple[int, ...]) -> Callable[[int], TensorLike]:
    return lambda step: uniform_draws(seed, step, shape, 0.5, 1.5)


def _every_op(element: ElementType) -> Prepared:
    """One graph over every opcode and every map, on special values and on per-step draws."""
    specials = special_values(element)
    n = specials.size
    pair = _binary_values(element)
    m = pair.size
    tape = Tape(element)
    outputs: list[Value] = []
    draws: dict[Symbol, Callable[[int], TensorLike]] = {}

    def fed(default: TensorLike, draw: Callable[[int], TensorLike]) -> Value:
        value = tape.input(default)
        draws[value.symbol] = draw
        return value

    def mixed(seed: int) -> Callable[[int], TensorLike]:
        # Step 0 feeds the special values; later steps random bit patterns (every exponent)
        # in the even lanes and moderate numbers, where the maps' polynomials work, in the odd.
        def draw(step: int) -> TensorLike:
            if step == 0:
                return Tensor(specials, element)
            lanes = bit_draws(seed, step, n, element).astype(np.float64)
            lanes[1::2] = uniform_draws(seed, step, (n,), -6.0, 6.0)[1::2]
            return Tensor(_stored(element, lanes), element)

        return draw

    # Every map, on parameters (their gradients are each map's derivative at the specials)
    # and on inputs (fresh values each step; their gradients are returned as roots).
    map_inputs: list[Value] = []
    for k, operation in enumerate(MapOperation):
        outputs.append(tape.parameter(specials).map(operation))
        x = fed(specials, mixed(100 + k))
        map_inputs.append(x)
        outputs.append(x.map(operation))

    # Elementwise binary opcodes over the cross product of binary special values, each with
    # its own operands so that one op's NaN gradient cannot hide another's.
    a_grid = np.repeat(pair, m).reshape(m, m)
    b_grid = np.tile(pair, m).reshape(m, m)
    binary: list[Callable[[Value, Value], Value]] = [
        lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
        lambda a, b: a.maximum(b), lambda a, b: a.powf(b), lambda a, b: (a >= b).select(a, b),
        lambda a, b: a.select(b, -a), lambda a, b: a.step(b) * b,
    ]  # fmt: skip
    for combine in binary:
        outputs.append(combine(tape.parameter(a_grid), tape.parameter(b_grid)))
    outputs.append(-tape.parameter(specials))

    # Products and sums: special values through a matrix product, moderate ones batched.
    s = tape.parameter(specials[:24].reshape(4, 6))
    t = tape.parameter(np.roll(specials, 7)[:24].reshape(6, 4))
    outputs.append(s.matmul(t))
    outputs.append(s.sum_along(1))
    outputs.append(s.sum().reshape((1,)))
    init = xavier(7, element)
    batched = tape.parameter(init((2, 3, 4))).matmul(fed(uniform_draws(8, 0, (2, 4, 2)), lambda k: uniform_draws(8, k, (2, 4, 2))))
    outputs.append(batched)

    # Log-softmax and log-sum-exp along both axes, over rows that reach every edge.
    info = _finfo(element)
    rows = _stored(element, [
        [-math.inf, -math.inf, -math.inf, -math.inf], [math.inf, 0.0, 1.0, 2.0], [math.nan, 0.0, 0.0, 0.0],
        [info.max, info.max, 0.0, -1.0], [-info.max, 0.0, -0.0, 1.0], [info.smallest_subnormal, 0.0, -0.0, info.smallest_normal],
        [1.0, 2.0, 3.0, 4.0], [-100.0, 100.0, 0.5, -0.5],
    ])  # fmt: skip
    for axis in (0, 1):
        outputs.append(tape.parameter(rows).log_softmax(axis))
        outputs.append(tape.parameter(rows).logsumexp(axis))

    # Layout: reshape, permute, narrow, pad, broadcast of a rank-0 value, broadcast along.
    cube = tape.parameter(init((2, 3, 4)))
    outputs.append(cube.permute((2, 0, 1)).reshape((4, 6)).narrow(1, 1, 4).pad(0, 1, 6))
    outputs.append(tape.parameter(1.5).broadcast((3, 2)) * tape.parameter(init((3, 2))))
    outputs.append(tape.parameter(specials[:5]).broadcast_along(0, 3))

    # Gather and scatter through one-hot selections drawn each step (Embedding's opcodes).
    table = tape.parameter(_stored(element, np.roll(specials, 3)[:15].reshape(5, 3)))
    chosen = fed(Tensor.selection([0, 4, 2, 2], 5, element), lambda k: Tensor.selection(index_draws(9, k, 4, 5), 5, element))
    outputs.append(table.gather(chosen))
    outputs.append(tape.parameter(init((4, 3))).scatter(chosen))

    # Convolution windows (unfold), pooling (maximum over windows), and fold itself.
    from topos.nn import conv2d, max_pool

    image = fed(uniform_draws(10, 0, (1, 2, 6, 6)), lambda k: uniform_draws(10, k, (1, 2, 6, 6)))
    kernel = tape.parameter(init((3, 2, 3, 3)))
    bias = tape.parameter(_stored(element, [0.5, -0.5, 0.0]))
    outputs.append(max_pool(conv2d(image, kernel, bias, stride=1, padding=1).relu(), 2))
    outputs.append(conv2d(image, kernel, None, stride=2, padding=0, dilation=2))
    windows = tape.parameter(init((2, 4, 3)))
    outputs.append(windows.fold(1, 3, 2, 1, 9))
    outputs.append(tape.parameter(init((2, 7))).unfold(1, 3, 2, dilation=2))

    # A value whose gradient is stopped, and a composite or two spelled from the opcodes.
    u = tape.parameter(init((3, 3)))
    outputs.append(u.stop_gradient() * u)
    outputs.append(tape.parameter(specials).gelu(approximate=True))
    outputs.append(tape.parameter(specials).sigmoid())

    # The loss weighs each output by per-step draws in [0.5, 1.5): cotangents other than 1,
    # and never 0 (0 * inf would hide the inf).
    loss: Value | None = None
    for j, output in enumerate(outputs):
        weight = fed(Tensor(np.ones(output.shape.axes), element), _weights(200 + j, output.shape.axes))
        term = (output * weight).sum()
        loss = term if loss is None else loss + term
    assert loss is not None
    input_gradients = tape.differentiate(loss, map_inputs).gradients()
    network = tape.seal()

    def feeds(step: int) -> dict[Symbol, TensorLike]:
        return {symbol: draw(step) for symbol, draw in draws.items()}

    roots = (loss.symbol, *(o.symbol for o in outputs), *input_gradients)
    return Prepared(network, roots, feeds)


# Smoke sizes: every job in every element together runs in about ten seconds on one core
# (the budget is a minute, for slower CI machines). The layers are the examples' own (LeNet's
# 28x28 geometry, makemore's context of 3 and embedding of 10, the small GPT's widths) with
# smaller batches and a narrower MLP; some tensors are below and some above the 4096 bytes
# from which tensors are copied onto aligned storage (topos.ir.element.ALIGNED_FROM), so the
# digests see both layouts.
@attrs.frozen
class MakemoreSizes:
    """The makemore MLP's sizes (the lesson: context 3, embedding 10, hidden 200, batch 32)."""

    vocab: int = 27
    context: int = 3
    dim: int = 10
    hidden: int = 64
    batch: int = 16


@attrs.frozen
class LenetSizes:
    """LeNet-5's sizes (the example: 28x28 images, channels 6 and 16, dense 120 and 84, batch 32)."""

    image: int = 28
    channels: tuple[int, int] = (6, 16)
    dense: tuple[int, int] = (120, 84)
    classes: int = 10
    batch: int = 4


@attrs.frozen
class GptSizes:
    """The small GPT's sizes (makemore's transformer lesson: block 8, width 32, 4 heads, 2 layers, batch 8)."""

    vocab: int = 27
    length: int = 8
    dim: int = 32
    heads: int = 4
    layers: int = 2
    batch: int = 4


MAKEMORE: Final = MakemoreSizes()
LENET: Final = LenetSizes()
GPT: Final = GptSizes()


def _makemore(element: ElementType) -> Prepared:
    """The makemore MLP: embed a context of characters, concatenate, tanh, logits."""
    from topos.nn import Activation, Embedding, Linear, Sequential, cross_entropy

    vocab, context, dim, hidden, batch = MAKEMORE.vocab, MAKEMORE.context, MAKEMORE.dim, MAKEMORE.hidden, MAKEMORE.batch
    tape = Tape(element)
    init = xavier(21, element)
    embedding = Embedding.init(tape, vocab, dim, init)
    head = Sequential(Linear.init(tape, context * dim, hidden, init), Activation.TANH, Linear.init(tape, hidden, vocab, init))
    tokens = tape.input(Tensor.selection([0] * (batch * context), vocab, element))
    targets = tape.input(Tensor.selection([0] * batch, vocab, element))
    logits = head(embedding(tokens).reshape((batch, context * dim)))
    loss = cross_entropy(logits, targets)
    network = tape.seal()

    def feeds(step: int) -> dict[Symbol, TensorLike]:
        return {
            tokens.symbol: Tensor.selection(index_draws(22, step, batch * context, vocab), vocab, element),
            targets.symbol: Tensor.selection(index_draws(23, step, batch, vocab), vocab, element),
        }

    return Prepared(network, (loss.symbol, logits.symbol), feeds)


def _lenet(element: ElementType) -> Prepared:
    """LeNet-5's layers: conv 5x5 (pad 2), relu, pool, conv 5x5, relu, pool, three dense."""
    from topos.nn import Activation, Conv2d, Linear, MaxPool, Sequential, cross_entropy

    side, (c1, c2), (d1, d2), classes, batch = LENET.image, LENET.channels, LENET.dense, LENET.classes, LENET.batch
    tape = Tape(element)
    init = xavier(31, element)
    features = Sequential(
        Conv2d.init(tape, 1, c1, 5, init, padding=2), Activation.RELU, MaxPool(2),
        Conv2d.init(tape, c1, c2, 5, init), Activation.RELU, MaxPool(2),
    )  # fmt: skip
    flat = c2 * ((side // 2 - 4) // 2) ** 2
    head = Sequential(
        Linear.init(tape, flat, d1, init), Activation.RELU,
        Linear.init(tape, d1, d2, init), Activation.RELU,
        Linear.init(tape, d2, classes, init),
    )  # fmt: skip
    images = tape.input(np.zeros((batch, 1, side, side)))
    labels = tape.input(Tensor.selection([0] * batch, classes, element))
    maps = features(images)
    logits = head(maps.reshape((batch, flat)))
    loss = cross_entropy(logits, labels)
    network = tape.seal()

    def feeds(step: int) -> dict[Symbol, TensorLike]:
        return {
            images.symbol: uniform_draws(32, step, (batch, 1, side, side), 0.0, 1.0),
            labels.symbol: Tensor.selection(index_draws(33, step, batch, classes), classes, element),
        }

    return Prepared(network, (loss.symbol, logits.symbol), feeds)


def _gpt(element: ElementType) -> Prepared:
    """The small GPT of the transformer facades: token and position tables, pre-norm blocks
    (LayerNorm, fused-qkv causal attention, LayerNorm, tanh-GELU MLP of 4·d), tied head."""
    from topos.nn import (
        Activation,
        Block,
        Embedding,
        LayerNorm,
        Mlp,
        MultiHeadAttention,
        PositionTable,
        TransformerLm,
        cross_entropy,
    )

    vocab, length, dim, heads, layers, batch = GPT.vocab, GPT.length, GPT.dim, GPT.heads, GPT.layers, GPT.batch
    tape = Tape(element)
    init = xavier(41, element)
    blocks = [
        Block(
            LayerNorm.init(tape, dim, 1e-5),
            MultiHeadAttention.init(tape, dim, heads, init),
            LayerNorm.init(tape, dim, 1e-5),
            Mlp(tape, [dim, 4 * dim, dim], Activation.GELU_TANH, init),
        )
        for _ in range(layers)
    ]
    model = TransformerLm(
        Embedding.init(tape, vocab, dim, init), PositionTable.init(tape, length, dim, init), blocks, LayerNorm.init(tape, dim, 1e-5)
    )
    rows = batch * length
    tokens = tape.input(Tensor.selection([0] * rows, vocab, element))
    targets = tape.input(Tensor.selection([0] * rows, vocab, element))
    causal = np.where(np.triu(np.ones((length, length)), 1) > 0, -np.inf, 0.0)
    positions = tape.leaf(Tensor.selection(list(range(length)), length, element))
    logits = model(tokens, batch, tape.leaf(Tensor(causal, element)), positions)
    loss = cross_entropy(logits, targets)
    network = tape.seal()

    def feeds(step: int) -> dict[Symbol, TensorLike]:
        # The targets are the tokens shifted by one inside each sequence, as in training.
        stream = index_draws(42, step, batch * (length + 1), vocab).reshape(batch, length + 1)
        return {
            tokens.symbol: Tensor.selection(stream[:, :-1].reshape(-1), vocab, element),
            targets.symbol: Tensor.selection(stream[:, 1:].reshape(-1), vocab, element),
        }

    return Prepared(network, (loss.symbol, logits.symbol), feeds)


def _describe(sizes: MakemoreSizes | LenetSizes | GptSizes) -> str:
    return ", ".join(f"{field.name} {getattr(sizes, field.name)}" for field in attrs.fields(type(sizes)))


JOBS: Final[tuple[Job, ...]] = (
    Job(
        "every-op",
        20,
        "every opcode and every map on special values (zeros, infinities, NaN, subnormals, extremes, "
        "the maps' edges) and per-step draws; forward values, gradients, SGD",
        _every_op,
    ),
    Job("makemore", 20, f"makemore MLP: {_describe(MAKEMORE)}", _makemore),
    Job("lenet", 20, f"LeNet-5 layers: {_describe(LENET)}", _lenet),
    Job("gpt", 20, f"GPT (TransformerLm, tied head): {_describe(GPT)}", _gpt),
)
"""The named digest jobs, each computed in every element of :data:`topos.digest.ELEMENTS`."""
