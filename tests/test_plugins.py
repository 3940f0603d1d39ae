"""The plugin machinery: three seams, built-ins through the same hooks, atomic validation.

Every refusal is checked twice: the error names the plugin and the problem, and the
registry afterwards is exactly what it was before (same plugins, same tables).
"""

from __future__ import annotations

import importlib.metadata
import sys
import types
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from topos import ElementError, ElementType, PluginValidationError, Sgd, Tape, Value, bf16, f32, f64
from topos.optim import Optimizer, OptimizerFactory
from topos.plugins import (
    SEAMS,
    LayerFactory,
    PluginLoadWarning,
    Registry,
    UnknownElementError,
    UnknownNameError,
    builtin_layers,
    element_type,
    element_types,
    hookimpl,
    layers,
    optimizer,
    optimizers,
    registry,
)

f16 = ElementType("f16", np.float16, np.float32, np.float32, "f16")


def view(registry: Registry) -> tuple[object, ...]:
    """Everything observable about a registry, to check that a refusal changed nothing."""
    owners = tuple(
        (seam, name, registry.owner(seam, name))
        for seam, table in (
            ("topos_element_types", registry.element_types()),
            ("topos_optimizers", registry.optimizers()),
            ("topos_layers", registry.layers()),
        )
        for name in table
    )
    return (
        tuple(registry.plugins()),
        tuple(registry.element_types().items()),
        tuple(registry.optimizers().items()),
        tuple(registry.layers().items()),
        owners,
    )


def refused(registry: Registry, plugin: object, name: str, *fragments: str) -> PluginValidationError:
    before = view(registry)
    with pytest.raises(PluginValidationError) as caught:
        registry.register(plugin, name)
    message = str(caught.value)
    assert f"plugin {name!r}" in message, message
    for fragment in fragments:
        assert fragment in message, message
    assert view(registry) == before, "a refused plugin changed the registry"
    return caught.value


class Elements:
    def __init__(self, *items: object) -> None:
        self.items = list(items)

    @hookimpl
    def topos_element_types(self) -> Sequence[object]:
        return self.items


class Optimizers:
    def __init__(self, table: object) -> None:
        self.table = table

    @hookimpl
    def topos_optimizers(self) -> object:
        return self.table


class Layers:
    def __init__(self, table: object) -> None:
        self.table = table

    @hookimpl
    def topos_layers(self) -> object:
        return self.table


class Scale:
    """A tiny layer: multiplies by a recorded parameter."""

    def __init__(self, tape: Tape, factor: float) -> None:
        self.factor = tape.parameter(factor)

    def __call__(self, input: Value) -> Value:
        return input * self.factor.broadcast(input.shape)


# ----------------------------------------------------------------- the built-ins


def test_builtins_are_registered_through_the_same_hooks() -> None:
    default = registry()
    assert default.plugins()[:3] == [
        "topos.plugins.builtin_elements",
        "topos.plugins.builtin_optimizers",
        "topos.plugins.builtin_layers",
    ]
    assert default.owner("topos_element_types", "bf16") == "topos.plugins.builtin_elements"
    assert default.owner("topos_optimizers", "adamw") == "topos.plugins.builtin_optimizers"
    assert {"f32": f32, "f64": f64, "bf16": bf16}.items() <= dict(element_types()).items()
    assert {"sgd", "adam", "adamw"} <= set(optimizers())
    assert SEAMS == ("topos_element_types", "topos_optimizers", "topos_layers")


def test_the_facade_is_typed_and_sorted() -> None:
    made: Optimizer = optimizer("sgd")(learning_rate=0.1)
    assert isinstance(made, Sgd) and made.learning_rate == 0.1
    assert element_type("f64") is f64
    assert list(optimizers()) == sorted(optimizers())
    assert list(element_types()) == sorted(element_types())
    with pytest.raises(TypeError):
        optimizers()["mine"] = Sgd  # type: ignore[index]  # the tables are read-only views


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(UnknownElementError, match=r"no element type is named 'f8'; known: .*bf16, f32, f64") as caught:
        element_type("f8")
    assert isinstance(caught.value, ElementError) and isinstance(caught.value, LookupError)
    with pytest.raises(UnknownNameError, match=r"no optimizer is named 'rmsprop'; known: adam, adamw, sgd"):
        optimizer("rmsprop")
    with pytest.raises(UnknownNameError, match="no layer is named 'linear'"):
        Registry().layer("linear")


# ----------------------------------------------------------------- a good plugin


def test_a_plugin_adds_to_each_seam_and_is_used_by_name() -> None:
    reg = Registry.with_builtins()

    class Everything:
        @hookimpl
        def topos_element_types(self) -> Sequence[ElementType]:
            return [f16]

        @hookimpl
        def topos_optimizers(self) -> Mapping[str, OptimizerFactory]:
            return {"plain": Sgd}

        @hookimpl
        def topos_layers(self) -> Mapping[str, LayerFactory]:
            return {"scale": Scale}

    assert reg.register(Everything(), "everything") == "everything"
    assert reg.element_type("f16") is f16
    assert reg.owner("topos_layers", "scale") == "everything"

    def build(tape: Tape) -> tuple[Value, Value]:
        layer = reg.layer("scale")(tape, 3.0)
        x = tape.input([1.0, 2.0])
        return x, layer(x)

    network, (_, y) = Tape.record(build, element=reg.element_type("f16"))
    assert network.forward(network.parameters()).of(y).tolist() == [3.0, 6.0]
    assert isinstance(reg.optimizer("plain")(learning_rate=0.5), Sgd)


def test_a_module_plugin_with_specname() -> None:
    module = types.ModuleType("renamed_plugin")

    def plain() -> Mapping[str, OptimizerFactory]:
        return {"renamed": Sgd}

    module.contribute = hookimpl(specname="topos_optimizers")(plain)  # type: ignore[attr-defined]
    reg = Registry()
    reg.register(module)
    assert reg.plugins() == ["renamed_plugin"]
    assert reg.optimizer("renamed") is Sgd


# ----------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("plugin", "fragments"),
    [
        (Elements("f16"), ["returned a str, not an ElementType"]),
        (Elements(f16, object()), ["returned a object, not an ElementType"]),
        (Optimizers([Sgd]), ["topos_optimizers must return a mapping", "got list"]),
        (Optimizers({"fast": 3}), ["'fast'", "not callable"]),
        (Optimizers({7: Sgd}), ["optimizer name 7"]),
        (Optimizers({"": Sgd}), ["optimizer name ''"]),
        (Layers({"dense": "Linear"}), ["'dense'", "not callable"]),
        (Layers(None), ["topos_layers must return a mapping", "got NoneType"]),
    ],
    ids=["element-str", "element-object", "optimizers-list", "not-callable", "name-int", "name-empty",
         "layer-str", "layers-none"],
)
def test_malformed_returns_are_refused(plugin: object, fragments: list[str]) -> None:
    refused(Registry.with_builtins(), plugin, "bad", *fragments)


def test_elements_must_be_a_sequence() -> None:
    class Single:
        @hookimpl
        def topos_element_types(self) -> object:
            return f16

    refused(Registry.with_builtins(), Single(), "single", "must return a sequence of ElementType", "got ElementType")


def test_an_element_without_a_numpy_dtype_is_refused() -> None:
    with pytest.raises(ElementError, match="needs a numpy dtype"):
        ElementType("nothing", None, np.float32, np.float32, "f32")
    with pytest.raises(ElementError, match="floating numpy dtype"):
        ElementType("int8", np.int8, np.int8, np.int32, "i8")

    class NoDtype:
        @hookimpl
        def topos_element_types(self) -> Sequence[ElementType]:
            return [ElementType("nothing", None, np.float32, np.float32, "f32")]

    error = refused(Registry.with_builtins(), NoDtype(), "nodtype", "raised ElementError", "needs a numpy dtype")
    assert isinstance(error.__cause__, ElementError)


@pytest.mark.parametrize(
    ("plugin", "fragments"),
    [
        (Optimizers({"adam": Sgd}), ["optimizer name 'adam' is already registered by plugin 'topos.plugins.builtin_optimizers'"]),
        (Elements(ElementType("f32", np.float32, np.float32, np.float64, "f32")),
         ["element type name 'f32' is already registered by plugin 'topos.plugins.builtin_elements'"]),
        (Elements(f16, f16), ["element type name 'f16' is already registered by itself, twice"]),
    ],
    ids=["optimizer", "element", "twice"],
)
def test_name_clashes_are_refused(plugin: object, fragments: list[str]) -> None:
    refused(Registry.with_builtins(), plugin, "clash", *fragments)


def test_a_clash_with_another_plugin_names_both() -> None:
    reg = Registry.with_builtins()
    reg.register(Optimizers({"lion": Sgd}), "first")
    refused(reg, Optimizers({"lion": Sgd}), "second", "'lion' is already registered by plugin 'first'")
    refused(reg, Elements(f16), "first", "a plugin of that name is already registered")


def test_sealed_seams_cannot_be_extended() -> None:
    class Opcodes:
        @hookimpl
        def topos_opcodes(self) -> list[str]:
            return ["Softsign"]

    class Backends:  # not even marked: the name alone is refused
        def topos_backends(self) -> list[str]:
            return ["cuda"]

    class Fusions:
        @hookimpl
        def add_fusion(self) -> list[str]:
            return ["conv"]

    reg = Registry.with_builtins()
    for plugin, hook in ((Opcodes(), "topos_opcodes"), (Backends(), "topos_backends"), (Fusions(), "add_fusion")):
        refused(reg, plugin, "sealed", f"{hook!r} is not a topos hook", "opcodes, fusions and backends are sealed")


def test_an_unmarked_seam_function_is_refused() -> None:
    class Forgot:
        def topos_optimizers(self) -> Mapping[str, OptimizerFactory]:
            return {"forgot": Sgd}

    refused(Registry.with_builtins(), Forgot(), "forgot", "'topos_optimizers' is not marked with @topos.plugins.hookimpl")


def test_an_implementation_with_arguments_is_refused() -> None:
    class Arguments:
        @hookimpl
        def topos_optimizers(self, config: object) -> Mapping[str, OptimizerFactory]:
            return {"args": Sgd}

    refused(Registry.with_builtins(), Arguments(), "arguments", "config")


def test_a_plugin_that_raises_is_named_and_nothing_of_it_stays() -> None:
    class HalfBroken:
        @hookimpl
        def topos_element_types(self) -> Sequence[ElementType]:
            return [f16]  # fine on its own: must not stay behind

        @hookimpl
        def topos_optimizers(self) -> Mapping[str, OptimizerFactory]:
            raise RuntimeError("no network at import time")

    reg = Registry.with_builtins()
    error = refused(reg, HalfBroken(), "halfbroken", "raised RuntimeError in topos_optimizers: no network at import time")
    assert isinstance(error.__cause__, RuntimeError)
    assert "f16" not in reg.element_types()
    # The rest keeps working, and the name is free again.
    reg.register(Elements(f16), "halfbroken")
    assert reg.element_type("f16") is f16


# ----------------------------------------------------------------- entry points


class FakeDistribution:
    name = "topos-fake"
    version = "1.2.3"


@pytest.fixture
def entry_point_modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[dict[str, object]], None]]:
    """Install fake plugin modules and matching ``topos`` entry points (no packages needed)."""

    def install(plugins: dict[str, object]) -> None:
        points = []
        for name, plugin in plugins.items():
            module_name = f"fake_topos_plugin_{name}"
            if plugin is not None:
                module = types.ModuleType(module_name)
                for attribute, value in vars(plugin).items():
                    if not attribute.startswith("__"):
                        setattr(module, attribute, value)
                monkeypatch.setitem(sys.modules, module_name, module)
            point = importlib.metadata.EntryPoint(name, module_name, "topos")
            points.append(point)

        def entry_points(group: str) -> list[Any]:
            return [p for p in points if p.group == group]

        monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)

    yield install


def test_entry_points_load_in_name_order_and_a_broken_one_is_skipped(
    entry_point_modules: Callable[[dict[str, object]], None],
) -> None:
    def good() -> Mapping[str, OptimizerFactory]:
        return {"good": Sgd}

    def raising() -> Mapping[str, OptimizerFactory]:
        raise ValueError("bad config")

    def other() -> Sequence[ElementType]:
        return [f16]

    entry_point_modules(
        {
            "zeta": types.SimpleNamespace(topos_optimizers=hookimpl(good)),
            "broken": types.SimpleNamespace(topos_optimizers=hookimpl(raising)),
            "missing": None,  # the module does not import
            "alpha": types.SimpleNamespace(topos_element_types=hookimpl(other)),
        }
    )
    reg = Registry.with_builtins()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = reg.load_entry_points()
    assert loaded == ["alpha", "zeta"]
    assert reg.optimizer("good") is Sgd and reg.element_type("f16") is f16
    messages = [str(w.message) for w in caught if issubclass(w.category, PluginLoadWarning)]
    assert len(messages) == 2
    assert "topos plugin 'broken' was not loaded: plugin 'broken' raised ValueError in topos_optimizers: bad config" in messages[0]
    assert "topos plugin 'missing' was not loaded: ModuleNotFoundError" in messages[1]
    assert [f.plugin for f in reg.failures()] == ["broken", "missing"]


def test_an_entry_point_claiming_a_builtin_name_is_skipped(
    entry_point_modules: Callable[[dict[str, object]], None],
) -> None:
    def takeover() -> Mapping[str, OptimizerFactory]:
        return {"adam": Sgd}

    entry_point_modules({"takeover": types.SimpleNamespace(topos_optimizers=hookimpl(takeover))})
    reg = Registry.with_builtins()
    with pytest.warns(PluginLoadWarning, match="'adam' is already registered by plugin 'topos.plugins.builtin_optimizers'"):
        assert reg.load_entry_points() == []
    assert reg.optimizer("adam").__name__ == "Adam"


# ----------------------------------------------------------------- built-in layers


def test_builtin_layers_register_lazily_from_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    assert layers() == {} or all(callable(f) for f in layers().values())
    fake = types.ModuleType("fake_topos_nn")
    monkeypatch.setattr(fake, "LAYERS", {"scale": Scale}, raising=False)
    monkeypatch.setitem(sys.modules, "fake_topos_nn", fake)
    monkeypatch.setattr(builtin_layers, "LAYER_MODULE", "fake_topos_nn")
    reg = Registry.with_builtins()
    assert reg.layer("scale") is Scale
    assert reg.owner("topos_layers", "scale") == "topos.plugins.builtin_layers"
    # The table is read when the registry is built, not when the plugin module is imported.
    monkeypatch.setattr(fake, "LAYERS", {"scale": Scale, "linear": Scale})
    assert set(Registry.with_builtins().layers()) == {"scale", "linear"}
    monkeypatch.delattr(fake, "LAYERS")
    with pytest.raises(PluginValidationError, match=r"builtin_layers' raised LookupError .*no layer table 'LAYERS'"):
        Registry.with_builtins()
    monkeypatch.setattr(builtin_layers, "LAYER_MODULE", "not_an_installed_module_xyz")
    assert Registry.with_builtins().layers() == {}


def test_import_topos_leaves_the_layer_table_unread() -> None:
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    probe = (
        "import sys, topos, topos.plugins.builtin_layers\n"
        "assert 'topos.nn' not in sys.modules, sorted(m for m in sys.modules if m.startswith('topos.nn'))\n"
        "from topos.plugins import layer\n"
        "assert layer('linear').__module__ == 'topos.nn.linear'\n"
    )
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=root, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


def test_registry_repr_is_deterministic() -> None:
    reg = Registry()
    reg.register(Elements(f16), "half")
    reg.register(Optimizers({"b": Sgd, "a": Sgd}), "two")
    assert repr(reg) == "Registry(1 element types, 2 optimizers, 0 layers, plugins ['half', 'two'])"
    assert list(reg.optimizers()) == ["a", "b"]


def test_the_same_plugin_object_twice_is_refused() -> None:
    reg = Registry()
    plugin = Elements(f16)
    reg.register(plugin, "once")
    refused(reg, plugin, "again", "already registered")
    assert reg.plugins() == ["once"]


def test_the_documented_optimizer_runs_and_registers() -> None:
    from pathlib import Path

    from topos import f64
    from topos.state import Parameters

    text = (Path(__file__).resolve().parent.parent / "docs" / "plugins.md").read_text()
    blocks = text.split("```python\n")[1:]
    optimizer_code = next(b.split("```")[0] for b in blocks if "class RmsProp" in b)
    hook_code = next(b.split("```")[0] for b in blocks if "def topos_optimizers" in b)
    assert len(optimizer_code.strip().splitlines()) <= 32  # "about 20 lines" of logic plus imports
    module = types.ModuleType("docs_rmsprop")
    exec(compile(optimizer_code + hook_code, "docs/plugins.md", "exec"), module.__dict__)
    reg = Registry.with_builtins()
    reg.register(module)
    rmsprop = reg.optimizer("rmsprop")(learning_rate=0.05)

    def build(tape: Tape) -> tuple[Value, Value]:
        w = tape.parameter([3.0, -2.0])
        return w, ((w - 1.0) * (w - 1.0)).sum()

    network, (w, loss) = Tape.record(build, element=f64)
    parameters: Parameters = network.parameters()
    state = rmsprop.init(parameters)
    for _ in range(200):
        gradients = network.forward(parameters).backward(loss).parameters(parameters)
        parameters, state = rmsprop.update(gradients, state, parameters)
    assert np.max(np.abs(parameters.of(w).numpy() - 1.0)) < 0.05
