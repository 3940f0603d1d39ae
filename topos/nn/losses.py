"""Losses: free functions over recorded values.

Contract: :func:`cross_entropy` records the stable form
``((sum_rows(targets) * logsumexp(logits)).sum() - (targets * logits).sum()) / B``
for ``logits [B, C]`` and ``targets [B, C]`` (one-hot selections or soft targets). It never
forms ``0 * log(0)``: targets multiply the logits themselves, not a log-probability that can
underflow to ``-inf``, so a class far below the others leaves the loss finite. Logits must be
finite (mask with a large negative number, not ``-inf``: ``0 * -inf`` is NaN in any form that
multiplies targets by logits). It is the mean over the batch of ``-sum_c t_c log softmax(x)_c``,
as in PyTorch and optax: soft targets whose rows do not sum to 1 are not renormalized.
:func:`mse` is the mean of squared differences.
"""

from __future__ import annotations

from topos import InvalidArgumentError, ShapeMismatchError, Value
from topos.errors import user_site
from topos.nn.module import facade

__all__ = ["cross_entropy", "mse"]


@facade
def cross_entropy(logits: Value, targets: Value) -> Value:
    """Mean cross-entropy of ``logits [B, C]`` against ``targets [B, C]`` (rank 0).

    Example:
        >>> from topos import Tape, Tensor, f64
        >>> def build(t: Tape):
        ...     return cross_entropy(t.input([[0.0, 0.0]]), t.input(Tensor.selection([1], 2, f64)))
        >>> network, loss = Tape.record(build, element=f64)
        >>> round(network.forward(network.parameters()).of(loss).scalar(), 6)
        0.693147
    """
    site = user_site()
    if not isinstance(logits, Value) or not isinstance(targets, Value):
        raise InvalidArgumentError(f"{site}: cross_entropy takes recorded Values (logits, targets)")
    if logits.rank != 2 or targets.shape != logits.shape:
        raise ShapeMismatchError(
            f"{site}: cross_entropy: logits must be [B, C] and targets the same shape; "
            f"got %{logits.index}{logits.shape} and %{targets.index}{targets.shape}"
        )
    mass = targets.sum_along(1)
    normalizer = logits.logsumexp(1)
    total = (mass * normalizer).sum() - (targets * logits).sum()
    return total / logits.tape.constant((), float(logits.shape[0]))


@facade
def mse(prediction: Value, target: Value) -> Value:
    """Mean squared error ``mean((prediction - target)²)`` (rank 0).

    Example:
        >>> from topos import Tape, f64
        >>> network, loss = Tape.record(lambda t: mse(t.input([1.0, 3.0]), t.input([0.0, 0.0])), element=f64)
        >>> network.forward(network.parameters()).of(loss).scalar()
        5.0
    """
    for name, value in (("prediction", prediction), ("target", target)):
        if not isinstance(value, Value):
            raise InvalidArgumentError(
                f"{user_site()}: mse: {name} must be a recorded Value, got {type(value).__name__}; "
                "record data first with tape.input(...) or tape.leaf(...)"
            )
    if prediction.shape != target.shape:
        raise ShapeMismatchError(
            f"{user_site()}: mse: shapes differ: %{prediction.index}{prediction.shape} "
            f"and %{target.index}{target.shape}"
        )
    difference = prediction - target
    return (difference * difference).mean()
