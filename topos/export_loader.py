"""Run a model written by :func:`topos.export.export` with jax, numpy and safetensors only.

:func:`topos.export.export` copies this file into the artifact as ``load.py``; it imports
nothing from topos, so the artifact runs where topos is not installed. The directory holds:

- ``model.jax``: the plan's StableHLO module as a serialized ``jax.export.Exported``
  (``jax.export.deserialize`` reads it; XLA:CPU),
- ``weights.safetensors``: one entry per parameter, named as ``signature.json`` says,
- ``signature.json``: ``arguments`` (parameters then inputs, in ``@main``'s order) and
  ``outputs``, each with its name, shape and dtype, plus the compiler options to run with.

Inputs recorded as one-hot selections cross as row indices (``"encoding": "indices"``): feed
the indices, ``int32[count]``, not the one-hot matrix.

Example (any Python with jax, numpy and safetensors)::

    import sys; sys.path.insert(0, "exported")
    import load
    outputs = load.run("exported", {"tokens": np.array([0, 0, 5], dtype=np.int32)})
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

FORMAT = "topos-export/1"


class Model:
    """One exported model, deserialized and compiled once; call it with feeds by name."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        import jax
        from safetensors.numpy import load_file

        with open(os.path.join(directory, "signature.json"), encoding="utf-8") as file:
            self.signature: dict[str, Any] = json.load(file)
        if self.signature.get("format") != FORMAT:
            raise ValueError(f"{directory}: not a {FORMAT} artifact (format {self.signature.get('format')!r})")
        with open(os.path.join(directory, self.signature["module"]), "rb") as file:
            exported = jax.export.deserialize(bytearray(file.read()))
        self.weights: dict[str, np.ndarray[Any, Any]] = load_file(os.path.join(directory, self.signature["weights"]))
        self._wide = any(np.dtype(_dtype(entry["dtype"])).itemsize == 8
                         for entry in (*self.signature["arguments"], *self.signature["outputs"]))
        self._call = jax.jit(exported.call, compiler_options=dict(self.signature["compiler_options"]))

    @property
    def inputs(self) -> list[str]:
        """The names to feed, in ``@main``'s order."""
        return [entry["name"] for entry in self.signature["arguments"] if entry["kind"] == "input"]

    @property
    def outputs(self) -> list[str]:
        """The names of the results, in declared order."""
        return [entry["name"] for entry in self.signature["outputs"]]

    def arguments(self, feeds: Mapping[str, Any]) -> list[np.ndarray[Any, Any]]:
        """The arrays for ``@main``: weights and feeds, each checked against the signature."""
        unknown = sorted(set(feeds) - set(self.inputs))
        missing = [name for name in self.inputs if name not in feeds]
        if unknown or missing:
            raise ValueError(f"feeds must name exactly the inputs {self.inputs}; missing {missing}, unknown {unknown}")
        arrays = []
        for entry in self.signature["arguments"]:
            name, shape, dtype = entry["name"], tuple(entry["shape"]), _dtype(entry["dtype"])
            given = self.weights[name] if entry["kind"] == "parameter" else feeds[name]
            array = np.asarray(given)
            if array.shape != shape:
                raise ValueError(f"{entry['kind']} {name!r} must have shape {list(shape)}, got {list(array.shape)}")
            if array.dtype != dtype:
                if entry.get("encoding") == "indices" and array.dtype.kind not in "iu":
                    raise ValueError(f"input {name!r} takes row indices ({entry['dtype']}), got {array.dtype}")
                array = array.astype(dtype)
            arrays.append(array)
        return arrays

    def __call__(self, feeds: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
        """Run once: ``{output name: array}``."""
        import jax

        arrays = self.arguments(feeds)
        if self._wide:
            with jax.enable_x64(True):
                results = self._call(*arrays)
        else:
            results = self._call(*arrays)
        return {name: np.asarray(result) for name, result in zip(self.outputs, results, strict=True)}


def _dtype(name: str) -> np.dtype[Any]:
    import jax.numpy as jnp

    found: np.dtype[Any] = jnp.dtype(name)  # knows bfloat16, which numpy alone does not
    return found


def load(directory: str | os.PathLike[str]) -> Model:
    """Read and compile the artifact in ``directory``."""
    return Model(directory)


def run(directory: str | os.PathLike[str], feeds: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
    """Load the artifact and run it once on ``feeds`` (``{input name: array}``)."""
    return Model(directory)(feeds)


if __name__ == "__main__":
    import sys

    model = load(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
    print(json.dumps({"inputs": model.inputs, "outputs": model.outputs}))
