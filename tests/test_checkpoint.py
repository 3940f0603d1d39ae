"""Checkpoints: bit-exact round trips (bf16 and optimizer state included), atomic writes,
integrity checks that refuse damaged or foreign files without changing anything, strict
installation by path, Hugging Face GPT-2 names through a mapping, and the reference
``safetensors`` reader agreeing with our files."""

from __future__ import annotations

import json
import os
import pickle
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import safetensors.numpy

from topos import CheckpointError, ElementType, Parameters, Tape, Tensor, Value, bf16, f32, f64
from topos import checkpoint as ckpt
from topos.init import normal
from topos.nn import Activation, Embedding, LayerNorm, Linear, Mlp, Sequential, Visitor
from topos.optim import Adam


def model(element: ElementType = f32, seed: int = 0, widths: tuple[int, ...] = (3, 5, 2)) -> tuple[Mlp, Parameters]:
    tape = Tape(element)
    mlp = Mlp(tape, list(widths), Activation.TANH, normal(seed, 0.5, element))
    return mlp, tape.seal().parameters()


def same_bits(a: Parameters, b: Parameters) -> bool:
    return all(
        p.element == q.element and np.array_equal(p.bits(), q.bits())
        for p, q in zip(a.payloads(), b.payloads(), strict=True)
    )


def trained(element: ElementType) -> tuple[Mlp, Parameters, Any]:
    """A model after three Adam steps, so parameters and moments are all non-trivial."""
    tape = Tape(element)
    mlp = Mlp(tape, [3, 4, 2], Activation.TANH, normal(1, 0.5, element))
    x = tape.input(np.random.default_rng(0).normal(size=(6, 3)))
    out = mlp(x)
    loss = (out * out).sum()
    network = tape.seal()
    parameters = network.parameters()
    optimizer = Adam(learning_rate=0.01)
    state = optimizer.init(parameters)
    for _ in range(3):
        gradients = network.forward(parameters).backward(loss.symbol).parameters(parameters)
        parameters, state = optimizer.update(gradients, state, parameters)
    return mlp, parameters, state


# ----------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("element", [f32, f64, bf16], ids=["f32", "f64", "bf16"])
def test_round_trip_is_bit_exact(tmp_path: Path, element: ElementType) -> None:
    mlp, parameters, state = trained(element)
    file = tmp_path / "model.safetensors"
    ckpt.save(file, mlp, parameters, state)
    template_state = Adam(learning_rate=0.01).init(parameters)
    loaded, loaded_state = ckpt.load_training(file, mlp, parameters.map(lambda p: p * 0.0), template_state)
    assert same_bits(loaded, parameters)
    for name, table in state.tables.items():
        assert same_bits(loaded_state.tables[name], table)
    for name, scalar in state.scalars.items():
        assert np.array_equal(loaded_state.scalars[name].bits(), scalar.bits())
        assert loaded_state.scalars[name].element == scalar.element
    assert loaded_state.step == 3 and loaded_state.kind == state.kind
    # Weights alone load from a training checkpoint (the state/ entries are skipped).
    assert same_bits(ckpt.load(file, mlp, parameters), parameters)


def test_negative_zero_nan_and_infinities_survive(tmp_path: Path) -> None:
    payload = Tensor(np.array([-0.0, np.nan, np.inf, -np.inf, 1e-45], dtype=np.float32))
    file = tmp_path / "odd.safetensors"
    ckpt.write(file, {"odd": payload})
    back = ckpt.read(file).entries["odd"]
    assert np.array_equal(back.bits(), payload.bits())


def test_file_layout_is_safetensors_with_topos_metadata(tmp_path: Path) -> None:
    mlp, parameters = model(bf16)
    file = tmp_path / "m.safetensors"
    ckpt.save(file, mlp, parameters, metadata={"note": "hello"})
    blob = file.read_bytes()
    length = int.from_bytes(blob[:8], "little")
    assert length % 8 == 0
    header = json.loads(blob[8 : 8 + length])
    meta = header.pop("__metadata__")
    assert meta["topos.format"] == ckpt.FORMAT_VERSION and meta["note"] == "hello"
    assert json.loads(meta["topos.elements"]) == {name: "bf16" for name in header}
    assert meta["topos.checksum"].startswith("sha256:")
    assert sorted(header) == ["layers.0.bias", "layers.0.weights", "layers.1.bias", "layers.1.weights"]
    assert header["layers.0.weights"] == {"dtype": "BF16", "shape": [3, 5], "data_offsets": [10, 40]}
    # Byte-stable: the same table writes the same bytes.
    again = tmp_path / "again.safetensors"
    ckpt.save(again, mlp, parameters, metadata={"note": "hello"})
    assert again.read_bytes() == blob


def test_the_reference_safetensors_reader_reads_our_files(tmp_path: Path) -> None:
    mlp, parameters, state = trained(bf16)
    file = tmp_path / "m.safetensors"
    ckpt.save(file, mlp, parameters, state)
    theirs = safetensors.numpy.load_file(str(file))
    ours = ckpt.read(file).entries
    assert sorted(theirs) == sorted(ours)
    for name, array in theirs.items():
        assert np.array_equal(np.ascontiguousarray(array).view(np.uint8), np.ascontiguousarray(ours[name].numpy()).view(np.uint8))
    assert theirs["layers.0.weights"].dtype.name == "bfloat16"


# ----------------------------------------------------------------------------- atomicity
def test_a_crash_mid_write_leaves_the_previous_file_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mlp, parameters = model()
    file = tmp_path / "m.safetensors"
    ckpt.save(file, mlp, parameters)
    before = file.read_bytes()

    def crash(_: int) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(CheckpointError, match="disk on fire") as caught:
        ckpt.save(file, mlp, parameters.map(lambda p: p + 1.0))
    monkeypatch.undo()
    assert str(file) in str(caught.value) and isinstance(caught.value.__cause__, OSError)
    assert file.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.safetensors"], "no temporary file is left behind"


# ----------------------------------------------------------------------------- damage
def _assert_refused(file: Path, mlp: Mlp, template: Parameters, pattern: str, foreign: bool = False) -> None:
    snapshot = [p.bits().copy() for p in template.payloads()]
    with pytest.raises(CheckpointError, match=pattern) as caught:
        ckpt.load(file, mlp, template, foreign=foreign)
    assert str(file) in str(caught.value)
    assert all(np.array_equal(a, p.bits()) for a, p in zip(snapshot, template.payloads(), strict=True))


def test_a_truncated_file_is_refused(tmp_path: Path) -> None:
    mlp, parameters = model()
    file = tmp_path / "m.safetensors"
    ckpt.save(file, mlp, parameters)
    blob = file.read_bytes()
    for cut in (4, 20, len(blob) - 3):
        file.write_bytes(blob[:cut])
        _assert_refused(file, mlp, parameters, "truncated|does not fit|cover")


def test_a_flipped_byte_is_refused_wherever_it_lands(tmp_path: Path) -> None:
    mlp, parameters = model()
    file = tmp_path / "m.safetensors"
    ckpt.save(file, mlp, parameters)
    blob = file.read_bytes()
    length = int.from_bytes(blob[:8], "little")
    # one byte in the data, one in a header number, one in the header length itself
    shape_digit = blob.index(b'"shape":[3') + len(b'"shape":[')
    for position in (8 + length + 5, len(blob) - 1, shape_digit, 0):
        damaged = bytearray(blob)
        damaged[position] ^= 0x04
        file.write_bytes(bytes(damaged))
        _assert_refused(file, mlp, parameters, "checksum|needs|does not fit|shape|missing|JSON")


def test_a_pickle_payload_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "executed"

    class Payload:
        def __reduce__(self) -> tuple[Any, tuple[str]]:
            return (Path.touch, (str(marker),))

    mlp, parameters = model()
    plain = tmp_path / "plain.pickle"
    plain.write_bytes(pickle.dumps(Payload()))
    _assert_refused(plain, mlp, parameters, "header length|truncated|JSON")
    # A pickle smuggled in as a safetensors entry's bytes is read as numbers, never loaded.
    smuggled = pickle.dumps(Payload())
    smuggled += b"\0" * (-len(smuggled) % 4)
    header = json.dumps({"evil": {"dtype": "F32", "shape": [len(smuggled) // 4], "data_offsets": [0, len(smuggled)]}}).encode()
    header += b" " * (-len(header) % 8)
    hidden = tmp_path / "hidden.safetensors"
    hidden.write_bytes(len(header).to_bytes(8, "little") + header + smuggled)
    _assert_refused(hidden, mlp, parameters, "unexpected entries evil", foreign=True)
    _assert_refused(hidden, mlp, parameters, "not a topos checkpoint")
    # A header naming a pickle-style dtype is refused by name.
    header = json.dumps({"evil": {"dtype": "O", "shape": [1], "data_offsets": [0, 8]}}).encode()
    header += b" " * (-len(header) % 8)
    hidden.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 8)
    _assert_refused(hidden, mlp, parameters, "dtype 'O'")
    assert not marker.exists()


def test_malformed_headers_are_refused(tmp_path: Path) -> None:
    mlp, parameters = model()
    file = tmp_path / "bad.safetensors"
    cases = [
        ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, 8, "needs 8 bytes"),
        ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, 8, "starts at byte 4"),
        ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, 8, "cover 4 data bytes"),
        ({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, 4, "not a list of extents"),
        ({"a": {"dtype": "F32", "shape": [1]}}, 4, "exactly dtype"),
        ({"__metadata__": {"topos.format": "99"}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, 4, "format '99'"),
        ({"__metadata__": {"topos.format": "1"}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, 4, "without topos.checksum"),
    ]
    for header, data, pattern in cases:
        text = json.dumps(header).encode()
        file.write_bytes(len(text).to_bytes(8, "little") + text + b"\0" * data)
        _assert_refused(file, mlp, parameters, pattern)
    text = b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "a": {}}'
    file.write_bytes(len(text).to_bytes(8, "little") + text + b"\0" * 4)
    _assert_refused(file, mlp, parameters, "twice")
    file.write_bytes(b"\x05\0\0\0\0\0\0\0[1,2]")
    _assert_refused(file, mlp, parameters, "not a JSON object")


# ----------------------------------------------------------------------------- templates
def test_a_file_from_a_different_model_is_refused_by_path(tmp_path: Path) -> None:
    small, small_parameters = model(widths=(3, 5, 2))
    big, big_parameters = model(widths=(3, 6, 2))
    deep, deep_parameters = model(widths=(3, 5, 5, 2))
    file = tmp_path / "small.safetensors"
    ckpt.save(file, small, small_parameters)
    _assert_refused(file, big, big_parameters, r"layers\.0\.weights has shape \[3, 5\] in the file, the template needs \[3, 6\]")
    _assert_refused(file, deep, deep_parameters, r"missing entries for layers\.2\.weights, layers\.2\.bias")
    ckpt.save(file, deep, deep_parameters)
    _assert_refused(file, small, small_parameters, r"unexpected entries layers\.2\.bias, layers\.2\.weights")
    wide, wide_parameters = model(element=f64)
    ckpt.save(file, wide, wide_parameters)
    _assert_refused(file, small, small_parameters, r"layers\.0\.weights holds f64 in the file, the template needs f32")


def test_optimizer_state_must_fit_its_template(tmp_path: Path) -> None:
    mlp, parameters, state = trained(f32)
    file = tmp_path / "m.safetensors"
    ckpt.save(file, mlp, parameters)
    with pytest.raises(CheckpointError, match=r"missing entries for layers\.0\.weights"):
        ckpt.load_training(file, mlp, parameters, state)
    ckpt.save(file, mlp, parameters, state)
    entries = dict(ckpt.read(file).entries)
    entries["state/tables/third/layers.0.weights"] = entries["layers.0.weights"]
    with pytest.raises(CheckpointError, match="unexpected entries state/tables/third"):
        ckpt.restore_state(mlp, state, entries)


def test_tied_parameters_take_the_last_entry() -> None:
    tape = Tape()
    shared = tape.parameter(np.zeros((2, 2), dtype=np.float32))
    pair = Sequential(Linear(tape, shared), Linear(tape, shared))
    template = tape.seal().parameters()
    entries = {"0.weights": Tensor(np.ones((2, 2), np.float32)), "1.weights": Tensor(np.full((2, 2), 2.0, np.float32))}
    restored = ckpt.restore(pair, template, entries)
    assert restored.of(shared.symbol).tolist() == [[2.0, 2.0], [2.0, 2.0]]


# ----------------------------------------------------------------------------- foreign names
class Gpt2Block:
    def __init__(self, tape: Tape, dim: int) -> None:
        self.norm = LayerNorm(tape, np.ones(dim, np.float32), np.zeros(dim, np.float32), 1e-5)
        self.attention = Linear(tape, np.zeros((dim, 3 * dim), np.float32), np.zeros(3 * dim, np.float32))

    def __call__(self, x: Value) -> Value:
        return self.attention(self.norm(x))

    def visit(self, visitor: Visitor) -> None:
        visitor.child("norm", self.norm)
        visitor.child("attention", self.attention)


class TinyGpt2:
    def __init__(self, tape: Tape, vocab: int, context: int, dim: int) -> None:
        self.tokens = Embedding(tape, np.zeros((vocab, dim), np.float32))
        self.positions = Embedding(tape, np.zeros((context, dim), np.float32))
        self.blocks = [Gpt2Block(tape, dim)]
        self.final = LayerNorm(tape, np.ones(dim, np.float32), np.zeros(dim, np.float32), 1e-5)

    def __call__(self, x: Value) -> Value:
        return self.final(self.blocks[0](self.tokens(x)))

    def visit(self, visitor: Visitor) -> None:
        visitor.child("tokens", self.tokens)
        visitor.child("positions", self.positions)
        for i, block in enumerate(self.blocks):
            visitor.child("blocks", _At(i, block))
        visitor.child("final", self.final)


class _At:
    def __init__(self, index: int, module: Any) -> None:
        self.index, self.module = index, module

    def visit(self, visitor: Visitor) -> None:
        visitor.child(self.index, self.module)


def hf_to_topos(name: str) -> str | None:
    """Hugging Face GPT-2 names to this model's paths; the cached attention mask is dropped."""
    if name.endswith(".attn.bias") or name.endswith(".attn.masked_bias"):
        return None
    name = name.removeprefix("transformer.")
    fixed = {"wte.weight": "tokens.weights", "wpe.weight": "positions.weights", "ln_f.weight": "final.scale", "ln_f.bias": "final.shift"}
    if name in fixed:
        return fixed[name]
    match = re.fullmatch(r"h\.(\d+)\.(ln_1|attn\.c_attn)\.(weight|bias)", name)
    if match is None:
        return name
    block, part, kind = match.groups()
    module = {"ln_1": "norm", "attn.c_attn": "attention"}[part]
    field = {"norm": {"weight": "scale", "bias": "shift"}, "attention": {"weight": "weights", "bias": "bias"}}[module][kind]
    return f"blocks.{block}.{module}.{field}"


def test_hugging_face_gpt2_names_load_through_a_mapping(tmp_path: Path) -> None:
    vocab, context, dim = 7, 4, 4
    g = np.random.default_rng(1)
    hf = {
        "wte.weight": g.normal(size=(vocab, dim)).astype(np.float32),
        "wpe.weight": g.normal(size=(context, dim)).astype(np.float32),
        "h.0.ln_1.weight": g.normal(size=(dim,)).astype(np.float32),
        "h.0.ln_1.bias": g.normal(size=(dim,)).astype(np.float32),
        # GPT-2's Conv1D stores [in, out]: the Linear layout, no transpose needed.
        "h.0.attn.c_attn.weight": g.normal(size=(dim, 3 * dim)).astype(np.float32),
        "h.0.attn.c_attn.bias": g.normal(size=(3 * dim,)).astype(np.float32),
        "h.0.attn.bias": np.tril(np.ones((1, 1, context, context), np.float32)),
        "ln_f.weight": g.normal(size=(dim,)).astype(np.float32),
        "ln_f.bias": g.normal(size=(dim,)).astype(np.float32),
    }
    file = tmp_path / "model.safetensors"
    safetensors.numpy.save_file(hf, str(file), metadata={"format": "pt"})
    tape = Tape(f32)
    gpt = TinyGpt2(tape, vocab, context, dim)
    template = tape.seal().parameters()
    # Without the explicit opt-in a file another tool wrote is refused.
    with pytest.raises(CheckpointError, match=r"not a topos checkpoint.*foreign=True"):
        ckpt.load(file, gpt, template, rename=hf_to_topos)
    loaded = ckpt.load(file, gpt, template, rename=hf_to_topos, foreign=True)
    assert np.array_equal(loaded.of(gpt.tokens.table).numpy(), hf["wte.weight"])
    assert np.array_equal(loaded.of(gpt.blocks[0].attention.weights).numpy(), hf["h.0.attn.c_attn.weight"])
    assert np.array_equal(loaded.of(gpt.final.shift).numpy(), hf["ln_f.bias"])
    # A dict mapping works the same way; an unmapped name is unexpected and named.
    as_dict = {name: hf_to_topos(name) for name in hf}
    assert same_bits(ckpt.load(file, gpt, template, rename=as_dict, foreign=True), loaded)
    del as_dict["h.0.attn.bias"]
    _assert_refused_rename(file, gpt, template, as_dict, r"unexpected entries h\.0\.attn\.bias")


def _assert_refused_rename(file: Path, module: Any, template: Parameters, rename: Any, pattern: str) -> None:
    with pytest.raises(CheckpointError, match=pattern):
        ckpt.load(file, module, template, rename=rename, foreign=True)


def test_write_refuses_bad_entries(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="at least one"):
        ckpt.write(tmp_path / "x", {})
    with pytest.raises(CheckpointError, match="reserved"):
        ckpt.write(tmp_path / "x", {"a": Tensor.ones((1,))}, {"topos.format": "2"})
    with pytest.raises(CheckpointError, match="expected a Tensor"):
        ckpt.write(tmp_path / "x", {"a": np.ones(2)})  # type: ignore[dict-item]
    assert not (tmp_path / "x").exists()


# --------------------------------------------------------------------------- integer entries
_INTEGER_DTYPES = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
                   "U32": np.uint32, "I32": np.int32, "U64": np.uint64, "I64": np.int64}  # fmt: skip


@pytest.mark.parametrize("dtype", sorted(_INTEGER_DTYPES))
def test_a_foreign_integer_entry_reads_as_a_read_only_array_beside_the_floats(tmp_path: Path, dtype: str) -> None:
    kind: np.dtype[Any] = np.dtype(_INTEGER_DTYPES[dtype])
    if kind == np.bool_:
        values = np.array([[True, False, True]])
    else:
        info = np.iinfo(kind)
        values = np.array([[info.min, 0, info.max]], dtype=kind)
    path = tmp_path / "hf.safetensors"
    safetensors.numpy.save_file({"embeddings.position_ids": values, "w": np.ones((2, 3), np.float32)}, str(path))
    header = json.loads(path.read_bytes()[8 : 8 + int.from_bytes(path.read_bytes()[:8], "little")])
    assert header["embeddings.position_ids"]["dtype"] == dtype
    read = ckpt.read(path, foreign=True)
    assert sorted(read.entries) == ["w"] and sorted(read.arrays) == ["embeddings.position_ids"]
    found = read.arrays["embeddings.position_ids"]
    assert found.dtype == kind and found.shape == (1, 3) and found.tolist() == values.tolist()
    assert not found.flags.writeable
    with pytest.raises(ValueError):
        found[0, 0] = 1


def test_a_bert_style_file_loads_once_its_integer_buffer_is_dropped(tmp_path: Path) -> None:
    tape = Tape(f32)
    layer = Linear(tape, Tensor.ones((2, 3)), Tensor.zeros((3,)))
    template = tape.seal().parameters()
    path = tmp_path / "model.safetensors"
    weights = np.arange(6, dtype=np.float32).reshape(2, 3)
    position_ids = np.arange(512, dtype=np.int64).reshape(1, 512)
    safetensors.numpy.save_file({"w": weights, "b": np.ones(3, np.float32), "position_ids": position_ids}, str(path))
    assert ckpt.read(path, foreign=True).arrays["position_ids"].tolist() == position_ids.tolist()
    names = {"w": "weights", "b": "bias"}
    with pytest.raises(CheckpointError, match=re.escape("unexpected entries position_ids")):
        ckpt.load(path, layer, template, rename=names, foreign=True)
    loaded = ckpt.load(path, layer, template, rename=names | {"position_ids": None}, foreign=True)
    assert loaded.of(layer.weights).tolist() == weights.tolist()
    with pytest.raises(CheckpointError) as refused:
        ckpt.load(path, layer, template, rename={"w": "weights", "b": None, "position_ids": "bias"}, foreign=True)
    for part in ("parameter bias (file entry 'position_ids')", "I64 (int64) [1, 512]", "needs f32[3]", str(path)):
        assert part in str(refused.value)


def test_topos_writes_float_elements_only_and_refuses_an_integer_array_by_name(tmp_path: Path) -> None:
    path = tmp_path / "ints.safetensors"
    with pytest.raises(CheckpointError, match=re.escape("entry 'ids': expected a Tensor, got ndarray")):
        ckpt.write(path, {"ids": np.arange(3)})  # type: ignore[dict-item]
    assert not path.exists()
