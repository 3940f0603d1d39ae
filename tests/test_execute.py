"""Plan execution: typed steps, one semantics read two ways, tracebacks that name the node."""

from __future__ import annotations

import gc
import linecache
import os
import re
import subprocess
import sys
import traceback
import weakref
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from conftest import here
from hypothesis import given, settings
from hypothesis import strategies as st
from test_differential import build_case

import topos.stages.execute as execute_module
from topos import Network, Numerics, Symbol, Tape, f32
from topos.ir import ops
from topos.ir.element import ElementType
from topos.kernels.binding import KERNELS, Kernel
from topos.nn import conv2d
from topos.stages.execute import ConstantStep, FusedStep, PassStep, Payload, Program, Step, raw
from topos.stages.gradient import gradient
from topos.stages.plan import Plan


def every_step_kind() -> tuple[Network, Symbol]:
    """A network whose FAST plan lowers to every step kind (the catalog of steps)."""
    rng = np.random.default_rng(3)

    def build(t: Tape) -> Symbol:
        x = t.input(rng.standard_normal((2, 2, 6, 6)))
        k = t.parameter(rng.standard_normal((3, 2, 3, 3)) * 0.3)
        h = conv2d(x, k, padding=1) + 0.0  # a window product, then an Add of a recorded zero
        scale = (t.leaf(0.5) * t.leaf(3.0)).broadcast((2, 3, 6, 6))  # folded at lowering
        return (h * scale).tanh().sum().symbol

    return Tape.record(build, element=f32)


def lowered(numerics: Numerics = Numerics.FAST) -> tuple[Network, Symbol, Plan]:
    network, y = every_step_kind()
    return network, y, network.entry(y).numerics(numerics).lower()


def prepared(plan_: Plan) -> tuple[dict[int, Payload], dict[int, Payload]]:
    network = plan_.network
    parameters = {i: raw(network.parameters().payloads_[0]) for i in network.parameter_nodes}
    inputs = {i: raw(network.sources[i]) for i in network.input_nodes}
    return parameters, inputs


def test_the_plan_lowers_to_every_step_kind_one_per_scheduled_position() -> None:
    plan_ = lowered()[2]
    steps = plan_._program.steps
    assert [step.index for step in steps] == list(plan_.scheduled)
    assert {type(step) for step in steps} == set(Step.__subclasses__())
    fused = [step for step in steps if isinstance(step, FusedStep)]
    assert [step.match for step in fused] == plan_.patterns()


def test_each_step_runs_and_writes_its_line_with_the_same_effect() -> None:
    # The step loop calls run(); the generated program executes source(). Started from the
    # same values, each step must leave the same objects in the same positions.
    network, _, plan_ = lowered()
    parameters, inputs = prepared(plan_)
    values: list[Payload | None] = [None] * len(network)
    # Each executor writes into a set of buffers of its own, so equal results are not the
    # same buffer read twice.
    arena = plan_._program.arena
    assert arena is not None
    lent, own = arena.borrow(), arena.borrow()
    assert all(a is not b for a, b in zip(lent, own, strict=True))
    for step in plan_._program.steps:
        names: dict[str, object] = {"P": parameters, "I": inputs, **{f"b{i}": b for i, b in enumerate(lent)}}
        names.update({f"v{i}": v for i, v in enumerate(values) if v is not None})
        line = step.source(names)
        if line is not None:
            exec(line, names)
        step.run(values, parameters, inputs, own)
        for position in step.writes():
            written = values[position]
            assert written is not None and names[f"v{position}"] is not None
            assert np.array_equal(np.asarray(names[f"v{position}"]), np.asarray(written), equal_nan=True)
            assert np.asarray(names[f"v{position}"]).dtype == np.asarray(written).dtype


@pytest.mark.parametrize("numerics", [Numerics.EXACT, Numerics.FAST])
def test_generated_program_and_step_loop_keep_the_same_bits(numerics: Numerics, monkeypatch: pytest.MonkeyPatch) -> None:
    network, y, generated = lowered(numerics)
    monkeypatch.setattr(execute_module, "STRAIGHT_LINE_LIMIT", 0)
    looped = network.entry(y).numerics(numerics).lower()
    assert generated._program.function is not None and looped._program.function is None
    first, second = generated.forward(network.parameters()), looped.forward(network.parameters())
    assert np.array_equal(first.of(y).bits(), second.of(y).bits())
    assert [v is None for v in first.values()] == [v is None for v in second.values()]


def failing_network() -> tuple[Network, Symbol, int, int]:
    def build(t: Tape) -> tuple[Symbol, int]:
        x = t.input(np.linspace(-1.0, 1.0, 4))
        y, line = (x * 2.0).tanh(), here()
        return y.sum().symbol, line

    network, (root, line) = Tape.record(build, element=f32)
    tanh = next(i for i, node in enumerate(network.nodes_) if node.name == "Tanh")
    return network, root, tanh, line


def inject_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    real = KERNELS[ops.Map]

    def factory(op: Any, element: ElementType) -> Kernel:
        if op.operation is not ops.MapOperation.TANH:
            return real(op, element)

        def broken(*operands: object) -> Any:
            raise ValueError("injected kernel failure")

        return broken

    monkeypatch.setitem(KERNELS, ops.Map, factory)


@pytest.mark.parametrize("straight_line", [True, False], ids=["generated", "loop"])
def test_a_failing_step_names_its_node_and_the_recording_line(
    straight_line: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    network, root, tanh, line = failing_network()
    inject_failure(monkeypatch)
    if not straight_line:
        monkeypatch.setattr(execute_module, "STRAIGHT_LINE_LIMIT", 0)
    plan_ = network.entry(root).lower()
    with pytest.raises(ValueError, match="injected kernel failure") as caught:
        plan_.forward(network.parameters())
    text = "".join(traceback.format_exception(caught.value))
    origin = f"%{tanh} Tanh recorded at {__file__}:{line}"
    assert f"in a topos plan step: {origin}" in text
    if straight_line:
        # The traceback quotes the generated line itself, found through linecache.
        filename = plan_._program.filename
        assert filename is not None and f'File "{filename}"' in text
        assert f"v{tanh} = k{tanh}(v{tanh - 1})  # {origin}" in text


def test_generated_source_is_registered_under_a_name_drawn_from_the_source() -> None:
    network, y, first = lowered()
    second = network.entry(y).lower()
    program = first._program
    assert program.filename is not None and program.source is not None
    assert program.filename.startswith("<topos plan ") and program.filename.endswith(">")
    assert (second._program.filename, second._program.source) == (program.filename, program.source)
    assert "".join(linecache.getlines(program.filename)) == program.source
    # Every generated line that does work names its node and where it was recorded.
    # (The first line unpacks the buffers the run borrows.)
    assert program.source.splitlines()[1].endswith(", = B")
    for line in program.source.splitlines()[2:-1]:
        assert line.strip().startswith("del ") or " recorded at " in line


def test_the_linecache_entry_lives_as_long_as_a_plan_that_uses_it() -> None:
    network, y, first = lowered(Numerics.EXACT)
    second = network.entry(y).numerics(Numerics.EXACT).lower()
    filename = first._program.filename
    assert filename is not None and filename == second._program.filename
    del first
    gc.collect()
    assert filename in linecache.cache
    del second
    gc.collect()
    assert filename not in linecache.cache


_SCRIPT = """
import hashlib
import numpy as np
from topos import Tape, f32
from topos.nn import conv2d

def build(t):
    x = t.input(np.ones((1, 2, 5, 5)))
    return (conv2d(x, t.parameter(np.ones((3, 2, 3, 3)))).tanh() + 0.0).sum()

network, y = Tape.record(build, element=f32)
program = network.entry(y).lower()._program
print(program.filename, hashlib.sha256(program.source.encode()).hexdigest())
"""


def test_the_generated_source_and_its_name_are_the_same_in_every_process(tmp_path: Path) -> None:
    script = tmp_path / "record.py"
    script.write_text(_SCRIPT)
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root))
    runs = [
        subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=root, timeout=120, check=True
        ).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1] and runs[0].startswith("<topos plan ")


def test_a_program_of_no_steps_returns_nothing() -> None:
    network, _, _ = lowered()
    program = Program(network, [])
    assert program.function is not None
    assert program({}, {}) == [None] * len(network)


def test_the_generated_program_writes_no_line_for_constants_or_passes() -> None:
    # Constants are read as the globals the program binds and passes as the passed value's
    # local: no step copies one name into another, and a constant nobody reads appears nowhere.
    network, y, plan_ = lowered()
    program = plan_._program
    assert program.source is not None
    steps = program.steps
    assert any(isinstance(s, PassStep) for s in steps) and any(isinstance(s, ConstantStep) for s in steps)
    assert not re.search(r"^\s*v\d+ = [vc]\d+\s", program.source, re.MULTILINE)
    read = {j for s in steps if not isinstance(s, ConstantStep) for j in network.nodes_[s.index].operands}
    for step in steps:
        if isinstance(step, ConstantStep) and step.index not in read:
            assert not re.search(rf"\bc{step.index}\b", program.source)
    looped = attrs.evolve(plan_, program=program.looped())
    first, second = plan_.forward(network.parameters()), looped.forward(network.parameters())
    assert [v is None for v in first.values()] == [v is None for v in second.values()]
    assert np.array_equal(first.of(y).bits(), second.of(y).bits())


@pytest.mark.parametrize("straight_line", [True, False], ids=["generated", "loop"])
def test_a_passed_value_is_freed_where_the_loop_frees_it(straight_line: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # a = x * 2 is passed on as p = a + 0 (one value, two positions) and read last by q = p * 3;
    # when tanh(q) runs, a's array must be gone and q's alive, whichever executor runs.
    made: list[weakref.ref[Any]] = []
    alive: list[list[bool]] = []
    real_mul, real_map = KERNELS[ops.Mul], KERNELS[ops.Map]

    def mul(op: Any, element: ElementType) -> Kernel:
        kernel = real_mul(op, element)

        def fresh(*operands: Any) -> Any:
            result = np.array(kernel(*operands))
            made.append(weakref.ref(result))
            return result

        return fresh

    def probe(op: Any, element: ElementType) -> Kernel:
        kernel = real_map(op, element)

        def map_(*operands: Any) -> Any:
            alive.append([ref() is not None for ref in made])
            return kernel(*operands)

        return map_

    monkeypatch.setitem(KERNELS, ops.Mul, mul)
    monkeypatch.setitem(KERNELS, ops.Map, probe)
    if not straight_line:
        monkeypatch.setattr(execute_module, "STRAIGHT_LINE_LIMIT", 0)
    network, y = Tape.record(lambda t: ((t.input(np.linspace(-1.0, 1.0, 4)) * 2.0 + 0.0) * 3.0).tanh().sum(), element=f32)
    plan_ = network.entry(y).lower()
    assert any(isinstance(s, PassStep) for s in plan_._program.steps)
    assert (plan_._program.function is not None) is straight_line
    plan_.forward(network.parameters())
    assert alive == [[False, True]]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 100_000), st.sampled_from([Numerics.FAST, Numerics.EXACT]))
def test_generated_and_looped_programs_keep_the_same_bits_on_random_graphs(seed: int, numerics: Numerics) -> None:
    # Recorded gradients hold adds of recorded zeros (passes under FAST) and folded constants.
    case = build_case(seed)
    with np.errstate(all="ignore"):
        longer, adjoints = gradient(case.network, case.loss, case.wrt)
        plan_ = longer.entry((*adjoints.roots(), *case.values)).numerics(numerics).lower()
        looped = attrs.evolve(plan_, program=plan_._program.looped())
        parameters = longer.parameters()
        runs = [p.forward(parameters) for p in (plan_, looped, plan_)]
    values = [run.values() for run in runs]
    assert [v is None for v in values[0]] == [v is None for v in values[1]] == [v is None for v in values[2]]
    for first, second, third in zip(*values, strict=True):
        if first is not None:
            assert second is not None and third is not None
            assert np.array_equal(first.bits(), second.bits()) and np.array_equal(first.bits(), third.bits())
