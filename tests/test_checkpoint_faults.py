"""Checkpoints under an adversary: every truncation, every single-byte corruption and a
double fault are refused (or, for a void byte, load the same bits); crafted headers,
non-regular files and misused paths raise :class:`~topos.CheckpointError` naming the file
and the entry; a process killed mid-save leaves the previous file loadable and its
temporary is cleaned by the next save; modes follow the umask; symbolic links are written
through."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import stat
import time
import tracemalloc
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import CheckpointError, OptimizerError, Parameters, Tape, Tensor, bf16, f32, f64
from topos import checkpoint as ckpt
from topos.nn import Linear
from topos.optim import Adam

WHITESPACE = b" \t\n\r"


def tiny() -> dict[str, Tensor]:
    """Three entries of three element types: a file of a few hundred bytes."""
    return {
        "a": Tensor(np.array([1.5, -2.25, 3.0], np.float32), element=f32),
        "b": Tensor(np.array([[0.5, -0.125]], np.float64), element=f64),
        "c": Tensor(np.array([7.0, -1.0], np.float32), element=bf16),
    }


def bits(entries: Mapping[str, Tensor]) -> dict[str, tuple[str, bytes]]:
    return {name: (t.element.name, t.bits().tobytes()) for name, t in entries.items()}


@pytest.fixture
def blob(tmp_path: Path) -> bytes:
    file = tmp_path / "origin.safetensors"
    ckpt.write(file, tiny(), {"note": "hi"})
    data = file.read_bytes()
    assert len(data) < 600, "the exhaustive tests below rely on a tiny file"
    return data


def put(file: Path, data: bytes) -> None:
    """Overwrite ``file`` in place: truncating to zero first would make ext4 flush each time."""
    descriptor = os.open(file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(descriptor, data, 0)
        os.ftruncate(descriptor, len(data))
    finally:
        os.close(descriptor)


def header_end(data: bytes) -> int:
    return 8 + int.from_bytes(data[:8], "little")


def refused(file: Path, *, foreign: bool = False, entry: str | None = None) -> CheckpointError:
    with pytest.raises(CheckpointError) as caught:
        ckpt.read(file, foreign=foreign)
    message = str(caught.value)
    assert str(file) in message, message
    if entry is not None:
        assert repr(entry) in message, message
    return caught.value


# ----------------------------------------------------------------------------- truncation
def test_every_truncation_of_the_header_and_the_data_is_refused(tmp_path: Path, blob: bytes) -> None:
    file = tmp_path / "cut.safetensors"
    end = header_end(blob)
    assert end < len(blob)
    for cut in range(len(blob)):
        put(file, blob[:cut])
        for foreign in (False, True):
            refused(file, foreign=foreign)


# ----------------------------------------------------------------------------- single faults
def corruptions(data: bytes, seed: int) -> Iterator[tuple[int, int]]:
    """Every single-bit flip at every byte, plus a few seeded whole-byte replacements each."""
    draws = random.Random(seed)
    for position, original in enumerate(data):
        for bit in range(8):
            yield position, original ^ (1 << bit)
        for value in (*draws.sample(range(256), 3), *WHITESPACE):
            if value != original:
                yield position, value


@pytest.mark.parametrize("foreign", [False, True], ids=["topos", "foreign-allowed"])
def test_no_single_byte_corruption_loads_different_values(tmp_path: Path, blob: bytes, foreign: bool) -> None:
    file = tmp_path / "damaged.safetensors"
    expected = bits(tiny())
    end = header_end(blob)
    refusals = loads = 0
    for position, value in corruptions(blob, seed=7):
        damaged = bytearray(blob)
        damaged[position] = value
        put(file, bytes(damaged))
        try:
            loaded = ckpt.read(file, foreign=foreign)
        except CheckpointError as error:
            assert str(file) in str(error)
            refusals += 1
            continue
        loads += 1
        # Only a header whitespace byte replaced by other whitespace is meaningless.
        assert 8 <= position < end and blob[position] in WHITESPACE and value in WHITESPACE, (position, value)
        assert bits(loaded.entries) == expected
        assert loaded.metadata["note"] == "hi"
    padded = any(byte in WHITESPACE for byte in blob[8:end])
    assert padded, "the fixture's header should hold padding, so the void case is exercised"
    assert refusals >= 8 * len(blob) and loads > 0


# ----------------------------------------------------------------------------- double faults
def test_a_damaged_format_key_plus_damaged_data_is_refused(tmp_path: Path, blob: bytes) -> None:
    """The audit's attack: make the file look foreign with one flip, then change the data."""
    tape = Tape()
    layer = Linear(tape, np.array([[1.0, 2.0]], np.float32))
    template = tape.seal().parameters()
    file = tmp_path / "twice.safetensors"
    ckpt.save(file, layer, template)
    original = file.read_bytes()
    key = original.index(b'"topos.format"')
    data = header_end(original)
    for position in range(key + 1, key + len(b'"topos.format"') - 1):
        for bit in range(8):
            for target in range(data, len(original)):
                damaged = bytearray(original)
                damaged[position] ^= 1 << bit
                damaged[target] ^= 0x40
                put(file, bytes(damaged))
                with pytest.raises(CheckpointError, match=str(file)):
                    ckpt.load(file, layer, template)
                with pytest.raises(CheckpointError, match=str(file)):
                    ckpt.load(file, layer, template, foreign=True)


def test_stripped_topos_metadata_needs_the_explicit_opt_in(tmp_path: Path, blob: bytes) -> None:
    end = header_end(blob)
    document = json.loads(blob[8:end])
    del document["__metadata__"]
    text = json.dumps(document).encode()
    file = tmp_path / "stripped.safetensors"
    file.write_bytes(len(text).to_bytes(8, "little") + text + blob[end:])
    assert "foreign=True" in str(refused(file))
    assert bits(ckpt.read(file, foreign=True).entries)["a"] == bits(tiny())["a"]
    # One surviving topos key (the others damaged or removed) means full verification.
    for key in ("topos.checksum", "topos.elements", "topos.formaT", "Topos.format", "topos.x"):
        document["__metadata__"] = {key: "1"}
        text = json.dumps(document).encode()
        file.write_bytes(len(text).to_bytes(8, "little") + text + blob[end:])
        assert "damaged topos checkpoint" in str(refused(file, foreign=True))


# ----------------------------------------------------------------------------- crafted headers
def raw_file(file: Path, header: bytes, data: bytes = b"\0" * 4, length: int | None = None) -> None:
    size = len(header) if length is None else length
    file.write_bytes(size.to_bytes(8, "little") + header + data)


def entry(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
    base.update(fields)
    return base


CRAFTED_ENTRIES: list[tuple[Any, str]] = [
    (entry(dtype=["F32"]), "dtype"),
    (entry(dtype={"F32": 1}), "dtype"),
    (entry(dtype=None), "dtype"),
    (entry(shape=[2**62 + 2, 4]), "needs"),
    (entry(shape=[2**63, 2**63]), "needs"),
    (entry(shape=[10**30]), "needs"),
    (entry(shape=[1] * 65), "rank 65"),
    (entry(shape=[-1]), "not a list of extents"),
    (entry(shape=[True]), "not a list of extents"),
    (entry(shape=[1.0]), "not a list of extents"),
    (entry(shape="1"), "not a list of extents"),
    (entry(shape=None), "not a list of extents"),
    (entry(shape=[0]), "empty"),
    (entry(data_offsets=["0", 4]), "data_offsets"),
    (entry(data_offsets=[0.0, 4.0]), "data_offsets"),
    (entry(data_offsets=[0, 4, 8]), "data_offsets"),
    (entry(data_offsets=[False, 4]), "data_offsets"),
    (entry(data_offsets=[-4, 0]), "data_offsets"),
    (entry(data_offsets=[4, 0]), "needs"),
    (entry(data_offsets=[0, 10**30]), "needs"),
    (entry(data_offsets={"0": 4}), "data_offsets"),
    ({"dtype": "F32", "shape": [1]}, "exactly dtype"),
    ({**entry(), "extra": 1}, "exactly dtype"),
    ([1, 2], "exactly dtype"),
    ("F32", "exactly dtype"),
]


@pytest.mark.parametrize(("fields", "pattern"), CRAFTED_ENTRIES, ids=[str(i) for i in range(len(CRAFTED_ENTRIES))])
def test_crafted_entries_are_refused_by_file_and_entry(tmp_path: Path, fields: Any, pattern: str) -> None:
    file = tmp_path / "crafted.safetensors"
    raw_file(file, json.dumps({"weights.w": fields}).encode())
    for foreign in (False, True):
        assert pattern in str(refused(file, foreign=foreign, entry="weights.w"))


def topos_header(elements: str, **meta: str) -> bytes:
    document = {"__metadata__": {"topos.format": "1", "topos.checksum": "sha256:0", "topos.elements": elements, **meta},
                "w": entry()}
    return json.dumps(document).encode()


CRAFTED_HEADERS: list[tuple[bytes, str, str | None]] = [
    (topos_header("not json"), "topos.elements is not valid JSON", None),
    (topos_header("[1, 2]"), "not a JSON object", None),
    (topos_header('"f32"'), "not a JSON object", None),
    (topos_header('{"w": 3}'), "topos.elements says 3", 'w'),
    (topos_header('{"w": "f64"}'), "topos.elements says 'f64'", 'w'),
    (topos_header('{"w": "f32", "w": "f32"}'), "twice", 'w'),
    (topos_header('{"w": "f32", "v": "f32"}'), "absent from the header", 'v'),
    (topos_header("{}"), "absent from topos.elements", 'w'),
    (topos_header('{"w": NaN}'), "topos.elements says NaN", 'w'),
    (json.dumps({"__metadata__": {"topos.format": 1}, "w": entry()}).encode(), "strings to strings", None),
    (b'{"__metadata__": {"a": "1", "a": "2"}, "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', "names 'a' twice", None),
    (json.dumps({"__metadata__": [], "w": entry()}).encode(), "strings to strings", None),
    (b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "w": {}}', "names it twice", 'w'),
    (b'{"w": {"dtype": "F32", "dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', "field 'dtype' twice", 'w'),
    (b'{"w": {"dtype": "F32", "shape": [NaN], "data_offsets": [0, 4]}}', "shape [NaN] is not", 'w'),
    (b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, Infinity]}}', "data_offsets [0, Infinity]", 'w'),
    (b'{"w": -Infinity}', "expected exactly dtype", 'w'),
    (b'{"w": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}}', "not a list of extents", 'w'),
    (b'{"w": {"dtype": "F32", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 4]}}', "not valid JSON", None),
    (b"[" * 100_000 + b"]" * 100_000, "not valid JSON", None),
    (b"[1, 2]", "not a JSON object", None),
    (b'"text"', "not a JSON object", None),
    (b"null", "not a JSON object", None),
    (b"17", "not a JSON object", None),
    (b'{"w": "\xff\xfe"}', "not UTF-8", None),
    (b"\xef\xbb\xbf{}", "not valid JSON", None),
    (b'{"w": ', "not valid JSON", None),
]


@pytest.mark.parametrize(("header", "pattern", "name"), CRAFTED_HEADERS, ids=[str(i) for i in range(len(CRAFTED_HEADERS))])
def test_crafted_headers_are_refused(tmp_path: Path, header: bytes, pattern: str, name: str | None) -> None:
    file = tmp_path / "crafted.safetensors"
    raw_file(file, header)
    for foreign in (False, True):
        assert pattern in str(refused(file, foreign=foreign, entry=name))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
fieldish = st.fixed_dictionaries(
    {"dtype": st.sampled_from(["F32", "F64", "BF16", "I8"]) | json_values,
     "shape": st.lists(st.integers(-2, 2**64), max_size=70) | json_values,
     "data_offsets": st.lists(st.integers(-2, 2**64), max_size=3) | json_values}
)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scratch") / "any.safetensors"


@settings(max_examples=120, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), fieldish | json_values, max_size=3),
       st.binary(max_size=40), st.booleans())
def test_arbitrary_headers_only_ever_raise_checkpoint_errors(
    scratch: Path, header: dict[str, Any], data: bytes, foreign: bool
) -> None:
    text = json.dumps(header).encode()
    put(scratch, len(text).to_bytes(8, "little") + text + data)
    try:
        loaded = ckpt.read(scratch, foreign=foreign)
    except CheckpointError as error:
        assert str(scratch) in str(error)
        return
    # Only a foreign file whose entries are sound and cover its data exactly can load.
    assert foreign and sum(t.bits().nbytes for t in loaded.entries.values()) == len(data)


def test_header_lengths_are_checked_against_the_file_before_reading(tmp_path: Path) -> None:
    """A 3 GiB (sparse) file claiming a huge header is refused without allocating it."""
    file = tmp_path / "huge.safetensors"
    with open(file, "wb") as handle:
        handle.write((3 * 2**30).to_bytes(8, "little"))
        handle.truncate(3 * 2**30 + 64)
    tracemalloc.start()
    try:
        assert "does not fit" in str(refused(file))
        for claim in (2**64 - 1, 2**40, 3 * 2**30 + 57):
            with open(file, "r+b") as handle:
                handle.write(claim.to_bytes(8, "little"))
            assert "does not fit" in str(refused(file))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, f"refusing a huge header allocated {peak} bytes"
    # A sound small header whose entries do not cover the 3 GiB is refused before the data is read.
    header = json.dumps({"w": entry()}).encode()
    with open(file, "r+b") as handle:
        handle.write(len(header).to_bytes(8, "little") + header)
    tracemalloc.start()
    try:
        assert "cover 4 data bytes" in str(refused(file, foreign=True))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20


# ----------------------------------------------------------------------------- non-regular files
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


def test_non_regular_files_are_refused_without_blocking(tmp_path: Path) -> None:
    tape = Tape()
    layer = Linear(tape, np.ones((1, 1), np.float32))
    template = tape.seal().parameters()
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    cases = [(tmp_path, "a directory"), (fifo, "a FIFO"), (Path("/dev/zero"), "a character device")]
    with deadline(10):
        for file, kind in cases:
            for foreign in (False, True):
                assert f"not a regular file ({kind})" in str(refused(file, foreign=foreign))
            with pytest.raises(CheckpointError, match="not a regular file"):
                ckpt.load(file, layer, template)
            with pytest.raises(CheckpointError, match="not a regular file"):
                ckpt.load_training(file, layer, template, Adam(0.1).init(template))


# ----------------------------------------------------------------------------- killed saves
def _saving_child(target: Path, report: int) -> None:
    """Save generation after generation; report each one after save() returns.

    fsync is slowed a little so that many kills land between writing the temporary and
    renaming it, the window that leaves a temporary behind.
    """
    real_fsync = os.fsync

    def slow_fsync(fd: Any) -> None:
        time.sleep(0.001)
        real_fsync(fd)

    os.fsync = slow_fsync  # in this forked child only
    generation = 0
    while True:
        generation += 1
        values = np.full((64,), float(generation), np.float32)
        ckpt.write(target, {"w": Tensor(values, element=f32)}, {"generation": str(generation)})
        os.write(report, f"{generation}\n".encode())


def test_a_save_killed_at_random_moments_leaves_the_previous_file(tmp_path: Path) -> None:
    target = tmp_path / "live.safetensors"
    draws = random.Random(2024)
    left_behind = 0
    for _ in range(30):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child never returns into pytest
            try:
                os.close(reader)
                _saving_child(target, writer)
            finally:
                os._exit(0)
        os.close(writer)
        reported = b""
        with deadline(20):
            while b"\n" not in reported:  # at least one complete save before the kill
                chunk = os.read(reader, 64)
                assert chunk, "the saving child died on its own"
                reported += chunk
        # A seeded delay of up to a few saves, so kills land in every phase of one.
        time.sleep(draws.uniform(0.0, 0.01))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        while chunk := os.read(reader, 4096):
            reported += chunk
        os.close(reader)
        last = int(reported.split()[-1])
        loaded = ckpt.read(target)
        generation = int(loaded.metadata["generation"])
        # The kill may land after the rename and before the report: one newer is complete too.
        assert generation in (last, last + 1)
        expected = np.full((64,), float(generation), np.float32).view(np.uint32)
        assert np.array_equal(loaded.entries["w"].bits(), expected)
        left_behind += len(os.listdir(tmp_path)) - 1
        ckpt.write(target, {"w": Tensor(np.zeros(1, np.float32))})
        assert os.listdir(tmp_path) == [target.name], os.listdir(tmp_path)
    assert left_behind > 0, "no kill landed mid-write, so the clean-up was not exercised"


def test_stale_temporaries_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    target = tmp_path / "m.safetensors"
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)  # a process id that is certainly gone (reaped)
    stale = tmp_path / f".m.safetensors.topos-tmp-{pid}-0123abcd"
    live = tmp_path / f".m.safetensors.topos-tmp-{os.getppid()}-0123abcd"
    other = tmp_path / f".other.safetensors.topos-tmp-{pid}-0123abcd"
    unrelated = tmp_path / ".m.safetensors.notes"
    for file in (stale, live, other, unrelated):
        file.write_bytes(b"partial")
    ckpt.write(target, tiny())
    assert sorted(os.listdir(tmp_path)) == sorted([target.name, live.name, other.name, unrelated.name])


def test_no_temporary_survives_a_failed_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "m.safetensors"
    ckpt.write(target, tiny())
    before = target.read_bytes()

    def fail(*_: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(KeyboardInterrupt):
        ckpt.write(target, {"w": Tensor.ones((1,))})
    monkeypatch.undo()
    assert os.listdir(tmp_path) == [target.name] and target.read_bytes() == before


# ----------------------------------------------------------------------------- paths
class Weird:
    def __fspath__(self) -> bytes:
        return b"/tmp/x"


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (lambda d: d / "missing" / "m.safetensors", "does not exist"),
        (lambda d: d, "is a directory"),
        (lambda d: d / "sub", "is a directory"),
        (lambda d: str(d / "m.safe") + "\0tail", "NUL"),
        (lambda d: d / ("n" * 300), "too long"),
        (lambda d: d / ("n" * 300) / "m.safetensors", "too long"),
        (lambda d: os.fsencode(d / "m.safetensors"), "bytes"),
        (lambda d: "", "empty"),
        (lambda d: str(d / "new") + os.sep, "separator"),
        (lambda d: 3, "not int"),
        (lambda d: Weird(), "__fspath__ gave bytes"),
        (lambda d: d / "fifo", "not a regular file"),
        (lambda d: d / "file" / "m.safetensors", "Not a directory"),
    ],
    ids=["missing-dir", "directory", "subdirectory", "nul", "long-name", "long-dir", "bytes", "empty",
         "trailing-sep", "int", "fspath-bytes", "fifo", "file-as-dir"],
)
def test_misused_paths_are_refused_and_create_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[[Path], Any], pattern: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "sub").mkdir()
    (work / "file").write_bytes(b"x")
    os.mkfifo(work / "fifo")
    monkeypatch.chdir(work)  # '' must not write beside the current directory either
    before = sorted(os.walk(tmp_path))
    path = make(work)
    tape = Tape()
    layer = Linear(tape, np.ones((1, 1), np.float32))
    parameters = tape.seal().parameters()
    with pytest.raises(CheckpointError, match=pattern) as caught:
        ckpt.save(path, layer, parameters)
    readable = isinstance(path, (str, Path)) and "\0" not in str(path) and str(path)
    assert (str(path) if readable else repr(path)[:40]) in str(caught.value), str(caught.value)
    with pytest.raises(CheckpointError):
        ckpt.read(path)
    assert sorted(os.walk(tmp_path)) == before


# ----------------------------------------------------------------------------- modes and links
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002, 0o027])
def test_a_new_file_gets_the_mode_open_would_give(tmp_path: Path, mask: int) -> None:
    previous = os.umask(mask)
    try:
        ckpt.write(tmp_path / "m.safetensors", tiny())
        with open(tmp_path / "plain", "w"):
            pass
    finally:
        os.umask(previous)
    mode = stat.S_IMODE(os.stat(tmp_path / "m.safetensors").st_mode)
    assert mode == 0o666 & ~mask == stat.S_IMODE(os.stat(tmp_path / "plain").st_mode)


def test_an_overwritten_file_keeps_its_mode(tmp_path: Path) -> None:
    file = tmp_path / "m.safetensors"
    ckpt.write(file, tiny())
    for mode in (0o600, 0o644, 0o640, 0o444):
        os.chmod(file, mode)
        previous = os.umask(0o077)
        try:
            ckpt.write(file, tiny())
        finally:
            os.umask(previous)
        assert stat.S_IMODE(os.stat(file).st_mode) == mode


def test_saving_to_a_symbolic_link_writes_through_to_its_target(tmp_path: Path) -> None:
    real = tmp_path / "store"
    real.mkdir()
    links = tmp_path / "links"
    links.mkdir()
    target = real / "model.safetensors"
    ckpt.write(target, {"w": Tensor.ones((2,))})
    link = links / "latest.safetensors"
    link.symlink_to(target)
    chain = links / "chain.safetensors"
    chain.symlink_to(link)
    ckpt.write(chain, tiny())
    assert chain.is_symlink() and link.is_symlink() and os.readlink(link) == str(target)
    assert bits(ckpt.read(target).entries) == bits(tiny())
    assert sorted(os.listdir(links)) == ["chain.safetensors", "latest.safetensors"]
    assert os.listdir(real) == ["model.safetensors"]
    # A dangling link creates its target, as open(path, "w") would.
    dangling = links / "next.safetensors"
    dangling.symlink_to(real / "next.safetensors")
    ckpt.write(dangling, tiny())
    assert dangling.is_symlink() and bits(ckpt.read(real / "next.safetensors").entries) == bits(tiny())
    # A link to a directory, or a loop, is refused.
    (links / "to-dir").symlink_to(real)
    with pytest.raises(CheckpointError, match="is a directory"):
        ckpt.write(links / "to-dir", tiny())
    (links / "loop").symlink_to(links / "loop")
    with pytest.raises(CheckpointError, match="loop"):
        ckpt.write(links / "loop", tiny())


# ----------------------------------------------------------------------------- step counts
def adam_state() -> tuple[Linear, Parameters, Any]:
    tape = Tape()
    layer = Linear(tape, np.ones((2, 2), np.float32))
    parameters = tape.seal().parameters()
    return layer, parameters, Adam(0.1).init(parameters)


@pytest.mark.parametrize("count", [2.5, -1.0, math.nan, math.inf, -math.inf, 2.0**60, 1e-300])
def test_a_step_count_that_is_not_a_whole_number_is_refused(tmp_path: Path, count: float) -> None:
    layer, parameters, state = adam_state()
    arrays = state.arrays()
    arrays["count"] = np.array(count)
    with pytest.raises(OptimizerError, match="'count'"):
        state.restored(arrays)
    entries = ckpt.snapshot(layer, parameters, state)
    entries["state/scalars/count"] = Tensor(np.array(count), element=f64)
    file = tmp_path / "m.safetensors"
    ckpt.write(file, entries)  # a correct checksum: the refusal is about the value
    with pytest.raises(CheckpointError, match=rf"{file}.*state/scalars/count") as caught:
        ckpt.load_training(file, layer, parameters, state)
    assert "whole number" in str(caught.value)
    arrays["count"] = np.array(3.0)
    assert state.restored(arrays).step == 3
