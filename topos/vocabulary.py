"""The recordable vocabulary, spelled once.

:class:`Vocabulary` defines every method of the vocabulary (arithmetic, one method per
opcode, and the composites built from them) over a few hooks. ``Tensor`` implements the
hooks by computing (:meth:`Vocabulary._apply` runs the opcode's kernel from
:data:`topos.backends.binding.KERNELS`); ``Value`` implements them by recording a node. So
both speak the same vocabulary by construction, and a composite such as ``relu`` records
exactly the nodes whose kernels a tensor runs.

The hooks a subclass supplies:

- ``_apply(op, *others)``: the opcode over ``self`` and ``others`` (already of this type);
- ``_binary(op, other, reverse)``: the same for a partner that may be a literal (a number,
  or whatever else the subclass accepts), brought to this type first;
- ``_constant(shape, value)``: one number filling ``shape``;

and, where the subclass checks its arguments its own way, ``_axis`` (normalise an axis),
``_checked`` (build an opcode, wrapping its errors) and ``_name`` (the operand in messages).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, NoReturn, Self, TypeVar

import numpy as np

from topos.errors import (
    InvalidArgumentError,
    ShapeMismatchError,
    ToposError,
    UnsupportedError,
    user_site,
)
from topos.ir import ops
from topos.ir.checks import integer, is_integer
from topos.ir.element import ElementType
from topos.ir.shape import Shape

__all__ = ["Vocabulary", "reshape_target"]

Other = TypeVar("Other")
"""The literals a subclass accepts beside itself (numbers for tensors; arrays too for values)."""


_EXP_CAPS: dict[str, float] = {}


def _exp_cap(element: ElementType) -> float:
    """The largest integer c with ``exp(c)`` finite in ``element`` (88 for f32, 709 for f64)."""
    cap = _EXP_CAPS.get(element.name)
    if cap is None:
        cap = float(math.floor(math.log(element.largest)))
        _EXP_CAPS[element.name] = cap
    return cap


def reshape_target(shape: Any, source: Shape) -> Shape:
    """The Shape a reshape asks for; ``-1`` (infer an extent) is refused with the volume to use."""
    if not isinstance(shape, Shape) and isinstance(shape, Sequence) and not isinstance(shape, (str, bytes)):
        if any(is_integer(extent) and int(extent) == -1 for extent in shape):
            raise InvalidArgumentError(
                f"reshape {list(shape)!r}: -1 (an inferred extent) is not supported yet; spell every "
                f"extent out (the source {source} has volume {source.volume})"
            )
    target = Shape.of(shape)
    if target.volume != source.volume:
        raise ShapeMismatchError(
            f"reshape: cannot reshape {source} (volume {source.volume}) to {target} (volume {target.volume})"
        )
    return target


class Vocabulary(Generic[Other]):
    """Arithmetic, one method per opcode, and composites, over the hooks of a subclass.

    Example:
        >>> from topos import Tensor, f64
        >>> x = Tensor([-2.0, 0.5, 3.0], element=f64)
        >>> x.relu().tolist(), x.clip(-1.0, 1.0).tolist(), x.mean().scalar()
        ([0.0, 0.5, 3.0], [-1.0, 0.5, 1.0], 0.5)
    """

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def shape(self) -> Shape: ...
        @property
        def element(self) -> ElementType: ...

    # ----------------------------------------------------------------- hooks
    def _apply(self, op: ops.Op, *others: Self) -> Self:
        raise NotImplementedError  # pragma: no cover

    def _binary(self, op: ops.Op, other: Self | Other | float, reverse: bool = False) -> Self:
        raise NotImplementedError  # pragma: no cover

    def _constant(self, shape: Shape | Sequence[int], value: float) -> Self:
        raise NotImplementedError  # pragma: no cover

    def _axis(self, axis: int, what: str) -> int:
        return axis

    def _checked(self, build: Callable[[], ops.Op]) -> ops.Op:
        return build()

    def _name(self) -> str:
        return f"a value of shape {self.shape}"

    @property
    def rank(self) -> int:
        return self.shape.rank

    # ----------------------------------------------------------------- arithmetic
    def __add__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Add(), other)

    def __radd__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Add(), other, reverse=True)

    def __sub__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Sub(), other)

    def __rsub__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Sub(), other, reverse=True)

    def __mul__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Mul(), other)

    def __rmul__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Mul(), other, reverse=True)

    def __truediv__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Div(), other)

    def __rtruediv__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Div(), other, reverse=True)

    def __neg__(self) -> Self:
        return self._apply(ops.Neg())

    def __pow__(self, exponent: Self | Other | float) -> Self:
        return self.powf(exponent)

    def __rpow__(self, base: Self | Other | float) -> Self:
        return self._binary(ops.Powf(), base, reverse=True)

    def __matmul__(self, other: Self | Other | float) -> Self:
        return self.matmul(other)

    def __rmatmul__(self, other: Self | Other | float) -> Self:
        return self._binary(ops.MatMul(), other, reverse=True)

    def powf(self, exponent: Self | Other | float) -> Self:
        return self._binary(ops.Powf(), exponent)

    def maximum(self, other: Self | Other | float) -> Self:
        return self._binary(ops.Maximum(), other)

    def step(self, threshold: Self | Other | float) -> Self:
        return self._binary(ops.Step(), threshold)

    def map(self, operation: ops.MapOperation) -> Self:
        return self._apply(self._checked(lambda: ops.Map(operation)))

    def exp(self) -> Self:
        return self.map(ops.MapOperation.EXP)

    def ln(self) -> Self:
        return self.map(ops.MapOperation.LN)

    def sqrt(self) -> Self:
        return self.map(ops.MapOperation.SQRT)

    def tanh(self) -> Self:
        return self.map(ops.MapOperation.TANH)

    def sin(self) -> Self:
        return self.map(ops.MapOperation.SIN)

    def cos(self) -> Self:
        return self.map(ops.MapOperation.COS)

    def log1p(self) -> Self:
        return self.map(ops.MapOperation.LOG1P)

    def expm1(self) -> Self:
        return self.map(ops.MapOperation.EXPM1)

    def erf(self) -> Self:
        return self.map(ops.MapOperation.ERF)

    def erf_derivative(self) -> Self:
        return self.map(ops.MapOperation.ERF_DERIVATIVE)

    # ----------------------------------------------------------------- products and sums
    def matmul(self, other: Self | Other | float) -> Self:
        return self._binary(ops.MatMul(), other)

    def sum(self) -> Self:
        return self._apply(ops.Sum())

    def sum_along(self, axis: int) -> Self:
        return self._apply(ops.SumAlong(self._axis(axis, "sum_along")))

    def logsumexp(self, axis: int) -> Self:
        return self._apply(ops.LogSumExp(self._axis(axis, "logsumexp")))

    def log_softmax(self, axis: int) -> Self:
        return self._apply(ops.LogSoftmax(self._axis(axis, "log_softmax")))

    # ----------------------------------------------------------------- layout
    def broadcast(self, shape: Sequence[int] | Shape) -> Self:
        return self._apply(self._checked(lambda: ops.Broadcast(Shape.of(shape))))

    def broadcast_along(self, axis: int, extent: int) -> Self:
        return self._apply(self._checked(lambda: ops.BroadcastAlong(axis, extent)))

    def reshape(self, shape: Sequence[int] | Shape) -> Self:
        return self._apply(self._checked(lambda: ops.Reshape(reshape_target(shape, self.shape))))

    def permute(self, order: Sequence[int]) -> Self:
        return self._apply(self._checked(lambda: ops.Permute(order)))

    def narrow(self, axis: int, start: int, length: int) -> Self:
        axis = self._axis(axis, "narrow")
        return self._apply(self._checked(lambda: ops.Narrow(axis, start, length)))

    def pad(self, axis: int, start: int, extent: int) -> Self:
        axis = self._axis(axis, "pad")
        return self._apply(self._checked(lambda: ops.Pad(axis, start, extent)))

    def unfold(self, axis: int, size: int, step: int, dilation: int = 1) -> Self:
        axis = self._axis(axis, "unfold")
        return self._apply(self._checked(lambda: ops.Unfold(axis, size, step, dilation)))

    def fold(self, axis: int, size: int, step: int, dilation: int, extent: int) -> Self:
        return self._apply(self._checked(lambda: ops.Fold(axis, size, step, dilation, extent)))

    def gather(self, selection: Self | Other | float) -> Self:
        return self._binary(ops.Gather(), selection)

    def scatter(self, selection: Self | Other | float) -> Self:
        return self._binary(ops.Scatter(), selection)

    # ----------------------------------------------------------------- identities
    def zero_like(self) -> Self:
        return self._constant(self.shape, 0.0)

    def one_like(self) -> Self:
        return self._constant(self.shape, 1.0)

    # ----------------------------------------------------------------- composites
    def _sign(self, zero: Self) -> Self:
        return self.step(zero) - zero.step(self)

    def sign(self) -> Self:
        """``step(x, 0) - step(0, x)``: -1, 0 or 1, with no gradient (both Steps are data).

        NaN has sign 0 (neither comparison holds), unlike numpy's NaN; ±0 has sign 0.
        """
        return self._sign(self.zero_like())

    def abs(self) -> Self:
        """``x * sign(x) + 0``: the magnitude, with gradient 0 at ±0 (as PyTorch).

        ``sign`` is spelled with two Steps, so it carries no gradient and the derivative is
        ``sign(x)``. The trailing ``+ 0`` turns ``-0 * 0`` into ``+0``, so ``|-0|`` is ``+0``;
        ``|NaN|`` is NaN.
        """
        zero = self.zero_like()
        return self * self._sign(zero) + zero

    def clip(self, low: Self | float, high: Self | float) -> Self:
        """``x`` held within ``[low, high]``: ``-maximum(-maximum(x, low), -high)``.

        Maximum gives ties to its left operand, so at either bound the gradient flows to
        ``x`` (as PyTorch's clamp). Maximum propagates NaN: a NaN in ``x`` or in a bound
        gives NaN. With ``low > high`` the result is ``high``. A zero result at a zero bound
        may carry either sign (numpy's maximum keeps its second operand on ties).
        """
        ceiling = high if isinstance(high, bool) else -high
        return -((-self.maximum(low)).maximum(ceiling))

    def relu(self) -> Self:
        """maximum(0, x) against a zero of the same shape.

        The zero stands on the left because Maximum gives ties wholly to its left operand:
        at x == 0 the gradient is 0, as in JAX and PyTorch.
        """
        return self.zero_like().maximum(self)

    def softplus(self) -> Self:
        """``relu(x) + log1p(exp(-|x|))``, finite for every finite x.

        ``|x|`` is spelled ``maximum(-x, x)`` here, so the tie at 0 goes to ``-x``: with
        relu's zero-on-the-left tie, the derivative at 0 comes out as sigmoid(0) = 1/2.
        """
        return self.relu() + (-((-self).maximum(self))).exp().log1p()

    def gelu(self, approximate: bool = False) -> Self:
        """x * (1 + erf(x / sqrt 2)) / 2; with ``approximate`` the tanh form.

        Constants are constant leaves; sqrt 2 is computed from a constant 2.
        """
        if approximate:
            cube = self * self * self
            inner = (self + cube * 0.044715) * float(np.sqrt(2.0 / np.pi))
            return self * (inner.tanh() + 1.0) * 0.5
        two = self._constant(self.shape, 2.0)
        return self * ((self / two.sqrt()).erf() + 1.0) / two

    def _negated_for_exp(self) -> Self:
        """``-maximum(x, -c)`` with ``exp(c)`` finite in this element.

        ``1 / (1 + exp(-x))`` has the right value for every x, but once ``exp(-x)``
        overflows, the chain rule multiplies ``0 * inf`` and the gradient is NaN where the
        true one is 0. Capping ``-x`` at c keeps every value above the cap bit-identical
        and moves the result below it by less than ``exp(-c)`` (under the smallest normal
        number of the element); the cap's Maximum sends the (vanishing) gradient there to
        the constant.
        """
        cap = self._constant(self.shape, -_exp_cap(self.element))
        return -self.maximum(cap)

    def silu(self) -> Self:
        """x / (1 + exp(-x)), with the exponent capped so the gradient stays finite."""
        return self / (self._negated_for_exp().exp() + 1.0)

    def sigmoid(self) -> Self:
        """1 / (1 + exp(-x)), with the exponent capped so the gradient stays finite.

        Example:
            >>> from topos import Tape, f32
            >>> network, (x, y) = Tape.record(lambda t: (lambda x: (x, x.sigmoid().sum()))(t.input([-200.0, 0.0])), element=f32)
            >>> network.forward(network.parameters()).backward(y).of(x).tolist()
            [0.0, 0.25]
        """
        return self.one_like() / (self._negated_for_exp().exp() + 1.0)

    def softmax(self, axis: int) -> Self:
        return self.log_softmax(axis).exp()

    def mean_along(self, axis: int) -> Self:
        axis = self._axis(axis, "mean_along")
        total = self.sum_along(axis)
        return total / self._constant(total.shape, float(self.shape[axis]))

    def mean(self) -> Self:
        return self.sum() / self._constant((), float(self.shape.volume))

    def broadcast_like(self, reference: Self) -> Self:
        return self.broadcast(reference.shape)

    def broadcast_along_like(self, axis: int, reference: Self) -> Self:
        return self.broadcast_along(axis, reference.shape[axis])

    def broadcast_to(self, shape: Sequence[int] | Shape) -> Self:
        """NumPy's right-aligned broadcasting, spelled with explicit nodes."""
        site = user_site()
        try:
            target = Shape.of(shape)
        except ToposError as error:
            raise type(error)(f"{site}: broadcast_to: {error.detail} (operand {self._name()})") from None
        if self.shape == target:
            return self
        if self.shape.volume == 1:
            return self.broadcast(target)
        if self.rank > target.rank:
            raise ShapeMismatchError(f"{site}: cannot broadcast {self.shape} to {target}")
        lead = target.rank - self.rank
        kept: list[int] = []
        for axis, extent in enumerate(self.shape):
            if extent != 1 and extent != target[lead + axis]:
                raise ShapeMismatchError(f"{site}: cannot broadcast {self.shape} to {target}")
            if extent != 1:
                kept.append(lead + axis)
        value = self.reshape(tuple(target[a] for a in kept))
        for axis in range(target.rank):
            if axis not in kept:
                value = value.broadcast_along(axis, target[axis])
        return value

    def transpose(self) -> Self:
        if self.rank > 2:
            raise InvalidArgumentError(f"{user_site()}: transpose() is for rank <= 2; use permute for {self.shape}")
        return self.permute(tuple(reversed(range(self.rank))))

    def unsqueeze(self, axis: int) -> Self:
        axis = integer(axis, f"unsqueeze of {self._name()}: axis")
        if axis < 0:
            axis += self.rank + 1
        if not 0 <= axis <= self.rank:
            raise InvalidArgumentError(f"{user_site()}: unsqueeze axis {axis} out of range for {self.shape}")
        return self.reshape(self.shape.with_axis(axis, 1))

    def squeeze(self, axis: int) -> Self:
        axis = self._axis(axis, "squeeze")
        if self.shape[axis] != 1:
            raise ShapeMismatchError(f"{user_site()}: squeeze axis {axis} of {self.shape} has extent {self.shape[axis]}, not 1")
        return self.reshape(self.shape.without_axis(axis))

    # ----------------------------------------------------------------- not yet in the vocabulary
    def _unsupported(self, what: str) -> NoReturn:
        raise UnsupportedError(
            f"{what} on {self._name()} is not built yet; use x.step(threshold) for a "
            "0/1 mask (1 where x >= threshold), or x.maximum(y)"
        )

    # Equality stays identity (values key dicts and sets); ordering and indexing are refused.
    def __lt__(self, other: object) -> NoReturn:
        self._unsupported("comparison '<'")

    def __le__(self, other: object) -> NoReturn:
        self._unsupported("comparison '<='")

    def __gt__(self, other: object) -> NoReturn:
        self._unsupported("comparison '>'")

    def __ge__(self, other: object) -> NoReturn:
        self._unsupported("comparison '>='")

    def __getitem__(self, index: object) -> NoReturn:
        raise UnsupportedError(
            f"indexing [{index!r}] of {self._name()} is not built yet; use "
            "narrow(axis, start, length) to keep a range, then reshape (or squeeze) to drop the axis"
        )

    # ----------------------------------------------------------------- the common math (issue 12)
    # Every method here is a composite of the sealed opcodes and maps, so each reading covers it.
    # Piecewise formulas use ``_pick``: both pieces are evaluated on inputs clamped into their
    # own safe domain, so neither is ever inf or NaN where it is not chosen, and ``mask * a +
    # (1 - mask) * b`` is then exact (``1 * a + 0 * b == a``) with a zero gradient into the
    # unchosen piece. A true inf-safe select is a new opcode; these do not need one.
    def _pick(self, mask: Self, chosen: Self, otherwise: Self) -> Self:
        return mask * chosen + (mask.one_like() - mask) * otherwise

    def _minimum_tied_to_self(self, bound: Self | float) -> Self:
        """``min(x, bound)`` whose tie sends the gradient to ``x``."""
        ceiling = bound if isinstance(bound, bool) else -bound
        return -((-self).maximum(ceiling))

    def tan(self) -> Self:
        """``sin(x) / cos(x)``; within a few ulp of libm's tan (cos is accurate near its zeros).

        Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([0.5], element=f64).tan().scalar(), 12)
            0.546302489844
        """
        return self.sin() / self.cos()

    def _sinh_cosh_half(self) -> tuple[Self, Self]:
        """``(sinh(x / 2), cosh(x / 2))`` from expm1 (no cancellation near 0) and exp."""
        half = self * 0.5
        sinh = (half.expm1() - (-half).expm1()) * 0.5
        cosh = (half.exp() + (-half).exp()) * 0.5
        return sinh, cosh

    def sinh(self) -> Self:
        """``2 sinh(x/2) cosh(x/2)``, each half from exp and expm1.

        The half angle keeps the value finite wherever sinh is (``exp(x)`` alone overflows
        just below sinh's own limit), and expm1 keeps small ``x`` relatively accurate; the
        sign of zero is kept. Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([1.0], element=f64).sinh().scalar(), 12)
            1.175201193644
        """
        sinh, cosh = self._sinh_cosh_half()
        return sinh * cosh * 2.0

    def cosh(self) -> Self:
        """``1 + 2 sinh(x/2)²``: finite wherever cosh is, gradient relatively accurate near 0.

        Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([1.0], element=f64).cosh().scalar(), 12)
            1.543080634815
        """
        sinh, _ = self._sinh_cosh_half()
        return sinh * sinh * 2.0 + 1.0

    def asinh(self) -> Self:
        """Inverse hyperbolic sine, in two clamped pieces (see ``_pick``).

        ``|x| <= 1``: ``log1p(x + x² / (1 + sqrt(x² + 1)))``, accurate near 0 and odd.
        ``|x| > 1``: ``sign(x) (ln|x| + ln(1 + sqrt(1 + 1/x²)))``, which never squares a large
        ``x`` (no overflow up to the largest float) and gives ±inf at ±inf. Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([-2.0], element=f64).asinh().scalar(), 12)
            -1.443635475179
        """
        one = self.one_like()
        inner = self.clip(-1.0, 1.0)
        near = (inner + inner * inner / ((inner * inner + 1.0).sqrt() + 1.0)).log1p()
        magnitude = self.abs().maximum(one)
        reciprocal = one / magnitude
        far = magnitude.ln() + ((reciprocal * reciprocal + 1.0).sqrt() + 1.0).ln()
        return self._pick(one.step(self.abs()), near, self.sign() * far)

    def acosh(self) -> Self:
        """Inverse hyperbolic cosine for ``x >= 1`` (NaN below), in two clamped pieces.

        ``x <= 2``: ``log1p(t + sqrt(t) sqrt(t + 2))`` with ``t = x - 1`` (exact there), accurate
        near 1; ``x > 2``: ``ln x + ln(1 + sqrt(1 - 1/x²))``. The derivative at 1 is +inf, as
        ``1 / sqrt(x² - 1)``. Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([2.5], element=f64).acosh().scalar(), 12)
            1.566799236972
        """
        t = self._minimum_tied_to_self(2.0) - 1.0
        # sqrt(t) sqrt(t + 2), not sqrt(t (t + 2)): at t = 0 the product rule would meet inf * 0.
        near = (t + t.sqrt() * (t + 2.0).sqrt()).log1p()
        large = self.maximum(self._constant(self.shape, 2.0))
        reciprocal = large.one_like() / large
        far = large.ln() + ((-(reciprocal * reciprocal) + 1.0).sqrt() + 1.0).ln()
        return self._pick(self._constant(self.shape, 2.0).step(self), near, far)

    def atanh(self) -> Self:
        """``(log1p(x) - log1p(-x)) / 2``: odd, accurate near 0 and near ±1, ±inf at ±1.

        Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([0.5], element=f64).atanh().scalar(), 12)
            0.549306144334
        """
        return (self.log1p() - (-self).log1p()) * 0.5

    def _log_base(self, base: float) -> Self:
        return self.ln() / self._constant(self.shape, base).ln()

    def log2(self) -> Self:
        """``ln(x) / ln(2)``, the same two roundings as jax.numpy.log2."""
        return self._log_base(2.0)

    def log10(self) -> Self:
        """``ln(x) / ln(10)``, the same two roundings as jax.numpy.log10."""
        return self._log_base(10.0)

    def exp2(self) -> Self:
        """``2 ** x`` (one Powf): exact at integers, gradient ``ln 2 * 2 ** x``."""
        return self._binary(ops.Powf(), 2.0, reverse=True)

    def rsqrt(self) -> Self:
        """``1 / sqrt(x)``."""
        return self.one_like() / self.sqrt()

    def logaddexp(self, other: Self | Other | float) -> Self:
        """``max(a, b) + log1p(exp(-|a - b|))``: finite for finite inputs, gradients split 1/2 at a tie.

        The maximum gives the tie to ``a`` and ``|a - b|`` is spelled ``maximum(a - b, b - a)``
        with its tie on the left, so at ``a == b`` each side gets 1/2 as in jax. Equal
        infinities give NaN (``inf - inf``), where jax special-cases them. Example:
            >>> from topos import Tensor, f64
            >>> round(Tensor([0.0], element=f64).logaddexp(0.0).scalar(), 12)
            0.69314718056
        """
        if isinstance(other, Vocabulary) and other.shape != self.shape:
            raise ShapeMismatchError(
                f"{user_site()}: logaddexp of {self._name()} and {other._name()}: shapes differ "
                "(nothing broadcasts implicitly; use broadcast_to)"
            )
        difference = self - other
        larger = self.maximum(other)
        return larger + (-(difference.maximum(-difference))).exp().log1p()

    def logsigmoid(self) -> Self:
        """``-softplus(-x)``: finite for every finite x (no ``log(0)`` for large ``-x``)."""
        return -((-self).softplus())

    def softsign(self) -> Self:
        """``x / (1 + |x|)``."""
        return self / (self.abs() + 1.0)

    def _negative_part(self) -> Self:
        """``min(x, 0)`` with the tie's gradient on ``x`` (jax's ``where(x > 0, .., x)`` side)."""
        return self._minimum_tied_to_self(self.zero_like())

    def elu(self, alpha: float = 1.0) -> Self:
        """``x`` for ``x > 0``, ``alpha (exp(x) - 1)`` otherwise; the gradient at 0 is ``alpha``.

        Spelled ``relu(x) + alpha * expm1(min(x, 0))``: the exponential never sees a
        positive argument, so nothing overflows. Example:
            >>> from topos import Tensor, f64
            >>> Tensor([-1000.0, 2.0], element=f64).elu().tolist()
            [-1.0, 2.0]
        """
        return self.relu() + self._negative_part().expm1() * alpha

    def selu(self) -> Self:
        """``scale * elu(x, alpha)`` with the self-normalising constants (as jax.nn.selu)."""
        alpha = 1.6732632423543772848170429916717
        scale = 1.0507009873554804934193349852946
        return self.elu(alpha) * scale

    def celu(self, alpha: float = 1.0) -> Self:
        """``relu(x) + alpha * expm1(min(x, 0) / alpha)``; the gradient at 0 is 1."""
        return self.relu() + (self._negative_part() / alpha).expm1() * alpha

    def leaky_relu(self, negative_slope: float = 0.01) -> Self:
        """``x`` for ``x >= 0``, ``negative_slope * x`` below; the gradient at 0 is 1.

        For slopes in ``[0, 1]`` this is ``maximum(x, slope * x)`` (one rounding, as jax),
        above 1 the matching minimum; negative slopes are refused. Example:
            >>> from topos import Tensor, f64
            >>> Tensor([-2.0, 3.0], element=f64).leaky_relu(0.5).tolist()
            [-1.0, 3.0]
        """
        if isinstance(negative_slope, bool) or not isinstance(negative_slope, (int, float)) or not (
            math.isfinite(negative_slope) and negative_slope >= 0.0
        ):
            raise InvalidArgumentError(
                f"{user_site()}: leaky_relu of {self._name()}: negative_slope must be a finite number >= 0, "
                f"got {negative_slope!r}"
            )
        if negative_slope == 0.0:
            return self.maximum(self.zero_like())
        if negative_slope <= 1.0:
            return self.maximum(self * float(negative_slope))
        return self._minimum_tied_to_self(self * float(negative_slope))

    def _relu6(self) -> Self:
        """``min(max(x, 0), 6)`` with both ties on the constants (gradient 0 at 0 and 6, as jax)."""
        six = self._constant(self.shape, -6.0)
        return -(six.maximum(-self.relu()))

    def hardsigmoid(self) -> Self:
        """``relu6(x + 3) / 6``; gradient 1/6 strictly inside (-3, 3), 0 elsewhere (as jax)."""
        return (self + 3.0)._relu6() / 6.0

    def hardswish(self) -> Self:
        """``x * hardsigmoid(x)``."""
        return self * self.hardsigmoid()

    def mish(self) -> Self:
        """``x * tanh(softplus(x))``."""
        return self * self.softplus().tanh()
