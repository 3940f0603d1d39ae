"""Issue 24, the second catalogue: Hugging Face loading, the conformance kit and the optimizers.

Each case is (id, call, error class, substrings the message must hold, the file the message
must name as the user's line). The line is this file's wherever topos can see it; the
example loaders (``examples/gpt2/model.py``, ``examples/bert/bert.py``) are code outside the
package, so their own line is the one named. Every case also proves that nothing changed:
the files on disk (bytes and listing), the global plugin registry, the bits of every shared
parameter table and optimizer state, and a shared chain's cache of recorded formulas.

tests/test_misuse_surfaces.py (rename of the wrong type, a rename that raises, Adam's
epsilon, compiled()) and tests/test_misuse.py (the optimizers' common mistakes, writing and
reading paths) hold the earlier catalogues; nothing here repeats them.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from conftest import here
from safetensors.numpy import save_file

from topos import (
    CapacityError,
    CheckpointError,
    ElementError,
    InvalidArgumentError,
    Parameters,
    ShapeMismatchError,
    Tape,
    Tensor,
    ToposError,
    data,
    f32,
    f64,
)
from topos import checkpoint as ckpt
from topos.nn import Linear
from topos.nn.generation import Decoder
from topos.optim import (
    Adam,
    AdamW,
    Chain,
    OptimizerError,
    OptimizerState,
    Sgd,
    add_decayed_weights,
    add_weight_decay,
    chain,
    clip_by_global_norm,
    decay_mask,
    global_norm,
    masked,
    rank_at_least_two,
    scale_by_adam,
    scale_by_learning_rate,
    schedules,
    trace,
)
from topos.optim.chain import Prelude
from topos.optim.passes import FormulaError, Program, Ref
from topos.plugins import UnknownElementError, UnknownNameError, registry
from topos.plugins import element_type as plugin_element_type
from topos.plugins import layer as plugin_layer
from topos.plugins import optimizer as plugin_optimizer
from topos.testing import ConformanceError, check_element_type, check_layer, check_optimizer
from topos.testing.common import state_bits, table_bits

HERE = os.path.basename(__file__)
ROOT = Path(__file__).resolve().parents[1]
GPT2_SITE, BERT_SITE = "model.py", "bert.py"


def _example(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


gpt2 = _example("gpt2/model.py", "gpt2_model_catalogue")
bert = _example("bert/bert.py", "bert_catalogue")


def bad(value: object) -> Any:
    """A deliberately wrong argument, typed as the caller may really pass it."""
    return value


_DIR: list[Path] = []


@pytest.fixture(autouse=True)
def _directory(tmp_path_factory: pytest.TempPathFactory) -> None:
    if not _DIR:
        _DIR.append(tmp_path_factory.mktemp("catalogue"))


def _path(name: str) -> Path:
    _files()
    return _DIR[0] / name


# --------------------------------------------------------------------------- the models and files
@functools.cache
def _linear() -> tuple[Linear, Parameters]:
    tape = Tape(f32)
    layer = Linear(tape, Tensor.ones((2, 3)), Tensor.zeros((3,)))
    return layer, tape.seal().parameters()


GPT2_CONFIG = gpt2.Config(vocab=7, context=4, layers=1, dim=4, heads=2)


@functools.cache
def _gpt2(element: str) -> tuple[Any, Parameters]:
    tape = Tape(f64 if element == "f64" else f32)
    model = gpt2.build(tape, GPT2_CONFIG)
    return model, tape.seal().parameters()


def _gpt2_entries() -> dict[str, Any]:
    """A one-block GPT-2 under Hugging Face's names and Conv1D layout ([in, out])."""
    d, p = 4, "h.0."
    shapes = {
        "wte.weight": (7, d), "wpe.weight": (4, d), "ln_f.weight": (d,), "ln_f.bias": (d,),
        p + "ln_1.weight": (d,), p + "ln_1.bias": (d,), p + "ln_2.weight": (d,), p + "ln_2.bias": (d,),
        p + "attn.c_attn.weight": (d, 3 * d), p + "attn.c_attn.bias": (3 * d,),
        p + "attn.c_proj.weight": (d, d), p + "attn.c_proj.bias": (d,),
        p + "mlp.c_fc.weight": (d, 4 * d), p + "mlp.c_fc.bias": (4 * d,),
        p + "mlp.c_proj.weight": (4 * d, d), p + "mlp.c_proj.bias": (d,),
        p + "attn.bias": (1, 1, 4, 4),  # the causal-mask buffer: skipped by the loader
    }  # fmt: skip
    rng = np.random.default_rng(0)
    return {name: (rng.standard_normal(shape) * 0.1).astype(np.float32) for name, shape in shapes.items()}


BERT_CONFIG = {
    "vocab_size": 40, "max_position_embeddings": 16, "type_vocab_size": 2, "hidden_size": 8,
    "num_attention_heads": 2, "num_hidden_layers": 2, "intermediate_size": 12, "layer_norm_eps": 1e-12,
}  # fmt: skip


@functools.cache
def _bert() -> tuple[Any, Parameters]:
    recorded = bert.record(bert.Config.read(_path("bert-config.json")), 1, 3)
    return recorded.model, recorded.network.parameters()


def _bert_entries() -> dict[str, Any]:
    """A two-layer BERT under the published names and layouts (Linear: [out, in])."""
    c = bert.Config(vocab=40, positions=16, types=2, dim=8, heads=2, layers=2, hidden=12)
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (c.vocab, c.dim),
        "embeddings.position_embeddings.weight": (c.positions, c.dim),
        "embeddings.token_type_embeddings.weight": (c.types, c.dim),
        "embeddings.LayerNorm.weight": (c.dim,), "embeddings.LayerNorm.bias": (c.dim,),
        "pooler.dense.weight": (c.dim, c.dim), "pooler.dense.bias": (c.dim,),
    }  # fmt: skip
    for i in range(c.layers):
        p = f"encoder.layer.{i}."
        for name, (out, into) in {
            "attention.self.query": (c.dim, c.dim), "attention.self.key": (c.dim, c.dim),
            "attention.self.value": (c.dim, c.dim), "attention.output.dense": (c.dim, c.dim),
            "intermediate.dense": (c.hidden, c.dim), "output.dense": (c.dim, c.hidden),
        }.items():  # fmt: skip
            shapes[p + name + ".weight"], shapes[p + name + ".bias"] = (out, into), (out,)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[p + name + ".weight"], shapes[p + name + ".bias"] = (c.dim,), (c.dim,)
    rng = np.random.default_rng(1)
    return {name: (rng.standard_normal(shape) * 0.1).astype(np.float32) for name, shape in shapes.items()}


def _without(entries: dict[str, Any], name: str) -> dict[str, Any]:
    return {k: v for k, v in entries.items() if k != name}


def _with(entries: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return entries | {name.replace("__", "."): value for name, value in changes.items()}


def _safetensors() -> dict[str, dict[str, Any]]:
    """Every file the cases read, written once before the first case (so a case writes nothing)."""
    ones, zeros = np.ones((2, 3), np.float32), np.zeros(3, np.float32)
    g, b = _gpt2_entries(), _bert_entries()
    qkv, fc = "h.0.attn.c_attn.weight", "h.0.mlp.c_fc.weight"
    query = "encoder.layer.0.attention.self.query.weight"
    return {
        "linear.safetensors": {"w": ones, "b": zeros},
        "linear-transposed.safetensors": {"w": ones.T.copy(), "b": zeros},
        "linear-wide.safetensors": {"w": np.ones((2, 4), np.float32), "b": zeros},
        "linear-column-bias.safetensors": {"w": ones, "b": zeros.reshape(3, 1)},
        "linear-f64.safetensors": {"w": ones.astype(np.float64), "b": zeros},
        "linear-f16.safetensors": {"w": ones.astype(np.float16), "b": zeros},
        "linear-i64.safetensors": {"w": ones.astype(np.int64), "b": zeros},
        "linear-bool.safetensors": {"w": ones.astype(bool), "b": zeros},
        "linear-i32-bias.safetensors": {"w": ones, "b": zeros.astype(np.int32)},
        "linear-u8.safetensors": {"w": ones.astype(np.uint8), "b": zeros},
        "linear-position-ids.safetensors": {"w": ones, "b": zeros, "position_ids": np.arange(4, dtype=np.int64).reshape(1, 4)},
        "linear-extra.safetensors": {"w": ones, "b": zeros, "lm_head.weight": ones},
        "gpt2.safetensors": g,
        "gpt2-missing.safetensors": _without(g, "h.0.ln_1.bias"),
        "gpt2-extra-block.safetensors": g | {"h.1.ln_1.weight": np.ones(4, np.float32)},
        "gpt2-transposed.safetensors": g | {qkv: g[qkv].T.copy()},
        "gpt2-fc-narrow.safetensors": g | {fc: np.ones((4, 12), np.float32)},
        "gpt2-vocab.safetensors": g | {"wte.weight": np.ones((8, 4), np.float32)},
        "gpt2-context.safetensors": g | {"wpe.weight": np.ones((5, 4), np.float32)},
        "gpt2-f16.safetensors": g | {"ln_f.bias": g["ln_f.bias"].astype(np.float16)},
        "gpt2-huge.safetensors": g | {"ln_f.weight": np.full(4, 1e300)},
        "bert.safetensors": b,
        "bert-missing.safetensors": _without(b, "encoder.layer.1.output.LayerNorm.bias"),
        "bert-unknown.safetensors": b | {"encoder.layer.0.attention.self.rotary.weight": np.ones(8, np.float32)},
        "bert-third-layer.safetensors": b | {"encoder.layer.2.attention.self.query.weight": b[query]},
        "bert-vocab.safetensors": b | {"embeddings.word_embeddings.weight": np.ones((41, 8), np.float32)},
        "bert-f64.safetensors": b | {"embeddings.LayerNorm.bias": np.zeros(8)},
        "bert-position-ids.safetensors": b | {"embeddings.position_ids": np.arange(16, dtype=np.int64).reshape(1, 16)},
        "bert-position-ids-wrong.safetensors": b | {"embeddings.position_ids": np.zeros((1, 16), np.int64)},
        "bert-integer-unknown.safetensors": b | {"embeddings.token_type_ids": np.zeros((1, 16), np.int64)},
    }


def _configs() -> dict[str, object]:
    c = BERT_CONFIG
    return {
        "bert-config.json": c,
        "bert-config-missing.json": {k: v for k, v in c.items() if k != "max_position_embeddings"},
        "bert-config-string.json": c | {"hidden_size": "8"},
        "bert-config-bool.json": c | {"num_hidden_layers": True},
        "bert-config-negative.json": c | {"intermediate_size": -12},
        "bert-config-float-size.json": c | {"vocab_size": 40.0},
        "bert-config-nan.json": c | {"layer_norm_eps": float("nan")},
        "bert-config-zero-eps.json": c | {"layer_norm_eps": 0.0},
        "bert-config-heads.json": c | {"num_attention_heads": 3},
        "bert-config-list.json": [c],
    }


@functools.cache
def _files() -> None:
    directory = _DIR[0]
    for name, entries in _safetensors().items():
        save_file(entries, str(directory / name))
    for name, config in _configs().items():
        (directory / name).write_text(json.dumps(config))
    (directory / "bert-config-broken.json").write_text('{"vocab_size": 40,')
    (directory / "not-safetensors.bin").write_text("PK\x03\x04 a zip archive, or any other file that is not safetensors")
    (directory / "empty.safetensors").write_bytes(b"")
    _crafted(directory / "bool-stray.safetensors", {"m": ("BOOL", [3], [0, 3])}, bytes([1, 2, 0]))
    _crafted(directory / "f8.safetensors", {"q": ("F8_E4M3", [2], [0, 2])}, bytes(2))
    _crafted(directory / "i64-short.safetensors", {"ids": ("I64", [3], [0, 16])}, bytes(16))
    ckpt.write(directory / "topos-with-ids.safetensors", {"w": Tensor.ones((2,))})
    _with_entry(directory / "topos-with-ids.safetensors", "ids", "I64", [1], bytes(8))


def _crafted(path: Path, header: dict[str, tuple[str, list[int], list[int]]], data: bytes) -> None:
    """A safetensors file written byte by byte, so it can hold what no writer would."""
    document = {name: {"dtype": d, "shape": s, "data_offsets": o} for name, (d, s, o) in header.items()}
    text = json.dumps(document).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text + data)


def _with_entry(path: Path, name: str, dtype: str, shape: list[int], data: bytes) -> None:
    """A topos checkpoint with one more entry appended after the others (its metadata untouched)."""
    raw = path.read_bytes()
    length = int.from_bytes(raw[:8], "little")
    document, body = json.loads(raw[8 : 8 + length]), raw[8 + length :]
    document[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(body), len(body) + len(data)]}
    text = json.dumps(document).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text + body + data)


# --------------------------------------------------------------------------- loading by Hugging Face names
def _load(file: str, rename: Any = None, foreign: Any = True, module: Any = "linear", template: Any = "linear") -> Callable[[], object]:
    def call() -> object:
        layer, parameters = _linear()
        return ckpt.load(
            _path(file), layer if module == "linear" else module, parameters if template == "linear" else template,
            rename=rename, foreign=foreign,
        )  # fmt: skip

    return call


NAMES = {"w": "weights", "b": "bias"}


def _restore(entries: Any, module: Any = "linear", template: Any = "linear", rename: Any = None) -> Callable[[], object]:
    def call() -> object:
        layer, parameters = _linear()
        return ckpt.restore(layer if module == "linear" else module, parameters if template == "linear" else template,
                            entries, rename=rename)  # fmt: skip

    return call


def _restore_state(entries: Any, module: Any = "linear") -> Callable[[], object]:
    def call() -> object:
        layer, parameters = _linear()
        return ckpt.restore_state(layer if module == "linear" else module, Sgd(0.1).init(parameters), entries)

    return call


def _load_gpt2(file: str, element: str = "f64", template: Any = "gpt2", model: Any = "gpt2") -> Callable[[], object]:
    def call() -> object:
        lm, parameters = _gpt2(element)
        return gpt2.load_hf(_path(file), lm if model == "gpt2" else model, parameters if template == "gpt2" else template)

    return call


def _build_gpt2(**fields: Any) -> Callable[[], object]:
    return lambda: gpt2.build(Tape(f64), gpt2.Config(**({"vocab": 7, "context": 4, "layers": 1, "dim": 4, "heads": 2} | fields)))


def _load_bert(file: str, template: Any = "bert") -> Callable[[], object]:
    def call() -> object:
        model, parameters = _bert()
        return bert.load(_path(file), model, parameters if template == "bert" else template)

    return call


def _read_config(file: str) -> Callable[[], object]:
    return lambda: bert.Config.read(_path(file))


# --------------------------------------------------------------------------- the conformance kit
class _Structureless:
    """An optimizer whose update returns the new table alone, not ``(parameters, state)``."""

    def __init__(self, learning_rate: float) -> None:
        self.inner = Sgd(learning_rate)

    def init(self, parameters: Parameters) -> OptimizerState:
        return self.inner.init(parameters)

    def update(self, gradients: Parameters, state: OptimizerState, parameters: Parameters) -> Any:
        return self.inner.update(gradients, state, parameters)[0]


def _raising_optimizer(learning_rate: float) -> Any:
    raise RuntimeError("no optimizer today")


def _raising_layer(tape: Tape) -> Any:
    raise ZeroDivisionError("the layer divided by zero")


def _number_layer(tape: Tape) -> Any:
    return lambda x: 3.0


def _linear_layer(tape: Tape, weights: Any) -> Linear:
    return Linear(tape, weights, None)


# --------------------------------------------------------------------------- the optimizers
@functools.cache
def _table() -> Parameters:
    network, _ = Tape.record(lambda t: (t.parameter([[1.0, 2.0]]), t.parameter([0.5])), element=f32)
    return network.parameters()


_CHAIN = chain(scale_by_adam(), scale_by_learning_rate(0.1), kind="catalogue")


@functools.cache
def _stepped() -> tuple[Parameters, OptimizerState]:
    """One update of the shared chain, so its cache of recorded formulas is not empty."""
    p = _table()
    return _CHAIN.update(p, _CHAIN.init(p), p)


class _PreludeNone:
    """A transform whose prelude returns nothing, where a Prelude belongs."""

    def tables(self) -> tuple[str, ...]:
        return ()

    def carried(self) -> Mapping[str, float]:
        return {}

    def prelude(self, kind: str, state: OptimizerState, parameters: Parameters) -> Any:
        return None

    def slot(self, ops: Any, numbers: Any, flag: bool, p: Any, update: Any, tables: Any) -> Any:
        return update, ()


class _SlotReturns:
    """A transform whose slot formula returns what ``how`` makes of (ops, p, update)."""

    def __init__(self, how: Callable[[Any, Any, Any], Any]) -> None:
        self.how = how

    def tables(self) -> tuple[str, ...]:
        return ()

    def carried(self) -> Mapping[str, float]:
        return {}

    def prelude(self, kind: str, state: OptimizerState, parameters: Parameters) -> Prelude:
        return Prelude(())

    def slot(self, ops: Any, numbers: Any, flag: bool, p: Any, update: Any, tables: Any) -> Any:
        return self.how(ops, p, update)


def _slot(how: Callable[[Any, Any, Any], Any]) -> Callable[[], object]:
    return _update(chain(_SlotReturns(how), kind="probe"))


def _record(how: Callable[[Any, Any, Any], Any], numbers: Any = 0, tables: Any = 0) -> Callable[[], object]:
    return lambda: Program.record(lambda ops, n, p, g, t: how(ops, p, g), numbers, tables, "probe")


@functools.cache
def _decoder() -> tuple[Decoder, Parameters]:
    tape = Tape(f64)
    model = gpt2.build(tape, GPT2_CONFIG)
    decoder = Decoder(tape, model, 4)
    network = tape.seal()
    return decoder.lower(network), network.parameters()


_VOCABULARY = data.CharVocabulary.of(["abc"], ".")
_STREAM = data.TokenStream(np.arange(10) % 5, 5)


def _update(optimizer: Any, role: str = "", value: Any = None) -> Callable[[], object]:
    def call() -> object:
        p = _table()
        arguments = {"gradients": p, "state": optimizer.init(p), "parameters": p}
        if role:
            arguments[role] = value
        return optimizer.update(arguments["gradients"], arguments["state"], arguments["parameters"])

    return call


def _restored(arrays: Any) -> Callable[[], object]:
    return lambda: Sgd(0.1).init(_table()).restored(arrays)


Case = tuple[str, Callable[[], object], type[ToposError], tuple[str, ...], str]


def case(name: str, call: Callable[[], object], error: type[ToposError], *parts: str, site: str = HERE) -> Case:
    return (name, call, error, parts, site)


CASES: list[Case] = [
    # 1. topos.checkpoint, a foreign (Hugging Face style) file read by a rename
    case("load-rename-two-to-one", _load("linear.safetensors", {"w": "weights", "b": "weights"}), CheckpointError,
         "linear.safetensors", "two entries", "'b'", "'w'", "'weights'"),
    case("load-rename-callable-two-to-one", _load("linear.safetensors", lambda name: "weights"), CheckpointError,
         "linear.safetensors", "two entries", "'b' and 'w'"),
    case("load-rename-to-no-path", _load("linear.safetensors", {"w": "weights", "b": "biases"}), CheckpointError,
         "linear.safetensors", "unexpected entries biases (file entry 'b')", "not paths of this module"),
    case("load-rename-drops-a-parameter", _load("linear.safetensors", {"w": "weights", "b": None}), CheckpointError,
         "linear.safetensors", "missing entries for bias"),
    case("load-no-rename", _load("linear.safetensors"), CheckpointError, "unexpected entries b, w"),
    case("load-rename-empty-path", _load("linear.safetensors", {"w": "", "b": "bias"}), CheckpointError,
         "rename", "non-empty", "'w'", "''"),
    case("load-rename-callable-empty-path", _load("linear.safetensors", lambda name: NAMES[name] if name == "w" else ""),
         CheckpointError, "linear.safetensors", "turned 'b' into ''", "an empty path"),
    case("load-rename-none-key", _load("linear.safetensors", {None: "bias"}), CheckpointError, "rename", "None", "'bias'"),
    case("load-extra-entry", _load("linear-extra.safetensors", NAMES), CheckpointError,
         "linear-extra.safetensors", "unexpected entries lm_head.weight"),
    case("load-transposed", _load("linear-transposed.safetensors", NAMES), CheckpointError,
         "linear-transposed.safetensors", "weights (file entry 'w')", "[3, 2]", "[2, 3]", "transpose"),
    case("load-wrong-width", _load("linear-wide.safetensors", NAMES), CheckpointError,
         "linear-wide.safetensors", "weights (file entry 'w') has shape [2, 4]", "needs [2, 3]"),
    case("load-wrong-rank", _load("linear-column-bias.safetensors", NAMES), CheckpointError,
         "linear-column-bias.safetensors", "bias (file entry 'b') has shape [3, 1]", "needs [3]"),
    case("load-wrong-element", _load("linear-f64.safetensors", NAMES), CheckpointError,
         "linear-f64.safetensors", "weights (file entry 'w') holds f64", "needs f32"),
    case("load-f16-unregistered", _load("linear-f16.safetensors", NAMES), CheckpointError,
         "linear-f16.safetensors", "entry 'w'", "'F16'", "register the plugin"),
    case("load-integer-dtype", _load("linear-i64.safetensors", NAMES), CheckpointError, "linear-i64.safetensors",
         "parameter weights (file entry 'w')", "I64 (int64) [2, 3]", "needs f32[2, 3]", "integer entries"),
    case("load-bool-dtype", _load("linear-bool.safetensors", NAMES), CheckpointError, "linear-bool.safetensors",
         "parameter weights (file entry 'w')", "BOOL (bool)", "integer entries"),
    case("load-i32-as-bias", _load("linear-i32-bias.safetensors", NAMES), CheckpointError, "linear-i32-bias.safetensors",
         "parameter bias (file entry 'b')", "I32 (int32) [3]", "needs f32[3]"),
    case("load-u8-as-weights", _load("linear-u8.safetensors", NAMES), CheckpointError, "parameter weights (file entry 'w')", "U8 (uint8)"),
    case("load-integer-extra", _load("linear-position-ids.safetensors", NAMES), CheckpointError,
         "linear-position-ids.safetensors", "unexpected entries position_ids", "not paths of this module"),
    case("load-integer-renamed-onto-float", _load("linear-position-ids.safetensors", {"w": "weights", "b": None, "position_ids": "bias"}),
         CheckpointError, "parameter bias (file entry 'position_ids')", "I64 (int64) [1, 4]"),
    case("read-bool-stray-byte", lambda: ckpt.read(_path("bool-stray.safetensors"), foreign=True), CheckpointError,
         "bool-stray.safetensors", "entry 'm'", "BOOL byte 0x02 at position 1", "neither 0 nor 1"),
    case("read-integer-unknown-dtype", lambda: ckpt.read(_path("f8.safetensors"), foreign=True), CheckpointError,
         "f8.safetensors", "entry 'q'", "'F8_E4M3'", "I64"),
    case("read-integer-short", lambda: ckpt.read(_path("i64-short.safetensors"), foreign=True), CheckpointError,
         "i64-short.safetensors", "entry 'ids'", "I64[3] needs 24 bytes", "span 16"),
    case("read-topos-integer-entry", lambda: ckpt.read(_path("topos-with-ids.safetensors")), CheckpointError,
         "topos-with-ids.safetensors", "entry 'ids'", "absent from topos.elements"),
    case("load-not-safetensors", _load("not-safetensors.bin", NAMES), CheckpointError, "not-safetensors.bin", "not a safetensors file"),
    case("load-empty-file", _load("empty.safetensors", NAMES), CheckpointError, "empty.safetensors", "truncated", "0 bytes"),
    case("load-foreign-string", _load("linear.safetensors", NAMES, foreign="yes"), CheckpointError,
         "linear.safetensors", "foreign must be True or False", "'yes'"),
    case("load-foreign-int", _load("linear.safetensors", NAMES, foreign=1), CheckpointError, "foreign", "got 1"),
    case("load-template-none", _load("linear.safetensors", NAMES, template=None), CheckpointError,
         "linear.safetensors", "load()", "template must be a Parameters table", "NoneType"),
    case("load-template-dict", _load("linear.safetensors", NAMES, template={}), CheckpointError, "template", "dict"),
    case("load-module-none", _load("linear.safetensors", NAMES, module=None), CheckpointError,
         "load()", "module must be a Module", "NoneType"),
    case("load-training-module-string", lambda: ckpt.load_training(_path("linear.safetensors"), bad("layer"), _linear()[1], None),
         CheckpointError, "load_training()", "module", "str"),
    case("read-foreign-none", lambda: ckpt.read(_path("linear.safetensors"), foreign=bad(None)), CheckpointError,
         "linear.safetensors", "foreign must be True or False", "None"),
    case("restore-numpy-entries", _restore({"weights": np.ones((2, 3)), "bias": np.zeros(3)}), CheckpointError,
         "restore()", "'weights' maps to a ndarray"),
    case("restore-int-key", _restore({0: Tensor.ones((2, 3))}), CheckpointError, "restore()", "names (str)", "0 maps to a Tensor"),
    case("restore-entries-list", _restore([("weights", Tensor.ones((2, 3)))]), CheckpointError, "restore()", "entries", "list"),
    case("restore-template-none", _restore({}, template=None), CheckpointError, "restore()", "template", "NoneType"),
    case("restore-template-tensor", _restore({}, template=Tensor.ones((2, 3))), CheckpointError, "template", "Tensor"),
    case("restore-module-string", _restore({}, module="layer"), CheckpointError, "restore()", "module must be a Module", "str"),
    case("restore-state-entries-list", _restore_state([1]), CheckpointError, "restore_state()", "entries", "list"),
    case("restore-state-module-none", _restore_state({}, module=None), CheckpointError, "restore_state()", "module", "NoneType"),
    case("restore-state-numpy-entry", _restore_state({"state/scalars/count": np.zeros(())}), CheckpointError,
         "restore_state()", "'state/scalars/count' maps to a ndarray"),
    case("snapshot-state-object", lambda: ckpt.snapshot(*_linear(), state=object()), CheckpointError,
         "optimizer state part 'state' is a object", "only tables, tensors"),
    case("snapshot-module-none", lambda: ckpt.snapshot(bad(None), _linear()[1]), CheckpointError, "snapshot()", "module"),
    # 2. the GPT-2 example's loader: Hugging Face names, Conv1D layout
    case("gpt2-missing-entry", _load_gpt2("gpt2-missing.safetensors"), CheckpointError,
         "gpt2-missing.safetensors", "missing entries for blocks.0.norm1.shift", site=GPT2_SITE),
    case("gpt2-extra-block", _load_gpt2("gpt2-extra-block.safetensors"), CheckpointError,
         "gpt2-extra-block.safetensors", "unexpected entries blocks.1.norm1.scale (file entry 'h.1.ln_1.weight')", site=GPT2_SITE),
    case("gpt2-conv1d-transposed", _load_gpt2("gpt2-transposed.safetensors"), CheckpointError,
         "gpt2-transposed.safetensors", "blocks.0.attention.qkv.weights (file entry 'h.0.attn.c_attn.weight')",
         "[12, 4]", "[4, 12]", "transpose", site=GPT2_SITE),
    case("gpt2-conv1d-narrow", _load_gpt2("gpt2-fc-narrow.safetensors"), CheckpointError,
         "blocks.0.feed_forward.layers.0.weights (file entry 'h.0.mlp.c_fc.weight')", "[4, 12]", "[4, 16]", site=GPT2_SITE),
    case("gpt2-vocab", _load_gpt2("gpt2-vocab.safetensors"), CheckpointError,
         "gpt2-vocab.safetensors", "embedding.weights (file entry 'wte.weight')", "[8, 4]", "[7, 4]", site=GPT2_SITE),
    case("gpt2-context", _load_gpt2("gpt2-context.safetensors"), CheckpointError,
         "positions.weights (file entry 'wpe.weight')", "[5, 4]", "[4, 4]", site=GPT2_SITE),
    case("gpt2-f16-entry", _load_gpt2("gpt2-f16.safetensors"), CheckpointError,
         "gpt2-f16.safetensors", "entry 'ln_f.bias'", "'F16'", site=GPT2_SITE),
    case("gpt2-value-beyond-f32", _load_gpt2("gpt2-huge.safetensors", "f32"), CheckpointError,
         "gpt2-huge.safetensors", "entry 'ln_f.weight'", "does not fit f32", site=GPT2_SITE),
    case("gpt2-not-safetensors", _load_gpt2("not-safetensors.bin"), CheckpointError, "not-safetensors.bin", "header length", site=GPT2_SITE),
    case("gpt2-template-none", _load_gpt2("gpt2.safetensors", template=None), CheckpointError,
         "gpt2.safetensors", "load_hf", "template must be a Parameters table", site=GPT2_SITE),
    case("gpt2-model-none", _load_gpt2("gpt2.safetensors", model=None), CheckpointError,
         "gpt2.safetensors", "module must be a Module", site=GPT2_SITE),
    case("gpt2-config-heads", _build_gpt2(dim=5), ShapeMismatchError, "dim 5", "2 heads", site=GPT2_SITE),
    case("gpt2-config-vocab-string", _build_gpt2(vocab="7"), InvalidArgumentError, "vocab", "'7'", site=GPT2_SITE),
    case("gpt2-config-context-float", _build_gpt2(context=4.0), InvalidArgumentError, "length", "4.0", site=GPT2_SITE),
    case("gpt2-config-no-layers", _build_gpt2(layers=0), InvalidArgumentError, "blocks must be a non-empty sequence", site=GPT2_SITE),
    # 3. the BERT example: config.json and the published layout
    case("bert-config-missing-field", _read_config("bert-config-missing.json"), CheckpointError,
         "bert-config-missing.json", "'max_position_embeddings'", "missing", site=BERT_SITE),
    case("bert-config-string-size", _read_config("bert-config-string.json"), CheckpointError,
         "'hidden_size'", "positive int", "'8'", site=BERT_SITE),
    case("bert-config-bool-size", _read_config("bert-config-bool.json"), CheckpointError, "'num_hidden_layers'", "True", site=BERT_SITE),
    case("bert-config-negative-size", _read_config("bert-config-negative.json"), CheckpointError, "'intermediate_size'", "-12", site=BERT_SITE),
    case("bert-config-float-size", _read_config("bert-config-float-size.json"), CheckpointError, "'vocab_size'", "40.0", site=BERT_SITE),
    case("bert-config-nan-epsilon", _read_config("bert-config-nan.json"), CheckpointError, "'layer_norm_eps'", "positive float", "nan", site=BERT_SITE),
    case("bert-config-zero-epsilon", _read_config("bert-config-zero-eps.json"), CheckpointError, "'layer_norm_eps'", "0.0", site=BERT_SITE),
    case("bert-config-heads", _read_config("bert-config-heads.json"), CheckpointError,
         "bert-config-heads.json", "hidden_size 8", "3 attention heads", site=BERT_SITE),
    case("bert-config-list", _read_config("bert-config-list.json"), CheckpointError, "bert-config-list.json", "JSON list", site=BERT_SITE),
    case("bert-config-broken-json", _read_config("bert-config-broken.json"), CheckpointError,
         "bert-config-broken.json", "cannot read the model config", site=BERT_SITE),
    case("bert-config-absent", _read_config("no-such-config.json"), CheckpointError,
         "no-such-config.json", "No such file", site=BERT_SITE),
    case("bert-missing-entry", _load_bert("bert-missing.safetensors"), CheckpointError,
         "bert-missing.safetensors", "missing entries for layers.1.output_norm.shift", site=BERT_SITE),
    case("bert-unknown-entry", _load_bert("bert-unknown.safetensors"), CheckpointError,
         "bert-unknown.safetensors", "unexpected entries encoder.layer.0.attention.self.rotary.weight", site=BERT_SITE),
    case("bert-extra-layer", _load_bert("bert-third-layer.safetensors"), CheckpointError,
         "layers.2.query.weights (file entry 'encoder.layer.2.attention.self.query.weight')", site=BERT_SITE),
    case("bert-vocab", _load_bert("bert-vocab.safetensors"), CheckpointError,
         "bert-vocab.safetensors", "words.weights (file entry 'embeddings.word_embeddings.weight')", "[41, 8]", "[40, 8]", site=BERT_SITE),
    case("bert-f64-entry", _load_bert("bert-f64.safetensors"), CheckpointError,
         "norm.shift (file entry 'embeddings.LayerNorm.bias') holds f64", "needs f32", site=BERT_SITE),
    case("bert-position-ids-not-positions", _load_bert("bert-position-ids-wrong.safetensors"), CheckpointError,
         "bert-position-ids-wrong.safetensors", "'embeddings.position_ids'", "int64[1, 16]", "not the positions", site=BERT_SITE),
    case("bert-integer-unknown", _load_bert("bert-integer-unknown.safetensors"), CheckpointError,
         "integer entry 'embeddings.token_type_ids'", "int64[1, 16]", "no part of BERT's weights", site=BERT_SITE),
    case("bert-template-none", _load_bert("bert.safetensors", template=None), CheckpointError,
         "bert.safetensors", "template must be a Parameters table", site=BERT_SITE),
    # 4. the conformance kit
    case("kit-optimizer-int", lambda: check_optimizer(bad(3)), OptimizerError, "check_optimizer", "factory", "int 3"),
    case("kit-optimizer-instance", lambda: check_optimizer(bad(Sgd(0.1))), OptimizerError, "factory", "not an instance", "Sgd(learning_rate=0.1"),
    case("kit-optimizer-name-string", lambda: check_optimizer(bad("sgd")), OptimizerError, "factory", "str 'sgd'"),
    case("kit-optimizer-no-learning-rate", lambda: check_optimizer(lambda: Sgd(0.1)), OptimizerError,
         "check_optimizer", "cannot be called as factory(learning_rate=...)", "unexpected keyword argument 'learning_rate'"),
    case("kit-optimizer-name-int", lambda: check_optimizer(Sgd, name=bad(3)), InvalidArgumentError, "check_optimizer", "name", "int 3"),
    case("kit-optimizer-elements-string", lambda: check_optimizer(Sgd, elements=bad("f32")), ElementError, "elements", "str 'f32'"),
    case("kit-optimizer-elements-names", lambda: check_optimizer(Sgd, elements=bad(("f32",))), ElementError, "elements", "('f32',)"),
    case("kit-optimizer-elements-one", lambda: check_optimizer(Sgd, elements=bad(f32)), ElementError, "elements", "ElementType"),
    case("kit-optimizer-elements-empty", lambda: check_optimizer(Sgd, elements=()), ElementError, "elements", "non-empty", "()"),
    case("kit-optimizer-weight-decay-string", lambda: check_optimizer(AdamW, weight_decay=bad("yes")), InvalidArgumentError,
         "weight_decay", "True or False", "'yes'"),
    case("kit-optimizer-weight-decay-int", lambda: check_optimizer(AdamW, weight_decay=bad(1)), InvalidArgumentError, "weight_decay", "int 1"),
    case("kit-optimizer-wrong-structure", lambda: check_optimizer(_Structureless), ConformanceError,
         "_Structureless", "FAILED", "pure: raised"),
    case("kit-optimizer-factory-raises", lambda: check_optimizer(_raising_optimizer), ConformanceError,
         "7 of 7 properties FAILED", "raised RuntimeError: no optimizer today"),
    case("kit-optimizer-factory-returns-number", lambda: check_optimizer(lambda learning_rate: bad(learning_rate)), ConformanceError,
         "FAILED", "raised AttributeError"),
    case("kit-layer-int", lambda: check_layer(bad(3), input=[[1.0]]), InvalidArgumentError, "check_layer", "factory", "int 3"),
    case("kit-layer-element-string", lambda: check_layer(Linear, [[1.0]], input=[[1.0]], element=bad("f64")), ElementError,
         "check_layer", "element", "'f64'"),
    case("kit-layer-element-none", lambda: check_layer(Linear, [[1.0]], input=[[1.0]], element=bad(None)), ElementError, "element", "NoneType"),
    case("kit-layer-name-int", lambda: check_layer(Linear, [[1.0]], input=[[1.0]], name=bad(7)), InvalidArgumentError, "name", "int 7"),
    case("kit-layer-input-string", lambda: check_layer(Linear, [[1.0]], input=bad("abc")), InvalidArgumentError,
         "check_layer", "input must be an array of f64", "'abc'"),
    case("kit-layer-input-ragged", lambda: check_layer(Linear, [[1.0]], input=[[1.0], [1.0, 2.0]]), InvalidArgumentError,
         "input", "[[1.0], [1.0, 2.0]]", "inhomogeneous"),
    case("kit-layer-input-none", lambda: check_layer(Linear, [[1.0]], input=bad(None)), InvalidArgumentError, "input", "None"),
    case("kit-layer-input-empty", lambda: check_layer(Linear, [[1.0]], input=[]), InvalidArgumentError, "input", "never empty"),
    case("kit-layer-too-many-arguments", lambda: check_layer(_linear_layer, [[1.0]], [0.0], input=[[1.0]]), InvalidArgumentError,
         "_linear_layer cannot be called as factory(tape, *args, **kwargs)", "too many positional arguments"),
    case("kit-layer-missing-argument", lambda: check_layer(_linear_layer, input=[[1.0]]), InvalidArgumentError,
         "_linear_layer", "missing a required argument: 'weights'"),
    case("kit-layer-unknown-keyword", lambda: check_layer(Linear, [[1.0]], input=[[1.0]], bogus=1), InvalidArgumentError,
         "Linear", "unexpected keyword argument 'bogus'"),
    case("kit-layer-factory-raises", lambda: check_layer(_raising_layer, input=[[1.0]]), ConformanceError,
         "layer _raising_layer", "4 of 4 properties FAILED", "raised ZeroDivisionError: the layer divided by zero"),
    case("kit-layer-returns-number", lambda: check_layer(_number_layer, input=[[1.0]]), ConformanceError,
         "records: calling the layer returned float, not a Value"),
    case("kit-element-int", lambda: check_element_type(bad(3)), ElementError, "check_element_type", "int"),
    # 5. the optimizers and their transforms
    case("sgd-learning-rate-string", lambda: Sgd(bad("0.1")), OptimizerError, "sgd", "learning_rate", "'0.1'"),
    case("sgd-learning-rate-none", lambda: Sgd(bad(None)), OptimizerError, "sgd", "learning_rate", "None"),
    case("sgd-learning-rate-complex", lambda: Sgd(bad(1j)), OptimizerError, "learning_rate", "1j"),
    case("sgd-learning-rate-inf", lambda: Sgd(math.inf), OptimizerError, "learning_rate", "inf"),
    case("sgd-learning-rate-minus-inf", lambda: Sgd(-math.inf), OptimizerError, "learning_rate", "-inf"),
    case("sgd-momentum-negative", lambda: Sgd(0.1, momentum=-0.1), OptimizerError, "sgd", "momentum", "[0, 1)", "-0.1"),
    case("sgd-momentum-nan", lambda: Sgd(0.1, momentum=math.nan), OptimizerError, "momentum", "nan"),
    case("sgd-momentum-string", lambda: Sgd(0.1, momentum=bad("0.9")), OptimizerError, "momentum", "'0.9'"),
    case("sgd-nesterov-string", lambda: Sgd(0.1, momentum=0.9, nesterov=bad("yes")), OptimizerError, "sgd", "nesterov", "True or False", "'yes'"),
    case("sgd-nesterov-int", lambda: Sgd(0.1, nesterov=bad(1)), OptimizerError, "nesterov", "True or False", "got 1"),
    case("adam-b1-numpy-negative", lambda: Adam(0.1, b1=bad(np.float32(-0.5))), OptimizerError, "adam", "b1", "[0, 1)", "-0.5"),
    case("adam-b1-nan", lambda: Adam(0.1, b1=math.nan), OptimizerError, "b1", "nan"),
    case("adam-b1-string", lambda: Adam(0.1, b1=bad("0.9")), OptimizerError, "b1", "'0.9'"),
    case("adam-b2-one", lambda: Adam(0.1, b2=1.0), OptimizerError, "b2", "1.0"),
    case("adam-b2-bool", lambda: Adam(0.1, b2=bad(True)), OptimizerError, "b2", "True"),
    case("adam-learning-rate-list", lambda: Adam(bad([1e-3])), OptimizerError, "adam", "learning_rate", "[0.001]"),
    case("adamw-decay-negative", lambda: AdamW(0.1, decay=-0.1), OptimizerError, "adamw", "decay", ">= 0", "-0.1"),
    case("adamw-decay-string", lambda: AdamW(0.1, decay=bad("0.01")), OptimizerError, "decay", "'0.01'"),
    case("adamw-decay-where-string", lambda: AdamW(0.1, decay_where=bad("rank")), OptimizerError, "adamw", "decay_where", "predicate", "'rank'"),
    case("adamw-b1-above-one", lambda: AdamW(0.1, b1=1.5), OptimizerError, "adamw", "b1", "1.5"),
    case("adamw-learning-rate-nan", lambda: AdamW(math.nan), OptimizerError, "adamw", "learning_rate", "nan"),
    case("trace-negative", lambda: trace(-0.5), OptimizerError, "trace", "momentum", "-0.5"),
    case("trace-nan", lambda: trace(math.nan), OptimizerError, "trace", "momentum", "nan"),
    case("trace-nesterov-string", lambda: trace(0.5, nesterov=bad("no")), OptimizerError, "trace", "nesterov", "'no'"),
    case("scale-by-adam-b1-one", lambda: scale_by_adam(b1=1.0), OptimizerError, "scale_by_adam", "b1", "1.0"),
    case("scale-by-adam-epsilon-negative", lambda: scale_by_adam(epsilon=-1.0), OptimizerError, "scale_by_adam", "epsilon", "-1.0"),
    case("scale-by-adam-epsilon-string", lambda: scale_by_adam(epsilon=bad("1e-8")), OptimizerError, "epsilon", "'1e-8'"),
    case("scale-by-learning-rate-string", lambda: scale_by_learning_rate(bad("fast")), OptimizerError,
         "scale_by_learning_rate", "learning_rate", "'fast'"),
    case("scale-by-learning-rate-inf", lambda: scale_by_learning_rate(math.inf), OptimizerError, "learning_rate", "inf"),
    case("scale-by-learning-rate-none", lambda: scale_by_learning_rate(bad(None)), OptimizerError, "learning_rate", "None"),
    case("add-decayed-weights-negative", lambda: add_decayed_weights(-0.1), OptimizerError, "add_decayed_weights", "rate", "-0.1"),
    case("add-decayed-weights-string", lambda: add_decayed_weights(bad("0.1")), OptimizerError, "rate", "'0.1'"),
    case("chain-int-transform", lambda: chain(bad(3)), OptimizerError, "chain", "transform 0 is a int"),
    case("chain-kind-int", lambda: chain(scale_by_adam(), kind=bad(3)), OptimizerError, "chain", "kind", "3"),
    case("chain-kind-none", lambda: chain(scale_by_adam(), kind=bad(None)), OptimizerError, "kind", "None"),
    case("chain-class-list", lambda: Chain("listed", bad([scale_by_learning_rate(0.1)])), OptimizerError,
         "chain", "transforms must be a tuple", "list"),
    case("chain-class-int", lambda: Chain("number", bad(3)), OptimizerError, "transforms must be a tuple", "int"),
    case("chain-init-int", lambda: _CHAIN.init(bad(3)), OptimizerError, "catalogue.init", "parameters must be a Parameters table", "int"),
    case("chain-init-none", lambda: chain(trace(0.9), scale_by_learning_rate(0.1)).init(bad(None)), OptimizerError,
         "chain.init", "parameters", "NoneType"),
    case("adam-init-list", lambda: Adam(0.1).init(bad([1.0])), OptimizerError, "adam.init", "parameters", "list"),
    case("state-start-int", lambda: OptimizerState.start("mine", bad(3)), OptimizerError, "mine.init", "parameters", "int"),
    case("chain-update-state-arrays", _update(_CHAIN, "state", {"count": np.zeros(())}), OptimizerError,
         "catalogue.update", "state must be an OptimizerState", "dict"),
    case("adamw-update-gradients-tensor", _update(AdamW(0.1), "gradients", Tensor.ones((2,))), OptimizerError,
         "adamw.update", "gradients must be a Parameters table", "Tensor"),
    case("adam-update-parameters-int", _update(Adam(0.1), "parameters", 3), OptimizerError, "adam.update", "parameters", "int"),
    case("chain-prelude-none", _update(chain(_PreludeNone(), scale_by_learning_rate(0.1), kind="odd")), OptimizerError,
         "odd", ".prelude returned NoneType, not a Prelude"),
    case("schedule-negative-rate", _update(Sgd(lambda step: -1.0)), OptimizerError, "sgd", "at step 0 is -1.0", ">= 0"),
    case("schedule-raises", _update(Sgd(lambda step: [0.1][step + 1])), OptimizerError,
         "sgd", "schedule raised IndexError at step 0", "list index out of range"),
    case("schedule-returns-string", _update(Adam(lambda step: bad("0.1"))), OptimizerError, "adam", "at step 0 is '0.1'"),
    case("schedule-returns-none", _update(Adam(lambda step: bad(None))), OptimizerError, "at step 0 is None"),
    case("schedule-returns-bool", _update(Sgd(lambda step: bad(True))), OptimizerError, "at step 0 is True"),
    case("state-restored-list", _restored([1.0]), OptimizerError, "sgd state", "restored takes a mapping", "list"),
    case("state-restored-count-string", _restored({"count": np.array("three")}), OptimizerError, "'count'", "'three'", "not a number"),
    case("state-restored-extra", _restored({"count": np.array(0.0), "velocity/%0": np.zeros((1, 2))}), OptimizerError,
         "unexpected ['velocity/%0']"),
    # 6. clipping and decay masks
    case("clip-max-norm-string", lambda: clip_by_global_norm(_table(), bad("1.0")), OptimizerError, "clip_by_global_norm", "max_norm", "'1.0'"),
    case("clip-max-norm-none", lambda: clip_by_global_norm(_table(), bad(None)), OptimizerError, "max_norm", "None"),
    case("clip-max-norm-bool", lambda: clip_by_global_norm(_table(), bad(True)), OptimizerError, "max_norm", "True"),
    case("clip-gradients-list", lambda: clip_by_global_norm(bad([1.0]), 1.0), OptimizerError, "clip_by_global_norm", "gradients", "list"),
    case("global-norm-none", lambda: global_norm(bad(None)), OptimizerError, "global_norm", "gradients", "NoneType"),
    case("weight-decay-rate-string", lambda: add_weight_decay(_table(), _table(), bad("0.1")), OptimizerError, "add_weight_decay", "rate", "'0.1'"),
    case("weight-decay-rate-none", lambda: add_weight_decay(_table(), _table(), bad(None)), OptimizerError, "rate", "None"),
    case("weight-decay-where-int", lambda: add_weight_decay(_table(), _table(), 0.1, where=bad(3)), OptimizerError,
         "add_weight_decay", "where must be a predicate", "3"),
    case("weight-decay-parameters-list", lambda: add_weight_decay(_table(), bad([1.0]), 0.1), OptimizerError, "parameters", "list"),
    case("decay-mask-exclude-int", lambda: decay_mask(_table(), exclude=bad(3)), OptimizerError, "decay_mask", "exclude", "Symbols", "3"),
    case("decay-mask-exclude-names", lambda: decay_mask(_table(), exclude=bad(["weights"])), OptimizerError, "exclude", "['weights']"),
    case("decay-mask-exclude-unhashable", lambda: decay_mask(_table(), exclude=bad([[0]])), OptimizerError, "exclude", "[[0]]"),
    case("decay-mask-where-string", lambda: decay_mask(_table(), where=bad("rank")), OptimizerError, "decay_mask", "where", "'rank'"),
    case("decay-mask-parameters-none", lambda: decay_mask(bad(None)), OptimizerError, "decay_mask", "parameters", "NoneType"),
    case("masked-where-int", lambda: masked(_table(), bad(3)), OptimizerError, "masked", "where must be a predicate"),
    case("masked-parameters-none", lambda: masked(bad(None), rank_at_least_two), OptimizerError, "masked", "parameters", "NoneType"),
    # 7. schedules: built with bad numbers, or called at a step that is not one
    case("constant-string", lambda: schedules.constant(bad("0.1")), OptimizerError, "schedule", "value", "'0.1'"),
    case("constant-inf", lambda: schedules.constant(math.inf), OptimizerError, "value", "finite", "inf"),
    case("constant-step-float", lambda: schedules.constant(0.1)(bad(1.5)), OptimizerError, "the step", "integer >= 0", "1.5"),
    case("constant-step-bool", lambda: schedules.constant(0.1)(bad(True)), OptimizerError, "the step", "True"),
    case("warmup-string-steps", lambda: schedules.linear_warmup(0.1, bad("4")), OptimizerError, "warmup", "positive integer", "'4'"),
    case("warmup-zero-steps", lambda: schedules.linear_warmup(0.1, 0), OptimizerError, "warmup", "got 0"),
    case("warmup-after-int", lambda: schedules.linear_warmup(0.1, 4, after=bad(3)), OptimizerError, "after", "schedule", "3"),
    case("warmup-step-negative", lambda: schedules.linear_warmup(0.1, 4)(-1), OptimizerError, "the step", "-1"),
    case("cosine-steps-negative", lambda: schedules.cosine_decay(0.1, steps=-3), OptimizerError, "steps", "positive integer", "-3"),
    case("cosine-final-nan", lambda: schedules.cosine_decay(0.1, 10, final=math.nan), OptimizerError, "final", "nan"),
    case("cosine-step-float", lambda: schedules.cosine_decay(0.1, 10)(bad(2.5)), OptimizerError, "the step", "2.5"),
    case("exponential-factor-negative", lambda: schedules.exponential_decay(0.1, -0.5, 2), OptimizerError, "factor", "-0.5"),
    case("exponential-every-float", lambda: schedules.exponential_decay(0.1, 0.5, bad(2.0)), OptimizerError, "every", "got 2.0"),
    case("exponential-step-string", lambda: schedules.exponential_decay(0.1, 0.5, 2)(bad("3")), OptimizerError, "the step", "'3'"),
    case("piecewise-boundaries-int", lambda: schedules.piecewise_constant(bad(3), [1.0]), OptimizerError,
         "piecewise_constant", "sequences", "int and list"),
    case("piecewise-values-none", lambda: schedules.piecewise_constant([2], bad(None)), OptimizerError, "list and NoneType"),
    case("piecewise-boundary-bool", lambda: schedules.piecewise_constant(bad([True]), [1.0, 0.5]), OptimizerError, "boundaries", "True"),
    case("piecewise-nothing", lambda: schedules.piecewise_constant([], []), OptimizerError, "one more value", "0 boundaries and 0 values"),
    case("piecewise-value-string", lambda: schedules.piecewise_constant([2], bad([1.0, "x"])), OptimizerError, "value", "'x'"),
    case("piecewise-step-none", lambda: schedules.piecewise_constant([2], [1.0, 0.5])(bad(None)), OptimizerError, "the step", "None"),
    # 8. slot formulas: a recorded value (Ref) used outside SlotOps, a handle from elsewhere, a wrong structure
    case("ref-python-add", _slot(lambda ops, p, u: (u + 2.0, ())), FormulaError, "Ref(1)", "combine only through its ops"),
    case("ref-python-radd", _slot(lambda ops, p, u: (2.0 * u, ())), FormulaError, "Ref(1)", "not Python arithmetic"),
    case("ref-negate", _slot(lambda ops, p, u: (-u, ())), FormulaError, "combine only through its ops"),
    case("ref-compare", _slot(lambda ops, p, u: (u if u < 0 else p, ())), FormulaError, "comparisons"),
    case("ref-truth", _slot(lambda ops, p, u: (u if u else p, ())), FormulaError, "Ref(1)", "no truth value", "slot's flag"),
    case("ref-float", _slot(lambda ops, p, u: (float(u), ())), FormulaError, "conversions"),
    case("ref-numpy", _slot(lambda ops, p, u: (np.sqrt(u), ())), FormulaError, "Ref(1)", "ops.sqrt"),
    case("ref-made-by-hand", _slot(lambda ops, p, u: (ops.add(u, Ref(5)), ())), FormulaError,
         "probe", "Ref(5)", "did not hand out"),
    case("ref-made-by-hand-in-range", _slot(lambda ops, p, u: (ops.add(u, Ref(0)), ())), FormulaError, "Ref(0)", "did not hand out"),
    case("ref-index-string", lambda: Ref(bad("0")), FormulaError, "Ref", "index", "'0'"),
    case("ref-index-negative", lambda: Ref(-1), FormulaError, "index must be an integer >= 0", "-1"),
    case("ref-index-bool", lambda: Ref(bad(True)), FormulaError, "index", "True"),
    case("slot-returns-one-value", _slot(lambda ops, p, u: u), FormulaError, "probe", "slot returned Ref(1)", "(update, tuple"),
    case("slot-returns-three", _slot(lambda ops, p, u: (u, (), ())), FormulaError, "slot returned (Ref(1), (), ())"),
    case("slot-returns-none", _slot(lambda ops, p, u: None), FormulaError, "slot returned None"),
    case("slot-returns-list", _slot(lambda ops, p, u: [u, ()]), FormulaError, "slot returned [Ref(1), ()]"),
    case("record-returns-none", _record(lambda ops, p, g: None), FormulaError, "probe", "(new parameter, tuple of table entries)", "None"),
    case("record-returns-list-entries", _record(lambda ops, p, g: (p, [g])), FormulaError, "(new parameter, tuple"),
    case("record-numbers-none", _record(lambda ops, p, g: (p, ()), numbers=None), FormulaError, "numbers", "[0, 65536]", "None"),
    case("record-numbers-huge", _record(lambda ops, p, g: (p, ()), numbers=2**70), FormulaError, "numbers", str(2**70)),
    case("record-tables-negative", _record(lambda ops, p, g: (p, ()), tables=-1), FormulaError, "tables", "-1"),
    case("record-formula-int", lambda: Program.record(bad(3), 0, 0, "probe"), FormulaError, "formula must be callable", "int"),
    case("program-unknown-operation", lambda: Program(bad([("input", 0, -1), ("power", 0, 0)]), (1,)), FormulaError,
         "step 1", "'power'"),
    case("program-forward-operand", lambda: Program(bad([("input", 0, -1), ("add", 0, 5)]), (1,)), FormulaError, "step 1", "before it"),
    case("program-output-unknown", lambda: Program([("input", 0, -1)], (3,)), FormulaError, "output 3", "1 recorded values"),
    case("program-steps-int", lambda: Program(bad(5), (0,)), FormulaError, "Program", "a list", "int"),
    case("program-outputs-list", lambda: Program([("input", 0, -1)], bad([0])), FormulaError, "outputs a tuple", "list"),
    # 9. data, found by probing the public functions with wrong arguments
    case("feeder-inputs-none", lambda: data.Feeder(bad(None)), InvalidArgumentError, "Feeder", "inputs", "NoneType"),
    case("feeder-inputs-string", lambda: data.Feeder(bad("x")), InvalidArgumentError, "Feeder", "inputs", "str"),
    case("contexts-words-none", lambda: _VOCABULARY.contexts(bad(None), 2), InvalidArgumentError, "contexts", "words", "None"),
    case("contexts-words-string", lambda: _VOCABULARY.contexts(bad("abc"), 2), InvalidArgumentError, "contexts", "'abc'"),
    case("contexts-words-empty", lambda: _VOCABULARY.contexts([], 2), InvalidArgumentError, "contexts", "words is empty"),
    case("contexts-context-huge", lambda: _VOCABULARY.contexts(["ab"], 2**70), CapacityError, "contexts", f"context={2**70}"),
    case("stream-sample-batch-huge", lambda: _STREAM.sample(np.random.default_rng(0), 2**70, 2), CapacityError,
         "TokenStream.sample", f"batch={2**70}"),
    # 10. the decoder: what it is built from, what it lowers, what it feeds
    case("decoder-model-none", lambda: Decoder(Tape(), bad(None), 4), InvalidArgumentError, "Decoder", "TransformerLm", "NoneType"),
    case("decoder-tape-string", lambda: Decoder(bad("tape"), _gpt2("f64")[0], 4), InvalidArgumentError, "Decoder", "Tape", "str"),
    case("decoder-lower-table", lambda: _decoder()[0].lower(bad(_decoder()[1])), InvalidArgumentError,
         "Decoder.lower", "network must be the sealed Network", "Parameters"),
    case("decoder-along-none", lambda: _decoder()[0].logits_along(_decoder()[1], bad(None)), InvalidArgumentError,
         "Decoder.logits_along: tokens", "NoneType"),
    case("decoder-along-string", lambda: _decoder()[0].logits_along(_decoder()[1], bad("12")), InvalidArgumentError,
         "logits_along: tokens", "str"),
    case("decoder-along-float", lambda: _decoder()[0].logits_along(_decoder()[1], bad([1.5])), InvalidArgumentError,
         "logits_along: tokens[0] = 1.5", "[0, 7)"),
    case("decoder-along-out-of-vocab", lambda: _decoder()[0].logits_along(_decoder()[1], [99]), InvalidArgumentError, "tokens[0] = 99"),
    # 11. plugin lookups by a name that is not a str
    case("plugin-element-list", lambda: plugin_element_type(bad([1])), UnknownElementError, "element type", "must be a str", "list [1]"),
    case("plugin-optimizer-dict", lambda: plugin_optimizer(bad({})), UnknownNameError, "optimizer", "dict {}"),
    case("plugin-layer-none", lambda: plugin_layer(bad(None)), UnknownNameError, "layer", "NoneType None"),
]


def _state() -> object:
    """Everything a refused call could have changed, as comparable values."""
    _files()
    plugins = registry()
    return (
        sorted((p.name, p.read_bytes()) for p in _DIR[0].iterdir()),
        plugins.plugins(),
        dict(plugins.element_types()),
        dict(plugins.optimizers()),
        dict(plugins.layers()),
        [table_bits(table) for table in (_linear()[1], _gpt2("f64")[1], _gpt2("f32")[1], _bert()[1], _table(), _stepped()[0])],
        state_bits(_stepped()[1]),
        sorted(_CHAIN._programs),
    )


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 120
    assert len({name for name, *_ in CASES}) == len(CASES)


@pytest.mark.parametrize(("call", "error", "parts", "site"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_misuse_is_refused_by_name_and_changes_nothing(
    call: Callable[[], object], error: type[ToposError], parts: tuple[str, ...], site: str
) -> None:
    before = _state()
    with pytest.raises(error) as raised:
        call()
    message = str(raised.value)
    for part in (*parts, site):
        assert part in message, f"{part!r} missing from {message!r}"
    assert _state() == before


def test_the_message_names_the_line_that_called() -> None:
    layer, parameters = _linear()
    calls: list[tuple[int, Callable[[], object]]] = [
        (here(), lambda: ckpt.restore(layer, parameters, {"w": Tensor.ones((2, 3))})),
        (here(), lambda: _CHAIN.init(bad(None))),
        (here(), lambda: schedules.constant(0.1)(bad(0.5))),
        (here(), lambda: check_layer(bad(None), input=[[1.0]])),
        (here(), lambda: check_optimizer(Sgd, elements=())),
        (here(), lambda: clip_by_global_norm(parameters, bad("x"))),
    ]
    for line, call in calls:
        with pytest.raises(ToposError) as raised:
            call()
        assert f"{HERE}:{line}:" in str(raised.value), str(raised.value)


def test_the_valid_calls_beside_them_still_work() -> None:
    layer, parameters = _linear()
    loaded = ckpt.load(_path("linear.safetensors"), layer, parameters, rename=NAMES, foreign=True)
    assert loaded.of(layer.weights).tolist() == [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    for element in ("f64", "f32"):
        model, template = _gpt2(element)
        assert gpt2.load_hf(_path("gpt2.safetensors"), model, template).symbols == template.symbols
    model, template = _bert()
    assert bert.load(_path("bert.safetensors"), model, template).symbols == template.symbols
    with_ids = bert.load(_path("bert-position-ids.safetensors"), model, template)  # as Hugging Face ships it
    assert table_bits(with_ids) == table_bits(bert.load(_path("bert.safetensors"), model, template))
    assert bert.topos_name("bert.encoder.layer.1.output.LayerNorm.bias") == "layers.1.output_norm.shift"
    assert bert.Config.read(_path("bert-config.json")).epsilon == 1e-12
    # numpy scalars are numbers, and numpy integers are steps
    assert Adam(np.float32(0.1), b1=np.float64(0.8)).b1 == 0.8
    assert schedules.cosine_decay(1.0, 4)(np.int64(4)) == 0.0
    assert schedules.piecewise_constant((2,), (1.0, 0.5))(np.int64(3)) == 0.5
    assert len(masked(_table(), decay_mask(_table(), exclude=()))) == 1
    assert check_layer(_linear_layer, [[0.5], [-1.0]], input=[[2.0, 1.0]]).passed
