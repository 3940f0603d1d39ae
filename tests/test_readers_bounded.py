"""Nothing a file says makes a reader hang or allocate without bound, tokenizers are lossless
on every string they accept and refuse the rest by name, and every public function of
topos.data and topos.tokenizers checks its arguments before it does anything.

The hostile files (gzip bombs, lying headers, a FIFO, a link to /dev/zero) are read in a
child process under a memory limit and a timeout, so a regression fails instead of hanging
the run or swapping the machine."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import InvalidArgumentError, Tape
from topos.data import CharVocabulary, Feeder, Loader, Selection, TokenStream, read_cifar, read_idx
from topos.errors import DataFileError, FeedError
from topos.tokenizers import (
    ASSETS,
    Gpt2Tokenizer,
    SentencePieceTokenizer,
    TokenizerError,
    UnencodableTextError,
    _foreign,
    gpt2,
    sentencepiece,
)

HERE = r"test_readers_bounded\.py:\d+"


def idx_header(code: int, extents: list[int]) -> bytes:
    return bytes([0, 0, code, len(extents)]) + b"".join(e.to_bytes(4, "big") for e in extents)


def zero_members(total: int) -> bytes:
    """gzip members inflating to ``total`` zero bytes (about a thousandth of that on disk):
    one 16 MiB member compressed once and repeated, since Python reads concatenated members."""
    member = gzip.compress(bytes(1 << 24), compresslevel=9)
    return member * (total >> 24)


# ------------------------------------------------------------------ hostile files, in a child

CHILD = r"""
import json, resource, sys, time
from topos.data import read_cifar, read_idx
from topos.tokenizers import Gpt2Tokenizer, SentencePieceTokenizer
import sentencepiece, tiktoken  # loaded before the limit: the limit is on what reading costs

with open("/proc/self/status") as status:
    size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (size + (1 << 30), resource.getrlimit(resource.RLIMIT_AS)[1]))
readers = {
    "read_idx": read_idx,
    "read_cifar": read_cifar,
    "gpt2": lambda path: Gpt2Tokenizer(path, sha256=None),
    "sentencepiece": lambda path: SentencePieceTokenizer(path, sha256=None),
}
results = {}
for reader, path in json.loads(sys.argv[1]):
    begun = time.monotonic()
    try:
        readers[reader](path)
        outcome = "returned"
    except BaseException as error:
        outcome = type(error).__name__ + ": " + str(error)[-200:]
    results[reader + " " + path] = [outcome, time.monotonic() - begun]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[object]]:
    folder = tmp_path_factory.mktemp("hostile")
    files = {
        # The header promises one 28 x 28 image; the data goes on for 3 GiB.
        "bomb-idx.gz": gzip.compress(idx_header(0x08, [1, 28, 28]) + bytes(784)) + zero_members(3 << 30),
        # Headers promising more than the limit, than a file this small can inflate to, or an
        # int64-wrapping product of extents; and a rank no numpy array has.
        "huge-idx.gz": gzip.compress(idx_header(0x08, [60000, 60000, 60000])),
        "wrap-idx.gz": gzip.compress(idx_header(0x0E, [0xFFFFFFFF] * 8)),
        "ratio-idx.gz": gzip.compress(idx_header(0x08, [1024, 1024, 512])),
        "rank-idx": idx_header(0x08, [1] * 200),
        # No header at all: CIFAR is bounded by its limit (60,000 records) as it inflates.
        "bomb-cifar.gz": zero_members(3 << 30),
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    os.mkfifo(folder / "fifo")
    (folder / "zero").symlink_to("/dev/zero")
    cases = [(reader, str(folder / name)) for reader in ("read_idx", "read_cifar", "gpt2", "sentencepiece") for name in ("fifo", "zero")]
    cases += [("read_idx", str(folder / name)) for name in files if "idx" in name]
    cases += [("read_cifar", str(folder / "bomb-cifar.gz"))]
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cases)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    results: dict[str, list[object]] = json.loads(done.stdout)
    return results


def test_every_hostile_file_is_refused_by_name_in_bounded_time_and_memory(hostile: dict[str, list[object]]) -> None:
    assert len(hostile) == 14
    for case, (outcome, seconds) in hostile.items():
        reader, path = case.split(" ", 1)
        expected = "TokenizerError" if reader in ("gpt2", "sentencepiece") else "DataFileError"
        assert str(outcome).startswith(expected + ":"), (case, outcome)
        assert isinstance(seconds, float) and seconds < 10, (case, seconds)
        if path.endswith(("fifo", "zero")):
            assert "is not a regular file" in str(outcome), (case, outcome)


def test_the_bombs_are_refused_for_what_they_are(hostile: dict[str, list[object]]) -> None:
    said = {Path(case.split(" ", 1)[1]).name: str(outcome) for case, (outcome, _) in hostile.items()}
    assert "holds more than 800 bytes" in said["bomb-idx.gz"]
    assert "more than limit=2147483648" in said["huge-idx.gz"] and "more than limit" in said["wrap-idx.gz"]
    assert "gzip bytes can inflate to" in said["ratio-idx.gz"]
    assert "rank 200" in said["rank-idx"]
    assert "holds more than limit=184380000 bytes" in said["bomb-cifar.gz"]


# ------------------------------------------------------------------ lying headers, in process


@pytest.mark.parametrize("zipped", [False, True])
def test_an_idx_file_longer_or_shorter_than_its_header_is_refused(tmp_path: Path, zipped: bool) -> None:
    header = idx_header(0x0C, [2, 3])
    for name, payload, said in [("long", bytes(25), "holds more than 36 bytes"), ("short", bytes(23), "holds 35 bytes")]:
        path = tmp_path / name
        path.write_bytes(gzip.compress(header + payload) if zipped else header + payload)
        with pytest.raises(DataFileError, match=rf"{HERE}: read_idx: .*{name}.*{said}; its header \[2, 3\] of >i4 needs 36"):
            read_idx(path)
    path = tmp_path / "exact"
    path.write_bytes(gzip.compress(header + bytes(range(24))) if zipped else header + bytes(range(24)))
    array = read_idx(path)
    assert array.dtype == np.int32 and array.tolist() == np.frombuffer(bytes(range(24)), ">i4").reshape(2, 3).tolist()


def test_a_damaged_gzip_and_a_small_limit_are_refused_by_name(tmp_path: Path) -> None:
    data = gzip.compress(idx_header(0x08, [100]) + bytes(100))
    (tmp_path / "cut.gz").write_bytes(data[:-12])
    with pytest.raises(DataFileError, match=rf"{HERE}: read_idx: cannot read"):
        read_idx(tmp_path / "cut.gz")
    (tmp_path / "ok.gz").write_bytes(data)
    with pytest.raises(DataFileError, match="more than limit=99"):
        read_idx(tmp_path / "ok.gz", limit=99)
    assert read_idx(tmp_path / "ok.gz", limit=100).shape == (100,)
    (tmp_path / "cifar").write_bytes(bytes(3073 * 2))
    with pytest.raises(DataFileError, match="holds more than limit=3073 bytes"):
        read_cifar(tmp_path / "cifar", limit=3073)


# ------------------------------------------------------------------ tokenizers: lossless or refused

# All of Unicode, lone surrogates included, plus the characters that matter most here.
any_text = st.text(
    st.one_of(st.characters(codec=None, exclude_categories=()), st.sampled_from(["\ud800", "\udfff", "\u2581", " ", "\n"])),
    max_size=30,
)


def surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) < 0xE000 for c in text)


@settings(max_examples=200, deadline=None)
@given(any_text)
def test_gpt2_round_trips_every_string_it_accepts_and_refuses_only_lone_surrogates(text: str) -> None:
    tokens = gpt2()
    if surrogate(text):
        with pytest.raises(UnencodableTextError, match=rf"{HERE}: Gpt2Tokenizer.encode: .* lone surrogate"):
            tokens.encode(text)
    else:
        assert tokens.decode(tokens.encode(text)) == text


@settings(max_examples=200, deadline=None)
@given(any_text)
def test_sentencepiece_round_trips_every_string_it_accepts_and_refuses_the_rest(text: str) -> None:
    pieces = sentencepiece()
    if surrogate(text) or "\u2581" in text:
        with pytest.raises(UnencodableTextError, match=rf"{HERE}: SentencePieceTokenizer.encode"):
            pieces.encode(text)
    else:
        assert pieces.decode(pieces.encode(text)) == text


def ranks_file(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "custom.tiktoken"
    path.write_text("\n".join(lines) + "\n")
    return path


def byte_line(value: int, rank: int) -> str:
    return f"{base64.b64encode(bytes([value])).decode()} {rank}"


def test_a_custom_ranks_file_is_checked_before_tiktoken_could_panic(tmp_path: Path) -> None:
    merge = f"{base64.b64encode(b'he').decode()} 256"
    good = Gpt2Tokenizer(ranks_file(tmp_path, [byte_line(b, b) for b in range(256)] + [merge]), sha256=None)
    assert good.vocab_size == 258 and good.decode(good.encode("hello \u00e9")) == "hello \u00e9"
    # Each of these made tiktoken panic (a BaseException) or overflow before the checks.
    bad = {
        "the byte 0x41 is not a token": [byte_line(b, b - (b > 0x41)) for b in range(256) if b != 0x41] + [merge.replace("256", "255")],
        "the ranks are not 0 .. 255": [byte_line(b, 0 if b == 7 else b) for b in range(256)],
        r"custom.tiktoken:257: the token is empty or named twice": [byte_line(b, b) for b in range(256)] + [byte_line(0, 256)],
        "the ranks are not 0 .. 256": [byte_line(b, b) for b in range(256)] + [merge.replace("256", str(2**40))],
        r"custom.tiktoken:1: not 'base64 rank'": ["!!! 0"],
    }
    for said, lines in bad.items():
        with pytest.raises(TokenizerError, match=rf"{HERE}: .*{said}"):
            Gpt2Tokenizer(ranks_file(tmp_path, lines), sha256=None)


class FakePanic(BaseException):
    """Stands for pyo3's PanicException: a BaseException that ``except Exception`` misses."""


def test_a_native_librarys_panic_comes_back_named_and_interrupts_pass_through() -> None:
    def panics() -> None:
        raise FakePanic("no entry found for key")

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(TokenizerError, match=rf"{HERE}: tiktoken: FakePanic: no entry found for key"):
        _foreign(panics, "tiktoken")
    with pytest.raises(KeyboardInterrupt):
        _foreign(interrupted, "tiktoken")


# ------------------------------------------------------------------ arguments checked first


def stream() -> TokenStream:
    return TokenStream(np.arange(10), vocab=10)


def loader() -> Loader:
    return Loader((np.arange(6),), batch=2, seed=1)


VOCABULARY = CharVocabulary.of(["emma", "ava"], boundary=".")

BAD_CALLS: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    ("negative id", lambda: VOCABULARY.decode([1, -1]), InvalidArgumentError, r"decode: token 1 is -1, not an id in \[0, 5\)"),
    ("id past the end", lambda: VOCABULARY.decode([5]), InvalidArgumentError, r"token 0 is 5"),
    ("float id", lambda: VOCABULARY.decode([1.0]), InvalidArgumentError, r"token 0 is 1.0"),
    ("bool id", lambda: VOCABULARY.decode([True]), InvalidArgumentError, r"token 0 is True"),
    ("encode bytes", lambda: VOCABULARY.encode(b"ava"), InvalidArgumentError, "encode takes a str; got bytes"),
    ("long boundary", lambda: CharVocabulary.of(["ab"], boundary=".."), InvalidArgumentError, "boundary must be one character"),
    ("texts of ints", lambda: CharVocabulary.of([1, 2]), InvalidArgumentError, "texts must be strings"),
    ("chars not str", lambda: CharVocabulary(["a"]), InvalidArgumentError, "characters must be distinct"),
    ("negative fraction", lambda: stream().split(-0.5), InvalidArgumentError, r"split: fraction must be a number in \[0, 1\]; got -0.5"),
    ("fraction past one", lambda: stream().split(1.5), InvalidArgumentError, "got 1.5"),
    ("nan fraction", lambda: stream().split(float("nan")), InvalidArgumentError, "got nan"),
    ("str fraction", lambda: stream().split("0.5"), InvalidArgumentError, "got '0.5'"),
    ("float starts", lambda: stream().windows([0.5], 2), InvalidArgumentError, "starts must be a 1-D sequence of integers; got float64"),
    ("negative batch", lambda: stream().sample(np.random.default_rng(0), -1, 2), InvalidArgumentError, "sample: batch must be an integer >= 1; got -1"),
    ("seed for generator", lambda: stream().sample(7, 2, 2), InvalidArgumentError, "generator must be a numpy.random.Generator; got int"),
    ("negative seed", lambda: Loader((np.arange(6),), batch=2, seed=-1), InvalidArgumentError, "Loader: seed must be an integer >= 0; got -1"),
    ("float seed", lambda: Loader((np.arange(6),), batch=2, seed=0.5), InvalidArgumentError, "seed must be an integer >= 0; got 0.5"),
    ("negative epoch", lambda: loader().epoch(-1), InvalidArgumentError, "epoch must be an integer >= 0; got -1"),
    ("shuffle not bool", lambda: loader().epoch(0, shuffle="no"), InvalidArgumentError, "shuffle must be a bool; got 'no'"),
    ("sample seed", lambda: loader().sample(3), InvalidArgumentError, "Loader.sample: generator must be"),
    ("selection vocab", lambda: Selection(0), InvalidArgumentError, "Selection: vocab must be an integer >= 1; got 0"),
    ("feeder pair", lambda: Feeder([3]), InvalidArgumentError, "inputs must be .* pairs; got 3"),
    ("feeder mask", lambda: Feeder([], mask=3), InvalidArgumentError, "mask must be a recorded Value or None; got int"),
    ("feeder batch", lambda: Feeder([])(3), FeedError, "takes a Batch or a sequence of arrays; got int"),
    ("path type", lambda: read_idx(3), DataFileError, "read_idx: path must be a str or os.PathLike; got int"),
    ("limit", lambda: read_cifar("x", limit=0), InvalidArgumentError, "read_cifar: limit must be an integer >= 1; got 0"),
    ("tokenizer path", lambda: Gpt2Tokenizer(3, sha256=None), TokenizerError, "path must be a str or os.PathLike; got int"),
    ("tokenizer sha", lambda: SentencePieceTokenizer(ASSETS / "mistral_v1.model", sha256="ABC"), TokenizerError, "sha256 must be 64 lowercase hex digits or None; got 'ABC'"),
    ("negative token id", lambda: gpt2().decode([-1]), TokenizerError, r"id -1 at 0 is outside \[0, 50257\)"),
    ("encode not str", lambda: sentencepiece().encode(["a"]), TokenizerError, "takes a str, got list"),
]


@pytest.mark.parametrize(("case", "call", "error", "said"), BAD_CALLS, ids=[case[0] for case in BAD_CALLS])
def test_a_bad_argument_is_refused_first_naming_it_and_the_users_line(
    case: str, call: Callable[[], object], error: type[Exception], said: str
) -> None:
    with pytest.raises(error, match=rf"{HERE}: .*{said}"):
        call()


def test_a_refused_call_changes_nothing() -> None:
    tokens = stream()
    before = tokens.tokens.copy()
    with pytest.raises(InvalidArgumentError):
        tokens.split(-1.0)
    with pytest.raises(InvalidArgumentError):
        tokens.windows([-3], 2)
    assert np.array_equal(tokens.tokens, before) and tokens.vocab == 10
    batches = loader()
    order = batches.order(0).copy()
    with pytest.raises(InvalidArgumentError):
        batches.epoch(-1)
    assert np.array_equal(batches.order(0), order)
    assert VOCABULARY.chars == ".aemv" and VOCABULARY.decode([2, 3, 3, 1]) == "emma"
    # Valid calls still answer as before.
    assert [b.arrays[0].tolist() for b in batches.epoch(0, shuffle=False)] == [[0, 1], [2, 3], [4, 5]]
    train, valid = tokens.split(0.7)
    assert (len(train), len(valid)) == (7, 3)
    tape = Tape()
    x = tape.input(np.zeros((2, 3)))
    assert Feeder([(x, None)])([np.ones((2, 3))])[x.symbol].shape == x.shape
