"""Results too large for memory raise CapacityError on every road, never numpy's MemoryError.

The shapes below ask for 2**36 f32 elements (256 GiB): far beyond any machine this suite
runs on, and refused by the kernel's overcommit check at allocation time, so nothing is
touched before the refusal.
"""

from __future__ import annotations

import pytest

from topos import CapacityError, Tape, Tensor

HUGE = (2**18, 2**18)


def test_tensor_arithmetic_names_the_method_and_shape() -> None:
    big = Tensor.filled(HUGE, 1.0)
    with pytest.raises(CapacityError, match=r"Tensor\.map .*\[262144, 262144\]"):
        big.exp()


def test_interpreter_and_plans_name_the_node() -> None:
    network, y = Tape.record(lambda t: t.input(Tensor.filled(HUGE, 1.0)).exp())
    with pytest.raises(CapacityError, match=r"test_capacity\.py:\d+: %1 Exp\[262144, 262144\]"):
        network.forward(network.parameters())
    plan = network.entry([y]).lower()
    with pytest.raises(CapacityError, match=r"test_capacity\.py:\d+.*largest value is %0 Input\[262144, 262144\]"):
        plan.forward(network.parameters(), {})
