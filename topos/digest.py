"""SHA-256 digests of exact training runs: one hex string that stands for every bit of a run.

Contract:
- :func:`digest_run` trains a recorded network for ``steps`` steps of plain SGD
  (``p - g * rate`` for every parameter, the same fixed ``rate`` throughout) through one
  plan lowered under ``Numerics.EXACT``: the network's gradient (recorded once, with respect
  to every parameter, by :func:`topos.stages.gradient.gradient`) is lowered with
  ``longer.entry([*roots, *gradients]).numerics(Numerics.EXACT).lower()``, and each step is
  one ``plan.forward(parameters, feeds(step))`` followed by ``parameters.step`` under
  :meth:`~topos.ir.numerics.Numerics.exactly`. The first root is the loss (rank 0) that SGD descends; every
  root is hashed at every step, so a job can pin forward values the loss would hide.
- The feeds of step ``k`` are a pure function of ``k``: :func:`uniform_draws`,
  :func:`index_draws` and :func:`bit_draws` draw them from :func:`topos.init.splitmix64`
  (integer arithmetic, then at most two IEEE-rounded f64 operations), never from
  ``numpy.random``, whose samplers call the platform's libm. Without ``feeds`` every input
  keeps its recorded default.
- What is hashed, in this order (every integer 8 bytes little-endian, every tensor its shape
  then its bits as little-endian unsigned integers of the element's width, row-major; so the
  byte stream is the same on a big-endian machine and for any memory layout):
  the lines ``FORMAT``, the element's name and ``nans=MODE`` (UTF-8, each ending in a
  newline), the step count, the rate as a little-endian f64, the numbers of roots and of
  parameter slots; then for each step every root and every parameter's
  gradient, in root order and slot (recording) order; then every parameter's final payload.
  :func:`digest_run` returns the SHA-256 of that stream as 64 hex digits.
- NaNs: by default (``nans="canonical"``) every NaN is hashed as the element's one quiet
  NaN, so a digest pins every other bit and which values are NaN, but not a NaN's sign or
  payload. Those are not portable today: which of two NaNs survives ``NaN + NaN`` depends on
  numpy's CPU dispatch (measured with numpy 2.4 on x86-64: the dispatched ``add`` loop keeps
  the first operand, the baseline loop the second; ``every-op`` differs between those two
  settings of ``.ci/portability.py`` in NaN signs only), and IEEE 754 leaves the sign of the NaN an invalid operation makes
  (``inf - inf``, ``0 * inf``) to the hardware (x86 sets it, ARM clears it).
  ``nans="bits"`` hashes NaNs as they are; the mode is hashed too, so the two never agree.
- :data:`JOBS` are the named digests (``every-op``, ``makemore``, ``lenet``, ``gpt``), each
  in f32, f64 and bf16 at smoke sizes (each job's ``sizes`` says which). The committed table
  ``topos/assets/digests.json`` holds their digests; ``python -m topos.digest --write``
  regenerates it and ``python -m topos.digest --check`` recomputes every entry, prints each
  mismatch and exits 1 on any. A digest changes whenever any bit of any kernel's output
  changes (a new transcendental kernel included): regenerate the table in the same change.

Example:
    >>> from topos import Tape, f64
    >>> def line(tape):
    ...     w = tape.parameter(0.5)
    ...     x = tape.input(2.0)
    ...     return (w * x - 1.0) * (w * x - 1.0), w
    >>> network, (loss, w) = Tape.record(line, element=f64)
    >>> digest = digest_run(network, [loss, w], steps=3)
    >>> len(digest), digest == digest_run(network, [loss, w], steps=3)
    (64, True)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import struct
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import attrs
import ml_dtypes
import numpy as np

from topos.errors import BackwardTargetError, InvalidArgumentError, ToposError
from topos.init import splitmix64, xavier
from topos.ir.element import ElementType, bf16, f32, f64
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.numerics import Numerics
from topos.ir.ops import MapOperation
from topos.kernels import libm
from topos.stages.gradient import gradient
from topos.stages.spec import Tape, Value
from topos.tensor import Tensor, TensorLike

__all__ = [
    "ELEMENTS",
    "FORMAT",
    "GPT",
    "JOBS",
    "LENET",
    "MAKEMORE",
    "NAN_MODES",
    "RATE",
    "TABLE",
    "GptSizes",
    "Job",
    "LenetSizes",
    "MakemoreSizes",
    "Prepared",
    "bit_draws",
    "check",
    "compute",
    "digest_run",
    "index_draws",
    "main",
    "read_table",
    "special_values",
    "uniform_draws",
    "write_table",
]

FORMAT: Final = "topos-digest-1"
"""The first bytes hashed: a change to what is hashed or how changes this name."""

RATE: Final = 2.0**-6
"""The default SGD rate: a power of two, so ``g * rate`` is exact in every element (short of
underflow) and the rate means the same number in f32, f64 and bf16."""

ELEMENTS: Final[dict[str, ElementType]] = {"f32": f32, "f64": f64, "bf16": bf16}
"""The elements every job is digested in, by the names the table uses."""

TABLE: Final = Path(__file__).resolve().parent / "assets" / "digests.json"
"""The committed table: ``{"format", "regenerate", "jobs": {name: {"steps", "sizes", "digests": {element: hex}}}}``."""

Array = np.ndarray[Any, Any]
Feeds = Callable[[int], Mapping[Symbol, TensorLike]]

_TWO_TO_MINUS_53: Final = 1.0 / 9007199254740992.0
_UNSIGNED: Final = {1: "<u1", 2: "<u2", 4: "<u4", 8: "<u8"}


# --------------------------------------------------------------------------- deterministic feeds


def _stream(seed: int, step: int, count: int) -> Array:
    # Step k reads draws k*count .. (k+1)*count - 1 of the stream: a pure function of the
    # step, with no state carried from one step to the next.
    if step < 0 or count < 1:
        raise InvalidArgumentError(f"draws need a step >= 0 and a count >= 1, got step {step}, count {count}")
    return splitmix64(seed, step * count, count)


def uniform_draws(seed: int, step: int, shape: Sequence[int], low: float = -1.0, high: float = 1.0) -> Array:
    """f64 samples in ``[low, high)`` for ``step``: the same on every machine.

    The top 53 bits of each splitmix64 draw scale exactly to ``[0, 1)``; ``low + (high - low)
    * u`` is then two IEEE-rounded operations (no libm, no fused multiply-add).

    Example:
        >>> a = uniform_draws(1, 0, (2, 3), -2.0, 2.0)
        >>> a.shape, bool(((a >= -2.0) & (a < 2.0)).all())
        ((2, 3), True)
        >>> bool((a == uniform_draws(1, 0, (2, 3), -2.0, 2.0)).all()), bool((a == uniform_draws(1, 1, (2, 3), -2.0, 2.0)).any())
        (True, False)
    """
    count = math.prod(shape)
    unit = (_stream(seed, step, count) >> np.uint64(11)).astype(np.float64) * _TWO_TO_MINUS_53
    values: Array = (np.float64(low) + np.float64(high - low) * unit).reshape(tuple(shape))
    return values


def index_draws(seed: int, step: int, count: int, bound: int) -> Array:
    """``count`` integers in ``[0, bound)`` for ``step`` (int64), by integer arithmetic alone.

    Example:
        >>> index_draws(3, 0, 6, 4).tolist() == index_draws(3, 0, 6, 4).tolist()
        True
        >>> bool((index_draws(3, 5, 100, 4) < 4).all())
        True
    """
    if bound < 1:
        raise InvalidArgumentError(f"index_draws: bound must be at least 1, got {bound}")
    indices: Array = (_stream(seed, step, count) % np.uint64(bound)).astype(np.int64)
    return indices


def bit_draws(seed: int, step: int, count: int, element: ElementType) -> Array:
    """``count`` random bit patterns of ``element`` for ``step``: every exponent, subnormals,
    zeros and infinities, in the element's storage dtype.

    A pattern that would be a NaN becomes the element's quiet NaN: which of two NaN payloads
    an operation keeps differs between processors (ARM prefers a signalling NaN, x86 the
    first operand) and between numpy's dispatched loops, so random payloads would test those
    rather than topos.

    Example:
        >>> from topos import bf16
        >>> bit_draws(9, 0, 4, bf16).dtype == bf16.dtype
        True
    """
    width = element.dtype.itemsize
    raw = _stream(seed, step, count) >> np.uint64(64 - 8 * width)
    values = raw.astype(_UNSIGNED[width]).view(element.dtype)
    with np.errstate(invalid="ignore"):  # casting a signalling NaN says so; it is replaced below
        wide = values.astype(np.float64)
    out: Array = np.where(np.isnan(wide), element.convert(np.asarray(np.nan)), values).astype(element.dtype)
    return out


# --------------------------------------------------------------------------- the digest


_NanMode = Literal["canonical", "bits"]
NAN_MODES: Final[tuple[_NanMode, ...]] = ("canonical", "bits")
"""How :func:`digest_run` may hash NaNs: as one quiet NaN, or as their own bits (the module contract)."""


def _tensor_bytes(tensor: Tensor, nans: _NanMode) -> bytes:
    # Shape first, so two runs whose tensors hold the same bits in different shapes differ;
    # the bits as explicit little-endian integers, so the stream is the same on any host.
    bits = tensor.bits()
    if nans == "canonical":
        values = tensor.numpy()
        with np.errstate(invalid="ignore"):
            lanes = np.isnan(values.astype(np.float64))
        if lanes.any():
            quiet = np.ascontiguousarray(tensor.element.convert(np.asarray(np.nan))).reshape(1).view(bits.dtype)[0]
            bits = np.where(lanes, quiet, bits)
    head = struct.pack(f"<Q{bits.ndim}Q", bits.ndim, *bits.shape)
    return head + np.ascontiguousarray(bits).astype(_UNSIGNED[bits.dtype.itemsize], copy=False).tobytes()


def _as_roots(roots: Symbol | Sequence[Symbol]) -> list[Symbol]:
    listed = [roots] if isinstance(roots, Symbol) else list(roots)
    if not listed or not all(isinstance(s, Symbol) for s in listed):
        raise InvalidArgumentError(f"digest_run takes a loss symbol or a sequence of symbols, the loss first; got {roots!r}")
    return listed


def digest_run(
    network: Network,
    roots: Symbol | Sequence[Symbol],
    *,
    steps: int,
    rate: float = RATE,
    feeds: Feeds | None = None,
    nans: Literal["canonical", "bits"] = "canonical",
) -> str:
    """Train ``network`` for ``steps`` SGD steps under ``Numerics.EXACT``; the run's SHA-256.

    ``roots`` is the loss (a rank-0 symbol), or a sequence whose first symbol is the loss
    and whose others are hashed alongside it at every step. ``feeds(step)`` gives the inputs
    of each step (recorded defaults where it names none, and everywhere without it);
    ``nans`` says how NaNs are hashed. See the module contract for what is hashed and in
    which order.

    Example:
        >>> from topos import Tape, f32
        >>> network, (loss, w) = Tape.record(lambda t: (lambda w: ((w * w).sum(), w))(t.parameter([1.0, -2.0])))
        >>> digest_run(network, loss, steps=2) == digest_run(network, [loss], steps=2)
        True
        >>> digest_run(network, loss, steps=2) == digest_run(network, loss, steps=3)
        False
    """
    if type(steps) is not int or steps < 1:
        raise InvalidArgumentError(f"digest_run: steps must be a whole number of at least 1, got {steps!r}")
    if not math.isfinite(rate):
        raise InvalidArgumentError(f"digest_run: rate must be a finite number, got {rate!r}")
    if nans not in NAN_MODES:
        raise InvalidArgumentError(f"digest_run: nans must be one of {', '.join(NAN_MODES)}, got {nans!r}")
    listed = _as_roots(roots)
    loss = listed[0]
    if network.node(loss).shape.rank != 0:
        raise BackwardTargetError(
            f"digest_run trains the first root as the loss, so it must be rank 0; "
            f"got {network.describe_symbol(network.index(loss))}"
        )
    longer, adjoints = gradient(network, loss, network.parameter_symbols())
    gradients = list(adjoints.gradients())
    plan = longer.entry([*listed, *gradients]).numerics(Numerics.EXACT).lower()
    parameters = network.parameters()
    hasher = hashlib.sha256()
    header = f"{FORMAT}\n{network.element.name}\nnans={nans}\n".encode()
    hasher.update(header + struct.pack("<QdQQ", steps, float(rate), len(listed), len(parameters)))
    for step in range(steps):
        run = plan.forward(parameters, {} if feeds is None else dict(feeds(step)))
        for symbol in (*listed, *gradients):
            hasher.update(_tensor_bytes(run.of(symbol), nans))
        update = run.recorded_gradients(adjoints)
        # Host-side tensor arithmetic runs under FAST unless told otherwise; the update is
        # part of the run, so it takes the reference kernels too.
        with Numerics.exactly():
            parameters = parameters.step(update, lambda p, g: p - g * rate)
    for payload in parameters.payloads():
        hasher.update(_tensor_bytes(payload, nans))
    return hasher.hexdigest()


# --------------------------------------------------------------------------- the named jobs


@attrs.frozen
class Prepared:
    """A job recorded in one element: the network, its roots (the loss first) and its feeds."""

    network: Network
    roots: tuple[Symbol, ...]
    feeds: Feeds | None


@attrs.frozen
class Job:
    """A named digest: how to record it in an element, how many steps, at which rate."""

    name: str
    steps: int
    sizes: str
    prepare: Callable[[ElementType], Prepared]
    rate: float = RATE

    def digest(self, element: ElementType, nans: Literal["canonical", "bits"] = "canonical") -> str:
        """This job's digest in ``element`` (see :func:`digest_run`); the table's use ``nans="canonical"``.

        Example:
            >>> from topos import f64
            >>> job = JOBS[1]
            >>> job.name, job.digest(f64) == read_table()["jobs"][job.name]["digests"]["f64"]
            ('makemore', True)
        """
        prepared = self.prepare(element)
        return digest_run(
            prepared.network, prepared.roots, steps=self.steps, rate=self.rate, feeds=prepared.feeds, nans=nans
        )


# ml_dtypes.finfo is untyped (numpy's finfo does not know bfloat16); the bound name gives
# mypy its signature.
_ml_finfo: Callable[[np.dtype[Any]], Any] = ml_dtypes.finfo


def _finfo(element: ElementType) -> Any:
    return _ml_finfo(element.dtype)


def _stored(element: ElementType, values: Any) -> Array:
    stored: Array = element.convert(np.asarray(values, dtype=np.float64))
    return stored


def _neighbour(element: ElementType, value: float, up: bool) -> float:
    # The next representable number away from or toward zero, by the bits (np.nextafter
    # knows no bfloat16); only used for finite nonzero values.
    stored = np.ascontiguousarray(_stored(element, [value]))
    bits = stored.view(_UNSIGNED[stored.dtype.itemsize]).copy()
    if up:
        bits += 1
    else:
        bits -= 1
    return float(bits.view(element.dtype).astype(np.float64)[0])


def special_values(element: ElementType) -> Array:
    """The special values ``every-op`` feeds every map, in ``element``'s storage.

    Zeros of both signs, both infinities, a quiet NaN, subnormals, the smallest normal, the
    largest finite, ±1 and its neighbours, and the maps' edges: where ``exp`` overflows and
    underflows, ``log1p``'s pole at -1, ``tanh`` and ``erf`` saturating, ``sin`` and ``cos``
    at multiples of π/2 and at a huge argument, ``atan`` far out.

    Example:
        >>> from topos import f32
        >>> v = special_values(f32)
        >>> bool(np.isnan(v).any() and np.isposinf(v).any() and np.isneginf(v).any())
        True
    """
    info = _finfo(element)
    sub = float(info.smallest_subnormal)
    tiny = float(info.smallest_normal)
    huge = float(info.max)
    # The portable log: the platform's math.log could move these inputs by an ulp, and the
    # digest with them.
    overflow = libm.scalar(MapOperation.LN, huge)
    underflow = libm.scalar(MapOperation.LN, sub)
    values = [
        0.0, -0.0, math.inf, -math.inf, math.nan,
        sub, -sub, tiny - sub, tiny, -tiny, huge, -huge, huge / 2.0,
        1.0, -1.0, _neighbour(element, 1.0, up=True), _neighbour(element, 1.0, up=False),
        _neighbour(element, -1.0, up=False), _neighbour(element, -1.0, up=True), 0.5, -0.5, 2.0, -3.0,
        overflow, _neighbour(element, overflow, up=True), underflow, -20.0, 9.0, 20.0,
        2.0**-30, -(2.0**-30), math.pi / 2.0, math.pi, -math.pi, 3.0 * math.pi / 2.0, 1e22, -1e22,
        1e10, -1e10, 0.1, 7.25, -100.0,
    ]  # fmt: skip
    return _stored(element, values)


_BINARY_VALUES: Final = (
    0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, 2.0, -3.0, 3.0, -0.25, 7.5,
)  # fmt: skip


def _binary_values(element: ElementType) -> Array:
    info = _finfo(element)
    extra = [float(info.smallest_subnormal), float(info.smallest_normal), float(info.max), -float(info.max)]
    return _stored(element, [*_BINARY_VALUES, *extra])


def _weights(seed: int, shape: tuple[int, ...]) -> Callable[[int], TensorLike]:
    return lambda step: uniform_draws(seed, step, shape, 0.5, 1.5)


def _every_op(element: ElementType) -> Prepared:
    """One graph over every opcode and every map, on special values and on per-step draws."""
    specials = special_values(element)
    n = specials.size
    pair = _binary_values(element)
    m = pair.size
    tape = Tape(element)
    outputs: list[Value] = []
    draws: dict[Symbol, Callable[[int], TensorLike]] = {}

    def fed(default: TensorLike, draw: Callable[[int], TensorLike]) -> Value:
        value = tape.input(default)
        draws[value.symbol] = draw
        return value

    def mixed(seed: int) -> Callable[[int], TensorLike]:
        # Step 0 feeds the special values; later steps random bit patterns (every exponent)
        # in the even lanes and moderate numbers, where the maps' polynomials work, in the odd.
        def draw(step: int) -> TensorLike:
            if step == 0:
                return Tensor(specials, element)
            lanes = bit_draws(seed, step, n, element).astype(np.float64)
            lanes[1::2] = uniform_draws(seed, step, (n,), -6.0, 6.0)[1::2]
            return Tensor(_stored(element, lanes), element)

        return draw

    # Every map, on parameters (their gradients are each map's derivative at the specials)
    # and on inputs (fresh values each step; their gradients are returned as roots).
    map_inputs: list[Value] = []
    for k, operation in enumerate(MapOperation):
        outputs.append(tape.parameter(specials).map(operation))
        x = fed(specials, mixed(100 + k))
        map_inputs.append(x)
        outputs.append(x.map(operation))

    # Elementwise binary opcodes over the cross product of binary special values, each with
    # its own operands so that one op's NaN gradient cannot hide another's.
    a_grid = np.repeat(pair, m).reshape(m, m)
    b_grid = np.tile(pair, m).reshape(m, m)
    binary: list[Callable[[Value, Value], Value]] = [
        lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
        lambda a, b: a.maximum(b), lambda a, b: a.powf(b), lambda a, b: (a >= b).select(a, b),
        lambda a, b: a.select(b, -a), lambda a, b: a.step(b) * b,
    ]  # fmt: skip
    for combine in binary:
        outputs.append(combine(tape.parameter(a_grid), tape.parameter(b_grid)))
    outputs.append(-tape.parameter(specials))

    # Products and sums: special values through a matrix product, moderate ones batched.
    s = tape.parameter(specials[:24].reshape(4, 6))
    t = tape.parameter(np.roll(specials, 7)[:24].reshape(6, 4))
    outputs.append(s.matmul(t))
    outputs.append(s.sum_along(1))
    outputs.append(s.sum().reshape((1,)))
    init = xavier(7, element)
    batched = tape.parameter(init((2, 3, 4))).matmul(fed(uniform_draws(8, 0, (2, 4, 2)), lambda k: uniform_draws(8, k, (2, 4, 2))))
    outputs.append(batched)

    # Log-softmax and log-sum-exp along both axes, over rows that reach every edge.
    info = _finfo(element)
    rows = _stored(element, [
        [-math.inf, -math.inf, -math.inf, -math.inf], [math.inf, 0.0, 1.0, 2.0], [math.nan, 0.0, 0.0, 0.0],
        [info.max, info.max, 0.0, -1.0], [-info.max, 0.0, -0.0, 1.0], [info.smallest_subnormal, 0.0, -0.0, info.smallest_normal],
        [1.0, 2.0, 3.0, 4.0], [-100.0, 100.0, 0.5, -0.5],
    ])  # fmt: skip
    for axis in (0, 1):
        outputs.append(tape.parameter(rows).log_softmax(axis))
        outputs.append(tape.parameter(rows).logsumexp(axis))

    # Layout: reshape, permute, narrow, pad, broadcast of a rank-0 value, broadcast along.
    cube = tape.parameter(init((2, 3, 4)))
    outputs.append(cube.permute((2, 0, 1)).reshape((4, 6)).narrow(1, 1, 4).pad(0, 1, 6))
    outputs.append(tape.parameter(1.5).broadcast((3, 2)) * tape.parameter(init((3, 2))))
    outputs.append(tape.parameter(specials[:5]).broadcast_along(0, 3))

    # Gather and scatter through one-hot selections drawn each step (Embedding's opcodes).
    table = tape.parameter(_stored(element, np.roll(specials, 3)[:15].reshape(5, 3)))
    chosen = fed(Tensor.selection([0, 4, 2, 2], 5, element), lambda k: Tensor.selection(index_draws(9, k, 4, 5), 5, element))
    outputs.append(table.gather(chosen))
    outputs.append(tape.parameter(init((4, 3))).scatter(chosen))

    # Convolution windows (unfold), pooling (maximum over windows), and fold itself.
    from topos.nn import conv2d, max_pool

    image = fed(uniform_draws(10, 0, (1, 2, 6, 6)), lambda k: uniform_draws(10, k, (1, 2, 6, 6)))
    kernel = tape.parameter(init((3, 2, 3, 3)))
    bias = tape.parameter(_stored(element, [0.5, -0.5, 0.0]))
    outputs.append(max_pool(conv2d(image, kernel, bias, stride=1, padding=1).relu(), 2))
    outputs.append(conv2d(image, kernel, None, stride=2, padding=0, dilation=2))
    windows = tape.parameter(init((2, 4, 3)))
    outputs.append(windows.fold(1, 3, 2, 1, 9))
    outputs.append(tape.parameter(init((2, 7))).unfold(1, 3, 2, dilation=2))

    # A value whose gradient is stopped, and a composite or two spelled from the opcodes.
    u = tape.parameter(init((3, 3)))
    outputs.append(u.stop_gradient() * u)
    outputs.append(tape.parameter(specials).gelu(approximate=True))
    outputs.append(tape.parameter(specials).sigmoid())

    # The loss weighs each output by per-step draws in [0.5, 1.5): cotangents other than 1,
    # and never 0 (0 * inf would hide the inf).
    loss: Value | None = None
    for j, output in enumerate(outputs):
        weight = fed(Tensor(np.ones(output.shape.axes), element), _weights(200 + j, output.shape.axes))
        term = (output * weight).sum()
        loss = term if loss is None else loss + term
    assert loss is not None
    input_gradients = tape.differentiate(loss, map_inputs).gradients()
    network = tape.seal()

    def feeds(step: int) -> dict[Symbol, TensorLike]:
        return {symbol: draw(step) for symbol, draw in draws.items()}

    roots = (loss.symbol, *(o.symbol for o in outputs), *input_gradients)
    return Prepared(network, roots, feeds)


# Smoke sizes: every job in every element together runs in about ten seconds on one core
# (the budget is a minute, for slower CI machines). The layers are the examples' own (LeNet's
# 28x28 geometry, makemore's context of 3 and embedding of 10, the small GPT's widths) with
# smaller batches and a narrower MLP; some tensors are below and some above the 4096 bytes
# from which tensors are copied onto aligned storage (topos.ir.element.ALIGNED_FROM), so the
# digests see both layouts.
@attrs.frozen
class MakemoreSizes:
    """The makemore MLP's sizes (the lesson: context 3, embedding 10, hidden 200, batch 32)."""

    vocab: int = 27
    context: int = 3
    dim: int = 10
    hidden: int = 64
    batch: int = 16


@attrs.frozen
class LenetSizes:
    """LeNet-5's sizes (the example: 28x28 images, channels 6 and 16, dense 120 and 84, batch 32)."""

    image: int = 28
    channels: tuple[int, int] = (6, 16)
    dense: tuple[int, int] = (120, 84)
    classes: int = 10
    batch: int = 4


@attrs.frozen
class GptSizes:
    """The small GPT's sizes (makemore's transformer lesson: block 8, width 32, 4 heads, 2 layers, batch 8)."""

    vocab: int = 27
    length: int = 8
    dim: int = 32
    heads: int = 4
    layers: int = 2
    batch: int = 4


MAKEMORE: Final = MakemoreSizes()
LENET: Final = LenetSizes()
GPT: Final = GptSizes()


def _makemore(element: ElementType) -> Prepared:
    """The makemore MLP: embed a context of characters, concatenate, tanh, logits."""
    from topos.nn import Activation, Embedding, Linear, Sequential, cross_entropy

    vocab, context, dim, hidden, batch = MAKEMORE.vocab, MAKEMORE.context, MAKEMORE.dim, MAKEMORE.hidden, MAKEMORE.batch
    tape = Tape(element)
    init = xavier(21, element)
    embedding = Embedding.init(tape, vocab, dim, init)
    head = Sequential(Linear.init(tape, context * dim, hidden, init), Activation.TANH, Linear.init(tape, hidden, vocab, init))
    tokens = tape.input(Tensor.selection([0] * (batch * context), vocab, element))
    targets = tape.input(Tensor.selection([0] * batch, vocab, element))
    logits = head(embedding(tokens).reshape((batch, context * dim)))
    loss = cross_entropy(logits, targets)
    network = tape.seal()

    def feeds(step: int) -> dict[Symbol, TensorLike]:
        return {
            tokens.symbol: Tensor.selection(index_draws(22, step, batch * context, vocab), vocab, element),
            targets.symbol: Tensor.selection(index_draws(23, step, batch, vocab), vocab, element),
        }

    return Prepared(network, (loss.symbol, logits.symbol), feeds)


def _lenet(element: ElementType) -> Prepared:
    """LeNet-5's layers: conv 5x5 (pad 2), relu, pool, conv 5x5, relu, pool, three dense."""
    from topos.nn import Activation, Conv2d, Linear, MaxPool, Sequential, cross_entropy

    side, (c1, c2), (d1, d2), classes, batch = LENET.image, LENET.channels, LENET.dense, LENET.classes, LENET.batch
    tape = Tape(element)
    init = xavier(31, element)
    features = Sequential(
        Conv2d.init(tape, 1, c1, 5, init, padding=2), Activation.RELU, MaxPool(2),
        Conv2d.init(tape, c1, c2, 5, init), Activation.RELU, MaxPool(2),
    )  # fmt: skip
    flat = c2 * ((side // 2 - 4) // 2) ** 2
    head = Sequential(
        Linear.init(tape, flat, d1, init), Activation.RELU,
        Linear.init(tape, d1, d2, init), Activation.RELU,
        Linear.init(tape, d2, classes, init),
    )  # fmt: skip
    images = tape.input(np.zeros((batch, 1, side, side)))
    labels = tape.input(Tensor.selection([0] * batch, classes, element))
    maps = features(images)
    logits = head(maps.reshape((batch, flat)))
    loss = cross_entropy(logits, labels)
    network = tape.seal()

    def feeds(step: int) -> dict[Symbol, TensorLike]:
        return {
            images.symbol: uniform_draws(32, step, (batch, 1, side, side), 0.0, 1.0),
            labels.symbol: Tensor.selection(index_draws(33, step, batch, classes), classes, element),
        }

    return Prepared(network, (loss.symbol, logits.symbol), feeds)


def _gpt(element: ElementType) -> Prepared:
    """The small GPT of the transformer facades: token and position tables, pre-norm blocks
    (LayerNorm, fused-qkv causal attention, LayerNorm, tanh-GELU MLP of 4·d), tied head."""
    from topos.nn import (
        Activation,
        Block,
        Embedding,
        LayerNorm,
        Mlp,
        MultiHeadAttention,
        PositionTable,
        TransformerLm,
        cross_entropy,
    )

    vocab, length, dim, heads, layers, batch = GPT.vocab, GPT.length, GPT.dim, GPT.heads, GPT.layers, GPT.batch
    tape = Tape(element)
    init = xavier(41, element)
    blocks = [
        Block(
            LayerNorm.init(tape, dim, 1e-5),
            MultiHeadAttention.init(tape, dim, heads, init),
            LayerNorm.init(tape, dim, 1e-5),
            Mlp(tape, [dim, 4 * dim, dim], Activation.GELU_TANH, init),
        )
        for _ in range(layers)
    ]
    model = TransformerLm(
        Embedding.init(tape, vocab, dim, init), PositionTable.init(tape, length, dim, init), blocks, LayerNorm.init(tape, dim, 1e-5)
    )
    rows = batch * length
    tokens = tape.input(Tensor.selection([0] * rows, vocab, element))
    targets = tape.input(Tensor.selection([0] * rows, vocab, element))
    causal = np.where(np.triu(np.ones((length, length)), 1) > 0, -np.inf, 0.0)
    positions = tape.leaf(Tensor.selection(list(range(length)), length, element))
    logits = model(tokens, batch, tape.leaf(Tensor(causal, element)), positions)
    loss = cross_entropy(logits, targets)
    network = tape.seal()

    def feeds(step: int) -> dict[Symbol, TensorLike]:
        # The targets are the tokens shifted by one inside each sequence, as in training.
        stream = index_draws(42, step, batch * (length + 1), vocab).reshape(batch, length + 1)
        return {
            tokens.symbol: Tensor.selection(stream[:, :-1].reshape(-1), vocab, element),
            targets.symbol: Tensor.selection(stream[:, 1:].reshape(-1), vocab, element),
        }

    return Prepared(network, (loss.symbol, logits.symbol), feeds)


def _describe(sizes: MakemoreSizes | LenetSizes | GptSizes) -> str:
    return ", ".join(f"{field.name} {getattr(sizes, field.name)}" for field in attrs.fields(type(sizes)))


JOBS: Final[tuple[Job, ...]] = (
    Job(
        "every-op",
        20,
        "every opcode and every map on special values (zeros, infinities, NaN, subnormals, extremes, "
        "the maps' edges) and per-step draws; forward values, gradients, SGD",
        _every_op,
    ),
    Job("makemore", 20, f"makemore MLP: {_describe(MAKEMORE)}", _makemore),
    Job("lenet", 20, f"LeNet-5 layers: {_describe(LENET)}", _lenet),
    Job("gpt", 20, f"GPT (TransformerLm, tied head): {_describe(GPT)}", _gpt),
)
"""The named digest jobs, each computed in every element of :data:`topos.digest.ELEMENTS`."""


# --------------------------------------------------------------------------- the table


def _job(name: str) -> Job:
    for job in JOBS:
        if job.name == name:
            return job
    raise InvalidArgumentError(f"no digest job {name!r} (jobs: {', '.join(j.name for j in JOBS)})")


def compute(names: Sequence[str] | None = None) -> dict[str, Any]:
    """The digest table of ``names`` (default every job), in every element, as written to JSON.

    Example:
        >>> sorted(compute(["makemore"])["jobs"]["makemore"])
        ['digests', 'sizes', 'steps']
    """
    jobs = JOBS if names is None else tuple(_job(name) for name in names)
    table: dict[str, Any] = {"format": FORMAT, "regenerate": "python -m topos.digest --write", "jobs": {}}
    for job in jobs:
        digests = {label: job.digest(element) for label, element in ELEMENTS.items()}
        table["jobs"][job.name] = {"steps": job.steps, "sizes": job.sizes, "digests": digests}
    return table


def read_table(path: Path = TABLE) -> dict[str, Any]:
    """The committed table (``topos/assets/digests.json`` unless told otherwise).

    Example:
        >>> sorted(read_table()["jobs"])
        ['every-op', 'gpt', 'lenet', 'makemore']
    """
    try:
        table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ToposError(f"cannot read the digest table {path}: {error}") from None
    return table


def write_table(path: Path = TABLE, names: Sequence[str] | None = None) -> dict[str, Any]:
    """Recompute the jobs (``names``, default all) and write the table; returns it.

    Keys are sorted, so a rewrite diffs line by line. With ``names``, the other jobs keep the
    entries ``path`` already holds (when it holds a table of this ``FORMAT``).
    """
    table = compute(names)
    if names is not None and path.is_file():
        kept = read_table(path)
        if kept.get("format") == FORMAT:
            table["jobs"] = {**kept.get("jobs", {}), **table["jobs"]}
    path.write_text(json.dumps(table, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return table


def check(path: Path = TABLE, names: Sequence[str] | None = None) -> list[str]:
    """Recompute the committed entries (``names``, default all); one line per mismatch.

    A job whose step count or format differs from the table's is a mismatch too: the
    committed digest covers other steps, so comparing bits would say nothing.

    Example:
        >>> check(names=["makemore"])
        []
    """
    committed = read_table(path)
    wanted = list(committed.get("jobs", {})) if names is None else list(names)
    problems: list[str] = []
    if committed.get("format") != FORMAT:
        problems.append(f"table format {committed.get('format')!r}, this code hashes {FORMAT!r}")
        return problems
    known = {job.name: job for job in JOBS}
    for name in wanted:
        entry = committed["jobs"].get(name)
        if entry is None:
            problems.append(f"{name}: not in the table")
            continue
        job = known.get(name)
        if job is None:
            problems.append(f"{name}: in the table but not in topos.digest.JOBS")
            continue
        if entry.get("steps") != job.steps:
            problems.append(f"{name}: the table has {entry.get('steps')} steps, the job {job.steps}")
            continue
        for label, element in ELEMENTS.items():
            expected = entry.get("digests", {}).get(label)
            actual = job.digest(element)
            if actual != expected:
                problems.append(f"{name} {label}: computed {actual}, committed {expected}")
    missing = sorted(set(known) - set(committed["jobs"])) if names is None else []
    problems.extend(f"{name}: not in the table" for name in missing)
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m topos.digest --write | --check [--job NAME ...] [--table PATH]``; the exit status.

    Exit status: 0 every entry matches (or the table was written), 1 a mismatch, 2 a usage
    error, 3 the table could not be read or written.

    Example:
        >>> main(["--check", "--job", "makemore"])  # doctest: +ELLIPSIS
        checked 1 job(s) x 3 elements against .../digests.json: every entry matches (... s)
        0
    """
    parser = argparse.ArgumentParser(
        prog="python -m topos.digest",
        description="Digests of exact training runs: recompute the committed table, or rewrite it.",
        epilog="Exit status: 0 every entry matches (or the table was written), 1 a mismatch, 2 usage, "
        "3 the table could not be read or written.",
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true", help="recompute every entry of the table; exit 1 on any mismatch")
    action.add_argument("--write", action="store_true", help="recompute every job and rewrite the table")
    parser.add_argument(
        "--job", nargs="+", metavar="NAME", choices=[job.name for job in JOBS],
        help="only these jobs (--write keeps the other entries)",
    )  # fmt: skip
    parser.add_argument(
        "--table", type=Path, default=TABLE, metavar="PATH",
        help=f"the table to check or write (default {TABLE}); --check one published elsewhere to compare with it",
    )  # fmt: skip
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        if args.write:
            table = write_table(args.table, args.job)
            for name in args.job or table["jobs"]:
                for label, digest in table["jobs"][name]["digests"].items():
                    print(f"{name:9} {label:4} {digest}")
            print(f"wrote {args.table} ({time.perf_counter() - start:.1f} s)")
            return 0
        problems = check(args.table, args.job)
        checked = len(args.job or read_table(args.table).get("jobs", {}))
    except ToposError as error:
        # The detail, without the caller's line ToposError prefixes: the message names the table.
        print(f"topos.digest: {error.detail or error}", file=sys.stderr)
        return 3
    except OSError as error:
        print(f"topos.digest: cannot write {args.table}: {error.strerror}", file=sys.stderr)
        return 3
    for line in problems:
        print(f"MISMATCH {line}")
    verdict = f"{len(problems)} mismatch(es)" if problems else "every entry matches"
    print(f"checked {checked} job(s) x {len(ELEMENTS)} elements against {args.table}: {verdict} ({time.perf_counter() - start:.1f} s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
