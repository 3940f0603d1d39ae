"""The README's editable install is one a type checker can see.

setuptools implements ``pip install -e`` either as a plain path entry in a ``.pth`` file or
as an import hook; mypy follows the first and not the second, so with the hook a user's
``mypy --strict`` reports ``Cannot find implementation or library stub for module named
"topos"``. ``pyproject.toml`` maps the package root explicitly so that setuptools chooses the
path entry with no extra flag.

The test installs this checkout the way the README does (``pip install -e``, offline:
``--no-index --no-deps --no-build-isolation``) into a throwaway virtual environment, then
runs mypy from the test interpreter with ``--python-executable`` pointing into that
environment, on user scripts in a folder outside the checkout. Like
``tests/test_plugin_package.py``, the venv reaches the test interpreter's own site
directories (numpy, setuptools, wheel) through a ``.pth`` file; those directories hold no
``topos`` that mypy could find instead (the check below makes sure).
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

GOOD = textwrap.dedent(
    """
    from topos import Parameters, Tape, Tensor, Value, f64
    from topos.optim import Optimizer
    from topos.plugins import optimizer


    def line(tape: Tape) -> tuple[Value, Value, Value, Value]:
        w = tape.parameter(0.0)
        x = tape.input(0.0)
        y = tape.input(0.0)
        error = w * x - y
        return w, x, y, error * error


    network, (w, x, y, loss) = Tape.record(line, element=f64)
    sgd: Optimizer = optimizer("sgd")(learning_rate=0.02)
    parameters: Parameters = network.parameters()
    state = sgd.init(parameters)
    gradients = network.forward(parameters, {x: 1.0, y: 2.0}).backward(loss).parameters(parameters)
    parameters, state = sgd.update(gradients, state, parameters)
    weight: Tensor = parameters.of(w)
    value: float = weight.scalar()
    """
)

# Each line is wrong only if mypy knows topos's real types; an unresolved import would make
# them Any and silence both.
BAD = textwrap.dedent(
    """
    from topos import Tape, f64

    tape: int = Tape(f64)
    count: str = Tape(f64).parameter(0.0)
    """
)


def run(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=240, check=False)


@pytest.mark.xdist_group("editable-install")
def test_mypy_strict_sees_the_editable_install_from_outside_the_checkout(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "MYPY"))}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    venv = tmp_path / "venv"
    done = run([sys.executable, "-m", "venv", str(venv)], env, tmp_path)
    assert done.returncode == 0, done.stderr
    python = str(venv / "bin" / "python")
    purelib = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env, tmp_path)
                   .stdout.strip())
    outer = {*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    assert not any((Path(directory) / "topos").exists() for directory in outer), outer
    (purelib / "outer_site.pth").write_text("\n".join(sorted(outer)) + "\n")
    # The fresh venv's bundled setuptools would shadow the outer one, and this checkout needs
    # [build-system]'s setuptools>=77 (an SPDX `license`) to build.
    done = run([python, "-m", "pip", "uninstall", "--quiet", "--yes", "setuptools"], env, tmp_path)
    assert done.returncode == 0, done.stderr

    # The README's command, made offline.
    pip = [python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-build-isolation"]
    done = run([*pip, "-e", str(ROOT)], env, tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    path_entries = [
        line for pth in purelib.glob("__editable__*.pth") for line in pth.read_text().splitlines() if line.strip()
    ]
    assert path_entries == [str(ROOT)], f"the editable install is not a plain path entry: {path_entries}"

    user = tmp_path / "user"  # a user's project: no pyproject, nothing of the checkout
    user.mkdir()
    (user / "good.py").write_text(GOOD)
    (user / "bad.py").write_text(BAD)
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-executable", python]
    done = run([*mypy, "good.py", "bad.py"], env, user)
    report = done.stdout + done.stderr
    assert 'module named "topos"' not in report, report
    assert "good.py" not in report, report
    assert 'bad.py:4: error: Incompatible types in assignment (expression has type "Tape", variable has type "int")' in report, report
    assert 'bad.py:5: error: Incompatible types in assignment (expression has type "Value", variable has type "str")' in report, report
    assert "Found 2 errors in 1 file (checked 2 source files)" in report, report
    assert done.returncode == 1, report
