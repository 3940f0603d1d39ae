"""Progress bars and plots for training loops, both optional (``pip install 'topos-autodiff[viz]'``).

Contract. :class:`Progress` wraps a loop of known length: with ``tqdm`` installed and the
stream on a terminal it draws a bar with the latest loss and the throughput; otherwise (no
``tqdm``, not a terminal, or ``quiet=True``) it draws nothing and costs nothing, and the
loop runs the same. :func:`plot_curves`, :func:`plot_matrix` and :func:`plot_table` write a
PNG with ``matplotlib`` (headless backend) and return its path, or return ``None`` without
``matplotlib``; callers print where the file went, or that it was skipped.

Both libraries are found through :func:`optional`, one place a test can replace to simulate
their absence.

Example:
    >>> with Progress(3, quiet=True) as bar:
    ...     for step in range(3):
    ...         bar.update(loss=1.0 / (step + 1), items=32)
    >>> bar.items
    96
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, TextIO, final

__all__ = ["Options", "Progress", "optional", "options", "plot_curves", "plot_matrix", "plot_table", "wrote"]


@final
class Options:
    """The command line every example shares: ``[--steps N] [--smoke] [--quiet] [--out DIR]``."""

    __slots__ = ("out", "quiet", "smoke", "steps")

    def __init__(self, steps: int, smoke: bool, quiet: bool, out: Path) -> None:
        self.steps = steps
        self.smoke = smoke
        self.quiet = quiet
        self.out = out


def options(
    description: str,
    argv: Sequence[str] | None,
    *,
    steps: int,
    smoke_steps: int,
    out: Path,
    parents: Sequence[argparse.ArgumentParser] = (),
) -> Options:
    """Parse an example's arguments; ``--smoke`` runs ``smoke_steps`` on a small slice of data.

    ``parents`` are an example's own parsers (made with ``add_help=False``): ``--help`` lists
    their flags too, and ``argv`` may hold them.

    Example:
        >>> o = options("demo", ["--smoke"], steps=1000, smoke_steps=5, out=Path("out"))
        >>> o.steps, o.smoke, o.quiet
        (5, True, False)
    """
    parser = argparse.ArgumentParser(description=description, parents=list(parents))
    parser.add_argument("--steps", type=int, default=None, help=f"training steps (default {steps})")
    parser.add_argument("--smoke", action="store_true", help="a few steps on a small slice (the tests run this)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--out", type=Path, default=out, help=f"where plots go (default {out})")
    parsed = parser.parse_args(list(argv) if argv is not None else None)
    chosen = parsed.steps if parsed.steps is not None else (smoke_steps if parsed.smoke else steps)
    return Options(int(chosen), bool(parsed.smoke), bool(parsed.quiet), Path(parsed.out))


def wrote(what: str, path: Path | None) -> str:
    """The line an example prints about a plot: where it went, or why there is none."""
    if path is None:
        return f"{what}: not drawn (install matplotlib: pip install 'topos-autodiff[viz]')"
    return f"{what}: wrote {path}"


def optional(name: str) -> ModuleType | None:
    """The module ``name``, or ``None`` when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


@final
class Progress:
    """A progress bar over ``total`` steps showing loss and items per second."""

    __slots__ = ("_bar", "_start", "items", "steps")

    def __init__(self, total: int, *, description: str = "train", quiet: bool = False, stream: TextIO | None = None) -> None:
        out = sys.stderr if stream is None else stream
        self._bar: Any = None
        self.items = 0
        self.steps = 0
        self._start = time.perf_counter()
        if quiet or not getattr(out, "isatty", lambda: False)():
            return
        tqdm = optional("tqdm")
        if tqdm is not None:
            self._bar = tqdm.tqdm(total=total, desc=description, file=out, leave=False, dynamic_ncols=True)

    def update(self, *, loss: float, items: int) -> None:
        """One step done: ``items`` examples (or tokens) at ``loss``."""
        self.items += items
        self.steps += 1
        if self._bar is not None:
            self._bar.set_postfix(loss=f"{loss:.4f}", rate=f"{self.rate:,.0f}/s", refresh=False)
            self._bar.update(1)

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self._start

    @property
    def rate(self) -> float:
        """Items per second so far."""
        return self.items / max(self.seconds, 1e-9)

    @property
    def drawing(self) -> bool:
        return self._bar is not None

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.close()


def _pyplot() -> Any:
    matplotlib = optional("matplotlib")
    if matplotlib is None:
        return None
    # Headless: a training script must not need a display.
    matplotlib.use("Agg")
    return importlib.import_module("matplotlib.pyplot")


def plot_curves(path: str | Path, curves: Mapping[str, Sequence[float] | tuple[Sequence[float], Sequence[float]]], *, title: str, ylabel: str = "loss") -> Path | None:
    """Line plots of named series (values, or ``(steps, values)`` pairs) into one PNG."""
    plt = _pyplot()
    if plt is None:
        return None
    figure, axes = plt.subplots(figsize=(6, 4))
    for name, series in curves.items():
        if isinstance(series, tuple):
            axes.plot(series[0], series[1], label=name)
        else:
            axes.plot(range(len(series)), series, label=name)
    axes.set_xlabel("step")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.legend()
    return _save(plt, figure, path)


def plot_matrix(path: str | Path, matrix: Sequence[Sequence[int]], labels: Sequence[str], *, title: str) -> Path | None:
    """A confusion matrix (rows: truth, columns: prediction) with counts written in."""
    plt = _pyplot()
    if plt is None:
        return None
    figure, axes = plt.subplots(figsize=(6, 5))
    axes.imshow(matrix, cmap="Blues")
    axes.set_xticks(range(len(labels)), labels)
    axes.set_yticks(range(len(labels)), labels)
    axes.set_xlabel("predicted")
    axes.set_ylabel("true")
    for i, row in enumerate(matrix):
        for j, count in enumerate(row):
            axes.text(j, i, str(count), ha="center", va="center", fontsize=7)
    axes.set_title(title)
    return _save(plt, figure, path)


def plot_table(path: str | Path, rows: Sequence[Sequence[str]], header: Sequence[str], *, title: str) -> Path | None:
    """A small table of text (samples from a language model) as a picture."""
    plt = _pyplot()
    if plt is None:
        return None
    figure, axes = plt.subplots(figsize=(6, 0.4 * len(rows) + 1))
    axes.axis("off")
    axes.table(cellText=[list(r) for r in rows], colLabels=list(header), loc="center")
    axes.set_title(title)
    return _save(plt, figure, path)


def _save(plt: Any, figure: Any, path: str | Path) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    # No timestamp in the PNG metadata: the same run writes the same bytes.
    figure.savefig(target, dpi=100, metadata={"Software": None})
    plt.close(figure)
    return target
