"""Network cards summarize: bounded size for a GPT, byte-stable across processes, counts that add up."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from topos import Network, Symbol, Tape
from topos.nn import named_parameters
from topos.render import network_html

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "gpt2"))
from model import Config, build, record_logits  # noqa: E402

# The card grows with opcodes and parameter tensors (about 16 per block), never with nodes.
_BYTES_PER_BLOCK = 2_600
_BYTES_FIXED = 14_000
_LISTED = 64

_SCRIPT = """
import sys
sys.path.insert(0, {gpt2!r})
from model import Config, build, record_logits
from topos import Tape
from topos.nn import named_parameters
from topos.render import network_html
config = Config(vocab=64, context=16, layers={layers}, dim=32, heads=4)
tape = Tape()
model = build(tape, config)
record_logits(tape, model, config, 1, 8)
names = {{symbol: str(path) for path, symbol in named_parameters(model)}}
sys.stdout.write(network_html(tape.seal(), names))
"""


def _gpt(layers: int, config: Config | None = None) -> tuple[Network, dict[Symbol, str]]:
    config = config or Config(vocab=64, context=16, layers=layers, dim=32, heads=4)
    tape = Tape()
    model = build(tape, config)
    record_logits(tape, model, config, 1, 8)
    names = {symbol: str(path) for path, symbol in named_parameters(model)}
    return tape.seal(), names


def _rows(card: str, first_header: str) -> list[list[str]]:
    table = card[card.index(f"<th>{first_header}</th>") :]
    table = table[: table.index("</table>")]
    return [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table)]


@pytest.mark.parametrize("layers", [1, 2, 4])
def test_the_card_stays_within_a_bound_linear_in_the_blocks(layers: int) -> None:
    network, names = _gpt(layers)
    card = network_html(network, names)
    assert len(card.encode()) <= _BYTES_FIXED + _BYTES_PER_BLOCK * layers, len(card.encode())
    assert len(network) > 100 * layers > _LISTED // 2  # more nodes than the card lists


@pytest.mark.parametrize("layers", [1, 3])
def test_the_counts_add_up_to_the_recording(layers: int) -> None:
    network, names = _gpt(layers)
    card = network_html(network, names)
    by_op = _rows(card, "op")
    assert sum(int(count) for _, count in by_op) == len(network)
    assert {op for op, _ in by_op} == {node.name for node in network.nodes_}
    modules = _rows(card, "module")
    assert sum(int(row[1]) for row in modules) == len(network.parameter_nodes)
    assert sum(int(row[2]) for row in modules) == sum(network.nodes_[i].shape.volume for i in network.parameter_nodes)
    tree = _rows(card, "path")
    assert sorted(row[0] for row in tree) == sorted(names.values())
    assert f"the first 64 of {len(network)}, {len(network) - 64} left out" in card


def test_the_card_is_byte_stable_across_processes() -> None:
    script = _SCRIPT.format(gpt2=str(ROOT / "examples" / "gpt2"), layers=2)
    outputs = [
        subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, capture_output=True, check=True, timeout=300,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("1", "2")
    ]
    assert outputs[0] == outputs[1]
    assert outputs[0] == network_html(*_gpt(2)).encode()


@pytest.mark.gpt2_card
def test_a_gpt2_124m_card_is_under_50_kb(request: pytest.FixtureRequest) -> None:
    # Drawing 124M random weights takes minutes on two cores, so this one is opt-in.
    expression = str(request.config.getoption("-m") or "")
    if "gpt2_card" not in expression or "not gpt2_card" in expression:
        pytest.skip("opt-in: run with -m gpt2_card")
    network, names = _gpt(12, Config())
    assert len(network_html(network, names).encode()) < 50_000
