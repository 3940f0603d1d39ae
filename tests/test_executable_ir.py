"""Executable IR: each opcode replays over any Recordable through the public surface.

Replaying a network's nodes over tensors is ``forward``; replaying them over a fresh
tape's values is recording; a reverse scan written here with the public per-opcode ``vjp``
is ``run.backward``. All three agree with the library to the bit (or the byte, for text).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from topos import (
    InvalidArgumentError,
    Network,
    Numerics,
    Parameters,
    Symbol,
    Tape,
    Tensor,
    Value,
    bf16,
    express,
    f32,
    f64,
    gradient,
    vjp,
)
from topos.ir import ops


def fixture(tape: Tape) -> tuple[Value, Value, Value]:
    weights = tape.parameter(np.array([[0.5, -0.25, 1.0], [0.75, 1.0, -0.5]]))
    inputs = tape.input(np.array([[1.0, 2.0], [-0.5, 0.25], [0.125, -1.5], [2.0, 0.0]]))
    scores = inputs.matmul(weights).tanh().log_softmax(1)
    return weights, inputs, (scores * scores).sum()


def networks(element: Any) -> list[tuple[str, Network, Symbol]]:
    network, (weights, inputs, loss) = Tape.record(fixture, element=element)
    longer, _ = gradient(network, loss, [weights, inputs])
    return [("fixture", network, loss), ("with gradient", longer, loss)]


def source_payload(network: Network, parameters: Parameters, index: int) -> Tensor:
    node = network.nodes_[index]
    if isinstance(node.op, ops.Parameter):
        return parameters.of(network.symbol(index))
    return network.sources[index]


def replay_tensors(network: Network, parameters: Parameters) -> list[Tensor]:
    values: list[Tensor] = []
    for index, node in enumerate(network.nodes_):
        if node.is_source:
            values.append(source_payload(network, parameters, index))
        else:
            values.append(express(node.op, [values[j] for j in node.operands]))
    return values


ELEMENTS = [f32, f64, bf16]


@pytest.mark.parametrize("element", ELEMENTS, ids=str)
def test_replay_over_tensors_is_forward(element: Any) -> None:
    for _, network, _ in networks(element):
        parameters = network.parameters()
        with Numerics.exactly():
            replayed = replay_tensors(network, parameters)
        forward = network.forward(parameters).values()
        assert len(replayed) == len(forward)
        for index, (mine, theirs) in enumerate(zip(replayed, forward, strict=True)):
            assert theirs is not None
            assert np.array_equal(mine.bits(), theirs.bits()), f"node {index}"


@pytest.mark.parametrize("element", ELEMENTS, ids=str)
def test_replay_over_values_re_records_the_same_text(element: Any) -> None:
    for _, network, _ in networks(element):

        def build(tape: Tape, network: Network = network) -> list[Value]:
            values: list[Value] = []
            for index, node in enumerate(network.nodes_):
                payload = network.sources.get(index)
                match node.op:
                    case ops.Parameter():
                        values.append(tape.parameter(payload))
                    case ops.Input():
                        values.append(tape.input(payload))
                    case ops.Leaf():
                        values.append(tape.leaf(payload))
                    case _:
                        values.append(express(node.op, [values[j] for j in node.operands]))
            return values

        again, _ = Tape.record(build, element=element)
        assert again.describe() == network.describe()
        # The re-recording is a working network too: same bits on the same parameters.
        ours = again.forward(again.parameters()).values()
        theirs = network.forward(network.parameters()).values()
        for mine, reference in zip(ours, theirs, strict=True):
            assert mine is not None and reference is not None
            assert np.array_equal(mine.bits(), reference.bits())


def hand_written_backward(network: Network, values: list[Tensor], target: int) -> list[Tensor]:
    """The reverse scan, spelled with the public vjp: seed one, add contributions, skip non-ancestors."""
    cotangents: list[Tensor | None] = [None] * len(network)
    cotangents[target] = values[target].one_like()
    for index in range(target, -1, -1):
        seed = cotangents[index]
        node = network.nodes_[index]
        if seed is None or node.is_source:
            continue
        operands = [values[j] for j in node.operands]
        for position, contribution in zip(node.operands, vjp(node.op, operands, values[index], seed), strict=True):
            if contribution is None:
                continue
            held = cotangents[position]
            cotangents[position] = (values[position].zero_like() if held is None else held) + contribution
    return [c if c is not None else v.zero_like() for c, v in zip(cotangents, values, strict=True)]


@pytest.mark.parametrize("element", ELEMENTS, ids=str)
def test_hand_written_reverse_scan_is_backward(element: Any) -> None:
    for _, network, loss in networks(element):
        parameters = network.parameters()
        run = network.forward(parameters)
        values = [v for v in run.values() if v is not None]
        with Numerics.exactly():
            mine = hand_written_backward(network, values, network.index(loss))
        engine = run.backward(loss)
        for index, cotangent in enumerate(mine):
            assert np.array_equal(cotangent.bits(), engine.payloads()[index].bits()), f"node {index}"


def test_express_refuses_sources_and_wrong_arity() -> None:
    with pytest.raises(InvalidArgumentError, match="source"):
        express(ops.Parameter(), [])
    with pytest.raises(InvalidArgumentError, match="Add takes 2 operands, got 1"):
        express(ops.Add(), [Tensor(1.0)])


def test_describe_of_a_recorded_gradient_is_byte_stable_across_processes() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, {tests!r})
        from test_executable_ir import networks
        from topos import f32
        sys.stdout.write(networks(f32)[1][1].describe())
        """
    ).format(tests=str(Path(__file__).parent))
    first = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    second = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert first == second == networks(f32)[1][1].describe()
    assert "LogSoftmax" in first and "Permute" in first
