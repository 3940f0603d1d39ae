"""Pictures and cards: well-formed DOT, balanced escaped HTML, byte-stable across processes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import Network, Symbol, Tape, Tensor, Value, f32, f64
from topos.nn import conv2d, max_pool
from topos.render import (
    RenderError,
    field_html,
    live_chart_svg,
    network_dot,
    network_html,
    plan_dot,
    plan_html,
    render_svg,
    run_html,
)

ROOT = Path(__file__).resolve().parent.parent


def convnet() -> tuple[Network, dict[str, Symbol]]:
    rng = np.random.default_rng(0)

    def build(t: Tape) -> dict[str, Value]:
        x = t.input(rng.standard_normal((2, 2, 6, 6)))
        k = t.parameter(rng.standard_normal((3, 2, 3, 3)) * 0.3)
        b = t.parameter(rng.standard_normal(3) * 0.1)
        pooled = max_pool(conv2d(x, k, b, stride=1, padding=1).relu(), 2)
        return {"x": x, "k": k, "b": b, "pooled": pooled, "loss": (pooled * pooled).sum()}

    return Tape.record(build, element=f32)


# --------------------------------------------------------------------------- a tiny DOT checker

_NODE = re.compile(r'^\s*(n\d+) \[label="((?:[^"\\]|\\.)*)".*\];$')
_EDGE = re.compile(r"^\s*(n\d+) -> (n\d+);$")


def parse_dot(text: str) -> tuple[dict[str, str], list[tuple[str, str]], list[str]]:
    """Nodes (name -> label), edges and cluster names; asserts the text is well formed."""
    assert text.endswith("}\n")
    depth = 0
    in_string = False
    escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            assert depth >= 0, "a closing brace without its opening one"
    assert depth == 0 and not in_string
    nodes: dict[str, str] = {}
    edges: list[tuple[str, str]] = []
    clusters: list[str] = []
    for line in text.splitlines():
        if (node := _NODE.match(line)) is not None:
            assert node.group(1) not in nodes, f"{node.group(1)} declared twice"
            nodes[node.group(1)] = node.group(2)
        elif (edge := _EDGE.match(line)) is not None:
            edges.append((edge.group(1), edge.group(2)))
        elif line.strip().startswith("subgraph "):
            clusters.append(line.split()[1])
    for source, target in edges:
        assert source in nodes and target in nodes, f"edge {source} -> {target} names an undeclared node"
    return nodes, edges, clusters


# --------------------------------------------------------------------------- a tiny HTML checker

_VOID = {"br", "hr", "img", "input", "meta", "link", "col", "area", "base", "wbr", "source"}


class Balance(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_html(fragment: str) -> Balance:
    parser = Balance()
    parser.feed(fragment)
    parser.close()
    assert parser.stack == [], f"unclosed tags {parser.stack}"
    return parser


# --------------------------------------------------------------------------- DOT


def test_network_dot_is_well_formed_and_draws_every_node_and_link() -> None:
    network, s = convnet()
    nodes, edges, clusters = parse_dot(network_dot(network, {s["k"]: "conv.kernel"}))
    assert len(nodes) == len(network) and clusters == []
    assert sorted(edges) == sorted((f"n{o}", f"n{i}") for i, n in enumerate(network.nodes()) for o in n.operands)
    for index, node in enumerate(network.nodes()):
        label = nodes[f"n{index}"].split("\\n")
        assert label[0].startswith(f"%{index} {node.name}") and label[1] == f"{node.shape} {node.element}"
    assert nodes[f"n{s['k'].index}"].endswith("\\nconv.kernel")
    assert network.to_dot() == network_dot(network)


def test_plan_dot_draws_elected_fusions_as_clusters_and_released_values_dashed() -> None:
    network, s = convnet()
    plan = network.entry(s["loss"]).lower()
    assert len(plan.patterns()) == 2
    text = plan_dot(plan)
    nodes, _, clusters = parse_dot(text)
    assert clusters == ["cluster_0", "cluster_1"]
    assert set(nodes) == {f"n{i}" for i in plan.scheduled}
    released = {v for freed in plan.releases for v in freed}
    assert released
    lines = {m.group(1): line for line in text.splitlines() if (m := _NODE.match(line))}
    for index in plan.scheduled:
        assert ("dashed" in lines[f"n{index}"]) == (index in released), index
        assert nodes[f"n{index}"].endswith(plan.label(index))
    # Each cluster holds exactly its match's nodes.
    blocks = re.findall(r"subgraph (cluster_\d+) \{\n(.*?)\n  \}", text, re.S)
    for (name, body), match in zip(blocks, plan.patterns(), strict=True):
        inside = set(re.findall(r"^\s*(n\d+) \[", body, re.M))
        assert inside == {f"n{i}" for i in match.nodes}, name


@settings(max_examples=25, deadline=None)
@given(st.text(min_size=1, max_size=12))
def test_any_name_is_escaped_in_dot_and_html(name: str) -> None:
    network, _ = Tape.record(lambda t: t.parameter([1.0, 2.0]) * 2.0)
    nodes, _, _ = parse_dot(network_dot(network, {network.symbol(0): name}))
    assert len(nodes) == len(network)
    card = parse_html(network_html(network, {network.symbol(0): name}))
    assert name in "".join(card.text)


_STABLE = """
import sys
sys.path.insert(0, {tests!r})
from test_render import convnet
from topos.render import network_dot, network_html, plan_dot, plan_html, run_html
network, s = convnet()
plan = network.entry(s["loss"]).lower()
names = {{s["k"]: "kernel", s["b"]: "bias"}}
sys.stdout.write(network_dot(network, names) + plan_dot(plan, names) + network_html(network, names) + plan_html(plan))
sys.stdout.write(run_html(plan.forward(network.parameters())) + repr(network.parameters()._repr_html_()))
"""


def test_pictures_and_cards_are_byte_identical_across_hash_seeds() -> None:
    script = _STABLE.format(tests=str(ROOT / "tests"))
    outputs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT))
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and "cluster_0" in outputs[0]


@pytest.mark.skipif(shutil.which("dot") is None, reason="the Graphviz dot program is not installed (apt: graphviz)")
def test_render_svg_draws_with_graphviz_and_names_its_failures() -> None:
    network, s = convnet()
    svg = render_svg(plan_dot(network.entry(s["loss"]).lower()))
    assert svg is not None and "<svg" in svg and "cluster_0" in svg
    with pytest.raises(RenderError, match="exited with status"):
        render_svg("digraph { n0 -> ; }")


def test_render_svg_answers_none_without_graphviz(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert render_svg("digraph { a -> b; }") is None


# --------------------------------------------------------------------------- HTML cards


def test_network_card_holds_every_row_and_is_balanced() -> None:
    network, _ = convnet()
    card = parse_html(network._repr_html_())
    text = "".join(card.text)
    # The node list (capped at 64, collapsed) is the card's last table; every opcode is counted.
    listed = min(len(network), 64)
    assert f"nodes: the first {listed} of {len(network)}" in text
    for node in network.nodes_[:listed]:
        assert str(node.shape) in text and node.name in text


def test_plan_card_shows_liveness_fusions_and_the_live_series() -> None:
    network, s = convnet()
    plan = network.entry(s["loss"]).lower()
    fragment = plan_html(plan, {s["k"]: "kernel"})
    card = parse_html(fragment)
    text = "".join(card.text)
    assert "kernel" in text and "window_product at %" in text and "reduce_window at %" in text
    for index in plan.scheduled:
        assert plan.label(index) in text
    assert card.tags.count("polyline") == 1
    points = re.search(r'points="([^"]*)"', fragment)
    assert points is not None and len(points.group(1).split()) == len(plan.live_series())
    peak, _ = plan.peak()
    assert f"peak {peak} elements" in text


def test_the_chart_rises_and_falls_with_the_series() -> None:
    svg = live_chart_svg([0, 10, 5, 10])
    parse_html(svg)
    match = re.search(r'points="([^"]*)"', svg)
    assert match is not None
    ys = [float(p.split(",")[1]) for p in match.group(1).split()]
    # SVG y grows downward: the larger the live volume, the smaller y.
    assert ys[0] > ys[2] > ys[1] == ys[3]


def test_value_cards_parameters_field_run_tensor() -> None:
    network, (w, y) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([1.5, -2.0])), element=f64)
    parameters = network.parameters()
    for fragment in (parameters._repr_html_(), network.forward(parameters).field()._repr_html_()):
        text = "".join(parse_html(fragment).text)
        assert "1.5" in text and "-2.0" in text and "[2]" in text
    assert "6.25" in "".join(parse_html(field_html(network.forward(parameters).field())).text)
    observed = network.entry(y).lower().forward(parameters)
    text = "".join(parse_html(run_html(observed)).text)
    assert "6.25" in text and "not kept" in text
    tensor = Tensor(np.arange(20.0), element=f32)
    text = "".join(parse_html(tensor._repr_html_()).text)
    assert "[20]" in text and "f32" in text and "7.0, ..." in text and "8.0" not in text
    assert "&lt;" in network_html(network, {w: "<w>"}) and "<w>" not in network_html(network, {w: "<w>"})


def test_the_readme_picture_is_what_the_code_draws_today() -> None:
    """docs/images/plan.dot is committed; redrawing it must give the same bytes."""
    import importlib.util

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("readme_picture", root / "docs" / "images" / "picture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _, plan = module.picture_plan()
    assert plan_dot(plan) == (root / "docs" / "images" / "plan.dot").read_text()
    assert "cluster" in plan_dot(plan)
