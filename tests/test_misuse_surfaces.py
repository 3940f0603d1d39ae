"""Issue 24: every misuse of these public calls raises a named ToposError, and changes nothing.

Each case is (id, call, error class, substrings the message must hold); every message must
also name this file (the user's line). Where the call has state (a decoder's feed cache, a
registry, an optimizer state, a checkpoint file) the test compares it before and after.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from topos import (
    CheckpointError,
    ElementError,
    InvalidArgumentError,
    ParametersError,
    Tape,
    Tensor,
    ToposError,
    f32,
)
from topos import checkpoint as ckpt
from topos.errors import PluginValidationError
from topos.init import normal
from topos.nn import Block, Embedding, LayerNorm, Linear, MultiHeadAttention, PositionTable, SwiGlu
from topos.nn.generation import Decoder, choose
from topos.nn.transformer import TransformerLm
from topos.optim import Adam, AdamW, OptimizerError, Sgd, compiled, scale_by_adam
from topos.plugins import Registry, hookimpl
from topos.testing.elements import check_element_type

HERE = os.path.basename(__file__)


@functools.cache
def _decoder() -> tuple[Decoder, Any]:
    tape = Tape()
    init = normal(0, 0.5)
    lm = TransformerLm(
        Embedding.init(tape, 7, 4, init),
        PositionTable.init(tape, 6, 4, init),
        [Block(LayerNorm.init(tape, 4, 1e-5), MultiHeadAttention.init(tape, 4, 2, init),
               LayerNorm.init(tape, 4, 1e-5), SwiGlu.init(tape, 4, 8, init))],
        LayerNorm.init(tape, 4, 1e-5),
    )
    decoder = Decoder(tape, lm, length=6)
    network = tape.seal()
    return decoder.lower(network), network.parameters()


def _generate(prompt: Any = (1, 2), count: Any = 2, rng: Any = "default", **options: Any) -> Callable[[], object]:
    def call() -> object:
        decoder, parameters = _decoder()
        return decoder.generate(parameters, prompt, count, np.random.default_rng(0) if rng == "default" else rng, **options)

    return call


def _choose(logits: Any = (0.0, 1.0, 2.0), rng: Any = "default", **options: Any) -> Callable[[], object]:
    return lambda: choose(logits, np.random.default_rng(0) if rng == "default" else rng, **options)


class _Raising(Mapping[str, Any]):
    """A mapping that fails when it is read, as a broken plugin's own type may."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("broken mapping")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("broken mapping")

    def __len__(self) -> int:
        return 1

    def items(self) -> Any:
        raise RuntimeError("broken mapping")


class _RaisingList(list[Any]):
    def __iter__(self) -> Iterator[Any]:
        raise RuntimeError("broken sequence")


def _plugin(seam: str, result: object) -> object:
    def hook(self: object) -> object:
        return result

    return type("Broken", (), {seam: hookimpl(hook)})()


def _register(seam: str, result: object) -> Callable[[], object]:
    return lambda: _registry().register(_plugin(seam, result), "broken")


@functools.cache
def _registry() -> Registry:
    return Registry.with_builtins()


@functools.cache
def _saved(directory: str) -> tuple[Path, Any, Any]:
    tape = Tape()
    layer = Linear(tape, Tensor.ones((2, 3)), Tensor.zeros((3,)))
    network = tape.seal()
    path = Path(directory) / "model.safetensors"
    ckpt.save(path, layer, network.parameters())
    return path, layer, network.parameters()


_CHECKPOINT_DIR: list[str] = []


def _load(rename: Any) -> Callable[[], object]:
    def call() -> object:
        path, layer, template = _saved(_CHECKPOINT_DIR[0])
        return ckpt.load(path, layer, template, rename=rename)

    return call


def _restore(rename: Any) -> Callable[[], object]:
    def call() -> object:
        _, layer, template = _saved(_CHECKPOINT_DIR[0])
        return ckpt.restore(layer, template, {}, rename=rename)

    return call


@functools.cache
def _table() -> Any:
    network, _ = Tape.record(lambda t: t.parameter([1.0, 2.0]), element=f32)
    return network.parameters()


class _NumpyOptimizer:
    """A plugin-style optimizer that is not made of transforms: compiled() runs its update in numpy."""

    def init(self, parameters: Any) -> Any:
        return Sgd(0.1).init(parameters)

    def update(self, gradients: Any, state: Any, parameters: Any) -> Any:
        return Sgd(0.1).update(gradients, state, parameters)


def _compiled_update(optimizer: Any, role: str, value: Any) -> Callable[[], object]:
    def call() -> object:
        wrapped = compiled(optimizer)
        p = _table()
        arguments = {"gradients": p, "state": wrapped.init(p), "parameters": p}
        arguments[role] = value
        return wrapped.update(arguments["gradients"], arguments["state"], arguments["parameters"])

    return call


Case = tuple[str, Callable[[], object], type[ToposError], tuple[str, ...]]

CASES: list[Case] = [
    # 1. Decoder.generate and choose
    ("generate-prompt-2d-array", _generate(np.array([[1, 2]])), InvalidArgumentError, ("prompt", "1-D integer array", "[1, 2]")),
    ("generate-prompt-float-array", _generate(np.array([1.0, 2.0])), InvalidArgumentError, ("prompt", "float64")),
    ("generate-prompt-string", _generate("12"), InvalidArgumentError, ("prompt", "str")),
    ("generate-prompt-none", _generate(None), InvalidArgumentError, ("prompt", "NoneType")),
    ("generate-prompt-empty", _generate([]), InvalidArgumentError, ("prompt", "at least one token")),
    ("generate-prompt-empty-array", _generate(np.array([], dtype=np.int64)), InvalidArgumentError, ("prompt", "at least one")),
    ("generate-prompt-float-id", _generate([1, 1.5]), InvalidArgumentError, ("prompt[1]", "1.5", "[0, 7)")),
    ("generate-prompt-bool-id", _generate([True]), InvalidArgumentError, ("prompt[0]", "True")),
    ("generate-prompt-id-too-big", _generate([1, 7]), InvalidArgumentError, ("prompt[1]", "7", "[0, 7)")),
    ("generate-prompt-id-negative", _generate(np.array([-1])), InvalidArgumentError, ("prompt[0]", "-1")),
    ("generate-temperature-nan", _generate(temperature=float("nan")), InvalidArgumentError, ("temperature", "nan")),
    ("generate-temperature-inf", _generate(temperature=float("inf")), InvalidArgumentError, ("temperature", "inf")),
    ("generate-temperature-negative", _generate(temperature=-0.5), InvalidArgumentError, ("temperature", "-0.5")),
    ("generate-temperature-string", _generate(temperature="hot"), InvalidArgumentError, ("temperature", "'hot'")),
    ("generate-count-negative", _generate(count=-2), InvalidArgumentError, ("count", "-2")),
    ("generate-count-float", _generate(count=1.5), InvalidArgumentError, ("count", "1.5")),
    ("generate-count-bool", _generate(count=True), InvalidArgumentError, ("count", "True")),
    ("generate-count-too-many", _generate(count=5), InvalidArgumentError, ("2 + 5", "cache length 6")),
    ("generate-top-k-zero", _generate(top_k=0), InvalidArgumentError, ("top_k", "0")),
    ("generate-rng-none", _generate(rng=None), InvalidArgumentError, ("rng", "NoneType")),
    ("generate-rng-seed", _generate(rng=7), InvalidArgumentError, ("rng", "int")),
    ("generate-parameters", lambda: _decoder()[0].generate(None, [1], 1, np.random.default_rng(0)), ParametersError,  # type: ignore[arg-type]
     ("parameters", "NoneType")),
    ("choose-logits-string", _choose("abc"), InvalidArgumentError, ("logits", "'abc'")),
    ("choose-logits-none", _choose(None), InvalidArgumentError, ("logits", "finite")),
    ("choose-logits-complex", _choose([1j, 1.0]), InvalidArgumentError, ("logits", "real numbers")),
    ("choose-logits-block", _choose([[0.0, 1.0], [1.0, 0.0]]), InvalidArgumentError, ("logits", "one row", "[2, 2]")),
    ("choose-logits-empty", _choose([]), InvalidArgumentError, ("logits", "non-empty")),
    ("choose-logits-inf", _choose([0.0, float("inf")]), InvalidArgumentError, ("logits", "finite")),
    ("choose-temperature-nan", _choose(temperature=float("nan")), InvalidArgumentError, ("choose", "temperature", "nan")),
    ("choose-temperature-inf", _choose(temperature=float("inf")), InvalidArgumentError, ("temperature", "inf")),
    ("choose-temperature-negative", _choose(temperature=-1.0), InvalidArgumentError, ("temperature", "-1.0")),
    ("choose-temperature-overflow", _choose([0.0, 1000.0], temperature=1e-310), InvalidArgumentError, ("temperature", "overflows")),
    ("choose-top-k-float", _choose(top_k=1.5), InvalidArgumentError, ("top_k", "1.5")),
    ("choose-top-k-bool", _choose(top_k=True), InvalidArgumentError, ("top_k", "True")),
    ("choose-rng-none", _choose(rng=None), InvalidArgumentError, ("choose", "rng", "NoneType")),
    ("choose-rng-legacy", _choose(rng=np.random), InvalidArgumentError, ("rng", "module")),
    # 2. checkpoint.load / restore rename
    ("load-rename-int", _load(5), CheckpointError, ("rename", "int", "5")),
    ("load-rename-string", _load("weights"), CheckpointError, ("rename", "str", "'weights'")),
    ("load-rename-list", _load(["weights"]), CheckpointError, ("rename", "list")),
    ("load-rename-int-key", _load({1: "weights"}), CheckpointError, ("rename", "1", "'weights'")),
    ("load-rename-int-value", _load({"weights": 3}), CheckpointError, ("rename", "'weights'", "3")),
    ("load-rename-bytes-value", _load({"weights": b"w"}), CheckpointError, ("rename", "b'w'")),
    ("load-rename-callable-raises", _load(lambda a, b: a), CheckpointError, ("rename raised TypeError", "model.safetensors")),
    ("load-rename-callable-non-string", _load(lambda name: 3), CheckpointError, ("rename", "into 3", "not a string")),
    ("restore-rename-int", _restore(5), CheckpointError, ("rename", "int")),
    # 3. check_element_type
    ("element-type-string", lambda: check_element_type("f32"), ElementError, ("element", "str", "'f32'", "element_type(name)")),  # type: ignore[arg-type]
    ("element-type-none", lambda: check_element_type(None), ElementError, ("element", "NoneType")),  # type: ignore[arg-type]
    ("element-type-dtype", lambda: check_element_type(np.float32), ElementError, ("element", "ElementType", "type")),  # type: ignore[arg-type]
    # 4. plugin hooks that return broken results
    ("plugin-optimizers-items-raise", _register("topos_optimizers", _Raising()), PluginValidationError,
     ("'broken'", "topos_optimizers", "RuntimeError", "broken mapping")),
    ("plugin-layers-items-raise", _register("topos_layers", _Raising()), PluginValidationError,
     ("'broken'", "topos_layers", "RuntimeError")),
    ("plugin-layers-non-mapping", _register("topos_layers", [("dense", Linear)]), PluginValidationError,
     ("'broken'", "topos_layers", "mapping", "list")),
    ("plugin-optimizers-none", _register("topos_optimizers", None), PluginValidationError, ("'broken'", "topos_optimizers", "NoneType")),
    ("plugin-elements-iteration-raises", _register("topos_element_types", _RaisingList([f32])), PluginValidationError,
     ("'broken'", "topos_element_types", "broken sequence")),
    ("plugin-elements-mapping", _register("topos_element_types", {"f32": f32}), PluginValidationError,
     ("'broken'", "topos_element_types", "dict")),
    # 5. optimizers and compiled()
    ("adam-epsilon-zero", lambda: Adam(0.1, epsilon=0), OptimizerError, ("adam", "epsilon", "> 0", "0")),
    ("adam-epsilon-zero-float", lambda: Adam(0.1, epsilon=0.0), OptimizerError, ("epsilon", "0.0")),
    ("adam-epsilon-inf", lambda: Adam(0.1, epsilon=float("inf")), OptimizerError, ("epsilon", "inf")),
    ("adam-epsilon-string", lambda: Adam(0.1, epsilon="tiny"), OptimizerError, ("epsilon", "'tiny'")),  # type: ignore[arg-type]
    ("adamw-epsilon-zero", lambda: AdamW(0.1, epsilon=0.0), OptimizerError, ("adamw", "epsilon", "> 0")),
    ("scale-by-adam-epsilon-zero", lambda: scale_by_adam(epsilon=0.0), OptimizerError, ("scale_by_adam", "epsilon", "> 0")),
    ("compiled-int", lambda: compiled(3), OptimizerError, ("compiled", "int")),  # type: ignore[arg-type]
    ("compiled-class", lambda: compiled(Adam), OptimizerError, ("compiled", "class Adam", "Adam(learning_rate=")),  # type: ignore[arg-type]
    ("compiled-twice", lambda: compiled(compiled(Sgd(0.1))), OptimizerError, ("compiled", "CompiledUpdate")),
    ("sgd-init-int", lambda: Sgd(0.1).init(3), OptimizerError, ("sgd.init", "parameters", "int")),  # type: ignore[arg-type]
    ("compiled-init-none", lambda: compiled(_NumpyOptimizer()).init(None), OptimizerError, ("init", "parameters", "NoneType")),  # type: ignore[arg-type]
    ("compiled-update-state", _compiled_update(Sgd(0.1), "state", None), OptimizerError, ("state", "OptimizerState", "NoneType")),
    ("compiled-update-gradients", _compiled_update(Sgd(0.1), "gradients", 3), OptimizerError, ("gradients", "Parameters", "int")),
    ("compiled-numpy-update-gradients", _compiled_update(_NumpyOptimizer(), "gradients", [1.0]), OptimizerError,
     ("update", "gradients", "list")),
    ("compiled-numpy-update-parameters", _compiled_update(_NumpyOptimizer(), "parameters", None), OptimizerError,
     ("update", "parameters", "NoneType")),
]


@pytest.fixture(autouse=True)
def _checkpoint_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    if not _CHECKPOINT_DIR:
        _CHECKPOINT_DIR.append(str(tmp_path_factory.mktemp("surfaces")))


def _state() -> object:
    """Everything a refused call could have changed, as comparable values."""
    decoder, _ = _decoder()
    registry = _registry()
    path, _, _ = _saved(_CHECKPOINT_DIR[0])
    return (
        sorted(decoder._fed),
        decoder._plan,
        registry.plugins(),
        dict(registry.element_types()),
        dict(registry.optimizers()),
        dict(registry.layers()),
        sorted(os.listdir(path.parent)),
        path.read_bytes(),
    )


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 40
    assert len({name for name, *_ in CASES}) == len(CASES)


@pytest.mark.parametrize(("call", "error", "parts"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_misuse_is_refused_by_name_and_changes_nothing(
    call: Callable[[], object], error: type[ToposError], parts: tuple[str, ...]
) -> None:
    before = _state()
    with pytest.raises(error) as raised:
        call()
    message = str(raised.value)
    for part in (*parts, HERE):
        assert part in message, f"{part!r} missing from {message!r}"
    assert _state() == before


def test_valid_calls_still_work() -> None:
    decoder, parameters = _decoder()
    as_list = decoder.generate(parameters, [1, 2], 2, np.random.default_rng(3))
    assert decoder.generate(parameters, np.array([1, 2]), 2, np.random.default_rng(3)) == as_list
    numpy_ints: Any = (np.int64(1), 2)
    numpy_count: Any = np.int64(2)
    assert decoder.generate(parameters, numpy_ints, numpy_count, np.random.default_rng(3)) == as_list
    assert decoder.generate(parameters, [4], 0, np.random.default_rng(0)) == [4]
    assert choose([0.0, 3.0, 1.0], np.random.default_rng(0), temperature=np.float64(0.0)) == 1
    numpy_top_k: Any = np.int64(1)
    assert choose(np.array([[0.0, 3.0, 1.0]]), np.random.default_rng(0), top_k=numpy_top_k) == 1
    path, layer, template = _saved(_CHECKPOINT_DIR[0])
    loaded = ckpt.load(path, layer, template, rename={"weights": "weights", "bias": "bias"})
    assert [t.tolist() for _, t in loaded] == [t.tolist() for _, t in template]
    assert ckpt.load(path, layer, template, rename=lambda name: name) is not None
    assert Adam(0.1, epsilon=1e-12).epsilon == 1e-12
    # A refused plugin leaves no trace: its name is free, and a fresh registry takes a sound one under it.
    assert "broken" not in _registry().plugins()
    assert Registry().register(_plugin("topos_optimizers", {"mine": Sgd}), "broken") == "broken"
