"""The examples run as a user runs them (in a subprocess), so they cannot rot unnoticed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def test_makemore_trains_checkpoints_and_samples() -> None:
    out = run("examples/makemore_mlp.py", "250").splitlines()
    losses = [float(line.split()[-1]) for line in out if line.startswith("step")]
    # Two reports: the first step, then the mean of 250 Adam steps, which must be lower.
    assert len(losses) == 2 and losses[1] < losses[0]
    assert any(line.startswith("checkpoint:") for line in out)
    assert sum(line.startswith("sample:") for line in out) == 5


def test_gradient_descent_keeps_the_spec_and_each_state_independent() -> None:
    out = run("examples/gradient_descent.py")
    assert "spec unchanged; each state independent and reproducible" in out
