"""KV-cache decoding equals the full-context forward bit for bit under Numerics.EXACT, and
the generation helpers are seeded and honour greedy, temperature and top-k."""

from __future__ import annotations

import numpy as np
import pytest

from topos import InvalidArgumentError, Numerics, Tape, Tensor, f32, f64
from topos.init import normal
from topos.ir.element import ElementType
from topos.nn import (
    Activation,
    Block,
    Embedding,
    LayerNorm,
    Linear,
    Mlp,
    MultiHeadAttention,
    PositionTable,
    RmsNorm,
    Rotary,
    SwiGlu,
    TransformerLm,
)
from topos.nn.attention import causal_mask
from topos.nn.generation import Decoder, choose


def gpt_like(tape: Tape, vocab: int, dim: int, heads: int, layers: int, length: int) -> TransformerLm:
    init = normal(3, 0.4, tape.element)
    blocks = [
        Block(
            LayerNorm.init(tape, dim, 1e-5),
            MultiHeadAttention.init(tape, dim, heads, init),
            LayerNorm.init(tape, dim, 1e-5),
            Mlp(tape, [dim, 4 * dim, dim], Activation.GELU_TANH, init),
        )
        for _ in range(layers)
    ]
    return TransformerLm(Embedding.init(tape, vocab, dim, init), PositionTable.init(tape, length, dim, init), blocks, LayerNorm.init(tape, dim, 1e-5))


def llama_like(tape: Tape, vocab: int, dim: int, heads: int, layers: int, length: int) -> TransformerLm:
    init = normal(4, 0.4, tape.element)
    rotary = Rotary(tape, dim // heads, length)
    blocks = [
        Block(
            RmsNorm.init(tape, dim, 1e-6),
            MultiHeadAttention.init(tape, dim, heads, init, kv_heads=heads // 2, fused=False, bias=False, rotary=rotary),
            RmsNorm.init(tape, dim, 1e-6),
            SwiGlu.init(tape, dim, 3 * dim, init),
        )
        for _ in range(layers)
    ]
    head = Linear.init(tape, dim, vocab, init, bias=False)
    return TransformerLm(Embedding.init(tape, vocab, dim, init), None, blocks, RmsNorm.init(tape, dim, 1e-6), head)


@pytest.mark.parametrize(
    ("make", "element", "vocab", "dim", "heads", "layers", "context", "length"),
    [
        (gpt_like, f32, 13, 8, 2, 2, 6, 6),
        (llama_like, f32, 11, 8, 4, 2, 5, 7),  # caches longer than the context
        (gpt_like, f64, 9, 12, 3, 1, 4, 4),
    ],
)
def test_decode_steps_equal_the_full_context_bit_for_bit(
    make: object, element: ElementType, vocab: int, dim: int, heads: int, layers: int, context: int, length: int
) -> None:
    assert callable(make)
    tape = Tape(element)
    table = max(context, length)
    model: TransformerLm = make(tape, vocab, dim, heads, layers, table)
    tokens = [int(t) for t in np.random.default_rng(vocab).integers(0, vocab, size=context)]
    full_tokens = tape.input(Tensor.selection(tokens, vocab, element))
    positions = tape.input(Tensor.selection(list(range(context)), table, element))
    mask = tape.input(causal_mask(context, float("-inf"), element))
    full = model(full_tokens, 1, mask, positions)
    decoder = Decoder(tape, model, length)
    network = tape.seal()
    parameters = network.parameters()
    whole = network.entry(full.symbol).numerics(Numerics.EXACT).lower().forward(parameters, {}).of(full.symbol).bits()
    steps = decoder.lower(network, Numerics.EXACT).logits_along(parameters, tokens)
    assert len(steps) == context
    for position, logits in enumerate(steps):
        assert (logits.bits()[0] == whole[position]).all(), f"position {position} differs"
    # The comparison is sharp: the logits really change from position to position.
    assert not (whole[0] == whole[-1]).all()


def test_a_wrong_cache_placement_would_be_caught() -> None:
    """Feeding the step the mask of the next position changes the logits: the test above
    compares something that depends on the cache and the mask."""
    tape = Tape(f32)
    model = gpt_like(tape, 7, 4, 2, 1, 4)
    decoder = Decoder(tape, model, 4)
    network = tape.seal()
    decoder.lower(network, Numerics.EXACT)
    parameters = network.parameters()
    right = decoder.logits_along(parameters, [1, 2, 3])[-1].bits()
    shifted = decoder.logits_along(parameters, [1, 2, 3, 3])[-1].bits()
    assert not (right == shifted).all()


def test_generation_is_seeded_greedy_and_top_k() -> None:
    tape = Tape(f64)
    model = llama_like(tape, 11, 8, 2, 1, 12)
    decoder = Decoder(tape, model, 12)
    network = tape.seal()
    decoder.lower(network)
    parameters = network.parameters()
    a = decoder.generate(parameters, [1, 2], 8, np.random.default_rng(7))
    b = decoder.generate(parameters, [1, 2], 8, np.random.default_rng(7))
    assert a == b and len(a) == 10 and a[:2] == [1, 2]
    greedy = decoder.generate(parameters, [1, 2], 8, np.random.default_rng(0), temperature=0.0)
    # Greedy equals top-1 sampling, and each chosen token is the argmax of its step's logits.
    assert greedy == decoder.generate(parameters, [1, 2], 8, np.random.default_rng(1), top_k=1)
    along = decoder.logits_along(parameters, greedy[:-1])
    assert [int(np.argmax(row.numpy()[0])) for row in along[1:]] == greedy[2:]
    with pytest.raises(InvalidArgumentError, match="exceed the cache length"):
        decoder.generate(parameters, [1], 12, np.random.default_rng(0))


def test_choose_respects_top_k_and_temperature() -> None:
    logits = np.array([0.0, 2.0, 1.9, -1.0, 1.8])
    rng = np.random.default_rng(0)
    drawn = {choose(logits, rng, top_k=2) for _ in range(200)}
    assert drawn == {1, 2}
    hot = [choose(logits, rng, temperature=50.0) for _ in range(400)]
    assert set(hot) == {0, 1, 2, 3, 4}
    cold = {choose(logits, rng, temperature=1e-3) for _ in range(50)}
    assert cold == {1}
    with pytest.raises(InvalidArgumentError, match="top_k"):
        choose(logits, rng, top_k=0)
    with pytest.raises(InvalidArgumentError, match="finite"):
        choose([np.nan], rng)


@pytest.mark.parametrize(("make", "element"), [(gpt_like, f32), (llama_like, f32), (gpt_like, f64)])
def test_the_xla_road_keeps_caches_on_the_device_and_matches_the_host_road(make: object, element: ElementType) -> None:
    """``lower(network, road="xla")`` carries the caches as device arrays from step to step.
    The same compiled module fed through the host road (every cache back to numpy and in
    again) gives the same bits at every step, and both stay within XLA's envelope of the
    Fast plan: 64 roundings of the logits' scale (FMA contraction, XLA's summation order and
    transcendentals over a 2-layer model; observed 2 to 8)."""
    from topos import XlaExecutable

    assert callable(make)
    tape = Tape(element)
    model: TransformerLm = make(tape, 13, 8, 2, 2, 9)
    on_plan, on_xla = Decoder(tape, model, 9), Decoder(tape, model, 9)
    network = tape.seal()
    parameters = network.parameters()
    on_plan.lower(network)
    on_xla.lower(network, road="xla")
    tokens = [1, 5, 2, 7, 3, 3, 0]
    planned = [t.numpy() for t in on_plan.logits_along(parameters, tokens)]
    resident = [t.numpy() for t in on_xla.logits_along(parameters, tokens)]
    host = XlaExecutable.of_plan(network.entry(on_xla.roots()).lower())
    state = {v.symbol: Tensor.zeros(v.shape, element) for cache in on_xla.caches for v in (cache.keys, cache.values)}
    at = list(host.results)
    for position, token in enumerate(tokens):
        feeds = {on_xla.token.symbol: Tensor.selection([token], 13, element), **on_xla.position.feeds(position), **state}
        out = host(parameters, feeds)
        for before, after in zip(on_xla.caches, on_xla.updated, strict=True):
            state[before.keys.symbol] = out[at.index(after.keys.symbol)]
            state[before.values.symbol] = out[at.index(after.values.symbol)]
        hosted = out[at.index(on_xla.logits.symbol)].numpy()
        assert hosted.tobytes() == resident[position].tobytes(), f"position {position}"
        scale = float(np.abs(planned[position]).max())
        assert np.abs(resident[position] - planned[position]).max() <= 64 * np.finfo(element.dtype).eps * scale
    # The logits move with the position, so carrying a stale cache would show.
    assert not np.array_equal(resident[1], resident[2])
    greedy = on_plan.generate(parameters, [1], 8, np.random.default_rng(0), temperature=0.0)
    assert on_xla.generate(parameters, [1], 8, np.random.default_rng(0), temperature=0.0) == greedy


def test_threads_generating_on_one_xla_decoder_keep_their_own_caches() -> None:
    from concurrent.futures import ThreadPoolExecutor

    tape = Tape(f32)
    model = gpt_like(tape, 11, 8, 2, 1, 10)
    decoder = Decoder(tape, model, 10)
    network = tape.seal()
    parameters = network.parameters()
    decoder.lower(network, road="xla")
    prompts = [[1], [2, 3], [4], [5, 6, 7], [8], [9, 10]]
    alone = [decoder.generate(parameters, p, 5, np.random.default_rng(0), temperature=0.0) for p in prompts]
    assert len({tuple(a) for a in alone}) > 1  # different prompts really decode differently
    with ThreadPoolExecutor(3) as pool:
        together = list(pool.map(lambda p: decoder.generate(parameters, p, 5, np.random.default_rng(0), temperature=0.0), prompts * 3))
    assert together == alone * 3


def test_a_decoder_names_an_unknown_road() -> None:
    tape = Tape(f32)
    decoder = Decoder(tape, gpt_like(tape, 7, 4, 2, 1, 4), 4)
    network = tape.seal()
    with pytest.raises(InvalidArgumentError, match="road must be 'plan' or 'xla'"):
        decoder.lower(network, road="gpu")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="applies to road='plan'"):
        decoder.lower(network, Numerics.EXACT, road="xla")
    with pytest.raises(InvalidArgumentError, match="before decoding"):
        decoder.logits_along(network.parameters(), [1])
