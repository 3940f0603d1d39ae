"""Seeded initializers: splitmix64 reference vectors, reproducibility, no global state,
one rounding from f64, the distributions' moments and bounds, bad input."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from topos import ElementType, InvalidArgumentError, Tensor, bf16, f32, f64
from topos.init import Initializer, dropout, kaiming, normal, splitmix64, uniform, xavier, zeros


def test_splitmix64_matches_the_published_reference_vector() -> None:
    # First outputs of Vigna's splitmix64.c seeded with 1234567.
    assert splitmix64(1234567, 0, 5).tolist() == [
        6457827717110365317,
        3203168211198807973,
        9817491932198370423,
        4593380528125082431,
        16408922859458223821,
    ]


def test_any_stretch_of_the_stream_is_the_stream() -> None:
    whole = splitmix64(42, 0, 10)
    assert np.array_equal(splitmix64(42, 4, 6), whole[4:])


def test_streams_continue_and_reproduce() -> None:
    a = uniform(seed=3, scale=1.0, element=f64)
    first, second = a((4,)), a((4,))
    assert not np.array_equal(first.bits(), second.bits())
    b = uniform(seed=3, scale=1.0, element=f64)
    assert np.array_equal(b((4,)).bits(), first.bits())
    assert np.array_equal(b((4,)).bits(), second.bits())
    assert a.drawn == 8


def test_pinned_first_values_stay_the_same_across_machines() -> None:
    # Pinned once; uniform is pure integer and dyadic arithmetic, so these bits are exact.
    assert uniform(seed=7, scale=0.5, element=f64)((3,)).tolist() == [
        -0.11017025160872851,
        -0.4832117054718439,
        0.4007606806068834,
    ]
    values = normal(seed=1, deviation=1.0, element=f32)((4,)).tolist()
    expected = np.array([-0.034267321791851144, -2.5000674933698677, 0.08772246831488635, -2.0271348479598177])
    assert values == expected.astype(np.float32).tolist()


def test_no_global_random_state_is_read_or_written() -> None:
    before = np.random.get_state()
    np.random.seed(0)
    a = normal(seed=11, deviation=1.0)((8,))
    np.random.seed(12345)
    b = normal(seed=11, deviation=1.0)((8,))
    assert np.array_equal(a.bits(), b.bits())
    np.random.set_state(before)


@pytest.mark.parametrize("element", [f32, bf16], ids=["f32", "bf16"])
def test_samples_are_computed_in_f64_and_rounded_once(element: ElementType) -> None:
    makers: list[Callable[[ElementType], Initializer]] = [
        lambda e: uniform(5, 0.3, e),
        lambda e: normal(5, 0.3, e),
        lambda e: xavier(5, e),
        lambda e: kaiming(5, e),
    ]
    for make in makers:
        wide = make(f64)((6, 7))
        narrow = make(element)((6, 7))
        once = Tensor(wide.numpy(), element=element)
        assert np.array_equal(narrow.bits(), once.bits())


def test_uniform_bounds_and_moments() -> None:
    x = uniform(seed=1, scale=0.25, element=f64)((20000,)).numpy()
    assert x.min() >= -0.25 and x.max() < 0.25
    # Mean of 20000 uniforms on [-1/4, 1/4): sd of the mean is 0.25/sqrt(3*20000) ≈ 1e-3.
    assert abs(x.mean()) < 5e-3
    assert abs(x.std() - 0.25 / np.sqrt(3.0)) < 3e-3


def test_normal_moments() -> None:
    x = normal(seed=2, deviation=0.5, element=f64)((20000,)).numpy()
    assert abs(x.mean()) < 0.02  # sd of the mean is 0.5/sqrt(20000) ≈ 3.5e-3
    assert abs(x.std() - 0.5) < 0.02


def test_xavier_and_kaiming_follow_their_fans() -> None:
    w = xavier(seed=3, element=f64)((200, 100)).numpy()
    bound = np.sqrt(6.0 / 300.0)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    k = kaiming(seed=4, element=f64)((400, 50)).numpy()
    assert abs(k.std() - np.sqrt(2.0 / 400.0)) < 0.03 * np.sqrt(2.0 / 400.0) * 5
    assert xavier(0)((5,)).tolist() == [0.0] * 5
    assert kaiming(0)((5,)).tolist() == [0.0] * 5
    conv = kaiming(seed=5, element=f64)((64, 16, 3, 3)).numpy()
    assert abs(conv.std() - np.sqrt(2.0 / (16 * 9))) < 0.05 * np.sqrt(2.0 / (16 * 9))


def test_dropout_masks_hold_zero_or_inverse_keep() -> None:
    mask = dropout(seed=6, keep=0.8, element=f64)((10000,)).numpy()
    assert set(np.unique(mask).tolist()) == {0.0, 1.25}
    assert abs((mask > 0).mean() - 0.8) < 0.02
    assert dropout(seed=6, keep=1.0)((5,)).tolist() == [1.0] * 5


def test_zeros_consumes_nothing() -> None:
    z = zeros(f64)
    assert z((2, 2)).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert z.drawn == 0


def test_bad_input_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="keep"):
        dropout(seed=0, keep=0.0)
    with pytest.raises(InvalidArgumentError, match="keep"):
        dropout(seed=0, keep=1.5)
    with pytest.raises(InvalidArgumentError, match="seed"):
        uniform(seed=1.5, scale=1.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="scale"):
        uniform(seed=1, scale=-1.0)
    with pytest.raises(InvalidArgumentError, match="deviation"):
        normal(seed=1, deviation=0.0)
    with pytest.raises(InvalidArgumentError):
        Initializer("uniform", 0, 1.0, "f32")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        uniform(0, 1.0)((0, 3))
