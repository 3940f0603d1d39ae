"""A real plugin package, installed: ``examples/plugins`` built by pip into a fresh venv.

The test creates a throwaway virtual environment, installs topos (editable, from this
checkout) and the example plugin package into it with pip, never touching the network
(``--no-index``, ``--no-deps``, ``--no-build-isolation``), then, in that environment, looks
the plugin's Lion optimizer up *by name* through the entry point and trains the README's
line fit with it.

The venv sees the packages of the interpreter running the tests (numpy, attrs, pluggy,
setuptools, wheel) through ``--system-site-packages`` and, for when that interpreter is
itself a venv (as in CI), a ``.pth`` file naming its site directories.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

TRAIN = textwrap.dedent(
    """
    import json
    import topos_lion
    from topos import Tape, Value, f64
    from topos.optim import schedules
    from topos.plugins import element_type, optimizer, registry

    def line(tape: Tape) -> tuple[Value, Value, Value, Value]:
        w = tape.parameter(0.0)
        x = tape.input(0.0)
        y = tape.input(0.0)
        error = w * x - y
        return w, x, y, error * error

    network, (w, x, y, loss) = Tape.record(line, element=f64)
    lion = optimizer("lion")(learning_rate=schedules.cosine_decay(0.05, 300))
    parameters = network.parameters()
    state = lion.init(parameters)
    samples = [(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]
    for step in range(300):
        sample_x, sample_y = samples[step % len(samples)]
        run = network.forward(parameters, {x: sample_x, y: sample_y})
        gradients = run.backward(loss).parameters(parameters)
        parameters, state = lion.update(gradients, state, parameters)
    print(json.dumps({
        "w": parameters.of(w).scalar(),
        "kind": type(lion).__name__,
        "module": topos_lion.__file__,
        "owner": registry().owner("topos_optimizers", "lion"),
        "f16": str(element_type("f16").dtype),
        "plugins": registry().plugins(),
        "failures": [f.reason for f in registry().failures()],
        "steps": state.step,
    }))
    """
)


def run(command: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.xdist_group("editable-install")
def test_the_example_plugin_installs_and_its_optimizer_trains_by_name(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], env)
    python = str(venv / "bin" / "python")
    purelib = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env).strip())
    outer = {*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "outer_site.pth").write_text("\n".join(sorted(outer)) + "\n")
    # The fresh venv's bundled setuptools would shadow the outer one, and this checkout needs
    # [build-system]'s setuptools>=77 (an SPDX `license`) to build.
    run([python, "-m", "pip", "uninstall", "--quiet", "--yes", "setuptools"], env)

    pip = [python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-build-isolation"]
    run([*pip, "--editable", str(ROOT)], env)
    # Build from a copy so the checkout gets no build/ or egg-info folders.
    package = tmp_path / "topos-lion"
    shutil.copytree(
        ROOT / "examples" / "plugins", package, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    # The plugin's own dependencies are resolved (no --no-deps), still with no index: they
    # must all be met by what is installed, ``topos-autodiff`` among them, so nothing named
    # like the unrelated ``topos`` on the index could be pulled in.
    run([python, "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation", str(package)], env)
    installed = sorted(p.name.split("-")[0] for p in purelib.glob("*.dist-info"))
    assert [name for name in installed if name not in ("pip", "setuptools")] == ["topos_autodiff", "topos_lion"], installed

    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    # Run from tmp_path so that nothing from the checkout's examples/ can be imported.
    result = json.loads(subprocess.run(
        [python, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180, check=True
    ).stdout)
    assert result["kind"] == "Lion"
    assert Path(result["module"]).is_relative_to(venv), result["module"]  # the installed copy
    assert result["owner"] == "lion" and result["plugins"][-1] == "lion"  # found through the entry point
    assert result["failures"] == []
    assert result["f16"] == "float16"
    assert result["steps"] == 300
    assert abs(result["w"] - 2.0) < 1e-3, result["w"]
