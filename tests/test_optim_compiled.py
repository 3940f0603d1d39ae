"""The optimizer update compiled by XLA (``topos.optim.compiled``) against the numpy update.

The XLA road is an envelope road (docs/acceleration.md): the jax formula performs the numpy
update's operations in its order with its roundings, but XLA:CPU may contract ``a * b + c``
into one fused multiply-add (one rounding fewer) and flushes denormals. Values here stay in
[0.25, 2] in magnitude, so no denormal arises and the difference is the contractions alone.

The bound checked per update, from identical inputs, with ``eps`` the element's unit
roundoff and every term taken in f64 from the numpy road's values:

- moments: ``|dm| <= 6 eps (|m b1| + |g (1 - b1)|)`` and ``|dv| <= 6 eps (|v b2| + |g^2 (1 - b2)|)``:
  a sum of two products, the summation envelope ``2 (K + 1) eps sum|terms|`` with K = 2;
- parameters: ``|dp| <= 6 eps (|p| + lr |d|) + lr * 16 eps (|d| + |dm_bound| / (c1 (sqrt(v / c2) + e)))``:
  the same envelope for ``p - lr d``, plus what the moments' difference and the four
  correctly rounded operations of the direction ``d`` (two divisions, a square root, an
  addition; at most 2 eps each on a contraction's side) can move it; AdamW adds
  ``p decay`` to ``d``, one more contractible product.

SGD's results are one product and one sum each (``p - lr g``, ``v mu + g``), bounded the
same way with their terms.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ELEMENTS, bits, each_element, here

from topos import Parameters, Tape, Tensor, XlaUnavailableError, f32, f64
from topos.ir.element import ElementType
from topos.optim import Adam, AdamW, CompiledUpdate, Optimizer, Sgd, compiled, schedules

Array = np.ndarray[Any, Any]
SHAPES: tuple[tuple[int, ...], ...] = ((37,), (3, 5), (1,), (2, 65), (4, 4, 3))
EXAMPLE_PLUGINS = Path(__file__).resolve().parent.parent / "examples" / "plugins"


def table(element: ElementType, rng: np.random.Generator) -> Parameters:
    def magnitudes(shape: tuple[int, ...]) -> Array:
        size: Array = rng.uniform(0.25, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
        return size.astype(element.dtype)

    network, _ = Tape.record(lambda t: [t.parameter(magnitudes(shape)) for shape in SHAPES], element=element)
    return network.parameters()


def like(template: Parameters, rng: np.random.Generator) -> Parameters:
    element = template.payloads()[0].element
    return template.map(
        lambda p: Tensor((rng.uniform(0.25, 2.0, p.shape.axes) * rng.choice([-1.0, 1.0], p.shape.axes)).astype(element.dtype), element)
    )


def wide(tensor: Tensor) -> Array:
    return tensor.numpy().astype(np.float64)


def within(name: str, got: Tensor, expected: Tensor, bound: Array) -> None:
    assert got.shape == expected.shape and got.element == expected.element, name
    gap = np.abs(wide(got) - wide(expected))
    worst = float(np.max(gap - bound))
    assert worst <= 0.0, f"{name}: off by {float(np.max(gap))} where the bound allows {float(np.min(bound))}..."


def check_update(
    optimizer: Optimizer, element: ElementType, seed: int, steps: int = 3, road: CompiledUpdate | None = None
) -> None:
    rng = np.random.default_rng(seed)
    eps = element.roundoff
    road = compiled(optimizer) if road is None else road
    assert road.on_xla
    parameters = table(element, rng)
    state = optimizer.init(parameters)
    for _ in range(steps):
        gradients = like(parameters, rng)
        fast_p, fast_s = road.update(gradients, state, parameters)
        slow_p, slow_s = optimizer.update(gradients, state, parameters)
        assert fast_s.step == slow_s.step and fast_s.kind == slow_s.kind
        assert {k: v.bits().tolist() for k, v in fast_s.scalars.items()} == {
            k: v.bits().tolist() for k, v in slow_s.scalars.items()
        }
        for slot, (symbol, p) in enumerate(parameters):
            g = wide(gradients.payloads()[slot])
            pw = wide(p)
            if isinstance(optimizer, Sgd):
                lr = float(optimizer.learning_rate(state.step)) if callable(optimizer.learning_rate) else optimizer.learning_rate
                if optimizer.momentum:
                    v = wide(state.table("velocity").payloads()[slot])
                    mu = optimizer.momentum
                    velocity_bound = 6 * eps * (np.abs(v * mu) + np.abs(g))
                    within(f"velocity %{symbol.index}", fast_s.table("velocity").payloads()[slot],
                           slow_s.table("velocity").payloads()[slot], velocity_bound)
                    d = wide(slow_s.table("velocity").payloads()[slot])
                    moved = velocity_bound * (1 + mu)
                    if optimizer.nesterov:
                        d = g + d * mu
                    step_bound = 6 * eps * (np.abs(pw) + lr * np.abs(d)) + lr * (moved + 6 * eps * np.abs(d))
                else:
                    step_bound = 6 * eps * (np.abs(pw) + lr * np.abs(g))
                within(f"parameter %{symbol.index}", fast_p.payloads()[slot], slow_p.payloads()[slot], step_bound)
                continue
            assert isinstance(optimizer, (Adam, AdamW))
            b1, b2, e = optimizer.b1, optimizer.b2, optimizer.epsilon
            lr = float(optimizer.learning_rate(state.step)) if callable(optimizer.learning_rate) else optimizer.learning_rate
            m0, v0 = wide(state.table("first").payloads()[slot]), wide(state.table("second").payloads()[slot])
            m_bound = 6 * eps * (np.abs(m0 * b1) + np.abs(g * (1 - b1)))
            v_bound = 6 * eps * (np.abs(v0 * b2) + np.abs(g * g * (1 - b2)))
            within(f"first %{symbol.index}", fast_s.table("first").payloads()[slot], slow_s.table("first").payloads()[slot], m_bound)
            within(f"second %{symbol.index}", fast_s.table("second").payloads()[slot], slow_s.table("second").payloads()[slot], v_bound)
            c1 = 1.0 - slow_s.scalar("first_power").scalar()
            c2 = 1.0 - slow_s.scalar("second_power").scalar()
            m, v = wide(slow_s.table("first").payloads()[slot]), wide(slow_s.table("second").payloads()[slot])
            denominator = np.sqrt(v / c2) + e
            d = (m / c1) / denominator
            if isinstance(optimizer, AdamW) and optimizer.decay and optimizer.decay_where(symbol, p):
                d = d + pw * optimizer.decay
                d_bound = 16 * eps * (np.abs(d) + m_bound / (c1 * denominator) + np.abs(pw * optimizer.decay))
            else:
                d_bound = 16 * eps * (np.abs(d) + m_bound / (c1 * denominator))
            p_bound = 6 * eps * (np.abs(pw) + lr * np.abs(d)) + lr * d_bound
            within(f"parameter %{symbol.index}", fast_p.payloads()[slot], slow_p.payloads()[slot], p_bound)
        parameters, state = slow_p, slow_s


def optimizers() -> list[Optimizer]:
    return [
        Sgd(0.05),
        Sgd(schedules.cosine_decay(0.1, 4), momentum=0.9),
        Sgd(0.03, momentum=0.8, nesterov=True),
        Adam(1e-2),
        Adam(0.3, b1=0.0, b2=0.5, epsilon=1e-3),
        AdamW(1e-2, decay=0.1),
        AdamW(schedules.linear_warmup(0.05, 2), decay=0.25, decay_where=lambda s, p: s.index % 2 == 0),
    ]


@each_element
@pytest.mark.parametrize("index", range(7))
def test_compiled_update_is_inside_the_xla_envelope_of_the_numpy_update(element: ElementType, index: int) -> None:
    check_update(optimizers()[index], element, seed=300 + index)


def test_the_bound_is_tight_enough_to_catch_a_changed_formula() -> None:
    # A learning rate off by 2**-12 (relative) moves each parameter by about lr * 2**-12,
    # far more than the contractions may: the same check must fail.
    with pytest.raises(AssertionError, match="parameter"):
        check_update(Adam(1e-2), f32, seed=5, road=compiled(Adam(1e-2 * (1 + 2.0**-12))))


def test_a_schedule_never_recompiles_and_f64_stays_f64() -> None:
    optimizer = compiled(Adam(schedules.cosine_decay(0.1, 10)))
    rng = np.random.default_rng(9)
    parameters = table(f64, rng)
    state = optimizer.init(parameters)
    for _ in range(4):
        parameters, state = optimizer.update(like(parameters, rng), state, parameters)
    assert len(optimizer._jitted) == 1
    (function,) = optimizer._jitted.values()
    assert function._cache_size() == 1
    assert all(p.numpy().dtype == np.float64 for p in parameters.payloads())


def test_results_are_read_only_and_states_move_between_the_roads() -> None:
    rng = np.random.default_rng(11)
    parameters = table(f32, rng)
    plain = Adam(1e-2)
    road = compiled(plain)
    gradients = like(parameters, rng)
    after, state = road.update(gradients, plain.init(parameters), parameters)
    for payload in (*after.payloads(), *state.table("first").payloads()):
        assert not payload.numpy().flags.writeable
    # A state made on XLA continues on numpy and back.
    again, state = plain.update(gradients, state, after)
    _, state = road.update(gradients, state, again)
    assert state.step == 3


def test_a_plugin_without_a_jax_formula_runs_its_numpy_update() -> None:
    if str(EXAMPLE_PLUGINS) not in sys.path:
        sys.path.insert(0, str(EXAMPLE_PLUGINS))
    lion = importlib.import_module("topos_lion.lion").Lion(learning_rate=1e-2)
    road = compiled(lion)
    assert not road.on_xla and "numpy" in repr(road)
    rng = np.random.default_rng(13)
    for element in ELEMENTS:
        parameters = table(element, rng)
        gradients = like(parameters, rng)
        fast, fast_state = road.update(gradients, road.init(parameters), parameters)
        slow, slow_state = lion.update(gradients, lion.init(parameters), parameters)
        assert [bits(p).tolist() for p in fast.payloads()] == [bits(p).tolist() for p in slow.payloads()]
        assert fast_state.arrays().keys() == slow_state.arrays().keys()


def test_without_jax_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jax", None)
    line = here() + 2
    with pytest.raises(XlaUnavailableError) as caught:
        compiled(Adam(1e-3))
    message = str(caught.value)
    assert "pip install 'topos-autodiff[xla]'" in message and f"test_optim_compiled.py:{line}" in message
    assert "adam" in message


def test_compiled_refuses_what_is_not_an_optimizer() -> None:
    from topos.optim import OptimizerError

    with pytest.raises(OptimizerError, match="takes an optimizer"):
        compiled("adam")  # type: ignore[arg-type]
    with pytest.raises(OptimizerError, match="takes an optimizer"):
        compiled(compiled(Adam(1e-3)))
    assert isinstance(compiled(Sgd(0.1)), CompiledUpdate)
