"""Per-map envelopes of the StableHLO reference interpreter and XLA:CPU against the portable maps.

Run: ``python benchmarks/map_envelopes.py [--quick]`` from the repository root (about a
minute on one core; ``--quick`` about 25 s, most of it the thread check).

Contract:
- Cases: every :class:`~topos.ir.ops.MapOperation`, named as in
  :data:`topos.kernels.libm.NAMES`, and ``pow`` (the ``Powf`` opcode), each in f32, f64
  and bf16 (:data:`CASES`, :data:`ELEMENTS`). A bf16 map computes in f32 and rounds once to
  bf16 on every road.
- :func:`sample` gives one case's arguments: a fixed, deterministic array built only from
  PCG64 uniform draws, ``ldexp``, IEEE products, roundings and bit offsets (no libm call, so
  the same bits on every machine), over the map's useful range and its hard regions (tiny
  arguments, huge sin/cos arguments and arguments next to multiples of pi/2, near overflow
  and near the smallest normal result, pow near 1 with large exponents and negative bases
  with integer exponents). Every argument is a normal number (XLA:CPU flushes denormals,
  inputs included) and :func:`prepare` drops the few lanes whose exact result is not a
  normal number. ``count=None`` on bf16 takes every normal bf16 argument of the domain.
- Roads: (a) ``Network.forward``, the interpreter under ``Numerics.EXACT`` (the portable
  maps): the bits the others are measured against; (b)
  :func:`topos.xla.evaluate_module`, the StableHLO reference interpreter bundled
  with jaxlib, always in a subprocess (:func:`run_worker`: it can kill its process); (c)
  :func:`topos.xla.run_module`, XLA:CPU with the road's compiler options, in this
  process. Each case is one emitted module (``emit_network`` of the one-map graph).
- Error: :func:`ulps` is ``|road - exact| / ulp``, the ulp of the element's format in the
  exact result's binade (floored at the smallest normal's): 0 where the bits agree or both
  are NaN, infinite where one side is not finite and the other is, or the infinities differ.
- Truth: on an evenly spaced subsample, each road's error against mpmath (:func:`true_value`,
  128 bits, more for huge sin/cos arguments) in ulps of the element at the true value.
- Threads (:func:`thread_check`): each case over :data:`LARGE` arguments (drawn from its sample
  in a fixed order) on XLA:CPU in two subprocesses, one pinned to one CPU and one to two
  (XLA:CPU sizes its thread pool from the process's CPU affinity). Both also get
  ``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=N``, which
  does not set the count: XLA has no such flag, the word without dashes passes silently, and
  the pool is the same size with and without it (measured). Reports each run's max ulps,
  whether the two runs' bits agree, and whether every lane of the one-thread run equals the
  small run's lane for the same argument.
- Flush band (:data:`FLUSH_BAND`): every f32 argument where erf_derivative's result is normal
  but the emitted ``exp(-x*x)`` is subnormal, on both roads; XLA:CPU's zeros are counted.
- :func:`main` prints markdown tables to stdout and writes only under a temporary folder.
  ``tests/test_map_envelopes.py`` holds the envelopes this measures, and
  ``docs/acceleration.md`` ("Numerics: what agrees with what") quotes the table.

Example (a tiny sample, on XLA:CPU only)::

    >>> measured = measure_sample("exp", "f32", sample("exp", "f32", 64), roads=("xla",))
    >>> measured.lanes > 0, measured.road_ulps["xla"] < 16
    (True, True)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import ml_dtypes
import mpmath  # no type information: pyproject.toml tells mypy so
import numpy as np

from topos import Network, Symbol, Tape, bf16, f32, f64, xla
from topos.ir.element import ElementType
from topos.ir.ops import MapOperation
from topos.kernels import libm
from topos.stages.emission import emit_network

Array = np.ndarray[Any, Any]

OPERATIONS: Final[dict[str, MapOperation]] = {name: operation for operation, name in libm.NAMES.items()}
"""Each map by its libm name."""

CASES: Final[tuple[str, ...]] = (*OPERATIONS, "pow")
"""Every map, then ``pow``."""

ELEMENTS: Final[dict[str, ElementType]] = {"f32": f32, "f64": f64, "bf16": bf16}

FULL: Final = 200_000
"""Arguments per case in the full run (bf16 maps take every argument of their domain)."""

LARGE: Final = 100_003
"""Arguments per case in the thread check (odd, so no vector width divides it)."""

THREAD_FLAGS: Final = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads={threads}"
"""``XLA_FLAGS`` of the thread check's workers."""

WORKER_ROADS: Final = ("evaluate", "xla")


@dataclass(frozen=True)
class Format:
    """What the samples and the ulps need of one element's format (and its map thresholds)."""

    precision: int  # significand bits, the hidden one included
    emin: int  # exponent of the smallest normal
    emax: int  # exponent of the largest finite
    exp_high: float  # exp(x) finite below this
    exp_low: float  # exp(x) normal above this
    erf_derivative_high: float  # exp(-x*x) normal below this |x| (so 2/sqrt(pi) exp(-x*x) too)
    saturation: float  # tanh(x) is 1 in this format beyond about this


# Thresholds are written out (not computed with math.log) so the samples never touch a libm.
FORMATS: Final[dict[str, Format]] = {
    "f32": Format(24, -126, 127, 88.7228, -87.33, 9.345, 9.1),
    "f64": Format(53, -1022, 1023, 709.7827, -708.39, 26.615, 19.1),
    "bf16": Format(8, -126, 127, 88.5, -87.0, 9.34, 4.0),
}

Recipe = Callable[[np.random.Generator, Format, int], Array]


# --------------------------------------------------------------------------- samples


def _uniform(low: float, high: float) -> Recipe:
    def draw(rng: np.random.Generator, form: Format, count: int) -> Array:
        values: Array = rng.uniform(low, high, count)
        return values

    return draw


def _scaled(low: Callable[[Format], float], high: Callable[[Format], float]) -> Recipe:
    """Uniform over a range that depends on the format."""

    def draw(rng: np.random.Generator, form: Format, count: int) -> Array:
        values: Array = rng.uniform(low(form), high(form), count)
        return values

    return draw


def _binades(low: Callable[[Format], int], high: Callable[[Format], int], signed: bool, offset: float = 0.0) -> Recipe:
    """``offset + m * 2**e``: ``m`` uniform in [1, 2), ``e`` uniform in ``[low, high]`` (one
    binade as likely as another), with a random sign when ``signed``."""

    def draw(rng: np.random.Generator, form: Format, count: int) -> Array:
        mantissa = rng.uniform(1.0, 2.0, count)
        exponent = rng.integers(low(form), high(form) + 1, count)
        values: Array = np.ldexp(mantissa, exponent)
        if signed:
            values = values * rng.choice(np.array([-1.0, 1.0]), count)
        return values + offset

    return draw


def _near_half_pi(rng: np.random.Generator, form: Format, count: int) -> Array:
    """Multiples of pi/2 rounded to the format, and their neighbours (sin or cos near 0)."""
    top = 20 if form.precision <= 24 else 40
    k = rng.integers(1, 2**top, count).astype(np.float64)
    values: Array = k * (math.pi / 2) * rng.choice(np.array([-1.0, 1.0]), count)
    return values


def _pow_general(rng: np.random.Generator, form: Format, count: int) -> Array:
    """Positive bases over many binades, exponents keeping ``b * log2(a)`` within the
    normal range (``|log2(a)| < |k| + 1`` for ``a = m * 2**k``)."""
    span = 20 if form.precision <= 24 else 200
    reach = (form.emax - 8) * 0.95
    k = rng.integers(-span, span + 1, count)
    a = np.ldexp(rng.uniform(1.0, 2.0, count), k)
    b = rng.uniform(-1.0, 1.0, count) * (reach / (np.abs(k) + 1.0))
    return np.stack([a, b])


def _pow_near_one(rng: np.random.Generator, form: Format, count: int) -> Array:
    """``a = 1 +- m * 2**-e`` with ``b`` near ``w * 2**e``: ``|b * ln(a)|`` up to 0.9 of the
    overflow threshold, the region where ``exp(b * log(a))`` loses the most."""
    e = rng.integers(5, form.precision + 1, count)
    a = 1.0 + rng.choice(np.array([-1.0, 1.0]), count) * np.ldexp(rng.uniform(1.0, 2.0, count), -e)
    b = rng.choice(np.array([-1.0, 1.0]), count) * np.ldexp(rng.uniform(0.25, form.exp_high * 0.45, count), e)
    return np.stack([a, b])


def _pow_integers(rng: np.random.Generator, form: Format, count: int) -> Array:
    """Negative and positive bases with integer exponents (the real branch of pow)."""
    span = 30 if form.precision <= 24 else 300
    a = rng.uniform(0.5, 10.0, count) * rng.choice(np.array([-1.0, 1.0]), count)
    b = rng.integers(-span, span + 1, count).astype(np.float64)
    b = np.where(b == 0, 1.0, b)
    return np.stack([a, b])


def _pow_common(rng: np.random.Generator, form: Format, count: int) -> Array:
    """The exponents programs write: 0.5, 2, 3, -1, -0.5, 1/3 on positive bases."""
    a = np.ldexp(rng.uniform(1.0, 2.0, count), rng.integers(-30, 31, count))
    b = rng.choice(np.array([0.5, 2.0, 3.0, -1.0, -0.5, 1.0 / 3.0]), count)
    return np.stack([a, b])


def _tiny(form: Format) -> int:
    return form.emin


RECIPES: Final[dict[str, tuple[Recipe, ...]]] = {
    "exp": (
        _scaled(lambda f: f.exp_low, lambda f: f.exp_high),
        _binades(_tiny, lambda f: -1, signed=True),
        _scaled(lambda f: f.exp_high - 1.0, lambda f: f.exp_high),
        _scaled(lambda f: f.exp_low, lambda f: f.exp_low + 1.0),
    ),
    "log": (
        _binades(_tiny, lambda f: f.emax - 1, signed=False),
        _binades(lambda f: -f.precision, lambda f: -4, signed=True, offset=1.0),
        _uniform(0.0, 10.0),
    ),
    "sqrt": (_binades(_tiny, lambda f: f.emax - 1, signed=False), _uniform(0.0, 100.0)),
    "tanh": (
        _binades(_tiny, lambda f: 4, signed=True),
        _uniform(-10.0, 10.0),
        _scaled(lambda f: f.saturation - 2.0, lambda f: f.saturation + 4.0),
    ),
    "sin": (
        _uniform(-2 * math.pi, 2 * math.pi),
        _uniform(-1e4, 1e4),
        _binades(_tiny, lambda f: f.emax - 1, signed=True),
        _near_half_pi,
    ),
    "log1p": (
        _binades(lambda f: -f.precision, lambda f: -1, signed=False, offset=-1.0),
        _binades(_tiny, lambda f: -1, signed=True),
        _binades(lambda f: 0, lambda f: f.emax - 1, signed=False),
        _uniform(-0.45, -0.3),  # XLA's f64 log1p loses bits just above 1/sqrt(2) - 1
    ),
    "expm1": (
        _binades(_tiny, lambda f: -1, signed=True),
        _scaled(lambda f: -30.0, lambda f: f.exp_high),
        _scaled(lambda f: f.exp_high - 1.0, lambda f: f.exp_high),
        _uniform(-1.0, 1.0),
    ),
    "erf": (_binades(_tiny, lambda f: 2, signed=True), _uniform(-6.0, 6.0)),
    "erf_derivative": (
        _scaled(lambda f: -f.erf_derivative_high, lambda f: f.erf_derivative_high),
        _binades(_tiny, lambda f: 3, signed=True),
        _scaled(lambda f: f.erf_derivative_high - 1.0, lambda f: f.erf_derivative_high),
    ),
    "atan": (_binades(_tiny, lambda f: f.emax - 1, signed=True), _uniform(-4.0, 4.0)),
    "pow": (_pow_general, _pow_near_one, _pow_integers, _pow_common),
}
RECIPES["cos"] = RECIPES["sin"]

_DOMAIN: Final[dict[str, Callable[[Array, Format], Array]]] = {
    "exp": lambda x, f: (x > f.exp_low) & (x < f.exp_high),
    "log": lambda x, f: x > 0,
    "sqrt": lambda x, f: x > 0,
    "log1p": lambda x, f: x > -1,
    "expm1": lambda x, f: x < f.exp_high,
    "erf_derivative": lambda x, f: np.abs(x) < f.erf_derivative_high,
}


def _seed(case: str, dtype: str) -> int:
    """A seed per case and format that does not depend on Python's hash randomization."""
    return sum((i + 1) * ord(c) for i, c in enumerate(f"{case}/{dtype}"))


def _normal(values: Array, form: Format) -> Array:
    with np.errstate(invalid="ignore"):
        magnitude = np.abs(values.astype(np.float64))
        return np.isfinite(magnitude) & (magnitude >= math.ldexp(1.0, form.emin))


def _every_bf16(case: str, form: Format) -> Array:
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    values = bits.view(ml_dtypes.bfloat16)
    with np.errstate(invalid="ignore"):
        wide = values.astype(np.float64)
    keep = _normal(wide, form)
    if case in _DOMAIN:
        keep &= _DOMAIN[case](wide, form)
    kept: Array = values[keep]
    return kept


def sample(case: str, dtype: str, count: int | None) -> Array:
    """The arguments of ``case`` in ``dtype`` (rows ``a, b`` for ``pow``, else one row), at most
    about ``count`` lanes after rounding and de-duplication; ``count=None`` on bf16 (not pow)
    takes every normal bf16 argument of the domain.

    Example:
        >>> x = sample("sin", "f32", 32)
        >>> x.dtype.name, x.shape[0], bool(np.all(np.isfinite(x)))
        ('float32', 1, True)
    """
    element = ELEMENTS[dtype]
    form = FORMATS[dtype]
    if count is None:
        if dtype != "bf16" or case == "pow":
            raise ValueError("count=None is for bf16 maps only")
        return _every_bf16(case, form)[None, :]
    rng = np.random.default_rng(_seed(case, dtype))
    recipes = RECIPES[case]
    share = -(-count // len(recipes))
    rows = []
    for recipe in recipes:
        drawn = np.asarray(recipe(rng, form, share), dtype=np.float64)
        rows.append(drawn.reshape(-1, share))
    wide = np.concatenate(rows, axis=1)
    stored = wide.astype(element.dtype)
    if case in ("sin", "cos"):
        # The neighbours of the last recipe's multiples of pi/2: bit offsets -2..2 (same sign).
        near = stored[:, -share:]
        offsets = rng.integers(-2, 3, share).astype(np.int64)
        unsigned = np.dtype(f"u{element.dtype.itemsize}")
        moved = (near.view(unsigned).astype(np.int64) + offsets).astype(unsigned).view(element.dtype)
        stored = np.concatenate([stored[:, :-share], moved], axis=1)
    keep = np.all(_normal(stored, form), axis=0)
    if case in _DOMAIN:
        keep &= _DOMAIN[case](stored[0].astype(np.float64), form)
    if case == "pow":
        a, b = stored.astype(np.float64)
        # A negative base needs an integer exponent (else the result is NaN on every road).
        keep &= (a > 0) | (b == np.floor(b))
    stored = stored[:, keep]
    # Drop repeated arguments, keeping the first of each (order preserved).
    unsigned = np.dtype(f"u{element.dtype.itemsize}")
    keys = stored.view(unsigned)
    _, first = np.unique(keys.T, axis=0, return_index=True) if stored.shape[0] > 1 else np.unique(keys[0], return_index=True)
    stored = stored[:, np.sort(first)]
    chosen: Array = stored[:, :count]
    return chosen


# --------------------------------------------------------------------------- graphs and errors


def record(case: str, element: ElementType, arguments: Array) -> tuple[Network, Symbol]:
    """The one-map graph of ``case`` over ``arguments`` (inputs, in storage dtype)."""
    if case == "pow":
        a, b = arguments[0], arguments[1]
        return Tape.record(lambda t: t.input(a).powf(t.input(b)), element=element)
    operation = OPERATIONS[case]
    x = arguments[0]
    return Tape.record(lambda t: t.input(x).map(operation), element=element)


def exact(network: Network, root: Symbol) -> Array:
    """Road (a): the interpreter's bits."""
    result: Array = network.forward(network.parameters(), {}).of(root).numpy()
    return result


def ulp_of(values: Array, dtype: str) -> Array:
    """The ulp of ``dtype``'s format in the binade of each of ``values`` (float64), floored at
    the smallest normal's.

    Example:
        >>> ulp_of(np.array([1.0, 1.5, 0.0]), "f32").tolist() == [2.0**-23, 2.0**-23, 2.0**-149]
        True
    """
    form = FORMATS[dtype]
    with np.errstate(invalid="ignore"):
        _, exponent = np.frexp(values)
    exponent = np.where((values == 0) | ~np.isfinite(values), form.emin, exponent - 1)
    floored = np.maximum(exponent, form.emin) - (form.precision - 1)
    result: Array = np.ldexp(1.0, floored)
    return result


def ulps(got: Array, want: Array, dtype: str) -> Array:
    """``|got - want|`` in ulps of ``want`` (see the module's contract), per lane.

    Example:
        >>> want = np.array([1.0, 2.0, np.inf, np.nan], np.float32)
        >>> got = np.array([np.nextafter(np.float32(1), np.float32(2)), 2.0, 3.0, np.nan], np.float32)
        >>> ulps(got, want, "f32").tolist()
        [1.0, 0.0, inf, 0.0]
    """
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    unsigned = np.dtype(f"u{got.dtype.itemsize}")
    with np.errstate(invalid="ignore", over="ignore"):
        same = (np.ascontiguousarray(got).view(unsigned) == np.ascontiguousarray(want).view(unsigned)) | (
            np.isnan(g) & np.isnan(w)
        )
        finite = np.isfinite(g) & np.isfinite(w)
        distance = np.abs(g - w) / ulp_of(w, dtype)
    result: Array = np.where(same, 0.0, np.where(finite, distance, np.inf))
    return result


def true_value(case: str, arguments: Sequence[float]) -> Any:
    """The true value of ``case`` at ``arguments`` as an mpmath number (128 bits of working
    precision, plus the argument's exponent for sin and cos so the reduction is exact)."""
    x = mpmath.mpf(arguments[0])
    extra = max(0, int(mpmath.frexp(x)[1])) if case in ("sin", "cos") and x != 0 else 0
    with mpmath.workprec(128 + extra):
        if case == "pow":
            return mpmath.power(x, mpmath.mpf(arguments[1]))
        if case == "erf_derivative":
            return 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-x * x)
        function: Callable[[Any], Any] = {
            "exp": mpmath.exp, "log": mpmath.log, "sqrt": mpmath.sqrt, "tanh": mpmath.tanh,
            "sin": mpmath.sin, "cos": mpmath.cos, "log1p": mpmath.log1p, "expm1": mpmath.expm1,
            "erf": mpmath.erf, "atan": mpmath.atan,
        }[case]  # fmt: skip
        return function(x)


def truth_ulps(got: Array, truths: Sequence[Any], dtype: str) -> float:
    """The largest ``|got - truth|`` over the lanes, in ulps of ``dtype`` at the truth."""
    form = FORMATS[dtype]
    worst = 0.0
    for value, truth in zip(got.astype(np.float64).tolist(), truths, strict=True):
        if not math.isfinite(value):
            return math.inf
        with mpmath.workprec(256):
            exponent = int(mpmath.frexp(truth)[1]) - 1 if truth != 0 else form.emin
            ulp = mpmath.ldexp(1, max(exponent, form.emin) - (form.precision - 1))
            worst = max(worst, float(abs(mpmath.mpf(value) - truth) / ulp))
    return worst


# --------------------------------------------------------------------------- workers


def bits(array: Array) -> Array:
    contiguous = np.ascontiguousarray(array)
    unsigned: Array = contiguous.view(f"u{contiguous.dtype.itemsize}")
    return unsigned


@dataclass(frozen=True)
class Staged:
    """One emitted module and its argument arrays, ready for a worker."""

    key: str
    dtype: str
    text: str
    arrays: tuple[Array, ...]


def stage(folder: Path, modules: Sequence[Staged]) -> None:
    """Write ``modules`` for :func:`run_worker` (arguments as raw bits: npy has no bf16)."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for module in modules:
        (folder / f"{module.key}.mlir").write_text(module.text, encoding="utf-8")
        for i, array in enumerate(module.arrays):
            np.save(folder / f"{module.key}.a{i}.npy", bits(array))
        manifest.append({"key": module.key, "dtype": module.dtype, "arity": len(module.arrays)})
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def run_worker(folder: Path, road: str, tag: str, cpus: Sequence[int] | None = None, flags: str | None = None, timeout: float = 600.0) -> dict[str, Array]:
    """Run every staged module of ``folder`` on ``road`` ("evaluate" or "xla") in a fresh
    Python process (pinned to ``cpus``, with ``XLA_FLAGS=flags``); the results by key.

    Raises ``RuntimeError`` with the worker's stderr when it fails (a crash included).
    """
    environment = dict(os.environ)
    if flags is not None:
        environment["XLA_FLAGS"] = flags
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", road, "--folder", str(folder), "--tag", tag]
    if cpus is not None:
        command += ["--cpus", ",".join(str(c) for c in cpus)]
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the {road} worker failed ({done.returncode}):\n{done.stderr[-3000:]}")
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    results: dict[str, Array] = {}
    for entry in manifest:
        key = entry["key"]
        dtype = ELEMENTS[entry["dtype"]].dtype
        results[key] = np.load(folder / f"{key}.{tag}.npy").view(dtype)
    return results


def worker_report(folder: Path, tag: str) -> dict[str, Any]:
    """What a worker said about itself (CPUs, threads, XLA_FLAGS)."""
    report: dict[str, Any] = json.loads((folder / f"worker.{tag}.json").read_text(encoding="utf-8"))
    return report


def _worker(road: str, folder: Path, tag: str, cpus: Sequence[int] | None) -> None:
    if cpus is not None:
        os.sched_setaffinity(0, set(cpus))  # before XLA:CPU sizes its thread pool
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest:
        key = entry["key"]
        dtype = ELEMENTS[entry["dtype"]].dtype
        text = (folder / f"{key}.mlir").read_text(encoding="utf-8")
        arrays = [np.load(folder / f"{key}.a{i}.npy").view(dtype) for i in range(entry["arity"])]
        outputs = xla.evaluate_module(text, *arrays) if road == "evaluate" else xla.run_module(text, *arrays)
        np.save(folder / f"{key}.{tag}.npy", bits(outputs[0]))
    report = {
        "cpus": sorted(os.sched_getaffinity(0)),
        "threads": len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None,
        "xla_flags": os.environ.get("XLA_FLAGS"),
    }
    (folder / f"worker.{tag}.json").write_text(json.dumps(report), encoding="utf-8")


# --------------------------------------------------------------------------- measuring


@dataclass
class Measured:
    """One case in one format: lanes, each road's max ulps against the interpreter (and how
    many lanes differ), the worst argument per road, and max ulps against mpmath."""

    case: str
    dtype: str
    lanes: int
    dropped: int
    exact_bits: Array
    arguments: Array
    text: str
    road_ulps: dict[str, float] = field(default_factory=dict)
    road_differing: dict[str, int] = field(default_factory=dict)
    worst: dict[str, tuple[tuple[float, ...], float, float]] = field(default_factory=dict)
    truth: dict[str, float] = field(default_factory=dict)
    threads_ulps: dict[str, float] = field(default_factory=dict)
    threads_agree: bool | None = None
    threads_differing: int = 0
    large_matches_small: bool | None = None


def key_of(case: str, dtype: str) -> str:
    return f"{case}.{dtype}"


def prepare(case: str, dtype: str, arguments: Array) -> Measured:
    """Record, emit and interpret one case; drop lanes whose exact result is not normal."""
    element = ELEMENTS[dtype]
    form = FORMATS[dtype]
    network, root = record(case, element, arguments)
    want = exact(network, root)
    keep = _normal(want, form)
    dropped = int(np.count_nonzero(~keep))
    if dropped:
        arguments = np.ascontiguousarray(arguments[:, keep])
        network, root = record(case, element, arguments)
        want = exact(network, root)
    text = emit_network(network, [root])
    signature = xla.signature(text)
    if [dtype_ for _, dtype_ in signature.inputs] != [element.dtype] * arguments.shape[0]:
        raise AssertionError(f"{case} {dtype}: the module takes {signature.inputs}")
    return Measured(case, dtype, int(want.size), dropped, want, arguments, text)


def record_road(measured: Measured, road: str, got: Array) -> None:
    """Fold one road's results into ``measured``."""
    want = measured.exact_bits
    errors = ulps(got, want, measured.dtype)
    measured.road_ulps[road] = float(errors.max()) if errors.size else 0.0
    measured.road_differing[road] = int(np.count_nonzero(errors))
    if errors.size:
        i = int(np.argmax(errors))
        argument = tuple(float(v) for v in measured.arguments[:, i].astype(np.float64))
        measured.worst[road] = (argument, float(np.asarray(got[i], np.float64)), float(np.asarray(want[i], np.float64)))


def measure_sample(case: str, dtype: str, arguments: Array, roads: Iterable[str] = ("xla",)) -> Measured:
    """Roads (a) and, in this process, XLA:CPU (c) over ``arguments``: for quick looks and
    doctests (the reference interpreter needs :func:`run_worker`)."""
    measured = prepare(case, dtype, arguments)
    for road in roads:
        if road != "xla":
            raise ValueError("measure_sample runs only the xla road in-process")
        record_road(measured, "xla", xla.run_module(measured.text, *measured.arguments)[0])
    return measured


FLUSH_BAND: Final = (9.3454, 9.3518)
"""f32 ``|x|`` where erf_derivative's result is normal but the emitted ``exp(-x*x)`` is not."""


def flush_band_arguments() -> Array:
    """Every f32 in :data:`FLUSH_BAND`, both signs (one row)."""
    low, high = (int(np.float32(v).view(np.uint32)) for v in FLUSH_BAND)
    positive = np.arange(low, high + 1, dtype=np.uint32).view(np.float32)
    both: Array = np.concatenate([positive, -positive])[None, :]
    return both


@dataclass
class Report:
    """What :func:`measure` found: one row per case and format, the flush band's row (its
    XLA:CPU zeros counted), and the thread check's workers (CPUs, OS threads, XLA_FLAGS)."""

    rows: list[Measured]
    flush: Measured
    flush_zeros: int
    workers: dict[str, dict[str, Any]]


def measure(
    count: int | None, truth_count: int, folder: Path, cases: Sequence[str] = CASES, dtypes: Sequence[str] = tuple(ELEMENTS),
    threads: bool = True, log: Callable[[str], None] = lambda _: None,
) -> Report:
    """Every case in every format: the three roads, the truth subsample, the thread check.

    ``count`` lanes per case (``None``: the full run's :data:`FULL`, and every bf16 argument).
    """
    rows: list[Measured] = []
    for dtype in dtypes:
        for case in cases:
            wanted: int | None = count
            if count is None:
                wanted = None if (dtype == "bf16" and case != "pow") else FULL
            rows.append(prepare(case, dtype, sample(case, dtype, wanted)))
    flush = prepare("erf_derivative", "f32", flush_band_arguments())
    log(f"interpreted {len(rows)} cases")
    everything = [*rows, flush]
    keys = [key_of(m.case, m.dtype) for m in rows] + ["flush.erf_derivative.f32"]
    stage(folder / "small", [Staged(k, m.dtype, m.text, tuple(m.arguments)) for k, m in zip(keys, everything, strict=True)])
    evaluated = run_worker(folder / "small", "evaluate", "evaluate")
    log("reference interpreter done")
    small_xla: dict[str, Array] = {}
    for key, m in zip(keys, everything, strict=True):
        got_xla = xla.run_module(m.text, *m.arguments)[0]
        small_xla[key] = got_xla
        record_road(m, "evaluate", evaluated[key])
        record_road(m, "xla", got_xla)
    flush_zeros = int(np.count_nonzero(small_xla[keys[-1]] == 0))
    log("XLA:CPU done")
    if truth_count:
        for m in rows:
            picks = np.unique(np.linspace(0, m.lanes - 1, min(truth_count, m.lanes)).astype(np.int64))
            truths = [true_value(m.case, tuple(m.arguments[:, i].astype(np.float64).tolist())) for i in picks]
            m.truth["exact"] = truth_ulps(m.exact_bits[picks], truths, m.dtype)
            m.truth["evaluate"] = truth_ulps(evaluated[key_of(m.case, m.dtype)][picks], truths, m.dtype)
            m.truth["xla"] = truth_ulps(small_xla[key_of(m.case, m.dtype)][picks], truths, m.dtype)
        log("mpmath done")
    workers: dict[str, dict[str, Any]] = {}
    if threads:
        workers = thread_check(rows, small_xla, folder / "large")
        log("thread check done")
    return Report(rows, flush, flush_zeros, workers)


def large_arguments(measured: Measured) -> tuple[Array, Array]:
    """:data:`LARGE` arguments from ``measured``'s sample, and each lane's index in it."""
    rng = np.random.default_rng(_seed(measured.case, measured.dtype) + 1)
    index = rng.integers(0, measured.lanes, LARGE)
    arguments: Array = np.ascontiguousarray(measured.arguments[:, index])
    return arguments, index


def thread_pair() -> tuple[list[int], list[int]]:
    """One CPU and two CPUs of this process's affinity (one, twice, on a one-CPU machine)."""
    available = sorted(os.sched_getaffinity(0))
    return available[:1], available[:2]


def thread_check(rows: Sequence[Measured], small_xla: Mapping[str, Array], folder: Path) -> dict[str, dict[str, Any]]:
    """The large modules on XLA:CPU at one and at two threads; fills each row's thread fields.
    Returns each worker's report (CPUs, threads, XLA_FLAGS) by thread count."""
    staged = []
    indices: dict[str, Array] = {}
    for m in rows:
        arguments, index = large_arguments(m)
        network, root = record(m.case, ELEMENTS[m.dtype], arguments)
        staged.append(Staged(key_of(m.case, m.dtype), m.dtype, emit_network(network, [root]), tuple(arguments)))
        indices[key_of(m.case, m.dtype)] = index
    stage(folder, staged)
    one, two = thread_pair()
    first = run_worker(folder, "xla", "threads1", one, THREAD_FLAGS.format(threads=1))
    second = run_worker(folder, "xla", "threads2", two, THREAD_FLAGS.format(threads=2))
    for m in rows:
        key = key_of(m.case, m.dtype)
        differing = np.count_nonzero(bits(first[key]) != bits(second[key]))
        m.threads_agree = differing == 0
        m.threads_differing = int(differing)
        m.large_matches_small = bool(np.array_equal(bits(first[key]), bits(small_xla[key])[indices[key]]))
        # The interpreter's bits are a function of each argument alone: index its small run.
        want = m.exact_bits[indices[key]]
        for tag, got in (("1", first[key]), ("2", second[key])):
            m.threads_ulps[tag] = float(ulps(got, want, m.dtype).max())
    return {"1": worker_report(folder, "threads1"), "2": worker_report(folder, "threads2")}


# --------------------------------------------------------------------------- the table


def _figure(value: float | None) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    if value == 0:
        return "0"
    return f"{value:.3g}" if value < 1000 else f"{value:.2e}"


def table(rows: Sequence[Measured]) -> str:
    """The markdown table of ``rows``."""
    lines = [
        "| map | dtype | lanes | ref. interpreter: max ulp (lanes ≠) | XLA:CPU: max ulp (lanes ≠) "
        f"| XLA:CPU, {LARGE} lanes at 1 / 2 threads: max ulp | same bits at 1 and 2 threads (lanes ≠) "
        "| 1 thread = small run | vs mpmath, max ulp: ours / ref. / XLA |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in rows:
        truth = " / ".join(_figure(m.truth.get(road)) for road in ("exact", "evaluate", "xla")) if m.truth else "-"
        agree = "-" if m.threads_agree is None else ("yes" if m.threads_agree else f"no ({m.threads_differing})")
        matches = "-" if m.large_matches_small is None else ("yes" if m.large_matches_small else "no")
        large = " / ".join(_figure(m.threads_ulps.get(tag)) for tag in ("1", "2")) if m.threads_ulps else "-"
        lines.append(
            f"| {m.case} | {m.dtype} | {m.lanes} | {_figure(m.road_ulps.get('evaluate'))} ({m.road_differing.get('evaluate', 0)}) "
            f"| {_figure(m.road_ulps.get('xla'))} ({m.road_differing.get('xla', 0)}) | {large} | {agree} | {matches} | {truth} |"
        )
    return "\n".join(lines)


def worst_table(rows: Sequence[Measured], above: float = 1.0) -> str:
    """The worst lane of every road whose max error exceeds ``above`` ulps."""
    lines = ["| map | dtype | road | argument | road's result | ours | ulp |", "|---|---|---|---|---|---|---|"]
    for m in rows:
        for road in ("evaluate", "xla"):
            if m.road_ulps.get(road, 0.0) > above and road in m.worst:
                argument, got, want = m.worst[road]
                shown = ", ".join(f"{a!r}" for a in argument)
                lines.append(f"| {m.case} | {m.dtype} | {road} | {shown} | {got!r} | {want!r} | {_figure(m.road_ulps[road])} |")
    return "\n".join(lines)


def environment_line() -> str:
    import jax

    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            words = next((line for line in info if line.startswith("flags")), "").split()
        flags = "AVX-512" if "avx512f" in words else ("AVX2" if "avx2" in words else "no AVX2")
    except OSError:
        flags = "unknown ISA"
    libc = " ".join(platform.libc_ver())
    return f"jax {jax.__version__}, {platform.machine()} {flags}, {libc}, numpy {np.__version__}, mpmath {mpmath.__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1024 lanes per case, 64 against mpmath")
    parser.add_argument("--no-threads", action="store_true", help="skip the 1-vs-2-thread check")
    parser.add_argument("--worker", choices=WORKER_ROADS, help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--tag", help=argparse.SUPPRESS)
    parser.add_argument("--cpus", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.worker:
        cpus = [int(c) for c in options.cpus.split(",")] if options.cpus else None
        _worker(options.worker, Path(options.folder), options.tag, cpus)
        return 0
    start = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f} s] {message}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="map_envelopes_") as scratch:
        report = measure(
            1024 if options.quick else None, 64 if options.quick else 256, Path(scratch), threads=not options.no_threads, log=log
        )
    elapsed = time.perf_counter() - start
    print(f"Per-map envelopes against the portable maps ({environment_line()})\n")
    print(table(report.rows))
    print("\nWorst lanes beyond 1 ulp:\n")
    print(worst_table(report.rows))
    flush = report.flush
    print(
        f"\nFlush band: erf_derivative f32 over the {flush.lanes} arguments with {FLUSH_BAND[0]} <= |x| <= {FLUSH_BAND[1]} "
        f"(exp(-x*x) subnormal, result normal): XLA:CPU returns 0 on {report.flush_zeros}; max ulp: reference "
        f"interpreter {_figure(flush.road_ulps['evaluate'])}, XLA:CPU {_figure(flush.road_ulps['xla'])}."
    )
    if report.workers:
        described = "; ".join(
            f"{tag} thread(s): CPUs {r['cpus']}, {r['threads']} OS threads, XLA_FLAGS={r['xla_flags']!r}"
            for tag, r in report.workers.items()
        )
        print(f"\nThread check ({LARGE} arguments per case): {described}")
    print(f"\nMeasured in {elapsed:.1f} s.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
