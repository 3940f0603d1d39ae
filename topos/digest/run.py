"""How a run becomes a digest: the feeds a step draws, and the bytes hashed in which order.

Contract: :func:`digest_run` and the draws (:func:`uniform_draws`, :func:`index_draws`,
:func:`bit_draws`) as :mod:`topos.digest` states them; the constants a digest hashes first
(:data:`FORMAT`, the default :data:`RATE`, the :data:`ELEMENTS` by name, :data:`NAN_MODES`).
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

import numpy as np

from topos.errors import BackwardTargetError, InvalidArgumentError
from topos.init import splitmix64
from topos.ir.element import ElementType, bf16, f32, f64
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.numerics import Numerics
from topos.stages.gradient import gradient
from topos.tensor import Tensor, TensorLike

__all__ = [
    "ELEMENTS",
    "FORMAT",
    "NAN_MODES",
    "RATE",
    "bit_draws",
    "digest_run",
    "index_draws",
    "uniform_draws",
]

FORMAT: Final = "topos-digest-1"
"""The first bytes hashed: a change to what is hashed or how changes this name."""

RATE: Final = 2.0**-6
"""The default SGD rate: a power of two, so ``g * rate`` is exact in every element (short of
underflow) and the rate means the same number in f32, f64 and bf16."""

ELEMENTS: Final[dict[str, ElementType]] = {"f32": f32, "f64": f64, "bf16": bf16}
"""The elements every job is digested in, by the names the table uses."""

Array = np.ndarray[Any, Any]
Feeds = Callable[[int], Mapping[Symbol, TensorLike]]

_TWO_TO_MINUS_53: Final = 1.0 / 9007199254740992.0
UNSIGNED: Final = {1: "<u1", 2: "<u2", 4: "<u4", 8: "<u8"}
"""Little-endian unsigned dtypes by width: bits are hashed through these, so the stream is
the same on a big-endian machine (the jobs read them for their special values too)."""


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
    values = raw.astype(UNSIGNED[width]).view(element.dtype)
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
    return head + np.ascontiguousarray(bits).astype(UNSIGNED[bits.dtype.itemsize], copy=False).tobytes()


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
