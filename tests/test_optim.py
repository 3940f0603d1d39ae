"""Optimizers: the conformance suite every registered optimizer runs, then the built-ins' math.

The conformance suite (:mod:`topos.testing`) is parametrized over the registry: the built-ins, every installed
``topos`` entry point, and the example plugin's Lion (registered from ``examples/plugins``
when it is not installed). A plugin optimizer is held to exactly what Adam is held to.
"""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from topos import (
    Adam,
    AdamW,
    Network,
    OptimizerError,
    OptimizerState,
    Parameters,
    ParametersError,
    Sgd,
    Symbol,
    Tape,
    Tensor,
    Value,
    f32,
    f64,
)
from topos.ir.element import ElementType
from topos.optim import Optimizer, schedules
from topos.plugins import Registry, UnknownNameError, optimizer
from topos.testing import check_optimizer

EXAMPLE_PLUGINS = Path(__file__).resolve().parent.parent / "examples" / "plugins"


def conformance_registry() -> Registry:
    registry = Registry.with_builtins()
    registry.load_entry_points()
    if "lion" not in registry.optimizers():
        sys.path.insert(0, str(EXAMPLE_PLUGINS))
        registry.register(importlib.import_module("topos_lion.plugin"), "topos_lion.plugin")
    return registry


REGISTRY = conformance_registry()
NAMES = sorted(REGISTRY.optimizers())


@pytest.mark.parametrize("name", NAMES)
def test_conforms(name: str) -> None:
    # The properties and the learning-rate search are topos.testing's (docs/plugins.md);
    # adamw decays weights by default, so zero gradients may shrink its parameters.
    check_optimizer(REGISTRY.optimizer(name), name=name, weight_decay=name == "adamw")


def mixed(element: ElementType) -> tuple[Network, tuple[Symbol, Symbol, Symbol]]:
    def build(tape: Tape) -> tuple[Value, Value, Value]:
        return tape.parameter(0.5), tape.parameter([1.0, -2.0, 3.0]), tape.parameter([[0.25, -0.5], [1.5, 2.0]])

    return Tape.record(build, element=element)


def gradients_for(parameters: Parameters) -> Parameters:
    return parameters.map(lambda p: p * 0.5 - 0.25)


def snapshot(parameters: Parameters, gradients: Parameters, state: OptimizerState) -> list[bytes]:
    out = [p.bits().tobytes() for _, p in parameters] + [g.bits().tobytes() for _, g in gradients]
    return out + [f"{k}={v.tobytes().hex()}".encode() for k, v in sorted(state.arrays().items())]


# ----------------------------------------------------------------- the built-ins' math


def line() -> tuple[Network, tuple[Symbol, Symbol, Symbol, Symbol]]:
    def build(tape: Tape) -> tuple[Value, Value, Value, Value]:
        w = tape.parameter(0.0)
        x = tape.input(0.0)
        y = tape.input(0.0)
        error = w * x - y
        return w, x, y, error * error

    return Tape.record(build, element=f64)


def test_sgd_by_name_reproduces_the_readme_step_bit_for_bit() -> None:
    network, (w, x, y, loss) = line()
    samples = [(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]
    by_hand = network.parameters()
    by_name = network.parameters()
    sgd = optimizer("sgd")(learning_rate=0.02)
    state = sgd.init(by_name)
    for step in range(100):
        feeds = dict(zip((x, y), samples[step % 3], strict=True))
        g = network.forward(by_hand, feeds).backward(loss).parameters(by_hand)
        by_hand = by_hand.step(g, lambda w, g: w - g * Tensor(0.02))
        g = network.forward(by_name, feeds).backward(loss).parameters(by_name)
        by_name, state = sgd.update(g, state, by_name)
    assert by_name.of(w).bits() == by_hand.of(w).bits()
    assert abs(by_name.of(w).scalar() - 2.0) < 1e-6


def numpy_steps(rule: Callable[[np.ndarray[Any, Any], int], np.ndarray[Any, Any]], start: np.ndarray[Any, Any],
                steps: int) -> np.ndarray[Any, Any]:
    p = start
    for t in range(steps):
        p = rule(p, t)
    return p


def run_optimizer(opt: Optimizer, start: list[float], gradient: Callable[[Tensor], Tensor], steps: int) -> Tensor:
    def build(tape: Tape) -> Value:
        return tape.parameter(start)

    network, w = Tape.record(build, element=f64)
    parameters = network.parameters()
    state = opt.init(parameters)
    for _ in range(steps):
        gradients = parameters.map(gradient)
        parameters, state = opt.update(gradients, state, parameters)
    return parameters.of(w)


START = [1.5, -0.75, 0.1]


def grad_np(p: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    out: np.ndarray[Any, Any] = p * 2.0 - 1.0
    return out


def grad_tensor(p: Tensor) -> Tensor:
    return p * 2.0 - 1.0


def test_sgd_momentum_and_nesterov_match_the_formula_bit_for_bit() -> None:
    for nesterov in (False, True):
        velocity = np.zeros(3)

        def rule(p: np.ndarray[Any, Any], t: int, nesterov: bool = nesterov) -> np.ndarray[Any, Any]:
            nonlocal velocity
            g = grad_np(p)
            velocity = velocity * 0.9 + g
            direction = g + velocity * 0.9 if nesterov else velocity
            out: np.ndarray[Any, Any] = p - direction * 0.05
            return out

        expected = numpy_steps(rule, np.array(START), 7)
        got = run_optimizer(Sgd(0.05, momentum=0.9, nesterov=nesterov), START, grad_tensor, 7)
        assert got.bits().tolist() == expected.view(np.uint64).tolist()


def test_adam_matches_the_formula_with_carried_powers_bit_for_bit() -> None:
    m = np.zeros(3)
    v = np.zeros(3)
    powers = [1.0, 1.0]

    def rule(p: np.ndarray[Any, Any], t: int) -> np.ndarray[Any, Any]:
        nonlocal m, v
        g = grad_np(p)
        m = m * 0.9 + g * (1.0 - 0.9)
        v = v * 0.999 + (g * g) * (1.0 - 0.999)
        powers[0] *= 0.9
        powers[1] *= 0.999
        direction = (m / (1.0 - powers[0])) / (np.sqrt(v / (1.0 - powers[1])) + 1e-8)
        out: np.ndarray[Any, Any] = p - direction * 0.01
        return out

    expected = numpy_steps(rule, np.array(START), 25)
    got = run_optimizer(Adam(0.01), START, grad_tensor, 25)
    assert got.bits().tolist() == expected.view(np.uint64).tolist()


def test_bias_correction_powers_are_carried_not_recomputed() -> None:
    network, _ = mixed(f32)
    opt = Adam(0.01)
    parameters = network.parameters()
    state = opt.init(parameters)
    carried = 1.0
    for _ in range(50):
        parameters, state = opt.update(gradients_for(parameters), state, parameters)
        carried *= 0.999
    assert state.scalar("second_power").bits().tolist() == [np.float64(carried).view(np.uint64)]
    assert carried != 0.999**50  # so the check above tells carrying from recomputing
    assert state.scalar("second_power").element == f64  # carried wide, whatever the parameters
    assert state.step == 50


def test_adamw_decays_rank_two_by_default_and_follows_a_custom_policy() -> None:
    network, (scalar, vector, matrix) = mixed(f64)
    parameters = network.parameters()
    zero = parameters.map(lambda p: p * 0.0)
    # With zero gradients the Adam direction is 0, so only the decay moves a slot.
    default = AdamW(0.5, decay=0.1)
    moved, _ = default.update(zero, default.init(parameters), parameters)
    before = parameters.of(matrix).numpy()
    assert moved.of(matrix).bits().tolist() == (before - (0.0 + before * 0.1) * 0.5).view(np.uint64).tolist()
    assert moved.of(vector).bits().tolist() == parameters.of(vector).bits().tolist()
    assert moved.of(scalar).bits().tolist() == parameters.of(scalar).bits().tolist()
    chosen = AdamW(0.5, decay=0.1, decay_where=lambda symbol, payload: symbol == vector)
    moved, _ = chosen.update(zero, chosen.init(parameters), parameters)
    assert moved.of(matrix).bits().tolist() == parameters.of(matrix).bits().tolist()
    assert moved.of(vector).tolist() != parameters.of(vector).tolist()


def test_a_schedule_sees_the_step_count() -> None:
    seen: list[int] = []

    def rate(step: int) -> float:
        seen.append(step)
        return 0.1 / (step + 1)

    got = run_optimizer(Sgd(rate), [1.0], lambda p: p * 0.0 + 1.0, 3)
    assert seen == [0, 1, 2]
    assert got.scalar() == 1.0 - 0.1 - 0.05 - 0.1 / 3


def test_schedules() -> None:
    assert [schedules.linear_warmup(0.5, 4)(t) for t in range(6)] == [0.125, 0.25, 0.375, 0.5, 0.5, 0.5]
    cosine = schedules.cosine_decay(1.0, 10, final=0.1)
    assert cosine(0) == 1.0 and cosine(10) == pytest.approx(0.1) and cosine(99) == cosine(10)
    assert schedules.exponential_decay(1.0, 0.5, 2)(5) == 0.25
    assert [schedules.piecewise_constant([2, 4], [1.0, 0.5, 0.25])(t) for t in (0, 2, 3, 4, 9)] == [
        1.0, 0.5, 0.5, 0.25, 0.25]
    warm_then_cos = schedules.linear_warmup(1.0, 2, after=schedules.cosine_decay(1.0, 4))
    assert [warm_then_cos(t) for t in (0, 1, 2, 6)] == [0.5, 1.0, 1.0, 0.0]
    with pytest.raises(OptimizerError, match="ascending"):
        schedules.piecewise_constant([4, 2], [1.0, 0.5, 0.25])


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Sgd(-0.1), "learning_rate"),
        (lambda: Sgd(math.nan), "learning_rate"),
        (lambda: Sgd(0.1, momentum=1.0), "momentum"),
        (lambda: Sgd(0.1, nesterov=True), "nesterov"),
        (lambda: Adam(0.1, b1=1.5), "b1"),
        (lambda: Adam(0.1, b2=-0.1), "b2"),
        (lambda: Adam(0.1, epsilon=-1.0), "epsilon"),
        (lambda: AdamW(0.1, decay=math.inf), "decay"),
    ],
)
def test_bad_hyperparameters_are_refused(build: Callable[[], object], message: str) -> None:
    with pytest.raises(OptimizerError, match=message):
        build()


def test_a_schedule_returning_nan_is_refused_at_its_step() -> None:
    network, _ = mixed(f32)
    opt = Sgd(lambda step: math.nan if step == 1 else 0.1)
    parameters = network.parameters()
    parameters, state = opt.update(gradients_for(parameters), opt.init(parameters), parameters)
    with pytest.raises(OptimizerError, match="at step 1 is nan"):
        opt.update(gradients_for(parameters), state, parameters)


def test_a_state_of_another_optimizer_is_refused() -> None:
    network, _ = mixed(f32)
    parameters = network.parameters()
    with pytest.raises(OptimizerError, match=r"adam.update was handed a state made by sgd.init"):
        Adam(0.1).update(gradients_for(parameters), Sgd(0.1).init(parameters), parameters)


def test_restoring_a_state_that_does_not_fit_names_the_entry() -> None:
    network, _ = mixed(f32)
    state = Adam(0.1).init(network.parameters())
    saved = state.arrays()
    wrong = dict(saved)
    key = sorted(k for k in saved if k.startswith("first/"))[-1]
    wrong[key] = np.zeros((3, 3), dtype=np.float32)
    with pytest.raises(OptimizerError, match=f"'{key}' has shape"):
        state.restored(wrong)
    missing = dict(saved)
    del missing["count"]
    with pytest.raises(OptimizerError, match=r"missing \['count'\]"):
        state.restored(missing)


def test_unknown_optimizer_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match=r"no optimizer is named 'adamm'; known: adam, adamw, sgd"):
        Registry.with_builtins().optimizer("adamm")  # the built-ins only: installed plugins add names


def test_a_state_for_fewer_slots_names_them() -> None:
    network, _ = mixed(f32)
    tape = network.reopen()
    tape.parameter([9.0])
    grown = tape.seal()
    parameters = network.parameters().carried(grown)
    stale = Adam(0.1).init(network.parameters())
    with pytest.raises(ParametersError, match=r"the state was made for slots \[%0, %1, %2\], the parameters hold \[%0, %1, %2, %3\]"):
        Adam(0.1).update(gradients_for(parameters), stale, parameters)


def test_state_round_trips_through_a_checkpoint_by_module_path(tmp_path: Path) -> None:
    from topos import checkpoint
    from topos.nn import Linear

    tape = Tape(f32)
    layer = Linear(tape, np.full((2, 3), 0.5, np.float32), np.zeros(3, np.float32))
    loss = layer(tape.input(np.ones((1, 2), np.float32))).sum()
    network = tape.seal()
    opt = AdamW(0.1)
    parameters = network.parameters()
    state = opt.init(parameters)
    gradients = network.forward(parameters).backward(loss.symbol).parameters(parameters)
    parameters, state = opt.update(gradients, state, parameters)
    entries = checkpoint.snapshot(layer, parameters, state)
    assert "state/tables/first/weights" in entries and "state/scalars/second_power" in entries
    resumed = checkpoint.restore_state(layer, opt.init(parameters), entries)
    straight = opt.update(gradients, state, parameters)
    again = opt.update(gradients, resumed, parameters)
    assert snapshot(straight[0], gradients, straight[1]) == snapshot(again[0], gradients, again[1])
