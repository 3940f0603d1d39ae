"""Tokenizers for the transformer examples: GPT-2's byte-level BPE and a SentencePiece model.

Contract: both read files shipped inside topos (``topos/assets``, with provenance, licence
and sha256 in its README), so nothing is downloaded, ever. :func:`gpt2` runs GPT-2's
byte-level BPE through ``tiktoken`` over the ranks in ``gpt2.tiktoken`` (50,257 ids,
``<|endoftext|>`` = 50256); :func:`sentencepiece` loads a SentencePiece model through the
``sentencepiece`` package, by default the Llama-2-style Mistral v1 model (32,000 ids, byte
fallback, so every string round-trips). Both packages come with the optional ``text``
extra (``pip install 'topos-autodiff[text]'``); without them the constructors raise
:class:`TokenizerError` saying so.

Encoding is lossless: ``decode(encode(s)) == s`` for every string ``encode`` accepts, and
``encode`` refuses the rest with :class:`UnencodableTextError`. GPT-2 encodes every ``str``
that has a UTF-8 form, that is every string without a lone surrogate (``"\\ud800"``): it
maps bytes. SentencePiece encodes the strings its model gives back exactly; for the shipped
model (byte fallback) that is every UTF-8 string without U+2581, the model's space marker,
which would come back as a space. A model file is read only if it is a regular file (a FIFO
or a device is refused before it is opened) of at most 256 MiB; a ranks file is checked
line by line (ranks ``0 .. n-1`` once each, every single byte a token) before ``tiktoken``
sees it, and anything a native library raises, a Rust panic included, comes back as a
:class:`TokenizerError`.

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
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from topos.data import _read_regular
from topos.errors import ToposError, user_site

__all__ = [
    "ASSETS",
    "GPT2_SHA256",
    "MISTRAL_V1_SHA256",
    "Gpt2Tokenizer",
    "SentencePieceTokenizer",
    "TokenizerError",
    "UnencodableTextError",
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
# The largest tokenizer file read: GPT-2's ranks are 1.6 MB, SentencePiece models a few MB.
_FILE_LIMIT: Final = 1 << 28
# What a native call may raise that is the interpreter's own business, not the library's.
_CONTROL: Final = (KeyboardInterrupt, SystemExit, GeneratorExit)
_T = TypeVar("_T")


class TokenizerError(ToposError):
    """A tokenizer's file or package is missing or damaged, or its input is not text / ids."""


class UnencodableTextError(TokenizerError):
    """A ``str`` the tokenizer cannot encode losslessly (a lone surrogate; U+2581 for SentencePiece)."""


def _checked(path: object, sha256: object, who: str) -> bytes:
    if not (sha256 is None or (isinstance(sha256, str) and re.fullmatch("[0-9a-f]{64}", sha256))):
        raise TokenizerError(f"{user_site()}: {who}: sha256 must be 64 lowercase hex digits or None; got {sha256!r}")
    data = _read_regular(path, f"{who}: tokenizer file", TokenizerError, _FILE_LIMIT)
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise TokenizerError(f"{user_site()}: tokenizer file {str(path)!r} does not have the sha256 {sha256} it should")
    return data


def _foreign(call: Callable[[], _T], failed: str) -> _T:
    """``call()`` into a native library, whose failures (a pyo3 ``PanicException`` is a
    ``BaseException``, past any ``except Exception``) come back as a :class:`TokenizerError`."""
    try:
        return call()
    except _CONTROL:
        raise
    except BaseException as error:
        raise TokenizerError(f"{user_site()}: {failed}: {type(error).__name__}: {error}") from None


def _text(text: object, who: str) -> str:
    if not isinstance(text, str):
        raise TokenizerError(f"{user_site()}: {who}.encode takes a str, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise UnencodableTextError(
            f"{user_site()}: {who}.encode: {text[error.start]!r} at {error.start} is a lone surrogate, which has no "
            "UTF-8 form; only strings without one are encodable"
        ) from None
    return text


def _ranks(data: bytes, where: str) -> dict[bytes, int]:
    """A ``.tiktoken`` file's ranks, checked for what ``tiktoken`` would panic on or misuse."""
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line:
            continue
        try:
            token, rank = line.split()
            key, value = base64.b64decode(token, validate=True), int(rank)
        except ValueError:
            raise TokenizerError(f"{user_site()}: {where}:{number}: not 'base64 rank'") from None
        if not key or key in ranks:
            raise TokenizerError(f"{user_site()}: {where}:{number}: the token is empty or named twice")
        ranks[key] = value
    # tiktoken panics on repeated ranks and on a byte that is no token (its BPE starts from
    # single bytes); ranks 0 .. n-1 make every id below the vocabulary's size decodable.
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise TokenizerError(f"{user_site()}: {where}: the ranks are not 0 .. {len(ranks) - 1}, each once")
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise TokenizerError(f"{user_site()}: {where}: the byte {missing[0]:#04x} is not a token; byte-level BPE needs all 256")
    return ranks


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
        ranks = _ranks(_checked(ranks_file, sha256, "Gpt2Tokenizer"), str(ranks_file))
        self._encoding = _foreign(
            lambda: tiktoken.Encoding(
                name="gpt2-topos", pat_str=_GPT2_SPLIT, mergeable_ranks=ranks, special_tokens={_END_OF_TEXT: len(ranks)}
            ),
            f"tiktoken refused the ranks of {ranks_file}",
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
        """Ids of ``text``; the text ``<|endoftext|>`` is encoded as ordinary characters.

        A string with a lone surrogate raises :class:`UnencodableTextError` (tiktoken would
        silently encode U+FFFD in its place).
        """
        checked = _text(text, "Gpt2Tokenizer")
        return list(_foreign(lambda: self._encoding.encode_ordinary(checked), "Gpt2Tokenizer.encode failed in tiktoken"))

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (a partial UTF-8 character decodes to U+FFFD)."""
        checked = _ids(ids, self.vocab_size, "Gpt2Tokenizer")
        return str(_foreign(lambda: self._encoding.decode(checked), "Gpt2Tokenizer.decode failed in tiktoken"))

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
        data = _checked(model_file, sha256, "SentencePieceTokenizer")
        processor: Any = spm.SentencePieceProcessor()
        _foreign(lambda: processor.LoadFromSerializedProto(data), f"{model_file} is not a SentencePiece model")
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
        """Ids of ``text``, if the model gives it back exactly; otherwise :class:`UnencodableTextError`.

        The round trip is checked on every call: a model may normalize text, drop what it has
        no piece for, or (like the shipped one) decode U+2581, its space marker, as a space.
        """
        checked = _text(text, "SentencePieceTokenizer")
        ids = [int(i) for i in _foreign(lambda: self._processor.encode(checked), "SentencePieceTokenizer.encode failed")]
        if self.decode(ids) != checked:
            marker = " (U+2581 is the model's space marker)" if "\u2581" in checked else ""
            raise UnencodableTextError(f"{user_site()}: SentencePieceTokenizer.encode: {checked!r:.60} does not come back from this model{marker}")
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``."""
        checked = _ids(ids, self.vocab_size, "SentencePieceTokenizer")
        return str(_foreign(lambda: self._processor.decode(checked), "SentencePieceTokenizer.decode failed"))

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
