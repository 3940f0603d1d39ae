"""``describe`` is a golden, byte-stable text: same bytes across processes and re-recordings."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

from topos import Tape, Value, f32, f64
from topos.ir import ops

GOLDEN = (
    "   0  Parameter                   [3, 4]\n"
    "   1  Input                       [8, 3]\n"
    "   2  MatMul          1,0         [8, 4]\n"
    "   3  Parameter                   [4]\n"
    "   4  BroadcastAlong  3           axis=0 extent=8 [8, 4]\n"
    "   5  Add             2,4         [8, 4]\n"
    "   6  Tanh            5           [8, 4]\n"
    "network: 7 nodes, 2 parameters, 1 inputs\n"
)


def dense(tape: Tape) -> Value:
    weights = tape.parameter(np.full((3, 4), 0.1))
    x = tape.input(np.zeros((8, 3)))
    product = x.matmul(weights)
    bias = tape.parameter(np.zeros((4,)))
    return (product + bias.broadcast_along(0, 8)).tanh()


def test_golden_dense_layer() -> None:
    network, _ = Tape.record(dense, element=f32)
    assert network.describe() == GOLDEN


def test_re_recording_gives_the_same_text() -> None:
    first, _ = Tape.record(dense, element=f32)
    second, _ = Tape.record(dense, element=f32)
    assert first.describe() == second.describe() == GOLDEN
    # Payload values and element do not enter the text: only the recorded structure.
    third, _ = Tape.record(dense, element=f64)
    assert third.describe() == GOLDEN


_SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from test_describe import dense
    from topos import Tape
    network, _ = Tape.record(dense)
    sys.stdout.write(network.describe())
    """
)


def _describe_in_subprocess(seed: str) -> bytes:
    environment = dict(os.environ, PYTHONHASHSEED=seed)
    script = _SCRIPT.format(tests=os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run(
        [sys.executable, "-c", script], env=environment, capture_output=True, check=True, timeout=120
    )
    return done.stdout


def test_byte_identical_across_processes_with_different_hash_seeds() -> None:
    first = _describe_in_subprocess("1")
    second = _describe_in_subprocess("4242")
    assert first == second == GOLDEN.encode()


def test_parameters_print_as_key_value_and_maps_print_their_name() -> None:
    def build(tape: Tape) -> Value:
        x = tape.input(np.zeros((2, 3)))
        y = x.permute((1, 0)).unfold(0, 2, 1, 1).erf_derivative()
        return y.reshape((8,)).narrow(0, 2, 5).pad(0, 1, 7)

    network, _ = Tape.record(build)
    lines = network.describe().splitlines()
    assert lines[1] == "   1  Permute         0           order=[1,0] [3, 2]"
    assert lines[2] == "   2  Unfold          1           axis=0 size=2 step=1 dilation=1 [2, 2, 2]"
    assert lines[3] == "   3  ErfDerivative   2           [2, 2, 2]"
    assert lines[4] == "   4  Reshape         3           shape=[8] [8]"
    assert lines[5] == "   5  Narrow          4           axis=0 start=2 length=5 [5]"
    assert lines[6] == "   6  Pad             5           axis=0 start=1 extent=7 [7]"
    assert lines[-1] == "network: 7 nodes, 0 parameters, 1 inputs"


def test_long_operand_lists_stay_separated() -> None:
    from topos.ir.element import f32 as element
    from topos.ir.node import Node
    from topos.ir.shape import Shape
    from topos.stages.describe import node_line

    node = Node(ops.Narrow(0, 1, 2), (1234567,), Shape((2,)), element, "x.py:1")
    assert node_line(node, 1234568) == "1234568  Narrow          1234567     axis=0 start=1 length=2 [2]"
    node = Node(ops.Add(), (1234567, 1234566), Shape((2,)), element, "x.py:1")
    assert "1234567,1234566 [2]" in node_line(node, 1234568)


def test_a_reopened_network_describes_old_lines_unchanged() -> None:
    network, y = Tape.record(dense)
    tape = network.reopen()
    tape.resolve(y).sum()
    longer = tape.seal()
    assert longer.describe().startswith(GOLDEN.rsplit("network:", 1)[0])
    assert longer.describe().endswith("   7  Sum             6           []\nnetwork: 8 nodes, 2 parameters, 1 inputs\n")
