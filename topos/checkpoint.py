"""Checkpoints: parameter tables (and optimizer state) by module path, in one safetensors file.

Contract:

- The file is safetensors (8-byte little-endian header length, a JSON header naming each
  entry's ``dtype``/``shape``/``data_offsets``, then raw little-endian data), so other tools
  read it. ``__metadata__`` carries ``topos.format`` (the format version),
  ``topos.elements`` (each entry's element type) and ``topos.checksum`` (sha256 over the
  canonical header and the data). An element type is stored under its
  :attr:`~topos.ElementType.safetensors` dtype (f32 ``F32``, f64 ``F64``, bf16 ``BF16``, a
  plugin's f16 ``F16``); reading gives each entry the element ``topos.elements`` names (the
  template's, for :func:`load`, else a registered one), and a foreign file's entries the
  element storing their dtype (built-ins first, then registered plugins).
- A foreign file may also hold integer and boolean entries (``I64``, ``I32``, ``I16``,
  ``I8``, ``U64``, ``U32``, ``U16``, ``U8``, ``BOOL``: Hugging Face BERT ships
  ``embeddings.position_ids`` as ``I64``). No topos element holds integers, so
  :func:`read` returns them in :attr:`Checkpoint.arrays` as read-only numpy arrays, with
  the same bounded, checked read (a ``BOOL`` byte other than 0 or 1 is refused), and never
  in :attr:`Checkpoint.entries`. :func:`load` refuses one that lands on a parameter,
  naming the parameter, the file entry and its dtype; one that names no parameter is
  unexpected, as any entry is (``rename`` it to ``None`` to drop it). Topos itself writes
  only float elements.
- Writing is atomic (:func:`topos.atomic.write_atomically` does it): a temporary file
  beside the target is written, flushed, fsynced and renamed over it, so a crash or a kill
  mid-write leaves the previous file intact. The temporary is named
  ``.<name>.topos-tmp-<pid>-<token>``; a later save to the same target removes those whose
  process is gone. A new file gets the mode ``open(path, "w")`` would give (``0o666`` less
  the umask); an overwritten file keeps its mode. A path that is a symbolic link is written
  through: the link's final target is replaced atomically and the link itself stays. Bad
  paths (missing directory, a directory, an empty path, a NUL byte, a name too long, bytes)
  raise :class:`~topos.CheckpointError` and create nothing.
- Reading never executes code (no pickle anywhere: the header is JSON, data is read with
  explicit dtypes) and checks before it allocates: the file must be a regular file, the
  header length must fit the file, only the header is read and validated (entry fields,
  ranks, sizes against dtype x shape in exact integers, offsets contiguous and covering the
  data exactly), and only then the data. Every defect raises
  :class:`~topos.CheckpointError` naming the file and the entry.
- By default a file must be a topos checkpoint: format version, element list and checksum
  present and matching. ``foreign=True`` (on :func:`read` and :func:`load`) also accepts a
  file another tool wrote, with the structural checks only; a file whose metadata carries
  any ``topos.`` key, or a key one or two characters away from one, is still verified in
  full, so one damaged key cannot switch verification off.
- Installing into a template is strict: a missing, unexpected, misshapen or wrong-element
  entry raises :class:`~topos.CheckpointError` naming its path, and nothing changes (tables
  are values; a failed load returns nothing). A name mapping (dict or callable) renames file
  entries to module paths first, e.g. to read Hugging Face GPT-2 names; a refusal names
  the module path and the file entry it came from. An optimizer step count must be a
  finite whole number. Every entry point checks its arguments (module, tables, entries,
  ``rename``, ``foreign``) by name before it opens a file.

The checksum guards against accidents (a torn copy, a flipped bit, a truncated download),
not against tampering: anyone who can edit the file can recompute an unkeyed sha256. Read
files only from sources you trust with your model.

Size: over 800 lines on purpose. The format's two halves (the canonical header and digest
the writer makes, the bounded reader that re-derives and checks them) and the strict install
share one set of entry checks and messages; split, each half would import the other's
private rules, and a change to the format would have to be made in two files at once.

Parameters are keyed by their dotted module path (``blocks.0.attention.query.weights``).
Optimizer state (a mapping, or an attrs record, of parameter-aligned tables and single
tensors) is keyed under ``state/<field>/<path>`` and ``state/<field>``.

Example:
    >>> import os, tempfile
    >>> from topos import Tape, Tensor
    >>> from topos.nn import Linear
    >>> tape = Tape()
    >>> layer = Linear(tape, Tensor.ones((2, 3)), Tensor.zeros((3,)))
    >>> network = tape.seal()
    >>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
    >>> save(path, layer, network.parameters())
    >>> restored = load(path, layer, network.parameters())
    >>> restored.of(layer.weights).tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import stat
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, cast, final

import attrs
import numpy as np

from topos import (
    CheckpointError,
    ElementType,
    OptimizerState,
    Parameters,
    Symbol,
    Tensor,
    ToposError,
)
from topos.atomic import write_atomically
from topos.names import Rename, check_rename, renaming, shown
from topos.nn.module import Visitable, named_parameters

__all__ = [
    "FORMAT_VERSION",
    "Checkpoint",
    "Rename",
    "load",
    "load_training",
    "read",
    "restore",
    "restore_state",
    "save",
    "snapshot",
    "write",
]

FORMAT_VERSION = "1"
"""The topos checkpoint format this module writes and reads."""

STATE = "state/"
"""Prefix of optimizer-state entries; module paths never contain a slash."""

_MAX_HEADER = 100 * 1024 * 1024
_MAX_RANK = 64  # numpy's limit; a deeper shape cannot be built, so it is refused up front
_RESERVED = ("topos.format", "topos.elements", "topos.checksum")
_COUNT_LIMIT = 2.0**53  # beyond this an f64 count no longer advances by one


@attrs.frozen
class _Elements:
    """The element types a read can name: by element name, and by safetensors dtype."""

    by_name: dict[str, ElementType]
    by_dtype: dict[str, ElementType]

    @classmethod
    def known(cls, extra: Iterable[ElementType] = ()) -> _Elements:
        """The registered elements (built-ins first), with ``extra`` (a template's) taking their names."""
        # Imported here: the registry imports the optimizers, which import this module's callers.
        from topos.plugins import element_types

        registered = list(element_types().values())
        mine = list(extra)
        by_name = {e.name: e for e in registered} | {e.name: e for e in mine}
        by_dtype: dict[str, ElementType] = {}
        for element in (*registered, *mine):
            if element.safetensors is not None:
                by_dtype.setdefault(element.safetensors, element)
        return cls(by_name, by_dtype)


State = TypeVar("State")


_INTEGERS: dict[str, np.dtype[Any]] = {name: np.dtype(code) for name, code in (
    ("BOOL", "?"), ("U8", "<u1"), ("I8", "<i1"), ("U16", "<u2"), ("I16", "<i2"), ("U32", "<u4"), ("I32", "<i4"), ("U64", "<u8"), ("I64", "<i8"),
)}  # fmt: skip
"""The safetensors dtypes no element stores, by the numpy dtype of their little-endian bytes."""

Array = np.ndarray[Any, Any]


@final
@attrs.frozen(slots=True)
class Checkpoint:
    """What a verified file holds: float entries by name, its string metadata, and its
    integer and boolean entries (a foreign file's only) as read-only arrays by name."""

    entries: Mapping[str, Tensor]
    metadata: Mapping[str, str]
    arrays: Mapping[str, Array] = attrs.field(factory=dict)


def _path(file: object) -> str:
    """The caller's path as text; anything that cannot name a file is refused by name.

    Bytes paths are refused rather than guessed at: pass ``os.fsdecode(path)``.
    """
    if isinstance(file, (bytes, bytearray, memoryview)):
        raise CheckpointError(
            f"{shown(file)}: a checkpoint path must be a str or os.PathLike[str], not bytes "
            "(decode it with os.fsdecode)"
        )
    try:
        path = os.fspath(cast(Any, file))
    except TypeError:
        raise CheckpointError(
            f"{shown(file)}: a checkpoint path must be a str or os.PathLike[str], "
            f"not {type(file).__name__}"
        ) from None
    if not isinstance(path, str):
        raise CheckpointError(
            f"{shown(file)}: a checkpoint path must be a str or os.PathLike[str]; "
            f"its __fspath__ gave {type(path).__name__} (decode it with os.fsdecode)"
        )
    if not path:
        raise CheckpointError("'': a checkpoint path must not be empty")
    if "\0" in path:
        raise CheckpointError(f"{path!r}: a checkpoint path must not hold a NUL character")
    return path


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


# --------------------------------------------------------------------------- writing
def _canonical(header: Mapping[str, Any]) -> bytes:
    return json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _digest(header: Mapping[str, Any], metadata: Mapping[str, str], data: Iterable[bytes | bytearray]) -> str:
    """sha256 over the canonical header (without the checksum itself) and the data."""
    unsigned = dict(header)
    unsigned["__metadata__"] = {k: v for k, v in metadata.items() if k != "topos.checksum"}
    hasher = hashlib.sha256(_canonical(unsigned))
    for chunk in data:
        hasher.update(chunk)
    return "sha256:" + hasher.hexdigest()


def _encode(name: str, tensor: Tensor) -> tuple[str, bytes]:
    if not isinstance(tensor, Tensor):
        raise CheckpointError(f"entry {name!r}: expected a Tensor, got {type(tensor).__name__}")
    dtype = tensor.element.safetensors
    if dtype is None:
        raise CheckpointError(
            f"entry {name!r}: element {tensor.element} has no safetensors dtype "
            f"(its storage, numpy {tensor.element.dtype}, has no safetensors name)"
        )
    unit = tensor.element.disk_unit
    array = np.ascontiguousarray(tensor.numpy())
    raw = array.view(unit.newbyteorder("=")).astype(unit, copy=False)
    return dtype, raw.tobytes(order="C")


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name or name == "__metadata__":
        raise CheckpointError(f"entry names must be non-empty strings other than '__metadata__'; got {name!r}")
    return name


def write(file: str | os.PathLike[str], entries: Mapping[str, Tensor], metadata: Mapping[str, str] | None = None) -> None:
    """Write ``entries`` to ``file`` atomically as safetensors, with topos metadata.

    ``metadata`` adds caller strings (keys starting with ``topos.`` are reserved). Every
    refusal (bad entries, bad metadata, a path that cannot be written) raises
    :class:`~topos.CheckpointError` naming ``file`` and leaves nothing behind.

    Example:
        >>> import os, tempfile
        >>> from topos import Tensor
        >>> path = os.path.join(tempfile.mkdtemp(), "one.safetensors")
        >>> write(path, {"w": Tensor.ones((2,))}, {"note": "hello"})
        >>> read(path).metadata["note"]
        'hello'
    """
    path = _path(file)
    try:
        parts = _serialize(entries, metadata)
        write_atomically(path, parts, what="the checkpoint", error=CheckpointError)
    except CheckpointError as error:
        raise CheckpointError(f"{path}: {error.detail}") from error.__cause__


def _serialize(entries: Mapping[str, Tensor], metadata: Mapping[str, str] | None) -> list[bytes]:
    if not isinstance(entries, Mapping):
        raise CheckpointError(f"write(): entries must map names to Tensors, got {type(entries).__name__}")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise CheckpointError(f"write(): metadata must map strings to strings, got {type(metadata).__name__}")
    extra = dict(metadata or {})
    for key, value in extra.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise CheckpointError(f"metadata must map strings to strings; got {key!r}: {value!r}")
        if key.startswith("topos."):
            raise CheckpointError(f"metadata key {key!r} is reserved for topos")
    if not entries:
        raise CheckpointError("a checkpoint needs at least one entry")
    names = sorted(_check_name(name) for name in entries)
    header: dict[str, Any] = {}
    chunks: list[bytes] = []
    elements: dict[str, str] = {}
    offset = 0
    for name in names:
        dtype, raw = _encode(name, entries[name])
        tensor = entries[name]
        header[name] = {"dtype": dtype, "shape": list(tensor.shape.axes), "data_offsets": [offset, offset + len(raw)]}
        elements[name] = tensor.element.name
        chunks.append(raw)
        offset += len(raw)
    meta = dict(sorted(extra.items()))
    meta["topos.elements"] = json.dumps(elements, sort_keys=True, separators=(",", ":"))
    meta["topos.format"] = FORMAT_VERSION
    meta["topos.checksum"] = _digest(header, meta, chunks)
    document = {"__metadata__": meta, **header}
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    text += b" " * (-len(text) % 8)
    return [len(text).to_bytes(8, "little"), text, *chunks]


# --------------------------------------------------------------------------- reading
class _Twice(dict[str, Any]):
    """A JSON object that named ``key`` twice; refused where its owner is known, so the
    message can name the entry."""

    def __init__(self, pairs: dict[str, Any], key: str) -> None:
        super().__init__(pairs)
        self.key = key


@final
class _Constant:
    """``NaN`` or ``Infinity`` in a header: not JSON; kept as a value no check accepts."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        return self.token


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            return _Twice(result, key)
        result[key] = value
    return result


def _json(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_Constant)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _near(key: str, reserved: str, most: int) -> bool:
    """Whether ``key`` is within ``most`` edits (insert, delete, replace) of ``reserved``."""
    if abs(len(key) - len(reserved)) > most:
        return False
    previous = list(range(len(reserved) + 1))
    for i, a in enumerate(key, 1):
        current = [i]
        for j, b in enumerate(reserved, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1] <= most


def _near_reserved(key: str) -> bool:
    """A topos key, or a key a little damage could have made from one."""
    return key.startswith("topos.") or any(_near(key, reserved, 2) for reserved in _RESERVED)


def read(file: str | os.PathLike[str], *, foreign: bool = False) -> Checkpoint:
    """Read and verify a safetensors file; every defect raises :class:`~topos.CheckpointError`.

    By default the file must be a topos checkpoint whose format version, element list and
    checksum match. ``foreign=True`` also accepts a file another tool wrote (no topos
    metadata at all), with the structural checks only; any trace of topos metadata still
    means full verification. The checksum catches accidents, not tampering.

    Example:
        >>> import os, tempfile
        >>> from topos import CheckpointError, Tensor
        >>> path = os.path.join(tempfile.mkdtemp(), "one.safetensors")
        >>> write(path, {"w": Tensor.ones((2,))})
        >>> read(path).entries["w"].tolist()
        [1.0, 1.0]
        >>> try:
        ...     read(os.path.dirname(path))
        ... except CheckpointError as error:
        ...     print("refused:", "not a regular file" in str(error))
        refused: True
    """
    return _read_named(_path(file), foreign, ())


def _read_named(path: str, foreign: bool, extra: Iterable[ElementType]) -> Checkpoint:
    if not isinstance(foreign, bool):
        raise CheckpointError(f"{path}: foreign must be True or False, got {shown(foreign)}")
    try:
        return _read(path, foreign, _Elements.known(extra))
    except CheckpointError as error:
        raise CheckpointError(f"{path}: {error.detail}") from error.__cause__


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _read(path: str, foreign: bool, elements: _Elements) -> Checkpoint:
    # Refuse anything but a regular file before opening it (opening a FIFO blocks, a device
    # may act on open), and again on the descriptor in case the path changed in between.
    try:
        info = os.stat(path)
    except OSError as error:
        raise CheckpointError(f"cannot read the checkpoint: {_reason(error)}") from error
    if not stat.S_ISREG(info.st_mode):
        raise CheckpointError(f"not a regular file ({_kind(info.st_mode)}); a checkpoint is a file")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise CheckpointError(f"cannot read the checkpoint: {_reason(error)}") from error
    with open(descriptor, "rb", buffering=0, closefd=True) as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise CheckpointError(f"not a regular file ({_kind(info.st_mode)}); a checkpoint is a file")
        try:
            return _parse(handle, info.st_size, foreign, elements)
        except OSError as error:
            raise CheckpointError(f"cannot read the checkpoint: {_reason(error)}") from error


def _take(handle: io.FileIO, count: int, what: str) -> bytearray:
    """Exactly ``count`` bytes (the caller has checked ``count`` against the file's size)."""
    buffer = bytearray(count)
    view = memoryview(buffer)
    got = 0
    while got < count:
        step = handle.readinto(view[got:])
        if not step:
            raise CheckpointError(
                f"truncated: the file ended {got} bytes into {what} of {count} (did it change while being read?)"
            )
        got += step
    return buffer


def _header(raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
        document = _json(text)
    except UnicodeDecodeError as error:
        raise CheckpointError(f"the header is not UTF-8 (byte {error.start} of the header)") from None
    except (ValueError, RecursionError) as error:
        raise CheckpointError(f"the header is not valid JSON: {shown(str(error), 120)}") from None
    if not isinstance(document, dict):
        raise CheckpointError(f"the header is not a JSON object (it is a {type(document).__name__})")
    if isinstance(document, _Twice):
        raise CheckpointError(f"entry {document.key!r}: the header names it twice")
    return document


def _entry(name: str, entry: Any, elements: _Elements) -> tuple[int, int, str, list[int]]:
    """``(begin, end, dtype, shape)`` of one header entry, every field checked in exact integers."""
    if isinstance(entry, _Twice):
        raise CheckpointError(f"entry {name!r}: names its field {shown(entry.key)} twice")
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        raise CheckpointError(f"entry {name!r}: expected exactly dtype, shape and data_offsets, got {shown(entry)}")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str) or (dtype not in elements.by_dtype and dtype not in _INTEGERS):
        raise CheckpointError(
            f"entry {name!r}: dtype {shown(dtype)} is not one of {sorted(elements.by_dtype)} "
            "(the dtypes of the registered element types; register the plugin whose element stores it) "
            f"nor an integer dtype ({', '.join(_INTEGERS)})"
        )
    if not isinstance(shape, list) or not all(_int(a) for a in shape):
        raise CheckpointError(f"entry {name!r}: shape {shown(shape)} is not a list of extents")
    if len(shape) > _MAX_RANK:
        raise CheckpointError(f"entry {name!r}: rank {len(shape)} exceeds the limit of {_MAX_RANK}")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_int(o) for o in offsets):
        raise CheckpointError(f"entry {name!r}: data_offsets {shown(offsets)} is not [begin, end]")
    begin, end = offsets
    volume = math.prod(shape)  # Python integers: a crafted shape cannot wrap around
    if volume == 0:
        raise CheckpointError(f"entry {name!r}: shape {shown(shape)} is empty; topos tensors never are")
    unit = elements.by_dtype[dtype].dtype if dtype in elements.by_dtype else _INTEGERS[dtype]
    expected = volume * unit.itemsize
    if end < begin or end - begin != expected:
        need = str(expected) if expected < 10**30 else "more than 10**30"
        raise CheckpointError(
            f"entry {name!r}: {dtype}{shown(shape)} needs {need} bytes, its offsets span {shown(end - begin)}"
        )
    return begin, end, dtype, shape


def _parse(handle: io.FileIO, size: int, foreign: bool, elements: _Elements) -> Checkpoint:
    if size < 8:
        raise CheckpointError(f"truncated: {size} bytes, too short for the 8-byte header length")
    length = int.from_bytes(_take(handle, 8, "the header length"), "little")
    if length < 2 or length > size - 8 or length > _MAX_HEADER:
        raise CheckpointError(
            f"the header length {length} does not fit a file of {size} bytes "
            "(truncated, or not a safetensors file)"
        )
    document = _header(bytes(_take(handle, length, "the header")))
    metadata = document.pop("__metadata__", {})
    if isinstance(metadata, _Twice):
        raise CheckpointError(f"__metadata__ names {shown(metadata.key)} twice")
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise CheckpointError(f"__metadata__ must map strings to strings; got {shown(metadata)}")
    spans = sorted((*_entry(name, entry, elements), name) for name, entry in document.items())
    position = 0
    for begin, end, _, _, name in spans:
        if begin != position:
            raise CheckpointError(
                f"entry {name!r} starts at byte {begin}, expected {position} (offsets must be contiguous)"
            )
        position = end
    available = size - 8 - length
    if position != available:
        raise CheckpointError(
            f"the entries cover {position} data bytes, the file holds {available} (truncated or padded)"
        )
    verify = not foreign or any(_near_reserved(key) for key in metadata)
    named = _verify_metadata(document, metadata, elements) if verify else {}
    data = _take(handle, available, "the data")
    if verify and _digest(document, metadata, [data]) != metadata["topos.checksum"]:
        raise CheckpointError("checksum mismatch: the file was altered or damaged after writing")
    entries: dict[str, Tensor] = {}
    arrays: dict[str, Array] = {}
    for begin, end, dtype, shape, name in spans:
        if name not in named and dtype not in elements.by_dtype:
            arrays[name] = _integers(name, data, begin, end, dtype, shape)
            continue
        element = named.get(name) or elements.by_dtype[dtype]
        unit = element.disk_unit
        stored = np.frombuffer(data, dtype=unit, count=(end - begin) // unit.itemsize, offset=begin)
        array = stored.astype(unit.newbyteorder("="), copy=True).view(element.dtype)
        entries[name] = Tensor(array.reshape(tuple(shape)), element=element)
    return Checkpoint(dict(sorted(entries.items())), dict(metadata), dict(sorted(arrays.items())))


def _integers(name: str, data: bytearray, begin: int, end: int, dtype: str, shape: list[int]) -> Array:
    """An integer or boolean entry as a read-only array in native byte order."""
    unit = _INTEGERS[dtype]
    if dtype == "BOOL":
        # numpy would take any nonzero byte as True; another writer's stray byte is damage.
        raw = np.frombuffer(data, dtype=np.uint8, count=end - begin, offset=begin)
        wrong = np.flatnonzero(raw > 1)
        if wrong.size:
            at = int(wrong[0])
            raise CheckpointError(f"entry {name!r}: BOOL byte {int(raw[at]):#04x} at position {at} is neither 0 nor 1")
    stored = np.frombuffer(data, dtype=unit, count=(end - begin) // unit.itemsize, offset=begin)
    array = stored.astype(unit.newbyteorder("="), copy=True).reshape(tuple(shape))
    array.flags.writeable = False
    return array


def _verify_metadata(header: Mapping[str, Any], metadata: Mapping[str, str], known: _Elements) -> dict[str, ElementType]:
    """The topos metadata is all there and agrees with the header (the checksum is checked later).

    Returns each entry's element type, as ``topos.elements`` names it.
    """
    version = metadata.get("topos.format")
    if version is None:
        found = sorted(key for key in metadata if _near_reserved(key))
        if not found:
            raise CheckpointError(
                "not a topos checkpoint: no topos.format in its metadata; to read a file another "
                "tool wrote, pass foreign=True (only its structure is checked then)"
            )
        raise CheckpointError(
            f"a damaged topos checkpoint: its metadata has {', '.join(map(shown, found))} but no topos.format"
        )
    if version != FORMAT_VERSION:
        raise CheckpointError(f"written by topos checkpoint format {shown(version)}; this reads {FORMAT_VERSION!r}")
    checksum = metadata.get("topos.checksum")
    if checksum is None:
        raise CheckpointError("a topos checkpoint without topos.checksum (altered after writing?)")
    text = metadata.get("topos.elements")
    if text is None:
        raise CheckpointError("a topos checkpoint without topos.elements (altered after writing?)")
    try:
        elements = _json(text)
    except (ValueError, RecursionError):
        raise CheckpointError(f"topos.elements is not valid JSON: {shown(text)}") from None
    if not isinstance(elements, dict):
        raise CheckpointError(f"topos.elements is not a JSON object: {shown(text)}")
    if isinstance(elements, _Twice):
        raise CheckpointError(f"entry {elements.key!r}: topos.elements names it twice")
    named: dict[str, ElementType] = {}
    for name in sorted(set(elements) | set(header)):
        if name not in header:
            raise CheckpointError(f"entry {name!r}: named in topos.elements, absent from the header")
        if name not in elements:
            raise CheckpointError(f"entry {name!r}: absent from topos.elements")
        element, dtype = elements[name], header[name]["dtype"]
        if isinstance(element, str) and element not in known.by_name:
            raise CheckpointError(
                f"entry {name!r}: topos.elements says {shown(element)}, not a registered element type "
                f"(registered: {', '.join(sorted(known.by_name))}); register the plugin that defines it, "
                "or load into a template of that element"
            )
        if not isinstance(element, str) or element not in known.by_name or known.by_name[element].safetensors != dtype:
            raise CheckpointError(f"entry {name!r}: topos.elements says {shown(element)}, its dtype is {dtype}")
        named[name] = known.by_name[element]
    return named


# --------------------------------------------------------------------------- tables <-> entries
def _fields(state: Any) -> list[tuple[str, Any]] | None:
    """The named parts of a record or mapping; None for a leaf."""
    if isinstance(state, Mapping):
        return [(str(k), v) for k, v in state.items()]
    if attrs.has(type(state)):
        return [(field.name, getattr(state, field.name)) for field in attrs.fields(type(state))]
    return None


def _flatten_state(state: Any, prefix: str, named: list[tuple[str, Symbol]], out: dict[str, Tensor]) -> None:
    if isinstance(state, Parameters):
        for path, symbol in named:
            out[f"{prefix}/{path}"] = _of(state, symbol, f"{prefix}/{path}")
    elif isinstance(state, Tensor):
        out[prefix] = state
    elif isinstance(state, (str, int, float, bool)) or state is None:
        # Plain values (an optimizer's kind) are part of the template, not of the file.
        return
    else:
        fields = _fields(state)
        if fields is None:
            raise CheckpointError(
                f"optimizer state part {prefix!r} is a {type(state).__name__}; "
                "only tables, tensors, mappings and attrs records are stored"
            )
        for name, part in fields:
            _flatten_state(part, f"{prefix}/{name}", named, out)


def snapshot(module: Visitable, parameters: Parameters, state: object = None) -> dict[str, Tensor]:
    """Entries by path: each parameter under its dotted path, state under ``state/...``.

    ``state`` is an optimizer state: an attrs record or mapping whose parts are tables
    aligned with ``parameters`` (stored per path), tensors, or further records and mappings.
    A tied parameter is stored under each of its paths.
    """
    named = _named("snapshot()", module, parameters, "parameters")
    entries: dict[str, Tensor] = {}
    for path, symbol in named:
        entries[path] = _of(parameters, symbol, path)
    if state is not None:
        _flatten_state(state, STATE.rstrip("/"), named, entries)
    return entries


def _named(what: str, module: object, table: object, role: str, entries: object = None) -> list[tuple[str, Symbol]]:
    """``module``'s parameters by path, once it, the ``role`` table and ``entries`` are checked by name."""
    if role and not isinstance(table, Parameters):
        raise CheckpointError(f"{what}: {role} must be a Parameters table, got {type(table).__name__}")
    if not callable(getattr(module, "visit", None)):
        raise CheckpointError(f"{what}: module must be a Module (with visit()), got {type(module).__name__}")
    if entries is not None and not isinstance(entries, Mapping):
        raise CheckpointError(f"{what}: entries must map names to Tensors, got {type(entries).__name__}")
    for name, tensor in (entries or {}).items():
        if not isinstance(name, str) or not isinstance(tensor, Tensor):
            raise CheckpointError(
                f"{what}: entries must map names (str) to Tensors; {shown(name)} maps to a {type(tensor).__name__}"
            )
    return [(str(path), symbol) for path, symbol in named_parameters(cast(Visitable, module))]


def _label(path: str, origin: Mapping[str, str]) -> str:
    """``path``, with the file entry it was renamed from when it was."""
    source = origin.get(path, path)
    return path if source == path else f"{path} (file entry {source!r})"


def _of(table: Parameters, symbol: Symbol, path: str) -> Tensor:
    try:
        return table.of(symbol)
    except ToposError as error:
        raise CheckpointError(f"{path}: the table does not hold this module's parameter: {error.detail}") from None


def _install(
    template: Parameters,
    named: list[tuple[str, Symbol]],
    entries: Mapping[str, Tensor | Array],
    what: str,
    origin: Mapping[str, str],
) -> Parameters:
    missing = [path for path, _ in named if path not in entries]
    if missing:
        raise CheckpointError(f"{what}: missing entries for {', '.join(missing)}")
    pairs: list[tuple[Symbol, Tensor]] = []
    for path, symbol in named:
        expected = _of(template, symbol, path)
        found = entries[path]
        if not isinstance(found, Tensor):
            source = origin.get(path, path)
            raise CheckpointError(
                f"{what}: parameter {path} (file entry {source!r}) is {_dtype_of(found)} {list(found.shape)} "
                f"in the file, the template needs {expected.element}{expected.shape}: integer entries "
                "never load into float parameters"
            )
        if found.shape != expected.shape:
            flipped = found.shape.rank == 2 and found.shape.axes[::-1] == expected.shape.axes
            hint = " (its transpose: a torch.nn.Linear [out, in] layout? topos keeps [in, out])" if flipped else ""
            raise CheckpointError(f"{what}: {_label(path, origin)} has shape {found.shape} in the file, the template needs {expected.shape}{hint}")
        if found.element != expected.element:
            raise CheckpointError(f"{what}: {_label(path, origin)} holds {found.element} in the file, the template needs {expected.element}")
        pairs.append((symbol, found))
    return template.with_payloads(pairs)


def restore(
    module: Visitable, template: Parameters, entries: Mapping[str, Tensor], *, rename: Rename | None = None
) -> Parameters:
    """``template`` with every parameter replaced from ``entries`` (strict; see module contract).

    Entries under ``state/`` are ignored here (load weights only from a training checkpoint);
    any other name that is not a module path is unexpected. A tied parameter takes the entry
    of its last path.
    """
    named = _named("restore()", module, template, "template", entries)
    return _restore(named, template, entries, rename)


def _dtype_of(array: Array) -> str:
    """``I64 (int64)``: an integer entry's safetensors dtype and numpy's name for it."""
    name = next((key for key, unit in _INTEGERS.items() if unit == array.dtype.newbyteorder("<")), "?")
    return f"{name} ({array.dtype.name})"


def _restore(
    named: list[tuple[str, Symbol]], template: Parameters, entries: Mapping[str, Tensor | Array], rename: Rename | None
) -> Parameters:
    # One renaming over float and integer entries alike, so a clash between the two is named too.
    sources = renaming(cast(Mapping[str, Tensor], entries), rename)
    origin = {path: source for path, (source, _) in sources.items()}
    paths = {path for path, _ in named}
    unexpected = sorted(_label(name, origin) for name in sources if name not in paths and not name.startswith(STATE))
    if unexpected:
        raise CheckpointError(f"parameters: unexpected entries {', '.join(unexpected)} (not paths of this module)")
    installed: dict[str, Tensor | Array] = {path: tensor for path, (_, tensor) in sources.items()}
    return _install(template, named, installed, "parameters", origin)


def _rebuild_state(
    template: Any, prefix: str, named: list[tuple[str, Symbol]], entries: Mapping[str, Tensor], wanted: set[str]
) -> Any:
    if isinstance(template, Parameters):
        scoped = {name[len(prefix) + 1 :]: t for name, t in entries.items() if name.startswith(prefix + "/")}
        wanted.update(f"{prefix}/{path}" for path, _ in named)
        return _install(template, named, scoped, prefix, {})
    if isinstance(template, Tensor):
        wanted.add(prefix)
        found = entries.get(prefix)
        if found is None:
            raise CheckpointError(f"missing entry {prefix}")
        if found.shape != template.shape or found.element != template.element:
            raise CheckpointError(
                f"{prefix} is {found.element}{found.shape} in the file, the template needs "
                f"{template.element}{template.shape}"
            )
        return found
    fields = _fields(template)
    if fields is None:
        return template
    rebuilt = {name: _rebuild_state(part, f"{prefix}/{name}", named, entries, wanted) for name, part in fields}
    if isinstance(template, Mapping):
        return rebuilt
    return attrs.evolve(template, **rebuilt)


def restore_state(module: Visitable, template: State, entries: Mapping[str, Tensor]) -> State:
    """Optimizer state shaped like ``template`` from the ``state/`` entries (strict)."""
    named = _named("restore_state()", module, None, "", entries)
    wanted: set[str] = set()
    rebuilt = _rebuild_state(template, STATE.rstrip("/"), named, entries, wanted)
    unexpected = sorted(name for name in entries if name.startswith(STATE) and name not in wanted)
    if unexpected:
        raise CheckpointError(f"state: unexpected entries {', '.join(unexpected)}")
    _check_counts(rebuilt, STATE.rstrip("/"))
    return cast(State, rebuilt)


def _check_counts(state: Any, prefix: str) -> None:
    """Every optimizer step count read back is a whole number an f64 can still advance."""
    if isinstance(state, OptimizerState):
        count = state.scalars.get("count")
        if count is not None:
            value = float(np.asarray(count.numpy(), dtype=np.float64).reshape(-1)[0])
            if not (math.isfinite(value) and 0 <= value <= _COUNT_LIMIT and value == math.floor(value)):
                raise CheckpointError(
                    f"entry {prefix}/scalars/count: the step count {value!r} is not a whole number "
                    f"in [0, 2**53]"
                )
        return
    if isinstance(state, (Parameters, Tensor)):
        return
    for name, part in _fields(state) or []:
        _check_counts(part, f"{prefix}/{name}")


# --------------------------------------------------------------------------- files
def save(
    file: str | os.PathLike[str],
    module: Visitable,
    parameters: Parameters,
    state: object = None,
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write ``parameters`` (and optimizer ``state``) by module path to one file, atomically.

    See the module contract for what a bad path, a kill mid-write or a symbolic link does.
    """
    path = _path(file)
    try:
        entries = snapshot(module, parameters, state)
    except CheckpointError as error:
        raise CheckpointError(f"{path}: {error.detail}") from None
    write(path, entries, metadata)


def _template_elements(template: Parameters) -> list[ElementType]:
    # A template's elements need no registration: the caller already holds them.
    return [tensor.element for tensor in template.payloads()]


def load(
    file: str | os.PathLike[str],
    module: Visitable,
    template: Parameters,
    *,
    rename: Rename | None = None,
    foreign: bool = False,
) -> Parameters:
    """Read, verify and install a file's parameters into ``template`` (a new table).

    The file must be a verified topos checkpoint unless ``foreign=True``, which also takes a
    file another tool wrote (a Hugging Face ``model.safetensors`` with ``rename``).
    """
    path = _path(file)
    check_rename(rename)
    named = _named(f"{path}: load()", module, template, "template")
    checkpoint = _read_named(path, foreign, _template_elements(template))
    try:
        return _restore(named, template, {**checkpoint.entries, **checkpoint.arrays}, rename)
    except CheckpointError as error:
        raise CheckpointError(f"{path}: {error.detail}") from None


def load_training(
    file: str | os.PathLike[str], module: Visitable, template: Parameters, state: State
) -> tuple[Parameters, State]:
    """Parameters and optimizer state from one verified topos checkpoint, each installed strictly."""
    path = _path(file)
    _named(f"{path}: load_training()", module, template, "template")
    checkpoint = _read_named(path, False, _template_elements(template))
    try:
        return (
            restore(module, template, checkpoint.entries),
            restore_state(module, state, checkpoint.entries),
        )
    except CheckpointError as error:
        raise CheckpointError(f"{path}: {error.detail}") from None
