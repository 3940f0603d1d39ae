"""Atomic writes: a file or a directory appears whole at its path, or the old one stays.

Contract:

- :func:`write_atomically` writes the bytes to a temporary file in the target's own
  directory (so the rename below never crosses a file system), flushes and fsyncs it, then
  renames it over the target with ``os.replace`` and fsyncs the directory, where the
  platform lets a directory be opened, so the rename itself survives a power cut. A reader
  sees the previous file or the new one, never a mix; a crash or a kill at any moment
  leaves the previous file intact.
- The temporary is named ``.<name>.topos-tmp-<pid>-<8 hex digits>`` (a name longer than
  160 bytes is replaced by the first 32 hex digits of its sha256, so the temporary's name
  fits too). A failure of any kind, ``KeyboardInterrupt`` included, removes it before the
  exception leaves. One left by a killed process is removed by the next write to the same
  target, once that process is gone (POSIX only: elsewhere there is no liveness probe).
- A new file gets the mode ``open(path, "w")`` would give (``0o666`` less the umask); an
  overwritten file keeps its permission bits (not its set-id bits). A path that is a
  symbolic link is written through: the link's final target is replaced, the link stays.
- A refusal (a path ending in a separator, a directory or other non-regular file at the
  target, a missing directory, any ``OSError`` while writing) raises ``error`` (a
  :class:`~topos.errors.ToposError` class, chosen by the caller) saying why, as
  ``cannot write <what>: ...`` (all but the separator case); when an ``OSError`` caused it,
  that is its ``__cause__``. Nothing is created before the checks pass.
- :func:`staged_directory` is the same promise for a directory: the caller fills a fresh
  sibling folder, which is renamed into place when the block ends without an exception
  and removed with everything in it otherwise.

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "notes.txt")
    >>> write_atomically(path, [b"first"])
    >>> write_atomically(path, [b"second, ", b"in two parts"])
    >>> open(path, "rb").read(), os.listdir(folder)
    (b'second, in two parts', ['notes.txt'])
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from topos.errors import ToposError

__all__ = ["TEMPORARY_MARK", "staged_directory", "write_atomically"]

TEMPORARY_MARK = ".topos-tmp-"
"""What a temporary's name holds between the target's name and the writer's process id."""

_LONG_NAME = 160  # longer target names get a hashed temporary name, so the temporary fits too


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _stem(name: str) -> str:
    """The part of a temporary's name that ties it to its target (hashed when long)."""
    if len(name.encode("utf-8", "surrogateescape")) <= _LONG_NAME:
        return name
    return hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _target(path: str, what: str, error: type[ToposError]) -> tuple[str, os.stat_result | None]:
    """Where the bytes go (a symbolic link is followed to its final target) and what is there."""
    if path.endswith(("/", os.sep)) or (os.altsep is not None and path.endswith(os.altsep)):
        raise error("the path ends with a separator, so it names a directory, not a file")
    target = os.path.realpath(path) if os.path.islink(path) else path
    shown = "" if target == path else f" (the link's target {target})"
    try:
        existing: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        existing = None
    except OSError as failure:
        raise error(f"cannot write {what}{shown}: {_reason(failure)}") from failure
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise error(f"cannot write {what}{shown}: it is a directory")
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise error(f"cannot write {what}{shown}: it exists and is not a regular file")
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise error(f"cannot write {what}{shown}: the directory {directory} does not exist")
    return target, existing


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    except (OverflowError, OSError):
        return False
    return True


def _remove_stale(directory: str, stem: str) -> None:
    """Remove temporaries of this target left by processes that died mid-write."""
    if os.name != "posix":
        return  # os.kill(pid, 0) is not a liveness probe elsewhere
    prefix = f".{stem}{TEMPORARY_MARK}"
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        match = re.fullmatch(r"(\d{1,12})-[0-9a-f]{8}", name[len(prefix) :])
        if match is None:
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, name))


def write_atomically(
    path: str, parts: Iterable[bytes], *, what: str = "the file", error: type[ToposError] = ToposError
) -> None:
    """Write the concatenated ``parts`` to ``path`` so that the file is whole or untouched.

    ``what`` names the file in messages (``"the checkpoint"``); ``error`` is the
    :class:`~topos.errors.ToposError` class every refusal raises (see the module contract).
    ``parts`` is consumed once, while the temporary is open, so a generator that raises
    midway leaves the previous file as it was.

    Example:
        >>> import os, tempfile
        >>> from topos.errors import CheckpointError
        >>> folder = tempfile.mkdtemp()
        >>> try:
        ...     write_atomically(folder, [b"x"], what="the checkpoint", error=CheckpointError)
        ... except CheckpointError as refused:
        ...     print(str(refused).endswith("cannot write the checkpoint: it is a directory"))
        True
    """
    target, existing = _target(path, what, error)
    directory, name = os.path.split(os.path.abspath(target))
    stem = _stem(name)
    _remove_stale(directory, stem)
    temporary = os.path.join(directory, f".{stem}{TEMPORARY_MARK}{os.getpid()}-{secrets.token_hex(4)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        # 0o666 through the umask: the mode a plain open(path, "w") gives a new file.
        descriptor = os.open(temporary, flags, 0o666)
    except OSError as failure:
        raise error(f"cannot write {what}: {_reason(failure)}") from failure
    try:
        with open(descriptor, "wb", closefd=True) as handle:
            for part in parts:
                handle.write(part)
            handle.flush()
            if existing is not None:
                # Overwriting keeps the file's permissions (not its set-id bits).
                mode = stat.S_IMODE(existing.st_mode) & 0o777
                if hasattr(os, "fchmod"):
                    os.fchmod(handle.fileno(), mode)
                else:
                    os.chmod(temporary, mode)
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException as failure:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(failure, OSError):
            raise error(f"cannot write {what}: {_reason(failure)}") from failure
        raise
    try:
        # Make the rename itself durable; not every platform lets a directory be opened.
        handle_dir = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle_dir)
    except OSError:
        pass
    finally:
        os.close(handle_dir)


@contextlib.contextmanager
def staged_directory(target: Path) -> Iterator[Path]:
    """A fresh folder beside ``target`` to fill; renamed to ``target`` when the block succeeds.

    The parent directories are created first. The folder is ``.<name>-<random>`` in
    ``target``'s parent, with mode ``0o755`` (readable by all, as a plain ``mkdir`` under the
    usual umask would make it). On success an empty directory at ``target`` is replaced; a
    non-empty one makes the rename fail, so callers refuse that case up front. Any
    exception removes the folder with its contents and leaves ``target`` as it was;
    ``OSError`` is raised as it came, for the caller to word.

    Example:
        >>> import os, tempfile
        >>> from pathlib import Path
        >>> target = Path(tempfile.mkdtemp()) / "artifact"
        >>> with staged_directory(target) as folder:
        ...     _ = (folder / "a.txt").write_text("whole")
        >>> sorted(os.listdir(target)), sorted(os.listdir(target.parent))
        (['a.txt'], ['artifact'])
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        staging.chmod(0o755)  # mkdtemp's 0700 would make the folder private to this user
        yield staging
        if target.exists():
            target.rmdir()
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
