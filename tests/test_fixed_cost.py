"""What a plan settles once per operand or per table, to cut its fixed cost per run, never
changes a value: remembered views are the views a fresh call makes, spreads of spreads are
numpy's broadcasts, and a plan that reuses a parameters table's payloads still reads a new
table's values."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import Numerics, Tape, Tensor, f32
from topos.kernels import reference
from topos.kernels.binding import plan_kernel


def _frozen(array: Any) -> Any:
    array.flags.writeable = False
    return array


@st.composite
def spread_chains(draw: st.DrawFn) -> tuple[Any, list[tuple[int, int]]]:
    """A base array (possibly a transposed or sliced view) and broadcasts to apply in turn."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    base = np.arange(np.prod(shape) * 2, dtype=np.float32).reshape(*shape[:-1], shape[-1] * 2)
    view = draw(st.sampled_from(["whole", "sliced", "transposed"]))
    if view == "sliced":
        base = base[..., 1::2]
    elif view == "transposed":
        base = base.T
    rank = base.ndim
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        steps.append((draw(st.integers(0, rank)), draw(st.integers(1, 3))))
        rank += 1
    return base, steps


@settings(max_examples=150, deadline=None)
@given(spread_chains(), st.booleans())
def test_a_spread_of_a_spread_is_numpys_broadcast(chain: tuple[Any, list[tuple[int, int]]], frozen: bool) -> None:
    base, steps = chain
    if frozen:
        base = _frozen(base)
    value, expected = base, np.asarray(base)
    for axis, extent in steps:
        value = reference.broadcast_along(value, axis, extent)
        expanded = np.expand_dims(expected, axis)
        expected = np.broadcast_to(expanded, (*expanded.shape[:axis], extent, *expanded.shape[axis + 1:]))
        assert value.shape == expected.shape
        assert np.array_equal(value.view(np.uint32), expected.view(np.uint32))
        assert not value.flags.writeable
        assert np.shares_memory(value, base)


def _views() -> list[Any]:
    tape = Tape(f32)
    x = tape.input(Tensor(np.zeros((2, 3)), f32))
    made = [x.transpose(), x.reshape((3, 2)), x[:, 1:3]]
    network = tape.seal()
    return [network.nodes_[network.index(v.symbol)].op for v in made]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2), st.booleans())
def test_a_remembered_view_is_the_view_a_fresh_call_makes(which: int, frozen: bool) -> None:
    op = _views()[which]
    view = plan_kernel(op, f32)
    fresh = plan_kernel(op, f32)
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    operand = _frozen(array) if frozen else array
    first, second = view(operand), view(operand)
    made = fresh(operand)
    assert first.shape == made.shape and first.strides == made.strides
    assert np.array_equal(second.view(np.uint32), made.view(np.uint32))
    # A read-only operand's view is remembered; a writable one is made afresh each call, so
    # nothing holds an array some kernel may write into.
    assert (first is second) == frozen
    if not frozen:
        array[0, 1] = 7.0
        assert np.array_equal(view(operand), fresh(operand))


def test_a_plan_reads_each_new_parameters_table() -> None:
    def build(t: Tape) -> Any:
        w = t.parameter(np.arange(6.0).reshape(2, 3))
        return w, (w.transpose() * 2.0).sum_along(0)

    network, (w, y) = Tape.record(build, element=f32)
    exact = network.entry([y]).numerics(Numerics.EXACT).lower()
    fast = network.entry([y]).lower()
    first = network.parameters()
    second = first.map(lambda p: p * 3.0)
    for table in (first, first, second, second, first):
        oracle = network.entry([y]).numerics(Numerics.EXACT).interpret(table).of(y).bits()
        assert np.array_equal(exact.forward(table).of(y).bits(), oracle)
        assert np.array_equal(fast.forward(table).of(y).numpy(), table.of(w).numpy().sum(axis=1) * 2.0)


def _bytes(array: Any) -> Any:
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def _dense_cases(rng: np.random.Generator, element: Any) -> Any:
    """A network exercising each opcode a plan may compute through its dense kernel."""

    def build(t: Tape) -> list[Any]:
        x = t.input(rng.standard_normal((3, 4)) * 2.0)
        w = t.parameter(rng.standard_normal((4, 2)))
        h = x.matmul(w)
        return [
            h, h.sum(), h.sum_along(0), h.sum_along(1), h.sum().broadcast((5, 3, 2)), h.broadcast_along(1, 3),
            x.reshape((2, 6)), x.permute((1, 0)), x.narrow(1, 1, 2), h.stop_gradient(), -x, x.tanh(), x.exp(),
            (x * 1.5).sqrt(), x + x.permute((1, 0)).permute((1, 0)), x - 0.5, x * x, x / 1.5, x.maximum(x * 0.5),
            (x * x).powf(0.5),
        ]

    return Tape.record(build, element=element)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["f32", "f64", "bf16"]))
def test_a_kernel_over_dense_operands_makes_the_tables_bits(seed: int, name: str) -> None:
    # A plan that knows no operand is a selection calls the same functions without converting
    # each operand: the same bits as the table's kernel (and a rebinding still wins).
    from topos import bf16, f64
    from topos.ir.numerics import Numerics as Posture
    from topos.kernels.binding import KERNELS, kernel_into

    element = {"f32": f32, "f64": f64, "bf16": bf16}[name]
    network, _ = _dense_cases(np.random.default_rng(seed), element)
    run = network.forward(network.parameters())
    values = run.values()
    checked = 0
    for node in network.nodes_:
        if node.is_source:
            continue
        operands = [v.numpy() for v in (values[o] for o in node.operands) if v is not None]
        assert len(operands) == len(node.operands)
        with np.errstate(all="ignore"):
            want = np.asarray(KERNELS[type(node.op)](node.op, element)(*operands))
            got = np.asarray(plan_kernel(node.op, element, dense=True)(*operands))
            shapes = [o.shape for o in operands]
            into = kernel_into(node.op, element, Posture.EXACT, shapes, dense=True)
            written = None if into is None else np.asarray(into(*operands))
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(_bytes(got), _bytes(want)), node.name
        if written is not None:
            assert np.array_equal(_bytes(written), _bytes(want)), node.name
        checked += 1
    assert checked >= 20
