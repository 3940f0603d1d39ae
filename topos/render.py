"""Pictures of a spec: Graphviz DOT text, notebook cards (HTML) and a hand-written SVG chart.

Contract:
- Every function here is a pure reading of recorded structure (and, for cards of values,
  of the payloads). The text depends on nothing process-local (no ``id()``, no hash order,
  no clock), so it is byte-identical across processes and hash seeds.
- :func:`network_dot` draws one node per spec node, labelled ``%index Opcode params``, the
  shape and element, and a parameter's name where ``names`` gives one (module paths, e.g.
  ``{symbol: str(path) for path, symbol in named_parameters(model)}``); an edge per operand
  link. :func:`plan_dot` draws the scheduled nodes only, each elected fusion as a
  ``subgraph cluster_<k>``, released values dashed and grey, readable values doubled.
- :func:`render_svg` runs the Graphviz ``dot`` program when it is on ``PATH`` and returns
  ``None`` when it is not: a picture is a convenience, never a reason to fail. A ``dot``
  that is installed but refuses the text raises :class:`RenderError`.
- The ``*_html`` functions return one ``<div class="topos-card">`` fragment whose tags are
  balanced and whose text is escaped (:func:`html.escape`); the doors ``_repr_html_`` on
  :class:`~topos.ir.network.Network`, :class:`~topos.state.Parameters`,
  :class:`~topos.state.Field` and :class:`~topos.tensor.Tensor` call them, so a notebook
  shows a card instead of a repr. :func:`plan_html` adds the plan's liveness, its fusions
  and its live-volume series as an inline SVG line chart (:func:`live_chart_svg`).

Example:
    >>> from topos import Tape
    >>> network, y = Tape.record(lambda t: (t.parameter([1.0, 2.0]) * 2.0).sum())
    >>> print(network_dot(network).splitlines()[0])
    digraph topos {
    >>> "Sum" in network_html(network)
    True
"""

from __future__ import annotations

import html
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from topos.errors import ToposError
from topos.ir import ops
from topos.ir.node import Node, Symbol
from topos.stages.describe import op_params

if TYPE_CHECKING:
    from topos.ir.network import Network
    from topos.stages.plan import Plan
    from topos.state import Field, Parameters, Run
    from topos.tensor import Tensor

__all__ = [
    "RenderError",
    "field_html",
    "live_chart_svg",
    "network_dot",
    "network_html",
    "parameters_html",
    "plan_dot",
    "plan_html",
    "render_svg",
    "run_html",
    "tensor_html",
]


class RenderError(ToposError):
    """The Graphviz ``dot`` program is installed but could not draw the text it was given."""


Names = Mapping[Symbol, str] | None

_PREVIEW: Final = 8
"""Cards show at most this many leading elements of a payload."""


# --------------------------------------------------------------------------- DOT


def _visible(text: str) -> str:
    # Control and line-separator characters would end a DOT line or vanish in a picture;
    # they are drawn as ``\xNN`` (``\uNNNN``) instead.
    return "".join(
        c if c.isprintable() or c == " " else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
        for c in text
    )


def _dot_string(text: str) -> str:
    """A DOT double-quoted string; ``\\n`` inside ``text`` becomes a centred line break."""
    lines = [_visible(line).replace("\\", "\\\\").replace('"', '\\"') for line in text.split("\n")]
    return '"' + "\\n".join(lines) + '"'


def _index_names(network: Network, names: Names) -> dict[int, str]:
    if not names:
        return {}
    found: dict[int, str] = {}
    for symbol, name in names.items():
        index = network.lineage.resolve(symbol)
        # A symbol of another family is simply not drawn: names may come from a larger model.
        if index is not None and index not in found:
            found[index] = str(name)
    return found


def _title(node: Node, index: int) -> str:
    params = op_params(node.op)
    return f"%{index} {node.name}" + (f" {params}" if params else "")


def _label(node: Node, index: int, name: str | None, extra: str | None = None) -> str:
    lines = [_title(node, index), f"{node.shape} {node.element}"]
    if name is not None:
        lines.append(name)
    if extra is not None:
        lines.append(extra)
    return "\n".join(lines)


def _attributes(node: Node, released: bool = False, kept: bool = False) -> str:
    styles: list[str] = []
    extra: list[str] = []
    if isinstance(node.op, ops.Parameter):
        styles += ["rounded", "filled"]
        extra.append('fillcolor="#dbe8f6"')
    elif isinstance(node.op, ops.Input):
        styles += ["rounded", "filled"]
        extra.append('fillcolor="#e4f2dc"')
    elif isinstance(node.op, ops.Leaf):
        styles.append("rounded")
    if released:
        styles.append("dashed")
        extra += ['color="#9a9a9a"', 'fontcolor="#7a7a7a"']
    elif kept:
        extra.append("peripheries=2")
    text = "shape=box"
    if styles:
        text += f', style="{",".join(styles)}"'
    return ", ".join([text, *extra])


def _edges(network: Network, indices: Iterable[int]) -> list[str]:
    return [f"  n{o} -> n{i};" for i in indices for o in network.nodes_[i].operands]


def network_dot(network: Network, names: Names = None) -> str:
    """The whole spec as Graphviz DOT text (byte-stable).

    Example:
        >>> from topos import Tape
        >>> network, (w, y) = Tape.record(lambda t: (lambda w: (w, (w * w).sum()))(t.parameter([1.0])))
        >>> "n0 -> n1;" in network_dot(network, {w: "weight"})
        True
    """
    named = _index_names(network, names)
    lines = ["digraph topos {", '  graph [rankdir=TB, fontname="monospace"];', '  node [fontname="monospace"];']
    for index, node in enumerate(network.nodes_):
        label = _dot_string(_label(node, index, named.get(index)))
        lines.append(f"  n{index} [label={label}, {_attributes(node)}];")
    lines.extend(_edges(network, range(len(network.nodes_))))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _released(plan: Plan) -> set[int]:
    return {value for freed in plan.releases for value in freed}


def plan_dot(plan: Plan, names: Names = None) -> str:
    """The scheduled nodes of a plan as DOT: fusions as clusters, releases dashed (byte-stable).

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: (t.parameter([1.0, 2.0]) * 2.0).sum())
        >>> text = plan_dot(network.entry(y).lower())
        >>> "dashed" in text and "kept" in text
        True
    """
    network = plan.network
    named = _index_names(network, names)
    released = _released(plan)
    clustered: dict[int, int] = {}
    for k, match in enumerate(plan.patterns()):
        for index in match.nodes:
            clustered[index] = k

    def node_line(index: int, indent: str) -> str:
        node = network.nodes_[index]
        label = _dot_string(_label(node, index, named.get(index), plan.label(index)))
        style = _attributes(node, index in released, plan.readable_[index])
        return f"{indent}n{index} [label={label}, {style}];"

    lines = ["digraph topos_plan {", '  graph [rankdir=TB, fontname="monospace"];', '  node [fontname="monospace"];']
    for index in plan.scheduled:
        if index not in clustered:
            lines.append(node_line(index, "  "))
    for k, match in enumerate(plan.patterns()):
        lines.append(f"  subgraph cluster_{k} {{")
        title = f"{match.kind.value} at %{match.root} ({len(match.nodes)} nodes)"
        lines.append(f'    label={_dot_string(title)}; style="rounded,filled"; fillcolor="#fff4d6";')
        lines.extend(node_line(index, "    ") for index in match.nodes)
        lines.append("  }")
    lines.extend(_edges(network, plan.scheduled))
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg(dot_text: str, timeout: float = 60.0) -> str | None:
    """SVG drawn by Graphviz ``dot``, or ``None`` when ``dot`` is not installed.

    Raises :class:`RenderError` when ``dot`` runs but rejects the text or times out.

    Example:
        >>> from topos import Tape
        >>> network, y = Tape.record(lambda t: t.parameter(1.0) * 2.0)
        >>> svg = render_svg(network_dot(network))
        >>> svg is None or "<svg" in svg
        True
    """
    program = shutil.which("dot")
    if program is None:
        return None
    try:
        done = subprocess.run(
            [program, "-Tsvg"], input=dot_text.encode(), capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise RenderError(f"Graphviz dot ({program}) did not finish within {timeout} s") from None
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip()
        raise RenderError(f"Graphviz dot ({program}) exited with status {done.returncode}: {reason}")
    return done.stdout.decode()


# --------------------------------------------------------------------------- HTML

_STYLE: Final = (
    "font-family:monospace;font-size:12px;border-collapse:collapse"
)
_CELL: Final = ' style="border:1px solid #ccc;padding:1px 6px;text-align:left"'


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    parts = [f'<table style="{_STYLE}">', "<thead><tr>"]
    parts.extend(f"<th{_CELL}>{_e(h)}</th>" for h in header)
    parts.append("</tr></thead><tbody>")
    for row in rows:
        parts.append("<tr>" + "".join(f"<td{_CELL}>{_e(cell)}</td>" for cell in row) + "</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def _card(title: str, *body: str) -> str:
    head = f'<div class="topos-card"><p style="font-family:monospace"><b>{_e(title)}</b></p>'
    return head + "".join(body) + "</div>\n"


def _preview(tensor: Tensor) -> str:
    flat = tensor.numpy().reshape(-1)
    shown = ", ".join(repr(float(v)) for v in flat[:_PREVIEW].astype("float64"))
    return f"[{shown}{', ...' if flat.size > _PREVIEW else ''}]"


def _spec_row(network: Network, index: int, named: Mapping[int, str]) -> list[object]:
    node = network.nodes_[index]
    operands = ",".join(str(o) for o in node.operands)
    return [index, node.name, operands, op_params(node.op), node.shape, node.element, named.get(index, "")]


_SPEC_HEADER: Final = ("index", "op", "operands", "parameters", "shape", "element", "name")


_LISTED: Final = 64
"""A network card lists at most this many nodes (the first ones), inside a collapsed element."""

_LARGEST: Final = 8
"""A network card names this many of the largest values."""


def _plain_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    # Per-cell styles would double a long table's size; the one table style is enough here.
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table style="{_STYLE}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _module_of(path: str) -> str:
    """The module part of a parameter's path: everything before its last component."""
    head, _, _ = path.rpartition(".")
    return head or "(top)"


def network_html(network: Network, names: Names = None) -> str:
    """A card that summarizes the network; its size grows with the opcodes and parameters, not the nodes.

    It holds the counts by opcode, the parameters by module (from the module paths in
    ``names``), the parameters' tree (path, shape, size), the largest values, and the first
    nodes in a collapsed ``<details>`` element that says how many were left out. Only shapes
    are read, never payloads; the text is byte-stable.

    Example:
        >>> from topos import Tape
        >>> network, _ = Tape.record(lambda t: (t.parameter([1.0, 2.0]) * 2.0).sum())
        >>> card = network_html(network)
        >>> "<details>" in card, "Sum" in card
        (True, True)
    """
    named = _index_names(network, names)
    nodes = network.nodes_
    by_op: dict[str, int] = {}
    for node in nodes:
        by_op[node.name] = by_op.get(node.name, 0) + 1
    summary = (
        f"{len(network)} nodes, {len(network.parameter_nodes)} parameters, "
        f"{len(network.input_nodes)} inputs, element {network.element}"
    )
    counted: list[tuple[str, int]] = sorted(by_op.items(), key=lambda kv: (-kv[1], kv[0]))
    body = [_plain_table(("op", "nodes"), counted)]
    parameters = [(named.get(i, f"%{i}"), i, nodes[i].shape) for i in network.parameter_nodes]
    by_module: dict[str, list[int]] = {}
    for path, _, shape in parameters:
        counts = by_module.setdefault(_module_of(path) if path in named.values() else "(unnamed)", [0, 0])
        counts[0] += 1
        counts[1] += shape.volume
    total = sum(shape.volume for _, _, shape in parameters)
    body.append(_plain_table(("module", "parameters", "elements"), ((m, c[0], c[1]) for m, c in sorted(by_module.items()))))
    body.append(
        f"<details><summary>parameters: {len(parameters)} tensors, {total} elements</summary>"
        + _plain_table(("path", "node", "shape", "size"), ((p, f"%{i}", sh, sh.volume) for p, i, sh in sorted(parameters)))
        + "</details>"
    )
    largest = sorted(range(len(nodes)), key=lambda i: (-nodes[i].shape.volume, i))[:_LARGEST]
    body.append(
        _plain_table(("largest", "op", "shape", "elements"), ((f"%{i}", nodes[i].name, nodes[i].shape, nodes[i].shape.volume) for i in largest))
    )
    listed = min(len(nodes), _LISTED)
    left = len(nodes) - listed
    more = f", {left} left out" if left else ""
    body.append(
        f"<details><summary>nodes: the first {listed} of {len(nodes)}{more}</summary>"
        + _plain_table(_SPEC_HEADER, (_spec_row(network, i, named) for i in range(listed)))
        + (f"<p>{left} more nodes are not listed; network.describe() prints every one.</p>" if left else "")
        + "</details>"
    )
    return _card(f"Network: {summary}", *body)


def live_chart_svg(series: Sequence[int], positions: Sequence[int] | None = None, width: int = 360, height: int = 120) -> str:
    """A line chart of a live-volume series as an inline ``<svg>`` element (byte-stable).

    ``positions`` label the first and last points (node positions); the y axis starts at 0.

    Example:
        >>> live_chart_svg([0, 4, 2]).startswith("<svg")
        True
    """
    margin = 24
    top = max(max(series, default=0), 1)
    count = max(len(series) - 1, 1)
    span_x = width - 2 * margin
    span_y = height - 2 * margin
    points = " ".join(
        f"{margin + span_x * k / count:.1f},{height - margin - span_y * value / top:.1f}"
        for k, value in enumerate(series)
    )
    first = "" if not positions else f"%{positions[0]}"
    last = "" if not positions else f"%{positions[-1]}"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="10">'
        f'<line x1="{margin}" y1="{height - margin}" x2="{width - margin}" y2="{height - margin}" stroke="#999"/>'
        f'<line x1="{margin}" y1="{margin}" x2="{margin}" y2="{height - margin}" stroke="#999"/>'
        f'<polyline fill="none" stroke="#3465a4" stroke-width="1.5" points="{points}"/>'
        f'<text x="{margin}" y="{margin - 6}">{_e(f"peak {max(series, default=0)} elements")}</text>'
        f'<text x="{margin}" y="{height - 8}">{_e(first)}</text>'
        f'<text x="{width - margin}" y="{height - 8}" text-anchor="end">{_e(last)}</text>'
        "</svg>"
    )


def plan_html(plan: Plan, names: Names = None) -> str:
    """A card: scheduled rows with liveness and fusion, the fusions, and the live-volume chart."""
    network = plan.network
    named = _index_names(network, names)
    group = {index: f"{m.kind.value} at %{m.root}" for m in plan.patterns() for index in m.nodes}
    rows = [[*_spec_row(network, i, named), plan.label(i), group.get(i, "")] for i in plan.scheduled]
    posture = "retain" if plan.entry.backward else "forward"
    title = (
        f"Plan: {posture}, {plan.numerics.value} numerics, {len(plan.scheduled)} of {len(network)} nodes, "
        f"{len(plan.patterns())} fused"
    )
    body = [_table((*_SPEC_HEADER, "liveness", "fused"), rows)]
    if plan.patterns():
        body.append(_table(("fusion", "nodes"), [(m.describe(), ",".join(map(str, m.nodes))) for m in plan.patterns()]))
    evaluated = [i for i in plan.scheduled if not plan.interior[i] and not plan.named[i]]
    series = plan.live_series()
    peak, at = plan.peak()
    body.append(
        f'<p style="font-family:monospace">{_e(f"live volume: peak {peak} elements at node {at}, retain-all {plan.retain_all()}")}</p>'
    )
    body.append(live_chart_svg(series, evaluated))
    return _card(title, *body)


def parameters_html(parameters: Parameters, names: Names = None) -> str:
    """A card: one row per parameter slot (node, shape, element, name, leading values)."""
    named = {s: str(n) for s, n in (names or {}).items()}
    rows = [
        [slot, f"%{symbol.index}", tensor.shape, tensor.element, named.get(symbol, ""), _preview(tensor)]
        for slot, (symbol, tensor) in enumerate(parameters)
    ]
    return _card(f"Parameters: {len(parameters)} slots", _table(("slot", "node", "shape", "element", "name", "values"), rows))


def field_html(field: Field) -> str:
    """A card: one row per node of the field's network with its payload's leading values."""
    network = field.network
    rows = [
        [i, network.nodes_[i].name, tensor.shape, tensor.element, _preview(tensor)]
        for i, tensor in enumerate(field.payloads())
    ]
    return _card(f"Field: {len(rows)} nodes", _table(("index", "op", "shape", "element", "values"), rows))


def run_html(run: Run) -> str:
    """A card: each node's value where the run kept it and may read it, else ``not kept``."""
    from topos.errors import SymbolError

    network = run.network
    rows: list[list[object]] = []
    for index, node in enumerate(network.nodes_):
        try:
            value = _preview(run.of(network.symbol(index)))
        except SymbolError:
            value = "not kept"
        rows.append([index, node.name, node.shape, value])
    title = f"Run: {run.provenance}, {run.numerics.value} numerics, {len(network)} nodes"
    return _card(title, _table(("index", "op", "shape", "values"), rows))


def tensor_html(tensor: Tensor) -> str:
    """A card: shape, element and the leading values of one tensor."""
    title = f"Tensor {tensor.shape} {tensor.element}"
    return _card(title, f'<pre style="margin:0">{_e(_preview(tensor))}</pre>')
