"""The ``topos`` command line: read a build function's network from a shell.

Every subcommand takes ``FILE:FUNCTION``, a Python file and a build function in it that
takes a :class:`~topos.stages.spec.Tape` and returns what it recorded (one value, or a
tuple, list or dict of values); it is recorded once with :meth:`Tape.record`. The returned
values are the roots of every plan (``--roots`` picks some, by dict key or node position).

Subcommands: ``describe``, ``plan``, ``emit``, ``dot``, ``check``, ``bench``, ``export``,
``digest``; ``topos SUBCOMMAND --help`` explains each. Results go to stdout, errors to stderr.

``digest`` trains the first root as the loss (it must be rank 0): every parameter by plain
SGD at a fixed rate, every input at its recorded default at every step, through an exact plan
(``topos.digest.digest_run``), and prints the run's SHA-256 and what it covers.

Exit status: 0 ok; 1 ``check`` found an exact road that disagrees with the interpreter, or
``digest --expect`` computed another digest; 2 usage error (argparse); 3 a
:class:`~topos.errors.ToposError` (its message on stderr, no traceback); 4 the file or
function could not be loaded or called (stderr names both).

Example:
    >>> main(["--help"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, TextIO

import attrs
import ml_dtypes
import numpy as np

from topos.errors import BackwardTargetError, ToposError
from topos.ir.element import ElementType, bf16, f32, f64
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.numerics import Numerics
from topos.stages.spec import Tape

__all__ = ["ENVELOPE_ULPS", "LoadError", "Loaded", "main"]

OK: Final = 0
CHECK_FAILED: Final = 1
USAGE: Final = 2
TOPOS_ERROR: Final = 3
LOAD_FAILED: Final = 4

ELEMENTS: Final = {"f32": f32, "f64": f64, "bf16": bf16}
NUMERICS: Final = {"exact": Numerics.EXACT, "fast": Numerics.FAST}

# ml_dtypes.finfo is untyped; the bound name gives mypy its signature.
_finfo: Callable[[np.dtype[Any]], Any] = ml_dtypes.finfo

ENVELOPE_ULPS: Final = 1024
"""Envelope roads (fast plans, XLA) must agree within ``ENVELOPE_ULPS * eps * max(1, max|ref|)``.

Fast kernels reassociate sums and products (error grows like ``n * eps`` of the terms) and
XLA also uses its own transcendentals (a few ulps each); 1024 ulps of the largest reference
magnitude covers graphs of up to about a thousand terms per reduction. It is a sanity
envelope for a command-line check, not a proof of a bound.
"""


class LoadError(Exception):
    """The build file or function could not be loaded or called (exit status 4)."""


@attrs.frozen
class Loaded:
    """A recorded build function: the network and its returned symbols by name."""

    network: Network
    named: tuple[tuple[str, Symbol], ...]

    def roots(self, wanted: Sequence[str] | None) -> list[Symbol]:
        if not wanted:
            return list(dict.fromkeys(symbol for _, symbol in self.named))
        by_name = dict(self.named)
        picked: list[Symbol] = []
        for text in wanted:
            if text in by_name:
                picked.append(by_name[text])
                continue
            position = text.removeprefix("%")
            if position.isdigit() and int(position) < len(self.network):
                picked.append(self.network.symbol(int(position)))
                continue
            known = ", ".join(name for name, _ in self.named)
            raise ToposError(
                f"--roots {text!r} is neither a returned name ({known}) nor a node position "
                f"below {len(self.network)}"
            )
        return list(dict.fromkeys(picked))


def _flatten(result: object, prefix: str, out: list[tuple[str, Symbol]]) -> None:
    if isinstance(result, Symbol):
        out.append((prefix or "result", result))
    elif isinstance(result, dict):
        for key, value in result.items():
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(result, (tuple, list)):
        for k, value in enumerate(result):
            _flatten(value, f"{prefix}.{k}" if prefix else str(k), out)


def load(target: str, element: ElementType) -> Loaded:
    """Import ``FILE:FUNCTION`` and record the function (see the module contract)."""
    file, sep, function = target.rpartition(":")
    if not sep or not file or not function:
        raise LoadError(f"expected FILE:FUNCTION, got {target!r} (e.g. model.py:build)")
    path = Path(file)
    if not path.is_file():
        raise LoadError(f"{file}: no such file (looking for the function {function!r})")
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(f"_topos_build_{digest}", path)
    if spec is None or spec.loader is None:
        raise LoadError(f"{file}: cannot be imported as Python (looking for the function {function!r})")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ToposError:
        raise
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            raise
        raise LoadError(f"{file}: importing it failed ({_summary(error)}); the function {function!r} was not reached") from error
    build = getattr(module, function, None)
    if not callable(build):
        names = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
        raise LoadError(f"{file}: has no function {function!r} (callables there: {', '.join(names) or 'none'})")
    try:
        network, result = Tape.record(build, element=element)
    except ToposError:
        raise
    except Exception as error:
        raise LoadError(f"{file}:{function}: calling it with a Tape failed ({_summary(error)})") from error
    named: list[tuple[str, Symbol]] = []
    _flatten(result, "", named)
    if not named:
        raise LoadError(f"{file}:{function}: returned no recorded values (return a value, or a tuple/list/dict of them)")
    return Loaded(network, tuple(named))


def _summary(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


# --------------------------------------------------------------------------- subcommands


def _plan(loaded: Loaded, args: argparse.Namespace) -> Any:
    return loaded.network.entry(loaded.roots(args.roots)).numerics(NUMERICS[args.numerics]).lower()


def _write(text: str, output: str | None, out: TextIO) -> None:
    if output is None:
        out.write(text)
        return
    try:
        Path(output).write_text(text)
    except OSError as error:
        raise ToposError(f"cannot write {output}: {error.strerror}") from None
    out.write(f"wrote {output} ({len(text)} characters)\n")


def cmd_describe(loaded: Loaded, args: argparse.Namespace, out: TextIO) -> int:
    out.write(loaded.network.describe())
    return OK


def cmd_plan(loaded: Loaded, args: argparse.Namespace, out: TextIO) -> int:
    out.write(_plan(loaded, args).describe())
    return OK


def cmd_emit(loaded: Loaded, args: argparse.Namespace, out: TextIO) -> int:
    text: str = _plan(loaded, args).emit_stablehlo()
    _write(text, args.output, out)
    return OK


def cmd_dot(loaded: Loaded, args: argparse.Namespace, out: TextIO) -> int:
    from topos.render import network_dot, plan_dot

    names = {symbol: name for name, symbol in loaded.named}
    text = plan_dot(_plan(loaded, args), names) if args.plan else network_dot(loaded.network, names)
    _write(text, args.output, out)
    return OK


def cmd_export(loaded: Loaded, args: argparse.Namespace, out: TextIO) -> int:
    from topos.export import export

    roots = loaded.roots(args.roots)
    names: dict[Symbol, str] = {}
    for name, symbol in loaded.named:
        if symbol in roots:
            names.setdefault(symbol, name)
    exported = export(_plan(loaded, args), loaded.network.parameters(), args.output, names=names)
    out.write(
        f"wrote {exported.directory}: inputs {', '.join(exported.inputs) or 'none'}; "
        f"outputs {', '.join(exported.outputs)}; run it with load.py there (jax, numpy, safetensors)\n"
    )
    return OK


@attrs.frozen
class Agreement:
    """One row of ``topos check``."""

    road: str
    posture: str
    compared: int
    bitwise: bool
    max_abs: float
    max_rel: float
    envelope: float | None
    note: str = ""

    @property
    def passed(self) -> bool:
        if self.envelope is None:
            return self.bitwise
        return self.bitwise or self.max_abs <= self.envelope


def _compare(road: str, posture: str, pairs: Sequence[tuple[Any, Any]], envelope: float | None) -> Agreement:
    bitwise = True
    max_abs = 0.0
    max_rel = 0.0
    for reference, value in pairs:
        if reference.shape != value.shape or not np.array_equal(reference.bits(), value.bits()):
            bitwise = False
        a = reference.numpy().astype(np.float64)
        b = value.numpy().astype(np.float64)
        if a.shape != b.shape:
            max_abs = max_rel = float("inf")
            continue
        with np.errstate(all="ignore"):
            diff = np.abs(a - b)
            # Matching infinities and NaNs agree; anything else non-finite is infinitely off.
            same = (a == b) | (np.isnan(a) & np.isnan(b))
            diff = np.where(same, 0.0, diff)
            diff = np.where(np.isnan(diff), np.inf, diff)
            if diff.size:
                max_abs = max(max_abs, float(diff.max()))
                rel = diff / np.maximum(np.abs(a), np.finfo(np.float64).tiny)
                max_rel = max(max_rel, float(np.where(same, 0.0, rel).max()))
    return Agreement(road, posture, len(pairs), bitwise, max_abs, max_rel, envelope)


def _envelope(element: ElementType, references: Sequence[Any]) -> float:
    eps = float(_finfo(element.dtype).eps)
    scale = 1.0
    for tensor in references:
        values = np.abs(tensor.numpy().astype(np.float64))
        finite = values[np.isfinite(values)]
        if finite.size:
            scale = max(scale, float(finite.max()))
    return ENVELOPE_ULPS * eps * scale


def _loss(loaded: Loaded, roots: Sequence[Symbol]) -> Symbol | None:
    for symbol in roots:
        if loaded.network.node(symbol).shape.rank == 0:
            return symbol
    return None


def agreements(loaded: Loaded, roots: Sequence[Symbol], xla: bool) -> list[Agreement]:
    """Every road against the interpreter, over the recorded initials and input defaults."""
    network = loaded.network
    parameters = network.parameters()
    oracle = network.forward(parameters, {})
    references = [oracle.of(s) for s in roots]
    envelope = _envelope(network.element, references)
    rows: list[Agreement] = []
    for numerics in (Numerics.EXACT, Numerics.FAST):
        run = network.entry(roots).numerics(numerics).lower().forward(parameters, {})
        bound = None if numerics is Numerics.EXACT else envelope
        rows.append(_compare("plan", numerics.value, [(r, run.of(s)) for r, s in zip(references, roots, strict=True)], bound))
    loss = _loss(loaded, roots)
    if loss is None or not network.parameter_nodes:
        rows.append(Agreement("gradient plan", "exact", 0, True, 0.0, 0.0, None, "skipped: no rank-0 root or no parameters"))
    else:
        from topos.stages.gradient import gradient

        longer, adjoints = gradient(network, loss, network.parameter_symbols())
        wanted = list(adjoints.gradients())
        truth = longer.forward(parameters, {})
        run = longer.entry(wanted).numerics(Numerics.EXACT).lower().forward(parameters, {})
        rows.append(_compare("gradient plan", "exact", [(truth.of(s), run.of(s)) for s in wanted], None))
    if xla:
        from topos.xla import XlaExecutable

        executable = XlaExecutable.of_plan(network.entry(roots).numerics(Numerics.FAST).lower())
        outputs = executable(parameters, {})
        by_symbol = dict(zip(executable.results, outputs, strict=True))
        rows.append(_compare("xla", "envelope", [(r, by_symbol[s]) for r, s in zip(references, roots, strict=True)], envelope))
    else:
        rows.append(Agreement("xla", "envelope", 0, True, 0.0, 0.0, None, "skipped: jax is not installed"))
    return rows


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.extend("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)
    return "\n".join(lines) + "\n"


def cmd_check(loaded: Loaded, args: argparse.Namespace, out: TextIO) -> int:
    from topos import xla

    roots = loaded.roots(args.roots)
    rows = agreements(loaded, roots, xla.available())
    table: list[list[str]] = []
    failed = False
    for row in rows:
        if row.note:
            table.append([row.road, row.posture, "-", "-", "-", "-", row.note])
            continue
        if row.bitwise:
            agreement = "bitwise-equal"
        else:
            agreement = f"abs {row.max_abs:.3g} rel {row.max_rel:.3g}"
        envelope = "bitwise" if row.envelope is None else f"abs <= {row.envelope:.3g}"
        verdict = "pass" if row.passed else "FAIL"
        table.append([row.road, row.posture, str(row.compared), agreement, envelope, verdict, ""])
        failed = failed or (row.envelope is None and not row.passed)
    out.write(f"roads against the interpreter over {len(roots)} root(s), element {loaded.network.element}\n")
    out.write(_table(["road", "posture", "values", "agreement", "envelope", "verdict", "note"], table))
    return CHECK_FAILED if failed else OK


def _median_seconds(call: Callable[[], object], repeats: int) -> float:
    call()  # the first call pays for imports and caches
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _forward(lowered: Any, parameters: Any) -> Callable[[], object]:
    return lambda: lowered.forward(parameters, {})


def cmd_bench(loaded: Loaded, args: argparse.Namespace, out: TextIO) -> int:
    from topos import xla

    network = loaded.network
    roots = loaded.roots(args.roots)
    parameters = network.parameters()
    roads: list[tuple[str, Callable[[], object]]] = [
        ("interpreter", lambda: network.entry(roots).numerics(Numerics.EXACT).interpret(parameters, {}))
    ]
    for numerics in (Numerics.EXACT, Numerics.FAST):
        lowered = network.entry(roots).numerics(numerics).lower()
        roads.append((f"plan {numerics.value}", _forward(lowered, parameters)))
    if xla.available():
        executable = xla.XlaExecutable.of_plan(network.entry(roots).numerics(Numerics.FAST).lower())
        roads.append(("xla", lambda: executable(parameters, {})))
    rows = [[name, f"{_median_seconds(call, args.repeats) * 1e3:.3f}"] for name, call in roads]
    out.write(f"median of {args.repeats} forward(s) per road\n")
    out.write(_table(["road", "ms"], rows))
    if not xla.available():
        out.write("xla: skipped (jax is not installed)\n")
    return OK


def _refused(kind: type[ToposError], message: str) -> ToposError:
    """A refusal of the command line's own: its message names FILE:FUNCTION, which says more
    than the caller's line ToposError would prefix (runpy's, under ``python -m topos``)."""
    error = kind(message)
    error.args = (message,)
    error.detail = message
    return error


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def cmd_digest(loaded: Loaded, args: argparse.Namespace, out: TextIO) -> int:
    from topos.digest import digest_run

    network = loaded.network
    roots = loaded.roots(args.roots)
    names: dict[Symbol, str] = {}
    for name, symbol in loaded.named:
        names.setdefault(symbol, name)
    loss = roots[0]
    label = names.get(loss, f"%{network.index(loss)}")
    shape = network.node(loss).shape
    if shape.rank != 0:
        raise _refused(
            BackwardTargetError,
            f"{args.target}: digest trains the first root as the loss, so it must be rank 0; "
            f"{label!r} has shape {shape} (return the loss first, or name it first with --roots)",
        )
    digest = digest_run(network, roots, steps=args.steps, rate=args.rate, nans=args.nans)
    parameters = network.parameters()
    values = sum(payload.shape.volume for payload in parameters.payloads())
    hashed = ", ".join(names.get(s, f"%{network.index(s)}") for s in roots)
    out.write(
        f"{digest}  {args.target}  {network.element} exact, {_count(args.steps, 'SGD step')} at rate {args.rate!r} "
        f"on loss {label!r}; hashed: {hashed} and {_count(len(parameters), 'gradient')} every step, then "
        f"{_count(len(parameters), 'parameter')} ({_count(values, 'value')}); inputs at their recorded defaults; "
        f"NaNs {'as their bits' if args.nans == 'bits' else 'canonical'}\n"
    )
    if args.expect is None:
        return OK
    if digest == args.expect.lower():
        out.write("matches the expected digest\n")
        return OK
    out.write(f"DIFFERS from the expected digest {args.expect}\n")
    return CHECK_FAILED


# --------------------------------------------------------------------------- parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return value


def _hex_digest(text: str) -> str:
    if len(text) != 64 or any(c not in "0123456789abcdefABCDEF" for c in text):
        raise argparse.ArgumentTypeError(f"must be a SHA-256 digest (64 hex digits), got {text!r}")
    return text


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="topos",
        description="Record a build function once and read it: describe, plan, emit, draw, check, time, digest.",
        epilog="Exit status: 0 ok, 1 check failed or digest differs from --expect, 2 usage error, 3 topos error, "
        "4 FILE or FUNCTION not loadable.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, run: Callable[[Loaded, argparse.Namespace, TextIO], int], plans: bool = True) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        sub.add_argument("target", metavar="FILE:FUNCTION", help="a Python file and a build function build(tape) in it")
        sub.add_argument("--element", choices=sorted(ELEMENTS), default="f32", help="element type to record in (default f32)")
        if plans:
            sub.add_argument(
                "--roots", nargs="+", metavar="ROOT",
                help="roots by returned name (dict key or tuple position) or node position (%%N); default: every returned value",
            )
        sub.set_defaults(run=run)
        return sub

    command("describe", "print the recorded network, one line per node", cmd_describe, plans=False)
    sub = command("plan", "print the lowered plan: liveness, fusions and live volume", cmd_plan)
    sub.add_argument("--numerics", choices=sorted(NUMERICS), default="fast", help="numerics posture (default fast)")
    sub = command("emit", "write the plan as StableHLO text", cmd_emit)
    sub.add_argument("--numerics", choices=sorted(NUMERICS), default="fast", help="numerics posture (default fast)")
    sub.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")
    sub = command("dot", "write a Graphviz DOT picture of the network (or of its plan)", cmd_dot)
    sub.add_argument("--plan", action="store_true", help="draw the plan: fusion clusters, released values dashed")
    sub.add_argument("--numerics", choices=sorted(NUMERICS), default="fast", help="numerics posture of --plan (default fast)")
    sub.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")
    command(
        "check",
        "compare every road (exact and fast plans, the recorded gradient plan, XLA when installed) "
        "with the interpreter; exit 1 if an exact road differs in any bit",
        cmd_check,
    )
    sub = command(
        "export",
        "write the plan, its recorded parameters and a loader to a directory that runs with jax alone",
        cmd_export,
    )
    sub.add_argument("--numerics", choices=sorted(NUMERICS), default="fast", help="numerics posture (default fast)")
    sub.add_argument("-o", "--output", metavar="DIR", required=True, help="the directory to create (must not hold files)")
    sub = command("bench", "median wall time of one forward on each road", cmd_bench)
    sub.add_argument("--repeats", type=_positive, default=5, help="timed forwards per road (default 5)")
    sub = command(
        "digest",
        "train the first root (a rank-0 loss) by SGD through an exact plan and print the run's SHA-256: "
        "each step's roots and gradients, then the final parameters",
        cmd_digest,
    )
    sub.add_argument("--steps", type=_positive, default=20, help="SGD steps (default 20)")
    sub.add_argument("--rate", type=_rate, default=2.0**-6, help="SGD learning rate (default 0.015625, exact in every element)")
    sub.add_argument(
        "--nans", choices=["canonical", "bits"], default="canonical",
        help="hash every NaN as one quiet NaN (default), or as its own bits (sign and payload; see docs/command-line.md)",
    )
    sub.add_argument("--expect", type=_hex_digest, metavar="DIGEST", help="exit 1 unless the digest is DIGEST (one published elsewhere)")
    return parser


def _fail(stream: TextIO, message: str, status: int) -> int:
    stream.write(f"topos: {message}\n")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module contract)."""
    args = _parser().parse_args(argv)
    try:
        loaded = load(args.target, ELEMENTS[args.element])
        status: int = args.run(loaded, args, sys.stdout)
    except LoadError as error:
        return _fail(sys.stderr, str(error), LOAD_FAILED)
    except ToposError as error:
        return _fail(sys.stderr, f"{type(error).__name__}: {error}", TOPOS_ERROR)
    sys.stdout.flush()
    return status
