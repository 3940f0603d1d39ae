"""The examples run as a user runs them (in a subprocess), so they cannot rot unnoticed."""

from __future__ import annotations

import importlib
import io
import subprocess
import sys
from pathlib import Path
from types import ModuleType

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


def lesson(name: str) -> ModuleType:
    """Import a makemore lesson in this process (no interpreter start-up per lesson)."""
    if str(MAKEMORE) not in sys.path:
        sys.path.insert(0, str(MAKEMORE))
    return importlib.import_module(name)


def smoke(name: str, out: Path) -> dict[str, float]:
    result: dict[str, float] = lesson(name).main(["--smoke", "--quiet", "--out", str(out)])
    return result


def test_bigram_gradient_descent_reaches_the_counted_loss(tmp_path: Path) -> None:
    result = smoke("bigram", tmp_path)
    assert abs(result["learned"] - result["counted"]) < 5e-4
    assert result["smoothed"] > result["counted"]
    assert (tmp_path / "bigram_loss.png").stat().st_size > 0


@pytest.mark.parametrize("name", ["mlp", "compiled", "emitted", "adam", "batchnorm"])
def test_each_makemore_lesson_learns_in_its_smoke_mode(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = smoke(name, tmp_path)
    out = capsys.readouterr().out
    # 27 equally likely characters cost ln 27 = 3.30; a few hundred steps must beat it.
    assert result["last"] < result["first"] and result["valid"] < 3.2, result
    assert len(out.split("samples: ", 1)[1].splitlines()[0].split()) >= 5
    assert (tmp_path / f"{name}_loss.png").exists() and (tmp_path / f"{name}_samples.png").exists()
    if name == "emitted":
        assert result["envelope"] <= 1.0
    if name == "mlp":
        assert "reloaded bit for bit" in out


def test_the_compiled_and_emitted_roads_train_alike(tmp_path: Path) -> None:
    compiled, emitted = smoke("compiled", tmp_path), smoke("emitted", tmp_path)
    # Same data, same initial parameters; XLA only reorders sums, so the losses stay close.
    assert abs(compiled["valid"] - emitted["valid"]) < 1e-3


def test_lessons_run_without_tqdm_or_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from topos import progress

    monkeypatch.setattr(progress, "optional", lambda name: None)
    result = smoke("mlp", tmp_path)
    out = capsys.readouterr().out
    assert result["valid"] < 3.2
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
    out = run("examples/gradient_descent.py")
    assert "spec unchanged; each state independent and reproducible" in out
