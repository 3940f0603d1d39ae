"""Offline intersphinx inventories for the numpy, jax and Python names the reference links to.

The published ``objects.inv`` files of numpy, jax and Python would need the network, and no
installed package ships them. This extension writes a minimal inventory for each project
(Sphinx's version 2 format: a four-line header, then zlib-compressed ``name domain:role
priority uri display`` lines) into the build's doctree folder before intersphinx reads
it, and points ``intersphinx_mapping`` at those files. The links in the built pages go to
the projects' public documentation. A name missing here is an unresolved reference, which
the ``-W`` build turns into an error: add it to :data:`NAMES` with its page.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

PROJECTS: dict[str, tuple[str, str]] = {
    # key: (public documentation root, version the names were checked against)
    "numpy": ("https://numpy.org/doc/stable/", "2.4"),
    "jax": ("https://docs.jax.dev/en/latest/", "0.10.2"),
    "python": ("https://docs.python.org/3/", "3.11"),
}

# (project, name, domain:role, page relative to the root); "$" in a page stands for the name.
NAMES: tuple[tuple[str, str, str, str], ...] = (
    ("numpy", "numpy.ndarray", "py:class", "reference/generated/numpy.ndarray.html#$"),
    ("numpy", "numpy.dtype", "py:class", "reference/generated/numpy.dtype.html#$"),
    ("numpy", "numpy.generic", "py:class", "reference/arrays.scalars.html#$"),
    ("numpy", "numpy.floating", "py:class", "reference/arrays.scalars.html#$"),
    ("numpy", "numpy.float32", "py:class", "reference/arrays.scalars.html#$"),
    ("numpy", "numpy.float64", "py:class", "reference/arrays.scalars.html#$"),
    ("numpy", "numpy.uint32", "py:class", "reference/arrays.scalars.html#$"),
    ("numpy", "numpy.int64", "py:class", "reference/arrays.scalars.html#$"),
    ("numpy", "numpy.random.Generator", "py:class", "reference/random/generator.html#$"),
    ("numpy", "numpy.random._generator.Generator", "py:class", "reference/random/generator.html#numpy.random.Generator"),
    ("numpy", "numpy.typing.NDArray", "py:data", "reference/typing.html#$"),
    ("numpy", "numpy.typing.ArrayLike", "py:data", "reference/typing.html#$"),
    ("numpy", "numpy.typing.DTypeLike", "py:data", "reference/typing.html#$"),
    ("python", "collections.abc.Callable", "py:class", "library/collections.abc.html#$"),
    ("python", "collections.abc.Sequence", "py:class", "library/collections.abc.html#$"),
    ("python", "collections.abc.Mapping", "py:class", "library/collections.abc.html#$"),
    ("python", "collections.abc.Iterable", "py:class", "library/collections.abc.html#$"),
    ("python", "collections.abc.Iterator", "py:class", "library/collections.abc.html#$"),
    ("python", "enum.Enum", "py:class", "library/enum.html#$"),
    ("python", "os.PathLike", "py:class", "library/os.html#$"),
    ("python", "pathlib.Path", "py:class", "library/pathlib.html#$"),
    ("python", "types.ModuleType", "py:class", "library/types.html#$"),
    ("python", "linecache", "py:module", "library/linecache.html#module-$"),
    ("python", "argparse.Namespace", "py:class", "library/argparse.html#$"),
    ("python", "html.escape", "py:function", "library/html.html#$"),
    ("jax", "jax.Array", "py:class", "_autosummary/jax.Array.html#$"),
    ("jax", "jax.jit", "py:function", "_autosummary/jax.jit.html#$"),
    (
        "jax",
        "jax.distributed.initialize",
        "py:function",
        "_autosummary/jax.distributed.initialize.html#$",
    ),
    (
        "jax",
        "jax.make_array_from_callback",
        "py:function",
        "_autosummary/jax.make_array_from_callback.html#$",
    ),
)


def inventory(project: str) -> bytes:
    """The inventory file of ``project``: the same bytes for the same :data:`NAMES`."""
    _, version = PROJECTS[project]
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        f"# Version: {version}\n"
        "# The remainder of this file is compressed using zlib.\n"
    ).encode()
    lines = "".join(
        f"{name} {role} 1 {page} -\n"
        for owner, name, role, page in sorted(NAMES)
        if owner == project
    )
    return header + zlib.compress(lines.encode(), 9)


def _write(app: Any, config: Any) -> None:
    folder = Path(app.doctreedir) / "inventories"
    folder.mkdir(parents=True, exist_ok=True)
    mapping: dict[str, tuple[str, tuple[str]]] = {}
    for project, (root, _) in PROJECTS.items():
        path = folder / f"{project}.inv"
        path.write_bytes(inventory(project))
        mapping[project] = (root, (str(path),))
    config.intersphinx_mapping = mapping


def setup(app: Any) -> dict[str, Any]:
    # Before intersphinx normalizes its mapping (its own handler runs at priority 800).
    app.connect("config-inited", _write, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
