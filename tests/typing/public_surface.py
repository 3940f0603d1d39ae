"""What the public surface promises a type checker (checked by mypy --strict; also runs).

``assert_type`` fails mypy when an inferred type differs from the stated one, so this file
pins the types a user's model code and a plugin author's code get: the structure of
``Tape.record`` results, ``Value`` operators, ``Parameters.of``, optimizer state, and the
plugin facade (never ``Any``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, assert_type

import attrs

from topos import (
    Adam,
    AdamW,
    Adjoints,
    ElementType,
    Field,
    Network,
    Optimizer,
    OptimizerState,
    Parameters,
    Plan,
    Run,
    Runner,
    Sgd,
    Symbol,
    Tape,
    Tensor,
    Value,
    XlaExecutable,
    f64,
    gradient,
)
from topos.nn import Path, Visitable, Visitor, bind, named_parameters
from topos.optim import LearningRate, OptimizerFactory, Schedule, learning_rate_at, schedules
from topos.plugins import (
    LayerFactory,
    element_type,
    element_types,
    hookimpl,
    layers,
    optimizer,
    optimizers,
)


def line(tape: Tape) -> tuple[Value, Value, Value, Value]:
    w = tape.parameter(0.0)
    x = tape.input(0.0)
    y = tape.input(0.0)
    error = w * x - y
    return w, x, y, error * error


def single(tape: Tape) -> Value:
    return tape.parameter([1.0, 2.0]).sum()


def named(tape: Tape) -> dict[str, Value]:
    return {"w": tape.parameter(1.0)}


def operators(tape: Tape) -> Value:
    v = tape.parameter([[1.0, 2.0], [3.0, 4.0]])
    assert_type(v + 1.0, Value)
    assert_type(2.0 * v, Value)
    assert_type(v - v, Value)
    assert_type(1 - v, Value)
    assert_type(v / 2, Value)
    assert_type(-v, Value)
    assert_type(v @ v, Value)
    assert_type(v**2.0, Value)
    assert_type(v.matmul(v).tanh().sum_along(0), Value)
    assert_type(v.symbol, Symbol)
    assert_type(v.element, ElementType)
    return v.sum()


network, (w, x, y, loss) = Tape.record(line, element=f64)
assert_type(network, Network)
assert_type(w, Symbol)
assert_type(Tape.record(single), tuple[Network, Symbol])
assert_type(Tape.record(named)[1], dict[str, Symbol])
assert_type(Tape.record(operators)[1], Symbol)

parameters = network.parameters()
assert_type(parameters, Parameters)
assert_type(parameters.of(w), Tensor)
assert_type(parameters.of(w).scalar(), float)
run = network.forward(parameters, {x: 1.0, y: 2.0})
assert_type(run, Run)
cotangents = run.backward(loss)
assert_type(cotangents, Field)
gradients = cotangents.parameters(parameters)
assert_type(gradients, Parameters)

adam = Adam(learning_rate=schedules.cosine_decay(0.1, steps=100))
state = adam.init(parameters)
assert_type(state, OptimizerState)
assert_type(state.tables, Mapping[str, Parameters])
assert_type(state.table("first"), Parameters)
assert_type(state.scalar("first_power"), Tensor)
assert_type(state.step, int)
after = adam.update(gradients, state, parameters)
assert_type(after, tuple[Parameters, OptimizerState])
generic: Optimizer = AdamW(learning_rate=1e-3, decay_where=lambda symbol, payload: payload.rank >= 2)
assert_type(generic.init(parameters), OptimizerState)

assert_type(optimizers(), Mapping[str, OptimizerFactory])
assert_type(element_types(), Mapping[str, ElementType])
assert_type(layers(), Mapping[str, LayerFactory])
assert_type(element_type("f32"), ElementType)
assert_type(optimizer("sgd"), OptimizerFactory)
assert_type(optimizer("sgd")(learning_rate=0.1), Optimizer)
schedule: Schedule = schedules.linear_warmup(0.1, warmup=10)
assert_type(schedule(3), float)
assert_type(learning_rate_at("mine", 0.1, 0), float)


# A plugin author's optimizer and hook: checked as strictly as the built-ins.
@attrs.frozen
class SignSgd:
    kind: ClassVar[str] = "sign_sgd"
    learning_rate: LearningRate

    def init(self, parameters: Parameters) -> OptimizerState:
        return OptimizerState.start(self.kind, parameters)

    def update(
        self, gradients: Parameters, state: OptimizerState, parameters: Parameters
    ) -> tuple[Parameters, OptimizerState]:
        state.check(self.kind, gradients, parameters)
        lr = learning_rate_at(self.kind, self.learning_rate, state.step)
        stepped = parameters.step(gradients, lambda p, g: p - (g.step(0.0) - (-g).step(0.0)) * lr)
        return stepped, state.advanced()


@hookimpl
def topos_optimizers() -> Mapping[str, OptimizerFactory]:
    return {"sign_sgd": SignSgd, "plain": Sgd}


mine: Optimizer = SignSgd(learning_rate=0.1)
assert_type(mine.update(gradients, mine.init(parameters), parameters)[0], Parameters)


# Lambdas: mypy infers a lambda's parameter as Any before choosing an overload; the common
# shapes still come back exact, never Any.
assert_type(Tape.record(lambda t: t.parameter(1.0))[1], Symbol)
assert_type(Tape.record(lambda t: (t.parameter(1.0),))[1], tuple[Symbol])
assert_type(Tape.record(lambda t: (t.parameter(1.0), t.input(2.0)))[1], tuple[Symbol, Symbol])
assert_type(Tape.record(lambda t: (t.parameter(1.0),) * 3)[1], tuple[Symbol, Symbol, Symbol])
assert_type(
    Tape.record(lambda t: (lambda w: (w, w * w, w + 1.0))(t.parameter(1.0)))[1], tuple[Symbol, Symbol, Symbol]
)
assert_type(
    Tape.record(lambda t: (t.parameter(1.0), t.input(2.0), t.input(3.0), t.input(4.0)))[1],
    tuple[Symbol, Symbol, Symbol, Symbol],
)
assert_type(
    Tape.record(lambda t: (t.parameter(1.0), t.input(2.0), t.input(3.0), t.input(4.0), t.input(5.0)))[1],
    tuple[Symbol, Symbol, Symbol, Symbol, Symbol],
)
assert_type(
    Tape.record(lambda t: (t.parameter(1.0), t.input(2.0), t.input(3.0), t.input(4.0), t.input(5.0), t.input(6.0)))[1],
    tuple[Symbol, Symbol, Symbol, Symbol, Symbol, Symbol],
)
assert_type(
    Tape.record(lambda t: (t.parameter(1.0), t.input(2.0), t.input(3.0), t.input(4.0), t.input(5.0), t.input(6.0),
                           t.input(7.0)))[1],
    tuple[Symbol, ...],
)
assert_type(Tape.record(lambda t: [t.parameter(1.0), t.input(2.0)])[1], list[Symbol])
assert_type(Tape.record(lambda t: {"w": t.parameter(1.0)})[1], dict[str, Symbol])
assert_type(Tape.record(lambda t: t.parameter(1.0), element=f64)[0], Network)

# One loop, three roads: the oracle, a plan and the XLA executable are all Runners.
plan = network.entry(loss).lower()
assert_type(plan, Plan)
runner: Runner = plan
assert_type(runner.forward(parameters, {x: 1.0, y: Tensor(2.0)}), Run)
runner = network
assert_type(runner.forward(parameters), Run)
assert isinstance(plan, Runner) and isinstance(network, Runner)


def on_xla(plan: Plan) -> Runner:
    executable = XlaExecutable.of_plan(plan)
    assert_type(executable, XlaExecutable)
    assert_type(executable.forward(parameters, {x: [1.0]}), Run)
    assert_type(executable(parameters), list[Tensor])
    return executable


longer, adjoints = gradient(network, loss, [w])
assert_type(adjoints, Adjoints)
assert_type(longer.forward(longer.parameters(), {x: 1.0}).recorded_gradients(adjoints), Parameters)
assert_type(Tensor([[1, 2], [3, 4]]), Tensor)


# A layer of two values is no Module, but it is Visitable: paths and checkpoints take it.
class Gate:
    def __init__(self, tape: Tape) -> None:
        self.mix = tape.parameter(0.5).symbol

    def __call__(self, left: Value, right: Value) -> Value:
        mix = bind(left, self.mix)
        return left * mix + right * (1.0 - mix)

    def visit(self, visitor: Visitor) -> None:
        visitor.parameter("mix", self.mix)


gate: Visitable = Gate(Tape())
assert_type(named_parameters(gate), list[tuple[Path, Symbol]])
assert isinstance(gate, Visitable)
