"""Data for training loops: numpy arrays cut into batches, batches turned into feeds.

Contract. A recorded graph has one batch shape: every input was recorded with a fixed
leading extent, and a plan or an XLA module accepts exactly that shape. So a data loader's
job is to hand back batches of exactly that many rows, every time:

- :class:`Loader` walks a tuple of aligned numpy arrays (same first extent) in batches of
  ``batch`` rows. Each epoch visits every row exactly once, in an order drawn from a
  generator seeded with ``(seed, epoch)``, so epoch ``k`` is the same permutation in every
  process whatever happened before it. The last, short batch is dropped (``last="drop"``)
  or filled up with copies of row 0 and a mask of zeros (``last="pad"``): a loss weighted by
  the mask then ignores the filler rows.
- :class:`Feeder` maps each array of a batch to one recorded input and checks it against the
  recorded shape: a dense input takes the array as it is; a selection input (token data)
  takes integer indices and stays indices (:meth:`topos.Tensor.selection`), never a
  one-hot matrix.
- :class:`CharVocabulary` and :class:`TokenStream` are the language-model side: characters to
  token ids and back, fixed-context examples of words (makemore), and random windows of a
  long stream (a GPT's ``block`` of tokens with the next-token targets).

The rule "one export per batch shape" and the pattern for evaluation and sampling entries
recorded on the same tape are written out in ``docs/data.md``.

Example:
    >>> import numpy as np
    >>> loader = Loader((np.arange(5), np.arange(5) * 10), batch=2, seed=0, last="pad")
    >>> [(b.arrays[0].tolist(), b.mask.tolist()) for b in loader.epoch(0, shuffle=False)]
    [([0, 1], [1.0, 1.0]), ([2, 3], [1.0, 1.0]), ([4, 0], [1.0, 0.0])]
"""

from __future__ import annotations

import gzip
import io
import math
import os
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal, TypeAlias, TypeVar, final

import attrs
import numpy as np

from topos.errors import (
    CapacityError,
    DataFileError,
    FeedError,
    InvalidArgumentError,
    ShapeMismatchError,
    ToposError,
    user_site,
)
from topos.ir.node import Symbol
from topos.stages.spec import Value
from topos.tensor import Tensor

__all__ = ["Batch", "CharVocabulary", "Feeder", "Loader", "Selection", "TokenStream", "read_cifar", "read_idx"]

Array: TypeAlias = np.ndarray[Any, np.dtype[Any]]
Ints: TypeAlias = np.ndarray[Any, np.dtype[np.int64]]
LastBatch: TypeAlias = Literal["drop", "pad"]
_T = TypeVar("_T")


def _count(name: str, value: object, least: int = 1) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < least:
        raise InvalidArgumentError(f"{user_site()}: {name} must be an integer >= {least}; got {value!r}")
    return int(value)


def _generator(name: str, value: object) -> np.random.Generator:
    if not isinstance(value, np.random.Generator):
        raise InvalidArgumentError(f"{user_site()}: {name} must be a numpy.random.Generator; got {type(value).__name__}")
    return value


def _integers(name: str, values: object) -> Ints:
    """A 1-D array of integers (an empty sequence counts); floats and bools are refused, not truncated."""
    array = np.asarray(values)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise InvalidArgumentError(f"{user_site()}: {name} must be a 1-D sequence of integers; got {array.dtype}{list(array.shape)}")
    return array.astype(np.int64)


@final
@attrs.frozen(slots=True)
class Batch:
    """One batch: the arrays (rows in batch order), which dataset rows they are, and a mask.

    ``mask[i]`` is 1.0 for a real row and 0.0 for a filler row of a padded last batch;
    ``count`` is the number of real rows.
    """

    arrays: tuple[Array, ...]
    rows: Ints
    mask: np.ndarray[Any, np.dtype[np.float64]]

    @property
    def count(self) -> int:
        return int(self.mask.sum())


def _arrays(arrays: object) -> tuple[Array, ...]:
    if not isinstance(arrays, (tuple, list)) or not arrays:
        raise InvalidArgumentError(f"{user_site()}: Loader takes a non-empty tuple of arrays; got {type(arrays).__name__}")
    out = tuple(np.asarray(a) for a in arrays)
    extents = [a.shape[0] if a.ndim else None for a in out]
    if None in extents or len(set(extents)) != 1:
        shapes = ", ".join(str(a.shape) for a in out)
        raise ShapeMismatchError(f"{user_site()}: Loader: the arrays must share their first extent; got {shapes}")
    return out


@final
@attrs.frozen(slots=True)
class Loader:
    """Batches of ``batch`` rows over aligned arrays, reshuffled per epoch from ``seed``.

    Example:
        >>> import numpy as np
        >>> loader = Loader((np.arange(10),), batch=4, seed=3)
        >>> len(loader), sorted(np.concatenate([b.arrays[0] for b in loader.epoch(0)]).tolist())
        (2, [0, 1, 2, 4, 5, 6, 7, 9])
    """

    arrays: tuple[Array, ...] = attrs.field(converter=_arrays)
    batch: int = attrs.field(kw_only=True)
    seed: int = attrs.field(default=0, kw_only=True)
    last: LastBatch = attrs.field(default="drop", kw_only=True)

    def __attrs_post_init__(self) -> None:
        _count("Loader: batch", self.batch)
        _count("Loader: seed", self.seed, 0)
        if self.last not in ("drop", "pad"):
            raise InvalidArgumentError(f"{user_site()}: Loader: last must be 'drop' or 'pad'; got {self.last!r}")
        if self.last == "drop" and self.rows < self.batch:
            raise ShapeMismatchError(
                f"{user_site()}: Loader: {self.rows} rows make no full batch of {self.batch} (use last='pad')"
            )

    @property
    def rows(self) -> int:
        """How many rows the arrays hold."""
        return int(self.arrays[0].shape[0])

    def __len__(self) -> int:
        """Batches per epoch."""
        whole, rest = divmod(self.rows, self.batch)
        return whole + (1 if rest and self.last == "pad" else 0)

    def order(self, epoch: int) -> Ints:
        """The permutation of rows that epoch ``epoch`` visits (seeded by ``(seed, epoch)``)."""
        epoch = _count("Loader.order: epoch", epoch, 0)
        return np.random.default_rng((self.seed, epoch)).permutation(self.rows).astype(np.int64)

    def epoch(self, epoch: int, *, shuffle: bool = True) -> Iterator[Batch]:
        """The batches of one epoch, in the seeded order (or in row order with ``shuffle=False``)."""
        # Checked here, not in the generator below: a generator's body runs only when first asked.
        if not isinstance(shuffle, bool):
            raise InvalidArgumentError(f"{user_site()}: Loader.epoch: shuffle must be a bool; got {shuffle!r}")
        order = self.order(epoch)
        return self._batches(order if shuffle else np.arange(self.rows, dtype=np.int64))

    def _batches(self, order: Ints) -> Iterator[Batch]:
        for start in range(0, self.rows, self.batch):
            rows = order[start : start + self.batch]
            mask = np.ones(self.batch, dtype=np.float64)
            if rows.size < self.batch:
                if self.last == "drop":
                    return
                mask[rows.size :] = 0.0
                # Row 0 as filler: a real row keeps every value finite; the mask zeroes its weight.
                rows = np.concatenate([rows, np.full(self.batch - rows.size, order[0], dtype=np.int64)])
            yield Batch(tuple(a[rows] for a in self.arrays), rows, mask)

    def sample(self, generator: np.random.Generator) -> Batch:
        """A batch of rows drawn with replacement (makemore's minibatches)."""
        rows = _generator("Loader.sample: generator", generator).integers(0, self.rows, self.batch).astype(np.int64)
        return Batch(tuple(a[rows] for a in self.arrays), rows, np.ones(self.batch, dtype=np.float64))


@final
@attrs.frozen(slots=True)
class Selection:
    """Marks a recorded input as a selection (one-hot rows stored as indices) of ``vocab``."""

    vocab: int

    def __attrs_post_init__(self) -> None:
        _count("Selection: vocab", self.vocab)


Target: TypeAlias = Value | Symbol


@final
class Feeder:
    """Maps the arrays of a batch, in order, to recorded inputs; checks shapes; builds feeds.

    ``inputs`` pairs each array position with a recorded input (a :class:`topos.Value`) and
    how to feed it: ``None`` for a dense array of the recorded shape, :class:`Selection` for
    integer indices (flattened; one per recorded row). ``mask`` names an input of
    ``[batch]`` or ``[batch, 1]`` that receives the batch mask.

    Example:
        >>> import numpy as np
        >>> from topos import Tape
        >>> tape = Tape()
        >>> x, tokens = tape.input(np.zeros((2, 3))), tape.input(Tensor.selection([0, 0], 5))
        >>> feeder = Feeder([(x, None), (tokens, Selection(5))])
        >>> batch = next(Loader((np.ones((4, 3)), np.array([1, 2, 3, 4])), batch=2).epoch(0, shuffle=False))
        >>> feeds = feeder(batch)
        >>> feeds[tokens.symbol].indices.tolist(), feeds[x.symbol].shape
        ([1, 2], Shape([2, 3]))
    """

    __slots__ = ("_inputs", "_mask")

    def __init__(self, inputs: Iterable[tuple[Value, Selection | None]], mask: Value | None = None) -> None:
        given: object = inputs  # typed as iterable; checked because callers pass anything
        if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
            raise InvalidArgumentError(
                f"{user_site()}: Feeder: inputs must be a sequence of (recorded Value, Selection | None) pairs; "
                f"got {type(inputs).__name__}"
            )
        pairs = list(inputs)
        for pair in pairs:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], Value)):
                raise InvalidArgumentError(f"{user_site()}: Feeder: inputs must be (recorded Value, Selection | None) pairs; got {pair!r}")
            value, kind = pair
            if not (kind is None or isinstance(kind, Selection)):
                raise InvalidArgumentError(f"{user_site()}: Feeder: how to feed %{value.index} must be a Selection or None; got {kind!r}")
            if isinstance(kind, Selection) and (value.rank != 2 or value.shape[1] != kind.vocab):
                raise ShapeMismatchError(
                    f"{user_site()}: Feeder: %{value.index}{value.shape} is not a selection over {kind.vocab} tokens"
                )
        if not (mask is None or isinstance(mask, Value)):
            raise InvalidArgumentError(f"{user_site()}: Feeder: mask must be a recorded Value or None; got {type(mask).__name__}")
        if mask is not None and (mask.rank not in (1, 2) or mask.shape.volume != mask.shape[0]):
            raise ShapeMismatchError(f"{user_site()}: Feeder: the mask input must be [batch] or [batch, 1]; got {mask.shape}")
        self._inputs = tuple(pairs)
        self._mask = mask

    def __call__(self, batch: Batch | Sequence[Array]) -> dict[Symbol, Tensor]:
        given: object = batch  # typed as the caller promised; checked as what it is
        if not isinstance(given, (Batch, Sequence)) or isinstance(given, (str, bytes)):
            raise FeedError(f"{user_site()}: Feeder: takes a Batch or a sequence of arrays; got {type(batch).__name__}")
        arrays = batch.arrays if isinstance(batch, Batch) else tuple(np.asarray(a) for a in batch)
        if len(arrays) != len(self._inputs):
            raise FeedError(f"{user_site()}: Feeder: {len(arrays)} arrays for {len(self._inputs)} inputs")
        feeds: dict[Symbol, Tensor] = {}
        for (value, kind), array in zip(self._inputs, arrays, strict=True):
            feeds[value.symbol] = self._one(value, kind, array)
        if self._mask is not None:
            if not isinstance(batch, Batch):
                raise FeedError(f"{user_site()}: Feeder: a mask input needs a Batch, not bare arrays")
            feeds[self._mask.symbol] = self._one(self._mask, None, batch.mask.reshape(self._mask.shape.axes))
        return feeds

    @staticmethod
    def _one(value: Value, kind: Selection | None, array: Array) -> Tensor:
        element = value.tape.element
        if isinstance(kind, Selection):
            flat = array.reshape(-1)
            if flat.size != value.shape[0]:
                raise ShapeMismatchError(
                    f"{user_site()}: Feeder: %{value.index}{value.shape} takes {value.shape[0]} indices; "
                    f"the batch array {array.shape} holds {flat.size}"
                )
            return Tensor.selection(flat, kind.vocab, element)
        if tuple(array.shape) != value.shape.axes:
            raise ShapeMismatchError(
                f"{user_site()}: Feeder: %{value.index} was recorded as {value.shape}; the batch array is "
                f"{list(array.shape)} (one export per batch shape: see docs/data.md)"
            )
        return Tensor(array, element=element)


@final
class CharVocabulary:
    """Characters to token ids and back; ``boundary`` (if given) is token 0.

    Example:
        >>> v = CharVocabulary.of(["emma", "ava"], boundary=".")
        >>> v.size, v.encode("ava").tolist(), v.decode([2, 3, 3, 1])
        (5, [1, 4, 1], 'emma')
    """

    __slots__ = ("_index", "chars")

    def __init__(self, chars: str) -> None:
        if not isinstance(chars, str) or len(set(chars)) != len(chars) or not chars:
            raise InvalidArgumentError(f"{user_site()}: CharVocabulary: characters must be distinct and non-empty; got {chars!r}")
        self.chars = chars
        self._index = {c: i for i, c in enumerate(chars)}

    @classmethod
    def of(cls, texts: Iterable[str], boundary: str | None = None) -> CharVocabulary:
        """The sorted distinct characters of ``texts``, after ``boundary`` (one character) when given."""
        texts = [texts] if isinstance(texts, str) else list(texts) if isinstance(texts, Iterable) else [texts]
        if not all(isinstance(text, str) for text in texts):
            raise InvalidArgumentError(f"{user_site()}: CharVocabulary.of: texts must be strings; got {texts!r:.80}")
        if not (boundary is None or (isinstance(boundary, str) and len(boundary) == 1)):
            raise InvalidArgumentError(f"{user_site()}: CharVocabulary.of: boundary must be one character or None; got {boundary!r}")
        seen = sorted(set("".join(texts)) - {boundary})
        return cls((boundary or "") + "".join(seen))

    @property
    def size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> Ints:
        """The id of each character of ``text``; a character outside the vocabulary is refused."""
        if not isinstance(text, str):
            raise InvalidArgumentError(f"{user_site()}: CharVocabulary.encode takes a str; got {type(text).__name__}")
        try:
            return np.array([self._index[c] for c in text], dtype=np.int64)
        except KeyError as error:
            raise InvalidArgumentError(f"{user_site()}: CharVocabulary: {error.args[0]!r} is not in the vocabulary") from None

    def decode(self, tokens: Iterable[int]) -> str:
        """The characters of ``tokens``; an id outside ``[0, size)`` (a negative one too) is refused."""
        ids = list(tokens) if isinstance(tokens, Iterable) else [tokens]
        for position, token in enumerate(ids):
            if isinstance(token, bool) or not isinstance(token, (int, np.integer)) or not 0 <= token < self.size:
                raise InvalidArgumentError(f"{user_site()}: CharVocabulary.decode: token {position} is {token!r}, not an id in [0, {self.size})")
        return "".join(self.chars[int(t)] for t in ids)

    def contexts(self, words: Iterable[str], context: int) -> tuple[Ints, Ints]:
        """makemore's examples: for each character of each word (and the closing boundary),
        the ``context`` tokens before it (boundary-padded) and the character itself."""
        context = _count("CharVocabulary.contexts: context", context)
        # A lone str would be taken as its characters, each one word: a slip, refused.
        if isinstance(words, (str, bytes)) or not isinstance(words, Iterable):
            raise InvalidArgumentError(f"{user_site()}: CharVocabulary.contexts: words must be a sequence of strings; got {words!r:.60}")
        listed = list(words)
        if not listed:
            raise InvalidArgumentError(f"{user_site()}: CharVocabulary.contexts: words is empty; there is nothing to make examples of")
        rows: list[Ints] = []
        targets: list[Ints] = []
        try:
            padding = np.zeros(context, dtype=np.int64)
        except (ValueError, MemoryError):
            raise CapacityError(f"{user_site()}: CharVocabulary.contexts: context={context} is too large to allocate") from None
        for word in listed:
            tokens = np.concatenate([padding, self.encode(word), np.zeros(1, dtype=np.int64)])
            n = len(word) + 1
            rows.append(np.lib.stride_tricks.sliding_window_view(tokens[:-1], context)[:n])
            targets.append(tokens[context:])
        return np.concatenate(rows).astype(np.int64), np.concatenate(targets).astype(np.int64)


@final
class TokenStream:
    """A long sequence of token ids, cut into windows for next-token prediction.

    Example:
        >>> s = TokenStream(np.arange(10), vocab=10)
        >>> x, y = s.windows(np.array([0, 5]), block=3)
        >>> x.tolist(), y.tolist()
        ([[0, 1, 2], [5, 6, 7]], [[1, 2, 3], [6, 7, 8]])
    """

    __slots__ = ("tokens", "vocab")

    def __init__(self, tokens: Array | Sequence[int], vocab: int) -> None:
        array = np.asarray(tokens)
        if array.ndim != 1 or array.dtype.kind not in "iu":
            raise InvalidArgumentError(f"{user_site()}: TokenStream takes a 1-D integer array; got {array.dtype}{list(array.shape)}")
        vocab = _count("TokenStream: vocab", vocab)
        if array.size and (int(array.min()) < 0 or int(array.max()) >= vocab):
            raise InvalidArgumentError(f"{user_site()}: TokenStream: tokens must lie in [0, {vocab})")
        self.tokens: Ints = array.astype(np.int64)
        self.vocab = vocab

    def __len__(self) -> int:
        return int(self.tokens.size)

    def split(self, fraction: float) -> tuple[TokenStream, TokenStream]:
        """The first ``fraction`` (a number in ``[0, 1]``) of the stream and the rest (train, validation)."""
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.integer, np.floating)) or not 0 <= fraction <= 1:
            raise InvalidArgumentError(f"{user_site()}: TokenStream.split: fraction must be a number in [0, 1]; got {fraction!r}")
        cut = round(len(self) * float(fraction))
        return TokenStream(self.tokens[:cut], self.vocab), TokenStream(self.tokens[cut:], self.vocab)

    def windows(self, starts: Ints, block: int) -> tuple[Ints, Ints]:
        """Inputs ``[len(starts), block]`` and their next tokens (the same windows shifted by one)."""
        block = _count("TokenStream.windows: block", block)
        starts = _integers("TokenStream.windows: starts", starts)
        if starts.size and (int(starts.min()) < 0 or int(starts.max()) + block >= len(self)):
            raise InvalidArgumentError(
                f"{user_site()}: TokenStream.windows: a window of {block} + 1 tokens must fit in {len(self)}"
            )
        offsets = starts[:, None] + np.arange(block, dtype=np.int64)[None, :]
        return self.tokens[offsets], self.tokens[offsets + 1]

    def sample(self, generator: np.random.Generator, batch: int, block: int) -> tuple[Ints, Ints]:
        """``batch`` windows at random starts."""
        block = _count("TokenStream.sample: block", block)
        batch = _count("TokenStream.sample: batch", batch)
        if len(self) <= block:
            raise InvalidArgumentError(f"{user_site()}: TokenStream.sample: {len(self)} tokens hold no window of {block} + 1")
        drawn = _generator("TokenStream.sample: generator", generator)
        try:
            starts = drawn.integers(0, len(self) - block, batch)
        except (ValueError, MemoryError):
            raise CapacityError(f"{user_site()}: TokenStream.sample: batch={batch} is too large to allocate") from None
        return self.windows(starts, block)



# IDX element codes (the third byte of the magic number) -> big-endian numpy types.
_IDX_TYPES: dict[int, str] = {0x08: "u1", 0x09: "i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
# numpy 1 holds at most 32 axes (numpy 2, 64): a rank above that is no array numpy could make.
_IDX_RANK = 32
# Deflate's densest code spends 2 bits on a 258-byte run, so no gzip byte inflates to more
# than 1032: a header that promises more than that times the file's size is lying.
_DEFLATE_RATIO = 1032
_CHUNK = 1 << 20
_NO_BLOCK = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _regular(path: object, what: str, error: type[ToposError]) -> tuple[io.BufferedReader, int, str]:
    """``path`` opened for reading, its size and its name, if it is a regular file.

    Opening a FIFO blocks and a device (``/dev/zero``) never ends, so the kind is checked
    with ``os.stat`` before opening (without blocking) and again on the open descriptor, in
    case the path was swapped in between.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise error(f"{user_site()}: {what}: path must be a str or os.PathLike; got {type(path).__name__}")
    name = str(os.fspath(path))
    odd = f"{user_site()}: {what}: {name!r} is not a regular file (a FIFO or a device is never read)"
    try:
        if not stat.S_ISREG(os.stat(name).st_mode):
            raise error(odd)
        descriptor = os.open(name, _NO_BLOCK)
    except OSError as failure:
        raise error(f"{user_site()}: {what}: cannot read {name!r}: {failure.strerror or failure}") from None
    handle = open(descriptor, "rb")
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        handle.close()
        raise error(odd)
    return handle, info.st_size, name


def _take(stream: io.BufferedIOBase, count: int) -> bytearray:
    """At most ``count`` bytes, a chunk at a time: memory follows what the stream really holds."""
    out = bytearray()
    while len(out) < count:
        chunk = stream.read(min(_CHUNK, count - len(out)))
        if not chunk:
            break
        out += chunk
    return out


def _read_regular(path: object, what: str, error: type[ToposError], limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, reading no more than its size."""
    handle, size, name = _regular(path, what, error)
    with handle:
        if size > limit:
            raise error(f"{user_site()}: {what}: {name!r} holds {size} bytes, more than the {limit} it may")
        try:
            data = _take(handle, size + 1)
        except OSError as failure:
            raise error(f"{user_site()}: {what}: cannot read {name!r}: {failure}") from None
    if len(data) != size:
        raise error(f"{user_site()}: {what}: {name!r} changed size while it was read")
    return bytes(data)


def _inflated(path: object, what: str, parse: Callable[[io.BufferedIOBase, int, bool, str], _T]) -> _T:
    """``parse(stream, size, zipped, name)`` over a data file's bytes (inflated as they are
    read if it is gzip); failures while reading become :class:`DataFileError`."""
    handle, size, name = _regular(path, what, DataFileError)
    with handle:
        try:
            zipped = handle.read(2) == b"\x1f\x8b"
            handle.seek(0)
            return parse(gzip.GzipFile(fileobj=handle, mode="rb") if zipped else handle, size, zipped, name)
        except (OSError, EOFError, zlib.error) as failure:
            raise DataFileError(f"{user_site()}: {what}: cannot read {name!r}: {failure}") from None
        except MemoryError:
            raise CapacityError(f"{user_site()}: {what}: {name!r} does not fit in memory") from None


def read_idx(path: str | os.PathLike[str], *, limit: int = 1 << 31) -> Array:
    """The array in an IDX file (MNIST's format), gzip-compressed or raw.

    The header is two zero bytes, an element code (``0x08`` unsigned bytes, ... ``0x0E``
    f64), the rank ``d``, then ``d`` big-endian 32-bit extents; the elements follow in
    row-major order. Returns a read-only array in native byte order.

    The header is read first and bounds everything after it: a file is refused with
    :class:`~topos.errors.DataFileError` when it is not a regular file, when its header
    promises more than ``limit`` bytes of elements or more than a gzip file of its size can
    inflate to, or when its data is shorter or longer than promised (inflation stops one
    byte past the promise, so a gzip bomb costs no more than the array it claims to hold).

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "labels-idx1-ubyte")
        >>> _ = open(path, "wb").write(bytes([0, 0, 8, 1, 0, 0, 0, 3, 5, 0, 4]))
        >>> read_idx(path).tolist()
        [5, 0, 4]
    """
    limit = _count("read_idx: limit", limit)

    def parse(stream: io.BufferedIOBase, size: int, zipped: bool, name: str) -> Array:
        head = _take(stream, 4)
        if len(head) < 4 or head[0] != 0 or head[1] != 0 or head[2] not in _IDX_TYPES:
            raise DataFileError(f"{user_site()}: read_idx: {name!r} is not an IDX file (magic {head.hex()})")
        rank = head[3]
        if rank > _IDX_RANK:
            raise DataFileError(f"{user_site()}: read_idx: {name!r} has rank {rank}; numpy holds at most {_IDX_RANK} axes")
        header = _take(stream, 4 * rank)
        if len(header) < 4 * rank:
            raise DataFileError(f"{user_site()}: read_idx: {name!r} ends inside its header of rank {rank}")
        extents = tuple(int.from_bytes(header[i : i + 4], "big") for i in range(0, 4 * rank, 4))
        element = np.dtype(_IDX_TYPES[head[2]])
        # Python integers: a product of 32-bit extents that wraps int64 could pass any check.
        body = element.itemsize * math.prod(extents)
        start = 4 + 4 * rank
        needs = f"its header {list(extents)} of {element} needs {start + body}"
        if body > limit or (zipped and start + body > _DEFLATE_RATIO * size):
            raise DataFileError(f"{user_site()}: read_idx: {name!r}: {needs} bytes, more than limit={limit} of elements or than {size} gzip bytes can inflate to")
        data = _take(stream, body + 1)
        if len(data) != body:
            holds = start + len(data) if len(data) < body else f"more than {start + body}"
            raise DataFileError(f"{user_site()}: read_idx: {name!r} holds {holds} bytes; {needs}")
        array = np.frombuffer(data, element).reshape(extents)
        array.flags.writeable = False
        return array.astype(element.newbyteorder("="), copy=False)

    return _inflated(path, "read_idx", parse)


CIFAR_RECORD = 1 + 3 * 32 * 32


def read_cifar(path: str | os.PathLike[str], *, limit: int = 60_000 * CIFAR_RECORD) -> tuple[Array, Array]:
    """Images ``uint8 [N, 3, 32, 32]`` and labels ``uint8 [N]`` of a CIFAR-10 binary batch.

    Each record is one label byte then 3,072 pixel bytes: the red plane, the green, the
    blue, each 32 rows of 32 (channels first). gzip-compressed files are read too. A file
    (inflated) longer than ``limit`` bytes (by default the 60,000 records of all of
    CIFAR-10) is refused with :class:`~topos.errors.DataFileError` once inflation passes
    the limit, as is anything but a regular file.

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "data_batch_1.bin")
        >>> _ = open(path, "wb").write(bytes([7]) + bytes(range(256)) * 12)
        >>> images, labels = read_cifar(path)
        >>> images.shape, labels.tolist(), int(images[0, 0, 0, 1])
        ((1, 3, 32, 32), [7], 1)
    """
    limit = _count("read_cifar: limit", limit)
    data, name = _inflated(path, "read_cifar", lambda stream, _size, _zipped, name: (_take(stream, limit + 1), name))
    if len(data) > limit:
        raise DataFileError(f"{user_site()}: read_cifar: {name!r} holds more than limit={limit} bytes")
    if not data or len(data) % CIFAR_RECORD:
        raise DataFileError(f"{user_site()}: read_cifar: {name!r} holds {len(data)} bytes, not a whole number of {CIFAR_RECORD}-byte records")
    records = np.frombuffer(data, np.uint8).reshape(-1, CIFAR_RECORD)
    records.flags.writeable = False
    return records[:, 1:].reshape(-1, 3, 32, 32), records[:, 0].copy()
