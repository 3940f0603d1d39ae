"""The command line through subprocesses: every subcommand, -o, help, and every exit status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import topos_command as topos

from topos import Numerics, Tape, xla
from topos.cli import main
from topos.stages import plan as plan_module

ROOT = Path(__file__).resolve().parent.parent

BUILD = """\
import numpy as np
from topos import Tape
from topos.nn import conv2d, max_pool


def build(t: Tape):
    rng = np.random.default_rng(0)
    x = t.input(rng.standard_normal((2, 2, 6, 6)))
    k = t.parameter(rng.standard_normal((3, 2, 3, 3)) * 0.3)
    h = max_pool(conv2d(x, k, None, stride=1, padding=1).relu(), 2)
    return {"h": h, "loss": (h * h).sum()}


def line(t: Tape):
    w = t.parameter(0.5)
    x = t.input(2.0)
    return w, (w * x - 1.0) * (w * x - 1.0)


def mismatched(t: Tape):
    return t.input([1.0, 2.0]) + t.input([1.0, 2.0, 3.0])


def crashes(t: Tape):
    raise RuntimeError("boom inside the build")


def nothing(t: Tape):
    return 3


not_callable = 4
"""


@pytest.fixture(scope="module")
def build_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "model.py"
    path.write_text(BUILD)
    return path


def test_describe_prints_the_recorded_network(build_file: Path) -> None:
    done = topos("describe", f"{build_file}:line", "--element", "f64")
    assert done.returncode == 0, done.stderr
    namespace: dict[str, Any] = {}
    exec(compile(BUILD, str(build_file), "exec"), namespace)
    from topos import f64

    network, _ = Tape.record(namespace["line"], element=f64)
    assert done.stdout == network.describe() and done.stderr == ""


def test_plan_prints_the_plan_under_the_asked_numerics(build_file: Path) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(BUILD, str(build_file), "exec"), namespace)
    network, symbols = Tape.record(namespace["build"])
    for numerics in ("exact", "fast"):
        done = topos("plan", f"{build_file}:build", "--numerics", numerics, "--roots", "loss")
        assert done.returncode == 0, done.stderr
        expected = network.entry(symbols["loss"]).numerics(Numerics(numerics)).lower().describe()
        assert done.stdout == expected
    assert "fused 2 groups" in done.stdout
    by_position = topos("plan", f"{build_file}:build", "--roots", f"%{symbols['h'].index}")
    assert by_position.returncode == 0 and by_position.stdout == network.entry(symbols["h"]).lower().describe()


def test_emit_writes_stablehlo_to_stdout_and_to_a_file(build_file: Path, tmp_path: Path) -> None:
    done = topos("emit", f"{build_file}:build")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("module @topos") and "stablehlo." in done.stdout
    target = tmp_path / "model.mlir"
    written = topos("emit", f"{build_file}:build", "-o", str(target))
    assert written.returncode == 0 and str(target) in written.stdout
    assert target.read_text() == done.stdout
    if xla.available():
        assert xla.verify(target.read_text())


def test_dot_writes_network_and_plan_pictures(build_file: Path, tmp_path: Path) -> None:
    network_picture = topos("dot", f"{build_file}:build")
    assert network_picture.returncode == 0 and network_picture.stdout.startswith("digraph topos {")
    target = tmp_path / "plan.dot"
    done = topos("dot", f"{build_file}:build", "--plan", "-o", str(target))
    assert done.returncode == 0, done.stderr
    text = target.read_text()
    assert text.startswith("digraph topos_plan {") and text.count("subgraph cluster_") == 2
    # Returned names label their nodes.
    assert "\\nloss" in network_picture.stdout and "\\nh" in network_picture.stdout


def test_check_prints_every_road_and_passes(build_file: Path) -> None:
    done = topos("check", f"{build_file}:build")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {tuple(line.split()[:2]) for line in done.stdout.splitlines()[2:]}
    assert {("plan", "exact"), ("plan", "fast"), ("gradient", "plan"), ("xla", "envelope")} <= rows
    exact_lines = [line for line in done.stdout.splitlines() if line.split()[:2] in (["plan", "exact"], ["gradient", "plan"])]
    assert exact_lines and all("bitwise-equal" in line and "pass" in line for line in exact_lines)
    if not xla.available():
        assert "skipped: jax is not installed" in done.stdout


def test_check_exits_1_when_an_exact_road_differs(
    build_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Inject a one-bit fault into exact plan runs; the check must notice and fail.
    original = plan_module.execute

    def flipped(plan_: Any, parameters: Any, feeds: Any) -> Any:
        run = original(plan_, parameters, feeds)
        if plan_.numerics is Numerics.EXACT and not plan_.network.nodes_[plan_.results_[0]].shape.rank:
            index = plan_.results_[0]
            value = run._values[index]
            bits = value.numpy().copy()
            bits.view(np.uint32)[...] ^= 1
            run._values[index] = type(value)._wrap(bits, value.element)
        return run

    monkeypatch.setattr(plan_module, "execute", flipped)
    status = main(["check", f"{build_file}:line"])
    out = capsys.readouterr().out
    assert status == 1
    assert any(line.startswith("plan") and "exact" in line and "FAIL" in line for line in out.splitlines())


def test_bench_reports_a_median_per_road(build_file: Path) -> None:
    done = topos("bench", f"{build_file}:line", "--repeats", "3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "median of 3 forward(s) per road"
    timings = {line.rsplit(None, 1)[0]: float(line.rsplit(None, 1)[1]) for line in lines[2:] if not line.startswith("xla:")}
    assert {"interpreter", "plan exact", "plan fast"} <= set(timings)
    assert all(value > 0 for value in timings.values())
    refused = topos("bench", f"{build_file}:line", "--repeats", "0")
    assert refused.returncode == 2 and "--repeats" in refused.stderr and refused.stdout == ""


def test_help_names_every_subcommand_and_exit_status() -> None:
    done = topos("--help")
    assert done.returncode == 0
    for name in ("describe", "plan", "emit", "dot", "check", "bench", "export", "Exit status"):
        assert name in done.stdout
    sub = topos("emit", "--help")
    assert sub.returncode == 0 and "-o" in sub.stdout and "FILE:FUNCTION" in sub.stdout


@pytest.mark.parametrize(
    "args",
    [(), ("frobnicate", "x.py:f"), ("plan",), ("describe", "x.py:f", "--element", "f16"), ("plan", "x.py:f", "--numerics", "loose")],
    ids=["no-command", "unknown-command", "missing-target", "bad-element", "bad-numerics"],
)
def test_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    done = topos(*args)
    assert done.returncode == 2 and done.stdout == "" and "usage:" in done.stderr


def test_topos_errors_exit_3_with_the_message_and_no_traceback(build_file: Path) -> None:
    done = topos("describe", f"{build_file}:mismatched")
    assert done.returncode == 3 and done.stdout == ""
    assert "ShapeMismatchError" in done.stderr and "Traceback" not in done.stderr
    # The message names the user's line in the build file.
    assert f"{build_file}:" in done.stderr
    unknown_root = topos("plan", f"{build_file}:build", "--roots", "nope")
    assert unknown_root.returncode == 3 and "nope" in unknown_root.stderr and "loss" in unknown_root.stderr


@pytest.mark.parametrize(
    ("target", "needles"),
    [
        ("missing.py:build", ["missing.py", "build", "no such file"]),
        ("{file}:absent", ["{file}", "absent", "build"]),
        ("{file}:not_callable", ["{file}", "not_callable"]),
        ("{file}:crashes", ["{file}", "crashes", "boom inside the build"]),
        ("{file}:nothing", ["{file}", "nothing", "no recorded values"]),
        ("{file}", ["FILE:FUNCTION"]),
        ("{broken}:build", ["{broken}", "build", "SyntaxError"]),
    ],
    ids=["no-file", "no-function", "not-callable", "build-raises", "returns-nothing", "no-colon", "syntax-error"],
)
def test_unloadable_targets_exit_4_naming_file_and_function(
    build_file: Path, tmp_path: Path, target: str, needles: list[str]
) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("def build(t):\n    return (\n")
    fill = {"file": str(build_file), "broken": str(broken)}
    done = topos("describe", target.format(**fill), cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    for needle in needles:
        assert needle.format(**fill) in done.stderr


def test_output_to_an_unwritable_path_is_a_topos_error(build_file: Path, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir.dot"
    done = topos("dot", f"{build_file}:line", "-o", str(target))
    assert done.returncode == 3 and str(target) in done.stderr and not target.exists()
