"""The order of an error message: the user's line first, then the file, then the cause.

Every surface that refuses a file (checkpoints, data files, tokenizer files, export
directories) says ``<user file>:<line>: <path>: ...`` (or names the path later in the
sentence), never ``<path>: <user file>:<line>: ...``, and names the user's line exactly
once, however many layers re-raised the error on the way out.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import here
from safetensors.numpy import save_file

from topos import Tape, Tensor, ToposError, data, f32
from topos import checkpoint as ckpt
from topos.nn import Linear
from topos.optim import Sgd
from topos.tokenizers import Gpt2Tokenizer

HERE = os.path.abspath(__file__)


def _linear() -> tuple[Linear, object]:
    tape = Tape(f32)
    layer = Linear(tape, Tensor.ones((2, 3)), Tensor.zeros((3,)))
    return layer, tape.seal().parameters()


def _files(folder: Path) -> dict[str, Path]:
    files = {name: folder / name for name in ("model.safetensors", "foreign.safetensors", "short.idx", "short.bin", "ranks.tiktoken", "bad.safetensors")}
    layer, parameters = _linear()
    ckpt.save(files["model.safetensors"], layer, parameters)  # type: ignore[arg-type]
    save_file({"w": np.ones((2, 3), np.float32), "ids": np.arange(3, dtype=np.int64)}, str(files["foreign.safetensors"]))
    files["short.idx"].write_bytes(b"\x00\x00\x08")
    files["short.bin"].write_bytes(b"\x00" * 10)
    files["ranks.tiktoken"].write_text("not a rank file")
    files["bad.safetensors"].write_bytes((4).to_bytes(8, "little") + b"[1] ")
    return files


def _cases(files: dict[str, Path], folder: Path) -> list[tuple[int, Callable[[], object], Path]]:
    layer, parameters = _linear()
    model, foreign = files["model.safetensors"], files["foreign.safetensors"]
    state = Sgd(0.1).init(parameters)  # type: ignore[arg-type]
    return [
        # checkpoints: reading, each layer of loading, writing, saving
        (here(), lambda: ckpt.read(folder / "absent.safetensors"), folder / "absent.safetensors"),
        (here(), lambda: ckpt.read(files["bad.safetensors"]), files["bad.safetensors"]),
        (here(), lambda: ckpt.read(foreign), foreign),
        (here(), lambda: ckpt.read(model, foreign="yes"), model),  # type: ignore[arg-type]
        (here(), lambda: ckpt.load(foreign, layer, parameters, foreign=True), foreign),  # type: ignore[arg-type]
        (here(), lambda: ckpt.load(foreign, layer, parameters, rename={"w": "weights", "ids": "bias"}, foreign=True), foreign),  # type: ignore[arg-type]
        (here(), lambda: ckpt.load(model, layer, "template"), model),  # type: ignore[arg-type]
        (here(), lambda: ckpt.load(model, layer, parameters, rename={"weights": "bias"}), model),  # type: ignore[arg-type]
        (here(), lambda: ckpt.load_training(model, layer, parameters, {"velocity": Tensor.ones((1,))}), model),  # type: ignore[arg-type]
        (here(), lambda: ckpt.write(folder / "out.safetensors", {"w": np.ones(2)}), folder / "out.safetensors"),  # type: ignore[dict-item]
        (here(), lambda: ckpt.write(folder / "no" / "out.safetensors", {"w": Tensor.ones((2,))}), folder / "no" / "out.safetensors"),
        (here(), lambda: ckpt.save(folder / "out.safetensors", layer, parameters, object()), folder / "out.safetensors"),  # type: ignore[arg-type]
        (here(), lambda: ckpt.save(folder / "out.safetensors", layer, parameters, state, {"topos.x": "y"}), folder / "out.safetensors"),  # type: ignore[arg-type]
        # data files and tokenizer files
        (here(), lambda: data.read_idx(files["short.idx"]), files["short.idx"]),
        (here(), lambda: data.read_cifar(files["short.bin"]), files["short.bin"]),
        (here(), lambda: data.read_idx(folder), folder),
        (here(), lambda: Gpt2Tokenizer(files["ranks.tiktoken"], sha256="0" * 64), files["ranks.tiktoken"]),
    ]


def test_the_users_line_comes_first_then_the_file_and_the_line_is_named_once(tmp_path: Path) -> None:
    files = _files(tmp_path)
    cases = _cases(files, tmp_path)
    assert len(cases) >= 15
    before = sorted(p.name for p in tmp_path.iterdir())
    for line, call, path in cases:
        with pytest.raises(ToposError) as raised:
            call()
        message, site = str(raised.value), f"{HERE}:{line}"
        assert message.startswith(site + ": "), f"line {line}: the message does not start with its site: {message!r}"
        assert message.count(site) == 1, f"line {line}: the site is named twice: {message!r}"
        assert str(path) in message[len(site) :] or repr(str(path)) in message, f"line {line}: {path} not named: {message!r}"
        assert raised.value.detail == message[len(site) + 2 :]
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_re_raising_keeps_the_order_through_a_loader_outside_the_package(tmp_path: Path) -> None:
    """A loader in user code that re-raises with ``detail`` keeps the site first and single."""
    files = _files(tmp_path)
    layer, parameters = _linear()

    def load(path: Path) -> object:
        try:
            return ckpt.load(path, layer, parameters, foreign=True)  # type: ignore[arg-type]
        except ToposError as error:
            raise ToposError(f"{path}: while loading: {error.detail}") from None

    line = here() + 2
    with pytest.raises(ToposError) as raised:
        load(files["foreign.safetensors"])
    message = str(raised.value)
    assert f"{HERE}:{line}: " not in message  # the loader's own line raised it, not the call
    assert message.startswith(HERE + ":") and message.count(HERE) == 1, message
    assert "while loading: " + str(files["foreign.safetensors"]) in message
