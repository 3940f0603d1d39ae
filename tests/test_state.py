"""State tables: Parameters and Field are slot-aligned, immutable values with one algebra."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_bits, values
from hypothesis import given
from hypothesis import strategies as st

from topos import (
    ElementType,
    Field,
    Network,
    Parameters,
    SealedTapeError,
    Symbol,
    Tape,
    Tensor,
    Value,
    f32,
    f64,
)


def _model(element: ElementType = f64) -> tuple[Network, dict[str, Symbol]]:
    def build(tape: Tape) -> dict[str, Value]:
        w = tape.parameter([[1.0, -2.0], [0.5, 3.0]])
        b = tape.parameter([0.25, -0.75])
        x = tape.input([[1.0, 2.0]])
        y = (x.matmul(w) + b.broadcast_along(0, 1)).tanh()
        return {"w": w, "b": b, "x": x, "y": y, "loss": (y * y).sum()}

    return Tape.record(build, element=element)


def test_parameters_are_fresh_slot_aligned_initials() -> None:
    network, s = _model()
    table = network.parameters()
    assert len(table) == 2
    assert [symbol for symbol, _ in table] == [s["w"], s["b"]]
    assert [p.shape.axes for p in table.payloads()] == [(2, 2), (2,)]
    assert table.of(s["w"]).tolist() == [[1.0, -2.0], [0.5, 3.0]]
    assert table.of(s["w"]).element == f64
    # Two calls give equal but independent tables; payloads are read-only.
    again = network.parameters()
    assert again.of(s["b"]).tolist() == table.of(s["b"]).tolist()
    with pytest.raises(ValueError):
        table.of(s["b"]).numpy()[0] = 9.0


def test_recorded_initials_are_copied() -> None:
    initial = np.array([1.0, 2.0])
    network, w = Tape.record(lambda t: t.parameter(initial), element=f64)
    initial[0] = 100.0
    assert network.parameters().of(w).tolist() == [1.0, 2.0]


def test_map_step_scale_add_leave_their_inputs_untouched() -> None:
    network, s = _model()
    table = network.parameters()
    doubled = table.map(lambda p: p * 2.0)
    assert doubled.of(s["b"]).tolist() == [0.5, -1.5]
    assert table.of(s["b"]).tolist() == [0.25, -0.75]
    assert (table + doubled).of(s["w"]).tolist() == [[3.0, -6.0], [1.5, 9.0]]
    assert table.scale(0.5).of(s["b"]).tolist() == [0.125, -0.375]
    assert table.scale(Tensor(4.0)).of(s["b"]).tolist() == [1.0, -3.0]
    assert table.step(doubled, lambda p, q: q - p).of(s["w"]).tolist() == table.of(s["w"]).tolist()
    assert table.of(s["w"]).tolist() == [[1.0, -2.0], [0.5, 3.0]]


def test_step_and_step_each() -> None:
    network, s = _model()
    table = network.parameters()
    direction = table.map(lambda p: p.one_like())
    stepped = table.step(direction, lambda p, d: p - d * Tensor(0.5))
    assert stepped.of(s["b"]).tolist() == [-0.25, -1.25]
    seen: list[Symbol] = []

    def decay_weights_only(symbol: Symbol, p: Tensor, d: Tensor) -> Tensor:
        seen.append(symbol)
        return p - d if symbol == s["w"] else p

    each = table.step_each(direction, decay_weights_only)
    assert seen == [s["w"], s["b"]]
    assert each.of(s["w"]).tolist() == [[0.0, -3.0], [-0.5, 2.0]]
    assert each.of(s["b"]).tolist() == table.of(s["b"]).tolist()


def test_a_weak_number_in_a_rule_adopts_the_table_element() -> None:
    network, s = _model(f32)
    table = network.parameters()
    stepped = table.step(table, lambda p, g: p - g * Tensor(0.02))
    assert all(p.element == f32 for p in stepped.payloads())
    expected = np.float32(0.25) - np.float32(0.25) * np.float32(0.02)
    assert_bits(stepped.of(s["b"]).numpy()[:1], np.array([expected], dtype=np.float32))


def test_with_payloads_replaces_named_slots_last_write_wins() -> None:
    network, s = _model()
    table = network.parameters()
    replaced = table.with_payloads(
        [(s["b"], Tensor([1.0, 1.0], element=f64)), (s["b"], Tensor([2.0, 3.0], element=f64))]
    )
    assert replaced.of(s["b"]).tolist() == [2.0, 3.0]
    assert replaced.of(s["w"]) is table.of(s["w"])
    assert table.of(s["b"]).tolist() == [0.25, -0.75]


def test_reopen_keeps_old_symbols_and_carries_the_table() -> None:
    network, s = _model()
    table = network.parameters().map(lambda p: p * 3.0)
    before = network.forward(table).of(s["y"])
    tape = network.reopen()
    scale = tape.parameter(2.0)
    doubled = tape.resolve(s["y"]) * scale.broadcast_like(tape.resolve(s["y"]))
    longer = tape.seal()
    assert len(longer) > len(network)
    carried = table.carried(longer)
    assert len(carried) == 3
    # Old slots keep their payloads, the new slot takes its recorded initial.
    assert carried.of(s["w"]) is table.of(s["w"])
    assert carried.of(scale.symbol).scalar() == 2.0
    run = longer.forward(carried)
    # Old symbols name the same nodes, with the same bits.
    assert_bits(run.of(s["y"]), before.numpy())
    assert run.of(doubled.symbol).tolist() == [[2.0 * v for v in row] for row in before.tolist()]
    # The original network is untouched by the reopening.
    assert len(network.parameters()) == 2
    assert network.forward(table).of(s["y"]).tolist() == before.tolist()


def test_values_die_at_seal() -> None:
    kept: list[Value] = []

    def build(tape: Tape) -> Value:
        x = tape.input(1.0)
        kept.append(x)
        return x * 2.0

    network, y = Tape.record(build)
    with pytest.raises(SealedTapeError):
        kept[0] + 1.0
    # The symbol outlives the value: a reopened tape resolves it.
    tape = network.reopen()
    assert tape.resolve(y).shape == kept[0].shape


def test_field_algebra_and_projection() -> None:
    network, s = _model()
    table = network.parameters()
    run = network.forward(table)
    field = run.backward(s["loss"])
    assert isinstance(field, Field)
    assert len(field.payloads()) == len(network)
    assert field.of(s["loss"]).scalar() == 1.0
    twice = field + field
    assert twice.of(s["w"]).tolist() == field.scale(2.0).of(s["w"]).tolist()
    assert field.map(lambda p: -p).of(s["b"]).tolist() == [-v for v in field.of(s["b"]).tolist()]
    assert field.zip(twice, lambda p, q: q - p).of(s["b"]).tolist() == field.of(s["b"]).tolist()
    gradients = field.parameters(table)
    assert isinstance(gradients, Parameters)
    assert [symbol for symbol, _ in gradients] == [s["w"], s["b"]]
    assert gradients.of(s["b"]) is field.of(s["b"])
    values_field = run.field()
    assert values_field.of(s["y"]).tolist() == run.of(s["y"]).tolist()


@given(data=st.data())
def test_a_training_step_is_a_pure_function(data: st.DataObject) -> None:
    network, s = _model()
    start = network.parameters().with_payloads([(s["b"], Tensor(data.draw(values((2,), f64)), element=f64))])
    feed = {s["x"]: data.draw(values((1, 2), f64))}

    def train(table: Parameters) -> Parameters:
        gradients = network.forward(table, feed).backward(s["loss"]).parameters(table)
        return table.step(gradients, lambda p, g: p - g * 0.1)

    before = [p.tolist() for p in start.payloads()]
    first, second = train(start), train(start)
    for (_, p), (_, q) in zip(first, second, strict=True):
        assert_bits(p, q.numpy())
    assert [p.tolist() for p in start.payloads()] == before


def test_large_tensors_print_a_one_line_summary() -> None:
    # A notebook printing a 50k-row embedding table must not dump every number.
    from topos import Tensor, f32

    big = Tensor(np.arange(50_000 * 4, dtype=np.float32).reshape(50_000, 4), element=f32)
    text = repr(big)
    assert text == "Tensor([0.0, 1.0, 2.0, 3.0, ...], shape=[50000, 4], element=f32)"
    assert repr(Tensor([1.0, 2.0])) == "Tensor([1.0, 2.0], element=f64)"


def test_zip_is_a_deprecated_alias_of_step() -> None:
    network, _ = _model()
    table = network.parameters()
    doubled = table.map(lambda p: p * 2.0)
    with pytest.warns(DeprecationWarning, match=r"use Parameters\.step"):
        zipped = table.zip(doubled, lambda p, q: q - p * 3.0)
    stepped = table.step(doubled, lambda p, q: q - p * 3.0)
    for (_, a), (_, b) in zip(zipped, stepped, strict=True):
        assert np.array_equal(a.bits(), b.bits())


def test_network_sources_are_read_only() -> None:
    network, s = _model()
    index = network.index(s["w"])
    before = network.sources[index].bits().copy()
    with pytest.raises(TypeError):
        network.sources[index] = Tensor(0.0)  # type: ignore[index]
    assert np.array_equal(network.sources[index].bits(), before)
