"""Exact bits depend on values alone: every road, every storage, bit for bit.

Two parts. The probe checks, on whatever machine runs it, the assumption the reference
kernels rely on: once :func:`topos.kernels.reference.by_value` has laid operands out as one
contiguous run, each element's bits are a function of its values alone (whatever storage
the operand came from, whatever its position in the run). The differential suite draws
seeded random graphs over every opcode and map, with operands in every storage (dense,
constants, Python numbers, constant subgraphs that plans fold at lowering, selections,
strided views) and special values mixed into the data, and compares every road bit for
bit: the interpreter, the exact plan (generated straight-line function and step loop),
engine backward, the recorded gradient lowered and run, and the exact training plan.

The default run draws ``DEFAULT_CASES`` graphs; ``-m differential_full`` (or
``TOPOS_DIFFERENTIAL_FULL=1``) draws ``FULL_CASES`` more with other seeds.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs
import ml_dtypes
import numpy as np
import pytest

from topos import (
    MapOperation,
    Network,
    Numerics,
    Symbol,
    Tape,
    Tensor,
    Value,
    bf16,
    f32,
    f64,
    gradient,
)
from topos.ir import ops
from topos.ir.element import ElementType
from topos.kernels import reference
from topos.stages.plan import Plan

Array = np.ndarray[Any, Any]
# ml_dtypes.finfo is untyped; the bound name gives mypy its signature (as topos.ir.element does).
_finfo: Callable[[np.dtype[Any]], object] = ml_dtypes.finfo

DEFAULT_CASES = 2_000
FULL_CASES = 20_000
"""The issue's 20,000; about four minutes on two cores (one forked worker per core)."""
ELEMENTS = (f32, f64, bf16)
EXPONENTS = (0.5, 2.0, -1.0, 1.5, 3.0, 0.0, -0.5)
UFUNC_MAPS = tuple(m for m in MapOperation if m not in (MapOperation.ERF, MapOperation.ERF_DERIVATIVE))


def _bits(array: Array) -> Array:
    flat = np.ascontiguousarray(array).reshape(-1)
    return flat.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[flat.dtype.itemsize])


def _specials(element: ElementType) -> Array:
    info: Any = _finfo(element.dtype)
    tiny = float(info.smallest_subnormal)
    big = float(info.max)
    values = [
        np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny, 3.0 * tiny, float(info.tiny) / 2.0,
        big, -big, big / 3.0, 1e30, -1e30, 1.0, -1.0, 0.5, 2.0, 1e-7, 88.7, -88.7, 710.0, 1e15,
    ]
    converted = element.convert(np.array(values, dtype=np.float64)).reshape(-1)
    # NaNs with other payloads: which NaN an operation passes on must not depend on layout.
    quiet = int(_bits(converted[:1])[0])
    sign = 1 << (8 * converted.dtype.itemsize - 1)
    width = _bits(converted[:1]).dtype
    payloads = np.array([quiet | 1, quiet | 5 | sign], dtype=width).view(converted.dtype)
    return np.concatenate([converted, payloads])


# --------------------------------------------------------------------------- the probe


def _probe_values(element: ElementType, rng: np.random.Generator) -> Array:
    random = np.concatenate([
        rng.normal(size=96) * 3.0,
        np.abs(rng.normal(size=64)) * 100.0,
        rng.uniform(-1e-3, 1e-3, size=32),
        np.exp(rng.uniform(-80.0, 80.0, size=32)),
    ])  # fmt: skip
    return np.concatenate([element.convert(random).reshape(-1), _specials(element)])


def _layouts(x: Array) -> dict[str, Array]:
    """The same values in other storage: each keeps ``x``'s positions (1-d, ``x.size``)."""
    n = x.size
    roomy = np.zeros(3 * n + 1, dtype=x.dtype)
    roomy[1::3][:n] = x
    shifted = np.zeros(n + 1, dtype=x.dtype)
    shifted[1:] = x
    pair = np.zeros((2, n), dtype=x.dtype)
    pair[0] = x
    return {
        "strided": roomy[1::3][:n],
        "offset": shifted[1:],
        "permuted": np.ascontiguousarray(pair.T).T[0],
        "column": np.ascontiguousarray(pair.T)[:, 0],
    }


def _pointwise(kernel: Callable[..., Array], *columns: Array) -> dict[str, Array]:
    """The kernel one element at a time: length-1 runs, rank 0, and zero-stride spreads."""
    n = columns[0].size
    single = np.concatenate([kernel(*(c[i : i + 1] for c in columns)) for i in range(n)])
    scalar = np.stack([kernel(*(c[i].reshape(()) for c in columns)) for i in range(n)])
    spread = np.stack([kernel(*(np.broadcast_to(c[i], (5,)) for c in columns))[3] for i in range(n)])
    return {"length-1": single, "rank-0": scalar, "zero-stride": spread}


def _agree(name: str, dense: Array, others: dict[str, Array]) -> list[str]:
    want = _bits(dense)
    return [
        f"{name} on a {layout} operand: {int((_bits(got) != want).sum())} of {want.size} differ"
        for layout, got in others.items()
        if not np.array_equal(_bits(got), want)
    ]


quiet = pytest.mark.filterwarnings("ignore::RuntimeWarning")
"""Special values raise numpy's floating-point warnings; the bits are what is checked."""


@quiet
@pytest.mark.parametrize("element", ELEMENTS, ids=[e.name for e in ELEMENTS])
def test_probe_map_bits_depend_on_values_alone(element: ElementType) -> None:
    rng = np.random.default_rng(1)
    x = _probe_values(element, rng)
    failures: list[str] = []
    for operation in MapOperation:

        def kernel(a: Array, operation: MapOperation = operation) -> Array:
            return reference.map_operation(operation, a, element)

        dense = kernel(x)
        layouts = {name: kernel(view) for name, view in _layouts(x).items()}
        # Only the cheap maps run one element at a time over every value; erf's Python loop
        # gives the same answer whatever the layout and is probed on the first values.
        count = x.size if operation in UFUNC_MAPS else 24
        failures += _agree(operation.value, dense, layouts)
        failures += _agree(operation.value, dense[:count], _pointwise(kernel, x[:count]))
    assert not failures, failures


@quiet
@pytest.mark.parametrize("element", ELEMENTS, ids=[e.name for e in ELEMENTS])
def test_probe_binary_bits_depend_on_values_alone(element: ElementType) -> None:
    rng = np.random.default_rng(2)
    x = _probe_values(element, rng)
    failures: list[str] = []

    def kernel(a: Array, b: Array) -> Array:
        return reference.powf(a, b, element)

    specials = [float(v) for v in _specials(element).astype(np.float64)]
    for exponent in (*EXPONENTS, *rng.normal(size=3).tolist(), *specials[:8]):
        e = element.convert(np.full(x.shape, exponent))
        dense = kernel(x, e)
        spread = np.broadcast_to(e[:1].reshape(()), x.shape)
        others = {"zero-stride exponent": kernel(x, spread), "rank-0 exponent": kernel(x, e[0].reshape(()))}
        others.update({name: kernel(view, view_e) for (name, view), view_e in zip(_layouts(x).items(), _layouts(e).values(), strict=True)})
        others.update(_pointwise(kernel, x, e))
        failures += _agree(f"power(x, {exponent!r})", dense, others)
    # Every binary kernel, over pairs that mix the specials (NaNs of several payloads among
    # them) with random values, in every layout of either operand.
    e = rng.permutation(np.concatenate([x, x]))[: x.size]
    binaries = {
        "add": reference.add, "sub": reference.sub, "mul": reference.mul, "div": reference.div,
        "power": reference.powf, "maximum": reference.maximum,
    }  # fmt: skip
    for name, binary in binaries.items():

        def pair(a: Array, b: Array, binary: Callable[..., Array] = binary) -> Array:
            return binary(a, b, element)

        dense = pair(x, e)
        failures += _agree(f"{name}(x, e)", dense, _pointwise(pair, x, e))
        for (layout, view), view_e in zip(_layouts(x).items(), _layouts(e).values(), strict=True):
            failures += _agree(f"{name}(x, e)", dense, {layout: pair(view, view_e), f"{layout} first": pair(view, e)})
        for i in range(0, x.size, 7):
            # One operand spread from a single element, the other dense.
            spread_x = np.broadcast_to(x[i], e.shape)
            spread_e = np.broadcast_to(e[i], x.shape)
            want = pair(np.full(e.shape, x[i]), e)
            failures += _agree(f"{name}(x[{i}], e)", want, {"zero-stride first": pair(spread_x, e)})
            want = pair(x, np.full(x.shape, e[i]))
            failures += _agree(f"{name}(x, e[{i}])", want, {"zero-stride second": pair(x, spread_e)})
    negated = reference.neg(x, element)
    failures += _agree("neg", negated, {name: reference.neg(view, element) for name, view in _layouts(x).items()})
    assert not failures, failures


@quiet
@pytest.mark.parametrize("element", ELEMENTS, ids=[e.name for e in ELEMENTS])
def test_two_nan_constants_combine_as_their_dense_spreads(element: ElementType) -> None:
    # numpy keeps the left NaN in its vector body and the right one in its scalar tail, so
    # a NaN pair computed once (a constant) can differ from the same pair at position 33 of
    # a dense run: seed 17249 of the full differential suite found it in a bf16 cotangent.
    nans = [float(v) for v in _specials(element).astype(np.float64) if v != v]
    binaries = {"add": Tensor.__add__, "sub": Tensor.__sub__, "mul": Tensor.__mul__, "div": Tensor.__truediv__,
                "power": Tensor.__pow__, "maximum": Tensor.maximum}  # fmt: skip
    failures: list[str] = []
    for n in (1, 7, 16, 31, 33, 42, 100):
        for a in nans:
            for b in nans:
                left, right = Tensor.filled((n,), a, element), Tensor.filled((n,), b, element)
                dense_left = Tensor(np.ascontiguousarray(left.numpy()), element=element)
                dense_right = Tensor(np.ascontiguousarray(right.numpy()), element=element)
                for name, binary in binaries.items():
                    want, got = binary(dense_left, dense_right).bits(), binary(left, right).bits()
                    if not np.array_equal(want, got):
                        failures.append(f"{name} of NaN constants {a!r}, {b!r} at length {n}")
    assert not failures, failures


@quiet
@pytest.mark.parametrize("element", ELEMENTS, ids=[e.name for e in ELEMENTS])
def test_probe_reductions_read_one_layout(element: ElementType) -> None:
    rng = np.random.default_rng(3)
    zeros = element.convert(np.array([0.0, -0.0, np.nan, -np.nan, 1.0, -np.inf]))
    block = zeros[rng.integers(0, zeros.size, size=(6, 5, 4))]
    failures: list[str] = []
    for axis in range(3):
        dense = reference.log_softmax(block, axis, element)
        permuted = np.ascontiguousarray(block.transpose(2, 1, 0)).transpose(2, 1, 0)
        failures += _agree(f"log_softmax axis {axis}", dense, {"permuted": reference.log_softmax(permuted, axis, element)})
        failures += _agree(f"max_along axis {axis}", reference.max_along(block, axis), {"permuted": reference.max_along(permuted, axis)})
    assert not failures, failures


# --------------------------------------------------------------------------- the graphs

STORAGES = (
    "parameter", "input", "leaf", "constant", "number", "folded", "selection",
    "permuted", "narrowed", "spread", "spread_constant", "pool",
)  # fmt: skip
"""How a partner operand is stored: dense sources, constants (a Python number records one),
constant subgraphs (folded by plans at lowering), one-hot selections, and strided views."""

STEPS = (
    "add", "sub", "mul", "div", "neg", "map", "matmul", "sum", "sum_along", "broadcast",
    "broadcast_along", "reshape", "permute", "narrow", "pad", "unfold_fold", "gather", "scatter",
    "log_softmax", "logsumexp", "powf", "maximum", "step", "select", "stop_gradient",
)  # fmt: skip
_BINARY = ("add", "sub", "mul", "div", "maximum", "step", "powf")


@attrs.define
class Case:
    """One recorded graph, with what it exercised (for the coverage check)."""

    seed: int
    element: ElementType
    network: Network
    loss: Symbol
    values: list[Symbol]
    wrt: list[Symbol]
    storages: Counter[str]


class _Builder:
    """Draws one graph on a tape from a seeded generator (numpy, so thousands stay quick)."""

    def __init__(self, tape: Tape, rng: np.random.Generator, element: ElementType) -> None:
        self.tape = tape
        self.rng = rng
        self.element = element
        self.specials = _specials(element).astype(np.float64)
        self.special_rate = float(rng.choice([0.0, 0.0, 0.05, 0.15, 0.4]))
        self.scale = float(rng.choice([0.5, 1.0, 3.0, 30.0]))
        self.wrt: list[Value] = []
        self.pool: list[Value] = []
        self.storages: Counter[str] = Counter()

    # ------------------------------------------------------------------ data
    def data(self, shape: tuple[int, ...]) -> Array:
        rng = self.rng
        values = rng.normal(size=shape) * self.scale
        if self.special_rate:
            mask = rng.random(shape) < self.special_rate
            values = np.where(mask, rng.choice(self.specials, size=shape), values)
        return np.asarray(values, dtype=np.float64)

    def number(self) -> float:
        rng = self.rng
        if self.special_rate and rng.random() < 0.3:
            return float(rng.choice(self.specials))
        return float(rng.choice([0.5, 2.0, -1.0, 1.5, 3.0, 0.0, -0.0, float(rng.normal() * self.scale)]))

    def exponent(self) -> float:
        if self.rng.random() < 0.75:
            return float(self.rng.choice(EXPONENTS))
        return self.number()

    # ------------------------------------------------------------------ operands
    def parameter(self, shape: tuple[int, ...]) -> Value:
        value = self.tape.parameter(self.data(shape))
        self.wrt.append(value)
        return value

    def constant_of(self, shape: tuple[int, ...], value: float | None = None) -> Value:
        return self.tape.constant(shape, self.number() if value is None else value)

    def folded(self, shape: tuple[int, ...], value: float | None = None) -> Value:
        """A value computed from constants alone: plans fold it at lowering."""
        rng = self.rng
        out = self.constant_of(shape)
        for _ in range(int(rng.integers(1, 3))):
            pick = int(rng.integers(0, 7))
            other = self.constant_of(shape)
            if pick == 0:
                out = out + other
            elif pick == 1:
                out = out * other
            elif pick == 2:
                out = out.powf(self.constant_of(shape, self.exponent()))
            elif pick == 3:
                out = out.map(MapOperation(rng.choice([m.value for m in MapOperation])))
            elif pick == 4:
                out = -out
            elif pick == 5:
                out = out.maximum(other)
            else:
                out = out / other
        if value is not None:
            # An exponent as a computed constant: (value + 1) - 1 is value for the exponents used.
            # Doubling the largest finite value would overflow the element, which recording
            # refuses: those values take the (value + 1) - 1 form.
            doubles = abs(value * 2.0) <= self.element.largest or not np.isfinite(value)
            out = (self.constant_of(shape, value + 1.0) - self.constant_of(shape, 1.0)) if rng.random() < 0.7 or not doubles else (
                self.constant_of(shape, value * 2.0) * self.constant_of(shape, 0.5)
            )
        return out

    def partner(self, shape: tuple[int, ...], value: float | None = None) -> Value | float:
        """An operand of ``shape`` in a random storage (``value``: every element equal to it)."""
        rng = self.rng
        rank = len(shape)
        choices = list(STORAGES)
        if rank != 2:
            choices.remove("selection")
        if rank < 2:
            choices.remove("permuted")
        if rank == 0:
            choices.remove("narrowed")
        if value is not None:
            choices = [c for c in choices if c not in ("selection", "pool")]
        storage = str(rng.choice(choices))
        if storage == "pool":
            same = [v for v in self.pool if v.shape.axes == shape]
            if not same:
                storage = "parameter"
            else:
                self.storages[storage] += 1
                return same[int(rng.integers(0, len(same)))]
        self.storages[storage] += 1

        def fill() -> Array:
            return np.full(shape, value) if value is not None else self.data(shape)

        if storage == "parameter":
            out = self.tape.parameter(fill())
            self.wrt.append(out)
            return out
        if storage == "input":
            out = self.tape.input(fill())
            self.wrt.append(out)
            return out
        if storage == "leaf":
            return self.tape.leaf(Tensor(fill(), element=self.element))
        if storage == "constant":
            return self.constant_of(shape, value)
        if storage == "number":
            return self.number() if value is None else value
        if storage == "folded":
            return self.folded(shape, value)
        if storage == "selection":
            count, vocab = shape
            one = float(rng.choice([1.0, -2.0, 0.5]))
            picked = Tensor.selection(rng.integers(0, vocab, count), vocab, self.element, one)
            return self.tape.leaf(picked)
        if storage == "permuted":
            order = tuple(int(i) for i in rng.permutation(rank))
            inverse = tuple(int(i) for i in np.argsort(order))
            source = self.tape.parameter(np.transpose(fill(), inverse))
            self.wrt.append(source)
            return source.permute(order)
        if storage == "narrowed":
            axis = int(rng.integers(0, rank))
            start = int(rng.integers(0, 3))
            wider = list(shape)
            wider[axis] += start + int(rng.integers(0, 2))
            base = np.zeros(wider)
            base[(slice(None),) * axis + (slice(start, start + shape[axis]),)] = fill()
            source = self.tape.parameter(base)
            self.wrt.append(source)
            return source.narrow(axis, start, shape[axis])
        if storage in ("spread", "spread_constant"):
            if rank == 0:
                return self.constant_of(shape, value)
            axis = int(rng.integers(0, rank))
            narrow_shape = shape[:axis] + shape[axis + 1 :]
            if storage == "spread_constant" or value is not None:
                source = self.constant_of(narrow_shape, value) if rng.random() < 0.7 else self.folded(narrow_shape, value)
            else:
                source = self.parameter(narrow_shape)
            if value is None and storage == "spread" and rng.random() < 0.3:
                return self.parameter(()).broadcast(shape)
            return source.broadcast_along(axis, shape[axis])
        raise AssertionError(storage)

    def value(self, shape: tuple[int, ...]) -> Value:
        out = self.partner(shape)
        return out if isinstance(out, Value) else self.tape.constant(shape, out)

    # ------------------------------------------------------------------ steps
    def step(self, name: str, a: Value) -> Value | None:
        rng = self.rng
        rank = a.rank
        axis = int(rng.integers(0, rank)) if rank else 0
        shape = a.shape.axes
        if name in _BINARY:
            if name == "powf":
                base = a if rng.random() < 0.5 else a * a + 0.25
                if rng.random() < 0.8:
                    exponent = self.partner(shape, self.exponent())
                else:
                    exponent = self.partner(shape)
                if not isinstance(exponent, Value) or rng.random() < 0.7:
                    return base.powf(exponent)
                return exponent.powf(base)
            b = self.partner(shape)
            if not isinstance(b, Value) and rng.random() < 0.5 and name in ("add", "sub", "mul", "div"):
                a_value = a
                return {"add": lambda: b + a_value, "sub": lambda: b - a_value, "mul": lambda: b * a_value, "div": lambda: b / a_value}[name]()
            if isinstance(b, Value) and rng.random() < 0.4:
                a, b = b, a
            assert isinstance(a, Value)
            return {
                "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
                "maximum": lambda: a.maximum(b), "step": lambda: a.step(b),
            }[name]()  # fmt: skip
        if name == "select":
            b = self.partner(shape)
            partner = b if isinstance(b, Value) else self.tape.constant(shape, b)
            mask = a.step(partner) if rng.random() < 0.5 else partner.step(a)
            return mask.select(a, partner) if rng.random() < 0.5 else mask.select(partner, a)
        if name == "stop_gradient":
            return a.stop_gradient() * a
        if name == "neg":
            return -a
        if name == "map":
            return a.map(MapOperation(rng.choice([m.value for m in MapOperation])))
        if name == "matmul":
            if rank < 2:
                a = a.reshape((1, a.shape.volume))
            other = (*a.shape.axes[:-1][:-1], a.shape[-1], int(rng.integers(1, 4)))
            b = self.partner(other)
            return a.matmul(b if isinstance(b, Value) else self.tape.constant(other, b))
        if name == "sum":
            return a.sum()
        if name == "sum_along":
            return a.sum_along(axis) if rank else None
        if name == "broadcast":
            return a.sum().broadcast(tuple(int(s) for s in rng.integers(1, 4, size=int(rng.integers(0, 3)))))
        if name == "broadcast_along":
            return a.broadcast_along(int(rng.integers(0, rank + 1)), int(rng.integers(1, 4))) if rank < 4 else None
        if name == "reshape":
            return a.reshape((a.shape.volume,)) if rng.random() < 0.5 else a.reshape((1, a.shape.volume))
        if name == "permute":
            return a.permute(tuple(int(i) for i in rng.permutation(rank))) if rank else None
        if name == "narrow":
            if not rank:
                return None
            start = int(rng.integers(0, shape[axis]))
            return a.narrow(axis, start, int(rng.integers(1, shape[axis] - start + 1)))
        if name == "pad":
            return a.pad(axis, int(rng.integers(0, 2)), shape[axis] + 1 + int(rng.integers(0, 2))) if rank else None
        if name == "unfold_fold":
            if not rank or rank > 3:
                return None
            size = int(rng.integers(1, shape[axis] + 1))
            step = int(rng.integers(1, 3))
            return a.unfold(axis, size, step).fold(axis, size, step, 1, shape[axis])
        if name in ("gather", "scatter"):
            if not rank:
                return None
            rows = shape[0]
            one = float(rng.choice([1.0, 1.0, -2.0]))
            if name == "gather":
                count = int(rng.integers(1, 4))
                selection = Tensor.selection(rng.integers(0, rows, count), rows, self.element, one)
                dense = rng.random() < 0.2  # a dense one-hot takes the product road
                return a.gather(self.tape.leaf(selection.numpy() if dense else selection))
            selection = Tensor.selection(rng.integers(0, 3, rows), 3, self.element, one)
            return a.scatter(self.tape.leaf(selection))
        if name == "log_softmax":
            return a.log_softmax(axis) if rank else None
        if name == "logsumexp":
            return a.logsumexp(axis) if rank else None
        raise AssertionError(name)


def build_case(seed: int) -> Case:
    """Record the graph of ``seed`` (its element, shapes, storages and values all follow)."""
    rng = np.random.default_rng(seed)
    element = ELEMENTS[seed % len(ELEMENTS)]
    holder: dict[str, _Builder] = {}

    def record(tape: Tape) -> dict[str, Any]:
        builder = holder["b"] = _Builder(tape, rng, element)
        first = tuple(int(s) for s in rng.integers(1, 9, size=int(rng.integers(0, 4))))
        x = tape.input(builder.data(first))
        builder.wrt.append(x)
        builder.pool += [x, builder.value(first)]
        for _ in range(int(rng.integers(2, 8))):
            name = str(rng.choice(STEPS))
            a = builder.pool[int(rng.integers(0, len(builder.pool)))]
            out = builder.step(name, a)
            if out is not None and out.shape.volume <= 512:
                builder.pool.append(out)
        loss = builder.pool[0].sum()
        for value in builder.pool[1:]:
            loss = loss + value.sum()
        return {"loss": loss, "values": builder.pool, "wrt": builder.wrt}

    with np.errstate(all="ignore"):  # special values overflow and divide by zero on purpose
        network, symbols = Tape.record(record, element=element)
    return Case(seed, element, network, symbols["loss"], symbols["values"], symbols["wrt"], holder["b"].storages)


# --------------------------------------------------------------------------- the roads


def _both(plan_: Plan) -> tuple[tuple[str, Plan], ...]:
    """The plan as lowered (one generated function) and forced onto the step loop."""
    assert plan_._program.function is not None
    return (("generated", plan_), ("step loop", attrs.evolve(plan_, program=plan_._program.looped())))


def check_case(case: Case) -> list[str]:
    """Every road's bits against the interpreter's; one line per mismatch."""
    network, loss = case.network, case.loss
    parameters = network.parameters()
    failures: list[str] = []

    def compare(road: str, symbol: Symbol, want: Tensor, got: Tensor) -> None:
        a, b = want.bits(), got.bits()
        if a.shape != b.shape or not np.array_equal(a, b):
            where = np.flatnonzero(a.reshape(-1) != b.reshape(-1))[:4]
            failures.append(
                f"seed {case.seed} ({case.element}): {road} differs on {network.describe_symbol(network.index(symbol))} "
                f"at {where.tolist()}: {a.reshape(-1)[where].tolist()} vs {b.reshape(-1)[where].tolist()}"
            )

    with np.errstate(all="ignore"):
        run = network.forward(parameters)
        readable = [*case.values, loss]
        forward = network.entry(readable).numerics(Numerics.EXACT).lower()
        for how, plan_ in _both(forward):
            planned = plan_.forward(parameters)
            for symbol in readable:
                compare(f"forward plan ({how})", symbol, run.of(symbol), planned.of(symbol))

        engine = run.backward(loss)
        training = network.entry(loss).backward().numerics(Numerics.EXACT).lower()
        (_, generated), (_, looped) = _both(training)
        kept = generated.forward(parameters)
        field = kept.backward(loss)
        for symbol in readable:
            compare("training plan backward", symbol, engine.of(symbol), field.of(symbol))
        # The reverse scan reads only the kept values, so the step loop's run needs no scan
        # of its own: its kept values must carry the generated function's bits.
        looped_values = looped.forward(parameters).values()
        for index, (want, got) in enumerate(zip(kept.values(), looped_values, strict=True)):
            symbol = network.symbol(index)
            if want is not None or got is not None:
                assert want is not None and got is not None
                compare("training plan forward (step loop)", symbol, want, got)

        longer, adjoints = gradient(network, loss, case.wrt)
        recorded = longer.entry(adjoints.roots()).numerics(Numerics.EXACT).lower()
        for how, plan_ in _both(recorded):
            grads = plan_.forward(longer.parameters())
            for symbol in case.wrt:
                compare(f"recorded gradient plan ({how})", symbol, engine.of(symbol), grads.of(adjoints.of(symbol)))
    return failures


def _run_cases(seeds: range) -> tuple[list[str], Counter[str], Counter[type], Counter[MapOperation]]:
    failures: list[str] = []
    storages: Counter[str] = Counter()
    opcodes: Counter[type] = Counter()
    maps: Counter[MapOperation] = Counter()
    for seed in seeds:
        case = build_case(seed)
        storages.update(case.storages)
        for node in case.network.nodes():
            opcodes[type(node.op)] += 1
            if isinstance(node.op, ops.Map):
                maps[node.op.operation] += 1
        failures += check_case(case)
    return failures, storages, opcodes, maps


def _covered(storages: Counter[str], opcodes: Counter[type], maps: Counter[MapOperation]) -> list[str]:
    every_opcode = {
        getattr(ops, name) for name in dir(ops) if isinstance(getattr(ops, name), type) and issubclass(getattr(ops, name), ops.Op)
    }
    missing = [f"storage {s}" for s in STORAGES if not storages[s]]
    missing += [f"opcode {t.__name__}" for t in every_opcode if t is not ops.Op and not opcodes[t] and t.__module__ == ops.__name__]
    missing += [f"map {m.value}" for m in MapOperation if not maps[m]]
    return missing


def test_differential_roads_agree_bit_for_bit() -> None:
    failures, storages, opcodes, maps = _run_cases(range(DEFAULT_CASES))
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:20])
    assert not _covered(storages, opcodes, maps)


def _full_selected(config: pytest.Config) -> bool:
    expression = str(config.getoption("-m") or "")
    chosen = "differential_full" in expression and "not differential_full" not in expression
    return os.environ.get("TOPOS_DIFFERENTIAL_FULL") == "1" or chosen


def _run_in_parallel(seeds: range) -> tuple[list[str], Counter[str], Counter[type], Counter[MapOperation]]:
    """``_run_cases`` over chunks of ``seeds`` in one forked worker per available core."""
    workers = max(1, len(os.sched_getaffinity(0)))
    chunk = 250
    chunks = [range(start, min(start + chunk, seeds.stop)) for start in range(seeds.start, seeds.stop, chunk)]
    failures: list[str] = []
    storages: Counter[str] = Counter()
    opcodes: Counter[type] = Counter()
    maps: Counter[MapOperation] = Counter()
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        for found, stored, seen, mapped in pool.map(_run_cases, chunks):
            failures += found
            storages.update(stored)
            opcodes.update(seen)
            maps.update(mapped)
    return failures, storages, opcodes, maps


@pytest.mark.differential_full
def test_differential_full(request: pytest.FixtureRequest) -> None:
    if not _full_selected(request.config):
        pytest.skip("opt-in: run with -m differential_full or TOPOS_DIFFERENTIAL_FULL=1")
    failures, storages, opcodes, maps = _run_in_parallel(range(DEFAULT_CASES, DEFAULT_CASES + FULL_CASES))
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:20])
    assert not _covered(storages, opcodes, maps)


def test_powf_gradient_matches_between_engine_and_training_plan() -> None:
    # The gradient of x ** 1.5 records x ** (1.5 - 1): a constant exponent of 0.5 that the
    # interpreter keeps as a zero-stride constant and a plan folds into a dense array.
    xs = np.linspace(0.1, 3.0, 4096, dtype=np.float32)

    def build(t: Tape) -> tuple[Value, Value]:
        x = t.input(xs)
        return x, (x**1.5).sum()

    network, (x, loss) = Tape.record(build)
    parameters = network.parameters()
    engine = network.forward(parameters).backward(loss).of(x).bits()
    training = network.entry([loss]).numerics(Numerics.EXACT).backward().lower().forward(parameters)
    assert np.array_equal(engine, training.backward(loss).of(x).bits())
