"""Forward mode as a payload: examples/forward_mode.py, and its dual numbers on more opcodes."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from topos import MapOperation, ShapeMismatchError, Tape, Tensor, Value, f32, f64

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "forward_mode.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("forward_mode_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fm: Any = load()


def test_the_example_runs_and_checks_itself(capsys: pytest.CaptureFixture[str]) -> None:
    fm.main()
    out = capsys.readouterr().out
    assert out.count("bits equal") == 2


@pytest.mark.parametrize("element", [f32, f64], ids=str)
def test_directional_derivative_is_the_reverse_inner_product_bit_for_bit(element: Any) -> None:
    forward, reverse = fm.check_dyadic(element)
    assert forward.element == element
    assert np.array_equal(forward.bits(), reverse.bits())
    # Every intermediate is exact, so the f32 and f64 roads land on the same number.
    assert forward.scalar() == fm.check_dyadic(f64)[0].scalar() == 0.390625


def selections(tape: Tape) -> tuple[Value, Value, Value]:
    """Gather, scatter, step, reshape, broadcast, sub, neg and halving: still dyadic."""
    table = tape.parameter(np.array([[0.5, -1.0], [0.25, 0.75], [-0.5, 1.5]]))
    x = tape.input(np.array([1.0, -0.25, 0.5, 2.0]))
    rows = table.gather(tape.leaf(Tensor.selection([2, 0, 2, 1], 3, tape.element)))
    spread = rows * x.reshape((4, 1)).broadcast_along(1, 2).reshape((4, 2))
    gate = spread.step(tape.constant(spread.shape, 0.0))
    back = (spread * gate - spread * 0.25).scatter(tape.leaf(Tensor.selection([1, 1, 0, 3], 4, tape.element)))
    total = back.sum()
    loss = (back * back).sum() / 2.0 - (-(total.broadcast((2, 2)))).sum()
    return table, x, loss


def test_duals_through_selections_and_steps_bit_for_bit() -> None:
    network, (table, x, loss) = Tape.record(selections, element=f32)
    direction = {
        table: Tensor(np.array([[1.0, 0.5], [-0.25, 0.0], [0.75, -1.0]]), element=f32),
        x: Tensor(np.array([0.5, 1.0, -0.5, 0.25]), element=f32),
    }
    parameters = network.parameters()
    forward = fm.directional_derivative(network, parameters, loss, direction)
    reverse = fm.reverse_inner_product(network, parameters, loss, direction)
    assert forward.scalar() != 0.0
    assert np.array_equal(forward.bits(), reverse.bits())


def test_smooth_graph_agrees_within_a_few_ulps() -> None:
    forward, reverse = fm.check_smooth()
    # f64, same rules, different association of the chain products.
    assert abs(forward - reverse) <= 1e-12 * max(1.0, abs(reverse))


def test_a_wrong_dual_rule_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    original = fm.Dual.map

    def wrong(self: Any, operation: MapOperation) -> Any:
        dual = original(self, operation)
        if operation is MapOperation.TANH:
            return fm.Dual(dual.value, dual.tangent * 2.0)
        return dual

    monkeypatch.setattr(fm.Dual, "map", wrong)
    forward, reverse = fm.check_smooth()
    assert abs(forward - reverse) > 1e-6 * max(1.0, abs(reverse))


def test_duals_refuse_mismatched_shapes() -> None:
    with pytest.raises(ShapeMismatchError, match="equal shapes"):
        fm.Dual(Tensor([1.0, 2.0]), Tensor(1.0))
