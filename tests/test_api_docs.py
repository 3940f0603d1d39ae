"""The API reference (docs/api) builds from the docstrings with every warning an error.

The build is nitpicky, so a cross-reference to a name that is not documented fails it, and
it never touches the network: intersphinx reads the small inventories that
``docs/api/_ext/inventories.py`` writes (see :func:`test_offline_inventories_are_byte_stable`).
The built ``objects.inv`` is then read back to check coverage: every public class and
function a topos module defines has an entry, and every name of the flat surface and of the
two maps (``topos.model``, ``topos.compiler``) resolves to a documented home.
"""

from __future__ import annotations

import importlib
import inspect
import io
import pkgutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

import topos

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"
sys.path.insert(0, str(API / "_ext"))
# The build's own extensions, imported the way conf.py imports them (not a package).
inventories: Any = importlib.import_module("inventories")
toposmap: Any = importlib.import_module("toposmap")


def _entries(data: bytes) -> dict[str, str]:
    """name -> domain:role of a version 2 inventory (the format Sphinx writes)."""
    stream = io.BytesIO(data)
    header = [stream.readline().decode() for _ in range(4)]
    assert header[0] == "# Sphinx inventory version 2\n", header
    out: dict[str, str] = {}
    for line in zlib.decompress(stream.read()).decode().splitlines():
        name, role = line.split(" ")[:2]
        out[name] = role
    return out


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("api")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            str(API),
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    return done, out


def _public_modules() -> list[Any]:
    names = ["topos"] + [
        m.name for m in pkgutil.walk_packages(topos.__path__, "topos.") if "._" not in m.name
    ]
    return [importlib.import_module(n) for n in sorted(names)]


def test_the_reference_builds_without_a_warning(
    built: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, out = built
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert "WARNING" not in done.stderr and "ERROR" not in done.stderr, done.stderr[-6000:]
    for page in (
        "index",
        "model",
        "compiler",
        "nn",
        "optim",
        "checkpoint",
        "testing",
        "render",
        "cli",
        "errors",
    ):
        assert (out / f"{page}.html").is_file(), page


def test_every_public_class_and_function_has_an_entry(
    built: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, out = built
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    documented = _entries((out / "objects.inv").read_bytes())
    missing = []
    for module in _public_modules():
        for name, obj in vars(module).items():
            if name.startswith("_") or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if obj.__module__ != module.__name__:
                continue  # imported: documented where it is defined
            if f"{module.__name__}.{obj.__qualname__}" not in documented:
                missing.append(f"{module.__name__}.{obj.__qualname__}")
    assert not missing, f"public objects without an API entry (a docstring is missing?): {missing}"


@pytest.mark.parametrize("surface", ["topos", "topos.model", "topos.compiler"])
def test_every_exported_name_of_the_maps_has_a_documented_home(
    built: tuple[subprocess.CompletedProcess[str], Path], surface: str
) -> None:
    done, out = built
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    documented = _entries((out / "objects.inv").read_bytes())
    module = importlib.import_module(surface)
    homes = {name: toposmap.locate(f"{surface}.{name}") for name in module.__all__}
    unresolved = {name: home for name, home in homes.items() if home not in documented}
    assert not unresolved, unresolved
    # A map only re-exports: no name's home is the map itself.
    assert not [home for home in homes.values() if str(home).rsplit(".", 1)[0] == surface]
    page = "index" if surface == "topos" else surface.split(".")[1]
    html = (out / f"{page}.html").read_text()
    for name in module.__all__:
        assert f'<span class="pre">{name}</span>' in html, (surface, name)


def test_offline_inventories_are_byte_stable_and_list_every_name() -> None:
    for project in inventories.PROJECTS:
        first, second = inventories.inventory(project), inventories.inventory(project)
        assert first == second
        entries = _entries(first)
        wanted = {name: role for owner, name, role, _ in inventories.NAMES if owner == project}
        assert entries == wanted, project
    # Each page is relative to the project's public root: the build never fetches them.
    assert all(not page.startswith(("http", "/")) for _, _, _, page in inventories.NAMES)
