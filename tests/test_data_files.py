"""topos.data's file readers: IDX (MNIST's format, gzip or raw) on the committed real subset
and on files the test writes; CIFAR-10's binary batches on files the test writes."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import InvalidArgumentError
from topos.data import read_cifar, read_idx

SUBSET = Path(__file__).resolve().parent.parent / "examples" / "mnist" / "data"


def idx_bytes(array: np.ndarray, code: int) -> bytes:
    header = bytes([0, 0, code, array.ndim]) + b"".join(int(e).to_bytes(4, "big") for e in array.shape)
    return header + np.asarray(array).astype(array.dtype.newbyteorder(">")).tobytes()


def test_the_committed_subset_is_real_mnist() -> None:
    train_x = read_idx(SUBSET / "train-images-idx3-ubyte.gz")
    train_y = read_idx(SUBSET / "train-labels-idx1-ubyte.gz")
    test_x = read_idx(SUBSET / "t10k-images-idx3-ubyte.gz")
    test_y = read_idx(SUBSET / "t10k-labels-idx1-ubyte.gz")
    assert train_x.shape == (2000, 28, 28) and train_x.dtype == np.uint8
    assert train_y.shape == (2000,) and test_x.shape == (500, 28, 28) and test_y.shape == (500,)
    # MNIST's published first training labels, and its first test labels.
    assert train_y[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert test_y[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    assert set(np.unique(train_y).tolist()) == set(range(10))
    # The whole 60k training set has mean 0.1307 (of 255); a 2k prefix stays within 0.01.
    assert abs(train_x.mean() / 255 - 0.1307) < 0.01
    # The decompressed bytes are the prefix of MNIST's own file (sha256 in examples/mnist/README.md).
    raw = gzip.decompress((SUBSET / "train-labels-idx1-ubyte.gz").read_bytes())
    assert hashlib.sha256(raw).hexdigest() == "90795ea2219655a7281c0d6756d0ae8a33bebac7ec84bac89bbdcc5e3baa9f8c"


codes = st.sampled_from([(0x08, np.uint8), (0x09, np.int8), (0x0B, np.int16), (0x0C, np.int32), (0x0D, np.float32), (0x0E, np.float64)])


@settings(max_examples=30, deadline=None)
@given(codes, st.lists(st.integers(1, 5), min_size=0, max_size=3), st.booleans(), st.integers(0, 2**32 - 1))
def test_an_idx_file_round_trips_raw_or_gzipped(code_type: tuple[int, type], shape: list[int], zipped: bool, seed: int) -> None:
    import tempfile

    code, element = code_type
    rng = np.random.default_rng(seed)
    array: np.ndarray = np.asarray(rng.standard_normal(shape) * 100).astype(element)
    data = idx_bytes(array, code)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.idx"
        path.write_bytes(gzip.compress(data) if zipped else data)
        back = read_idx(path)
    assert back.shape == array.shape and back.dtype == np.dtype(element)
    assert back.tobytes() == array.tobytes()


def test_a_truncated_or_foreign_idx_file_is_refused_by_name(tmp_path: Path) -> None:
    good = idx_bytes(np.arange(12, dtype=np.uint8).reshape(3, 4), 0x08)
    short = tmp_path / "short-idx2-ubyte"
    short.write_bytes(good[:-1])
    with pytest.raises(InvalidArgumentError, match=r"short-idx2-ubyte.*holds 23 bytes; its header \[3, 4\] of uint8 needs 24"):
        read_idx(short)
    foreign = tmp_path / "foreign.png"
    foreign.write_bytes(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(InvalidArgumentError, match=r"foreign.png.*is not an IDX file"):
        read_idx(foreign)
    with pytest.raises(InvalidArgumentError, match=r"test_data_files.py:[0-9]+: read_idx: cannot read"):
        read_idx(tmp_path / "missing")


def test_a_cifar_batch_reads_records_channel_first(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, (5, 3, 32, 32), dtype=np.uint8)
    labels = rng.integers(0, 10, 5, dtype=np.uint8)
    # Written record by record as the format describes: label byte, R plane, G plane, B plane.
    payload = b"".join(bytes([int(label)]) + image[0].tobytes() + image[1].tobytes() + image[2].tobytes() for image, label in zip(images, labels, strict=True))
    (tmp_path / "data_batch_1.bin").write_bytes(payload)
    (tmp_path / "data_batch_1.bin.gz").write_bytes(gzip.compress(payload))
    for name in ("data_batch_1.bin", "data_batch_1.bin.gz"):
        got_images, got_labels = read_cifar(tmp_path / name)
        assert np.array_equal(got_images, images) and np.array_equal(got_labels, labels)
    (tmp_path / "cut.bin").write_bytes(payload[:-5])
    with pytest.raises(InvalidArgumentError, match=r"cut.bin.*15360 bytes, not a whole number of 3073-byte records"):
        read_cifar(tmp_path / "cut.bin")
