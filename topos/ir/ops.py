"""The sealed opcode set: 29 instructions and 11 map operations.

Each opcode is a final, frozen class that carries its own parameters; :data:`Op` is the
closed union of them, so a ``match`` over ``node.op`` can be checked for exhaustiveness.
There is no way to add an opcode from outside: every reading keeps a table over exactly
these classes, and a test checks that each table covers each opcode.

Operand conventions (see ``docs/terminology.md``): ``Gather`` takes ``[table, selection]``,
``Scatter`` takes ``[gradient, selection]``, ``Powf`` takes ``[base, exponent]`` and ``Step``
takes ``[operand, threshold]`` and ``Select`` takes ``[mask, on_true, on_false]``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import ClassVar, Final, final

import attrs

from topos.errors import InvalidArgumentError
from topos.ir.checks import is_integer
from topos.ir.shape import Shape

__all__ = [
    "OPCODES",
    "Add",
    "Broadcast",
    "BroadcastAlong",
    "Div",
    "Fold",
    "Gather",
    "Input",
    "Leaf",
    "LogSoftmax",
    "LogSumExp",
    "Map",
    "MapOperation",
    "MatMul",
    "Maximum",
    "Mul",
    "Narrow",
    "Neg",
    "Op",
    "Pad",
    "Parameter",
    "Permute",
    "Powf",
    "Reshape",
    "Scatter",
    "Select",
    "Step",
    "StopGradient",
    "Sub",
    "Sum",
    "SumAlong",
    "Unfold",
    "op_name",
]


class MapOperation(enum.Enum):
    """The unary elementwise maps that share the one ``Map`` opcode."""

    EXP = "Exp"
    LN = "Ln"
    SQRT = "Sqrt"
    TANH = "Tanh"
    SIN = "Sin"
    COS = "Cos"
    LOG1P = "Log1p"
    EXPM1 = "Expm1"
    ERF = "Erf"
    ERF_DERIVATIVE = "ErfDerivative"
    ATAN = "Atan"

    def __str__(self) -> str:
        return self.value


class _Opcode:
    """Shared class-level facts: ``name`` is the class's own, ``arity`` its class keyword."""

    __slots__ = ()
    name: ClassVar[str]
    arity: ClassVar[int]

    def __init_subclass__(cls, arity: int | None = None) -> None:
        # attrs remakes each class for its slots without the keyword: the arity is kept then.
        cls.name = cls.__name__
        if arity is not None:
            cls.arity = arity

    @property
    def is_source(self) -> bool:
        return self.arity == 0


# Parameters are checked where an opcode is made, so a malformed node can never be
# recorded (a later describe() or forward() would fail far from the cause).


def _to_order(value: Iterable[int]) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidArgumentError(f"Permute: order must be a sequence of axes, got {value!r}")
    order = tuple(value)
    for axis in order:
        if not is_integer(axis):
            raise InvalidArgumentError(f"Permute: order must hold integer axes, got {axis!r} in {list(order)!r}")
    return tuple(int(v) for v in order)


def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int or value < 1:
        raise InvalidArgumentError(
            f"{type(instance).__name__}: {attribute.name} must be a positive integer, got {value!r}"
        )


def _natural(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int or value < 0:
        raise InvalidArgumentError(
            f"{type(instance).__name__}: {attribute.name} must be a non-negative integer, got {value!r}"
        )


def _a_shape(instance: object, attribute: attrs.Attribute[Shape], value: object) -> None:
    if not isinstance(value, Shape):
        raise InvalidArgumentError(
            f"{type(instance).__name__}: {attribute.name} must be a Shape, got {type(value).__name__} {value!r}"
        )


def _a_map_operation(instance: object, attribute: attrs.Attribute[MapOperation], value: object) -> None:
    if not isinstance(value, MapOperation):
        known = ", ".join(f"MapOperation.{m.name}" for m in MapOperation)
        raise InvalidArgumentError(f"Map: operation must be one of {known}; got {value!r}")


@final
@attrs.frozen(slots=True)
class Leaf(_Opcode, arity=0):
    """A recorded constant."""


@final
@attrs.frozen(slots=True)
class Parameter(_Opcode, arity=0):
    """A trainable slot; its payload comes from the caller's Parameters table."""


@final
@attrs.frozen(slots=True)
class Input(_Opcode, arity=0):
    """A per-run feed with a recorded default."""


@final
@attrs.frozen(slots=True)
class Add(_Opcode, arity=2):
    """Elementwise ``a + b`` of two operands of one shape."""


@final
@attrs.frozen(slots=True)
class Sub(_Opcode, arity=2):
    """Elementwise ``a - b`` of two operands of one shape."""


@final
@attrs.frozen(slots=True)
class Mul(_Opcode, arity=2):
    """Elementwise ``a * b`` of two operands of one shape."""


@final
@attrs.frozen(slots=True)
class Div(_Opcode, arity=2):
    """Elementwise ``a / b`` of two operands of one shape."""


@final
@attrs.frozen(slots=True)
class Neg(_Opcode, arity=1):
    """Elementwise ``-a``."""


@final
@attrs.frozen(slots=True)
class Map(_Opcode, arity=1):
    """An elementwise unary map; ``describe`` prints the map's own name."""

    operation: MapOperation = attrs.field(validator=_a_map_operation)


@final
@attrs.frozen(slots=True)
class MatMul(_Opcode, arity=2):
    """``[b..., m, k] x [b..., k, n] -> [b..., m, n]`` with identical batch prefixes."""


@final
@attrs.frozen(slots=True)
class Sum(_Opcode, arity=1):
    """Sum of every element, to rank 0."""


@final
@attrs.frozen(slots=True)
class SumAlong(_Opcode, arity=1):
    """Sum over one axis, removing it."""

    axis: int = attrs.field(validator=_natural)


@final
@attrs.frozen(slots=True)
class Broadcast(_Opcode, arity=1):
    """Spread a single-element operand over ``shape``."""

    shape: Shape = attrs.field(validator=_a_shape)


@final
@attrs.frozen(slots=True)
class BroadcastAlong(_Opcode, arity=1):
    """Insert a new axis of ``extent`` at ``axis``, repeating the operand along it."""

    axis: int = attrs.field(validator=_natural)
    extent: int = attrs.field(validator=_positive)


@final
@attrs.frozen(slots=True)
class Reshape(_Opcode, arity=1):
    shape: Shape = attrs.field(validator=_a_shape)


@final
@attrs.frozen(slots=True)
class Permute(_Opcode, arity=1):
    """Axis ``i`` of the result is axis ``order[i]`` of the operand."""

    order: tuple[int, ...] = attrs.field(converter=_to_order)


@final
@attrs.frozen(slots=True)
class Narrow(_Opcode, arity=1):
    """Keep ``length`` positions of ``axis`` from ``start``."""

    axis: int = attrs.field(validator=_natural)
    start: int = attrs.field(validator=_natural)
    length: int = attrs.field(validator=_positive)


@final
@attrs.frozen(slots=True)
class Pad(_Opcode, arity=1):
    """Place the operand at ``start`` inside zeros widening ``axis`` to ``extent``."""

    axis: int = attrs.field(validator=_natural)
    start: int = attrs.field(validator=_natural)
    extent: int = attrs.field(validator=_positive)


@final
@attrs.frozen(slots=True)
class Unfold(_Opcode, arity=1):
    """Replace ``axis`` by ``(count, size)`` windows starting every ``step``."""

    axis: int = attrs.field(validator=_natural)
    size: int = attrs.field(validator=_positive)
    step: int = attrs.field(validator=_positive)
    dilation: int = attrs.field(validator=_positive)


@final
@attrs.frozen(slots=True)
class Fold(_Opcode, arity=1):
    """Sum ``(count, size)`` windows back onto an axis of ``extent`` (adjoint of Unfold)."""

    axis: int = attrs.field(validator=_natural)
    size: int = attrs.field(validator=_positive)
    step: int = attrs.field(validator=_positive)
    dilation: int = attrs.field(validator=_positive)
    extent: int = attrs.field(validator=_positive)


@final
@attrs.frozen(slots=True)
class Gather(_Opcode, arity=2):
    """Rows of ``table`` chosen by a one-hot ``selection [count, vocab]``."""


@final
@attrs.frozen(slots=True)
class Scatter(_Opcode, arity=2):
    """Rows of ``gradient`` added into ``[vocab, ...]`` at a selection's indices."""


@final
@attrs.frozen(slots=True)
class LogSoftmax(_Opcode, arity=1):
    axis: int = attrs.field(validator=_natural)


@final
@attrs.frozen(slots=True)
class LogSumExp(_Opcode, arity=1):
    axis: int = attrs.field(validator=_natural)


@final
@attrs.frozen(slots=True)
class Powf(_Opcode, arity=2):
    """Elementwise ``a ** b`` of two operands of one shape."""


@final
@attrs.frozen(slots=True)
class Maximum(_Opcode, arity=2):
    """Elementwise maximum; ties belong wholly to the left operand for gradients."""


@final
@attrs.frozen(slots=True)
class Step(_Opcode, arity=2):
    """1 where operand >= threshold, else 0; carries no gradient."""


@final
@attrs.frozen(slots=True)
class Select(_Opcode, arity=3):
    """``on_true`` where ``mask`` is nonzero (NaN counts as nonzero), else ``on_false``.

    The unselected operand is never read into the result, so an inf or NaN there cannot
    leak into it (``mask * a + (1 - mask) * b`` would). The mask carries no gradient.
    """


@final
@attrs.frozen(slots=True)
class StopGradient(_Opcode, arity=1):
    """The operand unchanged; its derivative rule sends nothing back."""


Op = (
    Leaf
    | Parameter
    | Input
    | Add
    | Sub
    | Mul
    | Div
    | Neg
    | Map
    | MatMul
    | Sum
    | SumAlong
    | Broadcast
    | BroadcastAlong
    | Reshape
    | Permute
    | Narrow
    | Pad
    | Unfold
    | Fold
    | Gather
    | Scatter
    | LogSoftmax
    | LogSumExp
    | Powf
    | Maximum
    | Step
    | Select
    | StopGradient
)
"""The union of every sealed opcode class: the type of ``Node.op``."""

OPCODES: Final[tuple[type[_Opcode], ...]] = (
    Leaf, Parameter, Input, Add, Sub, Mul, Div, Neg, Map, MatMul, Sum, SumAlong, Broadcast,
    BroadcastAlong, Reshape, Permute, Narrow, Pad, Unfold, Fold, Gather, Scatter, LogSoftmax,
    LogSumExp, Powf, Maximum, Step, Select, StopGradient,
)  # fmt: skip
"""Every sealed opcode class, in declaration order (tests check each table covers it)."""


def op_name(op: Op) -> str:
    """The printable name: a Map prints its map (``Tanh``), every other opcode its class."""
    if isinstance(op, Map):
        return op.operation.value
    return op.name
