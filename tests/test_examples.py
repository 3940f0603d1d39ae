"""The examples run as a user runs them (in a subprocess), so they cannot rot unnoticed."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*arguments: str) -> str:
    done = subprocess.run(
        [sys.executable, *arguments], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_names_corpus_is_the_committed_ssa_2017_list() -> None:
    names = (ROOT / "examples" / "data" / "names.txt").read_text(encoding="ascii").split()
    assert len(names) == 32469
    assert names[:5] == ["emma", "olivia", "ava", "isabella", "sophia"]
    assert all(name.isalpha() and name.islower() for name in names)


MAKEMORE = ROOT / "examples" / "makemore"


def lesson(name: str, folder: Path = MAKEMORE) -> ModuleType:
    """Import a lesson in this process (no interpreter start-up per lesson)."""
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return importlib.import_module(name)


class Smoke(NamedTuple):
    result: dict[str, float]
    out: str
    folder: Path


_RUNS: dict[tuple[str, Path], Smoke] = {}


def smoke(name: str, out: Path, folder: Path = MAKEMORE) -> Smoke:
    """A lesson's smoke mode, run once per test session (several tests read the same run)."""
    key = (name, folder)
    if key not in _RUNS:
        target = out / name
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            result: dict[str, float] = lesson(name, folder).main(["--smoke", "--quiet", "--out", str(target)])
        _RUNS[key] = Smoke(result, printed.getvalue(), target)
    return _RUNS[key]


@pytest.fixture(scope="module")
def plots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("plots")


def test_bigram_gradient_descent_reaches_the_counted_loss(plots: Path) -> None:
    run = smoke("bigram", plots)
    assert abs(run.result["learned"] - run.result["counted"]) < 5e-4
    assert run.result["smoothed"] > run.result["counted"]
    assert (run.folder / "bigram_loss.png").stat().st_size > 0


@pytest.mark.parametrize("name", ["mlp", "compiled", "emitted", "adam", "batchnorm", "facades"])
def test_each_makemore_lesson_learns_in_its_smoke_mode(name: str, plots: Path) -> None:
    run = smoke(name, plots)
    result = run.result
    # 27 equally likely characters cost ln 27 = 3.30; a few dozen steps must beat it.
    assert result["last"] < result["first"] and result["valid"] < 3.2, result
    assert len(run.out.split("samples: ", 1)[1].splitlines()[0].split()) >= 5
    assert (run.folder / f"{name}_loss.png").exists() and (run.folder / f"{name}_samples.png").exists()
    if name == "emitted":
        assert result["envelope"] <= 1.0
    if name == "mlp":
        assert "reloaded bit for bit" in run.out


def test_the_compiled_and_emitted_roads_train_alike(plots: Path) -> None:
    compiled, emitted = smoke("compiled", plots).result, smoke("emitted", plots).result
    # Same data, same initial parameters; XLA only reorders sums, so the losses stay close.
    assert abs(compiled["valid"] - emitted["valid"]) < 1e-3


def test_the_facades_lesson_trains_the_mlp_lessons_model(plots: Path) -> None:
    # The same architecture, data, seed and steps written with topos.nn layers instead of
    # corpus.CharMlp's hand-written forward: the training curve is the same one.
    facades, mlp = smoke("facades", plots).result, smoke("mlp", plots).result
    assert facades["first"] == mlp["first"] and abs(facades["valid"] - mlp["valid"]) < 1e-3


def test_the_transformer_lesson_learns_characters(plots: Path) -> None:
    run = smoke("transformer", plots)
    # From ln 27 = 3.30 at the start; a few dozen Adam steps reach the bigram's neighbourhood.
    assert run.result["first"] > 3.2 and run.result["valid"] < 3.0 and run.result["last"] < run.result["first"]
    assert (run.folder / "transformer_loss.png").exists() and (run.folder / "transformer_samples.png").exists()


def test_data_parallel_training_on_eight_host_devices_stays_in_its_envelope(tmp_path: Path) -> None:
    # Its own process: XLA takes the host device count once, before jax starts.
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "examples/makemore/parallel.py", "--smoke", "--quiet", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False, env=env,
    )
    # The lesson exits non-zero when a gradient or a loss leaves its envelope.
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'sdy.mesh @mesh = <["data"=8]>' in done.stdout and "largest loss gap" in done.stdout
    valid = float(done.stdout.split("parallel: ", 1)[1].split("valid ", 1)[1].split()[0])
    assert valid < 3.2 and (tmp_path / "parallel_gap.png").exists()


def test_lessons_run_without_tqdm_or_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from topos import progress

    monkeypatch.setattr(progress, "optional", lambda name: None)
    result = lesson("xor", ROOT / "examples").main(["--smoke", "--quiet", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert result["correct"] == 4
    assert "loss curve: not drawn (install matplotlib" in out
    assert not list(tmp_path.glob("*.png"))


def test_the_progress_bar_draws_on_a_terminal_and_not_elsewhere() -> None:
    from topos.progress import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal, pipe = Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        with Progress(3, stream=stream) as bar:
            for _ in range(3):
                bar.update(loss=0.5, items=10)
        assert bar.items == 30
    assert "train:" in terminal.getvalue() and pipe.getvalue() == ""
    with Progress(3, stream=terminal, quiet=True) as bar:
        assert not bar.drawing


def test_gradient_descent_keeps_the_spec_and_each_state_independent() -> None:
    out = run("examples/gradient_descent.py", "--smoke")
    assert "spec unchanged; each state independent and reproducible" in out


SMALL = ROOT / "examples"


def test_xor_separates_all_four_points(plots: Path) -> None:
    run = smoke("xor", plots, SMALL)
    assert run.result["correct"] == 4 and run.result["last"] < 0.1 * run.result["first"]
    assert (run.folder / "xor_loss.png").stat().st_size > 0


def test_moons_draws_a_curved_boundary(plots: Path) -> None:
    run = smoke("moons", plots, SMALL)
    # A straight line scores about 0.85 on this data; a curved boundary does better.
    assert run.result["accuracy"] > 0.9 and run.result["last"] < run.result["first"]
    assert (run.folder / "moons_loss.png").stat().st_size > 0


def test_regression_fits_the_curve_not_its_mean(plots: Path) -> None:
    run = smoke("regression", plots, SMALL)
    # Predicting the mean of sin(3x) on [-1, 1] costs about 0.5; the noise alone 0.01 on train.
    assert run.result["test"] < 0.05 and run.result["last"] < 0.1 * run.result["first"]
    assert (run.folder / "regression_loss.png").stat().st_size > 0


def test_per_example_gradients_match_the_loop_bit_for_bit_and_a_dp_sgd_step_learns(capsys: pytest.CaptureFixture[str]) -> None:
    result = lesson("dp_sgd", ROOT / "examples" / "per_example").main(["--smoke", "--quiet"])
    out = capsys.readouterr().out
    # Every example of the first batch: gradients, norm and clipped gradient, batched Exact plan against the loop.
    assert result["matching"] == result["count"] == 16
    assert "16 of 16 examples bit for bit" in out and "clipped at C = 1.0" in out
    assert result["median_norm"] > 0 and result["last"] < result["first"]


def test_the_batching_page_runs_as_written() -> None:
    # docs/batching.md's blocks build on each other: run them in order in one namespace.
    import re

    page = (ROOT / "docs" / "batching.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    for number, block in enumerate(blocks):
        exec(compile(block, f"docs/batching.md block {number}", "exec"), namespace)
