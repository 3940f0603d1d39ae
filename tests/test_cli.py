"""The command line through subprocesses: every subcommand, -o, help, and every exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from conftest import topos_command as topos

from topos import Numerics, Tape, cli, xla
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


def test_output_to_an_unwritable_path_exits_5(build_file: Path, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir.dot"
    done = topos("dot", f"{build_file}:line", "-o", str(target))
    assert done.returncode == 5 and str(target) in done.stderr and not target.exists()


# --------------------------------------------------------------------------- failure catalogue
#
# Every subcommand against every class of failure: the documented status (docs/command-line.md,
# "Failures and exit status"), one line on stderr naming the file and the function, and no
# traceback unless --traceback asks for one. A fresh interpreter costs seconds here (numpy,
# ml_dtypes, jax), so the catalogue runs in ONE subprocess that calls topos.cli.main once per
# case (main returns what `python -m topos` exits with); the cases that depend on the process
# itself (sys.exit, Ctrl-C, a full stdout) also run as real `python -m topos` below.

MODEL = """\
import sys
from topos import Tape


def good(t: Tape):
    w = t.parameter([0.5, -1.0])
    x = t.input([1.0, 2.0])
    return {"loss": ((w * x) * (w * x)).sum(), "y": w * x}


def topos_error(t: Tape):
    return t.input([1.0, 2.0]) + t.input([1.0, 2.0, 3.0])


def other_error(t: Tape):
    raise RuntimeError("boom inside the build")


def exit_0(t: Tape):
    sys.exit(0)


def exit_3(t: Tape):
    sys.exit(3)


def interrupted(t: Tape):
    raise KeyboardInterrupt
"""

FROZEN = """\
from __future__ import annotations

import dataclasses

from topos import Tape, Value


@dataclasses.dataclass(frozen=True)
class Sizes:
    width: int = 3
    scale: float = 0.5


def build(t: Tape) -> dict[str, Value]:
    sizes = Sizes()
    w = t.parameter([sizes.scale] * sizes.width)
    return {"loss": (w * w).sum(), "w2": w * w}
"""

FILES = {
    "model.py": MODEL,
    "frozen.py": FROZEN,
    "raising.py": "raise ValueError('broken at import')\n",
    "broken.py": "def build(t):\n    return (\n",
    "exits.py": "import sys\nsys.exit(0)\n",
}

SUBCOMMANDS: dict[str, tuple[str, ...]] = {
    "describe": (),
    "plan": (),
    "emit": (),
    "dot": (),
    "check": (),
    "bench": ("--repeats", "1"),
    "export": ("-o", "{dir}/exported-{case}"),
    "digest": ("--steps", "1"),
}

# failure class -> (target, status, needles in the one stderr line)
LOAD_FAILURES: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "missing-file": ("{dir}/absent.py:build", 4, ("absent.py", "'build'", "no such file")),
    "import-raises": ("{dir}/raising.py:build", 4, ("raising.py", "'build'", "ValueError", "broken at import")),
    "syntax-error": ("{dir}/broken.py:build", 4, ("broken.py", "'build'", "SyntaxError")),
    "import-exits": ("{dir}/exits.py:build", 4, ("exits.py", "'build'", "called sys.exit(0)")),
    "missing-function": ("{dir}/model.py:absent", 4, ("model.py", "'absent'", "good")),
    "topos-error": ("{dir}/model.py:topos_error", 3, ("model.py:topos_error", "ShapeMismatchError")),
    "other-error": ("{dir}/model.py:other_error", 4, ("model.py:other_error", "RuntimeError", "boom inside the build")),
    "exit-0": ("{dir}/model.py:exit_0", 4, ("model.py:exit_0", "called sys.exit(0)", "model.py:20")),
    "exit-3": ("{dir}/model.py:exit_3", 4, ("model.py:exit_3", "called sys.exit(3)")),
    "interrupted": ("{dir}/model.py:interrupted", 130, ("model.py:interrupted", "KeyboardInterrupt")),
}


@attrs.frozen
class Case:
    id: str
    argv: tuple[str, ...]
    status: int
    needles: tuple[str, ...] = ()
    traceback: bool = False
    as_root_skips: bool = False


def _catalogue() -> list[Case]:
    cases: list[Case] = []
    for command, extra in SUBCOMMANDS.items():
        for failure, (target, status, needles) in LOAD_FAILURES.items():
            case = f"{command}-{failure}"
            cases.append(Case(case, (command, target, *extra), status, needles))
        # The dataclass model must work everywhere (exit 0), and a stray flag is a usage error.
        cases.append(Case(f"{command}-dataclass-works", (command, "{dir}/frozen.py:build", *extra), 0))
        cases.append(Case(f"{command}-bad-flag", (command, "{dir}/model.py:good", *extra, "--bogus"), 2, ("--bogus",)))
    cases += [
        Case("plan-bad-numerics", ("plan", "{dir}/model.py:good", "--numerics", "loose"), 2, ("--numerics",)),
        Case("describe-bad-element", ("describe", "{dir}/model.py:good", "--element", "f16"), 2, ("--element",)),
        Case("bench-bad-repeats", ("bench", "{dir}/model.py:good", "--repeats", "0"), 2, ("--repeats",)),
        Case("digest-bad-rate", ("digest", "{dir}/model.py:good", "--rate", "-1"), 2, ("--rate",)),
        Case("digest-bad-expect", ("digest", "{dir}/model.py:good", "--expect", "zz"), 2, ("--expect",)),
        Case("export-without-output", ("export", "{dir}/model.py:good"), 2, ("-o",)),
        Case("plan-unknown-root", ("plan", "{dir}/model.py:good", "--roots", "nope"), 3, ("model.py:good", "nope", "loss")),
        Case("digest-rank-1-loss", ("digest", "{dir}/model.py:good", "--roots", "y"), 3, ("model.py:good", "rank 0")),
    ]
    # Unwritable outputs: -o under a regular file, on a dangling link, a directory where a
    # file goes (emit, dot) or a file where a directory goes (export: its own refusal, 3).
    for command, kind in (("emit", "file"), ("dot", "file"), ("export", "directory")):
        good = (command, "{dir}/model.py:good")
        cases += [
            Case(f"{command}-under-a-file", (*good, "-o", "{dir}/model.py/out"), 5, ("model.py:good", "model.py/out", "not a directory")),
            Case(f"{command}-dangling-link", (*good, "-o", "{dir}/dangling"), 5, ("model.py:good", "dangling")),
            Case(f"{command}-read-only-dir", (*good, "-o", "{dir}/read-only/out"), 5,
                 ("model.py:good", "read-only/out", "Permission denied"), as_root_skips=True),
        ]
        if kind == "file":
            cases.append(Case(f"{command}-onto-a-directory", (*good, "-o", "{dir}"), 5, ("model.py:good", "it is a directory")))
        else:
            cases.append(Case(f"{command}-onto-a-file", (*good, "-o", "{dir}/model.py"), 3, ("model.py:good", "ExportError", "not an empty directory")))
    # --traceback, before or after the subcommand: the cause's traceback, then the same line.
    for failure in ("import-raises", "syntax-error", "other-error", "exit-0", "interrupted", "topos-error"):
        target, status, needles = LOAD_FAILURES[failure]
        cases.append(Case(f"traceback-first-{failure}", ("--traceback", "describe", target), status, needles, traceback=True))
    cases.append(Case("traceback-after-exit-3", ("plan", LOAD_FAILURES["exit-3"][0], "--traceback"), 4, ("called sys.exit(3)",), traceback=True))
    cases.append(Case("traceback-output", ("--traceback", "emit", "{dir}/model.py:good", "-o", "{dir}"), 5, ("it is a directory",), traceback=True))
    return cases


CATALOGUE = _catalogue()

DRIVER = """\
import contextlib, io, json, sys
from topos.cli import main

results = []
for argv in json.load(sys.stdin):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as stop:  # argparse: usage errors
            status = stop.code if isinstance(stop.code, int) else 1
    results.append({"status": status, "stdout": out.getvalue(), "stderr": err.getvalue()})
json.dump(results, sys.stdout)
"""


def _environment() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT))


def _model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("catalogue")
    for name, text in FILES.items():
        (folder / name).write_text(text)
    (folder / "dangling").symlink_to(folder / "nowhere" / "x")
    read_only = folder / "read-only"
    read_only.mkdir()
    read_only.chmod(0o555)
    return folder


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    folder = _model_dir(tmp_path_factory)
    argvs = [[arg.format(dir=folder, case=case.id) for arg in case.argv] for case in CATALOGUE]
    done = subprocess.run(
        [sys.executable, "-c", DRIVER], input=json.dumps(argvs), capture_output=True, text=True,
        env=_environment(), cwd=folder, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(done.stdout)
    return folder, {case.id: result for case, result in zip(CATALOGUE, results, strict=True)}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            case,
            id=case.id,
            marks=[pytest.mark.skipif(
                case.as_root_skips and os.geteuid() == 0,
                reason="root writes into a mode-0555 directory; test_a_read_only_directory_as_root simulates it",
            )] if case.as_root_skips else [],
        )
        for case in CATALOGUE
    ],
)
def test_failure_catalogue(case: Case, catalogue: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    folder, results = catalogue
    result = results[case.id]
    stderr: str = result["stderr"]
    assert result["status"] == case.status, stderr
    if case.status == 0:
        assert result["stdout"] and stderr == ""
        return
    assert result["stdout"] == ""
    needles = [needle.format(dir=folder) for needle in case.needles]
    if case.status == 2:
        assert "usage:" in stderr and all(needle in stderr for needle in needles), stderr
        return
    lines = stderr.splitlines()
    if case.traceback:
        assert "Traceback (most recent call last)" in stderr, stderr
    else:
        assert len(lines) == 1 and "Traceback" not in stderr, stderr
    last = lines[-1]
    assert last.startswith("topos: "), stderr
    assert all(needle.lower() in last.lower() for needle in needles), (needles, last)


def test_a_read_only_directory_as_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Root ignores mode bits, so refuse creation under one directory the way the kernel
    # would for anyone else: EACCES from os.open (emit's temporary) and os.mkdir (export's).
    import errno

    model = tmp_path / "model.py"
    model.write_text(MODEL)
    locked = tmp_path / "locked"
    locked.mkdir()
    real_open, real_mkdir = os.open, os.mkdir

    def refuse(path: Any) -> None:
        if Path(os.fsdecode(path)).absolute().parent == locked:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))

    def guarded_open(path: Any, *args: Any, **kwargs: Any) -> int:
        refuse(path)
        return real_open(path, *args, **kwargs)

    def guarded_mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        refuse(path)
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_open)
    monkeypatch.setattr(os, "mkdir", guarded_mkdir)
    for command in ("emit", "export"):
        status = main([command, f"{model}:good", "-o", str(locked / "out")])
        captured = capsys.readouterr()
        assert status == 5 and captured.out == "", captured.err
        assert captured.err.count("\n") == 1 and "Permission denied" in captured.err
        assert f"{locked / 'out'}" in captured.err and "model.py:good" in captured.err
    assert os.listdir(locked) == []


def test_an_unexpected_error_inside_topos_exits_6(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "model.py"
    model.write_text(MODEL)

    def broken(loaded: Any, args: Any, out: Any) -> int:
        raise AssertionError("an invariant of topos broke")

    monkeypatch.setattr(cli, "cmd_plan", broken)
    assert main(["plan", f"{model}:good"]) == 6
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "model.py:good" in err and "AssertionError" in err and "running plan" in err and "--traceback" in err
    assert main(["plan", f"{model}:good", "--traceback"]) == 6
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "an invariant of topos broke" in err.splitlines()[-1]


def test_the_build_module_is_registered_only_while_it_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    before = set(sys.modules)
    assert main(["describe", f"{tmp_path / 'frozen.py'}:build"]) == 0
    kept = set(sys.modules) - before
    assert len(kept) == 1 and next(iter(kept)).startswith("_topos_build_")
    # The same file, the same name: loading it again replaces the module, adds none.
    assert main(["describe", f"{tmp_path / 'frozen.py'}:build"]) == 0 and set(sys.modules) - before == kept
    assert main(["describe", f"{tmp_path / 'raising.py'}:build"]) == 4
    assert set(sys.modules) - before == kept
    sys.modules.pop(next(iter(kept)))
    capsys.readouterr()


# --------------------------------------------------------------------------- as real processes


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _model_dir(tmp_path_factory)


def test_sys_exit_in_build_is_a_load_failure_of_the_process(models: Path) -> None:
    done = topos("describe", f"{models}/model.py:exit_0", cwd=models)
    assert done.returncode == 4 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "model.py:exit_0" in done.stderr and "called sys.exit(0)" in done.stderr


def test_ctrl_c_exits_130_without_a_traceback(models: Path) -> None:
    done = topos("plan", f"{models}/model.py:interrupted", cwd=models)
    assert done.returncode == 130 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "KeyboardInterrupt" in done.stderr and "model.py:interrupted" in done.stderr


def test_traceback_flag_shows_the_users_frame(models: Path) -> None:
    done = topos("--traceback", "describe", f"{models}/model.py:other_error", cwd=models)
    assert done.returncode == 4
    assert "Traceback (most recent call last)" in done.stderr and f'File "{models}/model.py", line 16' in done.stderr
    assert done.stderr.splitlines()[-1].startswith("topos: ") and "boom inside the build" in done.stderr.splitlines()[-1]


def test_a_dataclass_model_under_postponed_annotations_loads(models: Path) -> None:
    done = topos("describe", f"{models}/frozen.py:build", cwd=models)
    assert done.returncode == 0 and done.stderr == "" and done.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full to make standard output fail")
def test_a_full_standard_output_exits_5(models: Path) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "topos", "emit", f"{models}/model.py:good"],
            stdout=full, stderr=subprocess.PIPE, text=True, env=_environment(), cwd=models, timeout=120, check=False,
        )
    assert done.returncode == 5, done.stderr
    assert done.stderr.count("\n") == 1 and "standard output" in done.stderr and "No space left on device" in done.stderr
