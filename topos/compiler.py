"""The map for compiler work: inspect, lower, emit, extend. It moves nothing; every name
here is also importable from where it lives.

Example:
    >>> from topos.compiler import Numerics, plan, emission
    >>> Numerics.EXACT.value
    'exact'
"""

from topos.gradcheck import GradCheck, check_grad
from topos.ir.element import ElementType, bf16, f32, f64
from topos.ir.network import Network
from topos.ir.node import Node, Symbol
from topos.ir.numerics import Fidelity, Numerics
from topos.ir.ops import OPCODES, MapOperation, Op
from topos.ir.shape import Shape
from topos.kernels import reference
from topos.kernels.dispatch import Backend, Coverage, Dispatch, Formula, Precision, Service, tallied
from topos.stages.batching import Batching, batch
from topos.stages.describe import describe_network
from topos.stages.emission import DataParallel, emission, emit_module, emit_network
from topos.stages.fusion import PatternMatch
from topos.stages.gradient import Adjoints, gradient
from topos.stages.interpret import interpret
from topos.stages.plan import BoundEntry, Budget, Entry, Plan, plan
from topos.stages.rules import Recordable, express, vjp
from topos.stages.spec import Tape
from topos.stages.stablehlo import FullySharded, Mesh, Sharded, TensorParallel, spec
from topos.state import Parameters, Run
from topos.tensor import Tensor
from topos.xla import XlaExecutable

__all__ = [
    "OPCODES",
    "Adjoints",
    "Backend",
    "Batching",
    "BoundEntry",
    "Budget",
    "Coverage",
    "DataParallel",
    "Dispatch",
    "ElementType",
    "Entry",
    "Fidelity",
    "Formula",
    "FullySharded",
    "GradCheck",
    "MapOperation",
    "Mesh",
    "Network",
    "Node",
    "Numerics",
    "Op",
    "Parameters",
    "PatternMatch",
    "Plan",
    "Precision",
    "Recordable",
    "Run",
    "Service",
    "Shape",
    "Sharded",
    "Symbol",
    "Tape",
    "Tensor",
    "TensorParallel",
    "XlaExecutable",
    "batch",
    "bf16",
    "check_grad",
    "describe_network",
    "emission",
    "emit_module",
    "emit_network",
    "express",
    "f32",
    "f64",
    "gradient",
    "interpret",
    "plan",
    "reference",
    "spec",
    "tallied",
    "vjp",
]  # fmt: skip
