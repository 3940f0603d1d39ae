"""Tokenizers for the transformer examples: GPT-2's byte-level BPE and a SentencePiece model.

Contract: both read files shipped inside topos (``topos/assets``, with provenance, licence
and sha256 in its README), so nothing is downloaded, ever. :func:`gpt2` runs GPT-2's
byte-level BPE through ``tiktoken`` over the ranks in ``gpt2.tiktoken`` (50,257 ids,
``<|endoftext|>`` = 50256); :func:`sentencepiece` loads a SentencePiece model through the
``sentencepiece`` package, by default the Llama-2-style Mistral v1 model (32,000 ids, byte
fallback, so every string round-trips). Both packages come with the optional ``text``
extra (``pip install 'topos-autodiff[text]'``); without them the constructors raise
:class:`TokenizerError` saying so. Encoding is lossless: ``decode(encode(s)) == s`` for
every string ``s`` (GPT-2 maps bytes, SentencePiece falls back to bytes).

Example:
    >>> tokens = gpt2()
    >>> tokens.encode("Hello world")
    [15496, 995]
    >>> tokens.decode([15496, 995])
    'Hello world'
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from topos.errors import ToposError, user_site

__all__ = [
    "ASSETS",
    "GPT2_SHA256",
    "MISTRAL_V1_SHA256",
    "Gpt2Tokenizer",
    "SentencePieceTokenizer",
    "TokenizerError",
    "gpt2",
    "sentencepiece",
]

ASSETS: Final = Path(__file__).resolve().parent / "assets"
GPT2_SHA256: Final = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
MISTRAL_V1_SHA256: Final = "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055"

# GPT-2's pre-tokenizer: contractions, letter runs, digit runs, other runs, each with at
# most one leading space, then whitespace (a run before a non-space keeps its last space
# for the next word).
_GPT2_SPLIT: Final = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
_END_OF_TEXT: Final = "<|endoftext|>"


class TokenizerError(ToposError):
    """A tokenizer's file or package is missing or damaged, or its input is not text / ids."""


def _checked(path: Path, sha256: str | None) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise TokenizerError(f"{user_site()}: cannot read tokenizer file {path}: {error.strerror}") from None
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise TokenizerError(f"{user_site()}: tokenizer file {path} does not have the sha256 {sha256} it should")
    return data


def _text(text: object, who: str) -> str:
    if not isinstance(text, str):
        raise TokenizerError(f"{user_site()}: {who}.encode takes a str, got {type(text).__name__}")
    return text


def _ids(ids: object, vocab: int, who: str) -> list[int]:
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise TokenizerError(f"{user_site()}: {who}.decode takes a sequence of ids, got {type(ids).__name__}")
    out: list[int] = []
    for position, item in enumerate(ids):
        if isinstance(item, bool) or not hasattr(item, "__index__"):
            raise TokenizerError(f"{user_site()}: {who}.decode: item {position} is {item!r}, not an integer id")
        value = int(item)
        if not 0 <= value < vocab:
            raise TokenizerError(f"{user_site()}: {who}.decode: id {value} at {position} is outside [0, {vocab})")
        out.append(value)
    return out


class Gpt2Tokenizer:
    """GPT-2's byte-level BPE (through ``tiktoken``) over ranks from a ``.tiktoken`` file."""

    __slots__ = ("_encoding",)

    def __init__(self, ranks_file: str | Path = ASSETS / "gpt2.tiktoken", sha256: str | None = GPT2_SHA256) -> None:
        try:
            import tiktoken
        except ImportError:
            raise TokenizerError(
                f"{user_site()}: the GPT-2 tokenizer needs tiktoken: pip install 'topos-autodiff[text]'"
            ) from None
        ranks: dict[bytes, int] = {}
        for number, line in enumerate(_checked(Path(ranks_file), sha256).splitlines(), 1):
            if not line:
                continue
            try:
                token, rank = line.split()
                ranks[base64.b64decode(token, validate=True)] = int(rank)
            except ValueError:
                raise TokenizerError(f"{user_site()}: {ranks_file}:{number}: not 'base64 rank'") from None
        self._encoding = tiktoken.Encoding(
            name="gpt2-topos",
            pat_str=_GPT2_SPLIT,
            mergeable_ranks=ranks,
            special_tokens={_END_OF_TEXT: len(ranks)},
        )

    @property
    def vocab_size(self) -> int:
        """50,257 for GPT-2: the ranks plus ``<|endoftext|>``."""
        return int(self._encoding.n_vocab)

    @property
    def end_of_text(self) -> int:
        """The id of ``<|endoftext|>`` (50256), which separates documents."""
        return int(self._encoding.eot_token)

    def encode(self, text: str) -> list[int]:
        """Ids of ``text``; the text ``<|endoftext|>`` is encoded as ordinary characters."""
        return list(self._encoding.encode_ordinary(_text(text, "Gpt2Tokenizer")))

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (a partial UTF-8 character decodes to U+FFFD)."""
        return str(self._encoding.decode(_ids(ids, self.vocab_size, "Gpt2Tokenizer")))

    def __repr__(self) -> str:
        return f"Gpt2Tokenizer(vocab_size={self.vocab_size})"


class SentencePieceTokenizer:
    """A SentencePiece model (through the ``sentencepiece`` package); no BOS/EOS are added.

    Example:
        >>> pieces = sentencepiece()
        >>> pieces.encode("Hello world"), pieces.vocab_size
        ([22557, 1526], 32000)
    """

    __slots__ = ("_processor",)

    def __init__(self, model_file: str | Path = ASSETS / "mistral_v1.model", sha256: str | None = MISTRAL_V1_SHA256) -> None:
        try:
            import sentencepiece as spm
        except ImportError:
            raise TokenizerError(
                f"{user_site()}: the SentencePiece tokenizer needs sentencepiece: pip install 'topos-autodiff[text]'"
            ) from None
        data = _checked(Path(model_file), sha256)
        processor: Any = spm.SentencePieceProcessor()
        try:
            processor.LoadFromSerializedProto(data)
        except (RuntimeError, OSError) as error:
            raise TokenizerError(f"{user_site()}: {model_file} is not a SentencePiece model: {error}") from None
        self._processor = processor

    @property
    def vocab_size(self) -> int:
        return int(self._processor.vocab_size())

    @property
    def bos(self) -> int:
        """The begin-of-sequence id (``<s>``, 1 for Llama-style models)."""
        return int(self._processor.bos_id())

    @property
    def eos(self) -> int:
        """The end-of-sequence id (``</s>``, 2 for Llama-style models)."""
        return int(self._processor.eos_id())

    def encode(self, text: str) -> list[int]:
        return [int(i) for i in self._processor.encode(_text(text, "SentencePieceTokenizer"))]

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._processor.decode(_ids(ids, self.vocab_size, "SentencePieceTokenizer")))

    def __repr__(self) -> str:
        return f"SentencePieceTokenizer(vocab_size={self.vocab_size})"


@functools.cache
def gpt2() -> Gpt2Tokenizer:
    """GPT-2's tokenizer over the shipped ranks (built once per process)."""
    return Gpt2Tokenizer()


@functools.cache
def sentencepiece() -> SentencePieceTokenizer:
    """The shipped Llama-2-style SentencePiece model (Mistral v1; built once per process)."""
    return SentencePieceTokenizer()
