"""Optimizers as chains of transforms: one formula per optimizer, read by both roads.

The built-ins are chains of the public transforms, so a chain a user writes with
``topos.optim.chain`` gives the built-in's bits on the numpy road and on the XLA road. The
examples of docs/optimizers.md run here as written: a chain of built-in transforms, and a
transform of one's own (RMSprop), which matches the tensor-arithmetic RmsProp of
docs/plugins.md bit for bit, registers through the plugin hook and passes the conformance
suite. The misuse tests check that a formula which leaves ``SlotOps`` is refused while it is
recorded, naming the optimizer.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import attrs
import numpy as np
import pytest
from conftest import ELEMENTS, bits, each_element, here

from topos import OptimizerState, Parameters, Tape, Tensor, f32, f64
from topos.ir.element import ElementType
from topos.optim import (
    Adam,
    AdamW,
    Chain,
    Optimizer,
    OptimizerError,
    Prelude,
    Sgd,
    SlotOps,
    add_decayed_weights,
    chain,
    compiled,
    scale_by_adam,
    scale_by_learning_rate,
    schedules,
    trace,
)
from topos.optim.passes import ALIGNMENT, Program
from topos.plugins import Registry
from topos.testing import check_optimizer

V = TypeVar("V")
DOCS = Path(__file__).resolve().parent.parent / "docs"
SHAPES: tuple[tuple[int, ...], ...] = ((37,), (3, 5), (1,), (2, 65), (4, 4, 3))


def table(element: ElementType, seed: int) -> Parameters:
    rng = np.random.default_rng(seed)

    def draw(shape: tuple[int, ...]) -> Any:
        return (rng.uniform(0.25, 2.0, shape) * rng.choice([-1.0, 1.0], shape)).astype(element.dtype)

    network, _ = Tape.record(lambda t: [t.parameter(draw(shape)) for shape in SHAPES], element=element)
    return network.parameters()


def drawn(template: Parameters, rng: np.random.Generator) -> Parameters:
    element = template.payloads()[0].element
    return template.map(lambda p: Tensor(rng.uniform(-2.0, 2.0, p.shape.axes).astype(element.dtype), element))


def trajectory(optimizer: Optimizer, element: ElementType, steps: int = 4) -> list[list[int]]:
    """Every parameter, table entry and carried scalar's bits after each of ``steps`` updates."""
    rng = np.random.default_rng(5)
    parameters = table(element, 3)
    state = optimizer.init(parameters)
    out: list[list[int]] = []
    for _ in range(steps):
        parameters, state = optimizer.update(drawn(parameters, rng), state, parameters)
        out.extend(bits(p).reshape(-1).tolist() for p in parameters.payloads())
        for name in sorted(state.tables):
            out.extend(bits(p).reshape(-1).tolist() for p in state.tables[name].payloads())
        out.extend(v.bits().reshape(-1).tolist() for _, v in sorted(state.scalars.items()))
    return out


def every_other(symbol: Any, payload: Tensor) -> bool:
    return bool(symbol.index % 2 == 0)


def pairs() -> list[tuple[Optimizer, Chain]]:
    """Each built-in beside the chain a user would write for it, with the same ``kind``."""
    warm = schedules.linear_warmup(0.05, 2)
    return [
        (Sgd(0.05), chain(scale_by_learning_rate(0.05), kind="sgd")),
        (Sgd(0.05, momentum=0.9), chain(trace(0.9), scale_by_learning_rate(0.05), kind="sgd")),
        (Sgd(0.03, momentum=0.8, nesterov=True), chain(trace(0.8, nesterov=True), scale_by_learning_rate(0.03), kind="sgd")),
        (Adam(1e-2, b2=0.9), chain(scale_by_adam(b2=0.9), scale_by_learning_rate(1e-2), kind="adam")),
        (
            AdamW(warm, decay=0.25, decay_where=every_other),
            chain(scale_by_adam(), add_decayed_weights(0.25, every_other), scale_by_learning_rate(warm), kind="adamw"),
        ),
    ]


@each_element
@pytest.mark.parametrize("index", range(5))
def test_a_builtin_is_the_chain_of_its_transforms_bit_for_bit(element: ElementType, index: int) -> None:
    builtin, written = pairs()[index]
    assert builtin.chain == written  # type: ignore[attr-defined]
    assert trajectory(builtin, element) == trajectory(written, element)


@pytest.mark.parametrize("index", [1, 4])
def test_on_xla_a_builtin_and_its_chain_trace_the_same_formula(index: int) -> None:
    builtin, written = pairs()[index]
    assert trajectory(compiled(builtin), f32, steps=2) == trajectory(compiled(written), f32, steps=2)


@each_element
def test_adamw_without_decay_is_adam(element: ElementType) -> None:
    adam = trajectory(Adam(1e-2), element)
    assert trajectory(AdamW(1e-2, decay=0.0), element) == adam
    # Decay on no slot at all: the same bits again.
    assert trajectory(AdamW(1e-2, decay=0.5, decay_where=lambda s, p: False), element) == adam


def test_a_builtin_prints_and_compares_by_its_hyperparameters() -> None:
    assert repr(Adam(1e-3)) == "Adam(learning_rate=0.001, b1=0.9, b2=0.999, epsilon=1e-08)"
    assert Adam(1e-3) == Adam(1e-3) and Adam(1e-3) != Adam(1e-4)
    assert "momentum=0.5, nesterov=False" in repr(Sgd(0.1, momentum=0.5).chain.transforms[0])
    assert attrs.evolve(Sgd(0.1), momentum=0.5).chain.tables == ("velocity",)


# --------------------------------------------------------------------------- the documented examples


def doc_block(marker: str) -> str:
    text = (DOCS / "optimizers.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    found = [block for block in blocks if marker in block]
    assert len(found) == 1, marker
    return str(found[0])


def test_the_documented_chain_of_builtin_transforms_runs_on_both_roads() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(doc_block('kind="sgdw"'), "docs/optimizers.md", "exec"), namespace)
    plain, fast = namespace["plain"], namespace["fast"]
    # v = g; d = v + 1e-4 p; p - 0.1 d, on the XLA road within a rounding or two.
    p = np.array([[1.0, -2.0]])
    expected = p - 0.1 * (2.0 * p + 1e-4 * p)
    assert np.allclose(plain.payloads()[0].numpy(), expected, rtol=1e-6)
    assert np.allclose(fast.payloads()[0].numpy(), plain.payloads()[0].numpy(), rtol=1e-6, atol=0)


def documented_rmsprop() -> types.ModuleType:
    module = types.ModuleType("docs_chain_rmsprop")
    exec(compile(doc_block("class ScaleByRms"), "docs/optimizers.md", "exec"), module.__dict__)
    return module


def tensor_rmsprop(
    gradients: Parameters, state: OptimizerState, parameters: Parameters, lr: float
) -> tuple[Parameters, OptimizerState]:
    """docs/plugins.md's RmsProp update, in tensor arithmetic (rho 0.9, eps 1e-8)."""
    rho, eps = 0.9, 1e-8
    square = state.table("square").step(gradients, lambda s, g: s * rho + g * g * (1.0 - rho))
    direction = gradients.step(square, lambda g, s: g / (s.sqrt() + eps))
    return parameters.step(direction, lambda p, d: p - d * lr), state.advanced(tables={"square": square})


@each_element
def test_the_documented_transform_matches_tensor_arithmetic_bit_for_bit(element: ElementType) -> None:
    rmsprop = documented_rmsprop().rmsprop(0.05)
    rng = np.random.default_rng(8)
    fused = slow = table(element, 9)
    fused_state = slow_state = rmsprop.init(fused)
    for _ in range(4):
        gradients = drawn(fused, rng)
        fused, fused_state = rmsprop.update(gradients, fused_state, fused)
        slow, slow_state = tensor_rmsprop(gradients, slow_state, slow, 0.05)
        for a, b in zip((*fused.payloads(), *fused_state.table("square").payloads()),
                        (*slow.payloads(), *slow_state.table("square").payloads()), strict=True):
            assert np.array_equal(bits(a), bits(b))
    assert fused_state.step == 4 and fused_state.kind == "rmsprop"


def test_the_documented_transform_compiles_and_registers_as_a_plugin() -> None:
    module = documented_rmsprop()
    road = compiled(module.rmsprop(0.05))
    assert road.on_xla
    parameters = table(f64, 2)
    gradients = drawn(parameters, np.random.default_rng(1))
    fast, _ = road.update(gradients, road.init(parameters), parameters)
    plain, _ = module.rmsprop(0.05).update(gradients, road.init(parameters), parameters)
    for a, b in zip(fast.payloads(), plain.payloads(), strict=True):
        assert np.allclose(a.numpy(), b.numpy(), rtol=1e-14, atol=0)
    registry = Registry.with_builtins()
    registry.register(module, "docs_chain_rmsprop")
    factory = registry.optimizer("rmsprop")
    assert check_optimizer(factory, name="rmsprop").passed


# --------------------------------------------------------------------------- the recorded program


def test_a_program_keeps_only_what_the_results_need_and_reuses_lanes() -> None:
    def formula(ops: SlotOps[V], numbers: tuple[V, ...], p: V, g: V, tables: tuple[V, ...]) -> tuple[V, tuple[V, ...]]:
        ops.mul(g, g)  # computed and dropped: no result needs it
        return ops.sub(p, ops.mul(g, numbers[0])), (tables[0],)

    program = Program.record(formula, 2, 1, "test")
    assert [program.steps[i][0] for i in program.live] == ["input", "input", "input", "number", "multiply", "subtract"]
    p, g, kept = Tensor([1.0, 2.0], element=f32), Tensor([0.5, 0.25], element=f32), Tensor([3.0, 4.0], element=f32)
    new, (same,) = program.run((0.5, 7.0), (p, g, kept))
    assert same is kept  # returned unchanged: the caller's tensor, not a copy
    assert new.tolist() == [0.75, 1.875]
    assert new.numpy().ctypes.data % ALIGNMENT == 0 and not new.numpy().flags.writeable
    # Lanes are reused once a value dies: AdamW's sixteen operations over four inputs need five.
    assert AdamW(1e-3).chain.program((7, 1, 1), (False, True, False)).lanes == 5


@pytest.mark.parametrize("element", ELEMENTS, ids=[e.name for e in ELEMENTS])
def test_a_table_entry_that_passes_through_is_the_same_tensor(element: ElementType) -> None:
    @attrs.frozen
    class Keep:
        def tables(self) -> tuple[str, ...]:
            return ("kept",)

        def carried(self) -> Mapping[str, float]:
            return {}

        def prelude(self, kind: str, state: OptimizerState, parameters: Parameters) -> Prelude:
            return Prelude()

        def slot(
            self, ops: SlotOps[V], numbers: tuple[V, ...], flag: bool, p: V, update: V, tables: tuple[V, ...]
        ) -> tuple[V, tuple[V, ...]]:
            return update, tables

    keep = chain(Keep(), scale_by_learning_rate(0.5), kind="keep")
    parameters = table(element, 4)
    state = keep.init(parameters)
    new, following = keep.update(drawn(parameters, np.random.default_rng(0)), state, parameters)
    assert following.table("kept").payloads() == state.table("kept").payloads()
    assert compiled(keep).update(drawn(parameters, np.random.default_rng(0)), state, parameters)[0].payloads()[0].shape == new.payloads()[0].shape


# --------------------------------------------------------------------------- misuse, refused by name


@attrs.frozen
class Broken:
    """A transform whose slot formula does one wrong thing, chosen by ``how``."""

    how: str

    def tables(self) -> tuple[str, ...]:
        return ("broken",)

    def carried(self) -> Mapping[str, float]:
        return {}

    def prelude(self, kind: str, state: OptimizerState, parameters: Parameters) -> Prelude:
        if self.how == "flags":
            return Prelude((1.0,), (True,))
        return Prelude((1.0,))

    def slot(
        self, ops: SlotOps[V], numbers: tuple[V, ...], flag: bool, p: V, update: V, tables: tuple[V, ...]
    ) -> tuple[V, tuple[V, ...]]:
        if self.how == "float":
            return ops.mul(update, 2.0), tables  # type: ignore[arg-type]
        if self.how == "arithmetic":
            return ops.add(update, update * 2.0), tables  # type: ignore[operator, arg-type]
        if self.how == "branch":
            return (update if update else p), tables
        if self.how == "bare":
            return update, (numbers[0],)
        if self.how == "entries":
            return update, ()
        return update, tables


@pytest.mark.parametrize(
    ("how", "error", "words"),
    [
        ("float", OptimizerError, "used 2.0 as a value"),
        ("arithmetic", OptimizerError, "combine only through its ops"),
        ("branch", OptimizerError, "no truth value"),
        ("bare", OptimizerError, "bare number"),
        ("entries", OptimizerError, "table entries"),
        ("flags", OptimizerError, "1 flags for 5 parameter slots"),
    ],
)
def test_a_formula_that_leaves_slot_ops_is_refused(how: str, error: type[Exception], words: str) -> None:
    broken = chain(Broken(how), scale_by_learning_rate(0.1), kind="broken")
    parameters = table(f32, 1)
    with pytest.raises(error, match=re.escape(words)):
        broken.update(drawn(parameters, np.random.default_rng(0)), broken.init(parameters), parameters)


def test_a_chain_refuses_what_is_not_a_transform_and_names_clashing_state() -> None:
    line = here() + 2
    with pytest.raises(OptimizerError) as caught:
        chain(scale_by_adam(), "adam")  # type: ignore[arg-type]
    assert f"test_optim_chain.py:{line}" in str(caught.value) and "transform 1 is a str" in str(caught.value)
    with pytest.raises(OptimizerError, match="names its state 'first', already transform 0"):
        chain(scale_by_adam(), scale_by_adam())
    with pytest.raises(OptimizerError, match="kind must be a non-empty name"):
        chain(scale_by_adam(), kind="")


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (lambda: trace(1.0), "trace: momentum must lie in [0, 1)"),
        (lambda: trace(0.5, nesterov=1), "trace: nesterov must be True or False"),  # type: ignore[arg-type]
        (lambda: scale_by_adam(b2=-0.1), "scale_by_adam: b2 must lie in [0, 1)"),
        (lambda: scale_by_adam(epsilon=float("nan")), "scale_by_adam: epsilon must be a finite number >= 0"),
        (lambda: add_decayed_weights(float("inf")), "add_decayed_weights: rate must be a finite number >= 0"),
        (lambda: add_decayed_weights(0.1, where=3), "add_decayed_weights: where must be a predicate"),  # type: ignore[arg-type]
        (lambda: scale_by_learning_rate(-1.0), "scale_by_learning_rate: learning_rate must be a finite number >= 0"),
    ],
)
def test_a_transform_checks_its_hyperparameters_when_built(build: Any, words: str) -> None:
    with pytest.raises(OptimizerError, match=re.escape(words)):
        build()


def test_a_chain_state_checkpoints_by_name_and_refuses_another_kind() -> None:
    momentum = chain(trace(0.9), scale_by_learning_rate(0.1), kind="momentum")
    parameters = table(f32, 6)
    gradients = drawn(parameters, np.random.default_rng(2))
    _, state = momentum.update(gradients, momentum.init(parameters), parameters)
    restored = momentum.init(parameters).restored(state.arrays())
    assert restored.step == 1 and sorted(restored.arrays()) == sorted(state.arrays())
    with pytest.raises(OptimizerError, match=re.escape("handed a state made by momentum.init")):
        Sgd(0.1, momentum=0.9).update(gradients, state, parameters)
