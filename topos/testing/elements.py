"""The element-type conformance check, :func:`check_element_type`.

Contract: on a small smooth graph (a product, a bias, tanh and a sum) recorded in the
element, these properties are checked, always all of them, in this order:

- ``records``: every node of the recording carries the element.
- ``interprets``: the interpreter's values carry the element, are stored in its dtype, are
  finite, and two runs agree bit for bit.
- ``plans``: an exact plan (``Numerics.EXACT``) of the loss and the gradients equals the
  interpreter bit for bit.
- ``gradient``: the recorded gradient (:func:`topos.gradient`) equals the engine's reverse
  scan (``run.backward``) bit for bit.
- ``check_grad``: :func:`topos.check_grad` passes (f64 central differences) at the
  element's own tolerance (:meth:`~topos.ElementType.gradcheck_tolerance`, derived from its
  unit roundoff exactly as for the built-ins).
- ``checkpoint``: parameters saved with :func:`topos.checkpoint.save` and loaded with
  :func:`topos.checkpoint.load` come back bit for bit.
- ``emits``: an element with ``emittable=True`` emits StableHLO naming its type, byte-stable
  across two emissions; one with ``emittable=False`` is refused with ``EmissionError``.

Example:
    >>> from topos import f64
    >>> check_element_type(f64).of("emits").passed
    True
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from topos.errors import ElementError, EmissionError, user_site
from topos.ir.element import ElementType
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.ir.numerics import Numerics
from topos.stages.spec import Tape, Value
from topos.testing.common import (
    PropertyFailed,
    Report,
    Slots,
    bits,
    expect,
    run_properties,
    table_bits,
)

__all__ = ["check_element_type"]


def _smooth(tape: Tape) -> tuple[Value, Value, Value]:
    w = tape.parameter(np.array([[0.5, -0.25, 1.0], [0.75, 1.0, -0.125]]))
    b = tape.parameter(np.array([0.125, -0.25, 0.375]))
    x = tape.leaf(np.array([[1.0, 0.5], [-0.5, 0.25], [0.25, -1.0]]))
    out = (x.matmul(w) + b.broadcast_along(0, 3)).tanh()
    return w, b, (out * out).sum() * 0.5


def check_element_type(element: ElementType) -> Report:
    """Hold an element type to the conformance properties (see the module docstring).

    Raises :class:`~topos.testing.common.ConformanceError` listing every property if any
    fails; returns the :class:`~topos.testing.common.Report` otherwise.

    Example:
        >>> from topos import f32
        >>> check_element_type(f32).passed
        True
    """
    given: object = element  # typed as the caller may really pass it
    if not isinstance(given, ElementType):
        # A name such as "f32" is not looked up here: the suite holds one concrete type.
        hint = " (look a name up with topos.plugins.registry().element_type(name))" if isinstance(given, str) else ""
        raise ElementError(
            f"{user_site()}: check_element_type: element must be an ElementType, got "
            f"{type(given).__name__} {given!r:.60}{hint}"
        )
    # topos.checkpoint (and the nn facade under it) loads only when a check runs; the other
    # three come with ``import topos`` already and are imported beside their one use.
    from topos import checkpoint
    from topos.gradcheck import check_grad
    from topos.stages.emission import emit_network
    from topos.stages.gradient import gradient

    def recorded() -> tuple[Network, tuple[Symbol, Symbol, Symbol]]:
        return Tape.record(_smooth, element=element)

    def records() -> str:
        network, _ = recorded()
        strays = [node for node in network.nodes_ if node.element != element]
        expect(not strays, f"{len(strays)} nodes carry another element, e.g. {strays[:1]}")
        return f"{len(network.nodes_)} nodes, all {element.name}"

    def interprets() -> str:
        network, (_, _, loss) = recorded()
        runs = [network.forward(network.parameters()) for _ in range(2)]
        value = runs[0].of(loss)
        expect(value.element == element, f"the loss came back as {value.element.name}")
        expect(value.numpy().dtype == np.dtype(element.dtype), f"the loss is stored as {value.numpy().dtype}")
        expect(bool(np.isfinite(float(value.scalar()))), f"the loss is {value.scalar()}")
        expect(bits(value) == bits(runs[1].of(loss)), "two runs gave different bits")
        return f"loss {value.scalar():.6g}, stored as {value.numpy().dtype}, same bits twice"

    def roots() -> tuple[Network, Network, list[Symbol], list[Symbol]]:
        network, (w, b, loss) = recorded()
        grown, adjoints = gradient(network, loss, [w, b])
        return network, grown, [w, b, loss], [loss, *adjoints.gradients()]

    def plans() -> str:
        _, grown, _, wanted = roots()
        parameters = grown.parameters()
        oracle = grown.forward(parameters)
        plan = grown.entry(wanted).numerics(Numerics.EXACT).lower()
        run = plan.forward(parameters)
        for symbol in wanted:
            expect(
                bits(run.of(symbol)) == bits(oracle.of(symbol)),
                f"the exact plan differs from the interpreter at {grown.describe_symbol(grown.index(symbol, 'root'))}",
            )
        return f"exact plan equals the interpreter bit for bit on {len(wanted)} roots"

    def gradient_property() -> str:
        network, (w, b, loss) = recorded()
        grown, adjoints = gradient(network, loss, [w, b])
        parameters = network.parameters()
        run = grown.forward(parameters)
        engine = network.forward(parameters).backward(loss)
        for symbol in (w, b):
            got = run.of(adjoints.of(symbol))
            expect(got.element == element, f"the recorded gradient of %{symbol.index} is {got.element.name}")
            expect(
                bits(got) == bits(engine.of(symbol)),
                f"the recorded gradient of %{symbol.index} differs from the engine's: "
                f"{got.tolist()} vs {engine.of(symbol).tolist()}",
            )
        return "recorded gradient equals the engine bit for bit"

    def gradcheck() -> str:
        network, (_, _, loss) = recorded()
        report = check_grad(network, network.parameters(), loss)
        expect(report.passed, f"check_grad failed:\n{report}")
        return (
            f"check_grad passes against f64 differences at tolerance {element.gradcheck_tolerance():g} "
            f"(from the unit roundoff {element.roundoff:.3g} of {element.dtype})"
        )

    def checkpoints() -> str:
        network, _ = recorded()
        parameters = network.parameters().map(lambda p: p * 0.75 + 0.125)
        module = Slots(network.parameter_symbols())
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "weights.safetensors")
            checkpoint.save(path, module, parameters)
            loaded = checkpoint.load(path, module, network.parameters())
        expect(table_bits(loaded) == table_bits(parameters), "loaded parameters differ from the saved ones")
        expect(all(p.element == element for _, p in loaded), "loaded parameters changed element")
        return "saved and loaded bit for bit"

    def emits() -> str:
        _, grown, _, wanted = roots()
        if not element.emittable:
            try:
                emit_network(grown, wanted)
            except EmissionError:
                return "not emittable, and emission says so"
            raise PropertyFailed("emittable=False, yet emission produced a module")
        text = emit_network(grown, wanted)
        expect(f"x{element.mlir}>" in text, f"the module never names tensor<...x{element.mlir}>")
        expect(emit_network(grown, wanted) == text, "two emissions gave different text")
        return f"emits StableHLO in {element.mlir}, byte-stable"

    return run_properties(
        "element type",
        element.name,
        [
            ("records", records),
            ("interprets", interprets),
            ("plans", plans),
            ("gradient", gradient_property),
            ("check_grad", gradcheck),
            ("checkpoint", checkpoints),
            ("emits", emits),
        ],
    )

