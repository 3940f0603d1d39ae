"""One call on the XLA road: what it caches per executable still refuses every bad table or
feed with the same clear error, large feeds and recorded payloads cross without a copy
(64-byte aligned), and the plumbing never changes XLA's bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import (
    FeedError,
    Network,
    Parameters,
    ParametersError,
    Symbol,
    Tape,
    Tensor,
    ToposError,
    Value,
    bf16,
    f32,
    f64,
    xla,
)
from topos.ir.element import ALIGNED_FROM
from topos.state import check_feeds

ALIGNMENT = 64
LARGE = ALIGNED_FROM  # bytes from which copies and conversions are aligned


def data(shape: tuple[int, ...], seed: int) -> Any:
    """f32 draws: the tensor copies them as they are (an f64 array would be converted instead)."""
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=shape).astype(np.float32)


def classifier(batch: int = 32, width: int = 40) -> tuple[Network, list[Symbol], dict[str, Symbol]]:
    """Loss and weight gradients of a small classifier; x and the weight are large enough to align."""

    def build(t: Tape) -> tuple[list[Value], dict[str, Value]]:
        x = t.input(data((batch, width), 1))
        labels = t.input(np.eye(3, dtype=np.float32)[np.arange(batch) % 3])
        w1, b1 = t.parameter(data((width, 30), 2) * np.float32(0.2)), t.parameter(data((30,), 3) * np.float32(0.1))
        w2 = t.parameter(data((30, 3), 4) * np.float32(0.2))
        hidden = (x.matmul(w1) + b1.broadcast_along(0, batch)).tanh()
        loss = -(hidden.matmul(w2).log_softmax(1) * labels).sum() / float(batch)
        adjoints = t.differentiate(loss, [w1, b1, w2])
        return [loss, *(t.resolve(g) for g in adjoints.gradients())], {"x": x, "w1": w1}

    network, (roots, named) = Tape.record(build, element=f32)
    return network, list(roots), named


def misaligned(array: Any, offset: int) -> Any:
    """A C-contiguous copy of ``array`` starting ``offset`` bytes past a 64-byte boundary."""
    raw = np.empty(array.nbytes + 2 * ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % ALIGNMENT + offset
    out = raw[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


# --------------------------------------------------------------------------- alignment


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 40), min_size=0, max_size=3),
    st.sampled_from([f32, f64, bf16]),
    st.integers(0, 7),
    st.booleans(),
)
def test_a_tensors_own_copy_is_bit_exact_contiguous_and_large_ones_aligned(
    shape: list[int], element: Any, offset: int, transposed: bool
) -> None:
    source = element.convert(data(tuple(shape), len(shape) + offset))
    source = misaligned(source, offset * source.dtype.itemsize)
    if transposed:
        source = source.T  # a strided view: the copy is C-ordered all the same
    tensor = Tensor(source, element=element)
    array = tensor.numpy()
    assert array.shape == source.shape and array.dtype == source.dtype
    assert array.flags.c_contiguous and not array.flags.writeable
    assert array.tobytes() == source.tobytes()  # C-order bytes of both: bit for bit
    assert not np.shares_memory(array, source)
    if array.nbytes >= LARGE:
        assert array.ctypes.data % ALIGNMENT == 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 40), min_size=1, max_size=3),
    st.sampled_from([np.float64, np.float32, np.float16, np.int64, np.int32]),
    st.sampled_from([f32, f64, bf16]),
    st.integers(0, 3),
)
def test_a_conversion_is_numpys_cast_bit_for_bit_and_large_results_aligned(
    shape: list[int], source_dtype: Any, element: Any, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore", invalid="ignore"):  # wide draws overflow f16; ints saturate
        source = (rng.standard_normal(shape) * np.exp(rng.uniform(-30, 30, shape))).astype(source_dtype)
    if source.dtype == element.dtype:
        return  # no conversion: the tensor copies (the test above)
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.ascontiguousarray(source.astype(element.dtype))
    try:
        array = Tensor(source, element=element).numpy()
    except ToposError:
        # A finite value beyond the element is refused, conversion or not.
        assert not np.isfinite(want).all()
        return
    assert array.dtype == want.dtype and array.shape == want.shape
    assert array.tobytes() == want.tobytes()
    if array.nbytes >= LARGE:
        assert array.ctypes.data % ALIGNMENT == 0


def test_feeds_and_recorded_payloads_cross_aligned() -> None:
    network, roots, named = classifier()
    executable = xla.XlaExecutable.of_network(network, roots)
    fed = misaligned(data((32, 40), 9), 16)
    checked = check_feeds(network, {named["x"]: fed})[named["x"].index]
    assert isinstance(checked, np.ndarray) and checked.ctypes.data % ALIGNMENT == 0
    for batch in (fed, misaligned(fed.astype(np.float64), 8)):  # copied, then converted
        arrays = executable.arrays(network.parameters(), {named["x"]: batch})
        large = [a for a in arrays if a.nbytes >= LARGE]
        assert len(large) == 2  # the weight and the fed batch
        assert all(a.ctypes.data % ALIGNMENT == 0 for a in large)


def test_aligned_and_misaligned_arguments_give_the_same_bits() -> None:
    network, roots, named = classifier()
    executable = xla.XlaExecutable.of_network(network, roots)
    parameters = network.parameters()
    feeds = {named["x"]: data((32, 40), 12)}
    got = [t.numpy() for t in executable(parameters, feeds)]
    for offset in (4, 16, 32):
        moved = [misaligned(a, offset) for a in executable.arrays(parameters, feeds)]
        direct = executable.compiled(*moved)
        assert [a.view(np.uint32).tobytes() for a in direct] == [a.view(np.uint32).tobytes() for a in got]
    for (shape, _), tensor in zip(executable.compiled.signature.outputs, executable(parameters, feeds), strict=True):
        assert tensor.shape.axes == shape and not tensor.numpy().flags.writeable


# --------------------------------------------------------------------------- checks stay


def test_a_bad_table_after_a_good_one_still_raises_naming_the_slot_and_line() -> None:
    network, roots, named = classifier()
    executable = xla.XlaExecutable.of_network(network, roots)
    parameters = network.parameters()
    executable(parameters)
    slot = parameters.slot(named["w1"])
    payloads = list(parameters.payloads_)
    payloads[slot] = Tensor(np.zeros((30, 40), np.float32))  # the transpose: same byte size
    edited = Parameters(parameters.lineage, parameters.symbols, tuple(payloads))
    with pytest.raises(FeedError, match=r"%\d+ Parameter\[40, 30\].*float32\[40, 30\], got float32\[30, 40\] \(called at .*test_xla_call\.py:\d+\)"):
        executable(edited)
    other, _, _ = classifier()
    with pytest.raises(ParametersError, match="different network"):
        executable(other.parameters())
    with pytest.raises(FeedError, match="must be a Parameters table"):
        executable({})  # type: ignore[arg-type]
    again = [t.numpy().tobytes() for t in executable(parameters)]
    assert again == [t.numpy().tobytes() for t in executable(parameters)]


def test_a_bad_feed_after_good_calls_still_raises_naming_the_input_and_line() -> None:
    network, roots, named = classifier()
    executable = xla.XlaExecutable.of_network(network, roots)
    parameters = network.parameters()
    for seed in range(2):
        executable(parameters, {named["x"]: data((32, 40), seed)})
    with pytest.raises(FeedError, match=r"recorded with shape"):
        executable(parameters, {named["x"]: data((40, 32), 3)})
    with pytest.raises(FeedError, match="only inputs can be fed"):
        executable(parameters, {named["w1"]: data((40, 30), 3)})
    with pytest.raises(FeedError, match="feeds must be a mapping"):
        executable(parameters, [1.0])  # type: ignore[arg-type]


def test_on_device_names_the_argument_jax_refuses_and_keeps_device_results() -> None:
    network, y = Tape.record(lambda t: (t.input(np.ones((2, 3), np.float32)) * 2.0).sum())
    module = xla.XlaExecutable.of_network(network, [y]).compiled
    (total,) = module.on_device([np.ones((2, 3), np.float32)])
    assert float(total) == 12.0 and not isinstance(total, np.ndarray)  # left on the device
    with pytest.raises(FeedError, match=r"%arg0 of @main must be float32\[2, 3\], got float32\[3, 2\].*test_xla_call.py"):
        module.on_device([np.ones((3, 2), np.float32)])
    with pytest.raises(FeedError, match=r"%arg0 of @main must be float32\[2, 3\], got float64\[2, 3\]"):
        module.on_device([np.ones((2, 3), np.float64)])
    with pytest.raises(FeedError, match="takes 1 arguments, got 2"):
        module.on_device([np.ones((2, 3), np.float32)] * 2)
    # The module still runs after the refusals.
    assert float(module.on_device([np.full((2, 3), 0.25, np.float32)])[0]) == 3.0
