"""Run a model written by :func:`topos.export.export` with jax and numpy only, checking it first.

:func:`topos.export.export` copies this file into the artifact as ``load.py``; it imports
nothing from topos, so the artifact runs where topos is not installed. The directory holds:

- ``model.jax``: the plan's StableHLO module as a serialized ``jax.export.Exported``
  (``jax.export.deserialize`` reads it; XLA:CPU),
- ``weights.safetensors``: one entry per parameter, named as ``signature.json`` says,
- ``signature.json`` (format ``topos-export/2``): ``arguments`` (parameters then inputs, in
  ``@main``'s order) and ``outputs``, each with its name, shape and dtype; the compiler
  options to run with; for ``module`` and ``weights`` the file name, its size and its
  SHA-256; and ``sha256``, the digest of the signature itself (:func:`signature_digest`).

Contract:

- Loading checks, in this order, and reads nothing it has not checked: the signature file is
  a regular file (never a symbolic link, FIFO or device; opened non-blocking, read no further
  than its checked size); it is strict JSON (UTF-8, no duplicate keys, no NaN) of a known
  format (``topos-export/1`` is refused with a request to re-export); its own digest
  matches; every field has its type and range, unknown keys are refused. Then each of the
  module and the weights: its name is a plain file name inside the directory (no separator,
  no ``..``, no link) naming a regular file of the recorded size, whose bytes have the
  recorded SHA-256. Only then are the weights parsed (their names, shapes and dtypes must be
  the signature's parameters) and the module deserialized (its argument and result types
  must be the signature's).
- A call checks every feed before anything runs: exactly the signature's input names, each
  its shape; index inputs (``"encoding": "indices"``) take integer arrays whose values lie in
  ``0 <= i < vocab``, checked on the values as given, before the cast to int32 (so an int64
  index cannot wrap into range); float inputs take floating arrays (NaN and infinities pass
  through), converted to the signature's dtype, and a finite value that would overflow is
  refused.
- A refused artifact raises :class:`ArtifactError` naming the file and the cause; a refused
  feed raises :class:`FeedError` naming the artifact and the input. Both are
  :class:`LoadError`, a ``ValueError``.
- The packages it needs (``REQUIREMENTS``) are listed in ``requirements.txt`` beside
  it; one that is missing raises ``ImportError`` naming the package, its range and that file.
- The digests guard against accidents (a truncated or partial copy, bit rot), not against
  tampering: whoever can rewrite a file can rewrite its digest too.

Inputs recorded as one-hot selections cross as row indices: feed the indices,
``int32[count]``, not the one-hot matrix.

Example (any Python with ``requirements.txt`` installed)::

    import sys; sys.path.insert(0, "exported")
    import load
    outputs = load.run("exported", {"tokens": np.array([0, 0, 5], dtype=np.int32)})
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from collections.abc import Mapping
from typing import Any, NoReturn

# What load.py needs beyond the standard library; export() writes it beside load.py as
# requirements.txt, and a missing one is named with that file rather than as a bare ImportError.
REQUIREMENTS = {"numpy": ">=1.26", "jax": ">=0.10.2,<0.13", "jaxlib": ">=0.10.2,<0.13", "flatbuffers": ">=24"}
REQUIREMENTS_FILE = "requirements.txt"


def _missing(package: str, where: str) -> ImportError:
    wanted = os.path.join(where, REQUIREMENTS_FILE)
    return ImportError(f"{where}: loading this exported model needs the package '{package}' "
                       f"({package}{REQUIREMENTS[package]}), which is not installed; "
                       f"install what {wanted} lists: python -m pip install -r {wanted}")


try:
    import numpy as np
except ImportError:
    raise _missing("numpy", os.path.dirname(os.path.abspath(__file__))) from None

FORMAT = "topos-export/2"
SIGNATURE = "signature.json"
DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float16", "bfloat16", "float32", "float64"})
_SAFETENSORS = {"BOOL": "bool", "I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64", "U8": "uint8",
                "U16": "uint16", "U32": "uint32", "U64": "uint64", "F16": "float16", "BF16": "bfloat16",
                "F32": "float32", "F64": "float64"}
_SIGNATURE_LIMIT = 1 << 26  # a signature is a few kilobytes; no real one comes near 64 MiB
_DIMENSION_LIMIT = (1 << 31) - 1
_HEX = re.compile(r"[0-9a-f]{64}")
_TOP = ("format", "module", "weights", "platforms", "element", "compiler_options", "arguments", "outputs", "sha256")


class LoadError(ValueError):
    """An exported model refused to load or to run; the message names the file or input and why."""


class ArtifactError(LoadError):
    """A file of the artifact is missing, damaged, crafted or not a plain file inside it."""


class FeedError(LoadError):
    """A feed does not fit the signature (name, shape, dtype or index range); nothing ran."""


def signature_digest(signature: Mapping[str, Any]) -> str:
    """SHA-256 of ``signature`` without its ``sha256`` key, as sorted, compact, ASCII JSON.

    Hashing the parsed value rather than the bytes lets the file carry its own digest, and
    means only changes in meaning count: re-indenting the file keeps it valid.

    Example:
        >>> signature_digest({"format": "x", "sha256": "ignored"}) == signature_digest({"format": "x"})
        True
    """
    rest = {key: value for key, value in signature.items() if key != "sha256"}
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


class Model:
    """One exported model, verified, deserialized and compiled once; call it with feeds by name."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = os.path.realpath(os.fspath(directory))
        if not os.path.isdir(self.directory):
            raise ArtifactError(f"{directory}: not a directory")
        jax = _require(self.directory)
        path = os.path.join(self.directory, SIGNATURE)
        self.signature: dict[str, Any] = _check_signature(path, _parse(path, _read(path, None)))
        files = {part: self._verified(part) for part in ("module", "weights")}
        self.weights = _weights(os.path.join(self.directory, self.signature["weights"]["file"]),
                                files["weights"], self.signature["arguments"])
        module = os.path.join(self.directory, self.signature["module"]["file"])
        try:
            exported = jax.export.deserialize(bytearray(files["module"]))
        except Exception as error:  # a digest that matches crafted bytes: jax's own errors vary
            raise ArtifactError(f"{module}: jax cannot deserialize the module ({type(error).__name__}: {error})") from None
        for what, avals, entries in (("argument", exported.in_avals, self.signature["arguments"]),
                                     ("result", exported.out_avals, self.signature["outputs"])):
            declared = [(tuple(entry["shape"]), entry["dtype"]) for entry in entries]
            found = [(tuple(aval.shape), str(aval.dtype)) for aval in avals]
            if declared != found:
                raise ArtifactError(f"{module}: the module's {what}s {found} are not the signature's {declared}")
        self._wide = any(_dtype(entry["dtype"]).itemsize == 8
                         for entry in (*self.signature["arguments"], *self.signature["outputs"]))
        self._call = jax.jit(exported.call, compiler_options=dict(self.signature["compiler_options"]))

    def _verified(self, part: str) -> bytes:
        described = self.signature[part]
        name = described["file"]
        path = os.path.join(self.directory, name)
        if os.path.dirname(os.path.realpath(path)) != self.directory:
            raise ArtifactError(f"{path}: the {part} file resolves outside the artifact directory")
        data = _read(path, described["size"])
        if hashlib.sha256(data).hexdigest() != described["sha256"]:
            raise ArtifactError(f"{path}: the {part} file's SHA-256 is not the one signature.json records (damaged?)")
        return data

    @property
    def inputs(self) -> list[str]:
        """The names to feed, in ``@main``'s order."""
        return [entry["name"] for entry in self.signature["arguments"] if entry["kind"] == "input"]

    @property
    def outputs(self) -> list[str]:
        """The names of the results, in declared order."""
        return [entry["name"] for entry in self.signature["outputs"]]

    def arguments(self, feeds: Mapping[str, Any]) -> list[np.ndarray[Any, Any]]:
        """The arrays for ``@main``: weights and feeds, each feed checked against the signature."""
        if not isinstance(feeds, Mapping):
            raise FeedError(f"{self.directory}: feeds must map input names to arrays, got {type(feeds).__name__}")
        unknown = sorted(repr(name) for name in feeds if name not in self.inputs)
        missing = [name for name in self.inputs if name not in feeds]
        if unknown or missing:
            raise FeedError(f"{self.directory}: feeds must name exactly the inputs {self.inputs}; "
                            f"missing {missing}, unknown [{', '.join(unknown)}]")
        return [self.weights[entry["name"]] if entry["kind"] == "parameter" else self._feed(entry, feeds[entry["name"]])
                for entry in self.signature["arguments"]]

    def _feed(self, entry: Mapping[str, Any], given: Any) -> np.ndarray[Any, Any]:
        where = f"{self.directory}: input {entry['name']!r}"
        shape, dtype = tuple(entry["shape"]), _dtype(entry["dtype"])
        try:
            array = np.asarray(given)
        except Exception as error:  # ragged lists and unconvertible objects
            raise FeedError(f"{where} is not an array: {error}") from None
        if array.shape != shape:
            raise FeedError(f"{where} must have shape {list(shape)}, got {list(array.shape)}")
        if dtype.kind in "iu":
            if array.dtype.kind not in "iu":
                raise FeedError(f"{where} takes integers ({entry['dtype']}), got {array.dtype}")
            info = np.iinfo(dtype)
            low, high = (0, entry["vocab"]) if entry.get("encoding") == "indices" else (info.min, info.max + 1)
            # The range is checked on the values as given, in Python integers: a cast first would wrap.
            bad = np.flatnonzero((array < low) | (array >= high))
            if bad.size:
                raise FeedError(f"{where} takes values in [{low}, {high}); position {int(bad[0])} holds "
                                f"{int(array.reshape(-1)[bad[0]])} ({len(bad)} out of range)")
            return array.astype(dtype)
        if dtype.kind == "b":
            if array.dtype.kind != "b":
                raise FeedError(f"{where} takes booleans, got {array.dtype}")
            return array
        if array.dtype.kind != "f" and array.dtype.name != "bfloat16":
            raise FeedError(f"{where} takes floats ({entry['dtype']}), got {array.dtype}")
        with np.errstate(over="ignore"):
            converted = array.astype(dtype)
        overflow = np.isfinite(array.astype(np.float64)) & ~np.isfinite(converted.astype(np.float64))
        if overflow.any():
            raise FeedError(f"{where}: position {int(np.flatnonzero(overflow)[0])} overflows {entry['dtype']}")
        return converted

    def __call__(self, feeds: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
        """Run once: ``{output name: array}``."""
        import jax

        arrays = self.arguments(feeds)
        if self._wide:
            with jax.enable_x64(True):
                results = self._call(*arrays)
        else:
            results = self._call(*arrays)
        return {name: np.asarray(result) for name, result in zip(self.outputs, results, strict=True)}


def requirements_text() -> str:
    """The ``requirements.txt`` written beside ``load.py``: one ``package range`` line each.

    Example:
        >>> "flatbuffers>=24" in requirements_text().splitlines()
        True
    """
    return "".join(f"{package}{spec}\n" for package, spec in REQUIREMENTS.items())


def _require(directory: str) -> Any:
    """jax, after checking every package the loader needs imports (flatbuffers is only
    imported deep inside ``jax.export.deserialize``, where its absence would read as damage)."""
    import importlib.util

    for package in ("jax", "jaxlib", "flatbuffers"):
        try:
            found = importlib.util.find_spec(package) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise _missing(package, directory) from None
    try:
        import jax
    except ImportError as error:  # a dependency found above that still fails to import
        raise _missing(error.name if error.name in REQUIREMENTS else "jax", directory) from None
    return jax


def _read(path: str, size: int | None) -> bytes:
    """The bytes of a regular file, never following a link nor blocking on a FIFO, bounded by its size."""
    try:
        before = os.lstat(path)
        if not stat.S_ISREG(before.st_mode):
            _refuse(path, f"not a regular file ({_kind(before.st_mode)})")
        expected = before.st_size if size is None else size
        if before.st_size != expected:
            _refuse(path, f"holds {before.st_size} bytes, signature.json records {expected} (truncated or replaced?)")
        if expected > _SIGNATURE_LIMIT and size is None:
            _refuse(path, f"{expected} bytes is far too large for a signature")
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                             | getattr(os, "O_BINARY", 0))
        try:
            opened = os.fstat(descriptor)
            if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (before.st_dev, before.st_ino):
                _refuse(path, "was replaced while being opened")
            chunks, left = [], expected
            while left and (chunk := os.read(descriptor, min(left, 1 << 24))):
                chunks.append(chunk)
                left -= len(chunk)
            if left or os.read(descriptor, 1):
                _refuse(path, "changed size while being read")
        finally:
            os.close(descriptor)
    except OSError as error:
        raise ArtifactError(f"{path}: cannot read it ({error.strerror or error})") from None
    return b"".join(chunks)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def _refuse(path: str, cause: str) -> NoReturn:
    raise ArtifactError(f"{path}: {cause}")


def _json(path: str, data: bytes, what: str) -> dict[str, Any]:
    """A JSON object, strictly: UTF-8, no duplicate keys (the last would win silently), no NaN."""
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in items]
        if len(set(keys)) != len(keys):
            raise ValueError(f"a duplicate key among {keys}")
        return dict(items)

    def constant(name: str) -> NoReturn:
        raise ValueError(f"{name} is not JSON")

    try:
        parsed = json.loads(data.decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ArtifactError(f"{path}: not a valid {what} ({type(error).__name__}: {error})") from None
    if not isinstance(parsed, dict):
        _refuse(path, f"the {what} must be a JSON object, got {type(parsed).__name__}")
    return parsed


def _parse(path: str, data: bytes) -> dict[str, Any]:
    parsed = _json(path, data, "signature")
    if parsed.get("format") == "topos-export/1":
        _refuse(path, "was written by an older topos (topos-export/1, without digests); export the model again")
    if parsed.get("format") != FORMAT:
        _refuse(path, f"not a {FORMAT} artifact (format {parsed.get('format')!r})")
    if not isinstance(parsed.get("sha256"), str) or parsed["sha256"] != signature_digest(parsed):
        _refuse(path, "its sha256 does not match its contents (damaged?)")
    return parsed


def _check_signature(path: str, signature: dict[str, Any]) -> dict[str, Any]:
    """Every field's type and range, so the rest of the loader can index it without surprises."""
    def need(ok: bool, what: str) -> None:
        if not ok:
            _refuse(path, f"malformed signature: {what}")

    def keys(value: Any, required: tuple[str, ...], optional: tuple[str, ...], what: str) -> None:
        need(isinstance(value, dict), f"{what} must be an object")
        need(set(required) <= set(value) <= {*required, *optional},
             f"{what} must have the keys {list(required)} (optionally {list(optional)}), has {sorted(value)}")

    def integer(value: Any, low: int, high: int) -> bool:
        return type(value) is int and low <= value <= high

    keys(signature, _TOP, (), "the signature")
    for part in ("module", "weights"):
        described = signature[part]
        keys(described, ("file", "size", "sha256"), (), part)
        name = described["file"]
        need(isinstance(name, str) and name not in ("", ".", "..", SIGNATURE, "load.py") and "\0" not in name
             and os.path.basename(name) == name and "/" not in name and "\\" not in name,
             f"{part} file {name!r} must be a plain file name inside the artifact")
        need(integer(described["size"], 0, 1 << 62), f"{part} size must be a whole number of bytes")
        need(isinstance(described["sha256"], str) and _HEX.fullmatch(described["sha256"]) is not None,
             f"{part} sha256 must be 64 lowercase hex digits")
    need(signature["module"]["file"] != signature["weights"]["file"], "module and weights must be two files")
    need(isinstance(signature["element"], str), "element must be a string")
    need(isinstance(signature["platforms"], list) and all(isinstance(p, str) for p in signature["platforms"]),
         "platforms must be a list of strings")
    options = signature["compiler_options"]
    need(isinstance(options, dict) and all(isinstance(v, str) for v in options.values()),
         "compiler_options must map names to strings")
    for group in ("arguments", "outputs"):
        need(isinstance(signature[group], list), f"{group} must be a list")
        names = []
        for position, entry in enumerate(signature[group]):
            what = f"{group}[{position}]"
            base = ("kind", "name", "shape", "dtype") if group == "arguments" else ("name", "shape", "dtype")
            need(isinstance(entry, dict), f"{what} must be an object")
            need(group == "outputs" or entry.get("kind") in ("parameter", "input"), f"{what} kind must be parameter or input")
            extra = ("encoding", "vocab", "one") if entry.get("kind") == "input" else ()
            keys(entry, base, extra, what)
            need(isinstance(entry["name"], str) and entry["name"] != "", f"{what} name must be a non-empty string")
            names.append(entry["name"])
            shape = entry["shape"]
            need(isinstance(shape, list) and len(shape) <= 64 and all(integer(d, 0, _DIMENSION_LIMIT) for d in shape)
                 and math.prod(shape) <= 1 << 40, f"{what} shape must be at most 64 sizes in [0, 2**31)")
            need(entry["dtype"] in DTYPES, f"{what} dtype must be one of {sorted(DTYPES)}")
            if "encoding" in entry or "vocab" in entry or "one" in entry:
                need(set(extra) <= set(entry), f"{what}: an index input has encoding, vocab and one")
                need(entry["encoding"] == "indices" and entry["dtype"] in ("int32", "int64"),
                     f"{what} encoding must be 'indices' over int32 or int64")
                need(integer(entry["vocab"], 1, np.iinfo(entry["dtype"]).max), f"{what} vocab must be a positive size")
                need(type(entry["one"]) in (int, float) and math.isfinite(entry["one"]), f"{what} one must be a number")
        need(len(set(names)) == len(names), f"{group} names must be unique, got {names}")
    return signature


def _weights(path: str, data: bytes, arguments: list[dict[str, Any]]) -> dict[str, np.ndarray[Any, Any]]:
    """The parameters from a safetensors file, parsed by hand: numpy's safetensors reader knows no bfloat16."""
    if len(data) < 8 or not 2 <= (length := int.from_bytes(data[:8], "little")) <= len(data) - 8:
        _refuse(path, "not a safetensors file (its header length does not fit)")
    header = _json(path, data[8:8 + length], "safetensors header")
    header.pop("__metadata__", None)
    parameters = {entry["name"]: entry for entry in arguments if entry["kind"] == "parameter"}
    if sorted(header) != sorted(parameters):
        _refuse(path, f"holds {sorted(header)}, the signature's parameters are {sorted(parameters)}")
    weights, body = {}, data[8 + length:]
    for name, entry in parameters.items():
        stored = header[name]
        shape = tuple(entry["shape"])
        dtype = _dtype(entry["dtype"])
        span = stored.get("data_offsets") if isinstance(stored, dict) else None
        if (not isinstance(stored, dict) or _SAFETENSORS.get(str(stored.get("dtype"))) != entry["dtype"]
                or stored.get("shape") != list(shape) or not isinstance(span, list) or len(span) != 2
                or not all(type(o) is int for o in span) or not 0 <= span[0] <= span[1] <= len(body)
                or span[1] - span[0] != math.prod(shape) * dtype.itemsize):
            _refuse(path, f"entry {name!r} is not {entry['dtype']}{list(shape)} within the file: {stored!r}")
        array = np.frombuffer(body, dtype=dtype.newbyteorder("<"), count=math.prod(shape), offset=span[0])
        weights[name] = array.astype(dtype).reshape(shape)
    return weights


def _dtype(name: str) -> np.dtype[Any]:
    import jax.numpy as jnp

    found: np.dtype[Any] = jnp.dtype(name)  # knows bfloat16, which numpy alone does not
    return found


def load(directory: str | os.PathLike[str]) -> Model:
    """Verify, read and compile the artifact in ``directory``."""
    return Model(directory)


def run(directory: str | os.PathLike[str], feeds: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
    """Load the artifact and run it once on ``feeds`` (``{input name: array}``)."""
    return Model(directory)(feeds)


if __name__ == "__main__":
    import sys

    model = load(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
    print(json.dumps({"inputs": model.inputs, "outputs": model.outputs}))
