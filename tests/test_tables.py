"""Per-opcode tables cover exactly the sealed opcode set, and the read contract is honest."""

from __future__ import annotations

import typing
from typing import Any

import numpy as np
import pytest
from conftest import assert_bits

from topos import MapOperation, Tensor, f64
from topos.ir import ops
from topos.ir.ops import OPCODES
from topos.stages.rules import EXPRESS, READS, VJP, express


@pytest.mark.parametrize("table", [EXPRESS, VJP, READS], ids=["EXPRESS", "VJP", "READS"])
def test_table_covers_exactly_the_opcodes(table: dict[type, Any]) -> None:
    assert set(table) == set(OPCODES)
    assert len(OPCODES) == 29 == len(set(OPCODES))


def test_opcodes_match_the_op_union() -> None:
    assert set(typing.get_args(ops.Op)) == set(OPCODES)
    assert len(MapOperation) == 11


def _t(*rows: Any) -> Tensor:
    return Tensor(np.array(rows, dtype=np.float64), element=f64)


_A = _t([0.5, 1.5, 2.0], [1.25, 0.75, 3.0])
_B = _t([1.5, 0.25, 2.0], [0.5, 2.5, 1.0])
_SELECTION = Tensor.selection([1, 0, 1], 2, f64)

_SAMPLES: list[tuple[ops.Op, list[Tensor]]] = [
    (ops.Add(), [_A, _B]),
    (ops.Sub(), [_A, _B]),
    (ops.Mul(), [_A, _B]),
    (ops.Div(), [_A, _B]),
    (ops.Neg(), [_A]),
    *[(ops.Map(operation), [_A]) for operation in MapOperation],
    (ops.MatMul(), [_A, _B.permute((1, 0))]),
    (ops.Sum(), [_A]),
    (ops.SumAlong(1), [_A]),
    (ops.Broadcast(_A.shape), [_t(2.0)]),
    (ops.BroadcastAlong(0, 2), [_A]),
    (ops.Reshape(_A.shape.of((3, 2))), [_A]),
    (ops.Permute((1, 0)), [_A]),
    (ops.Narrow(1, 1, 2), [_A]),
    (ops.Pad(1, 1, 5), [_A]),
    (ops.Unfold(1, 2, 1, 1), [_A]),
    (ops.Fold(1, 2, 1, 1, 3), [_A.unfold(1, 2, 1, 1)]),
    (ops.Gather(), [_A, _SELECTION]),
    (ops.Scatter(), [_t([1.0, 2.0], [3.0, 4.0], [5.0, 6.0]), _SELECTION]),
    (ops.LogSoftmax(1), [_A]),
    (ops.LogSumExp(0), [_A]),
    (ops.Powf(), [_A, _B]),
    (ops.Maximum(), [_A, _B]),
    (ops.Step(), [_A, _B]),
    (ops.Select(), [_t([1.0, 0.0, 2.0], [0.0, 0.0, 1.0]), _A, _B]),
    (ops.StopGradient(), [_A]),
]


def test_samples_cover_every_computed_opcode() -> None:
    covered = {type(op) for op, _ in _SAMPLES}
    assert covered == set(OPCODES) - {ops.Leaf, ops.Parameter, ops.Input}


def _poison(tensor: Tensor) -> Tensor:
    return Tensor.filled(tensor.shape, float("nan"), f64)


@pytest.mark.parametrize("op, operands", _SAMPLES, ids=lambda v: str(v) if isinstance(v, ops.Map) else None)
def test_reads_lists_everything_a_rule_reads(op: ops.Op, operands: list[Tensor]) -> None:
    """Replacing what READS says is unread by NaN leaves every cotangent's bits unchanged."""
    output = express(op, operands)
    seed = Tensor(np.linspace(0.5, 1.5, output.shape.volume).reshape(output.shape.axes), element=f64)
    full = VJP[type(op)](op, operands, output, seed)
    reads = READS[type(op)](op)
    partial_operands = [o if i in reads.operands else _poison(o) for i, o in enumerate(operands)]
    partial_output = output if reads.output else _poison(output)
    partial = VJP[type(op)](op, partial_operands, partial_output, seed)
    assert len(full) == len(partial) == op.arity
    for complete, contracted in zip(full, partial, strict=True):
        assert (complete is None) == (contracted is None)
        if complete is not None and contracted is not None:
            assert not np.any(np.isnan(complete.numpy()))
            assert_bits(contracted, complete.numpy())


def test_sources_have_no_expression_or_rule() -> None:
    from topos import InvalidArgumentError

    for source in (ops.Leaf(), ops.Parameter(), ops.Input()):
        with pytest.raises(InvalidArgumentError):
            EXPRESS[type(source)](source, [])
        with pytest.raises(InvalidArgumentError):
            VJP[type(source)](source, [], _A, _A)


def test_plan_kernel_table_covers_every_opcode() -> None:
    from topos.ir.ops import OPCODES
    from topos.kernels.binding import KERNELS

    assert set(KERNELS) == set(OPCODES)
