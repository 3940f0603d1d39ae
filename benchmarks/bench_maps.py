"""Portable maps against numpy's: their throughput, and what they cost the Exact plan's step.

Run it with ``python -m benchmarks.bench_maps [--quick] [--threads N] [--json PATH]`` from the
repository root; the suite runs the same rows with ``python -m benchmarks --only maps`` (one
measuring process per thread count, see ``benchmarks/suite.py``) and renders them with
:func:`markdown`.

Contract:

- Maps throughput: every map of :class:`topos.ir.ops.MapOperation` and ``pow``, in float32
  and float64, over 10**6 elements (10**4 with ``--quick``) drawn from a fixed seed in a
  domain typical of the map: the portable kernel (``topos.kernels.libm.evaluate`` /
  ``power``, the Exact posture's) against numpy's own ufunc in the same dtype. ``erf`` has no
  numpy ufunc: ``scipy.special.erf`` when scipy is installed, else ``n/a``; ``erf_derivative``
  has none either, and is compared with numpy's expression ``2/sqrt(pi) * exp(-x*x)``.
- Exact step cost: the small GPT's and LeNet's training steps (loss and every parameter
  gradient, ``benchmarks/workloads.py``'s ``gpt`` and ``lenet``) as the Exact plan and as the
  interpreter (the differentiated network's forward, which evaluates the recorded backward
  too: the suite's ``topos interpreter``), each timed twice in one process, interleaved:
  (a) with the portable maps, as shipped; (b) with numpy's maps swapped in. The swap replaces
  the module attributes ``topos.kernels.libm.evaluate`` and ``power`` (every exact kernel
  reaches the maps through them: ``topos/kernels/binding.py``'s ``_map`` and
  ``_log_softmax``, ``topos/kernels/reference.py``'s ``map_operation`` and ``powf``) and
  holds only for (b)'s own lowering and calls: it is restored after each, so (a) never sees
  it. (b)'s plan is lowered under the swap. Its ``erf`` is scipy's when scipy is installed,
  else stays portable (the table says which). One untimed call of each side first counts
  the maps it reaches (a side that reaches none is reported, not timed) and times each.
- Every figure is the fastest of interleaved rounds (each callable once per round after a
  warm-up; the median is kept in the JSON). Each row records the CPU share of its process
  while it ran (process CPU time over wall time, summed over its timed calls); a ratio
  whose either side ran below :data:`STARVED` is withheld in the table (the JSON keeps it),
  since a starved run measures the neighbours.
- One thread count per process (threadpoolctl for numpy's BLAS; the portable maps and the
  Exact plan's folds run on one thread whatever the count). The BLAS library and kernel that
  ran are reported through threadpoolctl. Run as the main program, this file drops
  ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` by re-executing itself before numpy loads;
  importing it changes nothing. Nothing is asserted: the figures are for reading.

Example:
    >>> rows = map_rows(elements=64, rounds=1, budget_s=0.0)
    >>> sorted({r["dtype"] for r in rows}), len(rows) == 2 * len(MAPS)
    (['f32', 'f64'], True)
"""

from __future__ import annotations

import os
import sys

_PINNED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# Only as the main program: importing this module (the suite's driver does) must neither
# replace the importing process nor change its environment.
if __name__ == "__main__" and any(name in os.environ for name in _PINNED) and os.environ.get("TOPOS_BENCH_REEXEC") != "1":
    _environment = {k: v for k, v in os.environ.items() if k not in _PINNED}
    _environment["TOPOS_BENCH_REEXEC"] = "1"
    _argv = ["-m", "benchmarks.bench_maps", *sys.argv[1:]] if __package__ else sys.argv
    os.execve(sys.executable, [sys.executable, *_argv], _environment)
if __package__ in (None, ""):
    # Run as a script, the checkout's topos (beside this folder) comes first, not an installed one.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse  # noqa: E402
import contextlib  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

Array = np.ndarray[Any, Any]

#: A ratio is withheld when either side's process ran below this CPU share (a starved run).
STARVED = 0.9
#: The promise checked by the step rows: (a) at most this many times (b).
TARGET = 1.5
#: Map names in table order (``topos.kernels.libm.NAMES``' values, then ``pow``).
MAPS = ("exp", "log", "sqrt", "tanh", "sin", "cos", "log1p", "expm1", "erf", "erf_derivative", "atan", "pow")
#: The workloads of the step rows (``benchmarks/workloads.py`` keys) and the systems timed.
STEP_KEYS = ("gpt", "lenet")
STEP_SYSTEMS = {"exact": "topos Exact plan", "interp": "topos interpreter"}
ELEMENTS, QUICK_ELEMENTS = 10**6, 10**4
_TWO_OVER_ROOT_PI = 2.0 / np.sqrt(np.pi)


# --------------------------------------------------------------------------- numpy's maps


def _scipy_erf() -> Callable[[Array], Array] | None:
    try:
        special: Any = importlib.import_module("scipy.special")
    except ImportError:
        return None
    erf: Callable[[Array], Array] = special.erf
    return erf


def _erf_derivative(x: Array) -> Array:
    out: Array = np.exp(-(x * x)) * x.dtype.type(_TWO_OVER_ROOT_PI)
    return out


def numpy_maps() -> dict[str, tuple[Callable[..., Array] | None, str]]:
    """Each map's numpy counterpart (``None`` where there is none) and how the table names it.

    The ufuncs are ``topos.kernels.binding.NUMPY_MAPS``, the ones the Fast posture calls;
    only the maps numpy has no ufunc for, and ``pow``, are spelled here.
    """
    from topos.kernels import libm
    from topos.kernels.binding import NUMPY_MAPS

    erf = _scipy_erf()
    table: dict[str, tuple[Callable[..., Array] | None, str]] = {
        libm.NAMES[operation]: (ufunc, f"np.{ufunc.__name__}") for operation, ufunc in NUMPY_MAPS.items()
    }
    table["erf"] = (erf, "scipy.special.erf") if erf is not None else (None, "n/a (scipy not installed)")
    table["erf_derivative"] = (_erf_derivative, "2/√π·np.exp(-x·x)")
    table["pow"] = (np.power, "np.power")
    return table


def _operation(name: str) -> Any:
    from topos.kernels import libm

    return next(op for op, n in libm.NAMES.items() if n == name)


@contextlib.contextmanager
def numpy_swapped() -> Iterator[bool]:
    """``topos.kernels.libm.evaluate`` and ``power`` replaced by numpy's maps in the
    argument's dtype (through float32 for other float dtypes, as the portable ones are), for
    the body only; yields whether ``erf`` is swapped too (scipy installed)."""
    from topos.kernels import libm

    table = numpy_maps()
    by_operation = {op: table[name][0] for op, name in libm.NAMES.items()}
    portable_evaluate, portable_power = libm.evaluate, libm.power

    def evaluate(operation: Any, x: Array) -> Array:
        ufunc = by_operation[operation]
        if ufunc is None:
            return portable_evaluate(operation, x)
        with np.errstate(all="ignore"):
            if x.dtype in (np.float32, np.float64):
                return np.asarray(ufunc(x))
            return np.asarray(ufunc(x.astype(np.float32))).astype(x.dtype)

    def power(a: Array, b: Array) -> Array:
        with np.errstate(all="ignore"):
            if a.dtype in (np.float32, np.float64):
                return np.power(a, b)
            return np.power(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)

    libm.evaluate, libm.power = evaluate, power
    try:
        yield by_operation[_operation("erf")] is not None
    finally:
        libm.evaluate, libm.power = portable_evaluate, portable_power


@dataclass
class Tally:
    """The maps one call reached: (map, dtype) -> [calls, elements, seconds]."""

    seen: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def add(self, name: str, x: Array, seconds: float) -> None:
        entry = self.seen.setdefault((name, _dtype(x.dtype)), [0, 0, 0.0])
        entry[0] += 1
        entry[1] += x.size
        entry[2] += seconds


@contextlib.contextmanager
def tallied(tally: Tally) -> Iterator[None]:
    """Whatever ``libm.evaluate``/``power`` are now (portable or swapped), wrapped to count and
    time every call into ``tally`` for the body."""
    from topos.kernels import libm

    inner_evaluate, inner_power = libm.evaluate, libm.power

    def evaluate(operation: Any, x: Array) -> Array:
        start = time.perf_counter()
        out = inner_evaluate(operation, x)
        tally.add(libm.NAMES[operation], x, time.perf_counter() - start)
        return out

    def power(a: Array, b: Array) -> Array:
        start = time.perf_counter()
        out = inner_power(a, b)
        tally.add("pow", a, time.perf_counter() - start)
        return out

    libm.evaluate, libm.power = evaluate, power
    try:
        yield
    finally:
        libm.evaluate, libm.power = inner_evaluate, inner_power


def _dtype(dtype: np.dtype[Any]) -> str:
    return {"float32": "f32", "float64": "f64"}.get(dtype.name, dtype.name)


# --------------------------------------------------------------------------- timing


@dataclass
class Timed:
    """A callable and its samples: wall seconds and the process's CPU seconds per call."""

    call: Callable[[], object]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def once(self) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.call()
        self.cpu.append(time.process_time() - cpu)
        self.wall.append(time.perf_counter() - wall)

    def summary(self) -> dict[str, float]:
        return {
            "fastest_s": min(self.wall),
            "median_s": statistics.median(self.wall),
            "cpu_share": sum(self.cpu) / max(sum(self.wall), 1e-12),
        }


def interleaved(timed: list[Timed], least: int, most: int, budget_s: float, warm: bool = True) -> int:
    """Time ``timed`` in rounds, each once per round (after a warm-up call each unless
    ``warm`` is false); the number of rounds fits ``budget_s`` from the warm-up's cost,
    within ``[least, most]``."""
    started = time.perf_counter()
    if warm:
        for t in timed:
            t.call()
    per_round = max(time.perf_counter() - started, 1e-6)
    rounds = max(least, min(most, int(budget_s / per_round))) if warm else least
    for _ in range(rounds):
        for t in timed:
            t.once()
    return rounds


# --------------------------------------------------------------------------- maps throughput


def _draws(name: str, count: int, rng: np.random.Generator) -> tuple[Array, ...]:
    """Float64 arguments in a domain typical of the map (the same draws for both dtypes)."""
    uniform = rng.uniform
    if name in ("log", "sqrt"):
        return (10.0 ** uniform(-6, 6, count),)
    if name == "pow":
        return (10.0 ** uniform(-2, 2, count), uniform(-4, 4, count))
    low, high = {
        "exp": (-20, 20), "tanh": (-6, 6), "sin": (-50, 50), "cos": (-50, 50), "log1p": (-0.9, 10),
        "expm1": (-5, 5), "erf": (-5, 5), "erf_derivative": (-5, 5), "atan": (-20, 20),
    }[name]  # fmt: skip
    return (uniform(low, high, count),)


def map_rows(elements: int, rounds: int, budget_s: float, most: int = 15) -> list[dict[str, Any]]:
    """One row per map and dtype: the portable kernel's and numpy's fastest time over
    ``elements`` arguments, interleaved (every map and side once per round)."""
    from topos.kernels import libm

    table = numpy_maps()
    rng = np.random.default_rng(11)
    rows: list[dict[str, Any]] = []
    timed: list[tuple[Timed, Timed | None]] = []
    for name in MAPS:
        draws = _draws(name, elements, rng)
        for dtype in (np.float32, np.float64):
            args = tuple(np.ascontiguousarray(d.astype(dtype)) for d in draws)
            counterpart, side = table[name]
            portable: Callable[[], object]
            if name == "pow":
                portable = _bind(libm.power, *args)
            else:
                portable = _bind(libm.evaluate, _operation(name), *args)
            native = None if counterpart is None else Timed(_quiet(counterpart, *args))
            timed.append((Timed(portable), native))
            rows.append({"map": name, "dtype": _dtype(np.dtype(dtype)), "elements": elements, "numpy_side": side})
    flat = [t for pair in timed for t in pair if t is not None]
    count = interleaved(flat, rounds, most, budget_s)
    for row, (portable_t, native_t) in zip(rows, timed, strict=True):
        row["rounds"] = count
        row["portable"] = portable_t.summary()
        row["numpy"] = None if native_t is None else native_t.summary()
    return rows


def _bind(function: Callable[..., Array], *args: Any) -> Callable[[], object]:
    return lambda: function(*args)


def _quiet(function: Callable[..., Array], *args: Any) -> Callable[[], object]:
    def call() -> object:
        with np.errstate(all="ignore"):
            return function(*args)

    return call


# --------------------------------------------------------------------------- exact step cost


def step_rows(keys: tuple[str, ...], least: int, most: int, budget_s: float, warm: bool) -> list[dict[str, Any]]:
    """For each workload and system: the step with the portable maps (a) and with numpy's
    swapped in (b), interleaved in this process; with the maps each side reached in one call."""
    rows: list[dict[str, Any]] = []
    for key in keys:
        rows += _workload_rows(key, least, most, budget_s, warm)
        gc.collect()
    return rows


def _with_numpy(call: Callable[[], Any]) -> Callable[[], Any]:
    def swapped_call() -> Any:
        with numpy_swapped():
            return call()

    return swapped_call


def _workload_rows(key: str, least: int, most: int, budget_s: float, warm: bool) -> list[dict[str, Any]]:
    from benchmarks import workloads
    from topos import Numerics

    w = workloads.workload(key)
    parameters = w.network.parameters()
    network = w.network
    entry = network.entry(w.roots()).numerics(Numerics.EXACT)
    shipped = entry.lower()
    # Kernels are bound at lowering: (b)'s plan is lowered under the swap.
    with numpy_swapped() as erf_swapped:
        swapped = entry.lower()
    # Each system's call with the portable maps, and (b)'s call without its swap.
    calls: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "exact": (lambda: shipped.forward(parameters), lambda: swapped.forward(parameters)),
        "interp": (lambda: network.forward(parameters), lambda: network.forward(parameters)),
    }
    rows: list[dict[str, Any]] = []
    pending: list[tuple[Timed, Timed, dict[str, Any]]] = []
    for system, (portable, bare) in calls.items():
        tallies = (Tally(), Tally())
        with tallied(tallies[0]):
            first = portable()
        with numpy_swapped(), tallied(tallies[1]):
            second = bare()
        losses = [float(run.of(w.adjoints.target).numpy()) for run in (first, second)]
        numpy_side = _with_numpy(bare)
        row: dict[str, Any] = {
            "workload": key,
            "title": w.title,
            "system": system,
            "erf_swapped": erf_swapped,
            "loss_portable": losses[0],
            "loss_numpy": losses[1],
            "maps_portable": _tally_rows(tallies[0]),
            "maps_numpy": _tally_rows(tallies[1]),
        }
        if not tallies[1].seen:
            row["note"] = "the swap reached no map: not timed"
            rows.append(row)
            continue
        pending.append((Timed(portable), Timed(numpy_side), row))
    # The tallied calls were a first warm-up: each side has run once already.
    count = interleaved([t for a, b, _ in pending for t in (a, b)], least, most, budget_s, warm=warm)
    for a, b, row in pending:
        row["rounds"] = count
        row["portable"], row["numpy"] = a.summary(), b.summary()
        rows.append(row)
    return rows


def _tally_rows(tally: Tally) -> list[dict[str, Any]]:
    return [
        {"map": name, "dtype": dtype, "calls": int(calls), "elements": int(elements), "seconds": seconds}
        for (name, dtype), (calls, elements, seconds) in sorted(tally.seen.items(), key=lambda kv: -kv[1][2])
    ]


# --------------------------------------------------------------------------- driver


def measure(quick: bool, threads: int) -> dict[str, Any]:
    """Both groups of rows in this process at ``threads`` BLAS threads, with what ran."""
    from benchmarks.measure import environment_report, set_threads

    numpy_maps()  # scipy (and the BLAS it loads) imported before the threads are limited
    limiter = set_threads(threads, [])
    started = time.perf_counter()
    elements = QUICK_ELEMENTS if quick else ELEMENTS
    maps = map_rows(elements, 5, 0.0 if quick else 20.0)
    # --quick: the counting call is the warm-up and one round follows; otherwise a second
    # warm-up call, then rounds that fit the budget.
    steps = step_rows(STEP_KEYS, 1 if quick else 5, 1 if quick else 12, 0.0 if quick else 60.0, warm=not quick)
    result = {
        "threads": threads,
        "quick": quick,
        "elements": elements,
        "report": environment_report(threads),
        "maps": maps,
        "steps": steps,
        "wall_s": time.perf_counter() - started,
    }
    del limiter
    return result


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}" if seconds < 1.0 else f"{seconds * 1e3:.1f}"


def _ratio(a: dict[str, float], b: dict[str, float] | None) -> tuple[str, float | None]:
    """The cell for ``a / b`` and its value (``None`` where withheld or absent)."""
    if b is None:
        return "n/a", None
    ratio = a["fastest_s"] / b["fastest_s"]
    low = min(a["cpu_share"], b["cpu_share"])
    if low < STARVED:
        return f"withheld (CPU share {low:.2f} < {STARVED})", None
    return f"{ratio:.2f}", ratio


def markdown(results: list[dict[str, Any]]) -> list[str]:
    """The rows of one or more measuring processes (one per thread count) as markdown."""
    if not results:
        return []
    first = results[0]
    counts = ", ".join(str(r["threads"]) for r in results)
    lines = [
        "## Portable maps",
        "",
        "The Exact posture's maps (`topos.kernels.libm`, the same bits on every machine) against numpy's",
        f"own ufuncs (see `benchmarks/bench_maps.py`), at {counts} BLAS thread(s), one measuring process each",
        f"(BLAS: {first['report'].get('blas', 'unknown')}). Milliseconds are the fastest of interleaved",
        "rounds; CPU share is the process's CPU time over wall time during the row's timed calls, and a ratio",
        f"whose either side ran below {STARVED} is withheld (a starved run measures the neighbours).",
        "",
        f"### Maps throughput ({first['elements']:,} elements a call)",
        "",
        "| threads | map | dtype | portable ms | numpy ms | numpy side | portable / numpy | CPU share (portable, numpy) |",
        "|---:|---|---|---:|---:|---|---:|---|",
    ]
    for result in results:
        for row in result["maps"]:
            a, b = row["portable"], row["numpy"]
            cell, _ = _ratio(a, b)
            shares = f"{a['cpu_share']:.2f}, " + ("—" if b is None else f"{b['cpu_share']:.2f}")
            lines.append(
                f"| {result['threads']} | {row['map']} | {row['dtype']} | {_ms(a['fastest_s'])} | "
                f"{'n/a' if b is None else _ms(b['fastest_s'])} | {row['numpy_side']} | {cell} | {shares} |"
            )
    lines += [
        "",
        "### Exact step cost",
        "",
        "A step is the loss and every parameter gradient. (a) runs the portable maps as shipped; (b) the same",
        "step with numpy's maps swapped in (`libm.evaluate` and `power` replaced for (b)'s lowering and calls",
        f"only), interleaved in the same process. The promise: a / b ≤ {TARGET}. The last column is the two",
        "losses' relative difference (numpy's maps are not the portable ones' bits, only close to them).",
        "",
        "| threads | workload | system | (a) portable ms | CPU share | (b) numpy maps ms | CPU share | a / b | ≤ 1.5 | rounds | loss (a) vs (b) |",
        "|---:|---|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for result in results:
        for row in result["steps"]:
            label = STEP_SYSTEMS[row["system"]]
            if "portable" not in row:
                lines.append(f"| {result['threads']} | {row['title']} | {label} | — | — | — | — | {row.get('note', '')} | — | 0 | — |")
                continue
            loss = abs(row["loss_portable"] - row["loss_numpy"]) / max(abs(row["loss_numpy"]), 1e-30)
            a, b = row["portable"], row["numpy"]
            cell, ratio = _ratio(a, b)
            verdict = "—" if ratio is None else ("yes" if ratio <= TARGET else "**no**")
            lines.append(
                f"| {result['threads']} | {row['title']} | {label} | {_ms(a['fastest_s'])} | {a['cpu_share']:.2f} | "
                f"{_ms(b['fastest_s'])} | {b['cpu_share']:.2f} | {cell} | {verdict} | {row['rounds']} | {loss:.1e} |"
            )
    lines += [
        "",
        f"### Maps inside one step ({first['threads']} thread(s))",
        "",
        "What one untimed call of each side reached: calls and elements per map and dtype, and the",
        "milliseconds spent in them (the portable maps, then numpy's for the same calls).",
        "",
        "| workload | system | map | dtype | calls | elements | portable ms | numpy ms |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for row in first["steps"]:
        swapped = {(m["map"], m["dtype"]): m for m in row["maps_numpy"]}
        for m in row["maps_portable"]:
            other = swapped.get((m["map"], m["dtype"]))
            lines.append(
                f"| {row['title']} | {STEP_SYSTEMS[row['system']]} | {m['map']} | {m['dtype']} | {m['calls']:,} | "
                f"{m['elements']:,} | {_ms(m['seconds'])} | {'—' if other is None else _ms(other['seconds'])} |"
            )
    if not all(row.get("erf_swapped", True) for r in results for row in r["steps"]):
        lines += ["", "scipy is not installed: (b) keeps the portable erf."]
    return lines


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_maps", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ELEMENTS:,} elements a map and one round of each step: a smoke test")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON to this file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    result = measure(args.quick, args.threads)
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {result['wall_s']:.1f} s")
    print("\n".join(markdown([result])))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
