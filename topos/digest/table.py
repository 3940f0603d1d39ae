"""The committed digest table and the command that checks it (``python -m topos.digest``).

Contract: :data:`TABLE` is ``topos/assets/digests.json``; :func:`compute` digests jobs,
:func:`write_table` regenerates the file, :func:`check` lists every entry that differs, and
:func:`main` is the command line (``--check``, ``--write``, ``--table``, ``--jobs``), exiting
1 on a mismatch and 3 when the table cannot be read or written.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from topos.digest.jobs import JOBS, Job
from topos.digest.run import ELEMENTS, FORMAT
from topos.errors import InvalidArgumentError, ToposError

__all__ = [
    "TABLE",
    "check",
    "compute",
    "main",
    "read_table",
    "write_table",
]

TABLE: Final = Path(__file__).resolve().parent.parent / "assets" / "digests.json"
"""The committed table: ``{"format", "regenerate", "jobs": {name: {"steps", "sizes", "digests": {element: hex}}}}``."""


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
