"""Golden fixtures: four small graphs, each read as text and stored in ``tests/golden/``.

Contract:
- :data:`CASES` names four builds: ``line_fit`` (an affine fit ``x @ w + b`` with a mean
  squared error, and its gradient), ``mlp`` (``topos.nn.Mlp`` 2-3-1 tanh under
  ``topos.nn.mse``), ``lenet`` (LeNet's layer sequence at toy widths: two convolutions, each
  followed by relu and a 2x2 max-pool, then two dense layers and ``cross_entropy``) and
  ``block`` (one pre-norm ``topos.nn.Block``: LayerNorm, causal fused-qkv attention,
  LayerNorm, tanh-GELU Mlp, under ``mse``). Each records the loss, differentiates it with
  respect to every parameter (``tape.differentiate``) and lowers one default plan over
  ``adjoints.roots()``: the loss, then each gradient in parameter order, ``Numerics.FAST``,
  every catalog idiom left to election.
- Each case gives three files: ``<case>.network.txt`` (``network.describe()``),
  ``<case>.plan.txt`` (``plan.describe()``: the schedule, liveness and fusions) and
  ``<case>.stablehlo.mlir`` (``plan.emit_stablehlo()``, every catalog match raised).
- Every input and weight is fixed: inputs are ``numpy.linspace`` grids, selections fixed
  lists, weights drawn by ``topos.init`` from fixed seeds. Only public names are imported
  (``topos``, ``topos.init``, ``topos.nn``), so this file builds against any tree that keeps
  that surface, the frozen commit included.
- ``tests/test_golden.py`` regenerates every file in its own process and compares bytes.

Reviewing a diff: a change to a golden file is a change to what a reading writes. Run
``python tests/golden_cases.py --write`` (it rewrites ``tests/golden/`` next to this file),
then read ``git diff tests/golden/``: the network files change when recording changes (new
or reordered nodes), the plan files when scheduling, liveness or fusion election changes,
the StableHLO files when lowering changes. Commit the new files with the change that caused
them and say in the message why each hunk is expected; a hunk nobody can explain is a bug.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

import topos
from topos import Network, Symbol, Tape, Tensor, Value, f32
from topos.init import xavier
from topos.nn import (
    Activation,
    Block,
    Conv2d,
    LayerNorm,
    Linear,
    MaxPool,
    Mlp,
    MultiHeadAttention,
    Sequential,
    causal_mask,
    cross_entropy,
    mse,
    parameters,
)

GOLDEN = Path(__file__).resolve().parent / "golden"
"""Where the stored texts live, beside this file whichever tree imports topos."""

READINGS = ("network.txt", "plan.txt", "stablehlo.mlir")
"""The file suffixes one case writes, in the order :func:`texts` lists them."""


class Recorded(NamedTuple):
    """A sealed network and the roots its plan reads (the loss, then each gradient)."""

    network: Network
    roots: tuple[Symbol, ...]


def _grid(shape: Sequence[int], low: float, high: float) -> np.ndarray[Any, np.dtype[np.float64]]:
    # An even grid keeps the inputs readable and identical on every machine (no RNG involved).
    count = int(np.prod(shape))
    return np.linspace(low, high, count).reshape(tuple(shape))


def _training(tape: Tape, loss: Value, wrt: Sequence[Value | Symbol]) -> Recorded:
    adjoints = tape.differentiate(loss, wrt)
    return Recorded(tape.seal(), adjoints.roots())


def line_fit() -> Recorded:
    """``mean((x @ w + b - y)²)`` over four samples of two features."""
    tape = Tape(f32)
    w = tape.parameter(np.array([[0.5], [-0.25]]))
    b = tape.parameter(np.array([0.125]))
    x = tape.input(_grid((4, 2), -1.0, 1.0))
    y = tape.input(_grid((4, 1), 0.0, 1.0))
    error = x @ w + b.broadcast([4, 1]) - y
    loss = (error * error).sum() / 4.0
    return _training(tape, loss, [w, b])


def mlp() -> Recorded:
    """``topos.nn.Mlp`` 2-3-1 (tanh) regressing four samples under ``mse``."""
    tape = Tape(f32)
    model = Mlp(tape, [2, 3, 1], Activation.TANH, xavier(seed=2))
    x = tape.input(_grid((4, 2), -1.0, 1.0))
    y = tape.input(_grid((4, 1), -0.5, 0.5))
    loss = mse(model(x), y)
    return _training(tape, loss, parameters(model))


def lenet() -> Recorded:
    """LeNet's layers at toy widths: 8x8 images, 2 channels, dense 3, 2 classes, batch 2."""
    tape = Tape(f32)
    init = xavier(31)
    first = Conv2d.init(tape, 1, 2, 3, init, padding=1)
    second = Conv2d.init(tape, 2, 2, 3, init)
    features = Sequential(first, Activation.RELU, MaxPool(2), second, Activation.RELU, MaxPool(2))
    hidden, output = Linear.init(tape, 2, 3, init), Linear.init(tape, 3, 2, init)
    head = Sequential(hidden, Activation.RELU, output)
    images = tape.input(_grid((2, 1, 8, 8), 0.0, 1.0))
    labels = tape.input(Tensor.selection([0, 1], 2, f32))
    logits = head(features(images).reshape((2, 2)))
    loss = cross_entropy(logits, labels)
    return _training(tape, loss, [*parameters(features), *parameters(head)])


def block() -> Recorded:
    """One pre-norm ``topos.nn.Block`` (width 4, 2 heads, 3 positions) under ``mse``."""
    tape = Tape(f32)
    init = xavier(41)
    layer = Block(
        LayerNorm.init(tape, 4, 1e-5),
        MultiHeadAttention.init(tape, 4, 2, init),
        LayerNorm.init(tape, 4, 1e-5),
        Mlp(tape, [4, 8, 4], Activation.GELU_TANH, init),
    )
    x = tape.input(_grid((1, 3, 4), -1.0, 1.0))
    target = tape.input(_grid((1, 3, 4), 1.0, -1.0))
    mask = tape.leaf(causal_mask(3, float("-inf")))
    loss = mse(layer(x, mask), target)
    return _training(tape, loss, parameters(layer))


CASES: dict[str, Callable[[], Recorded]] = {
    "line_fit": line_fit,
    "mlp": mlp,
    "lenet": lenet,
    "block": block,
}
"""The golden builds by name, in the order their files are listed."""


def readings(recorded: Recorded) -> tuple[str, str, str]:
    """The three texts of one case, in :data:`READINGS` order."""
    plan = recorded.network.entry(recorded.roots).lower()
    return recorded.network.describe(), plan.describe(), plan.emit_stablehlo()


def texts(names: Sequence[str] | None = None) -> dict[str, str]:
    """``{file name: text}`` for ``names`` (every case by default), each built afresh."""
    out: dict[str, str] = {}
    for name in names or list(CASES):
        for suffix, text in zip(READINGS, readings(CASES[name]()), strict=True):
            out[f"{name}.{suffix}"] = text
    return out


def write(folder: Path, generated: dict[str, str]) -> None:
    """Write each text as UTF-8 bytes, exactly as generated (no newline translation)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in generated.items():
        (folder / name).write_bytes(text.encode())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate or print the golden texts of tests/golden/.")
    parser.add_argument("--write", action="store_true", help="write every file into --out")
    parser.add_argument("--out", type=Path, default=GOLDEN, help=f"where --write writes (default {GOLDEN})")
    parser.add_argument("--dump", action="store_true", help="print every text on stdout, one after another")
    args = parser.parse_args(argv)
    if args.write == args.dump:
        parser.error("say --write (regenerate the files) or --dump (print them), one of the two")
    generated = texts()
    if args.dump:
        for name, text in generated.items():
            sys.stdout.write(f"==> {name} <==\n{text}")
        return 0
    write(args.out, generated)
    # Which tree's topos produced the files matters when regenerating from another checkout.
    print(f"topos from {Path(topos.__file__).resolve().parent}")
    for name, text in generated.items():
        print(f"wrote {args.out / name} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
