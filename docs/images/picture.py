"""Draw the README's picture: a small convolution's forward plan, fused regions as clusters.

Run ``python docs/images/picture.py``: it writes ``plan.dot`` beside itself and, when
Graphviz's ``dot`` is installed, ``plan.svg``. ``tests/test_render.py`` checks that the
committed ``plan.dot`` is what this script draws today, so the picture cannot go stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from topos import Network, Plan, Tape, Value
from topos.nn import conv2d, max_pool
from topos.render import plan_dot, render_svg

HERE = Path(__file__).resolve().parent


def picture_plan() -> tuple[Network, Plan]:
    """A 1x1x6x6 image through conv(3x3, 2 channels) -> relu -> 2x2 max-pool -> sum."""
    rng = np.random.default_rng(0)

    def build(t: Tape) -> Value:
        x = t.input(rng.normal(size=(1, 1, 6, 6)))
        kernel = t.parameter(rng.normal(size=(2, 1, 3, 3)))
        bias = t.parameter(np.zeros(2))
        return max_pool(conv2d(x, kernel, bias, padding=1).relu(), 2).sum()

    network, loss = Tape.record(build)
    return network, network.entry([loss]).lower()


def main() -> int:
    _, plan = picture_plan()
    text = plan_dot(plan)
    (HERE / "plan.dot").write_text(text)
    svg = render_svg(text)
    if svg is None:
        print("Graphviz's dot is not installed: wrote plan.dot only")
        return 0
    (HERE / "plan.svg").write_text(svg)
    print(f"wrote {HERE / 'plan.dot'} and {HERE / 'plan.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
