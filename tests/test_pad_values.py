"""Valued padding (issue 29): the border holds the value, the interior keeps its bits.

The old spelling added ``c - c`` over the interior, which is NaN for ``c`` = ±inf or NaN and
turns a ``-0`` into ``+0`` for any ``c``. Every road is compared bit for bit against
numpy's ``pad``: the interpreter, the Exact and Fast plans, and XLA (Pad and Select never
round, so XLA has no envelope to claim here). Max-pooling pads with ``-inf`` through the
same recording, so its padded and ceil-mode windows are checked here too, against a numpy
reference of torch's documented ``max_pool2d`` (``_torch_pool``; the suite runs without torch).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from topos import InvalidArgumentError, Numerics, Symbol, Tape, Value, f32, f64, gradient, xla
from topos.gradcheck import check_grad
from topos.ir.element import ElementType
from topos.ir.network import Network
from topos.nn import MaxPool
from topos.nn.functional import max_pool2d, pad

FILLS = [0.0, 1.5, np.inf, -np.inf, np.nan]
ROADS = ["interpreter", "exact", "fast", "xla"]


def unsigned(array: Any) -> Any:
    array = np.ascontiguousarray(array)
    return array.view(np.uint64 if array.dtype == np.float64 else np.uint32)


def road(name: str, network: Network, roots: list[Symbol]) -> list[Any]:
    """The roots' values on one road, as numpy arrays."""
    parameters = network.parameters()
    if name == "interpreter":
        run = network.forward(parameters)
    elif name == "xla":
        run = xla.XlaExecutable.of_plan(network.entry(roots).numerics(Numerics.EXACT).lower()).forward(parameters, {})
    else:
        numerics = Numerics.EXACT if name == "exact" else Numerics.FAST
        run = network.entry(roots).numerics(numerics).lower().forward(parameters)
    return [run.of(root).numpy() for root in roots]


def awkward(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> Any:
    """Normal draws salted with -0, ±inf and NaN, the values an addition would disturb."""
    data = rng.standard_normal(shape)
    flat = data.reshape(-1)
    for special in (-0.0, 0.0, np.inf, -np.inf, np.nan):
        flat[rng.integers(flat.size)] = special
    return data.astype(dtype)


@pytest.mark.parametrize("element", [f64, f32], ids=lambda e: e.name)
@pytest.mark.parametrize("fill", FILLS, ids=str)
@pytest.mark.parametrize("name", ROADS)
def test_valued_pad_matches_numpy_bit_for_bit(name: str, fill: float, element: ElementType) -> None:
    dtype = np.float64 if element is f64 else np.float32
    rng = np.random.default_rng(int(abs(hash((name, str(fill), element.name)))) % 2**32)
    for _ in range(4):
        rank = int(rng.integers(1, 4))
        shape = tuple(int(n) for n in rng.integers(1, 5, size=rank))
        widths = [(int(a), int(b)) for a, b in rng.integers(0, 3, size=(rank, 2))]
        data = awkward(rng, shape, dtype)
        network, y = Tape.record(lambda t, data=data, widths=widths: pad(t.input(data), widths, value=fill), element=element)
        (got,) = road(name, network, [y])
        want = np.pad(data, widths, constant_values=dtype(fill))
        assert got.shape == want.shape
        # NaN's payload is numpy's own in both (the fill is the constant's bits, the interior x's).
        assert np.array_equal(unsigned(got), unsigned(want)), (shape, widths, fill)


@pytest.mark.parametrize("fill", FILLS, ids=str)
def test_the_gradient_reaches_the_interior_unchanged(fill: float) -> None:
    rng = np.random.default_rng(29)
    data = rng.standard_normal((3, 4))
    weights = rng.standard_normal((5, 7))

    def build(t: Tape) -> tuple[Value, Value]:
        x = t.parameter(data)
        padded = pad(x, [(1, 1), (2, 1)], value=fill)
        # The border is multiplied by 0 through a select, so a nonfinite fill stays out of the loss.
        inside = padded.narrow(0, 1, 3).narrow(1, 2, 4)
        return x, (inside * t.leaf(weights[1:4, 2:6])).sum()

    network, (x, loss) = Tape.record(build, element=f64)
    gradient = network.forward(network.parameters()).backward(loss).of(x).numpy()
    assert np.array_equal(unsigned(gradient), unsigned(weights[1:4, 2:6]))
    if np.isfinite(fill):
        assert check_grad(network, network.parameters(), loss).passed


def _torch_extent(size: int, window: int, stride: int, before: int, after: int, ceil_mode: bool) -> int:
    """torch.nn.MaxPool2d's output length: the floor (or ceiling) of the strided count, and a
    ceil-mode window that would start past the input and its leading padding is dropped."""
    span = size + before + after - window
    count = (span + stride - 1) // stride + 1 if ceil_mode else span // stride + 1
    if ceil_mode and (count - 1) * stride >= size + before:
        count -= 1
    return count


def _torch_pool(
    data: np.ndarray, window: tuple[int, int], stride: tuple[int, int], sides: tuple[tuple[int, int], tuple[int, int]],
    ceil_mode: bool = False,
) -> np.ndarray:
    """Max over each window of ``data`` padded with -inf, windows running past the end reading -inf."""
    (top, bottom), (left, right) = sides
    rows = _torch_extent(data.shape[2], window[0], stride[0], top, bottom, ceil_mode)
    cols = _torch_extent(data.shape[3], window[1], stride[1], left, right, ceil_mode)
    extra_h = max(0, (rows - 1) * stride[0] + window[0] - (data.shape[2] + top))
    extra_w = max(0, (cols - 1) * stride[1] + window[1] - (data.shape[3] + left))
    padded = np.pad(data, ((0, 0), (0, 0), (top, extra_h), (left, extra_w)), constant_values=-np.inf)
    out = np.empty((*data.shape[:2], rows, cols))
    for i in range(rows):
        for j in range(cols):
            r, c = i * stride[0], j * stride[1]
            out[:, :, i, j] = padded[:, :, r : r + window[0], c : c + window[1]].max(axis=(2, 3))
    return out


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_pool2d_matches_torch_in_f64(ceil_mode: bool) -> None:
    rng = np.random.default_rng(7 + ceil_mode)
    for _ in range(60):
        height, width = (int(n) for n in rng.integers(2, 9, size=2))
        kh, kw = (int(n) for n in rng.integers(1, 4, size=2))
        sh, sw = (int(n) for n in rng.integers(1, 4, size=2))
        ph, pw = int(rng.integers(0, kh // 2 + 1)), int(rng.integers(0, kw // 2 + 1))
        if kh > height + 2 * ph or kw > width + 2 * pw:
            continue
        data = rng.standard_normal((2, 2, height, width))
        network, y = Tape.record(
            lambda t, data=data, window=(kh, kw), stride=(sh, sw), padding=(ph, pw): max_pool2d(
                t.input(data), window, stride, padding, ceil_mode=ceil_mode
            ), element=f64
        )
        got = network.forward(network.parameters()).of(y).numpy()
        want = _torch_pool(data, (kh, kw), (sh, sw), ((ph, ph), (pw, pw)), ceil_mode)
        assert got.shape == want.shape and np.array_equal(unsigned(got), unsigned(want))


def test_asymmetric_padding_is_a_minus_inf_pad_then_a_pool() -> None:
    rng = np.random.default_rng(11)
    for _ in range(40):
        height, width = (int(n) for n in rng.integers(3, 8, size=2))
        k, s = int(rng.integers(2, 4)), int(rng.integers(1, 3))
        top, bottom, left, right = (int(n) for n in rng.integers(0, k // 2 + 1, size=4))
        data = rng.standard_normal((1, 3, height, width))
        network, y = Tape.record(
            lambda t, data=data, k=k, s=s, sides=((top, bottom), (left, right)): max_pool2d(t.input(data), k, s, sides), element=f64
        )
        got = network.forward(network.parameters()).of(y).numpy()
        want = _torch_pool(data, (k, k), (s, s), ((top, bottom), (left, right)))
        assert got.shape == want.shape and np.array_equal(unsigned(got), unsigned(want))


@pytest.mark.parametrize("name", ROADS[1:])
def test_padded_and_ceil_mode_pools_agree_across_roads_with_their_gradients(name: str) -> None:
    rng = np.random.default_rng(3)
    data = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    data[0, 0, 0, 0] = -0.0

    def build(t: Tape) -> list[Value]:
        x = t.parameter(data)
        pooled = MaxPool(3, 2, padding=((1, 0), (0, 1)), ceil_mode=True)(x)
        loss = (pooled * pooled).sum()
        return [x, pooled, loss]

    network, (x, pooled, loss) = Tape.record(build, element=f32)
    longer, adjoints = gradient(network, loss, [x])
    roots = [pooled, adjoints.of(x)]
    want = road("interpreter", longer, roots)
    got = road(name, longer, roots)
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(unsigned(a), unsigned(b))


def test_bad_pool_arguments_are_refused_by_name() -> None:
    tape = Tape(f64)
    x = tape.input(np.zeros((1, 1, 4, 4)))
    before = len(tape)
    with pytest.raises(InvalidArgumentError, match="at most half the window"):
        max_pool2d(x, 2, padding=((2, 0), (0, 0)))
    with pytest.raises(InvalidArgumentError, match="ceil_mode must be a bool"):
        max_pool2d(x, 2, ceil_mode=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="MaxPool: padding"):
        MaxPool(2, padding=((0, 2), (0, 0)))
    assert len(tape) == before
