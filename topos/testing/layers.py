"""The layer conformance check, :func:`check_layer`.

Contract: the layer is built as ``factory(tape, *args, **kwargs)`` on a fresh tape of
``element`` and applied to a recorded input; these properties are checked, always all of
them, in this order:

- ``records``: the output is a value on the same tape, and the layer recorded nodes.
- ``named``: ``visit`` names each parameter by a non-empty, unique module path; every
  parameter the layer recorded is named and every named symbol is a parameter.
- ``deterministic``: recording twice gives the same ``describe()`` text, and two forward
  runs the same bits.
- ``gradient``: the gradient of a fixed weighted sum of the output reaches every named
  parameter, with its shape, finite, and not identically zero.

A layer is anything with that factory signature whose result is callable on a value and
has ``visit``; the kit never imports a particular layer.

Example:
    >>> from topos.nn import Linear
    >>> check_layer(Linear, [[0.5], [-1.0]], input=[[2.0, 1.0]]).names()
    ('records', 'named', 'deterministic', 'gradient')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from topos.errors import ElementError, InvalidArgumentError, ToposError
from topos.ir.element import ElementType, f64
from topos.ir.network import Network
from topos.ir.node import Symbol
from topos.stages.spec import Tape, Value
from topos.tensor import Tensor, TensorLike
from topos.testing.common import (
    PropertyFailed,
    Report,
    argument,
    binds,
    bits,
    expect,
    run_properties,
)

__all__ = ["check_layer"]


def check_layer(
    factory: Callable[..., Any],
    *args: Any,
    input: TensorLike,
    element: ElementType = f64,
    name: str | None = None,
    **kwargs: Any,
) -> Report:
    """Hold a layer factory to the conformance properties (see the module docstring).

    The layer is built as ``factory(tape, *args, **kwargs)`` and applied to
    ``tape.input(input)``. Raises :class:`~topos.testing.common.ConformanceError` listing
    every property if any fails; returns the :class:`~topos.testing.common.Report`
    otherwise.

    Example:
        >>> from topos.nn import Linear
        >>> check_layer(Linear, [[1.0, 2.0], [3.0, 4.0]], [0.5, 0.5], input=[[1.0, -1.0]]).passed
        True
    """
    # Imported when the check runs, so importing the kit does not load the nn facade.
    from topos.nn.module import named_parameters

    where = "check_layer"
    argument(where, "factory", factory, callable(factory), "a callable factory(tape, *args, **kwargs) building the layer")
    argument(where, "element", element, isinstance(element, ElementType), "an ElementType (f64, not 'f64')", ElementError)
    argument(where, "name", name, name is None or isinstance(name, str), "a string or None")
    binds(where, factory, "factory(tape, *args, **kwargs)", InvalidArgumentError, None, *args, **kwargs)
    try:
        given = Tensor(input, element=element)
    except Exception as error:  # numpy's own errors too: the input is the caller's, not the layer's
        detail = error.detail if isinstance(error, ToposError) else str(error)
        raise InvalidArgumentError(f"{where}: input must be an array of {element.name}, got {input!r:.60} ({detail})") from None
    subject = name or str(getattr(factory, "__name__", repr(factory)))

    def recorded() -> tuple[Network, Any, Symbol, Symbol]:
        tape = Tape(element)
        layer = factory(tape, *args, **kwargs)
        x = tape.input(given)
        out = layer(x)
        if not isinstance(out, Value):
            raise PropertyFailed(f"calling the layer returned {type(out).__name__}, not a Value")
        if out.tape is not tape:
            raise PropertyFailed("the layer's output records onto another tape")
        if out.index <= x.index:
            raise PropertyFailed("the layer recorded nothing after its input")
        weights = Tensor(np.linspace(-1.0, 1.0, max(1, out.shape.volume)).reshape(tuple(out.shape)), element=element)
        loss = (out * tape.leaf(weights)).sum()
        output, target = out.symbol, loss.symbol
        return tape.seal(), layer, output, target

    def records() -> str:
        network, _, out, _ = recorded()
        shape = network.nodes_[network.index(out, "output")].shape
        return f"output {shape} recorded on the input's tape, {len(network.nodes_)} nodes"

    def named() -> str:
        network, layer, _, _ = recorded()
        pairs = [(str(path), symbol) for path, symbol in named_parameters(layer)]
        paths = [path for path, _ in pairs]
        expect(all(paths), f"a parameter has an empty path: {paths}")
        expect(len(set(paths)) == len(paths), f"paths repeat: {paths}")
        recorded_symbols = set(network.parameter_symbols())
        named_symbols = {symbol for _, symbol in pairs}
        unnamed = sorted(s.index for s in recorded_symbols - named_symbols)
        strays = sorted(path for path, s in pairs if s not in recorded_symbols)
        expect(not unnamed, f"parameters recorded but not reported by visit: {['%' + str(i) for i in unnamed]}")
        expect(not strays, f"paths naming something that is not a parameter of the recording: {strays}")
        return f"{len(paths)} parameters named: {', '.join(paths) or '(none)'}"

    def deterministic() -> str:
        first, _, out, _ = recorded()
        second, _, _, _ = recorded()
        expect(first.describe() == second.describe(), "recording twice gave different describe() text")
        runs = [first.forward(first.parameters()).of(out) for _ in range(2)]
        expect(bits(runs[0]) == bits(runs[1]), "two forward runs gave different bits")
        return "same describe() text and same bits twice"

    def gradient_property() -> str:
        network, layer, _, loss = recorded()
        parameters = network.parameters()
        field = network.forward(parameters).backward(loss)
        for path, symbol in named_parameters(layer):
            got = field.of(symbol)
            expected = parameters.of(symbol)
            expect(got.shape == expected.shape, f"{path}: gradient {got.shape}, parameter {expected.shape}")
            values = got.numpy().astype(np.float64)
            expect(bool(np.all(np.isfinite(values))), f"{path}: the gradient is not finite: {values.tolist()}")
            expect(bool(np.any(values != 0.0)), f"{path}: the gradient is zero everywhere; the output ignores it")
        return "every named parameter has a finite, non-zero gradient of its shape"

    return run_properties(
        "layer",
        subject,
        [("records", records), ("named", named), ("deterministic", deterministic), ("gradient", gradient_property)],
    )
