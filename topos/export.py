"""Exported models: a trained inference plan as a directory that runs without topos.

Contract:
- :func:`export` writes ``model.jax`` (the plan's StableHLO as a serialized
  ``jax.export.Exported`` for XLA:CPU), ``weights.safetensors`` (the plan's parameters),
  ``signature.json`` (format ``topos-export/2``: arguments and outputs in order with names,
  shapes, dtypes; the size and SHA-256 of ``model.jax`` and ``weights.safetensors``; and
  the signature's own digest) and ``load.py`` (:mod:`topos.export_loader`: jax and numpy,
  no topos), which verifies all of it before anything runs and checks every feed; beside it
  ``requirements.txt`` (the packages and ranges load.py needs) and ``README.md`` (how to
  install them and call the model, with its inputs and outputs).
- Names: ``names`` maps symbols to names; parameters otherwise take their module path when
  ``module`` is given (``head.0.weights``), and anything else a positional name
  (``parameter_0``, ``input_0``, ``output_0``). Names must be unique among the arguments
  and among the outputs.
- The artifact is written to a fresh sibling folder and renamed into place, so a refused or
  interrupted export leaves no partial directory; an existing non-empty ``directory`` is
  refused.
- Numerics are the XLA road's (docs/acceleration.md): an envelope around the plan's numpy
  results, bit for bit with :class:`~topos.xla.XlaExecutable` of the same plan.
- Needs the ``xla`` extra (jax, jaxlib, and flatbuffers for ``Exported.serialize``).

Example:
    >>> import tempfile, os
    >>> from topos import Tape
    >>> network, y = Tape.record(lambda t: (t.parameter([1.0, 2.0]) * t.input([3.0, 4.0])).sum())
    >>> folder = os.path.join(tempfile.mkdtemp(), "model")
    >>> exported = export(network.entry(y).lower(), network.parameters(), folder)
    >>> exported.inputs, exported.outputs
    (('input_0',), ('output_0',))
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, final

import attrs

from topos import export_loader
from topos.atomic import staged_directory
from topos.errors import ToposError, user_site
from topos.ir.node import Symbol
from topos.nn.module import Visitable, named_parameters
from topos.stages.plan import Plan
from topos.state import Parameters
from topos.tensor import Tensor

__all__ = ["ExportError", "ExportedModel", "export"]

MODULE: Final = "model.jax"
WEIGHTS: Final = "weights.safetensors"
SIGNATURE: Final = "signature.json"
LOADER: Final = "load.py"
README: Final = "README.md"


class ExportError(ToposError):
    """An export was refused: bad names, a taken directory, a module jax cannot serialize."""


@final
@attrs.frozen(slots=True)
class ExportedModel:
    """What :func:`export` wrote: the directory and the names to feed and read, in order."""

    directory: Path
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


def export(
    plan: Plan,
    parameters: Parameters,
    directory: str | os.PathLike[str],
    *,
    names: Mapping[Symbol, str] | None = None,
    module: Visitable | None = None,
) -> ExportedModel:
    """Write ``plan`` with ``parameters`` to ``directory`` as a self-contained artifact.

    Example:
        >>> import tempfile, os
        >>> from topos import Tape
        >>> network, (x, y) = Tape.record(lambda t: (lambda x: (x, x.tanh()))(t.input([0.5])))
        >>> folder = os.path.join(tempfile.mkdtemp(), "tanh")
        >>> export(network.entry(y).lower(), network.parameters(), folder, names={x: "x", y: "y"}).outputs
        ('y',)
    """
    from topos import xla

    site = user_site()
    if not isinstance(plan, Plan):
        raise ExportError(f"{site}: export() takes a Plan (network.entry(...).lower()), got {type(plan).__name__}")
    if not isinstance(parameters, Parameters):
        raise ExportError(f"{site}: export() takes a Parameters table, got {type(parameters).__name__}")
    network = plan.network
    parameters.check(network)
    target = Path(directory)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ExportError(f"{site}: {target} exists and is not an empty directory; export writes a fresh one")

    executable = xla.XlaExecutable.of_plan(plan)
    sig = executable.compiled.signature
    arguments = _argument_nodes(plan)
    named = _names(plan, arguments, names or {}, module, site)

    entries: dict[str, Tensor] = {}
    described: list[dict[str, object]] = []
    for position, index in enumerate(arguments):
        shape, dtype = sig.inputs[position]
        name = named[index]
        entry: dict[str, object] = {"name": name, "shape": list(shape), "dtype": dtype.name}
        if network.parameter_slot(index) is not None:
            entry = {"kind": "parameter", **entry}
            entries[name] = parameters.of(network.symbol(index))
        else:
            entry = {"kind": "input", **entry}
            recorded = network.sources[index]
            if dtype.kind == "i" and recorded.is_selection:
                entry.update(encoding="indices", vocab=recorded.shape[1], one=recorded.selection_one)
        described.append(entry)
    outputs = [
        {"name": named_output, "shape": list(shape), "dtype": dtype.name}
        for named_output, (shape, dtype) in zip(_output_names(plan, names or {}, site), sig.outputs, strict=True)
    ]
    signature: dict[str, object] = {
        "format": export_loader.FORMAT,
        "platforms": ["cpu"],
        "element": network.element.name,
        "compiler_options": dict(sorted(xla.IEEE_COMPILER_OPTIONS.items())),
        "arguments": described,
        "outputs": outputs,
    }
    try:
        serialized = bytes(xla.exported_module(executable.text, sig).serialize())
    except ImportError as error:
        raise ExportError(f"{site}: serializing the module needs the 'flatbuffers' package ({error})") from None
    except Exception as error:
        raise ExportError(f"{site}: jax could not export the plan's module: {error}") from None

    from topos import checkpoint

    # An existing target is empty (checked above), so the staged folder may replace it.
    with staged_directory(target) as staging:
        (staging / MODULE).write_bytes(serialized)
        if entries:
            checkpoint.write(staging / WEIGHTS, entries)
        else:  # checkpoints refuse to be empty; a parameterless model still gets a valid file
            (staging / WEIGHTS).write_bytes((8).to_bytes(8, "little") + b"{}      ")
        # The digests are of the bytes as they lie on disk, read back, so the loader checks what it will read.
        for part, name in (("module", MODULE), ("weights", WEIGHTS)):
            written = (staging / name).read_bytes()
            signature[part] = {"file": name, "size": len(written), "sha256": hashlib.sha256(written).hexdigest()}
        signature["sha256"] = export_loader.signature_digest(signature)
        (staging / SIGNATURE).write_text(json.dumps(signature, indent=2) + "\n", encoding="utf-8")
        shutil.copyfile(Path(export_loader.__file__), staging / LOADER)
        (staging / export_loader.REQUIREMENTS_FILE).write_text(export_loader.requirements_text(), encoding="utf-8")
        (staging / README).write_text(_readme(described, outputs), encoding="utf-8")
    inputs = tuple(str(entry["name"]) for entry in described if entry["kind"] == "input")
    return ExportedModel(target, inputs, tuple(str(output["name"]) for output in outputs))


def _readme(arguments: Sequence[Mapping[str, object]], outputs: Sequence[Mapping[str, object]]) -> str:
    def rows(entries: Sequence[Mapping[str, object]]) -> str:
        return "".join(f"- `{e['name']}`: {e['dtype']}{e['shape']}"
                       + (f" (row indices below {e['vocab']})" if e.get("encoding") == "indices" else "") + "\n"
                       for e in entries) or "- (none)\n"

    inputs = [entry for entry in arguments if entry["kind"] == "input"]
    return (
        "# Exported model\n\n"
        f"Runs with `{LOADER}` alone; topos need not be installed. `{LOADER}` needs the packages in\n"
        f"`{export_loader.REQUIREMENTS_FILE}` (numpy, jax, jaxlib and flatbuffers, which jax uses to read\n"
        f"`{MODULE}`): `python -m pip install -r {export_loader.REQUIREMENTS_FILE}`. If one is missing,\n"
        "loading names it.\n\n"
        "```python\nimport sys; sys.path.insert(0, \"path/to/this/folder\")\nimport load\n"
        "outputs = load.run(\"path/to/this/folder\", {name: array, ...})\n```\n\n"
        f"Inputs (feed by name):\n\n{rows(inputs)}\nOutputs:\n\n{rows(outputs)}\n"
        f"`{SIGNATURE}` records the same with the parameters and the files' SHA-256 digests.\n"
    )


def _argument_nodes(plan: Plan) -> list[int]:
    """``@main``'s arguments: the plan's parameters, then its inputs (as the XLA road orders them)."""
    wanted = set(plan.scheduled)
    network = plan.network
    return [i for i in network.parameter_nodes if i in wanted] + [i for i in network.input_nodes if i in wanted]


def _names(
    plan: Plan, arguments: list[int], names: Mapping[Symbol, str], module: Visitable | None, site: str
) -> dict[int, str]:
    network = plan.network
    paths: dict[int, str] = {}
    if module is not None:
        for path, symbol in named_parameters(module):
            paths.setdefault(network.index(symbol, "module parameter"), str(path))
    by_index = _indexed(plan, names, site)
    named: dict[int, str] = {}
    counts = {"parameter": 0, "input": 0}
    for index in arguments:
        kind = "parameter" if network.parameter_slot(index) is not None else "input"
        fallback = paths.get(index, f"{kind}_{counts[kind]}")
        counts[kind] += 1
        named[index] = by_index.get(index, fallback)
    _unique(list(named.items()), "arguments", plan, site)
    return named


def _output_names(plan: Plan, names: Mapping[Symbol, str], site: str) -> list[str]:
    by_index = _indexed(plan, names, site)
    network = plan.network
    results = [network.index(symbol) for symbol in plan.results()]
    chosen = [(index, by_index.get(index, f"output_{k}")) for k, index in enumerate(results)]
    _unique(chosen, "outputs", plan, site)
    return [name for _, name in chosen]


def _indexed(plan: Plan, names: Mapping[Symbol, str], site: str) -> dict[int, str]:
    network = plan.network
    if not isinstance(names, Mapping):
        raise ExportError(f"{site}: names must map symbols to strings, got {type(names).__name__}")
    allowed = {*_argument_nodes(plan), *(network.index(symbol) for symbol in plan.results())}
    out: dict[int, str] = {}
    for symbol, name in names.items():
        if not isinstance(symbol, Symbol):
            raise ExportError(f"{site}: names must be keyed by Symbol, got {type(symbol).__name__} {symbol!r}")
        if not isinstance(name, str) or not name or name.startswith("__"):
            raise ExportError(
                f"{site}: the name for {symbol!r} must be a non-empty string not starting with '__', got {name!r}"
            )
        index = network.index(symbol, "named")
        if index not in allowed:
            raise ExportError(
                f"{site}: {network.describe_symbol(index)} is named {name!r} but is no argument or result of this plan"
            )
        out[index] = name
    return out


def _unique(chosen: list[tuple[int, str]], what: str, plan: Plan, site: str) -> None:
    first: dict[str, int] = {}
    for index, name in chosen:
        if name in first and first[name] != index:
            network = plan.network
            raise ExportError(
                f"{site}: two {what} are both named {name!r}: {network.describe_symbol(first[name])} and "
                f"{network.describe_symbol(index)}"
            )
        first.setdefault(name, index)
