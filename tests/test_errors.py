"""Bad input: one test per case of the foundation issue.

Each asserts the specific ``ToposError`` subclass, that the message names the user's line
(this file and line) or the symbols and shapes involved, and that the failed call changed
nothing (the tape keeps its length and stays usable; tables and networks are untouched).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import here

from topos import (
    BackwardTargetError,
    DeclarationError,
    ElementError,
    FeedError,
    ForeignSymbolError,
    InvalidArgumentError,
    MixedTapesError,
    ParametersError,
    RecordingError,
    SealedTapeError,
    ShapeMismatchError,
    Symbol,
    Tape,
    Tensor,
    ToposError,
    UnknownSymbolError,
    Value,
    concat,
    f32,
    f64,
    stack,
)
from topos.stages.interpret import interpret

FILE = os.path.basename(__file__)


def site(line: int) -> str:
    return f"{FILE}:{line}"


def _values(tape: Tape) -> dict[str, Value]:
    return {
        "v2": tape.input([1.0, 2.0]),
        "v3": tape.input([1.0, 2.0, 3.0]),
        "m23": tape.input(np.ones((2, 3))),
        "m24": tape.input(np.ones((2, 4))),
        "m33": tape.input(np.ones((3, 3))),
        "b233": tape.input(np.ones((2, 3, 3))),
        "s25": tape.input(Tensor.selection([0, 1], 5)),
    }


def _refused(case: Callable[[dict[str, Value]], Any], error: type[ToposError], *needles: str) -> None:
    """Run ``case`` on a fresh tape; check the error, its message and that nothing changed."""
    tape = Tape(f32)
    values = _values(tape)
    before = tape.seal_view().describe()
    with pytest.raises(error) as caught:
        case(values)
    message = str(caught.value)
    assert type(caught.value) is error, f"{type(caught.value).__name__}: {message}"
    assert site(case.__code__.co_firstlineno) in message, message
    for needle in needles:
        assert needle in message, message
    # Nothing changed: no stray leaf or half-recorded composite, and the tape still records.
    assert tape.seal_view().describe() == before
    (values["v2"] * 2.0).sum()
    assert len(tape.seal()) == len(values) + 3


# ----------------------------------------------------------------------------- shapes

_SHAPE_MISMATCH: dict[str, tuple[Callable[[dict[str, Value]], Any], tuple[str, ...]]] = {
    "add": (lambda v: v["v2"] + v["v3"], ("[2]", "[3]")),
    "sub": (lambda v: v["m23"] - v["m24"], ("[2, 3]", "[2, 4]")),
    "mul_literal_array": (lambda v: v["v2"] * np.ones(3), ("[2]", "[3]")),
    "reflected_literal": (lambda v: np.ones(3) / v["v2"], ("[3]", "[2]")),
    "maximum": (lambda v: v["v2"].maximum(v["v3"]), ("[2]", "[3]")),
    "step": (lambda v: v["v2"].step(v["v3"]), ("[2]", "[3]")),
    "powf": (lambda v: v["v3"].powf(v["v2"]), ("[3]", "[2]")),
    "matmul_inner": (lambda v: v["m23"].matmul(v["m24"]), ("[2, 3]", "[2, 4]")),
    "matmul_rank": (lambda v: v["v2"].matmul(v["m23"]), ("[2]", "[2, 3]")),
    "matmul_batch": (lambda v: v["b233"].matmul(v["m33"]), ("[2, 3, 3]", "[3, 3]")),
    "gather": (lambda v: v["v3"].gather(v["s25"]), ("[3]", "[2, 5]")),
    "scatter": (lambda v: v["m33"].scatter(v["s25"]), ("[3, 3]", "[2, 5]")),
    "reshape": (lambda v: v["m23"].reshape((4,)), ("[2, 3]", "[4]")),
    "broadcast": (lambda v: v["v2"].broadcast((2, 2)), ("[2]", "[2, 2]")),
    "fold": (lambda v: v["m23"].fold(0, 2, 1, 1, 5), ("[2, 3]", "extent=5")),
    "concat": (lambda v: concat([v["m23"], v["m24"]], 0), ("[2, 3]", "[2, 4]")),
    "stack": (lambda v: stack([v["v2"], v["v3"]]), ("[1, 2]", "[1, 3]")),
    "broadcast_to": (lambda v: v["v3"].broadcast_to((2, 2)), ("[3]", "[2, 2]")),
    "squeeze": (lambda v: v["m23"].squeeze(0), ("[2, 3]",)),
}


@pytest.mark.parametrize("name", sorted(_SHAPE_MISMATCH))
def test_shape_mismatch_names_line_and_both_shapes(name: str) -> None:
    case, needles = _SHAPE_MISMATCH[name]
    _refused(case, ShapeMismatchError, *needles)


_BAD_PARAMETERS: dict[str, tuple[Callable[[dict[str, Value]], Any], tuple[str, ...]]] = {
    "sum_along_axis": (lambda v: v["m23"].sum_along(2), ("axis 2",)),
    "log_softmax_axis": (lambda v: v["v2"].log_softmax(1), ("axis 1",)),
    "logsumexp_axis": (lambda v: v["v2"].logsumexp(-2), ("axis -2",)),
    "broadcast_along_axis": (lambda v: v["v2"].broadcast_along(2, 3), ("axis 2", "[2]")),
    "broadcast_along_extent": (lambda v: v["v2"].broadcast_along(0, 0), ("extent", "[2]")),
    "permutation": (lambda v: v["m23"].permute((0, 0)), ("[0, 0]", "[2, 3]")),
    "permutation_rank": (lambda v: v["m23"].permute((0,)), ("[0]", "[2, 3]")),
    "narrow_window": (lambda v: v["v3"].narrow(0, 2, 2), ("start=2", "length=2", "[3]")),
    "narrow_length": (lambda v: v["v3"].narrow(0, 0, 0), ("length",)),
    "pad_extent": (lambda v: v["v3"].pad(0, 1, 3), ("start=1", "extent=3", "[3]")),
    "unfold_window": (lambda v: v["v3"].unfold(0, 2, 1, 3), ("size=2", "dilation=3", "[3]")),
    "unfold_step": (lambda v: v["v3"].unfold(0, 2, 0), ("step",)),
    "transpose_rank": (lambda v: v["b233"].transpose(), ("[2, 3, 3]",)),
    "unsqueeze_axis": (lambda v: v["v2"].unsqueeze(3), ("axis 3", "[2]")),
    "concat_axis": (lambda v: concat([v["v2"], v["v2"]], 1), ("axis 1",)),
}


@pytest.mark.parametrize("name", sorted(_BAD_PARAMETERS))
def test_bad_axis_permutation_or_window(name: str) -> None:
    case, needles = _BAD_PARAMETERS[name]
    _refused(case, InvalidArgumentError, *needles)


# ----------------------------------------------------------------------------- tapes


def test_value_used_after_its_tape_was_sealed() -> None:
    leaked: list[Value] = []

    def build(tape: Tape) -> Value:
        x = tape.parameter([1.0, 2.0])
        leaked.append(x)
        return x.sum()

    network, total = Tape.record(build)
    x = leaked[0]
    with pytest.raises(SealedTapeError) as caught:
        line = here() + 1
        x * 2.0
    assert site(line) in str(caught.value)
    with pytest.raises(SealedTapeError) as caught:
        line = here() + 1
        x.exp()
    assert site(line) in str(caught.value)
    # A reopened tape refuses the stale value too, and records nothing for the failure.
    tape = network.reopen()
    fresh = tape.resolve(total)
    with pytest.raises(SealedTapeError) as caught:
        line = here() + 1
        fresh * x
    assert site(line) in str(caught.value)
    assert len(tape) == len(network)
    assert network.describe() == Tape.record(build)[0].describe()


def test_values_of_two_tapes_in_one_expression() -> None:
    first, second = Tape(), Tape()
    a, b = first.input([1.0, 2.0]), second.input([3.0, 4.0])
    cases: list[Callable[[], Value]] = [
        lambda: a + b,
        lambda: a.maximum(b),
        lambda: concat([a, b], 0),
        lambda: stack([a, b]),
    ]
    for case in cases:
        with pytest.raises(MixedTapesError) as caught:
            case()
        assert site(case.__code__.co_firstlineno) in str(caught.value)
        assert (len(first), len(second)) == (1, 1)


def test_a_symbol_of_another_network() -> None:
    network, (w, loss) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([1.0])))
    _other, (v, other_loss) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([1.0])))
    run = network.forward(network.parameters())
    table = network.parameters()
    field = run.backward(loss)
    reads: list[Callable[[], object]] = [
        lambda: run.of(v),
        lambda: table.of(v),
        lambda: field.of(v),
        lambda: network.node(v),
    ]
    for read in reads:
        with pytest.raises(ForeignSymbolError) as caught:
            read()
        assert "%0" in str(caught.value) and "different network" in str(caught.value)
    with pytest.raises(ForeignSymbolError) as caught:
        line = here() + 1
        network.reopen().resolve(v)
    assert site(line) in str(caught.value)
    with pytest.raises(ForeignSymbolError):
        run.backward(other_loss)
    # Two extensions of one network do not swap symbols.
    left, right = network.reopen(), network.reopen()
    left_sum = left.resolve(w).exp().sum()
    right.resolve(w).sin().sum()
    left.seal()
    right_network = right.seal()
    with pytest.raises(ForeignSymbolError):
        right_network.forward(right_network.parameters()).of(left_sum.symbol)


# ----------------------------------------------------------------------------- feeds


def _line_network() -> tuple[Any, Symbol, Symbol, Symbol]:
    def build(tape: Tape) -> tuple[Value, Value, Value]:
        w = tape.parameter(np.ones((2,)))
        x = tape.input(np.zeros((2,)))
        return w, x, (w * x).sum()

    network, (w, x, loss) = Tape.record(build, element=f64)
    return network, w, x, loss


def test_feeding_a_symbol_that_is_not_an_input() -> None:
    network, w, _x, loss = _line_network()
    table = network.parameters()
    for target, kind in ((w, "Parameter"), (loss, "Sum")):
        with pytest.raises(FeedError) as caught:
            network.forward(table, {target: np.ones(target_shape(network, target))})
        message = str(caught.value)
        assert f"%{target.index}" in message and kind in message and FILE in message
    _other, _, foreign_x, _ = _line_network()
    with pytest.raises(FeedError) as caught:
        network.forward(table, {foreign_x: np.zeros(2)})
    assert "different network" in str(caught.value)
    assert table.of(w).tolist() == [1.0, 1.0]


def target_shape(network: Any, symbol: Symbol) -> tuple[int, ...]:
    shape: tuple[int, ...] = network.node(symbol).shape.axes
    return shape


def test_a_feed_of_the_wrong_shape() -> None:
    network, _w, x, _loss = _line_network()
    with pytest.raises(FeedError) as caught:
        network.forward(network.parameters(), {x: np.zeros(3)})
    message = str(caught.value)
    assert "[3]" in message and "[2]" in message and f"%{x.index}" in message and FILE in message


@pytest.mark.parametrize("bad", ["two", None, {"a": 1}, np.array([1 + 2j, 3j])], ids=["str", "none", "dict", "complex"])
def test_a_feed_that_cannot_convert(bad: Any) -> None:
    network, _w, x, _loss = _line_network()
    with pytest.raises(FeedError) as caught:
        network.forward(network.parameters(), {x: bad})
    assert f"%{x.index}" in str(caught.value) and "f64" in str(caught.value)


def test_feeds_must_be_a_mapping() -> None:
    network, _w, x, _loss = _line_network()
    with pytest.raises(FeedError):
        network.forward(network.parameters(), [(x, np.zeros(2))])


# ----------------------------------------------------------------------------- backward


def test_a_non_scalar_backward_target() -> None:
    network, w, _x, _loss = _line_network()
    run = network.forward(network.parameters())
    with pytest.raises(BackwardTargetError) as caught:
        run.backward(w)
    message = str(caught.value)
    assert f"%{w.index}" in message and "[2]" in message and FILE in message


# ----------------------------------------------------------------------------- parameters


def test_parameters_of_another_network() -> None:
    network, _w, _x, loss = _line_network()
    other, *_ = _line_network()
    with pytest.raises(ParametersError) as caught:
        network.forward(other.parameters())
    assert "different network" in str(caught.value)
    field = network.forward(network.parameters()).backward(loss)
    with pytest.raises(ParametersError):
        field.parameters(other.parameters())
    with pytest.raises(ParametersError):
        network.parameters().step(other.parameters(), lambda p, q: p + q)


def test_parameters_with_missing_slots() -> None:
    network, w, _x, _loss = _line_network()
    table = network.parameters()
    tape = network.reopen()
    bias = tape.parameter(0.5)
    longer = tape.seal()
    with pytest.raises(ParametersError) as caught:
        longer.forward(table)
    message = str(caught.value)
    assert f"%{bias.index}" in message and "carried" in message and FILE in message
    # The table is unchanged and can be carried across.
    assert len(table) == 1 and table.of(w).tolist() == [1.0, 1.0]
    carried = table.carried(longer)
    assert longer.forward(carried).of(bias.symbol).scalar() == 0.5


def test_a_table_rule_that_changes_a_shape() -> None:
    network, w, _x, _loss = _line_network()
    table = network.parameters()
    with pytest.raises(ShapeMismatchError) as caught:
        table.map(lambda p: p.sum())
    assert "[2]" in str(caught.value) and "[]" in str(caught.value)
    with pytest.raises(ShapeMismatchError):
        table.with_payloads([(w, Tensor(np.zeros(3), element=f64))])
    with pytest.raises(ParametersError):
        table.map(lambda p: 3.0)
    assert table.of(w).tolist() == [1.0, 1.0]


# ----------------------------------------------------------------------------- reads


def test_of_on_a_symbol_the_table_or_run_does_not_hold() -> None:
    network, w, x, loss = _line_network()
    table = network.parameters()
    with pytest.raises(UnknownSymbolError) as caught:
        table.of(x)
    assert f"%{x.index}" in str(caught.value)
    with pytest.raises(UnknownSymbolError):
        table.with_payloads([(loss, Tensor(0.0))])
    sliced = interpret(network, table, {}, roots=[loss])
    assert sliced.of(loss).scalar() == 0.0
    with pytest.raises(DeclarationError) as undeclared:
        sliced.of(w)
    assert f"%{w.index}" in str(undeclared.value) and FILE in str(undeclared.value)
    # A run of the original network does not hold nodes recorded after a reopening.
    tape = network.reopen()
    later = tape.resolve(loss).exp()
    tape.seal()
    run = network.forward(table)
    with pytest.raises(ForeignSymbolError):
        run.of(later.symbol)


# ----------------------------------------------------------------------------- data


def test_recording_data_that_cannot_convert() -> None:
    tape = Tape(f32)
    with pytest.raises(RecordingError) as caught:
        line = here() + 1
        tape.input("not a number")
    assert site(line) in str(caught.value)
    with pytest.raises(InvalidArgumentError) as caught:
        line = here() + 1
        tape.parameter([])
    assert site(line) in str(caught.value) and "never empty" in str(caught.value)
    with pytest.raises(RecordingError):
        tape.leaf(tape.input(1.0))
    assert len(tape) == 1


def test_bad_element_and_truth_value() -> None:
    with pytest.raises(ElementError):
        Tape("f32")  # type: ignore[arg-type]
    with pytest.raises(ElementError):
        Tensor("abc")
    tape = Tape()
    with pytest.raises(RecordingError):
        bool(tape.input(1.0))


def test_backward_from_a_target_outside_a_sliced_run() -> None:
    network, w, _x, loss = _line_network()
    tape = network.reopen()
    other = (tape.resolve(w).exp()).sum()
    longer = tape.seal()
    sliced = interpret(longer, longer.parameters(), {}, roots=[loss])
    assert sliced.backward(loss).of(w).tolist() == [0.0, 0.0]
    # The rules would read placeholders for nodes outside the closure: refused, not zeros.
    with pytest.raises(BackwardTargetError) as caught:
        sliced.backward(other.symbol)
    assert f"%{other.index}" in str(caught.value) and "sliced" in str(caught.value)
