"""topos.data: seeded shuffling, every row once per epoch, the last batch, feeds of the
recorded shape, selections that stay indices, and the language-model streams."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import InvalidArgumentError, ShapeMismatchError, Tape, Tensor, f32, f64
from topos.data import CharVocabulary, Feeder, Loader, Selection, TokenStream
from topos.errors import FeedError

sizes = st.tuples(st.integers(1, 60), st.integers(1, 16)).filter(lambda rb: rb[0] >= rb[1])


@settings(max_examples=40, deadline=None)
@given(sizes, st.integers(0, 2**32 - 1), st.integers(0, 5))
def test_an_epoch_is_the_same_permutation_for_the_same_seed_and_epoch(rows_batch: tuple[int, int], seed: int, epoch: int) -> None:
    rows, batch = rows_batch
    a = Loader((np.arange(rows),), batch=batch, seed=seed, last="pad")
    b = Loader((np.arange(rows) * 2,), batch=batch, seed=seed, last="pad")
    first = [x.rows.tolist() for x in a.epoch(epoch)]
    # A fresh loader over other arrays, read after another epoch: the same order.
    list(b.epoch(epoch + 1))
    assert first == [x.rows.tolist() for x in b.epoch(epoch)]
    assert np.array_equal(a.order(epoch), b.order(epoch))


def test_different_seeds_and_epochs_give_different_orders() -> None:
    loader = Loader((np.arange(100),), batch=10, seed=1)
    orders = {tuple(loader.order(e).tolist()) for e in range(5)}
    orders.add(tuple(Loader((np.arange(100),), batch=10, seed=2).order(0).tolist()))
    assert len(orders) == 6


@settings(max_examples=40, deadline=None)
@given(sizes, st.integers(0, 1000))
def test_pad_visits_every_row_exactly_once_and_masks_the_filler(rows_batch: tuple[int, int], seed: int) -> None:
    rows, batch = rows_batch
    data = np.arange(rows) * 3
    loader = Loader((data, np.arange(rows)), batch=batch, seed=seed, last="pad")
    batches = list(loader.epoch(0))
    assert len(batches) == len(loader) == -(-rows // batch)
    real = np.concatenate([b.rows[b.mask == 1.0] for b in batches])
    assert sorted(real.tolist()) == list(range(rows))
    for b in batches:
        assert b.arrays[0].shape == (batch,) and b.mask.shape == (batch,)
        assert np.array_equal(b.arrays[0], data[b.rows]) and np.array_equal(b.arrays[1], b.rows)
        # Filler rows only at the end, and only in the last batch.
        assert np.array_equal(b.mask, np.sort(b.mask)[::-1])
    assert sum(b.count for b in batches) == rows
    assert all(b.count == batch for b in batches[:-1])


@settings(max_examples=40, deadline=None)
@given(sizes, st.integers(0, 1000))
def test_drop_yields_only_full_batches_each_row_at_most_once(rows_batch: tuple[int, int], seed: int) -> None:
    rows, batch = rows_batch
    loader = Loader((np.arange(rows),), batch=batch, seed=seed)
    batches = list(loader.epoch(3))
    assert len(batches) == len(loader) == rows // batch
    seen = np.concatenate([b.rows for b in batches])
    assert len(set(seen.tolist())) == seen.size == (rows // batch) * batch
    # The dropped rows are exactly the tail of that epoch's permutation.
    assert sorted(set(range(rows)) - set(seen.tolist())) == sorted(loader.order(3)[seen.size :].tolist())
    assert all(b.mask.tolist() == [1.0] * batch for b in batches)


def test_unshuffled_epochs_walk_rows_in_order() -> None:
    loader = Loader((np.arange(7),), batch=3, last="pad")
    assert [b.arrays[0].tolist() for b in loader.epoch(0, shuffle=False)] == [[0, 1, 2], [3, 4, 5], [6, 0, 0]]


def test_bad_loaders_are_refused() -> None:
    with pytest.raises(ShapeMismatchError, match="share their first extent"):
        Loader((np.zeros(3), np.zeros(4)), batch=2)
    with pytest.raises(ShapeMismatchError, match="no full batch of 8"):
        Loader((np.zeros(3),), batch=8)
    with pytest.raises(InvalidArgumentError, match="batch must be an integer >= 1"):
        Loader((np.zeros(3),), batch=0)
    with pytest.raises(InvalidArgumentError, match="last must be"):
        Loader((np.zeros(3),), batch=1, last="keep")  # type: ignore[arg-type]


def test_feeds_have_the_recorded_shapes_elements_and_selections_stay_indices() -> None:
    tape = Tape(f32)
    x = tape.input(np.zeros((4, 3)))
    tokens = tape.input(Tensor.selection([0] * 8, 27))
    mask = tape.input(np.zeros((4, 1)))
    loss = ((x.sum_along(1).reshape((4, 1)) + tokens.sum_along(1).reshape((4, 2)).sum_along(1).reshape((4, 1))) * mask).sum()
    network = tape.seal()
    data = (np.arange(30, dtype=np.float64).reshape(10, 3), np.arange(20).reshape(10, 2) % 27)
    feeder = Feeder([(x, None), (tokens, Selection(27))], mask=mask)
    for batch in Loader(data, batch=4, seed=5, last="pad").epoch(0):
        feeds = feeder(batch)
        assert feeds[x.symbol].shape == x.shape and feeds[x.symbol].element == f32
        indices = feeds[tokens.symbol].indices
        assert indices is not None
        assert indices.tolist() == batch.arrays[1].reshape(-1).tolist()
        assert feeds[mask.symbol].numpy().reshape(-1).tolist() == batch.mask.tolist()
        expected = float(((data[0][batch.rows].sum(1) + 2.0) * batch.mask).sum())
        assert network.forward(network.parameters(), feeds).of(loss.symbol).scalar() == expected


def test_a_batch_of_the_wrong_shape_names_the_input_and_both_shapes() -> None:
    tape = Tape(f64)
    x = tape.input(np.zeros((4, 3)))
    tokens = tape.input(Tensor.selection([0] * 4, 5))
    feeder = Feeder([(x, None), (tokens, Selection(5))])
    with pytest.raises(ShapeMismatchError, match=r"recorded as \[4, 3\]; the batch array is \[2, 3\].*one export per batch shape"):
        feeder([np.zeros((2, 3)), np.zeros(4, dtype=np.int64)])
    with pytest.raises(ShapeMismatchError, match="takes 4 indices; the batch array"):
        feeder([np.zeros((4, 3)), np.zeros(6, dtype=np.int64)])
    with pytest.raises(FeedError, match="1 arrays for 2 inputs"):
        feeder([np.zeros((4, 3))])
    with pytest.raises(ShapeMismatchError, match="not a selection over 7 tokens"):
        Feeder([(tokens, Selection(7))])


def test_names_become_boundary_padded_contexts() -> None:
    vocabulary = CharVocabulary.of(["ab", "b"], boundary=".")
    contexts, targets = vocabulary.contexts(["ab", "b"], 2)
    assert vocabulary.chars == ".ab"
    # ab. -> (.. a) (.a b) (ab .);  b. -> (.. b) (.b .)
    assert contexts.tolist() == [[0, 0], [0, 1], [1, 2], [0, 0], [0, 2]]
    assert targets.tolist() == [1, 2, 0, 2, 0]
    assert vocabulary.decode(vocabulary.encode("abba")) == "abba"
    with pytest.raises(InvalidArgumentError, match="'z' is not in the vocabulary"):
        vocabulary.encode("z")


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 200), st.integers(1, 8), st.integers(0, 99))
def test_token_windows_are_the_stream_shifted_by_one(length: int, block: int, seed: int) -> None:
    tokens = np.random.default_rng(seed).integers(0, 11, length)
    stream = TokenStream(tokens, 11)
    if length <= block:
        with pytest.raises(InvalidArgumentError):
            stream.sample(np.random.default_rng(seed), 4, block)
        return
    x, y = stream.sample(np.random.default_rng(seed), 4, block)
    assert x.shape == y.shape == (4, block)
    for row, nxt in zip(x, y, strict=True):
        start = next(i for i in range(length - block) if np.array_equal(tokens[i : i + block], row) and np.array_equal(tokens[i + 1 : i + block + 1], nxt))
        assert start >= 0
    train, valid = stream.split(0.75)
    assert np.array_equal(np.concatenate([train.tokens, valid.tokens]), tokens)
