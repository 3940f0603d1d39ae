"""topos: record a graph once, then read it as values, gradients, plans and StableHLO.

The flat public surface. Two maps group it without moving anything:
:mod:`topos.model` (record, train, checkpoint) and :mod:`topos.compiler` (inspect, lower,
emit, extend).

Example:
    >>> from topos import Tape, Tensor, f64
    >>> network, (w, loss) = Tape.record(lambda t: (lambda w: (w, w * w))(t.parameter(3.0)), element=f64)
    >>> run = network.forward(network.parameters(), {})
    >>> run.backward(loss).of(w).scalar()
    6.0
"""

from topos.composites import arange, atan2, einsum, eye, stop_gradient, where
from topos.errors import (
    BackwardTargetError,
    CapacityError,
    CheckpointError,
    DeclarationError,
    ElementError,
    ElementRangeError,
    EmissionError,
    FeedError,
    ForeignSymbolError,
    FrozenError,
    InvalidArgumentError,
    MixedTapesError,
    NonFiniteError,
    NotDifferentiableError,
    ParametersError,
    PluginValidationError,
    RecordingError,
    SealedTapeError,
    ShapeMismatchError,
    SymbolError,
    ToposError,
    UnknownSymbolError,
    UnsupportedError,
    XlaUnavailableError,
)
from topos.finiteness import NonFiniteReport, checked, nonfinite
from topos.gradcheck import GradCheck, check_grad
from topos.ir.element import ElementType, bf16, f32, f64
from topos.ir.network import Network
from topos.ir.node import Node, Symbol
from topos.ir.numerics import Fidelity, Numerics
from topos.ir.ops import MapOperation
from topos.ir.shape import Shape
from topos.joins import concat, stack
from topos.kernels.dispatch import (
    Backend,
    Coverage,
    Dispatch,
    Formula,
    Precision,
    Service,
    tallied,
)
from topos.optim import Adam, AdamW, Optimizer, OptimizerError, OptimizerState, Sgd
from topos.stages.batching import Batching, batch
from topos.stages.emission import DataParallel, emission, emit_module, emit_network
from topos.stages.fusion import PatternMatch
from topos.stages.gradient import Adjoints, gradient
from topos.stages.plan import BoundEntry, Budget, Entry, Plan, plan
from topos.stages.rules import Recordable, express, vjp
from topos.stages.spec import Tape, Value, detach
from topos.stages.stablehlo import FullySharded, Mesh, Sharded, TensorParallel
from topos.state import Field, Parameters, Run, Runner
from topos.tensor import Tensor, TensorLike
from topos.xla import XlaDeviceError, XlaExecutable

__version__ = "0.1.0"

__all__ = [
    "Adam",
    "AdamW",
    "Adjoints",
    "Backend",
    "BackwardTargetError",
    "Batching",
    "BoundEntry",
    "Budget",
    "CapacityError",
    "CheckpointError",
    "Coverage",
    "DataParallel",
    "DeclarationError",
    "Dispatch",
    "ElementError",
    "ElementRangeError",
    "ElementType",
    "EmissionError",
    "Entry",
    "FeedError",
    "Fidelity",
    "Field",
    "ForeignSymbolError",
    "Formula",
    "FrozenError",
    "FullySharded",
    "GradCheck",
    "InvalidArgumentError",
    "MapOperation",
    "Mesh",
    "MixedTapesError",
    "Network",
    "Node",
    "NonFiniteError",
    "NonFiniteReport",
    "NotDifferentiableError",
    "Numerics",
    "Optimizer",
    "OptimizerError",
    "OptimizerState",
    "Parameters",
    "ParametersError",
    "PatternMatch",
    "Plan",
    "PluginValidationError",
    "Precision",
    "Recordable",
    "RecordingError",
    "Run",
    "Runner",
    "SealedTapeError",
    "Service",
    "Sgd",
    "Shape",
    "ShapeMismatchError",
    "Sharded",
    "Symbol",
    "SymbolError",
    "Tape",
    "Tensor",
    "TensorLike",
    "TensorParallel",
    "ToposError",
    "UnknownSymbolError",
    "UnsupportedError",
    "Value",
    "XlaDeviceError",
    "XlaExecutable",
    "XlaUnavailableError",
    "arange",
    "atan2",
    "batch",
    "bf16",
    "check_grad",
    "checked",
    "concat",
    "detach",
    "einsum",
    "emission",
    "emit_module",
    "emit_network",
    "express",
    "eye",
    "f32",
    "f64",
    "gradient",
    "nonfinite",
    "plan",
    "stack",
    "stop_gradient",
    "tallied",
    "vjp",
    "where",
]
