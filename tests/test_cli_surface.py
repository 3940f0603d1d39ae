"""The command line's surface: plugin element types for ``--element``, error sites that are
the user's file or argument (never the launcher), and ``export --input-names``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from topos.cli import main

ROOT = Path(__file__).resolve().parent.parent

BUILD = """\
from topos import Tape


def pair(t: Tape):
    a = t.input([1.0, 2.0])
    b = t.input([3.0, 4.0])
    return {"y": (a * b).sum()}


def mismatched(t: Tape):
    return t.input([1.0, 2.0]) + t.input([1.0, 2.0, 3.0])
"""

WITH_PLUGIN = """\
import sys
from topos import plugins
import topos_lion.plugin as plugin
plugins.register(plugin, "topos_lion.plugin")
from topos.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def build(tmp_path: Path) -> Path:
    path = tmp_path / "model.py"
    path.write_text(BUILD)
    return path


def with_plugin(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "examples" / "plugins")]))
    return subprocess.run([sys.executable, "-c", WITH_PLUGIN, *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300, check=False)


def test_a_plugin_element_records_the_network(build: Path) -> None:
    for name in ("f16", "f32"):
        done = with_plugin("check", f"{build}:pair", "--element", name)
        assert done.returncode == 0, done.stderr
        assert f"element {name}" in done.stdout, done.stdout


@pytest.mark.parametrize("name", ["f17", "F32", ""])
def test_an_unknown_element_is_a_usage_error_listing_the_known(build: Path, name: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["describe", f"{build}:pair", "--element", name])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"unknown element type {name!r}" in err and "f32" in err and "bf16" in err


def launchers() -> list[list[str]]:
    script = Path(sys.executable).parent / "topos"
    assert script.is_file(), f"{script}: the dev install provides the console script"
    return [[str(script)], [sys.executable, "-m", "topos"]]


@pytest.mark.parametrize("launcher", launchers(), ids=["console-script", "python-m"])
@pytest.mark.parametrize("args", [
    ["describe", "{build}:mismatched"],
    ["export", "{build}:pair", "-o", "{out}", "--input-names", "only_one"],
    ["plan", "{build}:pair", "--roots", "nope"],
])
def test_error_sites_are_the_users_never_the_launcher(build: Path, tmp_path: Path, launcher: list[str],
                                                      args: list[str]) -> None:
    filled = [a.format(build=build, out=tmp_path / "out") for a in args]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([*launcher, *filled], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300, check=False)
    assert done.returncode not in (0, 6), done.stderr
    err = done.stderr
    assert str(build) in err, err
    for launcher_site in ("bin/topos", "<frozen runpy>", "runpy.py", "__main__.py"):
        assert launcher_site not in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("names", [["left", "right"], ["x_0", "tokens"]])
def test_input_names_reach_the_signature_and_readme(build: Path, tmp_path: Path, names: list[str]) -> None:
    out = tmp_path / "out"
    assert main(["export", f"{build}:pair", "-o", str(out), "--input-names", *names]) == 0
    signature = json.loads((out / "signature.json").read_text())
    assert [a["name"] for a in signature["arguments"] if a["kind"] == "input"] == names
    readme = (out / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in names)
    sys.path.insert(0, str(out))
    try:
        import load  # the artifact's own loader

        y = load.run(out, {names[0]: np.array([1.0, 2.0], np.float32), names[1]: np.array([3.0, 4.0], np.float32)})
    finally:
        sys.path.remove(str(out))
        sys.modules.pop("load", None)
    assert y["y"].view(np.uint32) == np.float32(11.0).view(np.uint32)


@pytest.mark.parametrize("names", [["a"], ["a", "b", "c"], ["same", "same"]])
def test_bad_input_names_are_refused_and_write_nothing(build: Path, tmp_path: Path, names: list[str],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["export", f"{build}:pair", "-o", str(out), "--input-names", *names]) == 3
    err = capsys.readouterr().err
    assert "--input-names" in err and str(build) in err, err
    assert not out.exists()
