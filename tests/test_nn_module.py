"""Modules: structured parameter paths, the Module protocol, symbols not payloads, reuse."""

from __future__ import annotations

import numpy as np
import pytest

from topos import InvalidArgumentError, Symbol, Tape, Tensor, Value, f64
from topos.init import normal
from topos.nn import (
    Activation,
    Embedding,
    LayerNorm,
    Linear,
    Mlp,
    Module,
    Path,
    Sequential,
    Visitor,
    bind,
    named_parameters,
    parameters,
    scaled_dot_product,
)


class Attention:
    """A user's one-head attention module, written only against the public surface."""

    def __init__(self, tape: Tape, dim: int, seed: int) -> None:
        init = normal(seed, 0.1, tape.element)
        self.query = Linear.init(tape, dim, dim, init)
        self.key = Linear.init(tape, dim, dim, init)
        self.value = Linear.init(tape, dim, dim, init)
        self.scale = tape.leaf(1.0 / np.sqrt(dim)).symbol

    def __call__(self, x: Value) -> Value:
        return scaled_dot_product(self.query(x), self.key(x), self.value(x), None, bind(x, self.scale))

    def visit(self, visitor: Visitor) -> None:
        visitor.child("query", self.query)
        visitor.child("key", self.key)
        visitor.child("value", self.value)


class Block:
    def __init__(self, tape: Tape, dim: int, seed: int) -> None:
        self.norm = LayerNorm(tape, np.ones(dim), np.zeros(dim), 1e-5)
        self.attention = Attention(tape, dim, seed)

    def __call__(self, x: Value) -> Value:
        return x + self.attention(self.norm(x))

    def visit(self, visitor: Visitor) -> None:
        visitor.child("norm", self.norm)
        visitor.child("attention", self.attention)


class Tiny:
    def __init__(self, tape: Tape) -> None:
        self.embedding = Embedding(tape, np.zeros((5, 4)))
        self.blocks = [Block(tape, 4, seed) for seed in range(2)]

    def __call__(self, tokens: Value) -> Value:
        x = self.embedding(tokens)
        for block in self.blocks:
            x = block(x)
        return x

    def visit(self, visitor: Visitor) -> None:
        visitor.child("embedding", self.embedding)
        for i, block in enumerate(self.blocks):
            visitor.child("blocks", _At(i, block))


class _At:
    def __init__(self, index: int, module: Module) -> None:
        self.index, self.module = index, module

    def visit(self, visitor: Visitor) -> None:
        visitor.child(self.index, self.module)


def test_structured_paths_print_dotted() -> None:
    tape = Tape(f64)
    model = Tiny(tape)
    paths = [str(p) for p, _ in named_parameters(model)]
    assert paths[0] == "embedding.weights"
    assert "blocks.0.attention.query.weights" in paths
    assert "blocks.1.norm.shift" in paths
    assert len(paths) == 1 + 2 * (2 + 3 * 2)
    first = named_parameters(model)[1][0]
    assert first == Path(("blocks", 0, "norm", "scale"))
    assert first.segments[1] == 0  # a child index stays an integer


def test_modules_satisfy_the_protocol_and_hold_symbols_only() -> None:
    tape = Tape()
    layers = [
        Linear(tape, np.zeros((2, 3))),
        Mlp(tape, [2, 3, 1], Activation.TANH, normal(0, 1.0)),
        Sequential(Activation.RELU),
        Embedding(tape, np.zeros((3, 2))),
        Activation.SILU,
    ]
    for layer in layers:
        assert isinstance(layer, Module)
    for layer in layers[:-1]:
        names: tuple[str, ...] = vars(type(layer))["__slots__"]
        slots = [getattr(layer, name) for name in names]
        flat: list[object] = []
        for slot in slots:
            flat.extend(slot if isinstance(slot, tuple) else [slot])
        assert not any(isinstance(item, (Tensor, np.ndarray, Value)) for item in flat)


def test_a_module_applies_again_on_the_reopened_tape() -> None:
    tape = Tape(f64)
    layer = Linear(tape, np.eye(2), np.zeros(2))
    first = layer(tape.input(np.ones((1, 2))))
    network = tape.seal()
    reopened = network.reopen()
    second = layer(reopened.input(np.full((1, 2), 2.0)))
    longer = reopened.seal()
    run = longer.forward(longer.parameters())
    assert run.of(first.symbol).tolist() == [[1.0, 1.0]]
    assert run.of(second.symbol).tolist() == [[2.0, 2.0]]
    assert len(longer.parameters()) == 2  # the same two slots, not new ones


def test_a_module_on_a_foreign_tape_is_refused() -> None:
    layer = Linear(Tape(), np.eye(2))
    other = Tape()
    with pytest.raises(Exception, match="different network"):
        layer(other.input(np.ones((1, 2))))


def test_tied_parameters_appear_under_each_path_and_once_in_parameters() -> None:
    tape = Tape()
    shared = tape.parameter(np.zeros((3, 3)))
    model = Sequential(Linear(tape, shared), Linear(tape, shared))
    named = named_parameters(model)
    assert [str(p) for p, _ in named] == ["0.weights", "1.weights"]
    assert parameters(model) == [shared.symbol]


def test_visitor_refuses_a_non_symbol() -> None:
    class Broken:
        def visit(self, visitor: Visitor) -> None:
            visitor.parameter("weights", np.zeros(2))  # type: ignore[arg-type]

    with pytest.raises(InvalidArgumentError, match="weights must be reported as a Symbol"):
        named_parameters(Broken())  # type: ignore[arg-type]


def test_parameters_are_symbols_in_visit_order() -> None:
    tape = Tape()
    mlp = Mlp(tape, [2, 3, 1], Activation.TANH, normal(0, 1.0))
    symbols = parameters(mlp)
    assert all(isinstance(s, Symbol) for s in symbols)
    network = tape.seal()
    assert tuple(symbols) == network.parameter_symbols()


def test_built_in_layers_are_registered_through_the_layer_hook() -> None:
    from topos.nn import BatchNorm, Conv2d, Dropout, LayerNorm, MaxPool, RmsNorm
    from topos.plugins import layer, layers, registry

    expected = {
        "linear": Linear,
        "mlp": Mlp,
        "sequential": Sequential,
        "conv2d": Conv2d,
        "max_pool": MaxPool,
        "batch_norm": BatchNorm,
        "layer_norm": LayerNorm,
        "rms_norm": RmsNorm,
        "dropout": Dropout,
        "embedding": Embedding,
    }
    table = layers()
    for name, factory in expected.items():
        assert table[name] is factory
        assert layer(name) is factory
        assert registry().owner("topos_layers", name) == "topos.plugins.builtin_layers"
