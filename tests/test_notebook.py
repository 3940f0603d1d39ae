"""docs/notebook.ipynb runs top to bottom and shows the cards it promises."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def test_the_example_notebook_runs_and_shows_cards(monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel inherits the environment: make it import this checkout's topos.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    notebook: Any = nbformat.read(ROOT / "docs" / "notebook.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), "ship it without outputs"
    NotebookClient(notebook, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    results = [output for cell in code for output in cell.outputs if output.output_type == "execute_result"]
    assert abs(float(results[0].data["text/plain"]) - 2.0) < 1e-6
    htmls = [output.data.get("text/html", "") for output in results]
    assert htmls[1].startswith('<div class="topos-card">') and "Network: 6 nodes" in htmls[1]
    assert "Parameters: 1 slots" in htmls[2]
    assert "Plan: forward" in htmls[3] and "<polyline" in htmls[3]
    printed = "".join(output.get("text", "") for output in code[-1].outputs if output.output_type == "stream")
    assert printed.startswith("digraph topos_plan {")
