"""topos.testing: every registered optimizer, element and a layer pass it; each property catches a break.

The registry is the built-ins plus the example plugin (``examples/plugins``, imported from
the checkout), so the plugin's Lion and f16 are held to what the built-ins are held to.
Each negative test builds something broken in one way and checks that the kit names the
property and the reason.
"""

from __future__ import annotations

import importlib
import itertools
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest

from topos import (
    ElementType,
    OptimizerState,
    Parameters,
    Tape,
    Tensor,
    ToposError,
    Value,
    bf16,
    f32,
    f64,
)
from topos.kernels import reference
from topos.nn import Linear
from topos.nn.module import Visitor, bind
from topos.optim import LearningRate, learning_rate_at, zeros_like
from topos.plugins import Registry, hookimpl
from topos.testing import (
    LEARNING_RATES,
    ConformanceError,
    check_element_type,
    check_layer,
    check_optimizer,
)

ROOT = Path(__file__).resolve().parent.parent


def registry() -> Registry:
    sys.path.insert(0, str(ROOT / "examples" / "plugins"))
    found = Registry.with_builtins()
    found.register(importlib.import_module("topos_lion.plugin"), "topos_lion.plugin")
    return found


REGISTRY = registry()
DECAYING = {"adamw"}  # decays weights by default: zero gradients may shrink parameters


def failure(error: pytest.ExceptionInfo[ConformanceError], name: str) -> str:
    report = error.value.report
    assert not report.of(name).passed, str(report)
    assert f"FAILED  {name}: " in str(error.value)
    return report.of(name).detail


# ----------------------------------------------------------------- what passes


@pytest.mark.parametrize("name", sorted(REGISTRY.optimizers()))
def test_every_registered_optimizer_conforms(name: str) -> None:
    report = check_optimizer(REGISTRY.optimizer(name), name=name, weight_decay=name in DECAYING)
    assert report.passed and report.subject == name
    assert report.names() == (
        "pure", "aligned", "zero gradient", "checkpoint", "foreign state", "quadratic", "ill-conditioned")


def test_the_grid_is_a_log_grid_from_one_to_1e_4() -> None:
    assert LEARNING_RATES[0] == 1.0 and LEARNING_RATES[-1] == pytest.approx(1e-4)
    ratios = {round(a / b, 12) for a, b in itertools.pairwise(LEARNING_RATES)}
    assert ratios == {round(10 ** (1 / 3), 12)}


@attrs.frozen
class Adagrad:
    """A correct Adagrad: its rate is on a larger scale than Adam's, which the grid covers."""

    kind: ClassVar[str] = "adagrad"
    learning_rate: LearningRate
    epsilon: float = 1e-10

    def init(self, parameters: Parameters) -> OptimizerState:
        return OptimizerState.start(self.kind, parameters, {"sum": zeros_like(parameters)})

    def update(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters
    ) -> tuple[Parameters, OptimizerState]:
        state.check(self.kind, gradients, parameters)
        lr = learning_rate_at(self.kind, self.learning_rate, state.step)
        total = state.table("sum").step(gradients, lambda s, g: s + g * g)
        direction = gradients.step(total, lambda g, s: g / (s.sqrt() + self.epsilon))
        return parameters.step(direction, lambda p, d: p - d * lr), state.advanced(tables={"sum": total})


def test_an_outside_adagrad_conforms() -> None:
    report = check_optimizer(Adagrad)
    assert "learning rate" in report.of("quadratic").detail


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=lambda e: e.name)
def test_the_builtin_elements_conform(element: ElementType) -> None:
    assert check_element_type(element).passed


def test_the_plugin_f16_conforms_like_a_builtin(tmp_path: Path) -> None:
    from topos import checkpoint

    f16 = REGISTRY.element_type("f16")
    report = check_element_type(f16)
    assert report.passed and not report.failures(), str(report)
    # The checker's tolerance comes from f16's unit roundoff (2**-11) by the documented
    # rule, not from a fallback: cube root / 3 on the 1-2-5 ladder is 2e-2.
    assert "at tolerance 0.02 (from the unit roundoff 0.000488 of float16)" in report.of("check_grad").detail
    # The checkpoint property really stored F16 on disk, not a widened copy.
    checkpoint.write(tmp_path / "probe.safetensors", {"x": Tensor(np.array([1.0, -0.1]), element=f16)})
    raw = (tmp_path / "probe.safetensors").read_bytes()
    assert b'"dtype":"F16"' in raw


def test_linear_conforms() -> None:
    report = check_layer(Linear, [[1.0, 2.0, 0.5], [3.0, 4.0, -1.0]], [0.5, 0.5, 0.25], input=[[1.0, -1.0], [0.5, 2.0]])
    assert report.of("named").detail == "2 parameters named: weights, bias"


class Scale:
    """A layer a plugin registers: multiplies by a recorded factor."""

    def __init__(self, tape: Tape, factor: float) -> None:
        self.factor = tape.parameter(factor).symbol

    def __call__(self, input: Value) -> Value:
        return input * bind(input, self.factor).broadcast(input.shape)

    def visit(self, visitor: Visitor) -> None:
        visitor.parameter("factor", self.factor)


class ScalePlugin:
    @hookimpl
    def topos_layers(self) -> Mapping[str, Any]:
        return {"scale": Scale}


def test_a_plugin_layer_found_by_name_conforms() -> None:
    reg = Registry.with_builtins()
    reg.register(ScalePlugin(), "scale")
    assert check_layer(reg.layer("scale"), 3.0, input=[1.0, -2.0], name="scale").passed


# ----------------------------------------------------------------- optimizers, broken one way each


@attrs.define
class Sloppy:
    """Plain SGD that can be broken in one chosen way."""

    kind: ClassVar[str] = "sloppy"
    learning_rate: LearningRate
    flaw: str = ""
    calls: list[int] = attrs.field(factory=list)
    memory: dict[int, Parameters] = attrs.field(factory=dict)

    def init(self, parameters: Parameters) -> OptimizerState:
        return OptimizerState.start(self.kind, parameters, {"velocity": zeros_like(parameters)})

    def update(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters
    ) -> tuple[Parameters, OptimizerState]:
        if self.flaw != "unchecked":
            state.check(self.kind, gradients, parameters)
        lr = learning_rate_at(self.kind, self.learning_rate, state.step)
        self.calls.append(1)
        if self.flaw == "drifts":  # a hidden counter leaks into the result
            lr = lr * (1.0 + 1e-3 * len(self.calls))
        if self.flaw == "ascends":
            lr = -lr
        new = parameters.step(gradients, lambda p, g: p - g * lr)
        if self.flaw == "pushes":
            new = new.map(lambda p: p + 1e-3)
        velocity = state.table("velocity")
        if self.flaw == "remembers":  # the real velocity lives outside the state
            velocity = self.memory.get(id(state), velocity)
            velocity = velocity.step(gradients, lambda v, g: v * 0.5 + g)
            new = new.step(velocity, lambda p, v: p - v * lr)
            following = state.advanced(tables={"velocity": zeros_like(parameters)})
            self.memory[id(following)] = velocity
            return new, following
        if self.flaw == "stalls":  # never counts its steps
            return new, OptimizerState(state.kind, state.slots, {"velocity": velocity}, state.scalars)
        return new, state.advanced(tables={"velocity": velocity})


def sloppy(flaw: str) -> Any:
    return lambda learning_rate: Sloppy(learning_rate, flaw)


def test_the_unbroken_sloppy_conforms() -> None:
    assert check_optimizer(sloppy("")).passed


@pytest.mark.parametrize(
    ("flaw", "prop", "message"),
    [
        ("drifts", "pure", "two updates with the same inputs gave different bits"),
        ("stalls", "aligned", "f32: state.step is 0 after 1 updates"),
        ("pushes", "zero gradient", "zero gradients moved slot %0"),
        ("remembers", "checkpoint", "the state restored from state.arrays() continues differently"),
        ("unchecked", "foreign state", "a state made for another network was accepted"),
        ("ascends", "quadratic", "no learning rate of the grid reduced the loss 1e+04-fold"),
        ("ascends", "ill-conditioned", "no learning rate of the grid reduced the loss 1e+03-fold"),
    ],
)
def test_a_broken_optimizer_is_caught(flaw: str, prop: str, message: str) -> None:
    with pytest.raises(ConformanceError) as error:
        check_optimizer(sloppy(flaw), name=f"sloppy-{flaw}")
    assert message in failure(error, prop)
    assert isinstance(error.value, AssertionError) and isinstance(error.value, ToposError)
    assert error.value.detail.startswith(f"optimizer sloppy-{flaw}: ")


def test_a_decaying_optimizer_must_still_shrink_towards_zero() -> None:
    with pytest.raises(ConformanceError) as error:
        check_optimizer(sloppy("pushes"), weight_decay=True)
    assert "zero gradients moved slot %0 away from zero" in failure(error, "zero gradient")


def test_a_failed_search_lists_every_rate() -> None:
    with pytest.raises(ConformanceError) as error:
        check_optimizer(sloppy("ascends"))
    detail = failure(error, "quadratic")
    assert detail.count(": ") >= len(LEARNING_RATES) and "under cosine decay" in detail


# ----------------------------------------------------------------- elements, broken one way each


def test_a_nondeterministic_element_is_caught() -> None:
    counter = itertools.count()

    def noisy(a: Any, b: Any, element: ElementType) -> Any:
        return reference.matmul(a, b, element) + next(counter) * 1e-9

    element = ElementType("noisy", np.float64, np.float64, np.float64, "f64", emittable=False, gemm=noisy)
    with pytest.raises(ConformanceError) as error:
        check_element_type(element)
    assert failure(error, "interprets") == "two runs gave different bits"


def test_an_element_with_a_wrong_product_fails_the_gradient_check() -> None:
    def biased(a: Any, b: Any, element: ElementType) -> Any:
        return reference.matmul(a, b, element) * 1.01

    element = ElementType("biased", np.float64, np.float64, np.float64, "f64", emittable=False, gemm=biased)
    with pytest.raises(ConformanceError) as error:
        check_element_type(element)
    assert failure(error, "check_grad").startswith("check_grad failed:")
    assert error.value.report.of("gradient").passed  # both readings use the same (wrong) product


def test_an_element_that_cannot_be_emitted_must_say_so() -> None:
    element = ElementType("quiet", np.float64, np.float64, np.float64, "f64", emittable=False)
    try:
        found = check_element_type(element)
    except ConformanceError as error:
        found = error.report
    assert found.of("emits").detail == "not emittable, and emission says so"


# ----------------------------------------------------------------- layers, broken one way each


class Hollow(Scale):
    def __call__(self, input: Value) -> Value:
        return input


class Hidden(Scale):
    def __init__(self, tape: Tape, factor: float) -> None:
        super().__init__(tape, factor)
        self.offset = tape.parameter(1.0).symbol

    def __call__(self, input: Value) -> Value:
        return super().__call__(input) + bind(input, self.offset).broadcast(input.shape)


class Fickle(Scale):
    times = itertools.count()

    def __call__(self, input: Value) -> Value:
        out = super().__call__(input)
        return out * 1.0 if next(self.times) % 2 else out


class Ignored(Scale):
    def __call__(self, input: Value) -> Value:
        return input * 2.0


@pytest.mark.parametrize(
    ("layer", "prop", "message"),
    [
        (Hollow, "records", "the layer recorded nothing after its input"),
        (Hidden, "named", "parameters recorded but not reported by visit: ['%1']"),
        (Fickle, "deterministic", "recording twice gave different describe() text"),
        (Ignored, "gradient", "factor: the gradient is zero everywhere; the output ignores it"),
    ],
)
def test_a_broken_layer_is_caught(layer: type[Scale], prop: str, message: str) -> None:
    with pytest.raises(ConformanceError) as error:
        check_layer(layer, 3.0, input=[1.0, -2.0])
    assert message in failure(error, prop)


def test_report_lookup_names_the_known_properties() -> None:
    report = check_layer(Scale, 3.0, input=[1.0])
    with pytest.raises(KeyError, match="known: records, named, deterministic, gradient"):
        report.of("nope")
