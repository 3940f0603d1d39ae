"""Constants in emitted StableHLO: one copy each, splats as ``dense<v>``, large ones as hex.

A constant larger than 16 elements is written as its stored bytes in hex (little-endian), so
its text costs two characters a byte and no per-element Python; the bits must come back
exactly from XLA and from the StableHLO reference interpreter, for every element type and
every bit pattern (NaN payloads, signed zeros, infinities, subnormals).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import ElementType, Tape, Tensor, Value, bf16, f32, f64, xla
from topos.stages.emission import emit_network

Array = np.ndarray[Any, Any]

ELEMENTS: dict[str, tuple[ElementType, Any, Any]] = {
    "f32": (f32, np.float32, np.uint32),
    "f64": (f64, np.float64, np.uint64),
    "bf16": (bf16, ml_dtypes.bfloat16, np.uint16),
}


def _constants(text: str) -> list[str]:
    return [line for line in text.splitlines() if "stablehlo.constant" in line]


def _leaf_module(payload: Array, element: ElementType) -> str:
    network, y = Tape.record(lambda t: t.leaf(Tensor(payload, element=element)), element=element)
    return emit_network(network, [y])


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(sorted(ELEMENTS)),
    shape=st.sampled_from([(17,), (3, 7), (2, 3, 5), (64, 9)]),
    seed=st.integers(0, 2**32 - 1),
)
def test_large_constants_cross_as_hex_with_every_bit_kept(name: str, shape: tuple[int, ...], seed: int) -> None:
    element, dtype, word = ELEMENTS[name]
    rng = np.random.default_rng(seed)
    # Arbitrary words: NaNs with payloads, both zeros, infinities and subnormals all occur.
    bits = rng.integers(0, np.iinfo(word).max, size=shape, dtype=word, endpoint=True)
    bits.reshape(-1)[:2] = bits.reshape(-1)[0]  # a repeat does not make it a splat
    payload = bits.view(dtype)
    text = _leaf_module(payload, element)
    (line,) = _constants(text)
    assert re.search(r'dense<"0x[0-9A-F]+">', line), line
    # Two hex digits a byte: the text grows with the data, not with per-element spelling.
    assert len(line) <= 2 * bits.nbytes + 100
    (on_xla,) = xla.run_module(text)
    (on_reference,) = xla.evaluate_module(text)
    for got in (on_xla, on_reference):
        assert got.shape == shape
        assert got.reshape(-1).view(word).tolist() == bits.reshape(-1).tolist()


@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(sorted(ELEMENTS)), value=st.floats(allow_nan=False, width=32), extent=st.integers(2, 300))
def test_a_splat_prints_one_literal_whatever_its_size(name: str, value: float, extent: int) -> None:
    element, dtype, _ = ELEMENTS[name]
    payload = np.full((extent, 2), value).astype(dtype)
    text = _leaf_module(payload, element)
    (line,) = _constants(text)
    literal = line.split("dense<", 1)[1].split(">", 1)[0]
    assert "[" not in literal and '"' not in literal, line  # one literal, neither nested nor a blob
    (got,) = xla.run_module(text)
    assert got.tobytes() == payload.tobytes()


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(sorted(ELEMENTS)),
    extent=st.integers(17, 200),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_two_valued_constant_crosses_as_an_i1_choice_with_both_words_exact(name: str, extent: int, seed: int) -> None:
    element, dtype, word = ELEMENTS[name]
    rng = np.random.default_rng(seed)
    low, high = rng.integers(0, np.iinfo(word).max, size=2, dtype=word, endpoint=True)
    if low == high:
        high = word(low ^ 1)
    bits = np.where(rng.random((extent, 3)) < 0.5, low, high).astype(word)
    bits[0, 0], bits[0, 1] = low, high  # both words occur
    text = _leaf_module(bits.view(dtype), element)
    (flag,) = [line for line in _constants(text) if "xi1>" in line]
    # One byte of hex per element, whatever the element's width.
    assert re.search(r'dense<"0x(00|01)+">', flag) and len(flag) <= 2 * bits.size + 100
    assert "stablehlo.select" in text
    (on_xla,) = xla.run_module(text)
    (on_reference,) = xla.evaluate_module(text)
    for got in (on_xla, on_reference):
        assert got.reshape(-1).view(word).tolist() == bits.reshape(-1).tolist()


def test_a_causal_mask_is_written_once_and_small() -> None:
    from topos.nn import causal_mask

    def build(t: Tape) -> list[Value]:
        x = t.input(np.ones((64, 64), np.float32))
        return [x + t.leaf(causal_mask(64, float("-inf"))), x * t.leaf(causal_mask(64, float("-inf")))]

    network, roots = Tape.record(build, element=f32)
    text = emit_network(network, list(roots))
    assert text.count("xi1>") == 2  # one i1 constant (its line names the type twice: value and select)
    assert len(text) < 3 * 64 * 64
    got = xla.XlaExecutable.of_network(network, list(roots)).forward(network.parameters(), {})
    want = network.forward(network.parameters(), {})
    for symbol in roots:
        assert got.of(symbol).bits().tolist() == want.of(symbol).bits().tolist()


def test_signed_zeros_are_not_one_splat() -> None:
    payload = np.zeros(40, np.float32)
    payload[7] = -0.0
    text = _leaf_module(payload, f32)
    (got,) = xla.run_module(text)
    assert got.view(np.uint32).tolist() == payload.view(np.uint32).tolist()
    assert 'dense<"0x' in text and "stablehlo.select" in text  # two words: +0.0 and -0.0


def test_small_constants_stay_readable_decimals() -> None:
    text = _leaf_module(np.array([[0.5, 1.0], [2.0, -3.25]], np.float32), f32)
    (line,) = _constants(text)
    assert "dense<[[0.5, 1.0], [2.0, -3.25]]>" in line


def _shared(t: Tape) -> list[Value]:
    rng = np.random.default_rng(3)
    table = rng.standard_normal((32, 32)).astype(np.float32)
    other = table.copy()
    other[5, 5] = np.nextafter(other[5, 5], np.float32(np.inf))  # one ulp apart: a different constant
    x = t.input(rng.standard_normal((32, 32)).astype(np.float32))
    a, b, c = t.leaf(Tensor(table)), t.leaf(Tensor(table.copy())), t.leaf(Tensor(other))
    return [x * a, x + b, x - c]


def test_identical_constants_are_written_once_and_others_are_not_merged() -> None:
    network, roots = Tape.record(_shared, element=f32)
    symbols = list(roots)
    text = emit_network(network, symbols)
    blobs = [line for line in _constants(text) if 'dense<"0x' in line]
    assert len(blobs) == 2, blobs
    got = xla.XlaExecutable.of_network(network, symbols).forward(network.parameters(), {})
    want = network.forward(network.parameters(), {})
    for symbol in symbols:
        # One IEEE operation per element (nothing XLA could contract into an FMA): exact on both roads.
        assert got.of(symbol).bits().tolist() == want.of(symbol).bits().tolist()


def test_many_selection_rows_cross_as_hex_and_gather_exactly() -> None:
    rng = np.random.default_rng(4)
    rows = rng.integers(0, 50, size=40)

    def build(t: Tape) -> Value:
        table = t.parameter(rng.standard_normal((50, 6)).astype(np.float32))
        return table.gather(t.leaf(Tensor.selection(rows.tolist(), 50)))

    network, y = Tape.record(build, element=f32)
    text = emit_network(network, [y])
    assert any('dense<"0x' in line and "xi32>" in line for line in _constants(text)), text
    got = xla.XlaExecutable.of_network(network, [y]).forward(network.parameters(), {})
    want = network.forward(network.parameters(), {})
    assert got.of(y).bits().tolist() == want.of(y).bits().tolist()


_EMIT = """
import numpy as np
from topos import Tape, Tensor, f32
from topos.stages.emission import emit_network
rng = np.random.default_rng(9)
big = rng.standard_normal((40, 40)).astype(np.float32)
def build(t):
    x = t.input(rng.standard_normal((40, 40)).astype(np.float32))
    mask = t.leaf(Tensor(np.where(np.triu(np.ones((40, 40), bool), 1), -1e9, 0.0).astype(np.float32)))
    return [x * t.leaf(Tensor(big)) + t.leaf(Tensor(big.copy())), x + t.leaf(Tensor(np.full((40, 40), 0.5, np.float32))) + mask]
network, roots = Tape.record(build, element=f32)
print(emit_network(network, list(roots)), end="")
"""


def test_constant_text_is_byte_identical_across_processes() -> None:
    texts = [
        subprocess.run([sys.executable, "-c", _EMIT], capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2")
    ]
    assert texts[0] == texts[1] and 'dense<"0x' in texts[0] and "xi1>" in texts[0]
