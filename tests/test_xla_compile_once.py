"""The XLA road compiles a training step once: on its first call, never again.

``_compile_on_client`` is the road's one client compile and ``backend_compile_and_load`` is
jax's (the ``jax.export`` fast road goes through it); both are counted from building the
executable through its first and second calls. A pure f32 module takes the fast road, a
module with ``chlo`` (erf) the client road, an f64 module the fast road under x64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from topos import Tape, Tensor, Value, XlaExecutable, f32, f64, xla
from topos.ir.element import ElementType
from topos.nn import cross_entropy
from topos.xla import module as xla_module


def training_step(element: ElementType, exact_gelu: bool) -> tuple[Any, Any]:
    rng = np.random.default_rng(0)

    def build(t: Tape) -> list[Value]:
        x = t.input(rng.uniform(-1.0, 1.0, (8, 6)))
        w1 = t.parameter(rng.uniform(-0.5, 0.5, (6, 16)))
        w2 = t.parameter(rng.uniform(-0.5, 0.5, (16, 4)))
        hidden = x.matmul(w1).gelu(approximate=not exact_gelu)
        loss = cross_entropy(hidden.matmul(w2), t.input(Tensor.selection([0, 1, 2, 3, 0, 1, 2, 3], 4, element)))
        adjoints = t.differentiate(loss, [w1, w2])
        return [loss, *(t.resolve(g) for g in adjoints.gradients())]

    network, roots = Tape.record(build, element=element)
    plan = network.entry(list(roots)).lower()
    return network, plan


@pytest.mark.parametrize(
    ("element", "exact_gelu", "road"),
    [(f32, False, "jax"), (f32, True, "client"), (f64, False, "jax")],
    ids=["pure-f32", "chlo-f32", "pure-f64"],
)
def test_a_training_step_compiles_once_on_its_first_call(
    monkeypatch: pytest.MonkeyPatch, element: ElementType, exact_gelu: bool, road: str
) -> None:
    import jax._src.compiler as compiler

    calls: list[str] = []

    def counting(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*arguments: Any, **keywords: Any) -> Any:
            calls.append(name)
            return real(*arguments, **keywords)

        return wrapper

    monkeypatch.setattr(compiler, "backend_compile_and_load", counting("jax", compiler.backend_compile_and_load))
    monkeypatch.setattr(xla_module, "_compile_on_client", counting("client", xla_module._compile_on_client))
    monkeypatch.setattr(xla_module, "_COMPILED", type(xla_module._COMPILED)())  # a cold cache: this module is new here
    # Other tests in this process may have recorded fallbacks of their own (one breaks the
    # export road on purpose): only what this step adds counts.
    fallbacks = len(xla.FAST_ROAD_FALLBACKS)
    network, plan = training_step(element, exact_gelu)
    assert ("chlo." in plan.emit_stablehlo()) == exact_gelu
    executable = XlaExecutable.of_plan(plan)
    first = executable.forward(network.parameters(), {})
    assert calls == [road], f"the first call compiled {calls}"
    assert executable.compiled.fast == (road == "jax")
    again = XlaExecutable.of_plan(plan).forward(network.parameters(), {})
    assert calls == [road], "a second executable of the same plan compiled again"
    for symbol in executable.results:
        assert np.array_equal(first.of(symbol).bits(), again.of(symbol).bits())
    assert xla.FAST_ROAD_FALLBACKS[fallbacks:] == [] or exact_gelu
