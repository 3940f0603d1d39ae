"""An oracle nobody here wrote: jax.grad of the same function, written in jax.numpy.

Graphs are chains of blocks drawn from a menu; together the blocks speak every opcode and
every map. Each block is written twice, once over recording values and once over jax arrays,
on the same shapes and with the same constants (dyadic, so bf16 holds them exactly). jax runs
in f64 on the very payloads our tape holds (inputs and parameters already rounded to the
element), so the only differences left are our element's roundings along the way.

Tolerance, per gradient array: ``max |ours - jax| <= tol * max(1, max |jax|)``.
- f64: 1e-12. Both sides are f64 and differ only in evaluation order and in libm versus XLA
  transcendentals (an ulp or two each); measured worst over 60 random chains: 7e-16.
- f32: 1e-4. Unit roundoff 6e-8, every intermediate rounded, amplified along up to five
  blocks; measured worst: 5e-7.
- bf16: 0.15. Unit roundoff 3.9e-3 per operation, so a five-block chain drifts by percents;
  measured worst: 0.037. A wrong rule is off by factors of order one and still fails.
(Measured with ``compare`` over 60 chains drawn by ``random.Random(1)``; see the report.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special as jss
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import ElementType, MapOperation, Tape, Tensor, Value, bf16, f32, f64, gradient
from topos.ir import ops
from topos.ir.ops import OPCODES

jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]

TOLERANCE = {"f64": 1e-12, "f32": 1e-4, "bf16": 0.15}
TWO_OVER_ROOT_PI = 2.0 / np.sqrt(np.pi)

Shape2 = tuple[int, int]
Extra = dict[str, Any]


class Block:
    """One step of a chain: shapes, parameters, and the same function twice."""

    def __init__(
        self,
        name: str,
        ours: Callable[[Tape, Value, Sequence[Value], Extra], Value],
        theirs: Callable[[Any, Sequence[Any], Extra], Any],
        make: Callable[[np.random.Generator, Shape2], tuple[list[np.ndarray], Extra, Shape2]] | None = None,
    ) -> None:
        self.name = name
        self.ours = ours
        self.theirs = theirs
        self.make = make or (lambda rng, shape: ([], {}, shape))


def _same_shape_parameter(rng: np.random.Generator, shape: Shape2) -> tuple[list[np.ndarray], Extra, Shape2]:
    return [rng.uniform(-1.0, 1.0, size=shape)], {}, shape


def _matmul_make(rng: np.random.Generator, shape: Shape2) -> tuple[list[np.ndarray], Extra, Shape2]:
    columns = int(rng.integers(2, 5))
    return [rng.uniform(-1.0, 1.0, size=(shape[1], columns)) / np.sqrt(shape[1])], {}, (shape[0], columns)


def _swap(rng: np.random.Generator, shape: Shape2) -> tuple[list[np.ndarray], Extra, Shape2]:
    return [], {}, (shape[1], shape[0])


def _gather_make(rng: np.random.Generator, shape: Shape2) -> tuple[list[np.ndarray], Extra, Shape2]:
    rows = [int(r) for r in rng.integers(0, shape[0], size=int(rng.integers(2, 5)))]
    return [], {"rows": rows}, (len(rows), shape[1])


def _scatter_make(rng: np.random.Generator, shape: Shape2) -> tuple[list[np.ndarray], Extra, Shape2]:
    vocab = int(rng.integers(2, 5))
    rows = [int(r) for r in rng.integers(0, vocab, size=shape[0])]
    return [], {"rows": rows, "vocab": vocab}, (vocab, shape[1])


def _exponent_make(rng: np.random.Generator, shape: Shape2) -> tuple[list[np.ndarray], Extra, Shape2]:
    return [rng.uniform(0.5, 2.0, size=shape)], {}, shape


def _selection(t: Tape, rows: list[int], vocab: int) -> Value:
    return t.leaf(Tensor.selection(rows, vocab, t.element))


def _unfold_fold_ours(t: Tape, x: Value, p: Sequence[Value], e: Extra) -> Value:
    extent = x.shape[1]
    return x.unfold(1, 2, 1, 1).fold(1, 2, 1, 1, extent) * 0.5


def _unfold_fold_theirs(x: Any, p: Sequence[Any], e: Extra) -> Any:
    extent = x.shape[1]
    windows = jnp.stack([x[:, i : i + 2] for i in range(extent - 1)], axis=1)
    out = jnp.zeros_like(x)
    for i in range(extent - 1):
        out = out.at[:, i : i + 2].add(windows[:, i, :])
    return out * 0.5


BLOCKS: list[Block] = [
    Block(
        "affine",
        lambda t, x, p, e: (x + p[0]) - (-x) * 0.5,
        lambda x, p, e: (x + p[0]) - (-x) * 0.5,
        _same_shape_parameter,
    ),
    Block("div", lambda t, x, p, e: x / (x * x + 1.0), lambda x, p, e: x / (x * x + 1.0)),
    Block("exp", lambda t, x, p, e: x.tanh().exp(), lambda x, p, e: jnp.exp(jnp.tanh(x))),
    Block("ln", lambda t, x, p, e: (x * x + 1.0).ln(), lambda x, p, e: jnp.log(x * x + 1.0)),
    Block("sqrt", lambda t, x, p, e: (x * x + 1.0).sqrt(), lambda x, p, e: jnp.sqrt(x * x + 1.0)),
    Block("sincos", lambda t, x, p, e: x.sin() * x.cos() + x, lambda x, p, e: jnp.sin(x) * jnp.cos(x) + x),
    Block("log1p", lambda t, x, p, e: (x * x).log1p(), lambda x, p, e: jnp.log1p(x * x)),
    Block("expm1", lambda t, x, p, e: x.tanh().expm1(), lambda x, p, e: jnp.expm1(jnp.tanh(x))),
    Block("erf", lambda t, x, p, e: x.erf() + x * 0.25, lambda x, p, e: jss.erf(x) + x * 0.25),
    Block("atan", lambda t, x, p, e: (x * 3.0).atan() + x * 0.25, lambda x, p, e: jnp.arctan(x * 3.0) + x * 0.25),
    Block(
        "erf_derivative",
        lambda t, x, p, e: x.erf_derivative(),
        lambda x, p, e: TWO_OVER_ROOT_PI * jnp.exp(-(x * x)),
    ),
    Block("matmul", lambda t, x, p, e: x.matmul(p[0]), lambda x, p, e: x @ p[0], _matmul_make),
    Block(
        "sum",
        lambda t, x, p, e: x + (x.sum() * 0.125).broadcast(x.shape),
        lambda x, p, e: x + jnp.sum(x) * 0.125,
    ),
    Block(
        "sum_along",
        lambda t, x, p, e: x.sum_along(0).broadcast_along(0, x.shape[0]) * 0.25 + x,
        lambda x, p, e: jnp.broadcast_to(jnp.sum(x, axis=0), x.shape) * 0.25 + x,
    ),
    Block("reshape", lambda t, x, p, e: x.reshape((x.shape[1], x.shape[0])), lambda x, p, e: x.reshape(x.shape[1], x.shape[0]), _swap),
    Block("permute", lambda t, x, p, e: x.permute((1, 0)), lambda x, p, e: x.T, _swap),
    Block(
        "narrow_pad",
        lambda t, x, p, e: x.narrow(1, 1, x.shape[1] - 1).pad(1, 0, x.shape[1]) + x,
        lambda x, p, e: jnp.pad(x[:, 1:], ((0, 0), (0, 1))) + x,
    ),
    Block("unfold_fold", _unfold_fold_ours, _unfold_fold_theirs),
    Block(
        "gather",
        lambda t, x, p, e: x.gather(_selection(t, e["rows"], x.shape[0])),
        lambda x, p, e: x[jnp.asarray(e["rows"])],
        _gather_make,
    ),
    Block(
        "scatter",
        lambda t, x, p, e: x.scatter(_selection(t, e["rows"], e["vocab"])),
        lambda x, p, e: jnp.zeros((e["vocab"], x.shape[1])).at[jnp.asarray(e["rows"])].add(x),
        _scatter_make,
    ),
    Block("log_softmax", lambda t, x, p, e: x.log_softmax(1), lambda x, p, e: jax.nn.log_softmax(x, axis=1)),
    Block(
        "logsumexp",
        lambda t, x, p, e: x - x.logsumexp(0).broadcast_along(0, x.shape[0]) * 0.5,
        lambda x, p, e: x - jnp.broadcast_to(jss.logsumexp(x, axis=0), x.shape) * 0.5,
    ),
    Block(
        "powf",
        lambda t, x, p, e: (x * x + 1.0).powf(p[0]),
        lambda x, p, e: jnp.power(x * x + 1.0, p[0]),
        _exponent_make,
    ),
    Block("maximum", lambda t, x, p, e: x.maximum(x * -0.5), lambda x, p, e: jnp.maximum(x, x * -0.5)),
    Block(
        "step",
        lambda t, x, p, e: x * x.step(t.constant(x.shape, 0.25)) + x * 0.5,
        lambda x, p, e: x * jnp.where(x >= 0.25, 1.0, 0.0) + x * 0.5,
    ),
    Block(
        "select",
        lambda t, x, p, e: (x > 0.1).select(x * 2.0, x.tanh()),
        lambda x, p, e: jnp.where(x > 0.1, x * 2.0, jnp.tanh(x)),
    ),
    Block(
        "stop_gradient",
        lambda t, x, p, e: x * x.stop_gradient() + x,
        lambda x, p, e: x * jax.lax.stop_gradient(x) + x,
    ),
]
BY_NAME = {block.name: block for block in BLOCKS}
ELEMENTS = {"f64": f64, "f32": f32, "bf16": bf16}


def compare(names: Sequence[str], seed: int, shape: Shape2, element: ElementType) -> dict[str, float]:
    """Build the chain both ways; return the worst scaled error per gradient."""
    rng = np.random.default_rng(seed)
    plan: list[tuple[Block, list[np.ndarray], Extra]] = []
    current = shape
    for name in names:
        block = BY_NAME[name]
        arrays, extra, current = block.make(rng, current)
        plan.append((block, arrays, extra))
    x0 = rng.uniform(-1.5, 1.5, size=shape)

    def build(t: Tape) -> tuple[Value, list[Value], Value]:
        x = t.input(x0)
        y = x
        parameters: list[Value] = []
        for block, arrays, extra in plan:
            mine = [t.parameter(a) for a in arrays]
            parameters.extend(mine)
            y = block.ours(t, y, mine, extra)
        return x, parameters, (y * y).sum()

    network, (x, parameter_symbols, loss) = Tape.record(build, element=element)
    longer, adjoints = gradient(network, loss, [x, *parameter_symbols])
    run = longer.forward(network.parameters())

    # jax sees exactly the payloads our tape holds, widened to f64.
    held = [np.asarray(network.sources[network.index(s)].numpy(), dtype=np.float64) for s in [x, *parameter_symbols]]

    def f(*arguments: Any) -> Any:
        y = arguments[0]
        rest = list(arguments[1:])
        for block, arrays, extra in plan:
            mine, rest = rest[: len(arrays)], rest[len(arrays) :]
            y = block.theirs(y, mine, extra)
        return jnp.sum(y * y)

    theirs = jax.grad(f, argnums=tuple(range(len(held))))(*[jnp.asarray(h) for h in held])
    errors: dict[str, float] = {}
    for k, ((symbol, gradient_symbol), want) in enumerate(zip(adjoints, theirs, strict=True)):
        got = np.asarray(run.of(gradient_symbol).numpy(), dtype=np.float64)
        want = np.asarray(want)
        assert got.shape == want.shape
        scale = max(1.0, float(np.max(np.abs(want))))
        errors[f"#{k} %{symbol.index}"] = float(np.max(np.abs(got - want))) / scale
    return errors


def assert_within(names: Sequence[str], seed: int, shape: Shape2, element_name: str) -> None:
    errors = compare(names, seed, shape, ELEMENTS[element_name])
    tolerance = TOLERANCE[element_name]
    worst = max(errors.values())
    assert worst <= tolerance, f"{element_name} chain {list(names)} seed {seed}: {errors}"


def test_the_menu_speaks_every_opcode_and_map() -> None:
    seen: set[type] = set()
    maps: set[MapOperation] = set()
    for block in BLOCKS:

        def build(t: Tape, block: Block = block) -> Value:
            arrays, extra, _ = block.make(np.random.default_rng(0), (3, 4))
            return block.ours(t, t.input(np.ones((3, 4))), [t.parameter(a) for a in arrays], extra)

        network, _ = Tape.record(build)
        for node in network.nodes_:
            seen.add(type(node.op))
            if isinstance(node.op, ops.Map):
                maps.add(node.op.operation)
    assert seen == set(OPCODES)
    assert maps == set(MapOperation)


@pytest.mark.parametrize("element_name", sorted(ELEMENTS))
@pytest.mark.parametrize("name", [block.name for block in BLOCKS])
def test_each_block_alone_agrees_with_jax(name: str, element_name: str) -> None:
    assert_within([name], 11, (3, 4), element_name)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(
    names=st.lists(st.sampled_from([block.name for block in BLOCKS]), min_size=2, max_size=5),
    seed=st.integers(0, 2**16),
    rows=st.integers(2, 4),
    columns=st.integers(2, 4),
    element_name=st.sampled_from(sorted(ELEMENTS)),
)
def test_random_chains_agree_with_jax(names: list[str], seed: int, rows: int, columns: int, element_name: str) -> None:
    assert_within(names, seed, (rows, columns), element_name)


def test_a_wrong_gradient_would_be_caught() -> None:
    """The oracle has teeth: a chain whose jax twin differs by one sign is rejected."""
    errors = compare(["sincos"], 3, (3, 4), f32)
    assert max(errors.values()) <= TOLERANCE["f32"]
    original = BY_NAME["sincos"].theirs
    BY_NAME["sincos"].theirs = lambda x, p, e: jnp.sin(x) * jnp.cos(x) - x
    try:
        errors = compare(["sincos"], 3, (3, 4), f32)
    finally:
        BY_NAME["sincos"].theirs = original
    assert max(errors.values()) > 100 * TOLERANCE["f32"]
