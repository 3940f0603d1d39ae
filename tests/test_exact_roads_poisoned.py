"""The exact roads run with every machine-dependent numpy call poisoned.

``tests/test_libm_allowed.py`` reads the kernels' sources; this runs them. numpy's
transcendentals, powers, BLAS products and reductions whose order numpy chooses (pairwise
``sum``, ``add.reduce``, ``dot``, ``einsum``) and the math module's transcendentals are
replaced by functions that raise, and builtin calls are watched with ``sys.setprofile``
(which sees ``ndarray.sum``, ``add.reduce`` and the like, but not ufunc calls: those are the
replaced names). Then the digests' jobs (every opcode and map on special values, LeNet, a
small GPT) record, differentiate, lower to an exact plan with every fusion offered, run one
step and run through the interpreter, in f32, f64 and bf16. Any poisoned call fails the
test, naming it.

Kernels that captured a ufunc at import (the Fast posture's tables) are not reached here:
under the Exact posture no kernel may call them, which is what a poisoned run shows.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

import mpmath  # loaded before the poison: its import computes table sizes with math.log
import numpy as np
import pytest

from topos import Numerics, bf16, f32, f64
from topos.digest import JOBS
from topos.ir.element import ElementType
from topos.stages.gradient import gradient

NUMPY_POISON = (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "sinh", "cosh", "sin", "cos",
    "tan", "arcsin", "arccos", "arctan", "arctan2", "arcsinh", "arctanh", "hypot", "power",
    "float_power", "matmul", "dot", "vdot", "inner", "einsum", "tensordot", "sum", "prod",
    "mean", "cumsum", "nansum", "polyval",
)
MATH_POISON = ("exp", "expm1", "log", "log1p", "log2", "log10", "tanh", "sin", "cos", "atan", "erf", "pow")
# Builtin methods whose order (pairwise, BLAS) is numpy's or the library's choice. The
# poison spares calls from numpy's and mpmath's own modules (see _raiser).
METHOD_POISON = frozenset({"sum", "prod", "mean", "dot", "cumsum", "matmul"})
# ufunc methods allowed under the exact posture: the reference's ordered folds.
UFUNC_METHODS_ALLOWED = {
    ("add", "accumulate"), ("maximum", "reduce"), ("add", "at"), ("minimum", "reduce"),
    # any() and all(): boolean, exact in any order
    ("logical_or", "reduce"), ("logical_and", "reduce"),
}  # fmt: skip


WATCHED = ("topos", __name__)


class Poisoned(AssertionError):
    pass


def _raiser(name: str, original: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        # mpmath (which settles the rare open float32 lanes in integers) sizes its series
        # with math.log; that decides how much work it does, never a result's bits.
        # numpy's own helpers multiply shapes with np.prod (integers, exact).
        if str(sys._getframe(1).f_globals.get("__name__", "")).startswith(("mpmath", "numpy")):
            return original(*args, **kwargs)
        raise Poisoned(f"an exact road called {name}")

    return call


@pytest.fixture
def poisoned(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    for name in NUMPY_POISON:
        monkeypatch.setattr(np, name, _raiser(f"np.{name}", getattr(np, name)))
    for name in MATH_POISON:
        monkeypatch.setattr(math, name, _raiser(f"math.{name}", getattr(math, name)))
    seen: list[str] = []

    def watch(frame: FrameType, event: str, arg: Any) -> None:
        # Calls made by topos's own code (and by this file's self-check): numpy's helpers
        # reduce integer shapes and boolean masks, which no order can change.
        if event != "c_call" or not str(frame.f_globals.get("__name__", "")).startswith(WATCHED):
            return
        name = getattr(arg, "__name__", "")
        owner = getattr(arg, "__self__", None)
        if isinstance(owner, np.ufunc):
            if name in ("reduce", "accumulate", "reduceat", "outer", "at") and (owner.__name__, name) not in UFUNC_METHODS_ALLOWED:
                seen.append(f"np.{owner.__name__}.{name} (at {frame.f_code.co_filename}:{frame.f_lineno})")
        elif isinstance(owner, np.ndarray) and name in METHOD_POISON:
            seen.append(f"ndarray.{name} (at {frame.f_code.co_filename}:{frame.f_lineno})")

    sys.setprofile(watch)
    try:
        yield seen
    finally:
        sys.setprofile(None)


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=["f32", "f64", "bf16"])
@pytest.mark.parametrize("job", [j.name for j in JOBS if j.name != "makemore"])
def test_exact_roads_never_call_a_machine_map(element: ElementType, job: str, poisoned: list[str]) -> None:
    prepared = next(j for j in JOBS if j.name == job).prepare(element)
    network, roots = prepared.network, prepared.roots
    feeds = {} if prepared.feeds is None else dict(prepared.feeds(0))
    longer, adjoints = gradient(network, roots[0], network.parameter_symbols())
    plan = longer.entry([*roots, *adjoints.gradients()]).numerics(Numerics.EXACT).lower()
    parameters = network.parameters()
    planned = plan.forward(parameters, feeds)
    with Numerics.exactly():
        oracle = longer.forward(parameters, feeds)
        engine = network.forward(parameters, feeds).backward(roots[0])
    assert poisoned == [], poisoned
    for symbol in (*roots, *adjoints.gradients()):
        assert planned.of(symbol).bits().tolist() == oracle.of(symbol).bits().tolist()
    for symbol in network.parameter_symbols():
        assert engine.of(symbol).bits().shape == parameters.of(symbol).bits().shape


def test_the_poison_reaches_numpy_and_the_watch_sees_reductions(poisoned: list[str]) -> None:
    with pytest.raises(Poisoned, match=r"np\.exp"):
        np.exp(np.ones(3))
    np.ones(4).sum()
    np.add.reduce(np.ones(4))
    np.add.accumulate(np.ones(4))
    assert [s.split(" ")[0] for s in poisoned] == ["ndarray.sum", "np.add.reduce"]
    assert mpmath.mpf(1) == 1


def test_the_poison_catches_the_fast_posture(poisoned: list[str]) -> None:
    """The same run under Numerics.FAST reaches numpy's maps, BLAS and pairwise sums: the
    poison and the watch see topos's own calls, not only this file's."""
    prepared = next(j for j in JOBS if j.name == "lenet").prepare(f32)
    network, roots = prepared.network, prepared.roots
    longer, adjoints = gradient(network, roots[0], network.parameter_symbols())
    plan = longer.entry([*roots, *adjoints.gradients()]).numerics(Numerics.FAST).lower()
    feeds = {} if prepared.feeds is None else dict(prepared.feeds(0))
    try:
        plan.forward(network.parameters(), feeds)
    except Poisoned:
        return
    assert poisoned, "a Fast plan ran with every machine-dependent call poisoned and none seen"
