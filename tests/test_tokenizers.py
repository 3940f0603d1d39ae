"""The shipped tokenizers: known ids, lossless round trips on real and drawn text, the files'
identity, and clear errors for bad input."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos.tokenizers import (
    ASSETS,
    GPT2_SHA256,
    MISTRAL_V1_SHA256,
    Gpt2Tokenizer,
    SentencePieceTokenizer,
    TokenizerError,
    gpt2,
    sentencepiece,
)

SHAKESPEARE = (Path(__file__).resolve().parent.parent / "examples" / "data" / "shakespeare.txt").read_text(encoding="ascii")


def test_shipped_files_are_the_published_ones() -> None:
    assert hashlib.sha256((ASSETS / "gpt2.tiktoken").read_bytes()).hexdigest() == GPT2_SHA256
    assert hashlib.sha256((ASSETS / "mistral_v1.model").read_bytes()).hexdigest() == MISTRAL_V1_SHA256


def test_gpt2_known_ids() -> None:
    tokens = gpt2()
    assert tokens.vocab_size == 50257
    assert tokens.end_of_text == 50256
    assert tokens.encode("Hello world") == [15496, 995]
    # A leading space belongs to the word it precedes: " world" is one token, "world" another.
    assert tokens.encode(" world") == [995]
    assert tokens.encode("world") != [995]


def test_sentencepiece_known_ids() -> None:
    pieces = sentencepiece()
    assert pieces.vocab_size == 32000
    assert (pieces.bos, pieces.eos) == (1, 2)
    assert pieces.encode("Hello world") == [22557, 1526]


@pytest.mark.parametrize("make", [gpt2, sentencepiece])
def test_round_trip_on_a_play(make: object) -> None:
    assert callable(make)
    tokens = make()
    scene = SHAKESPEARE[:20000]
    ids = tokens.encode(scene)
    assert tokens.decode(ids) == scene
    # Compression is real: far fewer ids than characters.
    assert len(ids) < len(scene) / 2.5


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40).filter(lambda text: "\u2581" not in text))
def test_round_trip_on_drawn_text(text: str) -> None:
    # U+2581 (SentencePiece's space marker) is refused; tests/test_readers_bounded.py draws it.
    assert gpt2().decode(gpt2().encode(text)) == text
    assert sentencepiece().decode(sentencepiece().encode(text)) == text


def test_bad_input_is_refused_clearly() -> None:
    with pytest.raises(TokenizerError, match=r"test_tokenizers\.py:\d+.*takes a str"):
        gpt2().encode(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TokenizerError, match="outside"):
        gpt2().decode([50257])
    with pytest.raises(TokenizerError, match="not an integer id"):
        sentencepiece().decode([1.5])  # type: ignore[list-item]


def test_damaged_files_are_refused(tmp_path: Path) -> None:
    damaged = tmp_path / "gpt2.tiktoken"
    damaged.write_bytes((ASSETS / "gpt2.tiktoken").read_bytes()[:-10])
    with pytest.raises(TokenizerError, match="sha256"):
        Gpt2Tokenizer(damaged)
    with pytest.raises(TokenizerError, match="cannot read"):
        SentencePieceTokenizer(tmp_path / "missing.model")
    junk = tmp_path / "junk.model"
    junk.write_bytes(b"not a model")
    with pytest.raises(TokenizerError, match="not a SentencePiece model"):
        SentencePieceTokenizer(junk, sha256=None)
