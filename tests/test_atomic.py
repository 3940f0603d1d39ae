"""topos.atomic: a write that fails at any point leaves the old file and no temporary.

The checkpoint tests (``test_checkpoint*.py``) cover the writer through ``checkpoint.write``
(kills, stale temporaries, modes, links, bad paths); these hold the module to its own
contract with no checkpoint format involved: the caller's error class and wording, a
failure inside the caller's bytes, and the staged directory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from topos.atomic import TEMPORARY_MARK, staged_directory, write_atomically
from topos.errors import CheckpointError, ToposError


class Disk(ToposError):
    """A caller's own error class, to see that every refusal raises it."""


def _parts_that_fail() -> Iterator[bytes]:
    yield b"half of the new "
    raise RuntimeError("the producer broke midway")


def test_a_write_that_fails_midway_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "table.json"
    write_atomically(str(target), [b"old contents"])
    with pytest.raises(RuntimeError, match="broke midway"):
        write_atomically(str(target), _parts_that_fail())
    assert target.read_bytes() == b"old contents"
    assert os.listdir(tmp_path) == ["table.json"]


def test_an_os_error_midway_is_raised_as_the_callers_error_with_its_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "table.json"
    write_atomically(str(target), [b"old contents"])

    def full(_: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(Disk, match="cannot write the table: No space left on device") as caught:
        write_atomically(str(target), [b"new contents"], what="the table", error=Disk)
    monkeypatch.undo()
    assert isinstance(caught.value.__cause__, OSError)
    assert target.read_bytes() == b"old contents"
    assert os.listdir(tmp_path) == ["table.json"]


def test_an_interrupt_at_the_rename_leaves_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "table.json"
    seen: list[str] = []

    def interrupted(source: str, _: object) -> None:
        seen.append(os.path.basename(source))
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(str(target), [b"never lands"])
    monkeypatch.undo()
    assert seen and seen[0].startswith(f".table.json{TEMPORARY_MARK}{os.getpid()}-")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (lambda d: d, "cannot write the table: it is a directory"),
        (lambda d: d / "missing" / "t.json", "cannot write the table: the directory .* does not exist"),
        (lambda d: str(d / "t.json") + os.sep, "ends with a separator"),
    ],
    ids=["directory", "missing-directory", "separator"],
)
def test_refusals_raise_the_callers_error_and_create_nothing(
    tmp_path: Path, make: Callable[[Path], Any], pattern: str
) -> None:
    with pytest.raises(CheckpointError, match=pattern):
        write_atomically(str(make(tmp_path)), [b"x"], what="the table", error=CheckpointError)
    assert os.listdir(tmp_path) == []


def test_the_default_error_is_a_topos_error(tmp_path: Path) -> None:
    with pytest.raises(ToposError, match="cannot write the file: it is a directory"):
        write_atomically(str(tmp_path), [b"x"])


def test_a_staged_directory_that_fails_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "artifact"
    with pytest.raises(RuntimeError, match="refused"), staged_directory(target) as folder:
        (folder / "half.bin").write_bytes(b"partial")
        raise RuntimeError("refused")
    assert not target.exists()
    assert os.listdir(tmp_path / "deep") == []


def test_a_staged_directory_replaces_an_empty_one_and_is_readable_by_all(tmp_path: Path) -> None:
    target = tmp_path / "artifact"
    target.mkdir()
    with staged_directory(target) as folder:
        (folder / "model.bin").write_bytes(b"whole")
    assert os.listdir(tmp_path) == ["artifact"]
    assert (target / "model.bin").read_bytes() == b"whole"
    assert target.stat().st_mode & 0o777 == 0o755
