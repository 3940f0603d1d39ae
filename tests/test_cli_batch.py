"""``topos ... --batch N``: every subcommand reads the network over N examples first.

The CLI's batched network must be exactly what ``topos.batch`` over every input gives, so
its describe/plan text is compared with the library's, and its values, example by example,
bit for bit with the network run alone on that example's input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import topos_command as topos

from topos import Numerics, Tape, batch
from topos.cli import Loaded, batched
from topos.errors import InvalidArgumentError

BUILD = '''
import numpy as np

def build(t):
    w = t.parameter(np.array([[0.5, -1.0, 0.25], [2.0, 0.25, -0.5]], np.float32))
    x = t.input(np.array([[1.0, 2.0], [-0.5, 0.75]], np.float32))
    h = x.matmul(w).tanh()
    return {"h": h, "loss": (h * h).sum()}

def only_parameters(t):
    return t.parameter([1.0, 2.0]).sum()
'''


@pytest.fixture(scope="module")
def build_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli_batch") / "model.py"
    path.write_text(BUILD)
    return path


def _recorded(build_file: Path, name: str = "build") -> tuple[Any, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(BUILD, str(build_file), "exec"), namespace)
    network, symbols = Tape.record(namespace[name])
    return network, symbols


@pytest.mark.parametrize("size", [1, 3])
def test_describe_and_plan_print_the_batched_network(build_file: Path, size: int) -> None:
    network, symbols = _recorded(build_file)
    inputs = [network.symbol(i) for i, node in enumerate(network.nodes_) if node.name == "Input"]
    wide, mapping = batch(network, over=inputs, size=size)
    described = topos("describe", f"{build_file}:build", "--batch", str(size))
    assert described.returncode == 0, described.stderr
    assert described.stdout == wide.describe()
    planned = topos("plan", f"{build_file}:build", "--batch", str(size), "--roots", "loss", "--numerics", "exact")
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout == wide.entry(mapping.of(symbols["loss"])).numerics(Numerics.EXACT).lower().describe()
    assert f"[{size}]" in planned.stdout  # the loss is now one value per example


def test_batched_values_are_each_example_alone_bit_for_bit(build_file: Path) -> None:
    network, symbols = _recorded(build_file)
    wide = batched(Loaded(network, tuple(symbols.items())), 4, "model.py:build")
    x = next(network.symbol(i) for i, node in enumerate(network.nodes_) if node.name == "Input")
    rng = np.random.default_rng(5)
    examples = rng.standard_normal((4, 2, 2)).astype(np.float32)
    named = dict(wide.named)
    plan = wide.network.entry(list(named.values())).numerics(Numerics.EXACT).lower()
    wide_input = next(wide.network.symbol(i) for i, node in enumerate(wide.network.nodes_) if node.name == "Input")
    run = plan.forward(wide.network.parameters(), {wide_input: examples})
    for b in range(4):
        alone = network.forward(network.parameters(), {x: examples[b]})
        for name in ("h", "loss"):
            got = np.asarray(run.of(named[name]).numpy())[b]
            want = np.asarray(alone.of(symbols[name]).numpy())
            assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist(), (name, b)


def test_check_passes_on_every_road_of_the_batched_network(build_file: Path) -> None:
    done = topos("check", f"{build_file}:build", "--batch", "3")
    assert done.returncode == 0, done.stderr
    assert "fail" not in done.stdout and "plan" in done.stdout


def test_a_network_without_inputs_is_refused_by_name(build_file: Path) -> None:
    done = topos("plan", f"{build_file}:only_parameters", "--batch", "2")
    assert done.returncode == 3
    assert "InvalidArgumentError" in done.stderr and "only_parameters" in done.stderr and "--batch 2" in done.stderr
    network, result = _recorded(build_file, "only_parameters")
    with pytest.raises(InvalidArgumentError, match="needs an input"):
        batched(Loaded(network, (("result", result),)), 2, "model.py:only_parameters")


@pytest.mark.parametrize("size", ["0", "-1", "2.5", "two"])
def test_a_batch_size_that_is_not_a_positive_whole_number_is_a_usage_error(build_file: Path, size: str) -> None:
    done = topos("describe", f"{build_file}:build", "--batch", size)
    assert done.returncode == 2 and "--batch" in done.stderr and done.stdout == ""


def test_digest_names_the_batched_loss_that_is_no_longer_rank_0(build_file: Path) -> None:
    done = topos("digest", f"{build_file}:build", "--batch", "2", "--roots", "loss")
    assert done.returncode == 3
    assert "rank 0" in done.stderr and "[2]" in done.stderr
