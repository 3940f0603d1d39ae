"""Mistakes the types must catch: every line marked ``# E: <code>`` must fail mypy --strict.

Not part of the project's mypy run (excluded in pyproject.toml); ``test_typing.py`` runs
mypy on this file alone and asserts that exactly the marked lines fail, with those codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

from topos import Adam, AdamW, OptimizerState, Parameters, Sgd, Tape, Value, XlaExecutable, f32, f64
from topos.nn import Module, Visitor, named_parameters
from topos.optim import Optimizer, OptimizerFactory, schedules
from topos.plugins import element_type, hookimpl, optimizer


def line(tape: Tape) -> tuple[Value, Value, Value, Value]:
    w = tape.parameter(0.0)
    return w, tape.input(0.0), tape.input(0.0), w * w


network, (w, x, y, loss) = Tape.record(line, element=f64)
_, (too, few) = Tape.record(line)  # E: misc
parameters = network.parameters()
gradients = network.forward(parameters).backward(loss).parameters(parameters)
parameters.of("w")  # E: arg-type
network.forward(parameters, [1.0])  # E: arg-type


def no_text(tape: Tape) -> Value:
    return tape.parameter(1.0) + None  # E: operator


adam = Adam(learning_rate=0.1)
state = adam.init(parameters)
adam.update(gradients, parameters, parameters)  # E: arg-type
adam.update(gradients, state)  # E: call-arg
Adam(learning_rate="fast")  # E: arg-type
Sgd(0.1).momentum = 0.5  # E: misc
AdamW(0.1, decay_where=lambda symbol: True)  # E: arg-type, misc
state.step + "1"  # E: operator
not_called: Optimizer = optimizer("adam")  # E: assignment
element_type(f32)  # E: arg-type
schedules.cosine_decay(0.1, steps=10)("3")  # E: arg-type


@attrs.frozen
class HalfAnOptimizer:
    kind: ClassVar[str] = "half"

    def init(self, parameters: Parameters) -> OptimizerState:
        return OptimizerState.start(self.kind, parameters)


half: Optimizer = HalfAnOptimizer()  # E: assignment


@hookimpl
def topos_optimizers() -> Mapping[str, OptimizerFactory]:
    return [Sgd]  # E: return-value


recorded: str = Tape.record(lambda t: t.parameter(1.0))[1]  # E: assignment
pair: tuple[str, str] = Tape.record(lambda t: (t.parameter(1.0), t.input(1.0)))[1]  # E: assignment
XlaExecutable.of_plan(network)  # E: arg-type
network.forward(parameters).recorded_gradients(parameters)  # E: arg-type
network.forward(parameters, {x: object()})  # E: dict-item
Tape().parameter(None)  # E: arg-type
named_parameters(object())  # E: arg-type


class Pair:
    def __call__(self, left: Value, right: Value) -> Value:
        return left + right

    def visit(self, visitor: Visitor) -> None:
        pass


as_module: Module = Pair()  # E: assignment
