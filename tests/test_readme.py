"""The README example runs as written (w reaches 2 within 1e-6).

The code below is the issue's example verbatim, wrapped in a function; a second test checks
that the README itself still carries the same lines, so the two cannot drift apart.
"""

from __future__ import annotations

import os
import re

from topos import Tape, Tensor, Value, f64


def test_readme_example_runs_as_written() -> None:
    def line(tape: Tape) -> tuple[Value, Value, Value, Value]:
        w = tape.parameter(0.0)
        x = tape.input(0.0)
        y = tape.input(0.0)
        error = w * x - y
        return w, x, y, error * error

    network, (w, x, y, loss) = Tape.record(line, element=f64)
    parameters = network.parameters()
    samples = [(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]
    for step in range(100):
        sample_x, sample_y = samples[step % len(samples)]
        run = network.forward(parameters, {x: sample_x, y: sample_y})
        gradients = run.backward(loss).parameters(parameters)
        parameters = parameters.step(gradients, lambda w, g: w - g * Tensor(0.02))
    assert abs(parameters.of(w).scalar() - 2.0) < 1e-6


def test_the_readme_python_block_is_the_one_tested() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)
    example = next((b for b in blocks if "Tape.record(line, element=f64)" in b), None)
    assert example is not None, "README lost its line-fit example"
    # Executing the README's own block is the strongest check that it works as written.
    namespace: dict[str, object] = {}
    exec(compile(example, "README.md", "exec"), namespace)
    parameters = namespace["parameters"]
    w = namespace["w"]
    assert abs(parameters.of(w).scalar() - 2.0) < 1e-6  # type: ignore[attr-defined]


def test_every_readme_python_block_runs_in_order() -> None:
    # The README's blocks build on each other (the training-step block reuses the line fit's
    # network); run them in one namespace so none of them can rot.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)
    assert len(blocks) >= 2
    namespace: dict[str, object] = {}
    for number, block in enumerate(blocks):
        exec(compile(block, f"README.md block {number}", "exec"), namespace)
