"""Every float32 input of a portable map against the correctly rounded reference.

Contract:
- ``python tests/libm_exhaustive.py --map exp --slices 0:256 --out results/`` checks the
  2**32 float32 bit patterns of one map (``--map all``: every map) in 256 slices of
  2**24 consecutive patterns (slice ``k`` is patterns ``k * 2**24`` up to the next); each
  finished slice is written as ``OUT/MAP/slice-KKK.json`` (inputs checked, mismatches with
  their first inputs, seconds, date, command). A slice whose file exists (for the same
  candidate, complete) is skipped, so a run can stop at any point and resume; ``--force``
  redoes it. ``--jobs N`` checks N slices at a time in worker processes.
- ``python tests/libm_exhaustive.py --summary --out results/`` merges the slice files into a
  markdown table (map, inputs checked, mismatches, first mismatching inputs, total time,
  date, command), printed and written to ``OUT/summary.md``.
- ``--adopt OLD_LIBM --out results/`` takes slice files checked against an older checkout's
  ``libm`` folder, only when its sources read the same as today's (:func:`canonical_source`:
  the same code, whatever its comments, docstrings and package); a long run can go on in a
  frozen checkout while the tree moves.
- ``--candidate numpy`` checks numpy's own float32 ufuncs instead of topos's maps (they are
  not correctly rounded: a check of the harness itself).
- The reference is :func:`libm_reference.correctly_rounded_f32`; topos is imported only for
  the candidate.
- ``tests/test_libm_f32.py::test_libm_exhaustive`` (``pytest -m libm_exhaustive``) runs the
  whole thing.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import datetime
import hashlib
import json
import multiprocessing
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # libm_reference, run as a script

from libm_reference import UNARY, correctly_rounded_f32, mismatches

Array = np.ndarray[Any, Any]
Candidate = Callable[[str, Array], Array]

SLICE_BITS: Final = 24
SLICES: Final = 2 ** (32 - SLICE_BITS)
SLICE_SIZE: Final = 2**SLICE_BITS
CHUNK: Final = 2**20  # lanes per evaluation (the long double arrays are 16 bytes a lane)
KEPT_MISMATCHES: Final = 64  # inputs recorded per slice file

# The topos operation of each map name.
OPERATION_NAMES: Final = {
    "exp": "EXP",
    "log": "LN",
    "sqrt": "SQRT",
    "tanh": "TANH",
    "sin": "SIN",
    "cos": "COS",
    "log1p": "LOG1P",
    "expm1": "EXPM1",
    "erf": "ERF",
    "erf_derivative": "ERF_DERIVATIVE",
    "atan": "ATAN",
}


def topos_candidate(name: str, x: Array) -> Array:
    """topos's portable float32 map ``name`` (the thing under test)."""
    from topos.ir.ops import MapOperation
    from topos.kernels import libm

    return libm.evaluate(MapOperation[OPERATION_NAMES[name]], x)


def numpy_candidate(name: str, x: Array) -> Array:
    """numpy's float32 ufunc for ``name``: a stand-in known to misround (erf, which numpy
    lacks, and erf_derivative go through float64, which is nearly always right)."""
    with np.errstate(all="ignore"):
        if name == "erf":
            import math

            return np.array([math.erf(v) for v in x.astype(np.float64).tolist()], np.float64).astype(np.float32)
        if name == "erf_derivative":
            wide = x.astype(np.float64)
            product: Array = (2 / np.sqrt(np.pi) * np.exp(-wide * wide)).astype(np.float32)
            return product
        ufunc = {"log": np.log, "atan": np.arctan}.get(name) or getattr(np, name)
        result: Array = ufunc(x)
        return result


CANDIDATES: Final[dict[str, Candidate]] = {"topos": topos_candidate, "numpy": numpy_candidate}


def slice_inputs(index: int, start: int, stop: int) -> Array:
    """The float32 values of bit patterns ``index * 2**24 + [start, stop)``."""
    base = index * SLICE_SIZE
    return np.arange(base + start, base + stop, dtype=np.uint64).astype(np.uint32).view(np.float32)


LIBM: Final = Path(__file__).resolve().parent.parent / "topos" / "kernels" / "libm"


# Where the map sources have lived. Moving the package changes the import lines, not a value.
HOMES: Final = ("topos.backends.libm", "topos.kernels.libm")


def _drop_strings(body: list[ast.stmt]) -> list[ast.stmt]:
    kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str))]
    return kept or [ast.Pass()]


def canonical_source(source: str) -> str:
    """``source`` as Python runs it, less what cannot change a value: comments, layout, bare
    strings (docstrings), the package the module lives in (imports from any of :data:`HOMES`,
    or relative ones, name the package ``<libm>``) and the order of its top-level imports."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                setattr(node, field, _drop_strings(body))
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module, node.level = "<libm>" + ("." + module if module else ""), 0
            for home in HOMES:
                if module == home or module.startswith(home + "."):
                    module = "<libm>" + module[len(home) :]
            node.module = module
    imports = sorted(ast.dump(s) for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom)))
    rest = [ast.dump(s) for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
    return "\n".join(imports + rest)


def sources_fingerprint(folder: Path) -> str:
    """A SHA-256 of the canonical sources (:func:`canonical_source`) of ``folder/*.py``, in
    name order."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + canonical_source(path.read_text()).encode() + b"\0")
    return digest.hexdigest()


def text_fingerprint(folder: Path) -> str:
    """The fingerprint slice files carried before :func:`sources_fingerprint`: a SHA-256 of the
    bytes of ``folder/*.py`` in name order (kept so :func:`adopt` can recognize them)."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def fingerprint(candidate: str) -> str:
    """What a slice's verdict is about: for topos, :func:`sources_fingerprint` of
    ``topos/kernels/libm``, so a slice checked against code that computes otherwise is never
    taken as done (an edit to a comment or a docstring, or a move of the package, keeps it);
    for numpy, its version."""
    if candidate != "topos":
        return f"numpy {np.__version__}"
    return sources_fingerprint(LIBM)


def adopt(out: Path, older: Path) -> int:
    """Take the topos slice files under ``out`` that were checked against the map sources in
    ``older`` (the ``libm`` folder of an earlier checkout) when those sources read the same as
    today's (:func:`canonical_source`); each adopted file gets today's fingerprint and keeps
    the one it was checked under as ``checked_sources``. Returns how many were adopted;
    refuses, changing nothing, when the sources differ."""
    today = fingerprint("topos")
    if sources_fingerprint(older) != today:
        raise SystemExit(f"{older} does not read the same as {LIBM}: its slices must be checked again")
    known = {text_fingerprint(older), today}
    adopted = 0
    for path in sorted(out.glob("*/slice-*.json")):
        record = json.loads(path.read_text())
        if record.get("candidate") != "topos" or record.get("sources") not in known:
            continue
        if record["sources"] != today:
            record.setdefault("checked_sources", record["sources"])
            record["sources"] = today
            path.write_text(json.dumps(record, indent=1) + "\n")
            adopted += 1
    return adopted


def check_slice(name: str, index: int, candidate: str = "topos") -> dict[str, Any]:
    """Compare every input of slice ``index`` of map ``name``; the slice file's content."""
    began = time.perf_counter()
    compute = CANDIDATES[candidate]
    found: list[dict[str, str]] = []
    total = 0
    checked = 0
    for start in range(0, SLICE_SIZE, CHUNK):
        x = slice_inputs(index, start, start + CHUNK)
        got = np.asarray(compute(name, x), np.float32)
        want = correctly_rounded_f32(name, x)
        lanes = mismatches(got, want)
        total += int(lanes.size)
        checked += int(x.size)
        for lane in lanes[: max(0, KEPT_MISMATCHES - len(found))]:
            found.append(
                {
                    "input": f"0x{int(x.view(np.uint32)[lane]):08x}",
                    "x": repr(float(x[lane])),
                    "got": f"0x{int(got.view(np.uint32)[lane]):08x} ({float(got[lane])!r})",
                    "want": f"0x{int(want.view(np.uint32)[lane]):08x} ({float(want[lane])!r})",
                }
            )
    return {
        "map": name,
        "candidate": candidate,
        "sources": fingerprint(candidate),
        "slice": index,
        "first_bits": f"0x{index * SLICE_SIZE:08x}",
        "count": checked,
        "mismatches": total,
        "mismatching_inputs": found,
        "seconds": round(time.perf_counter() - began, 3),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        # As typed for a script run (``python tests/libm_exhaustive.py ...``); under pytest
        # it is pytest's command line.
        "command": " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv]),
        "numpy": np.__version__,
    }


def slice_path(out: Path, name: str, index: int) -> Path:
    return out / name / f"slice-{index:03d}.json"


def is_done(path: Path, candidate: str) -> bool:
    """Whether ``path`` holds a complete slice result for ``candidate``."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return bool(
        record.get("candidate") == candidate
        and record.get("count") == SLICE_SIZE
        and record.get("sources") == fingerprint(candidate)
    )


def _run_one(task: tuple[str, int, str, str]) -> dict[str, Any]:
    name, index, candidate, out = task
    record = check_slice(name, index, candidate)
    path = slice_path(Path(out), name, index)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Write then rename: an interrupted run leaves no half-written file to be taken as done.
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(partial, path)
    return record


def run(
    names: Sequence[str],
    slices: range,
    out: Path,
    candidate: str = "topos",
    jobs: int = 1,
    force: bool = False,
    report: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Check ``slices`` of each map in ``names`` (skipping finished ones unless ``force``);
    the records of the slices checked now."""
    tasks = [
        (name, index, candidate, str(out))
        for name in names
        for index in slices
        if force or not is_done(slice_path(out, name, index), candidate)
    ]
    skipped = len(names) * len(slices) - len(tasks)
    if skipped:
        report(f"{skipped} slices already done in {out}")
    records: list[dict[str, Any]] = []
    if jobs <= 1:
        results: Any = map(_run_one, tasks)
        for record in results:
            records.append(record)
            report(_line(record))
        return records
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
        for record in pool.map(_run_one, tasks):
            records.append(record)
            report(_line(record))
    return records


def _line(record: dict[str, Any]) -> str:
    return (
        f"{record['map']} slice {record['slice']:3d} ({record['first_bits']}): "
        f"{record['mismatches']} mismatches in {record['count']} inputs, {record['seconds']:.1f} s"
    )


def summary(out: Path) -> str:
    """The markdown table of every slice file under ``out``."""
    rows = [
        "| map | candidate | slices | inputs checked | mismatches | first mismatching inputs | total time | date | command |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for directory in sorted(p for p in out.iterdir() if p.is_dir()):
        records = []
        for path in sorted(directory.glob("slice-*.json")):
            try:
                records.append(json.loads(path.read_text()))
            except ValueError:
                continue
        if not records:
            continue
        by_candidate: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            by_candidate.setdefault(str(record["candidate"]), []).append(record)
        for candidate, group in sorted(by_candidate.items()):
            group.sort(key=lambda r: int(r["slice"]))
            first = [m["input"] for r in group for m in r["mismatching_inputs"]][:4]
            seconds = sum(float(r["seconds"]) for r in group)
            commands = sorted({str(r["command"]) for r in group})
            more = f" (+{len(commands) - 1} more)" if len(commands) > 1 else ""
            rows.append(
                f"| {directory.name} | {candidate} | {len(group)}/{SLICES} "
                f"| {sum(int(r['count']) for r in group):,} "
                f"| {sum(int(r['mismatches']) for r in group):,} "
                f"| {', '.join(f'`{i}`' for i in first) or '-'} "
                f"| {seconds / 3600:.2f} h ({seconds:.0f} s) "
                f"| {max(str(r['date']) for r in group)} "
                f"| `{commands[0]}`{more} |"
            )
    return "\n".join(rows) + "\n"


def totals(
    out: Path, names: Sequence[str], candidate: str = "topos", slices: range = range(SLICES)
) -> dict[str, tuple[int, int]]:
    """``{map: (inputs checked, mismatches)}`` over the slice files of ``candidate`` among
    ``slices``."""
    result: dict[str, tuple[int, int]] = {}
    for name in names:
        checked = bad = 0
        for index in slices:
            try:
                record = json.loads(slice_path(out, name, index).read_text())
            except (OSError, ValueError):
                continue
            if record.get("candidate") == candidate:
                checked += int(record["count"])
                bad += int(record["mismatches"])
        result[name] = (checked, bad)
    return result


def parse_slices(text: str) -> range:
    first, _, last = text.partition(":")
    span = range(int(first), int(last) if last else int(first) + 1)
    if span.start < 0 or span.stop > SLICES or len(span) == 0:
        raise argparse.ArgumentTypeError(f"slices must be a non-empty A:B within 0:{SLICES}")
    return span


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--map", default="all", help=f"one of {', '.join(UNARY)}, or all")
    parser.add_argument("--slices", type=parse_slices, default=range(SLICES), help="A:B (default 0:256)")
    parser.add_argument("--out", type=Path, required=True, help="folder of slice files")
    parser.add_argument("--candidate", choices=sorted(CANDIDATES), default="topos")
    parser.add_argument("--jobs", type=int, default=1, help="slices checked at once")
    parser.add_argument("--force", action="store_true", help="redo finished slices")
    parser.add_argument("--summary", action="store_true", help="merge the slice files and stop")
    parser.add_argument("--adopt", type=Path, metavar="OLD_LIBM", help="take slices checked against an older, equivalent libm folder, and stop")
    args = parser.parse_args(argv)
    out: Path = args.out
    if args.adopt:
        print(f"adopted {adopt(out, args.adopt)} slice files checked against {args.adopt}")
        return 0
    if args.summary:
        table = summary(out)
        (out / "summary.md").write_text(table)
        print(table, end="")
        return 0
    names = list(UNARY) if args.map == "all" else [args.map]
    unknown = [n for n in names if n not in UNARY]
    if unknown:
        parser.error(f"unknown map {unknown[0]!r}; expected one of {', '.join(UNARY)} or all")
    run(names, args.slices, out, args.candidate, args.jobs, args.force)
    # The exit status covers every finished slice of these maps, this run's and earlier ones.
    found = totals(out, names, args.candidate, args.slices)
    return 1 if any(bad for _, bad in found.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
