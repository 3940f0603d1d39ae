"""Exported models under faults: every single-bit flip and every truncation of a small
export's three files is refused before anything runs (or, where the byte carries no meaning,
answers bit for bit as before); crafted signatures, escaping names, links, FIFOs and devices
raise :class:`~topos.export_loader.ArtifactError` naming the file; feeds that do not fit the
signature raise :class:`~topos.export_loader.FeedError` and the model never runs on them."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from topos import Tape, Tensor, bf16, export_loader
from topos.export import export
from topos.export_loader import ArtifactError, FeedError, LoadError, Model, signature_digest

VOCAB = 5
WHITESPACE = b" \t\n\r"
FILES = ("model.jax", "weights.safetensors", "signature.json")


def build(element: Any = None) -> tuple[Any, Any, dict[Any, str]]:
    """An embedding, a matmul, a float input and a tanh: a module of about 1.5 kB."""
    tape = Tape(element) if element is not None else Tape()
    table = tape.parameter(np.arange(10, dtype=np.float32).reshape(VOCAB, 2) / 7)
    tokens = tape.input(Tensor.selection([0, 1, 2], VOCAB))
    shift = tape.input(np.zeros((3, 1), np.float32))
    weights = tape.parameter(np.array([[0.5], [-1.0]], np.float32))
    y = ((tokens @ table) @ weights + shift).tanh()
    network = tape.seal()
    return network.entry(y.symbol).lower(), network.parameters(), {tokens.symbol: "tokens", shift.symbol: "shift",
                                                                   y.symbol: "y"}


FEEDS = {"tokens": np.array([0, 4, 2], np.int32), "shift": np.array([[0.25], [-0.5], [0.0]], np.float32)}


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    plan, parameters, names = build()
    folder = tmp_path_factory.mktemp("faults") / "tiny"
    export(plan, parameters, folder, names=names)
    return folder


@pytest.fixture(scope="module")
def answer(origin: Path) -> bytes:
    return Model(origin)(FEEDS)["y"].tobytes()


@pytest.fixture
def work(origin: Path, tmp_path: Path) -> Path:
    """A fresh copy of the export to damage."""
    folder = tmp_path / "work"
    folder.mkdir()
    for name in (*FILES, "load.py"):
        (folder / name).write_bytes((origin / name).read_bytes())
    return folder


def put(file: Path, data: bytes) -> None:
    """Overwrite ``file`` in place (truncating to zero first would make ext4 flush each time)."""
    descriptor = os.open(file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(descriptor, data, 0)
        os.ftruncate(descriptor, len(data))
    finally:
        os.close(descriptor)


def refused(folder: Path, naming: str | Path, match: str = "") -> str:
    with pytest.raises(ArtifactError) as caught:
        Model(folder)
    message = str(caught.value)
    assert str(naming) in message and match in message, message
    return message


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging: an alarm interrupts a blocking open or read."""

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still blocked after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_the_signature_records_the_digests_and_the_loader_is_the_artifacts(origin: Path) -> None:
    signature = json.loads((origin / "signature.json").read_text())
    assert signature["format"] == "topos-export/2"
    assert signature["sha256"] == signature_digest(signature)
    for part, name in (("module", "model.jax"), ("weights", "weights.safetensors")):
        assert signature[part]["file"] == name
        assert signature[part]["size"] == (origin / name).stat().st_size
        assert len(signature[part]["sha256"]) == 64
    assert (origin / "load.py").read_bytes() == Path(export_loader.__file__).read_bytes()


# ----------------------------------------------------------------------------- single faults
def test_every_byte_flip_of_every_file_is_refused_or_means_nothing(
    origin: Path, work: Path, answer: bytes
) -> None:
    """Every bit of every byte of the signature and the weights is flipped. The module (the
    largest file, read only after its digest matches) gets one flip per byte, the bit
    rotating with the position: its bytes reach nothing but the digest, so more bits per byte
    would test the hash, not the loader. Each signature byte is also replaced by one
    whitespace byte (rotating), the fault that can leave its meaning unchanged."""
    original = json.loads((origin / "signature.json").read_text())
    refusals = accepted = ran = 0
    for name in FILES:
        file = work / name
        data = (origin / name).read_bytes()
        for position, byte in enumerate(data):
            if name == "model.jax":
                values = [byte ^ (1 << position % 8)]
            else:
                values = [byte ^ (1 << bit) for bit in range(8)]
            if name == "signature.json":
                spaces = [w for w in WHITESPACE if w != byte]
                values.append(spaces[position % len(spaces)])
            for value in values:
                damaged = bytearray(data)
                damaged[position] = value
                put(file, bytes(damaged))
                try:
                    model = Model(work)
                except ArtifactError as error:
                    assert str(file) in str(error), (name, position, value, str(error))
                    refusals += 1
                    continue
                # Loaded: only a signature byte whose change leaves the parsed signature equal.
                accepted += 1
                assert name == "signature.json" and model.signature == original, (name, position, value)
                if accepted % 100 == 1:  # each run compiles (0.2 s); the equal signature is the proof
                    ran += 1
                    assert model(FEEDS)["y"].tobytes() == answer, (position, value)
        put(file, data)
    sizes = {name: len((origin / name).read_bytes()) for name in FILES}
    assert refusals >= sizes["model.jax"] + 8 * (sizes["weights.safetensors"] + sizes["signature.json"])
    assert accepted > 100 and ran > 1, "whitespace replacements should load"


def test_every_truncation_of_every_file_is_refused(origin: Path, work: Path) -> None:
    for name in FILES:
        file = work / name
        data = (origin / name).read_bytes()
        for cut in range(len(data)):
            put(file, data[:cut])
            if name == "signature.json" and not data[cut:].strip():
                assert Model(work).signature == json.loads(data)  # only trailing whitespace was cut
                continue
            refused(work, file)
        put(file, data)


# ----------------------------------------------------------------------------- crafted signatures
def write_signature(folder: Path, signature: Any, *, digest: bool = True) -> None:
    if digest and isinstance(signature, dict):
        signature["sha256"] = signature_digest(signature)
    (folder / "signature.json").write_text(json.dumps(signature))


Craft = Callable[[dict[str, Any]], Any]


def _set(path: tuple[Any, ...], value: Any) -> Craft:
    def craft(signature: dict[str, Any]) -> dict[str, Any]:
        place = signature
        for key in path[:-1]:
            place = place[key]
        place[path[-1]] = value
        return signature
    return craft


def _drop(*path: Any) -> Craft:
    def craft(signature: dict[str, Any]) -> dict[str, Any]:
        place = signature
        for key in path[:-1]:
            place = place[key]
        del place[path[-1]]
        return signature
    return craft


TOKENS = ("arguments", 2)  # parameters first, then the inputs: tokens, shift
CRAFTED: list[tuple[str, Craft, str]] = [
    ("a list", lambda s: [s], "must be a JSON object"),
    ("format 1", _set(("format",), "topos-export/1"), "export the model again"),
    ("format 3", _set(("format",), "topos-export/3"), "not a topos-export/2 artifact"),
    ("no format", _drop("format"), "not a topos-export/2 artifact"),
    ("no outputs", _drop("outputs"), "must have the keys"),
    ("an extra key", _set(("extra",), 1), "must have the keys"),
    ("arguments an object", _set(("arguments",), {}), "arguments must be a list"),
    ("an argument a string", _set(("arguments", 0), "parameter_0"), "arguments[0] must be an object"),
    ("a shape a number", _set((*TOKENS, "shape"), 3), "shape must be"),
    ("a negative size", _set((*TOKENS, "shape"), [-1]), "shape must be"),
    ("a huge shape", _set((*TOKENS, "shape"), [2**62]), "shape must be"),
    ("a huge product", _set(("arguments", 0, "shape"), [2**30, 2**30, 2**30]), "shape must be"),
    ("a boolean size", _set((*TOKENS, "shape"), [True]), "shape must be"),
    ("an unknown dtype", _set((*TOKENS, "dtype"), "object"), "dtype must be one of"),
    ("an unknown kind", _set((*TOKENS, "kind"), "weird"), "kind must be"),
    ("a zero vocab", _set((*TOKENS, "vocab"), 0), "vocab must be"),
    ("a string vocab", _set((*TOKENS, "vocab"), "5"), "vocab must be"),
    ("a boolean vocab", _set((*TOKENS, "vocab"), True), "vocab must be"),
    ("a float encoding", _set((*TOKENS, "dtype"), "float32"), "encoding must be"),
    ("no vocab", _drop(*TOKENS, "vocab"), "index input has"),
    ("a nameless output", _set(("outputs", 0, "name"), ""), "non-empty string"),
    ("twice a name", _set(("arguments", 1, "name"), "parameter_0"), "names must be unique"),
    ("a short digest", _set(("module", "sha256"), "ab"), "64 lowercase hex"),
    ("a negative file size", _set(("weights", "size"), -1), "whole number of bytes"),
    ("options not strings", _set(("compiler_options", "x"), 1), "compiler_options"),
    ("weights climbing out", _set(("weights", "file"), "../weights.safetensors"), "plain file name"),
    ("an absolute module", _set(("module", "file"), "/etc/passwd"), "plain file name"),
    ("a subfolder", _set(("module", "file"), "sub/model.jax"), "plain file name"),
    ("the folder itself", _set(("weights", "file"), "."), "plain file name"),
    ("the parent", _set(("weights", "file"), ".."), "plain file name"),
    ("the signature as weights", _set(("weights", "file"), "signature.json"), "plain file name"),
    ("a NUL", _set(("weights", "file"), "weights\0"), "plain file name"),
    ("one file twice", _set(("weights", "file"), "model.jax"), "two files"),
    ("a missing file", _set(("weights", "file"), "gone.safetensors"), "cannot read it"),
    ("a wrong size", lambda s: _set(("weights", "size"), s["weights"]["size"] + 1)(s), "signature.json records"),
    ("a wrong digest", _set(("module", "sha256"), "0" * 64), "SHA-256 is not the one"),
    ("a parameter renamed", _set(("arguments", 0, "name"), "other"), "the signature's parameters are"),
    ("a parameter reshaped", _set(("arguments", 0, "shape"), [2, 5]), "is not float32[2, 5]"),
    ("an output reshaped", _set(("outputs", 0, "shape"), [1, 3]), "the module's results"),
    ("an input retyped", _set(("arguments", 3, "dtype"), "float64"), "the module's arguments"),
]


@pytest.mark.parametrize(("case", "craft", "message"), CRAFTED, ids=[case for case, _, _ in CRAFTED])
def test_crafted_signatures_are_refused_naming_the_cause(
    origin: Path, work: Path, case: str, craft: Craft, message: str
) -> None:
    signature = craft(json.loads((origin / "signature.json").read_text()))
    write_signature(work, signature)
    started = time.monotonic()
    text = refused(work, work, message)
    assert time.monotonic() - started < 2, (case, text)


def test_a_meaningful_change_without_a_new_digest_is_refused(origin: Path, work: Path) -> None:
    """A wider vocabulary would weaken the range check without changing any answer: the
    signature's own digest is what catches it."""
    signature = json.loads((origin / "signature.json").read_text())
    signature["arguments"][2]["vocab"] = 37
    write_signature(work, signature, digest=False)
    refused(work, work / "signature.json", "its sha256 does not match")


@pytest.mark.parametrize(("text", "message"), [
    (b'{"format": "topos-export/2", "format": "topos-export/2"}', "duplicate key"),
    (b'{"format": NaN}', "NaN is not JSON"),
    (b'\xff\xfe{}', "UnicodeDecodeError"),
    (b"[" * 100_000 + b"]" * 100_000, "not a valid signature"),
    (b"", "not a valid signature"),
], ids=["duplicate-key", "nan", "not-utf8", "deep", "empty"])
def test_malformed_json_is_refused(work: Path, text: bytes, message: str) -> None:
    (work / "signature.json").write_bytes(text)
    refused(work, work / "signature.json", message)


def test_links_fifos_and_devices_are_refused_without_blocking(origin: Path, work: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.safetensors"
    outside.write_bytes((origin / "weights.safetensors").read_bytes())
    os.symlink(outside, work / "out.safetensors")
    os.symlink(work / "weights.safetensors", work / "in.safetensors")
    os.symlink("/dev/zero", work / "zero.safetensors")
    os.mkfifo(work / "fifo.safetensors")
    os.mkdir(work / "folder.safetensors")
    signature = json.loads((origin / "signature.json").read_text())
    cases = [("out.safetensors", "resolves outside"), ("in.safetensors", "a symbolic link"),
             ("zero.safetensors", "resolves outside"), ("fifo.safetensors", "a FIFO"),
             ("folder.safetensors", "a directory")]
    with deadline(10):
        for name, cause in cases:
            signature["weights"]["file"] = name
            write_signature(work, signature)
            refused(work, work / name, cause)
        # The signature itself: a link (even to a good copy), a FIFO, a device.
        good = tmp_path / "signature.json"
        good.write_bytes((origin / "signature.json").read_bytes())
        for make, cause in ((lambda p: os.symlink(good, p), "a symbolic link"), (os.mkfifo, "a FIFO"),
                            (lambda p: os.symlink("/dev/zero", p), "a symbolic link")):
            (work / "signature.json").unlink()
            make(work / "signature.json")
            refused(work, work / "signature.json", cause)
    refused(tmp_path / "missing", tmp_path / "missing", "not a directory")


# ----------------------------------------------------------------------------- feeds
BAD_FEEDS: list[tuple[str, dict[str, Any], str]] = [
    ("out of range", {"tokens": np.array([0, 5, 1], np.int32)}, "position 1 holds 5"),
    ("negative", {"tokens": np.array([0, -1, 1], np.int32)}, "position 1 holds -1"),
    ("wraps in int32", {"tokens": np.array([0, 2**32 + 1, 1], np.int64)}, f"holds {2**32 + 1}"),
    ("huge unsigned", {"tokens": np.array([0, 2**64 - 1, 1], np.uint64)}, f"holds {2**64 - 1}"),
    ("float indices", {"tokens": np.array([0.0, 1.0, 2.0])}, "takes integers"),
    ("boolean indices", {"tokens": np.array([True, False, True])}, "takes integers"),
    ("indices too many", {"tokens": np.array([0, 1, 2, 3], np.int32)}, "must have shape [3]"),
    ("indices as a matrix", {"tokens": np.array([[0, 1, 2]], np.int32)}, "must have shape [3]"),
    ("a scalar shift", {"shift": np.float32(1.0)}, "must have shape [3, 1]"),
    ("integer shift", {"shift": np.array([[1], [2], [3]])}, "takes floats"),
    ("complex shift", {"shift": np.ones((3, 1), np.complex64)}, "takes floats"),
    ("string shift", {"shift": np.array([["a"], ["b"], ["c"]])}, "takes floats"),
    ("object shift", {"shift": np.array([[None], [None], [None]])}, "takes floats"),
    ("ragged shift", {"shift": [[1.0], [2.0, 3.0], []]}, "is not an array"),
    ("overflowing shift", {"shift": np.array([[1e300], [0.0], [0.0]])}, "overflows float32"),
]


@pytest.mark.parametrize(("case", "change", "message"), BAD_FEEDS, ids=[case for case, _, _ in BAD_FEEDS])
def test_a_feed_that_does_not_fit_is_refused_and_nothing_runs(
    origin: Path, case: str, change: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = Model(origin)

    def never(*arrays: Any) -> Any:
        raise AssertionError(f"the model ran on a refused feed ({case})")

    monkeypatch.setattr(model, "_call", never)
    name = next(iter(change))
    with pytest.raises(FeedError) as caught:
        model({**FEEDS, **change})
    assert f"input {name!r}" in str(caught.value) and message in str(caught.value), str(caught.value)
    assert str(origin) in str(caught.value)


def test_feed_names_and_containers_are_checked(origin: Path) -> None:
    model = Model(origin)
    for feeds, message in (({"tokens": FEEDS["tokens"]}, "missing ['shift']"),
                           ({**FEEDS, "extra": 1}, "unknown ['extra']"),
                           ([FEEDS["tokens"], FEEDS["shift"]], "must map input names")):
        with pytest.raises(FeedError, match=message.replace("[", r"\[").replace("]", r"\]")):
            model(feeds)  # type: ignore[arg-type]
    assert issubclass(FeedError, LoadError) and issubclass(ArtifactError, LoadError)
    assert issubclass(LoadError, ValueError)


def test_fitting_feeds_answer_as_before(origin: Path, answer: bytes) -> None:
    """int64 indices in range, float64 shifts and NaN where a float is allowed all run."""
    model = Model(origin)
    assert model(FEEDS)["y"].tobytes() == answer
    same = model({"tokens": FEEDS["tokens"].astype(np.int64), "shift": FEEDS["shift"].astype(np.float64)})
    assert same["y"].tobytes() == answer
    with_nan = model({**FEEDS, "shift": np.array([[np.nan], [0.0], [np.inf]], np.float32)})["y"]
    assert np.isnan(with_nan[0, 0]) and with_nan[2, 0] == 1.0


def test_a_bfloat16_export_loads_its_weights(tmp_path: Path) -> None:
    """The loader reads safetensors itself: numpy's safetensors reader knows no BF16."""
    plan, parameters, names = build(bf16)
    export(plan, parameters, tmp_path / "bf16", names=names)
    model = Model(tmp_path / "bf16")
    assert {array.dtype.name for array in model.weights.values()} == {"bfloat16"}
    y = model({"tokens": FEEDS["tokens"], "shift": FEEDS["shift"]})["y"]
    assert y.dtype.name == "bfloat16" and y.shape == (3, 1)
