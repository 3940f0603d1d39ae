"""Transformer facades: multi-head attention (grouped queries, rotary positions, a KV cache),
learned position tables, SwiGLU, a pre-norm block and a decoder-only language model.

Contract: like every facade these record through the public surface, unfused, onto the
tape of their input, and refuse bad shapes before recording anything (the ``facade``
decorator rolls a refused call back). Layouts: activations are ``[B, T, D]``; heads are
``[B, H, T, head_dim]``; tokens are one-hot selections ``[B*T, vocab]`` (stored as
indices); positions are one-hot selections ``[T, length]`` into a table of ``length`` rows,
so one recording serves every offset. Masks are *additive* ``[T, S]`` (or ``[B, T, S]``)
payloads the caller feeds or records (0 where a query may look, a large negative number or
``-inf`` elsewhere): nothing here picks a fill.

Decoding: shapes are recorded once, so one decode step is its own export on the same tape
(:meth:`TransformerLm.step`): one token per row in, a key and a value cache per block of a
fixed ``length`` in, plus a :class:`Position` (three feeds: the position's selection, its
one-hot row, and its additive mask); logits and the updated caches out. The new key and
value enter the cache as ``cache * (1 - onehot) + new * onehot``, which leaves every other
row's bits alone and places the new row's bits exactly (for finite caches). Scores of rows
beyond the position get the mask's fill, so their softmax weights are exactly zero and the
products they add to the ascending fold of ``weights · values`` are zeros: the logits of
every step equal, bit for bit under ``Numerics.EXACT``, those of the full-context forward
at that position (``tests/test_transformer_decode.py``; the one exception is a fold whose
partial sum is an exact zero, where ``-0 + 0`` may flip a zero's sign).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

from topos import (
    InvalidArgumentError,
    Numerics,
    ShapeMismatchError,
    Symbol,
    Tape,
    Tensor,
    Value,
    f64,
)
from topos.errors import user_site
from topos.ir.checks import integer
from topos.nn.base import Init, Payload
from topos.nn.dropout import Dropout
from topos.nn.embedding import Embedding
from topos.nn.linear import Linear, Mlp
from topos.nn.module import Module, Visitor, bind, facade

__all__ = [
    "Block",
    "KvCache",
    "MultiHeadAttention",
    "Position",
    "PositionTable",
    "Rotary",
    "SwiGlu",
    "TransformerLm",
    "causal_fill",
]


def _positive(value: object, what: str) -> int:
    number = integer(value, what)
    if number < 1:
        raise InvalidArgumentError(f"{user_site()}: {what} must be positive; got {number}")
    return number


def _value(x: object, layer: str, what: str) -> Value:
    if not isinstance(x, Value):
        raise InvalidArgumentError(
            f"{user_site()}: {layer}: {what} must be a recorded Value, got {type(x).__name__}; "
            "record data first with tape.input(...) or tape.leaf(...)"
        )
    return x


def _heads_first(x: Value, heads: int, head_dim: int) -> Value:
    """``[B, T, heads*head_dim] -> [B, heads, T, head_dim]``."""
    b, t = x.shape[0], x.shape[1]
    return x.reshape((b, t, heads, head_dim)).permute((0, 2, 1, 3))


def _spread_rows(table: Value, batch: int, heads: int) -> Value:
    """``[T, E] -> [B, H, T, E]`` with explicit broadcasts."""
    return table.broadcast_along(0, heads).broadcast_along(0, batch)


def causal_fill(length: int, position: int, fill: float = float("-inf")) -> np.ndarray[tuple[int], np.dtype[np.float64]]:
    """The additive mask row for a query at ``position`` over ``length`` keys: 0 up to and
    including ``position``, ``fill`` after it.

    Example:
        >>> causal_fill(4, 1).tolist()
        [0.0, 0.0, -inf, -inf]
    """
    row = np.zeros(length)
    row[position + 1 :] = fill
    return row


class Rotary:
    """Rotary position embeddings (RoPE) in the rotate-half layout of Llama.

    The ``[length, head_dim]`` cosine and sine tables are recorded once as constants (leaves,
    computed in float64 and stored in the tape's element), for angles ``p * base^(-2i/head_dim)``
    repeated over both halves; calling rotates ``[B, H, T, head_dim]`` at the rows a position
    selection ``[T, length]`` picks: ``x * cos + rotate_half(x) * sin`` with
    ``rotate_half([a, b]) = [-b, a]``.

    Example:
        >>> from topos import Tape
        >>> Rotary(Tape(), head_dim=4, length=8).length
        8
    """

    __slots__ = ("_cos", "_head_dim", "_length", "_sin")

    @facade
    def __init__(self, tape: Tape, head_dim: int, length: int, base: float = 10000.0) -> None:
        head_dim = _positive(head_dim, "Rotary: head_dim")
        length = _positive(length, "Rotary: length")
        if head_dim % 2:
            raise ShapeMismatchError(f"{user_site()}: Rotary: head_dim must be even; got {head_dim}")
        if not isinstance(base, (int, float)) or isinstance(base, bool) or not base > 1.0:
            raise InvalidArgumentError(f"{user_site()}: Rotary: base must be a number > 1; got {base!r}")
        # The tables come from the portable maps: a recorded rotary leaf is the same
        # constant on every machine (numpy's power, cos and sin are the CPU's).
        exponents = -np.arange(0, head_dim, 2, dtype=np.float64) / head_dim
        with Numerics.exactly():
            inverse = Tensor(np.full(exponents.shape, float(base)), f64).powf(Tensor(exponents, f64)).numpy()
            angles = np.outer(np.arange(length, dtype=np.float64), inverse)
            angles = np.concatenate([angles, angles], axis=1)
            cosines, sines = Tensor(angles, f64).cos().numpy(), Tensor(angles, f64).sin().numpy()
        self._head_dim, self._length = head_dim, length
        self._cos = tape.leaf(Tensor(cosines, tape.element)).symbol
        self._sin = tape.leaf(Tensor(sines, tape.element)).symbol

    @property
    def length(self) -> int:
        return self._length

    @property
    def head_dim(self) -> int:
        return self._head_dim

    @facade
    def __call__(self, x: Value, positions: Value) -> Value:
        x = _value(x, "Rotary", "x")
        positions = _value(positions, "Rotary", "positions")
        if x.rank != 4 or x.shape[3] != self._head_dim:
            raise ShapeMismatchError(f"{user_site()}: Rotary: x must be [B, H, T, {self._head_dim}]; got {x.shape}")
        if positions.shape.axes != (x.shape[2], self._length):
            raise ShapeMismatchError(
                f"{user_site()}: Rotary: positions must be a selection [{x.shape[2]}, {self._length}] for x {x.shape}; got {positions.shape}"
            )
        b, h, half = x.shape[0], x.shape[1], self._head_dim // 2
        cos = _spread_rows(bind(x, self._cos).gather(positions), b, h)
        sin = _spread_rows(bind(x, self._sin).gather(positions), b, h)
        first, second = x.narrow(3, 0, half), x.narrow(3, half, half)
        rotated = (-second).pad(3, 0, self._head_dim) + first.pad(3, half, self._head_dim)
        return x * cos + rotated * sin

    def visit(self, visitor: Visitor) -> None:
        """The tables are constants, not parameters: nothing to visit."""


class PositionTable:
    """A learned ``[length, D]`` table of position vectors, gathered by a position selection.

    Example:
        >>> from topos import Tape, Tensor, f64
        >>> def build(t: Tape):
        ...     table = PositionTable(t, [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
        ...     return table(t.input(Tensor.selection([1, 2], 3, f64)))
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[2.0, 3.0], [4.0, 5.0]]
    """

    __slots__ = ("_embedding",)

    @facade
    def __init__(self, tape: Tape, table: Payload) -> None:
        self._embedding = Embedding(tape, table)

    @classmethod
    def init(cls, tape: Tape, length: int, dim: int, init: Init) -> PositionTable:
        length = _positive(length, "PositionTable: length")
        dim = _positive(dim, "PositionTable: dim")
        # The drawn table is recorded once by Embedding.init and shared, not recorded again.
        return cls(tape, tape.resolve(Embedding.init(tape, length, dim, init).table))

    @property
    def table(self) -> Symbol:
        return self._embedding.table

    @property
    def length(self) -> int:
        return self._embedding.vocab

    @property
    def dim(self) -> int:
        return self._embedding.dim

    @facade
    def __call__(self, positions: Value) -> Value:
        return self._embedding(positions)

    def visit(self, visitor: Visitor) -> None:
        visitor.parameter("weights", self._embedding.table)


def _columns(layer: Linear, unit: int) -> dict[Symbol, tuple[int, int]]:
    """A column split: the weights' output axis, and the bias (its only axis) with it."""
    found = {layer.weights: (1, unit)}
    if layer.bias is not None:
        found[layer.bias] = (0, unit)
    return found


class _Blocks:
    """Visits blocks as ``blocks.<i>``."""

    __slots__ = ("_blocks",)

    def __init__(self, blocks: tuple[Block, ...]) -> None:
        self._blocks = blocks

    def visit(self, visitor: Visitor) -> None:
        for i, block in enumerate(self._blocks):
            visitor.child(i, block)


class SwiGlu:
    """The gated feed-forward of Llama: ``down(silu(gate(x)) * up(x))``.

    Example:
        >>> from topos import Tape
        >>> from topos.init import normal
        >>> SwiGlu.init(Tape(), 8, 16, normal(0, 0.1)).hidden
        16
    """

    __slots__ = ("_down", "_gate", "_up")

    def __init__(self, gate: Linear, up: Linear, down: Linear) -> None:
        for name, layer in (("gate", gate), ("up", up), ("down", down)):
            if not isinstance(layer, Linear):
                raise InvalidArgumentError(f"{user_site()}: SwiGlu: {name} must be a Linear, got {type(layer).__name__}")
        if gate.fan_in != up.fan_in or gate.fan_out != up.fan_out or down.fan_in != gate.fan_out or down.fan_out != gate.fan_in:
            raise ShapeMismatchError(
                f"{user_site()}: SwiGlu: gate {gate!r} and up {up!r} must map D -> F and down {down!r} F -> D"
            )
        self._gate, self._up, self._down = gate, up, down

    @classmethod
    def init(cls, tape: Tape, dim: int, hidden: int, init: Init, bias: bool = False) -> SwiGlu:
        """gate ``[dim, hidden]``, up ``[dim, hidden]``, down ``[hidden, dim]``, drawn in that order."""
        return cls(
            Linear.init(tape, dim, hidden, init, bias, "SwiGlu gate"),
            Linear.init(tape, dim, hidden, init, bias, "SwiGlu up"),
            Linear.init(tape, hidden, dim, init, bias, "SwiGlu down"),
        )

    @property
    def hidden(self) -> int:
        return self._gate.fan_out

    @facade
    def __call__(self, x: Value) -> Value:
        return self._down(self._gate(x).silu() * self._up(x))

    def tensor_parallel(self) -> dict[Symbol, tuple[int, int]]:
        """Megatron's splits (see :meth:`TransformerLm.tensor_parallel`): gate and up by
        columns over the hidden width, down by rows."""
        return {**_columns(self._gate, 1), **_columns(self._up, 1), self._down.weights: (0, 1)}

    def visit(self, visitor: Visitor) -> None:
        visitor.child("gate", self._gate)
        visitor.child("up", self._up)
        visitor.child("down", self._down)


@attrs.frozen
class KvCache:
    """One block's cache: keys and values ``[B, kv_heads, length, head_dim]`` (recorded values)."""

    keys: Value
    values: Value

    @staticmethod
    def record(tape: Tape, batch: int, kv_heads: int, length: int, head_dim: int) -> KvCache:
        """Two inputs of zeros (feed the caches a previous step returned)."""
        zeros = Tensor.zeros((batch, kv_heads, length, head_dim), tape.element)
        return KvCache(tape.input(zeros), tape.input(zeros))


class Position:
    """The feeds that place one decode step at a position among ``length``.

    ``selection`` ``[1, length]`` picks the position's rows of position and rotary tables,
    ``onehot`` ``[length]`` places the new key and value in the caches, and ``mask``
    ``[length]`` is the additive causal row (0 up to the position, ``fill`` after). Build
    the feeds with :meth:`feeds`.

    Example:
        >>> from topos import Tape
        >>> tape = Tape()
        >>> here = Position(tape, 4)
        >>> feeds = here.feeds(2)
        >>> feeds[here.mask.symbol].tolist()
        [0.0, 0.0, 0.0, -inf]
    """

    __slots__ = ("_fill", "_length", "_tape", "mask", "onehot", "selection")

    def __init__(self, tape: Tape, length: int, fill: float = float("-inf")) -> None:
        length = _positive(length, "Position: length")
        self._tape, self._length, self._fill = tape, length, float(fill)
        self.selection = tape.input(Tensor.selection([0], length, tape.element))
        self.onehot = tape.input(Tensor(np.eye(length)[0], tape.element))
        self.mask = tape.input(Tensor(causal_fill(length, 0, fill), tape.element))

    @property
    def length(self) -> int:
        return self._length

    def feeds(self, position: int) -> dict[Symbol, Tensor]:
        position = integer(position, "Position.feeds: position")
        if not 0 <= position < self._length:
            raise InvalidArgumentError(f"{user_site()}: Position.feeds: position {position} is outside [0, {self._length})")
        element = self._tape.element
        return {
            self.selection.symbol: Tensor.selection([position], self._length, element),
            self.onehot.symbol: Tensor(np.arange(self._length) == position, element),
            self.mask.symbol: Tensor(causal_fill(self._length, position, self._fill), element),
        }


class MultiHeadAttention:
    """Batched multi-head attention over ``[B, T, D]`` with grouped queries and rotary positions.

    Projections are one fused Linear ``[D, (heads + 2*kv_heads) * head_dim]`` (GPT-2's
    ``c_attn``; paths ``qkv.*``) or three Linears (``query``, ``key``, ``value``), and an
    ``output`` Linear ``[heads*head_dim, D]``. With ``kv_heads < heads`` each key/value head
    serves ``heads // kv_heads`` consecutive query heads. Scores are
    ``q · kᵀ * (1/sqrt(head_dim)) + mask``; weights are ``softmax`` over keys (times a
    dropout mask when one is given); heads are merged back to ``[B, T, heads*head_dim]``.

    Example:
        >>> from topos import Tape, Tensor
        >>> from topos.init import normal
        >>> tape = Tape()
        >>> attention = MultiHeadAttention.init(tape, 8, 4, normal(0, 0.1), kv_heads=2)
        >>> x = tape.input(Tensor.zeros((2, 3, 8)))
        >>> attention(x, tape.leaf(Tensor.zeros((3, 3)))).shape
        Shape([2, 3, 8])
    """

    __slots__ = ("_head_dim", "_heads", "_kv_heads", "_output", "_projections", "_rotary")

    def __init__(
        self,
        projections: Linear | Sequence[Linear],
        output: Linear,
        heads: int,
        kv_heads: int | None = None,
        rotary: Rotary | None = None,
    ) -> None:
        heads = _positive(heads, "MultiHeadAttention: heads")
        kv = heads if kv_heads is None else _positive(kv_heads, "MultiHeadAttention: kv_heads")
        if heads % kv:
            raise ShapeMismatchError(f"{user_site()}: MultiHeadAttention: heads {heads} must be a multiple of kv_heads {kv}")
        if not isinstance(output, Linear):
            raise InvalidArgumentError(f"{user_site()}: MultiHeadAttention: output must be a Linear, got {type(output).__name__}")
        if output.fan_in % heads:
            raise ShapeMismatchError(f"{user_site()}: MultiHeadAttention: output {output!r} does not split into {heads} heads")
        head_dim = output.fan_in // heads
        dim = output.fan_out
        layers = (projections,) if isinstance(projections, Linear) else tuple(projections)
        if any(not isinstance(layer, Linear) for layer in layers) or len(layers) not in (1, 3):
            raise InvalidArgumentError(
                f"{user_site()}: MultiHeadAttention: projections must be one fused Linear or three Linears (query, key, value)"
            )
        widths = (
            [(heads + 2 * kv) * head_dim] if len(layers) == 1 else [heads * head_dim, kv * head_dim, kv * head_dim]
        )
        if [layer.fan_out for layer in layers] != widths or any(layer.fan_in != dim for layer in layers):
            raise ShapeMismatchError(
                f"{user_site()}: MultiHeadAttention: projections {list(layers)} must map {dim} -> {widths} "
                f"for {heads} heads, {kv} key/value heads of {head_dim}"
            )
        if rotary is not None and (not isinstance(rotary, Rotary) or rotary.head_dim != head_dim):
            raise ShapeMismatchError(f"{user_site()}: MultiHeadAttention: rotary must be a Rotary over head_dim {head_dim}")
        self._projections = layers
        self._output = output
        self._heads, self._kv_heads, self._head_dim = heads, kv, head_dim
        self._rotary = rotary

    @classmethod
    def init(
        cls,
        tape: Tape,
        dim: int,
        heads: int,
        init: Init,
        kv_heads: int | None = None,
        fused: bool = True,
        bias: bool = True,
        rotary: Rotary | None = None,
    ) -> MultiHeadAttention:
        """Projections drawn from ``init`` (query/key/value or fused, then output; weights before bias)."""
        dim = _positive(dim, "MultiHeadAttention: dim")
        heads = _positive(heads, "MultiHeadAttention: heads")
        kv = heads if kv_heads is None else _positive(kv_heads, "MultiHeadAttention: kv_heads")
        if dim % heads or heads % kv:
            raise ShapeMismatchError(
                f"{user_site()}: MultiHeadAttention: dim {dim} must split into {heads} heads, and heads into {kv} groups"
            )
        hd = dim // heads
        projections: Linear | tuple[Linear, ...] = (
            Linear.init(tape, dim, (heads + 2 * kv) * hd, init, bias, "MultiHeadAttention qkv")
            if fused
            else tuple(
                Linear.init(tape, dim, width, init, bias, f"MultiHeadAttention {name}")
                for name, width in (("query", heads * hd), ("key", kv * hd), ("value", kv * hd))
            )
        )
        output = Linear.init(tape, heads * hd, dim, init, bias, "MultiHeadAttention output")
        return cls(projections, output, heads, kv, rotary)

    @property
    def heads(self) -> int:
        return self._heads

    @property
    def kv_heads(self) -> int:
        return self._kv_heads

    @property
    def head_dim(self) -> int:
        return self._head_dim

    @property
    def dim(self) -> int:
        return self._output.fan_out

    def _project(self, x: Value, positions: Value | None) -> tuple[Value, Value, Value]:
        h, kv, hd = self._heads, self._kv_heads, self._head_dim
        if len(self._projections) == 1:
            both = self._projections[0](x)
            q, k, v = both.narrow(2, 0, h * hd), both.narrow(2, h * hd, kv * hd), both.narrow(2, (h + kv) * hd, kv * hd)
        else:
            q, k, v = (layer(x) for layer in self._projections)
        q, k, v = _heads_first(q, h, hd), _heads_first(k, kv, hd), _heads_first(v, kv, hd)
        if self._rotary is not None:
            if positions is None:
                raise InvalidArgumentError(f"{user_site()}: MultiHeadAttention: rotary attention needs positions (a selection)")
            q, k = self._rotary(q, positions), self._rotary(k, positions)
        return q, k, v

    def _grouped(self, x: Value) -> Value:
        """``[B, kv, S, hd] -> [B, heads, S, hd]``, each key/value head repeated for its group."""
        group = self._heads // self._kv_heads
        if group == 1:
            return x
        b, kv, s, hd = x.shape.axes
        return x.broadcast_along(2, group).reshape((b, kv * group, s, hd))

    def _attend(self, q: Value, k: Value, v: Value, mask: Value | None, dropout: Dropout | Value | None) -> Value:
        b, h, t, hd = q.shape.axes
        keys, values = self._grouped(k), self._grouped(v)
        s = keys.shape[2]
        scores = q.matmul(keys.permute((0, 1, 3, 2))) * q.tape.constant((b, h, t, s), 1.0 / math.sqrt(hd))
        if mask is not None:
            if mask.rank == 2:
                mask = _spread_rows(mask, b, h)
            else:
                mask = mask.broadcast_along(1, h)
            scores = scores + mask
        weights = scores.softmax(3)
        if dropout is not None:
            weights = dropout(weights) if isinstance(dropout, Dropout) else weights * dropout
        merged = weights.matmul(values).permute((0, 2, 1, 3)).reshape((b, t, h * hd))
        return self._output(merged)

    def _check(self, x: Value, what: str, length: int | None = None) -> None:
        if x.rank != 3 or x.shape[2] != self.dim or (length is not None and x.shape[1] != length):
            expected = f"[B, {'T' if length is None else length}, {self.dim}]"
            raise ShapeMismatchError(f"{user_site()}: MultiHeadAttention: {what} must be {expected}; got {x.shape}")

    @facade
    def __call__(
        self, x: Value, mask: Value | None = None, positions: Value | None = None, dropout: Dropout | Value | None = None
    ) -> Value:
        """Self-attention over ``x [B, T, D]``; ``mask`` is additive ``[T, T]`` or ``[B, T, T]``
        (causal and padding masks are payloads the caller adds together); ``positions`` is the
        ``[T, length]`` selection a rotary attention needs; ``dropout`` multiplies the weights
        ``[B, heads, T, T]`` (a :class:`~topos.nn.Dropout` whose mask is fed, or a value)."""
        x = _value(x, "MultiHeadAttention", "x")
        self._check(x, "x")
        b, t = x.shape[0], x.shape[1]
        if mask is not None:
            mask = _value(mask, "MultiHeadAttention", "mask")
            if mask.shape.axes not in ((t, t), (b, t, t)):
                raise ShapeMismatchError(
                    f"{user_site()}: MultiHeadAttention: mask must be [{t}, {t}] or [{b}, {t}, {t}] for x {x.shape}; got {mask.shape}"
                )
        if dropout is not None:
            wanted = (b, self._heads, t, t)
            got = dropout.shape.axes if isinstance(dropout, (Dropout, Value)) else None
            if got != wanted:
                raise ShapeMismatchError(f"{user_site()}: MultiHeadAttention: dropout must be {list(wanted)}; got {got}")
        q, k, v = self._project(x, positions)
        return self._attend(q, k, v, mask, dropout)

    @facade
    def step(self, x: Value, cache: KvCache, position: Position) -> tuple[Value, KvCache]:
        """One decode step: ``x [B, 1, D]`` attends over the cache with its own key and value
        placed at ``position``; returns the output and the updated cache."""
        x = _value(x, "MultiHeadAttention.step", "x")
        self._check(x, "x", 1)
        b = x.shape[0]
        length = position.length
        expected = (b, self._kv_heads, length, self._head_dim)
        for name, value in (("keys", cache.keys), ("values", cache.values)):
            if _value(value, "MultiHeadAttention.step", f"cache {name}").shape.axes != expected:
                raise ShapeMismatchError(
                    f"{user_site()}: MultiHeadAttention.step: cache {name} must be {list(expected)}; got {value.shape}"
                )
        q, k, v = self._project(x, position.selection)
        onehot = bind(x, position.onehot.symbol)
        keep = onehot.one_like() - onehot

        def placed(cache_value: Value, new: Value) -> Value:
            shape = cache_value.shape.axes
            rows = onehot.broadcast_along(1, shape[3]).broadcast_along(0, shape[1]).broadcast_along(0, shape[0])
            kept = keep.broadcast_along(1, shape[3]).broadcast_along(0, shape[1]).broadcast_along(0, shape[0])
            spread = new.reshape((shape[0], shape[1], shape[3])).broadcast_along(2, shape[2])
            return cache_value * kept + spread * rows

        keys, values = placed(cache.keys, k), placed(cache.values, v)
        mask = bind(x, position.mask.symbol).reshape((1, length))
        return self._attend(q, keys, values, mask, None), KvCache(keys, values)

    def tensor_parallel(self) -> dict[Symbol, tuple[int, int]]:
        """Megatron's splits by heads (see :meth:`TransformerLm.tensor_parallel`): query, key
        and value by columns, the output by rows, in whole heads. A fused projection is left
        out (replicated): its columns run query | key | value, so no contiguous split is by heads."""
        if len(self._projections) == 1:
            return {self._output.weights: (0, self._head_dim)}
        found: dict[Symbol, tuple[int, int]] = {}
        for layer in self._projections:
            found.update(_columns(layer, self._head_dim))
        return {**found, self._output.weights: (0, self._head_dim)}

    def visit(self, visitor: Visitor) -> None:
        if len(self._projections) == 1:
            visitor.child("qkv", self._projections[0])
        else:
            for name, layer in zip(("query", "key", "value"), self._projections, strict=True):
                visitor.child(name, layer)
        visitor.child("output", self._output)


class Block:
    """A pre-norm transformer block: ``x + attention(norm1(x))``, then ``x + feed_forward(norm2(x))``.

    Example:
        >>> from topos import Tape, Tensor
        >>> from topos.init import normal
        >>> from topos.nn import LayerNorm, Mlp, Activation
        >>> tape = Tape()
        >>> block = Block(
        ...     LayerNorm.init(tape, 8, 1e-5), MultiHeadAttention.init(tape, 8, 2, normal(0, 0.1)),
        ...     LayerNorm.init(tape, 8, 1e-5), SwiGlu.init(tape, 8, 16, normal(1, 0.1)))
        >>> block(tape.input(Tensor.zeros((1, 3, 8)))).shape
        Shape([1, 3, 8])
    """

    __slots__ = ("_attention", "_feed_forward", "_norm1", "_norm2")

    def __init__(self, norm1: Module, attention: MultiHeadAttention, norm2: Module, feed_forward: Module) -> None:
        if not isinstance(attention, MultiHeadAttention):
            raise InvalidArgumentError(f"{user_site()}: Block: attention must be a MultiHeadAttention, got {type(attention).__name__}")
        self._norm1, self._attention, self._norm2, self._feed_forward = norm1, attention, norm2, feed_forward

    @property
    def attention(self) -> MultiHeadAttention:
        return self._attention

    @facade
    def __call__(
        self, x: Value, mask: Value | None = None, positions: Value | None = None, dropout: Dropout | Value | None = None
    ) -> Value:
        x = x + self._attention(self._norm1(x), mask, positions, dropout)
        return x + self._feed_forward(self._norm2(x))

    @facade
    def step(self, x: Value, cache: KvCache, position: Position) -> tuple[Value, KvCache]:
        attended, cache = self._attention.step(self._norm1(x), cache, position)
        x = x + attended
        return x + self._feed_forward(self._norm2(x)), cache

    def tensor_parallel(self) -> dict[Symbol, tuple[int, int]]:
        """The attention's splits and the feed-forward's: a :class:`SwiGlu`, or a two-layer
        :class:`~topos.nn.Mlp` (up by columns, down by rows); any other feed-forward is replicated."""
        found = self._attention.tensor_parallel()
        forward = self._feed_forward
        if isinstance(forward, SwiGlu):
            found.update(forward.tensor_parallel())
        elif isinstance(forward, Mlp) and len(forward.layers) == 2:
            found.update({**_columns(forward.layers[0], 1), forward.layers[1].weights: (0, 1)})
        return found

    def visit(self, visitor: Visitor) -> None:
        visitor.child("norm1", self._norm1)
        visitor.child("attention", self._attention)
        visitor.child("norm2", self._norm2)
        visitor.child("feed_forward", self._feed_forward)


class TransformerLm:
    """A decoder-only language model: token embedding (plus a learned position table, if any),
    blocks, a final norm and logits through ``head`` (or the embedding table, tied, when
    ``head`` is None).

    ``__call__`` maps tokens ``[B*T, vocab]`` (a selection) to logits ``[B*T, vocab]``;
    :meth:`step` is one decode step over caches (see the module contract).

    Example:
        >>> from topos import Tape, Tensor
        >>> from topos.init import normal
        >>> from topos.nn import LayerNorm
        >>> tape = Tape()
        >>> init = normal(0, 0.1)
        >>> lm = TransformerLm(
        ...     Embedding.init(tape, 11, 8, init), PositionTable.init(tape, 5, 8, init),
        ...     [Block(LayerNorm.init(tape, 8, 1e-5), MultiHeadAttention.init(tape, 8, 2, init),
        ...            LayerNorm.init(tape, 8, 1e-5), SwiGlu.init(tape, 8, 16, init))],
        ...     LayerNorm.init(tape, 8, 1e-5))
        >>> tokens = tape.input(Tensor.selection([0] * 6, 11))
        >>> positions = tape.input(Tensor.selection([0, 1, 2], 5))
        >>> lm(tokens, 2, tape.leaf(Tensor.zeros((3, 3))), positions).shape
        Shape([6, 11])
    """

    __slots__ = ("_blocks", "_embedding", "_head", "_norm", "_positions")

    def __init__(
        self,
        embedding: Embedding,
        positions: PositionTable | None,
        blocks: Sequence[Block],
        norm: Module,
        head: Linear | None = None,
    ) -> None:
        if not isinstance(embedding, Embedding):
            raise InvalidArgumentError(f"{user_site()}: TransformerLm: embedding must be an Embedding")
        if positions is not None and (not isinstance(positions, PositionTable) or positions.dim != embedding.dim):
            raise ShapeMismatchError(f"{user_site()}: TransformerLm: positions must be a PositionTable of dim {embedding.dim}")
        if not blocks or any(not isinstance(block, Block) for block in blocks):
            raise InvalidArgumentError(f"{user_site()}: TransformerLm: blocks must be a non-empty sequence of Block")
        if head is not None and (head.fan_in != embedding.dim or head.fan_out != embedding.vocab):
            raise ShapeMismatchError(f"{user_site()}: TransformerLm: head {head!r} must map {embedding.dim} -> {embedding.vocab}")
        self._embedding, self._positions, self._blocks = embedding, positions, tuple(blocks)
        self._norm, self._head = norm, head

    @property
    def blocks(self) -> tuple[Block, ...]:
        return self._blocks

    @property
    def vocab(self) -> int:
        return self._embedding.vocab

    @property
    def dim(self) -> int:
        return self._embedding.dim

    def _embed(self, tokens: Value, batch: int, positions: Value | None) -> Value:
        rows = tokens.shape[0]
        if tokens.rank != 2 or tokens.shape[1] != self.vocab or rows % batch:
            raise ShapeMismatchError(
                f"{user_site()}: TransformerLm: tokens must be a selection [B*T, {self.vocab}] with B = {batch}; got {tokens.shape}"
            )
        t = rows // batch
        x = self._embedding(tokens).reshape((batch, t, self.dim))
        if self._positions is not None:
            if positions is None:
                raise InvalidArgumentError(f"{user_site()}: TransformerLm: a learned position table needs positions (a selection)")
            x = x + self._positions(positions).broadcast_along(0, batch)
        return x

    def _logits(self, x: Value) -> Value:
        b, t, d = x.shape.axes
        rows = self._norm(x).reshape((b * t, d))
        if self._head is not None:
            logits: Value = self._head(rows)
            return logits
        return rows.matmul(bind(x, self._embedding.table).transpose())

    @facade
    def __call__(self, tokens: Value, batch: int, mask: Value | None, positions: Value | None = None) -> Value:
        """Logits ``[B*T, vocab]`` for tokens ``[B*T, vocab]``; ``mask`` is the additive
        ``[T, T]`` (or ``[B, T, T]``) mask; ``positions`` the ``[T, length]`` selection."""
        tokens = _value(tokens, "TransformerLm", "tokens")
        batch = _positive(batch, "TransformerLm: batch")
        x = self._embed(tokens, batch, positions)
        for block in self._blocks:
            x = block(x, mask, positions)
        return self._logits(x)

    def caches(self, tape: Tape, batch: int, length: int) -> list[KvCache]:
        """One zero :class:`KvCache` input per block, for :meth:`step`."""
        return [
            KvCache.record(tape, batch, block.attention.kv_heads, length, block.attention.head_dim) for block in self._blocks
        ]

    @facade
    def step(self, tokens: Value, position: Position, caches: Sequence[KvCache]) -> tuple[Value, list[KvCache]]:
        """One decode step: tokens ``[B, vocab]`` (one per row) at ``position``; returns the
        logits ``[B, vocab]`` and each block's updated cache."""
        tokens = _value(tokens, "TransformerLm.step", "tokens")
        if len(caches) != len(self._blocks):
            raise InvalidArgumentError(
                f"{user_site()}: TransformerLm.step: {len(caches)} caches for {len(self._blocks)} blocks"
            )
        x = self._embed(tokens, tokens.shape[0], position.selection)
        updated: list[KvCache] = []
        for block, cache in zip(self._blocks, caches, strict=True):
            x, cache = block.step(x, cache, position)
            updated.append(cache)
        return self._logits(x), updated

    def tensor_parallel(self) -> dict[Symbol, tuple[int, int]]:
        """Megatron's tensor-parallel splits of this model, for
        :class:`~topos.stages.stablehlo.TensorParallel`: ``{parameter: (axis, unit)}``, the
        tensor axis split over the model axis in whole pieces of ``unit`` elements.

        Per block: query, key and value weights by columns (axis 1, in whole heads) with
        their biases (axis 0), the attention output's weights by rows (axis 0, whole heads);
        the MLP's up (and SwiGLU's gate) by columns with their biases, its down by rows.
        Row-split biases, norms, the embedding, the position table and the head (tied or
        not) are absent: replicated.

        Example:
            >>> from topos import Tape
            >>> from topos.init import normal
            >>> from topos.nn import LayerNorm
            >>> tape, init = Tape(), normal(0, 0.1)
            >>> lm = TransformerLm(
            ...     Embedding.init(tape, 11, 8, init), None,
            ...     [Block(LayerNorm.init(tape, 8, 1e-5), MultiHeadAttention.init(tape, 8, 2, init, fused=False),
            ...            LayerNorm.init(tape, 8, 1e-5), SwiGlu.init(tape, 8, 16, init))],
            ...     LayerNorm.init(tape, 8, 1e-5))
            >>> sorted(lm.tensor_parallel().values())
            [(0, 1), (0, 4), (0, 4), (0, 4), (0, 4), (1, 1), (1, 1), (1, 4), (1, 4), (1, 4)]
        """
        found: dict[Symbol, tuple[int, int]] = {}
        for block in self._blocks:
            found.update(block.tensor_parallel())
        return found

    def visit(self, visitor: Visitor) -> None:
        visitor.child("embedding", self._embedding)
        if self._positions is not None:
            visitor.child("positions", self._positions)
        visitor.child("blocks", _Blocks(self._blocks))
        visitor.child("norm", self._norm)
        if self._head is not None:
            visitor.child("head", self._head)

