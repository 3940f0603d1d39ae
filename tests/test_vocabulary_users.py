"""The vocabulary users bring (issue 12), held to jax.numpy / jax.lax in f64.

Each item is recorded on a tape, run by the interpreter and differentiated by the engine;
values and the vector-Jacobian product against a fixed cotangent are compared with JAX
in x64 within 1e-10 (absolute plus relative): the compositions add in other orders than
XLA's, so bits can differ, but never by more than a few ulps of f64 at these magnitudes.
Masks, indices and selections are compared exactly. Entries are drawn from a small grid
so ties and zeros are frequent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from topos import Tape, Tensor, ToposError, Value, einsum, f64, stop_gradient, where

jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]

Array = np.ndarray[Any, Any]
TOLERANCE = 1e-10
FEW = settings(max_examples=8, deadline=None)
GRID = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0]


def _shapes(min_rank: int = 1, max_rank: int = 3) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.integers(1, 4), min_size=min_rank, max_size=max_rank).map(tuple)


def _arrays(shape: tuple[int, ...]) -> st.SearchStrategy[Array]:
    size = int(np.prod(shape))
    return st.lists(st.sampled_from(GRID), min_size=size, max_size=size).map(lambda v: np.array(v).reshape(shape))


def _run(build: Callable[..., Value], *arrays: Array, cotangent_seed: int = 3) -> tuple[Array, list[Array], Array]:
    """The value of ``build(*inputs)`` and the gradient of ``sum(y * w)`` for each input."""
    holder: dict[str, Any] = {}

    def record(t: Tape) -> tuple[list[Value], Value, Value]:
        inputs = [t.input(a) for a in arrays]
        y = build(*inputs)
        w = np.random.default_rng(cotangent_seed).uniform(0.5, 1.5, y.shape.axes)
        holder["w"] = w
        return inputs, y, (y * t.leaf(w)).sum()

    network, (inputs, y, loss) = Tape.record(record, element=f64)
    run = network.forward(network.parameters())
    grads = run.backward(loss)
    return run.of(y).numpy(), [grads.of(x).numpy() for x in inputs], holder["w"]


def _close(actual: Array, expected: Any) -> None:
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=TOLERANCE, atol=TOLERANCE)


def _check(build: Callable[..., Value], reference: Callable[..., Any], *arrays: Array) -> None:
    value, grads, w = _run(build, *arrays)
    expected, pullback = jax.vjp(reference, *(jnp.asarray(a) for a in arrays))
    _close(value, expected)
    for grad, wanted in zip(grads, pullback(jnp.asarray(w)), strict=True):
        _close(grad, wanted)


# ----------------------------------------------------------------------------- indexing


@st.composite
def _indices(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    parts: list[Any] = []
    arrays = 0
    for extent in shape:
        kind = draw(st.sampled_from(["int", "slice", "none", "array", "all"]))
        if kind == "none":
            parts.append(None)
        if kind == "int":
            parts.append(draw(st.integers(-extent, extent - 1)))
        elif kind == "slice":
            step = draw(st.sampled_from([None, 1, 2, 3, -1, -2]))
            start = draw(st.none() | st.integers(-extent - 1, extent + 1))
            stop = draw(st.none() | st.integers(-extent - 1, extent + 1))
            parts.append(slice(start, stop, step))
        elif kind == "array" and arrays == 0:
            arrays += 1
            parts.append(np.array(draw(st.lists(st.integers(-extent, extent - 1), min_size=1, max_size=3))))
        else:
            parts.append(slice(None))
    if draw(st.booleans()) and len(parts) > 1:
        parts[draw(st.integers(0, len(parts) - 1))] = Ellipsis
    return tuple(parts)


@FEW
@given(data=st.data())
def test_indexing_matches_numpy_and_is_differentiable(data: st.DataObject) -> None:
    shape = data.draw(_shapes())
    x = data.draw(_arrays(shape))
    index = data.draw(_indices(shape))
    assume(np.arange(x.size).reshape(shape)[index].size > 0)
    _check(lambda v: v[index], lambda a: a[index], x)


@FEW
@given(data=st.data())
def test_at_set_and_add_match_jax(data: st.DataObject) -> None:
    shape = data.draw(_shapes())
    x = data.draw(_arrays(shape))
    index = data.draw(_indices(shape))
    read = np.arange(x.size).reshape(shape)[index]
    assume(read.size > 0)
    update = data.draw(_arrays(read.shape))
    _check(lambda v, u: v.at[index].add(u), lambda a, u: a.at[index].add(u), x, update)
    assume(np.unique(read).size == read.size)
    _check(lambda v, u: v.at[index].set(u), lambda a, u: a.at[index].set(u), x, update)
    _check(lambda v: v.at[index].set(7.0), lambda a: a.at[index].set(7.0), x)


# ----------------------------------------------------------------------------- comparisons


SPECIAL = [-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan]


def _values(build: Callable[..., Value], *arrays: Array) -> Array:
    network, y = Tape.record(lambda t: build(*(t.input(a) for a in arrays)), element=f64)
    return network.forward(network.parameters()).of(y).numpy()


@FEW
@given(data=st.data())
def test_comparisons_and_tests_are_exact_masks(data: st.DataObject) -> None:
    shape = data.draw(_shapes())
    size = int(np.prod(shape))
    a = np.array(data.draw(st.lists(st.sampled_from(SPECIAL), min_size=size, max_size=size))).reshape(shape)
    b = np.array(data.draw(st.lists(st.sampled_from(SPECIAL), min_size=size, max_size=size))).reshape(shape)
    pairs: dict[str, tuple[Callable[[Value, Value], Value], Any]] = {
        ">": (lambda x, y: x > y, np.greater),
        ">=": (lambda x, y: x >= y, np.greater_equal),
        "<": (lambda x, y: x < y, np.less),
        "<=": (lambda x, y: x <= y, np.less_equal),
        "eq": (lambda x, y: x.eq(y), np.equal),
        "ne": (lambda x, y: x.ne(y), np.not_equal),
    }
    for name, (ours, theirs) in pairs.items():
        got = _values(ours, a, b)
        assert np.array_equal(got, theirs(a, b).astype(np.float64)), name
    for name, test in (("isnan", jnp.isnan), ("isinf", jnp.isinf), ("isfinite", jnp.isfinite)):
        got = _values(lambda x, name=name: getattr(x, name)(), a)
        assert np.array_equal(got, np.asarray(test(a)).astype(np.float64)), name
    # A literal on the left reflects: 0.5 < x is x > 0.5.
    assert np.array_equal(_values(lambda x: 0.5 < x, a), (a > 0.5).astype(np.float64))


def test_masks_carry_no_gradient_and_identity_equality_stays() -> None:
    x = np.array([-1.0, 0.0, 2.0])
    _check(lambda v: (v > 0.0) * v, lambda a: (a > 0.0) * a, x)
    seen: dict[str, object] = {}

    def record(t: Tape) -> Value:
        v, w = t.input(x), t.input(x)
        seen["same"], seen["other"], seen["keyed"] = v == v, v == w, {v: 1, w: 2}[w]
        return v.eq(w)

    Tape.record(record, element=f64)
    assert seen == {"same": True, "other": False, "keyed": 2}
    tensor = Tensor(x, element=f64)
    assert (tensor == tensor) is True and (tensor != Tensor(x, element=f64)) is True


@FEW
@given(data=st.data())
def test_where_is_safe_where_the_other_side_is_inf_or_nan(data: st.DataObject) -> None:
    shape = data.draw(_shapes())
    x = data.draw(_arrays(shape))
    # The unselected side gets an exact zero cotangent; its own rule may still make 0/0 of
    # it (ln at 0), so the inner where keeps ln's operand safe, exactly as with JAX.
    _check(
        lambda v: where(v > 0.0, where(v > 0.0, v, 1.0).ln(), v * 2.0) + (v.ne(0.0)).select(1.0 / (v.ne(0.0).select(v, 1.0)), 0.0),
        lambda a: jnp.where(a > 0.0, jnp.log(jnp.where(a > 0, a, 1.0)), a * 2.0)
        + jnp.where(a != 0.0, 1.0 / jnp.where(a != 0.0, a, 1.0), 0.0),
        x,
    )
    # Values: the side not chosen may be inf or NaN and never shows.
    poisoned = np.where(x > 0, np.nan, x)
    assert np.array_equal(_values(lambda v, p: where(v > 0.0, v, p), x, poisoned), np.where(x > 0, x, poisoned))
    assert np.array_equal(_values(lambda v: where(v > 0.0, v.ln(), 0.0), x), np.where(x > 0, np.log(np.where(x > 0, x, 1)), 0.0))


def test_stop_gradient_is_the_identity_with_no_gradient() -> None:
    x = np.array([-1.5, 0.0, 2.0])
    _check(lambda v: v * stop_gradient(v) + v.stop_gradient(), lambda a: a * jax.lax.stop_gradient(a) + jax.lax.stop_gradient(a), x)


# ----------------------------------------------------------------------------- reductions


@st.composite
def _axes(draw: st.DrawFn, rank: int) -> Any:
    choice = draw(st.sampled_from(["none", "one", "many"]))
    if choice == "none":
        return None
    if choice == "one":
        return draw(st.integers(-rank, rank - 1))
    picked = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    return tuple(a - rank if draw(st.booleans()) else a for a in picked)


@FEW
@given(data=st.data())
def test_sum_mean_var_std_over_axes(data: st.DataObject) -> None:
    shape = data.draw(_shapes())
    x = data.draw(_arrays(shape)) + np.linspace(0.0, 0.3, int(np.prod(shape))).reshape(shape)
    axis = data.draw(_axes(len(shape)))
    keep = data.draw(st.booleans())
    _check(lambda v: v.sum(axis, keep), lambda a: jnp.sum(a, axis, keepdims=keep), x)
    _check(lambda v: v.mean(axis, keep), lambda a: jnp.mean(a, axis, keepdims=keep), x)
    count = x.size if axis is None else int(np.prod([shape[a] for a in np.atleast_1d(axis)]))
    correction = data.draw(st.integers(0, 1)) if count > 1 else 0
    _check(lambda v: v.var(axis, correction, keep), lambda a: jnp.var(a, axis, ddof=correction, keepdims=keep), x)
    # Strictly increasing entries keep the spread positive, where std's gradient is finite.
    if count > 1:
        _check(lambda v: v.std(axis, correction, keep), lambda a: jnp.std(a, axis, ddof=correction, keepdims=keep), x)


def _first_chosen(a: Any, axis: Any, keep: bool, pick: Any) -> Any:
    """The element ``pick`` (argmax or argmin) chooses over ``axis``: the tie rule as JAX would differentiate it."""
    rank = a.ndim
    axes = tuple(range(rank)) if axis is None else tuple(sorted(x % rank for x in np.atleast_1d(axis)))
    kept = [i for i in range(rank) if i not in axes]
    moved = jnp.transpose(a, (*kept, *axes)).reshape((*(a.shape[i] for i in kept), -1))
    chosen = jnp.take_along_axis(moved, pick(moved, axis=-1)[..., None], axis=-1)[..., 0]
    if keep:
        chosen = chosen.reshape(tuple(1 if i in axes else e for i, e in enumerate(a.shape)))
    return chosen


@FEW
@given(data=st.data())
def test_max_min_prod_and_their_tie_rule(data: st.DataObject) -> None:
    shape = data.draw(_shapes())
    x = data.draw(_arrays(shape))
    axis = data.draw(_axes(len(shape)))
    keep = data.draw(st.booleans())
    _check(lambda v: v.max(axis, keep), lambda a: _first_chosen(a, axis, keep, jnp.argmax), x)
    _check(lambda v: v.min(axis, keep), lambda a: _first_chosen(a, axis, keep, jnp.argmin), x)
    assert np.array_equal(_values(lambda v: v.max(axis, keep), x), np.max(x, axis, keepdims=keep))
    _check(lambda v: v.prod(axis, keep), lambda a: jnp.prod(a, axis, keepdims=keep), x)


@FEW
@given(data=st.data())
def test_argmax_argmin_are_first_indices_with_nan_first(data: st.DataObject) -> None:
    shape = data.draw(_shapes())
    size = int(np.prod(shape))
    x = np.array(data.draw(st.lists(st.sampled_from([*GRID, np.inf, -np.inf, np.nan]), min_size=size, max_size=size))).reshape(shape)
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    assert np.array_equal(_values(lambda v: v.argmax(axis), x), np.asarray(jnp.argmax(x, axis)).astype(np.float64))
    assert np.array_equal(_values(lambda v: v.argmin(axis), x), np.asarray(jnp.argmin(x, axis)).astype(np.float64))
    _, grads, _ = _run(lambda v: v.argmax(axis) * 1.0 + v.sum() * 0.0, np.nan_to_num(x))
    assert not grads[0].any()


@FEW
@given(data=st.data())
def test_cumsum_and_logcumsumexp(data: st.DataObject) -> None:
    shape = data.draw(_shapes())
    x = data.draw(_arrays(shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    _check(lambda v: v.cumsum(axis), lambda a: jnp.cumsum(a, axis), x)
    _check(lambda v: v.logcumsumexp(axis), lambda a: jax.lax.cumlogsumexp(a, axis % len(shape)), x)


# ----------------------------------------------------------------------------- axes and shapes


@FEW
@given(data=st.data())
def test_axes_and_shapes(data: st.DataObject) -> None:
    shape = data.draw(_shapes(2, 4))
    x = data.draw(_arrays(shape))
    rank = len(shape)
    a, b = data.draw(st.integers(-rank, rank - 1)), data.draw(st.integers(-rank, rank - 1))
    _check(lambda v: v.transpose(a, b), lambda t: jnp.swapaxes(t, a, b), x)
    order = data.draw(st.permutations(range(rank)))
    negative = [o - rank if o % 2 else o for o in order]
    _check(lambda v: v.permute(negative), lambda t: jnp.transpose(t, order), x)
    _check(lambda v: v.reshape((-1, shape[-1])), lambda t: t.reshape((-1, shape[-1])), x)
    _check(lambda v: v.reshape(-1), lambda t: t.reshape(-1), x)
    _check(lambda v: v.flatten(), lambda t: t.reshape(-1), x)
    _check(lambda v: v.flatten(1), lambda t: t.reshape((shape[0], -1)), x)
    _check(lambda v: v.unflatten(0, (1, -1)), lambda t: t.reshape((1, *shape)), x)
    _check(lambda v: v.expand(2, *([-1] * rank)), lambda t: jnp.broadcast_to(t, (2, *shape)), x)
    _check(lambda v: v.sum_along(-1).logsumexp(-1), lambda t: jax.nn.logsumexp(t.sum(-1), -1), x)


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ij,ij->", [(2, 3), (2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("i,j->ij", [(3,), (2,)]),
    ("bhqd,bhkd->bhqk", [(2, 1, 3, 2), (2, 1, 4, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 4)]),
    ("ijk,ik", [(2, 3, 2), (2, 2)]),
    ("ab,bc->a", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("spec, shapes", EINSUMS, ids=[s for s, _ in EINSUMS])
def test_einsum_matches_jax(spec: str, shapes: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(len(spec))
    arrays = [rng.uniform(-1.0, 1.0, shape) for shape in shapes]
    _check(lambda *vs: einsum(spec, *vs), lambda *ts: jnp.einsum(spec, *ts), *arrays)


# ----------------------------------------------------------------------------- misuse


def _misuse(build: Callable[[Value], Any], words: str) -> None:
    marker = f"{__file__.rsplit('/', 1)[-1]}:"
    with pytest.raises(ToposError) as caught:
        Tape.record(lambda t: build(t.input(np.ones((2, 3)))), element=f64)
    assert marker in str(caught.value) and words in str(caught.value), str(caught.value)


@pytest.mark.parametrize(
    "build, words",
    [
        (lambda v: v.sum(axis=2), "out of range"),
        (lambda v: v.max(axis=(0, -2)), "twice"),
        (lambda v: v.cumsum(-3), "out of range"),
        (lambda v: v.transpose(0, 5), "out of range"),
        (lambda v: v[5], "index"),
        (lambda v: v[0, 0, 0], "index"),
        (lambda v: v[1:1], "selects no element"),
        (lambda v: v[v], "known when recording"),
        (lambda v: v[0.5], "not an integer"),
        (lambda v: where(v > 0.0, v, v.sum()), "does not match the mask"),
        (lambda v: v.at[[0, 0]].set(1.0), "names a position twice"),
        (lambda v: v.at[0].set(v), "takes an update"),
        (lambda v: v.reshape((-1, -1)), "at most one"),
        (lambda v: v.var(0, correction=2), "divides by"),
        (lambda v: einsum("ii->i", v.reshape((3, 2)).narrow(0, 0, 2)), "diagonal"),
        (lambda v: einsum("ij,jk->ik", v, v), "extents"),
        (lambda v: v.argmax(4), "out of range"),
    ],
)
def test_misuse_names_the_users_line(build: Callable[[Value], Any], words: str) -> None:
    _misuse(build, words)


def test_tensor_speaks_the_same_vocabulary() -> None:
    x = Tensor(np.array([[3.0, -1.0, 3.0], [0.0, 2.0, -4.0]]), element=f64)
    assert x[-1, ::2].tolist() == [0.0, -4.0]
    assert x.max(1).tolist() == [3.0, 2.0] and x.argmax(1).tolist() == [0.0, 1.0]
    assert (x >= 0.0).tolist() == [[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]
    assert x.at[:, 1].set(9.0).tolist() == [[3.0, 9.0, 3.0], [0.0, 9.0, -4.0]]
    assert where(x > 0.0, x.ln(), 0.0).numpy()[1].tolist() == [0.0, float(np.log(2.0)), 0.0]
