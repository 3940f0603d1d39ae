"""The optimizers' fused numpy passes: the same bits as the tensor formulas they replaced.

``reference_update`` below is a frozen copy of the built-ins' ``update`` as it was written
with :class:`~topos.tensor.Tensor` arithmetic (one tensor operation per term) before the
fused passes. Every built-in is run against it for several steps from the same start, over
f32, f64 and bf16, with slot sizes that reach numpy's vector bodies and tails, constant
(zero-stride) payloads, signed zeros, infinities and NaNs with distinct payloads in both
operands of an operation (which NaN survives depends on numpy's inner loop, so it would show
a changed loop). The comparison is bitwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import ELEMENTS, bits, each_element
from hypothesis import given
from hypothesis import strategies as st

from topos import Parameters, Symbol, Tape, Tensor, f32, f64
from topos.ir.element import ElementType
from topos.optim import Adam, AdamW, Optimizer, OptimizerState, Sgd, learning_rate_at, schedules
from topos.optim.passes import ALIGNMENT, scratch_bytes

Array = np.ndarray[Any, Any]

SHAPES: tuple[tuple[int, ...], ...] = ((37,), (3, 5), (1,), (2, 65), (129,), (4, 4, 3))


# --------------------------------------------------------------------------- today's formulas, frozen


def reference_update(
    optimizer: Optimizer, gradients: Parameters, state: OptimizerState, parameters: Parameters
) -> tuple[Parameters, OptimizerState]:
    """The built-ins' update as tensor arithmetic, term by term in the written order."""
    if isinstance(optimizer, Sgd):
        lr = learning_rate_at("sgd", optimizer.learning_rate, state.step)
        if not optimizer.momentum:
            return parameters.step(gradients, lambda p, g: p - g * lr), state.advanced()
        mu = optimizer.momentum
        velocity = state.table("velocity").step(gradients, lambda v, g: v * mu + g)
        direction = gradients.step(velocity, lambda g, v: g + v * mu) if optimizer.nesterov else velocity
        return parameters.step(direction, lambda p, d: p - d * lr), state.advanced(tables={"velocity": velocity})
    assert isinstance(optimizer, (Adam, AdamW))
    lr = learning_rate_at(optimizer.kind, optimizer.learning_rate, state.step)
    b1, b2, epsilon = optimizer.b1, optimizer.b2, optimizer.epsilon
    first_power = state.scalar("first_power") * Tensor(b1, element=f64)
    second_power = state.scalar("second_power") * Tensor(b2, element=f64)
    correction1 = 1.0 - first_power.scalar()
    correction2 = 1.0 - second_power.scalar()
    firsts, seconds, news = [], [], []
    for (symbol, p), g, m, v in zip(
        parameters, gradients.payloads(), state.table("first").payloads(), state.table("second").payloads(), strict=True
    ):
        m = m * b1 + g * (1.0 - b1)
        v = v * b2 + (g * g) * (1.0 - b2)
        move = (m / correction1) / ((v / correction2).sqrt() + epsilon)
        if isinstance(optimizer, AdamW) and optimizer.decay and optimizer.decay_where(symbol, p):
            move = move + p * optimizer.decay
        firsts.append(m)
        seconds.append(v)
        news.append(p - move * lr)

    def rebuilt(table: Parameters, payloads: list[Tensor]) -> Parameters:
        return Parameters(table.lineage, table.symbols, tuple(payloads))

    following = state.advanced(
        tables={"first": rebuilt(state.table("first"), firsts), "second": rebuilt(state.table("second"), seconds)},
        scalars={"first_power": first_power, "second_power": second_power},
    )
    return rebuilt(parameters, news), following


# --------------------------------------------------------------------------- tables with hard values


def nan_with(payload: int, element: ElementType, sign: int = 0) -> Any:
    """A quiet NaN of ``element`` carrying ``payload`` in its low mantissa bits."""
    width = np.dtype(element.dtype).itemsize * 8
    unsigned = {16: np.uint16, 32: np.uint32, 64: np.uint64}[width]
    exponent_and_quiet = {16: 0x7FC0, 32: 0x7FC00000, 64: 0x7FF8000000000000}[width]
    word = unsigned(exponent_and_quiet | (payload & 0x3F) | (sign << (width - 1)))
    return np.array([word], dtype=unsigned).view(element.dtype)[0]


def hard_array(rng: np.random.Generator, shape: tuple[int, ...], element: ElementType, specials: bool) -> Array:
    """Values in [-2, 2] rounded to storage; with ``specials``, some ±0, ±inf and payload NaNs."""
    flat = rng.uniform(-2.0, 2.0, int(np.prod(shape))).astype(element.dtype)
    if specials and flat.size > 3:
        chosen = rng.choice(flat.size, size=max(1, flat.size // 6), replace=False)
        for count, position in enumerate(chosen):
            kind = count % 4
            if kind == 0:
                flat[position] = nan_with(int(rng.integers(1, 63)), element, int(rng.integers(0, 2)))
            elif kind == 1:
                flat[position] = np.dtype(element.dtype).type(-0.0)
            elif kind == 2:
                flat[position] = np.dtype(element.dtype).type(np.inf if rng.integers(0, 2) else -np.inf)
            else:
                flat[position] = np.dtype(element.dtype).type(0.0)
    return flat.reshape(shape)


def table(element: ElementType) -> Parameters:
    network, _ = Tape.record(lambda t: [t.parameter(np.zeros(shape)) for shape in SHAPES], element=element)
    return network.parameters()


def filled(template: Parameters, rng: np.random.Generator, specials: bool, constant_slot: int | None) -> Parameters:
    element = template.payloads()[0].element
    payloads = []
    for slot, payload in enumerate(template.payloads()):
        if slot == constant_slot:
            payloads.append(Tensor.filled(payload.shape, float(rng.uniform(-1.0, 1.0)), element))
        else:
            payloads.append(Tensor(hard_array(rng, payload.shape.axes, element, specials), element=element))
    return Parameters(template.lineage, template.symbols, tuple(payloads))


def optimizers() -> list[Optimizer]:
    def only_the_first(symbol: Symbol, payload: Tensor) -> bool:
        return symbol.index % 2 == 0

    return [
        Sgd(0.05),
        Sgd(schedules.cosine_decay(0.1, 4), momentum=0.9),
        Sgd(0.03, momentum=0.8, nesterov=True),
        Adam(1e-2),
        Adam(0.3, b1=0.0, b2=0.5, epsilon=1e-3),
        AdamW(1e-2, decay=0.1),
        AdamW(schedules.linear_warmup(0.05, 2), decay=0.25, decay_where=only_the_first),
    ]


def assert_same(fast: Parameters, slow: Parameters, what: str) -> None:
    for (symbol, a), b in zip(fast, slow.payloads(), strict=True):
        assert a.shape == b.shape and a.element == b.element, what
        assert np.array_equal(bits(a), bits(b)), f"{what}: slot %{symbol.index} differs"


def run_both(optimizer: Optimizer, element: ElementType, seed: int, specials: bool, steps: int = 4) -> None:
    rng = np.random.default_rng(seed)
    start = filled(table(element), rng, specials=False, constant_slot=None)
    fast_p, slow_p = start, start
    fast_s = slow_s = optimizer.init(start)
    for step in range(steps):
        gradients = filled(start, rng, specials=specials and step > 0, constant_slot=step % len(SHAPES))
        fast_p, fast_s = optimizer.update(gradients, fast_s, fast_p)
        slow_p, slow_s = reference_update(optimizer, gradients, slow_s, slow_p)
        what = f"{optimizer!r} {element} step {step}"
        assert_same(fast_p, slow_p, what + " parameters")
        assert sorted(fast_s.tables) == sorted(slow_s.tables)
        for name in fast_s.tables:
            assert_same(fast_s.tables[name], slow_s.tables[name], f"{what} state {name}")
        assert {k: v.bits().tolist() for k, v in fast_s.scalars.items()} == {
            k: v.bits().tolist() for k, v in slow_s.scalars.items()
        }


# --------------------------------------------------------------------------- the properties


@each_element
@pytest.mark.parametrize("index", range(7), ids=lambda i: repr(optimizers()[i]).split("(")[0] + str(i))
def test_fast_update_matches_the_tensor_formulas_bit_for_bit(element: ElementType, index: int) -> None:
    run_both(optimizers()[index], element, seed=1000 + index, specials=False)


@each_element
@pytest.mark.parametrize("index", range(7))
def test_fast_update_keeps_nan_payloads_infinities_and_signed_zeros(element: ElementType, index: int) -> None:
    run_both(optimizers()[index], element, seed=2000 + index, specials=True)


@given(seed=st.integers(0, 2**32 - 1), which=st.integers(0, 6), element=st.sampled_from(ELEMENTS))
def test_fast_update_matches_for_drawn_values(seed: int, which: int, element: ElementType) -> None:
    run_both(optimizers()[which], element, seed, specials=seed % 2 == 0, steps=3)


@pytest.mark.parametrize("index", range(7))
def test_results_are_fresh_read_only_and_inputs_untouched(index: int) -> None:
    optimizer = optimizers()[index]
    rng = np.random.default_rng(7)
    parameters = filled(table(f32), rng, specials=False, constant_slot=None)
    state = optimizer.init(parameters)
    gradients = filled(parameters, rng, specials=False, constant_slot=None)
    kept = [bits(p).copy() for p in (*parameters.payloads(), *gradients.payloads())]
    first, state1 = optimizer.update(gradients, state, parameters)
    held = [bits(p).copy() for p in first.payloads()]
    held_state = {name: [bits(p).copy() for p in t.payloads()] for name, t in state1.tables.items()}
    # More updates reuse the scratch; what the caller already holds must not move.
    again, state2 = optimizer.update(gradients, state1, first)
    optimizer.update(gradients, state2, again)
    assert [bits(p).tolist() for p in (*parameters.payloads(), *gradients.payloads())] == [k.tolist() for k in kept]
    assert [bits(p).tolist() for p in first.payloads()] == [h.tolist() for h in held]
    for name, table_ in state1.tables.items():
        assert [bits(p).tolist() for p in table_.payloads()] == [h.tolist() for h in held_state[name]]
    outputs = [*again.payloads(), *(p for t in state2.tables.values() for p in t.payloads())]
    for payload in outputs:
        array = payload.numpy()
        assert not array.flags.writeable
        assert array.ctypes.data % ALIGNMENT == 0 and array.flags.c_contiguous
        with pytest.raises(ValueError):
            array[...] = 0
    # No two results share memory, and none shares memory with another update's results.
    arrays = [p.numpy() for p in outputs] + [p.numpy() for p in first.payloads()]
    for i, a in enumerate(arrays):
        for b in arrays[i + 1 :]:
            assert not np.shares_memory(a, b)
    assert scratch_bytes() > 0


def test_threads_updating_at_once_get_their_own_scratch() -> None:
    import threading

    optimizer = Adam(1e-2)
    results: dict[int, list[list[int]]] = {}
    alone: dict[int, list[list[int]]] = {}

    def work(seed: int, into: dict[int, list[list[int]]]) -> None:
        rng = np.random.default_rng(seed)
        parameters = filled(table(f32), rng, specials=False, constant_slot=None)
        state = optimizer.init(parameters)
        for _ in range(20):
            gradients = filled(parameters, rng, specials=False, constant_slot=None)
            parameters, state = optimizer.update(gradients, state, parameters)
        into[seed] = [bits(p).tolist() for p in parameters.payloads()]

    for seed in range(4):
        work(seed, alone)
    threads = [threading.Thread(target=work, args=(seed, results)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == alone


@each_element
def test_an_update_that_overflows_the_element_is_refused_like_the_tensor_formula(element: ElementType) -> None:
    # A learning rate past the element's largest finite value cannot be converted; both
    # roads refuse it by the same error before any result exists.
    rng = np.random.default_rng(3)
    parameters = filled(table(element), rng, specials=False, constant_slot=None)
    gradients = filled(parameters, rng, specials=False, constant_slot=None)
    huge = Sgd(element.largest * 4.0 if element is not f64 else 1e308)
    if element is f64:
        fast = huge.update(gradients, huge.init(parameters), parameters)[0]
        slow = reference_update(huge, gradients, huge.init(parameters), parameters)[0]
        assert_same(fast, slow, "f64 large rate")
        return
    failures: list[type[BaseException]] = []
    for update in (huge.update, lambda g, s, p: reference_update(huge, g, s, p)):
        with pytest.raises(Exception) as caught:
            update(gradients, huge.init(parameters), parameters)
        failures.append(caught.type)
    assert failures[0] is failures[1]


def test_adopt_refuses_an_array_of_another_dtype_and_names_the_line() -> None:
    from conftest import here

    from topos.errors import ElementError

    array = np.zeros(3, np.float64)
    line = here() + 2
    with pytest.raises(ElementError) as caught:
        Tensor.adopt(array, f32)
    assert f"test_optim_fast.py:{line}" in str(caught.value) and "float32" in str(caught.value)
    assert array.flags.writeable  # a refused array is left as it was
    kept = Tensor.adopt(array, f64)
    assert not array.flags["WRITEABLE"]
    assert np.shares_memory(kept.numpy(), array)
