"""Sphinx configuration for the topos API reference (``docs/api``).

Build: ``python -m sphinx -W --keep-going -b html docs/api build/api-docs`` from the
repository root. The build never touches the network: intersphinx reads the small
inventories of numpy and jax names that ``_ext/inventories.py`` writes into the build's
doctree folder (see that module), not the projects' published ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parents[1]))  # the checkout's topos, not an installed one

project = "topos"
author = "the topos authors"
copyright = "the topos authors"
release = version = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.intersphinx",
    "inventories",
    "toposmap",
]

# Every unresolved cross-reference is a warning, and the tests build with -W.
nitpicky = True
default_role = "py:obj"
primary_domain = "py"

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
# Every public object a module defines, not only its ``__all__``: docstrings refer to
# helpers (constants, tables) that the module keeps out of its star-export.
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    "ignore-module-all": True,
    # Kernels and CLI handlers without a docstring still get a signature entry.
    "undoc-members": True,
}
autodoc_inherit_docstrings = True
python_use_unqualified_type_names = True

# Annotations may name private helpers (``_Opcode``), type variables and type aliases,
# which have no page of their own; everything else must resolve.
nitpick_ignore_regex = [
    ("py:class", r"(.*\.)?_[A-Za-z]\w*"),  # private helpers
    ("py:obj", r"(.*\.)?_[A-Za-z]\w*"),  # private type variables (topos.optim.base._V)
    ("py:class", r"(.*\.)?[A-Z]"),  # one-letter type variables (R, P)
]
nitpick_ignore = [
    ("py:class", "topos.checkpoint.State"),  # a TypeVar
    ("py:class", "Names"),  # topos.render's alias for an optional symbol-name mapping
    ("py:class", "npt.DTypeLike"),  # numpy.typing's alias; no numpy inventory is loaded
    ("py:class", "Lowering"),  # topos.stages.emission's alias for one opcode's lowering
    ("py:class", "argparse.ArgumentParser"),  # the standard library's; no Python inventory is loaded
]

intersphinx_timeout = 1  # never reached: every inventory is a local file

html_theme = "alabaster"
html_title = "topos API reference"
html_static_path: list[str] = []
exclude_patterns = ["_build"]
