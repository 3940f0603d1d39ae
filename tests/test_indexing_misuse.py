"""Indexing and the composite words, called wrongly: a named ToposError, and nothing recorded.

Four properties, each over a family rather than one example:

- every composite word (a method of ``Composites``, ``sum``, ``select``, ``einsum``) that
  fails partway records nothing on any tape it touched, its own or a second one;
- every public method of ``Value`` and ``Tensor``, given wrong-type arguments, raises a
  ToposError subclass naming the method or the argument (never numpy's or Python's raw
  errors), and leaves the tapes as they were;
- indexing reads the positions numpy's rules name, computed from the selection and never
  from the volume, so a small selection of a huge value costs what the selection costs;
- each indexing misuse (bounds, masks, types, ``.at`` updates) has its own class and words.
"""

from __future__ import annotations

import inspect
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from topos import (
    InvalidArgumentError,
    MixedTapesError,
    Shape,
    ShapeMismatchError,
    Tape,
    Tensor,
    ToposError,
    Value,
    einsum,
    f32,
    f64,
    stack,
    where,
)
from topos.composites import SELECTION_LIMIT, Composites
from topos.errors import CapacityError, UnsupportedError
from topos.ir.shape import VOLUME_LIMIT
from topos.vocabulary import Vocabulary

FILE = "test_indexing_misuse.py"


class World:
    """Two open tapes: ``x`` ``[2, 3]``, ``v`` ``[3]`` and a mask ``m`` on one; ``y``, ``w`` on the other."""

    def __init__(self) -> None:
        self.tape = Tape(f32)
        self.other = Tape(f32)
        self.x = self.tape.parameter(np.arange(6.0, dtype=np.float32).reshape(2, 3))
        self.v = self.tape.input(np.ones(3, np.float32))
        self.m = self.x >= 2.0
        self.y = self.other.parameter(np.ones((2, 3), np.float32))
        self.w = self.other.input(np.ones(3, np.float32))

    def snapshot(self) -> tuple[object, ...]:
        return tuple(
            (len(t), t.describe(), sorted(t._sources), list(t._parameters), list(t._inputs), t._lineage)
            for t in (self.tape, self.other)
        )


def _refused(world: World, call: Callable[[World], object], error: type[ToposError], words: tuple[str, ...], line: int) -> None:
    before = world.snapshot()
    with pytest.raises(ToposError) as caught:
        call(world)
    assert type(caught.value) is error, f"{type(caught.value).__name__}: {caught.value}"
    message = str(caught.value)
    assert f"{FILE}:{line}" in message, message
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    assert world.snapshot() == before, "the refused call left nodes behind"


# ----------------------------------------------------------------------------- 1. all or nothing
# Each call fails only after recording part of the word, on one tape or on both: before the
# journal these left nodes (dead leaves, half a scatter) behind.
PARTWAY: list[tuple[str, Callable[[World], object], type[ToposError]]] = [
    ("at-set-update-of-other-tape", lambda w: w.x.at[0].set(w.w), MixedTapesError),
    ("at-add-update-of-other-tape", lambda w: w.x.at[1].add(w.w), MixedTapesError),
    ("at-of-other-tape-value", lambda w: w.y.at[0].set(w.v), MixedTapesError),
    ("at-set-wrong-shape", lambda w: w.x.at[0].set(w.x), ShapeMismatchError),
    ("select-other-tape-true", lambda w: w.m.select(w.y, 1.0), MixedTapesError),
    ("select-other-tape-false", lambda w: w.m.select(1.0, w.y), MixedTapesError),
    ("where-other-tape", lambda w: where(w.m, 0.0, w.y), MixedTapesError),
    ("clip-other-tape", lambda w: w.x.clip(0.0, w.y), MixedTapesError),
    ("clip-wrong-shape", lambda w: w.x.clip(w.v, 1.0), ShapeMismatchError),
    ("atan2-other-tape", lambda w: w.x.atan2(w.y), MixedTapesError),
    ("logaddexp-other-tape", lambda w: w.x.logaddexp(w.y), MixedTapesError),
    ("min-text-axis", lambda w: w.x.min("a"), InvalidArgumentError),  # type: ignore[arg-type]
    ("max-bad-keepdims", lambda w: w.x.max(0, keepdims="yes"), InvalidArgumentError),  # type: ignore[arg-type]
    ("sum-bad-keepdims", lambda w: w.x.sum(0, np.ones(2)), InvalidArgumentError),  # type: ignore[arg-type]
    ("einsum-two-tapes", lambda w: einsum("ij,ij->", w.x, w.y), MixedTapesError),
    ("einsum-two-tapes-matmul", lambda w: einsum("ij,j->i", w.x, w.w), MixedTapesError),
    ("stack-shapes", lambda w: stack([w.x, w.v]), ShapeMismatchError),
    ("unflatten-refused-late", lambda w: w.x.unflatten(1, (2, -1)), ShapeMismatchError),
]


@pytest.mark.parametrize(("name", "call", "error"), PARTWAY, ids=[case[0] for case in PARTWAY])
def test_a_word_that_fails_partway_records_nothing_on_either_tape(
    name: str, call: Callable[[World], object], error: type[ToposError]
) -> None:
    world = World()
    before = world.snapshot()
    with pytest.raises(ToposError) as caught:
        call(world)
    assert isinstance(caught.value, error), f"{name}: {type(caught.value).__name__}: {caught.value}"
    assert FILE in str(caught.value), caught.value
    assert world.snapshot() == before, f"{name} left nodes behind"
    # The tapes stay usable: the next node lands right after what was there.
    assert (world.x + 1.0).index == before[0][0] + 1  # type: ignore[index]


def test_a_refused_word_inside_a_users_transaction_leaves_the_transaction_in_charge() -> None:
    world = World()
    start = len(world.tape)
    with pytest.raises(MixedTapesError), world.tape.transaction():
        world.x.relu()
        world.x.atan2(world.y)
    assert len(world.tape) == start


def test_a_successful_select_records_no_dead_leaves() -> None:
    """Both partners are checked before either is recorded: one constant per number, no more."""
    world = World()
    for on_true, on_false, leaves in ((1.0, 0.0, 2), (world.x, 0.0, 1), (1.0, world.x, 1), (world.x, world.x, 0)):
        start = len(world.tape)
        world.m.select(on_true, on_false)
        names = [node.name for node in world.tape._nodes[start:]]
        assert names == ["Leaf"] * leaves + ["Select"], names


def test_every_composite_word_is_journaled() -> None:
    """The wrapping is generic: each word spelled in Composites (and sum, select, einsum) is atomic."""
    words = [n for n, f in vars(Composites).items() if callable(f) and not isinstance(f, type)]
    assert len(words) > 60
    for name in [*words, "sum", "select"]:
        assert getattr(getattr(Value, name), "__wrapped__", None) is not None, name
    assert getattr(einsum, "__wrapped__", None) is not None


# ----------------------------------------------------------------------------- 2. wrong-type sweeps
BAD: list[object] = ["a", None, np.ones(3), 1.5, True, -9, 7, (0, "a"), [1.0], object(), {"k": 1}, b"x"]
_OPERATORS = {
    "__add__", "__sub__", "__mul__", "__truediv__", "__pow__", "__matmul__", "__radd__", "__rsub__",
    "__rmul__", "__rtruediv__", "__rpow__", "__rmatmul__", "__gt__", "__lt__", "__ge__", "__le__",
    "__getitem__", "__neg__",
}  # fmt: skip
_VALUE_SKIP = {"at", "payload", "symbol", "node", "element", "rank", "shape", "tape", "index"}
_TENSOR_SKIP = {"at", "numpy", "tolist", "bits", "scalar", "element", "rank", "shape", "weak", "fill", "indices",
                "is_constant", "is_selection", "selection_one"}  # fmt: skip


def _public_methods(kind: type, skip: set[str]) -> list[str]:
    names = {n for n in dir(kind) if not n.startswith("_")} | _OPERATORS
    return sorted(n for n in names - skip if callable(getattr(kind, n, None)))


def _arity(method: Any) -> int:
    try:
        parameters = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return 1
    count = sum(1 for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL))
    return min(max(count, 1), 5)


def _sweep(subject: Callable[[World], Any], name: str) -> int:
    """Call ``name`` with each bad argument in each position; return how many refusals were checked."""
    checked = 0
    for slots in range(1, _arity(getattr(subject(World()), name)) + 1):
        for bad in BAD:
            for position in range(slots):
                world = World()
                method = getattr(subject(world), name)
                args: list[object] = [1] * slots
                args[position] = bad
                before = world.snapshot()
                call = f"{name}{tuple(args)!r}"
                try:
                    method(*args)
                except ToposError as error:
                    message = str(error)
                    named = any(word in message for word in (name.strip("_"), type(bad).__name__, repr(bad), str(bad), "index", "axis"))
                    assert named, f"{call}: {message}"
                    assert world.snapshot() == before, f"{call} left nodes behind"
                    checked += 1
                except TypeError as error:
                    # Python's own arity errors belong to the call, not to the vocabulary.
                    if "positional argument" in str(error) or ("takes" in str(error) and "given" in str(error)):
                        continue
                    raise AssertionError(f"{call} raised raw {type(error).__name__}: {error}") from None
                except Exception as error:
                    raise AssertionError(f"{call} raised raw {type(error).__name__}: {error}") from None
    return checked


@pytest.mark.parametrize("name", _public_methods(Value, _VALUE_SKIP))
def test_every_value_method_refuses_wrong_types_by_name(name: str) -> None:
    _sweep(lambda w: w.x, name)


@pytest.mark.parametrize("name", _public_methods(Tensor, _TENSOR_SKIP))
def test_every_tensor_method_refuses_wrong_types_by_name(name: str) -> None:
    _sweep(lambda w: Tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3)), name)


def test_the_sweeps_cover_every_word_and_reach_the_ones_that_once_raised_raw() -> None:
    spoken = {n for n in vars(Vocabulary) | vars(Composites) if not n.startswith("_")} - {"at", "rank"}
    assert spoken <= set(_public_methods(Value, _VALUE_SKIP)) and spoken <= set(_public_methods(Tensor, _TENSOR_SKIP))
    for name in ("broadcast_like", "unflatten", "clip", "gelu", "sum", "max", "argmax", "expand", "elu"):
        assert _sweep(lambda w: w.x, name) > 0, name


# The sampled raw errors, one row each, with their class and the words the message must hold.
RAW: list[tuple[str, Callable[[World], object], type[ToposError], tuple[str, ...]]] = [
    ("tensor-ragged", lambda w: Tensor([[1.0], [1.0, 2.0]]), InvalidArgumentError, ("Tensor", "rectangular")),
    ("tensor-ragged-deep", lambda w: Tensor([[[1.0, 2.0]], [[1.0]]]), InvalidArgumentError, ("rectangular",)),
    ("broadcast-like-int", lambda w: w.x.broadcast_like(3), InvalidArgumentError, ("broadcast_like", "int 3")),  # type: ignore[arg-type]
    ("broadcast-like-array", lambda w: w.x.broadcast_like(np.ones(3)), InvalidArgumentError, ("broadcast_like", "ndarray")),  # type: ignore[arg-type]
    ("broadcast-along-like-int", lambda w: w.v.broadcast_along_like(0, 3), InvalidArgumentError, ("broadcast_along_like",)),  # type: ignore[arg-type]
    ("broadcast-along-like-axis", lambda w: w.v.broadcast_along_like(5, w.x), InvalidArgumentError, ("broadcast_along_like", "5")),
    ("unflatten-int-sizes", lambda w: w.x.unflatten(-1, 2), InvalidArgumentError, ("unflatten", "sizes", "int 2")),  # type: ignore[arg-type]
    ("unflatten-none-sizes", lambda w: w.x.unflatten(1, None), InvalidArgumentError, ("unflatten", "None")),  # type: ignore[arg-type]
    ("unflatten-text-extent", lambda w: w.x.unflatten(1, ["a", "b"]), InvalidArgumentError, ("unflatten", "'a'")),  # type: ignore[list-item]
    ("clip-text", lambda w: w.x.clip(0.0, "a"), InvalidArgumentError, ("clip", "high", "'a'")),  # type: ignore[arg-type]
    ("clip-none-low", lambda w: w.x.clip(None, 1.0), InvalidArgumentError, ("clip", "low", "None")),  # type: ignore[arg-type]
    ("clip-bool", lambda w: w.x.clip(True, 1.0), InvalidArgumentError, ("clip", "low", "True")),
    ("tensor-clip-text", lambda w: Tensor([1.0]).clip(0.0, "a"), InvalidArgumentError, ("clip", "'a'")),  # type: ignore[arg-type]
    ("gelu-array", lambda w: w.x.gelu(np.ones(3)), InvalidArgumentError, ("gelu", "approximate")),  # type: ignore[arg-type]
    ("tensor-gelu-array", lambda w: Tensor([1.0]).gelu(np.ones(3)), InvalidArgumentError, ("gelu", "approximate")),  # type: ignore[arg-type]
    ("gelu-text", lambda w: w.x.gelu("tanh"), InvalidArgumentError, ("gelu", "'tanh'")),  # type: ignore[arg-type]
    ("mean-keepdims-array", lambda w: w.x.mean(0, np.ones(2)), InvalidArgumentError, ("mean", "keepdims")),  # type: ignore[arg-type]
    ("var-keepdims-text", lambda w: w.x.var(0, 0, "no"), InvalidArgumentError, ("var", "keepdims")),  # type: ignore[arg-type]
    ("std-keepdims-none", lambda w: w.x.std(0, 0, None), InvalidArgumentError, ("std", "keepdims")),  # type: ignore[arg-type]
    ("prod-keepdims", lambda w: w.x.prod(0, 2), InvalidArgumentError, ("prod", "keepdims")),  # type: ignore[arg-type]
    ("argmin-keepdims", lambda w: w.x.argmin(0, "a"), InvalidArgumentError, ("argmin", "keepdims")),  # type: ignore[arg-type]
    ("expand-array", lambda w: w.v.expand(np.ones(3), 1), InvalidArgumentError, ("expand",)),  # type: ignore[arg-type]
    ("expand-none", lambda w: w.v.expand(None), InvalidArgumentError, ("expand", "None")),  # type: ignore[arg-type]
    ("elu-text", lambda w: w.x.elu("a"), InvalidArgumentError, ("elu", "alpha", "'a'")),  # type: ignore[arg-type]
    ("celu-inf", lambda w: w.x.celu(float("inf")), InvalidArgumentError, ("celu", "alpha", "inf")),
]


@pytest.mark.parametrize(("name", "call", "error", "words"), RAW, ids=[case[0] for case in RAW])
def test_sampled_raw_errors_are_named_refusals(
    name: str, call: Callable[[World], object], error: type[ToposError], words: tuple[str, ...]
) -> None:
    _refused(World(), call, error, words, call.__code__.co_firstlineno)


# ----------------------------------------------------------------------------- 3. indexing misuse
INDEXING: list[tuple[str, Callable[[World], object], type[ToposError], tuple[str, ...]]] = [
    ("int-out-of-range", lambda w: w.x[2], InvalidArgumentError, ("index 2", "[2, 3]", "out of bounds")),
    ("negative-out-of-range", lambda w: w.x[-3], InvalidArgumentError, ("-3", "out of bounds")),
    ("second-axis-out-of-range", lambda w: w.x[0, 3], InvalidArgumentError, ("3", "axis 1")),
    ("too-many-indices", lambda w: w.x[0, 0, 0], InvalidArgumentError, ("too many indices", "[2, 3]")),
    ("float-index", lambda w: w.x[1.0], InvalidArgumentError, ("1.0", "not an integer")),
    ("numpy-float-index", lambda w: w.x[0, np.float32(1.0)], InvalidArgumentError, ("not an integer",)),
    ("float-array-index", lambda w: w.x[np.array([0.0, 1.0])], InvalidArgumentError, ("integers or bools", "ndarray")),
    ("text-index", lambda w: w.x["a"], InvalidArgumentError, ("'a'", "str")),
    ("text-list-index", lambda w: w.x[["a", "b"]], InvalidArgumentError, ("'a'", "list")),
    ("bytes-index", lambda w: w.x[b"a"], InvalidArgumentError, ("b'a'",)),
    ("ragged-list-index", lambda w: w.x[[[0, 1], [1]]], InvalidArgumentError, ("[[0, 1], [1]]",)),
    ("dict-index", lambda w: w.x[{0: 1}], InvalidArgumentError, ("dict",)),
    ("mask-wrong-shape", lambda w: w.x[np.array([True, False, True])], InvalidArgumentError, ("boolean index", "[2, 3]")),
    ("mask-wrong-rank", lambda w: w.x[np.ones((2, 3, 1), bool)], InvalidArgumentError, ("too many indices",)),
    ("mask-selects-nothing", lambda w: w.x[np.zeros((2, 3), bool)], InvalidArgumentError, ("selects no element",)),
    ("empty-slice", lambda w: w.x[:, 3:], InvalidArgumentError, ("selects no element",)),
    ("empty-list", lambda w: w.x[[]], InvalidArgumentError, ("selects no element",)),
    ("two-ellipses", lambda w: w.x[..., 0, ...], InvalidArgumentError, ("ellipsis",)),
    ("ellipsis-too-many", lambda w: w.x[0, ..., 0, 0], InvalidArgumentError, ("too many indices",)),
    ("none-and-too-many", lambda w: w.x[None, 0, 0, 0], InvalidArgumentError, ("too many indices",)),
    ("array-out-of-range", lambda w: w.x[:, [0, 5]], InvalidArgumentError, ("5", "out of bounds")),
    ("arrays-do-not-broadcast", lambda w: w.x[[0, 1], [0, 1, 2]], InvalidArgumentError, ("broadcast",)),
    ("zero-step", lambda w: w.x[::0], InvalidArgumentError, ("slice step",)),
    ("value-index", lambda w: w.x[w.v], UnsupportedError, ("gather", "known when recording")),
    ("tensor-index", lambda w: w.x[0, Tensor([0.0])], UnsupportedError, ("gather",)),
    ("tensor-int-out-of-range", lambda w: Tensor([1.0, 2.0])[2], InvalidArgumentError, ("index 2", "[2]")),
    ("tensor-float-index", lambda w: Tensor([1.0, 2.0])[0.5], InvalidArgumentError, ("0.5",)),
    ("tensor-mask-wrong-shape", lambda w: Tensor([1.0, 2.0])[np.array([True])], InvalidArgumentError, ("boolean index",)),
    ("at-update-wrong-shape", lambda w: w.x.at[0].set(w.x), ShapeMismatchError, ("at[0].set", "[3]", "[2, 3]")),
    ("at-add-wrong-shape", lambda w: w.x.at[:, 0].add(w.v), ShapeMismatchError, (".add", "[2]", "[3]")),
    ("at-update-text", lambda w: w.x.at[0].set("a"), InvalidArgumentError, ("at[0].set", "'a'")),  # type: ignore[arg-type]
    ("at-update-bool", lambda w: w.x.at[0].add(True), InvalidArgumentError, ("at[0].add", "True")),
    ("at-update-array", lambda w: w.x.at[0].set(np.ones(3)), InvalidArgumentError, ("at[0].set", "ndarray")),  # type: ignore[arg-type]
    ("at-update-none", lambda w: w.x.at[1].set(None), InvalidArgumentError, ("at[1].set", "None")),  # type: ignore[arg-type]
    ("at-update-tensor-on-value", lambda w: w.x.at[0].set(Tensor([1.0, 2.0, 3.0], f32)), InvalidArgumentError, ("takes a Value", "Tensor([1.0")),  # type: ignore[arg-type]
    ("at-update-value-on-tensor", lambda w: Tensor([1.0, 2.0]).at[0].set(w.v), InvalidArgumentError, ("Value",)),  # type: ignore[arg-type]
    ("at-update-other-tape", lambda w: w.x.at[1].set(w.w), MixedTapesError, ("at[1].set", "another tape")),
    ("at-on-other-tapes-value", lambda w: w.y.at[0].add(w.v), MixedTapesError, ("another tape",)),
    ("at-index-out-of-range", lambda w: w.x.at[5].set(1.0), InvalidArgumentError, ("index 5", "out of bounds")),
    ("at-float-index", lambda w: w.x.at[0.5].set(1.0), InvalidArgumentError, ("0.5",)),
    ("at-set-twice", lambda w: w.x.at[[0, 0]].set(1.0), InvalidArgumentError, ("twice", ".add")),
    ("at-empty", lambda w: w.x.at[:, 5:].set(1.0), InvalidArgumentError, ("selects no element",)),
    ("at-value-index", lambda w: w.x.at[w.v].set(1.0), UnsupportedError, ("gather",)),
    ("at-get-out-of-range", lambda w: w.x.at[9].get(), InvalidArgumentError, ("index 9",)),
    ("iterate", lambda w: list(w.x), UnsupportedError, ("iterating", "narrow")),
]


@pytest.mark.parametrize(("name", "call", "error", "words"), INDEXING, ids=[case[0] for case in INDEXING])
def test_indexing_misuse_is_refused_by_name_and_records_nothing(
    name: str, call: Callable[[World], object], error: type[ToposError], words: tuple[str, ...]
) -> None:
    _refused(World(), call, error, words, call.__code__.co_firstlineno)


# ----------------------------------------------------------------------------- 4. positions from the selection
INDICES: list[object] = [
    0, -1, (1, 2), slice(None, None, 2), (slice(None), [2, 0]), ([0, 1], [1, 2]), (None, 0), (..., 1),
    (0, ..., None), slice(None, None, -1), (slice(None), slice(None, None, -2)), np.array([[1, 0], [0, 1]]),
    (np.array([True, False]),), (slice(1, None), None, [0, 0, 2]), ([1], slice(None), [0]), (..., [3, 0]),
    (np.array([[0], [1]]), np.array([[0, 2]])), True, (0, True), np.ones((2, 3, 4), bool), (1, [0, 2], 1),
    ([0, 1], 0, slice(None)), (slice(None), np.int64(1)), ([-1, 0],), (slice(-1, None), ..., slice(None, 1)),
]  # fmt: skip


@pytest.mark.parametrize("index", INDICES, ids=[repr(i) for i in INDICES])
def test_positions_are_numpys_and_the_result_is_bit_identical(index: Any) -> None:
    data = np.random.default_rng(7).standard_normal((2, 3, 4))
    expected = np.ascontiguousarray(data[index]).tobytes()
    tensor = Tensor(data, f64)
    positions = tensor._positions(index, "site")
    assert positions.dtype == np.int64
    assert np.array_equal(positions, np.arange(data.size).reshape(data.shape)[index])
    assert tensor[index].bits().tobytes() == expected
    network, y = Tape.record(lambda t: t.input(data)[index], element=f64)
    assert network.forward(network.parameters()).of(y).bits().tobytes() == expected


def test_a_small_selection_of_a_huge_value_costs_the_selection_not_the_volume() -> None:
    """A recorded broadcast of 2**40 elements, indexed by a few positions, allocates next to nothing."""
    tape = Tape(f32)
    huge = tape.leaf(1.0).broadcast((2**20, 2**20))
    tracemalloc.start()
    try:
        corner = huge[0, :3]
        picked = huge[[0, 5, 2**20 - 1], [1, 2, 3]]
        placed = huge.at[3, [0, 7]].set(2.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The per-axis vectors cost an axis's extent (8 MiB here); the volume would be 8 TiB.
    assert peak < 12 << 20, peak
    assert corner.shape == Shape((3,)) and picked.shape == Shape((3,)) and placed.shape == huge.shape
    selections = [p.indices.tolist() for p in tape._sources.values() if p.indices is not None]
    assert [1, 5 * 2**20 + 2, 2**40 - 2**20 + 3] in selections
    assert [3 * 2**20, 3 * 2**20 + 7] in selections


def test_a_selection_over_the_limit_is_a_capacity_error_and_records_nothing() -> None:
    tape = Tape(f32)
    huge = tape.leaf(1.0).broadcast((2**16, 2**16))
    start = len(tape)
    rows = np.arange(2**16)[:, None]
    calls: list[Callable[[], object]] = [lambda: huge[rows, :], lambda: huge.at[:, :].set(0.0), lambda: huge.at[rows].add(1.0)]
    for call in calls:
        with pytest.raises(CapacityError, match=rf"(?s){FILE}:\d+: index .* names {2**32} positions .*2\*\*30"):
            call()
        assert len(tape) == start
    assert SELECTION_LIMIT == 2**30


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 5), (4, 1, 3)])
@pytest.mark.parametrize("largest", [True, False])
def test_argmax_records_one_row_of_positions_not_the_volume(shape: tuple[int, ...], largest: bool) -> None:
    data = np.random.default_rng(len(shape)).integers(0, 3, shape).astype(np.float64)
    tape = Tape(f64)
    x = tape.input(data)
    start = len(tape)
    out = x.argmax(-1) if largest else x.argmin(-1)
    payloads = [tape._sources[i] for i in range(start, len(tape)) if i in tape._sources]
    assert max(p.shape.volume for p in payloads if not p.is_constant) == shape[-1]
    network = tape.seal_view()
    expected = data.argmax(-1) if largest else data.argmin(-1)
    assert np.array_equal(network.forward(network.parameters()).of(out.symbol).numpy(), expected)
    tensor = Tensor(data, f64)
    assert np.array_equal((tensor.argmax(-1) if largest else tensor.argmin(-1)).numpy(), expected)


# ----------------------------------------------------------------------------- 5. capacity
def test_the_volume_limit_keeps_every_array_inside_numpys_ceiling() -> None:
    assert VOLUME_LIMIT * 8 < np.iinfo(np.int64).max
    with pytest.raises(CapacityError, match=r"2\*\*59"):
        Shape((VOLUME_LIMIT + 1,))
    # At the limit numpy is asked and answers MemoryError (not "array is too big"), which arrives named.
    with pytest.raises(CapacityError, match=r"Tensor\.map .*\[576460752303423488\]"):
        Tensor.filled((VOLUME_LIMIT,), 1.0, f64).exp()


CAPACITY: list[tuple[str, Callable[[], object], tuple[str, ...]]] = [
    ("selection-numpy", lambda: Tensor.selection([0, 1], 2**40).numpy(), ("Tensor.numpy", "[2, 1099511627776]", "bytes")),
    ("selection-tolist", lambda: Tensor.selection([0, 1], 2**40).tolist(), ("[2, 1099511627776]", "bytes")),
    ("constant-copy", lambda: Tensor(Tensor.filled((2**18, 2**18), 1.0)), ("Tensor (a copy)", "[262144, 262144]", "274877906944 bytes")),
    ("constant-bits", lambda: Tensor.filled((2**18, 2**18), 1.0).bits(), ("Tensor.bits", "[262144, 262144]")),
    ("constant-tolist", lambda: Tensor.filled((2**18, 2**18), 1.0).tolist(), ("Tensor.tolist", "549755813888 bytes")),
    ("broadcast-exp", lambda: Tensor(1.0, f32).broadcast((2**18, 2**18)).exp(), ("Tensor.map", "[262144, 262144]")),
]


@pytest.mark.parametrize(("name", "call", "words"), CAPACITY, ids=[case[0] for case in CAPACITY])
def test_huge_materializations_are_capacity_errors(name: str, call: Callable[[], object], words: tuple[str, ...]) -> None:
    with pytest.raises(CapacityError) as caught:
        call()
    message = str(caught.value)
    for word in words:
        assert word in message, f"{name}: {word!r} not in {message!r}"
