"""Checkpoints: parameter tables (and optimizer state) by module path, in one safetensors file.

Contract:

- The file is safetensors (8-byte little-endian header length, a JSON header naming each
  entry's ``dtype``/``shape``/``data_offsets``, then raw little-endian data), so other tools
  read it. ``__metadata__`` carries ``topos.format`` (the format version),
  ``topos.elements`` (each entry's element type) and ``topos.checksum`` (sha256 over the
  canonical header and the data). Element types map to ``F32``, ``F64`` and ``BF16``.
- Writing is atomic: a temporary file in the same directory is written, flushed, fsynced and
  renamed over the target, so a crash mid-write leaves the previous file intact.
- Reading never executes code (no pickle anywhere: the header is JSON, data is read with
  explicit dtypes) and checks integrity before building anything: header bounds, entry
  fields, sizes against dtype x shape, offsets contiguous and covering the data exactly,
  and, for files topos wrote, the format version, element list and checksum.
- Installing into a template is strict: a missing, unexpected, misshapen or wrong-element
  entry raises :class:`~topos.CheckpointError` naming its path, and nothing changes (tables
  are values; a failed load returns nothing). A name mapping (dict or callable) renames file
  entries to module paths first, e.g. to read Hugging Face GPT-2 names.

Parameters are keyed by their dotted module path (``blocks.0.attention.query.weights``).
Optimizer state (a mapping, or an attrs record, of parameter-aligned tables and single
tensors) is keyed under ``state/<field>/<path>`` and ``state/<field>``.

Example:
    >>> import os, tempfile
    >>> from topos import Tape, Tensor
    >>> from topos.nn.layers import Linear
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
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast, final

import attrs
import ml_dtypes
import numpy as np

from topos import (
    CheckpointError,
    ElementType,
    Parameters,
    Symbol,
    Tensor,
    ToposError,
    bf16,
    f32,
    f64,
)
from topos.nn.module import Module, named_parameters

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

# dtype name -> (element, little-endian storage unit used on disk)
_BY_NAME: dict[str, tuple[ElementType, np.dtype[Any]]] = {
    "F32": (f32, np.dtype("<u4")),
    "F64": (f64, np.dtype("<u8")),
    "BF16": (bf16, np.dtype("<u2")),
}
_BY_ELEMENT: dict[str, str] = {"f32": "F32", "f64": "F64", "bf16": "BF16"}
_NATIVE: dict[str, np.dtype[Any]] = {
    "F32": np.dtype(np.float32),
    "F64": np.dtype(np.float64),
    "BF16": np.dtype(ml_dtypes.bfloat16),
}

Rename = Mapping[str, str | None] | Callable[[str], str | None]
"""How file entry names become module paths; ``None`` drops an entry (e.g. a cached mask)."""

State = TypeVar("State")


@final
@attrs.frozen(slots=True)
class Checkpoint:
    """What a verified file holds: entries by name, and its string metadata."""

    entries: Mapping[str, Tensor]
    metadata: Mapping[str, str]


# --------------------------------------------------------------------------- writing
def _canonical(header: Mapping[str, Any]) -> bytes:
    return json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _digest(header: Mapping[str, Any], metadata: Mapping[str, str], data: Iterable[bytes]) -> str:
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
    dtype = _BY_ELEMENT.get(tensor.element.name)
    if dtype is None:
        raise CheckpointError(f"entry {name!r}: element {tensor.element} has no safetensors dtype")
    unit = _BY_NAME[dtype][1]
    array = np.ascontiguousarray(tensor.numpy())
    raw = array.view(unit.newbyteorder("=")).astype(unit, copy=False)
    return dtype, raw.tobytes(order="C")


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name or name == "__metadata__":
        raise CheckpointError(f"entry names must be non-empty strings other than '__metadata__'; got {name!r}")
    return name


def write(file: str | os.PathLike[str], entries: Mapping[str, Tensor], metadata: Mapping[str, str] | None = None) -> None:
    """Write ``entries`` to ``file`` atomically as safetensors, with topos metadata.

    ``metadata`` adds caller strings (keys starting with ``topos.`` are reserved).
    """
    if not isinstance(file, (str, os.PathLike)):
        raise CheckpointError(f"write(): the file must be a path (str or os.PathLike), got {type(file).__name__}")
    where = os.fspath(file)
    if not isinstance(entries, Mapping):
        raise CheckpointError(f"write({where!r}): entries must map names to Tensors, got {type(entries).__name__}")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise CheckpointError(f"write({where!r}): metadata must map strings to strings, got {type(metadata).__name__}")
    extra = dict(metadata or {})
    for key, value in extra.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise CheckpointError(f"write({where!r}): metadata must map strings to strings; got {key!r}: {value!r}")
        if key.startswith("topos."):
            raise CheckpointError(f"write({where!r}): metadata key {key!r} is reserved for topos")
    if not entries:
        raise CheckpointError(f"write({where!r}): a checkpoint needs at least one entry")
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
    _atomic_write(os.fspath(file), [len(text).to_bytes(8, "little"), text, *chunks])


def _atomic_write(target: str, parts: Iterable[bytes]) -> None:
    directory = os.path.dirname(os.path.abspath(target))
    descriptor, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            for part in parts:
                handle.write(part)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
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


# --------------------------------------------------------------------------- reading
def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise CheckpointError(f"the header names {key!r} twice")
        result[key] = value
    return result


def _no_constants(token: str) -> Any:
    raise CheckpointError(f"the header holds a non-JSON number {token}")


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def read(file: str | os.PathLike[str]) -> Checkpoint:
    """Read and verify a safetensors file; every defect raises :class:`~topos.CheckpointError`.

    Files topos wrote must carry a matching format version, element list and checksum;
    files from other tools (no ``topos.format``) get the structural checks only.
    """
    if not isinstance(file, (str, os.PathLike)):
        raise CheckpointError(f"read(): the file must be a path (str or os.PathLike), got {type(file).__name__}")
    path = os.fspath(file)
    try:
        with open(path, "rb") as handle:
            blob = handle.read()
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read the checkpoint: {error}") from None
    try:
        return _parse(blob)
    except CheckpointError as error:
        raise CheckpointError(f"{path}: {error}") from None


def _parse(blob: bytes) -> Checkpoint:
    if len(blob) < 8:
        raise CheckpointError(f"truncated: {len(blob)} bytes, too short for the 8-byte header length")
    length = int.from_bytes(blob[:8], "little")
    if length < 2 or length > len(blob) - 8 or length > _MAX_HEADER:
        raise CheckpointError(
            f"the header length {length} does not fit a file of {len(blob)} bytes "
            "(truncated, or not a safetensors file)"
        )
    try:
        text = blob[8 : 8 + length].decode("utf-8")
        document = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except CheckpointError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CheckpointError(f"the header is not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise CheckpointError("the header is not a JSON object")
    metadata = document.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise CheckpointError("__metadata__ must map strings to strings")
    data = memoryview(blob)[8 + length :]
    spans: list[tuple[int, int, str]] = []
    for name, entry in document.items():
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise CheckpointError(f"entry {name!r}: expected exactly dtype, shape and data_offsets")
        dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if dtype not in _BY_NAME:
            raise CheckpointError(f"entry {name!r}: dtype {dtype!r} is not one of {sorted(_BY_NAME)}")
        if not isinstance(shape, list) or not all(_int(a) for a in shape):
            raise CheckpointError(f"entry {name!r}: shape {shape!r} is not a list of extents")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_int(o) for o in offsets):
            raise CheckpointError(f"entry {name!r}: data_offsets {offsets!r} is not [begin, end]")
        begin, end = offsets
        volume = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if volume == 0:
            raise CheckpointError(f"entry {name!r}: shape {shape} is empty; topos tensors never are")
        expected = volume * _BY_NAME[dtype][1].itemsize
        if end < begin or end - begin != expected:
            raise CheckpointError(
                f"entry {name!r}: {dtype}{shape} needs {expected} bytes, its offsets span {end - begin}"
            )
        spans.append((begin, end, name))
    spans.sort()
    position = 0
    for begin, end, name in spans:
        if begin != position:
            raise CheckpointError(
                f"entry {name!r} starts at byte {begin}, expected {position} (offsets must be contiguous)"
            )
        position = end
    if position != len(data):
        raise CheckpointError(
            f"the entries cover {position} data bytes, the file holds {len(data)} (truncated or padded)"
        )
    if "topos.format" in metadata:
        _verify_topos(document, metadata, [data[b:e] for b, e, _ in spans])
    entries: dict[str, Tensor] = {}
    for begin, end, name in spans:
        dtype = document[name]["dtype"]
        element, unit = _BY_NAME[dtype]
        stored = np.frombuffer(data[begin:end], dtype=unit)
        array = stored.astype(unit.newbyteorder("="), copy=True).view(_NATIVE[dtype])
        entries[name] = Tensor(array.reshape(tuple(document[name]["shape"])), element=element)
    return Checkpoint(dict(sorted(entries.items())), dict(metadata))


def _verify_topos(header: Mapping[str, Any], metadata: Mapping[str, str], chunks: list[memoryview]) -> None:
    version = metadata["topos.format"]
    if version != FORMAT_VERSION:
        raise CheckpointError(f"written by topos checkpoint format {version!r}; this reads {FORMAT_VERSION!r}")
    checksum = metadata.get("topos.checksum")
    if checksum is None:
        raise CheckpointError("a topos checkpoint without topos.checksum (altered after writing?)")
    if _digest(header, metadata, (bytes(c) for c in chunks)) != checksum:
        raise CheckpointError("checksum mismatch: the file was altered or damaged after writing")
    try:
        elements = json.loads(metadata.get("topos.elements", ""))
    except ValueError:
        raise CheckpointError("topos.elements is not valid JSON") from None
    declared = {name: _BY_ELEMENT.get(str(element)) for name, element in dict(elements).items()}
    actual = {name: entry["dtype"] for name, entry in header.items()}
    if declared != actual:
        raise CheckpointError("topos.elements disagrees with the entries' dtypes")


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


def snapshot(module: Module, parameters: Parameters, state: Any = None) -> dict[str, Tensor]:
    """Entries by path: each parameter under its dotted path, state under ``state/...``.

    ``state`` is an optimizer state: an attrs record or mapping whose parts are tables
    aligned with ``parameters`` (stored per path), tensors, or further records and mappings.
    A tied parameter is stored under each of its paths.
    """
    if not isinstance(parameters, Parameters):
        raise CheckpointError(f"snapshot(): parameters must be a Parameters table, got {type(parameters).__name__}")
    if not callable(getattr(module, "visit", None)):
        raise CheckpointError(f"snapshot(): module must be a Module (with visit()), got {type(module).__name__}")
    named = [(str(path), symbol) for path, symbol in named_parameters(module)]
    entries: dict[str, Tensor] = {}
    for path, symbol in named:
        entries[path] = _of(parameters, symbol, path)
    if state is not None:
        _flatten_state(state, STATE.rstrip("/"), named, entries)
    return entries


def _of(table: Parameters, symbol: Symbol, path: str) -> Tensor:
    try:
        return table.of(symbol)
    except ToposError as error:
        raise CheckpointError(f"{path}: the table does not hold this module's parameter: {error}") from None


def _renamed(entries: Mapping[str, Tensor], rename: Rename | None) -> dict[str, Tensor]:
    if rename is None:
        return dict(entries)
    result: dict[str, Tensor] = {}
    for name, tensor in entries.items():
        target = rename(name) if callable(rename) else rename.get(name, name)
        if target is None:
            continue
        if not isinstance(target, str):
            raise CheckpointError(f"the name mapping turned {name!r} into {target!r}, not a string")
        if target in result:
            raise CheckpointError(f"the name mapping sends two entries to {target!r} (one is {name!r})")
        result[target] = tensor
    return result


def _install(
    template: Parameters, named: list[tuple[str, Symbol]], entries: Mapping[str, Tensor], what: str
) -> Parameters:
    missing = [path for path, _ in named if path not in entries]
    if missing:
        raise CheckpointError(f"{what}: missing entries for {', '.join(missing)}")
    pairs: list[tuple[Symbol, Tensor]] = []
    for path, symbol in named:
        expected = _of(template, symbol, path)
        found = entries[path]
        if found.shape != expected.shape:
            raise CheckpointError(f"{what}: {path} has shape {found.shape} in the file, the template needs {expected.shape}")
        if found.element != expected.element:
            raise CheckpointError(
                f"{what}: {path} holds {found.element} in the file, the template needs {expected.element}"
            )
        pairs.append((symbol, found))
    return template.with_payloads(pairs)


def restore(
    module: Module, template: Parameters, entries: Mapping[str, Tensor], *, rename: Rename | None = None
) -> Parameters:
    """``template`` with every parameter replaced from ``entries`` (strict; see module contract).

    Entries under ``state/`` are ignored here (load weights only from a training checkpoint);
    any other name that is not a module path is unexpected. A tied parameter takes the entry
    of its last path.
    """
    named = [(str(path), symbol) for path, symbol in named_parameters(module)]
    renamed = _renamed(entries, rename)
    paths = {path for path, _ in named}
    unexpected = sorted(name for name in renamed if name not in paths and not name.startswith(STATE))
    if unexpected:
        raise CheckpointError(f"parameters: unexpected entries {', '.join(unexpected)} (not paths of this module)")
    return _install(template, named, renamed, "parameters")


def _rebuild_state(
    template: Any, prefix: str, named: list[tuple[str, Symbol]], entries: Mapping[str, Tensor], wanted: set[str]
) -> Any:
    if isinstance(template, Parameters):
        scoped = {name[len(prefix) + 1 :]: t for name, t in entries.items() if name.startswith(prefix + "/")}
        wanted.update(f"{prefix}/{path}" for path, _ in named)
        return _install(template, named, scoped, prefix)
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


def restore_state(module: Module, template: State, entries: Mapping[str, Tensor]) -> State:
    """Optimizer state shaped like ``template`` from the ``state/`` entries (strict)."""
    named = [(str(path), symbol) for path, symbol in named_parameters(module)]
    wanted: set[str] = set()
    rebuilt = _rebuild_state(template, STATE.rstrip("/"), named, entries, wanted)
    unexpected = sorted(name for name in entries if name.startswith(STATE) and name not in wanted)
    if unexpected:
        raise CheckpointError(f"state: unexpected entries {', '.join(unexpected)}")
    return cast(State, rebuilt)


# --------------------------------------------------------------------------- files
def save(
    file: str | os.PathLike[str],
    module: Module,
    parameters: Parameters,
    state: Any = None,
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write ``parameters`` (and optimizer ``state``) by module path to one file, atomically."""
    write(file, snapshot(module, parameters, state), metadata)


def load(
    file: str | os.PathLike[str], module: Module, template: Parameters, *, rename: Rename | None = None
) -> Parameters:
    """Read, verify and install a file's parameters into ``template`` (a new table)."""
    checkpoint = read(file)
    try:
        return restore(module, template, checkpoint.entries, rename=rename)
    except CheckpointError as error:
        raise CheckpointError(f"{os.fspath(file)}: {error}") from None


def load_training(
    file: str | os.PathLike[str], module: Module, template: Parameters, state: State
) -> tuple[Parameters, State]:
    """Parameters and optimizer state from one file, each installed strictly into its template."""
    checkpoint = read(file)
    try:
        return (
            restore(module, template, checkpoint.entries),
            restore_state(module, state, checkpoint.entries),
        )
    except CheckpointError as error:
        raise CheckpointError(f"{os.fspath(file)}: {error}") from None
