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

Failures: every failure ends in one line on stderr, ``topos: `` then what failed, naming
``FILE:FUNCTION`` (or the file alone before the function is reached) and the cause, and in
the status below; no traceback unless ``--traceback`` is given (before or after the
subcommand), which prints the cause's traceback to stderr ahead of that line.

Exit status: 0 ok; 1 ``check`` found an exact road that disagrees with the interpreter (or,
with ``--nan``, a non-finite root or gradient), or ``digest --expect`` computed another
digest; 2 usage error (argparse); 3 a :class:`~topos.errors.ToposError` (its name and
message, no traceback); 4 the file or
function could not be loaded or called: a missing or unimportable file, a missing function,
any other exception from it, or ``sys.exit(N)`` called by it (whatever ``N``); 5 an output
could not be written (``-o`` or standard output): stderr names the path and the system's
reason; 6 an unexpected exception inside topos while running the subcommand (a bug: rerun
with ``--traceback`` to see where); 130 interrupted (``KeyboardInterrupt``, Ctrl-C).

``--element`` takes ``f32``, ``f64``, ``bf16`` or any element type a plugin registers
(:func:`topos.plugins.element_types`); ``export --input-names`` names the recorded inputs.

Size: over 800 lines on purpose. One parser, its eight subcommands and the exit-status
mapping read together; split, each half would need the other's refusals and wording.

The build file is imported as a module registered in ``sys.modules`` under a name derived
from its resolved path (``_topos_build_<12 hex digits>``) while it runs, as a real import
would be: ``dataclasses`` and ``typing.get_type_hints`` look a class's module up there (a
dataclass under ``from __future__ import annotations`` needs it). A file that fails to
import is removed from ``sys.modules`` again.

Example:
    >>> main(["--help"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import re
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Final, Protocol, TextIO

import attrs
import ml_dtypes
import numpy as np

from topos.atomic import write_atomically
from topos.errors import (
    BackwardTargetError,
    CheckpointError,
    InvalidArgumentError,
    ToposError,
    user_site,
)
from topos.ir import ops
from topos.ir.element import ElementType, bf16, f32, f64
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.numerics import Numerics
from topos.stages.spec import Tape

__all__ = ["ENVELOPE_ULPS", "LoadError", "Loaded", "OutputError", "Sink", "batched", "main"]

TRACEBACK_HELP: Final = "on a failure, also print the traceback of its cause to stderr"

OK: Final = 0
CHECK_FAILED: Final = 1
USAGE: Final = 2
TOPOS_ERROR: Final = 3
LOAD_FAILED: Final = 4
OUTPUT_FAILED: Final = 5
INTERNAL: Final = 6
INTERRUPTED: Final = 130  # 128 + SIGINT, what a shell reports for a Ctrl-C'd command

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


class OutputError(Exception):
    """An output (``-o PATH`` or standard output) could not be written (exit status 5)."""

    def __init__(self, message: str, *, stdout: bool = False) -> None:
        super().__init__(message)
        self.stdout = stdout
        """Whether standard output itself failed (main then stops writing to it)."""


class _Unwritable(ToposError):
    """What :func:`~topos.atomic.write_atomically` raises for ``-o``; the CLI words it as an OutputError."""


class Sink(Protocol):
    """Where a subcommand writes its result (standard output, guarded by the CLI)."""

    def write(self, text: str, /) -> int: ...


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
            raise _refused(
                ToposError,
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
    if path.is_dir():
        raise LoadError(f"{file}: is a directory, not a Python file (looking for the function {function!r})")
    if not path.is_file():
        raise LoadError(f"{file}: no such file (looking for the function {function!r})")
    # Deterministic (the same file always gets the same name) and unique per resolved path.
    name = f"_topos_build_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LoadError(f"{file}: cannot be imported as Python (looking for the function {function!r})")
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(name)
    # Registered before it runs, as an import does: dataclasses resolves string annotations
    # through sys.modules[cls.__module__], so without this a dataclass under
    # `from __future__ import annotations` cannot be defined.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as error:
        # A file that failed to import must not stay importable under its name.
        if previous is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous
        if isinstance(error, (ToposError, KeyboardInterrupt)):
            raise
        cause = _exit_call(error) if isinstance(error, SystemExit) else f"failed ({_summary(error)})"
        raise LoadError(f"{file}: importing it {cause}; the function {function!r} was not reached") from error
    return _record(module, file, function, element)


def _record(module: ModuleType, file: str, function: str, element: ElementType) -> Loaded:
    build = getattr(module, function, None)
    if not callable(build):
        names = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
        raise LoadError(f"{file}: has no function {function!r} (callables there: {', '.join(names) or 'none'})")
    try:
        network, result = Tape.record(build, element=element)
    except ToposError:
        raise
    except SystemExit as error:
        # The user's code asked to end the process; for the CLI that is a build that did not finish.
        raise LoadError(f"{file}:{function}: calling it with a Tape {_exit_call(error)}") from error
    except Exception as error:
        raise LoadError(f"{file}:{function}: calling it with a Tape failed ({_summary(error)})") from error
    named: list[tuple[str, Symbol]] = []
    _flatten(result, "", named)
    if not named:
        raise LoadError(f"{file}:{function}: returned no recorded values (return a value, or a tuple/list/dict of them)")
    return Loaded(network, tuple(named))


def batched(loaded: Loaded, size: int, target: str) -> Loaded:
    """``loaded`` read over ``size`` examples: every input gains a leading axis (``--batch``).

    The returned names keep their meaning: each now holds one value per example, and under
    ``--numerics exact`` slice ``b`` is bit for bit the value of the network alone.

    Example:
        >>> network, y = Tape.record(lambda t: (t.input([1.0, 2.0]) * 2.0).sum())
        >>> wide = batched(Loaded(network, (("y", y),)), 3, "model.py:build")
        >>> wide.network.node(wide.named[0][1]).shape.axes
        (3,)
    """
    from topos.stages.batching import batch

    inputs = [loaded.network.symbol(i) for i, node in enumerate(loaded.network.nodes_) if isinstance(node.op, ops.Input)]
    if not inputs:
        raise _refused(InvalidArgumentError, f"{target}: --batch {size} needs an input to batch over; the network records none (only parameters and constants)")
    network, mapping = batch(loaded.network, over=inputs, size=size)
    return Loaded(network, tuple((name, mapping.of(symbol)) for name, symbol in loaded.named))


def _exit_call(error: SystemExit) -> str:
    code = "" if error.code is None else repr(error.code)
    return f"called sys.exit({code}){_where(error)}"


def _where(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    return f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def _summary(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}{_where(error)}"


# --------------------------------------------------------------------------- subcommands


def _plan(loaded: Loaded, args: argparse.Namespace) -> Any:
    return loaded.network.entry(loaded.roots(args.roots)).numerics(NUMERICS[args.numerics]).lower()


def _write(text: str, output: str | None, out: Sink) -> None:
    if output is None:
        out.write(text)
        return
    # Atomic: a failed or interrupted write leaves what was at PATH before, never half a file.
    try:
        write_atomically(output, [text.encode("utf-8")], what=output, error=_Unwritable)
    except _Unwritable as error:
        reason = error.detail if output in error.detail else f"cannot write {output}: {error.detail}"
        raise OutputError(reason) from error.__cause__
    out.write(f"wrote {output} ({len(text)} characters)\n")


def _export_target(output: str) -> None:
    """Refuse, before the plan is compiled, a directory path that export could only fail on."""
    path = Path(output)
    if path.is_symlink():
        # staged_directory renames a fresh folder over the path; a link cannot be replaced so.
        raise OutputError(f"cannot write {output}: it is a symbolic link (export writes a fresh directory; name one)")
    for ancestor in path.absolute().parents:
        if ancestor.is_symlink() or ancestor.exists():
            if not ancestor.is_dir():
                raise OutputError(f"cannot write {output}: {ancestor} is not a directory")
            return


def cmd_describe(loaded: Loaded, args: argparse.Namespace, out: Sink) -> int:
    out.write(loaded.network.describe())
    return OK


def cmd_plan(loaded: Loaded, args: argparse.Namespace, out: Sink) -> int:
    out.write(_plan(loaded, args).describe())
    return OK


def cmd_emit(loaded: Loaded, args: argparse.Namespace, out: Sink) -> int:
    text: str = _plan(loaded, args).emit_stablehlo()
    _write(text, args.output, out)
    return OK


def cmd_dot(loaded: Loaded, args: argparse.Namespace, out: Sink) -> int:
    from topos.render import network_dot, plan_dot

    names = {symbol: name for name, symbol in loaded.named}
    text = plan_dot(_plan(loaded, args), names) if args.plan else network_dot(loaded.network, names)
    _write(text, args.output, out)
    return OK


def cmd_export(loaded: Loaded, args: argparse.Namespace, out: Sink) -> int:
    from topos.export import export

    roots = loaded.roots(args.roots)
    names: dict[Symbol, str] = {}
    for name, symbol in loaded.named:
        if symbol in roots:
            names.setdefault(symbol, name)
    names.update(_input_names(loaded, args.input_names, args.target))
    _export_target(args.output)
    plan = _plan(loaded, args)
    try:
        exported = export(plan, loaded.network.parameters(), args.output, names=names)
    except OSError as error:
        raise OutputError(f"cannot write {args.output}: {error.strerror or error}") from error
    except CheckpointError as error:
        if not isinstance(error.__cause__, OSError):
            raise
        raise OutputError(f"cannot write {args.output}: {error.__cause__.strerror or error.__cause__}") from error.__cause__
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


def cmd_check(loaded: Loaded, args: argparse.Namespace, out: Sink) -> int:
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
    if args.nan:
        report = first_nonfinite(loaded, roots)
        out.write("non-finite values: none in the forward or the gradient\n" if report is None else f"non-finite values:\n{report}\n")
        failed = failed or report is not None
    return CHECK_FAILED if failed else OK


def first_nonfinite(loaded: Loaded, roots: Sequence[Symbol]) -> str | None:
    """``check --nan``: where the first non-finite root came from on the interpreter, else where
    the first non-finite gradient did (the gradient ``check`` runs); None when all are finite."""
    from topos.finiteness import nonfinite
    from topos.stages.gradient import gradient

    network = loaded.network
    parameters = network.parameters()
    report = nonfinite(network, parameters, {}, roots)
    loss = _loss(loaded, roots)
    if report is None and loss is not None and network.parameter_nodes:
        longer, adjoints = gradient(network, loss, network.parameter_symbols())
        report = nonfinite(longer, parameters, {}, adjoints.gradients(), adjoints)
    return None if report is None else str(report)


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


def cmd_bench(loaded: Loaded, args: argparse.Namespace, out: Sink) -> int:
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


def cmd_digest(loaded: Loaded, args: argparse.Namespace, out: Sink) -> int:
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
        epilog="Exit status: 0 ok, 1 check failed (--nan: a value is not finite) or digest differs from --expect, 2 usage error, 3 topos error, "
        "4 FILE or FUNCTION not loadable (sys.exit in it included), 5 output not writable, 6 internal error, "
        "130 interrupted. Failures print one line on stderr; --traceback adds the traceback.",
    )
    parser.add_argument("--traceback", action="store_true", help=TRACEBACK_HELP)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, run: Callable[[Loaded, argparse.Namespace, Sink], int], plans: bool = True) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        # Also accepted after the subcommand; SUPPRESS keeps an absent flag here from
        # overwriting one given before the subcommand.
        sub.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=TRACEBACK_HELP)
        sub.add_argument("target", metavar="FILE:FUNCTION", help="a Python file and a build function build(tape) in it")
        sub.add_argument(
            "--element", type=_element, default="f32", metavar="ELEMENT",
            help=f"element type to record in: {', '.join(sorted(ELEMENTS))}, or one a plugin registers (default f32)",
        )
        if plans:
            sub.add_argument(
                "--roots", nargs="+", metavar="ROOT",
                help="roots by returned name (dict key or tuple position) or node position (%%N); default: every returned value",
            )
        sub.add_argument(
            "--batch", type=_positive, metavar="N",
            help="read the network over N examples first (topos.batch over every input, each default repeated N times)",
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
    sub = command(
        "check",
        "compare every road (exact and fast plans, the recorded gradient plan, XLA when installed) "
        "with the interpreter; exit 1 if an exact road differs in any bit",
        cmd_check,
    )
    sub.add_argument(
        "--nan", action="store_true",
        help="also say where the first non-finite root (or gradient) came from on the interpreter; exit 1 if one is",
    )  # fmt: skip
    sub = command(
        "export",
        "write the plan, its recorded parameters and a loader to a directory that runs with jax alone",
        cmd_export,
    )
    sub.add_argument("--numerics", choices=sorted(NUMERICS), default="fast", help="numerics posture (default fast)")
    sub.add_argument("-o", "--output", metavar="DIR", required=True, help="the directory to create (must not hold files)")
    sub.add_argument(
        "--input-names", nargs="+", metavar="NAME",
        help="names for the function's inputs, in the order it records them (default input_0, input_1, ...); "
        "the export's signature.json and README.md use them",
    )
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


class _Stdout:
    """Standard output for the subcommands: an OSError writing it (a closed pipe, a full
    disk) becomes an :class:`OutputError`, so it ends in status 5 like any other output."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str, /) -> int:
        try:
            return self._stream.write(text)
        except OSError as error:
            raise _stdout_failed(error) from error

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            raise _stdout_failed(error) from error


def _stdout_failed(error: OSError) -> OutputError:
    return OutputError(f"cannot write standard output: {error.strerror or error}", stdout=True)


def _abandon_stdout() -> None:
    """Point file descriptor 1 at the null device: what stays buffered in ``sys.stdout`` is
    flushed again when the interpreter exits, and that second failure would print an
    "Exception ignored" report and turn the status into 120."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test's capture): nothing will be flushed at exit
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, descriptor)
    finally:
        os.close(null)


def _one_line(message: str) -> str:
    return re.sub(r"\s*\n\s*", " | ", message.strip())


def _element(text: str) -> str:
    """``--element``: a built-in name, or one the plugin registry knows (asked only then)."""
    if text in ELEMENTS:
        return text
    from topos import plugins

    known = plugins.element_types()
    if text not in known:
        raise argparse.ArgumentTypeError(f"unknown element type {text!r} (known: {', '.join(sorted(known))})")
    return text


def _element_type(name: str) -> ElementType:
    if name in ELEMENTS:
        return ELEMENTS[name]
    from topos import plugins

    return plugins.element_type(name)


def _input_names(loaded: Loaded, given: Sequence[str] | None, target: str) -> dict[Symbol, str]:
    """``export --input-names``: the recorded inputs, in order, by the names given."""
    if given is None:
        return {}
    network = loaded.network
    inputs = list(network.input_nodes)
    if len(given) != len(inputs):
        recorded = ", ".join(network.describe_symbol(i) for i in inputs) or "none"
        raise _refused(
            InvalidArgumentError,
            f"{target}: --input-names gives {len(given)} name(s) {list(given)} but the function records "
            f"{len(inputs)} input(s) ({recorded})",
        )
    if len(set(given)) != len(given):
        twice = sorted({name for name in given if list(given).count(name) > 1})
        raise _refused(InvalidArgumentError, f"{target}: --input-names repeats {twice}; each input needs its own name")
    return {network.symbol(index): name for index, name in zip(inputs, given, strict=True)}


def _without_launcher(message: str, launcher: str) -> str:
    """Drop the ``file:line`` a ToposError raised by topos itself names when no user line is
    on the stack: it is the line that started the CLI (runpy's, or the console script's),
    which tells a user nothing."""
    return message.removeprefix(f"{launcher}: ").replace(f" (at {launcher})", "")


def _fail(args: argparse.Namespace, error: BaseException, message: str, status: int) -> int:
    if getattr(args, "traceback", False):
        # The cause's traceback: for a LoadError that is the user's exception, which says where.
        shown = error.__cause__ if isinstance(error, (LoadError, OutputError)) and error.__cause__ else error
        traceback.print_exception(shown, file=sys.stderr)
    sys.stderr.write(f"topos: {_one_line(message)}\n")
    sys.stderr.flush()
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module contract)."""
    args = _parser().parse_args(argv)
    launcher = user_site()
    target: str = args.target
    doing = "loading it"
    stdout = _Stdout(sys.stdout)
    try:
        loaded = load(target, _element_type(args.element))
        if args.batch is not None:
            doing = f"batching it over {args.batch} examples"
            loaded = batched(loaded, args.batch, target)
        doing = f"running {args.command}"
        status: int = args.run(loaded, args, stdout)
        stdout.flush()
    except LoadError as error:
        return _fail(args, error, str(error), LOAD_FAILED)
    except OutputError as error:
        if error.stdout:
            _abandon_stdout()
        return _fail(args, error, f"{target}: {error}", OUTPUT_FAILED)
    except ToposError as error:
        message = f"{type(error).__name__}: {_without_launcher(str(error), launcher)}"
        return _fail(args, error, message if target in message else f"{target}: {message}", TOPOS_ERROR)
    except KeyboardInterrupt as error:
        return _fail(args, error, f"{target}: interrupted (KeyboardInterrupt) while {doing}", INTERRUPTED)
    except (Exception, SystemExit) as error:
        # Load failures are LoadErrors already, so this is topos (or code the file handed it) failing.
        return _fail(
            args, error, f"{target}: unexpected {_summary(error)} while {doing}; rerun with --traceback to see where",
            INTERNAL,
        )
    return status
