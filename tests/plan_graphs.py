"""Hypothesis-drawn graphs over every opcode, shared by the plan tests.

A drawn graph is a list of steps; each step picks an opcode and an operand from the values
recorded so far and records that opcode (with fresh parameters or selections where the
opcode needs a partner of a particular shape). The loss sums every value the graph made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from topos import Network, Symbol, Tape, Tensor, Value
from topos.ir.element import ElementType

OPCODE_STEPS = (
    "add", "sub", "mul", "div", "neg", "map", "matmul", "sum", "sum_along", "broadcast",
    "broadcast_along", "reshape", "permute", "narrow", "pad", "unfold_fold", "gather", "scatter",
    "log_softmax", "logsumexp", "powf", "maximum", "step", "select", "stop_gradient",
)  # fmt: skip
"""Every computing opcode (Leaf, Parameter and Input appear as sources in every graph)."""

MAPS = ("exp", "ln", "sqrt", "tanh", "sin", "cos", "log1p", "expm1", "erf", "erf_derivative", "atan")


class Graph:
    """A recorded drawn graph: the network, its parameters, inputs, loss and every value."""

    def __init__(self, network: Network, symbols: dict[str, Any]) -> None:
        self.network = network
        self.loss: Symbol = symbols["loss"]
        self.values: list[Symbol] = symbols["values"]
        self.parameters: list[Symbol] = symbols["parameters"]
        self.inputs: list[Symbol] = symbols["inputs"]


@st.composite
def graphs(
    draw: st.DrawFn, element: ElementType, steps: tuple[str, ...] = OPCODE_STEPS, size: int = 8, cover: bool = False
) -> Graph:
    """Draw and record one graph over ``steps`` opcodes (with ``cover``, each of them once)."""
    seed = draw(st.integers(0, 2**16))
    if cover:
        order = draw(st.permutations(steps))
        picks = draw(st.lists(st.integers(0, 10**6), min_size=len(order), max_size=len(order)))
        plan = list(zip(order, picks, strict=True))
    else:
        plan = draw(st.lists(st.tuples(st.sampled_from(steps), st.integers(0, 10**6)), min_size=1, max_size=size))
    rng = np.random.default_rng(seed)

    def build(tape: Tape) -> dict[str, Any]:
        parameters: list[Value] = []
        inputs: list[Value] = []

        def fresh_parameter(shape: tuple[int, ...]) -> Value:
            value = tape.parameter(rng.uniform(-1.5, 1.5, shape))
            parameters.append(value)
            return value

        first_shape = tuple(int(x) for x in rng.integers(1, 4, size=int(rng.integers(1, 4))))
        x = tape.input(rng.uniform(-1.5, 1.5, first_shape))
        inputs.append(x)
        pool: list[Value] = [x, fresh_parameter(first_shape)]
        for name, pick in plan:
            a = pool[pick % len(pool)]
            choice = pick // 7
            out = _apply(tape, name, a, choice, pool, fresh_parameter, rng)
            if out is not None and out.shape.volume <= 256:
                pool.append(out)
        loss = pool[0].sum()
        for value in pool[1:]:
            loss = loss + value.sum()
        return {"loss": loss, "values": pool, "parameters": parameters, "inputs": inputs}

    network, symbols = Tape.record(build, element=element)
    return Graph(network, symbols)


def _same_shape(a: Value, pool: list[Value], choice: int, fresh: Callable[[tuple[int, ...]], Value]) -> Value:
    partners = [v for v in pool if v.shape == a.shape]
    if choice % 3 == 0 or len(partners) < 2:
        return fresh(a.shape.axes)
    return partners[choice % len(partners)]


def _apply(
    tape: Tape,
    name: str,
    a: Value,
    choice: int,
    pool: list[Value],
    fresh: Callable[[tuple[int, ...]], Value],
    rng: np.random.Generator,
) -> Value | None:
    rank = a.rank
    axis = choice % rank if rank else 0
    if name in ("add", "sub", "mul", "div", "powf", "maximum", "step"):
        b = _same_shape(a, pool, choice, fresh)
        if name == "powf":
            return (a * a + 0.5).powf(b)
        return {
            "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
            "maximum": lambda: a.maximum(b), "step": lambda: a.step(b),
        }[name]()  # fmt: skip
    if name == "select":
        b = _same_shape(a, pool, choice, fresh)
        return a.step(b).select(a, b)
    if name == "stop_gradient":
        return a.stop_gradient() * a
    if name == "neg":
        return -a
    if name == "map":
        method = MAPS[choice % len(MAPS)]
        result: Value = getattr(a, method)()
        return result
    if name == "matmul":
        if rank < 2:
            a = a.reshape((1, a.shape.volume))
        inner = a.shape[-1]
        b = fresh((*a.shape.axes[:-2], inner, 1 + choice % 3))
        return a.matmul(b)
    if name == "sum":
        return a.sum()
    if name == "sum_along":
        return a.sum_along(axis) if rank else None
    if name == "broadcast":
        return a.sum().broadcast((1 + choice % 3, 2))
    if name == "broadcast_along":
        return a.broadcast_along(choice % (rank + 1), 1 + choice % 3) if rank < 4 else None
    if name == "reshape":
        return a.reshape((a.shape.volume,)) if choice % 2 else a.reshape((1, a.shape.volume))
    if name == "permute":
        return a.permute(tuple(int(i) for i in rng.permutation(rank))) if rank else None
    if name == "narrow":
        if not rank:
            return None
        extent = a.shape[axis]
        start = choice % extent
        return a.narrow(axis, start, extent - start)
    if name == "pad":
        if not rank:
            return None
        return a.pad(axis, choice % 2, a.shape[axis] + 1 + choice % 2)
    if name == "unfold_fold":
        if not rank or rank > 3:
            return None
        extent = a.shape[axis]
        size = 1 + choice % extent
        step = 1 + choice % 2
        windows = a.unfold(axis, size, step)
        return windows.fold(axis, size, step, 1, extent)
    if name in ("gather", "scatter"):
        if not rank:
            return None
        rows = a.shape[0]
        count = 1 + choice % 3
        if name == "gather":
            selection = tape.leaf(Tensor.selection(rng.integers(0, rows, count), rows, tape.element))
            return a.gather(selection)
        selection = tape.leaf(Tensor.selection(rng.integers(0, 3, rows), 3, tape.element))
        return a.scatter(selection)
    if name == "log_softmax":
        return a.log_softmax(axis) if rank else None
    if name == "logsumexp":
        return a.logsumexp(axis) if rank else None
    raise AssertionError(name)
