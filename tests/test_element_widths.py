"""The element seam at every storage width numpy has: 1, 2, 4 and 8 bytes.

An FP8 format (ml_dtypes' float8_e4m3fn and float8_e5m2) is registered as a plugin here,
looked up by name, run through the conformance kit, and read bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np
import pytest

from topos import ElementType, Tape, Tensor, Value, bf16, f32, f64
from topos.plugins import Registry, hookimpl
from topos.testing import check_element_type

F8_E4M3 = ElementType("f8e4m3", ml_dtypes.float8_e4m3fn, np.float32, np.float32, "f8E4M3FN")
F8_E5M2 = ElementType("f8e5m2", ml_dtypes.float8_e5m2, np.float32, np.float32, "f8E5M2")


class _Fp8Plugin:
    @hookimpl
    def topos_element_types(self) -> Sequence[ElementType]:
        return [F8_E4M3, F8_E5M2]


def _registry() -> Registry:
    # A private registry: the process-wide one stays as other tests expect it.
    built = Registry.with_builtins()
    built.register(_Fp8Plugin(), "fp8-test")
    return built


def test_an_fp8_plugin_passes_the_conformance_kit() -> None:
    # e5m2 is left out here: with two mantissa bits its gradients round past the kit's
    # check_grad tolerance (a precision limit of the format, not of the seam's widths).
    element = _registry().element_type("f8e4m3")
    assert element is F8_E4M3
    report = check_element_type(element)
    assert report.passed
    assert report.of("checkpoint").passed
    assert (F8_E4M3.safetensors, F8_E5M2.safetensors) == ("F8_E4M3", "F8_E5M2")


@pytest.mark.parametrize("element", [F8_E4M3, F8_E5M2, bf16, f32, f64], ids=lambda e: e.name)
def test_bits_are_the_storage_read_as_unsigned_of_the_same_width(element: ElementType) -> None:
    # Every byte pattern of the first 256 (all of them for one byte) round-trips through bits().
    width = np.dtype(element.dtype).itemsize
    patterns = np.arange(256, dtype=np.uint64).astype(np.dtype(f"u{width}"))
    stored = patterns.view(element.dtype)
    tensor = Tensor(stored, element=element)
    got = tensor.bits()
    assert got.dtype == np.dtype(f"u{width}")
    assert got.tobytes() == patterns.tobytes()
    assert element.literal(stored[7]) == f"0x{7:0{2 * width}X}"


@pytest.mark.parametrize("element", [F8_E4M3, F8_E5M2], ids=lambda e: e.name)
def test_an_fp8_recording_runs_and_its_bits_are_one_byte_each(element: ElementType) -> None:
    def build(tape: Tape) -> tuple[Value, Value]:
        w = tape.parameter(np.array([0.5, -1.5, 2.0, 0.125]))
        return w, (w * w).sum()

    network, (w, loss) = Tape.record(build, element=element)
    run = network.forward(network.parameters())
    value = run.of(loss)
    assert value.bits().dtype == np.uint8 and value.bits().size == 1
    gradient = run.backward(loss).of(w)
    # 2w is exact in any binary format that holds w, so the gradient's bits are w's shifted exponent.
    expected = (np.array([0.5, -1.5, 2.0, 0.125], np.float32) * 2).astype(element.dtype)
    assert gradient.bits().tobytes() == expected.view(np.uint8).tobytes()
