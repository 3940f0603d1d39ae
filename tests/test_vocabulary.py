"""One vocabulary, one binding: Tensor computes what Value records, through the same kernels.

Tensor and Value inherit every method of :class:`topos.vocabulary.Vocabulary` (through
:class:`topos.composites.Composites`); a tensor computes each opcode with the kernel
:data:`topos.kernels.binding.KERNELS` binds to it, the table plans lower with. So a
composite computed on tensors and the same composite recorded and interpreted must agree
bit for bit, and so must a tensor operation and the bound kernel over raw payloads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import assert_bits
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import Tape, Tensor, Value, f32, f64
from topos.composites import Composites
from topos.ir import ops
from topos.ir.element import ElementType
from topos.kernels import binding
from topos.vocabulary import Vocabulary

_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, float("nan"), float("inf"), -float("inf")]

values = st.lists(
    st.one_of(st.sampled_from(_SPECIAL), st.floats(-1e3, 1e3, width=32)), min_size=1, max_size=12
)

# Each composite as it is spelled on either type; bounds and exponents are numbers, so the
# recording turns them into constants just as the tensor does.
_COMPOSITES: dict[str, Callable[[Any], Any]] = {
    "abs": lambda x: x.abs(),
    "sign": lambda x: x.sign(),
    "clip": lambda x: x.clip(-1.5, 2.0),
    "mean": lambda x: x.mean(),
    "pow": lambda x: x**2.0,
    "rpow": lambda x: 2.0**x,
    "relu": lambda x: x.relu(),
    "softplus": lambda x: x.softplus(),
    "sigmoid": lambda x: x.sigmoid(),
    "silu": lambda x: x.silu(),
    "gelu": lambda x: x.gelu(),
    "gelu_tanh": lambda x: x.gelu(approximate=True),
    "softmax": lambda x: x.reshape((1, x.shape.volume)).softmax(1),
    "mean_along": lambda x: x.reshape((1, x.shape.volume)).mean_along(1),
    "broadcast_to": lambda x: x.broadcast_to((3, x.shape.volume)),
    "transpose": lambda x: x.reshape((1, x.shape.volume)).transpose(),
    "squeeze": lambda x: x.unsqueeze(0).squeeze(0),
}


def _recorded(composite: Callable[[Any], Any], data: list[float], element: ElementType) -> Tensor:
    network, y = Tape.record(lambda t: composite(t.input(np.array(data))), element=element)
    result: Tensor = network.forward(network.parameters()).of(y)
    return result


@pytest.mark.parametrize("name", sorted(_COMPOSITES))
@pytest.mark.parametrize("element", [f32, f64], ids=str)
@settings(max_examples=25, deadline=None)
@given(data=values)
def test_a_composite_computes_the_bits_its_recording_interprets_to(
    name: str, element: ElementType, data: list[float]
) -> None:
    composite = _COMPOSITES[name]
    computed = composite(Tensor(np.array(data), element=element))
    assert_bits(computed, _recorded(composite, data, element).numpy())


@settings(max_examples=60, deadline=None)
@given(data=values)
def test_sign_is_numpys_sign_except_nan_is_zero(data: list[float]) -> None:
    x = np.array(data, dtype=np.float32)
    expected = np.where(np.isnan(x), np.float32(0.0), np.sign(x)) + np.float32(0.0)  # ±0 -> +0
    assert_bits(Tensor(x).sign(), expected)


@settings(max_examples=60, deadline=None)
@given(data=values, low=st.floats(-10, 10, width=32), width=st.floats(0, 10, width=32))
def test_clip_is_numpys_clip_and_keeps_nan(data: list[float], low: float, width: float) -> None:
    x = np.array(data, dtype=np.float32)
    high = float(np.float32(low + width))
    clipped = Tensor(x).clip(low, high).numpy()
    finite = ~np.isnan(x)
    expected = np.clip(x, np.float32(low), np.float32(high))
    # Bits wherever the result is not zero; a zero met at a zero bound may carry either sign.
    nonzero = finite & (expected != 0)
    assert_bits(clipped[nonzero], expected[nonzero])
    assert (clipped[finite] == expected[finite]).all()
    assert np.isnan(clipped[~finite]).all()


def test_clip_sends_the_gradient_to_x_at_both_bounds() -> None:
    def build(t: Tape) -> tuple[Value, Value]:
        x = t.parameter(np.array([-1.0, 0.0, 2.0, 5.0, -3.0]))
        return x, x.clip(-1.0, 2.0).sum()

    network, (x, loss) = Tape.record(build, element=f64)
    gradient = network.forward(network.parameters()).backward(loss).of(x)
    assert gradient.tolist() == [1.0, 1.0, 1.0, 0.0, 0.0]


def test_clip_records_two_maximums_and_refuses_a_bool_bound() -> None:
    tape = Tape(f32)
    x = tape.input(np.array([1.0, 2.0]))
    before = len(tape)
    x.clip(0.0, 1.0)
    names = [tape.node(tape.seal_view().symbol(i)).name for i in range(before, len(tape))]
    assert names == ["Leaf", "Maximum", "Neg", "Leaf", "Maximum", "Neg"]
    with pytest.raises(Exception, match="bool"):
        Tensor([1.0, 2.0], f32).clip(0.0, True)


_SAMPLES: list[tuple[ops.Op, list[Tensor]]] = [
    (ops.Add(), [Tensor([[0.5, -1.0]], f32), Tensor.filled((1, 2), 0.25, f32)]),
    (ops.Div(), [Tensor([[1.0, 0.0]], f32), Tensor([[0.0, 0.0]], f32)]),
    (ops.Powf(), [Tensor([[0.0, 2.0]], f32), Tensor.filled((1, 2), 0.5, f32)]),
    (ops.Map(ops.MapOperation.LN), [Tensor([[-1.0, 0.5]], f32)]),
    (ops.MatMul(), [Tensor([[1.0, 2.0]], f32), Tensor([[3.0], [4.0]], f32)]),
    (ops.SumAlong(1), [Tensor([[1.0, 2.0]], f32)]),
    (ops.LogSoftmax(1), [Tensor([[1.0, 2.0]], f32)]),
    (ops.Gather(), [Tensor([[1.0, 2.0], [3.0, 4.0]], f32), Tensor.selection([1, 1, 0], 2, f32)]),
    (ops.Pad(1, 1, 4), [Tensor([[1.0, 2.0]], f32)]),
]


@pytest.mark.parametrize("op, operands", _SAMPLES, ids=lambda v: str(v) if isinstance(v, ops.Op) else None)
def test_a_tensor_operation_is_the_bound_kernel_over_raw_payloads(op: ops.Op, operands: list[Tensor]) -> None:
    from topos.stages.execute import raw
    from topos.stages.rules import express

    kernel = binding.KERNELS[type(op)](op, f32)
    with np.errstate(all="ignore"):
        expected = np.asarray(kernel(*[raw(o) for o in operands]))
    assert_bits(express(op, operands), expected)


def test_tensors_compute_through_the_binding_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rebinding an opcode changes what tensors compute: there is no second binding."""
    seen: list[ops.Op] = []

    def doubled(op: Any, element: ElementType) -> Callable[..., Any]:
        seen.append(op)
        return lambda a, b: np.asarray(a) * 2 + np.asarray(b) * 0

    monkeypatch.setitem(binding.KERNELS, ops.Sub, doubled)
    out = Tensor([1.0, 2.0], f32) - Tensor([5.0, 5.0], f32)
    assert out.tolist() == [2.0, 4.0] and seen == [ops.Sub()]


def test_the_vocabulary_is_spelled_once() -> None:
    """Neither Tensor nor Value defines a vocabulary method of its own (hooks aside)."""
    hooks = {"_apply", "_binary", "_constant", "_axis", "_checked", "_name", "_selection", "_data", "broadcast_along"}
    meta = {"__module__", "__doc__", "__slots__", "__annotations__", "__orig_bases__",
            "__parameters__", "__dict__", "__weakref__", "__firstlineno__", "__static_attributes__"}
    # Each word is spelled in one of the two classes (opcodes, composites), never both.
    assert not (set(vars(Composites)) & set(vars(Vocabulary))) - meta
    spelled = vars(Composites) | vars(Vocabulary)
    spoken = {name for name in spelled if not name.startswith("__") or name.endswith("__")} - hooks - meta
    # Tensor wraps its allocating methods for memory errors; the wrapper calls the inherited one.
    for name in spoken & set(vars(Tensor)):
        assert getattr(vars(Tensor)[name], "__wrapped__", None) is spelled[name], name
    assert not spoken & set(vars(Value)) - {"broadcast_along"}
