"""Losses: free functions over recorded values.

Contract: :func:`cross_entropy` records the stable form
``((sum_rows(targets) * logsumexp(logits)).sum() - (targets * logits).sum()) / B``
for ``logits [B, C]`` and ``targets [B, C]`` (one-hot selections or soft targets). It never
forms ``0 * log(0)``: targets multiply the logits themselves, not a log-probability that can
underflow to ``-inf``, so a class far below the others leaves the loss finite. Logits must be
finite (mask with a large negative number, not ``-inf``: ``0 * -inf`` is NaN in any form that
multiplies targets by logits). It is the mean over the batch of ``-sum_c t_c log softmax(x)_c``,
as in PyTorch and optax: soft targets whose rows do not sum to 1 are not renormalized. An
all-zero target row is an ignored target (:func:`class_targets`' ``ignore_index``): the mean
divides by the rows kept, as PyTorch's does, and is NaN when every row is ignored (so is
PyTorch's).
:func:`mse` is the mean of squared differences.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from topos import ElementType, InvalidArgumentError, ShapeMismatchError, Tensor, Value, f32
from topos.errors import user_site
from topos.nn.module import facade

__all__ = [
    "binary_cross_entropy_with_logits",
    "class_targets",
    "cross_entropy",
    "huber",
    "mse",
    "nll",
    "smooth_l1",
]


@facade
def cross_entropy(
    logits: Value, targets: Value, weights: Value | None = None, label_smoothing: float = 0.0
) -> Value:
    """Mean cross-entropy of ``logits [B, C]`` against ``targets [B, C]`` (rank 0).

    With ``weights [C]`` or a ``label_smoothing`` in ``(0, 1]``, PyTorch's class-index form:
    ``targets`` are one-hot rows (an all-zero row is an ignored target; build them with
    :func:`class_targets`), each row weighs ``w[y]``, and the mean divides by the summed
    weights of the kept rows. Smoothing mixes ``(1 - eps)`` of that with ``eps / C`` of the
    uniform target, weighted per class and normalized the same way.

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
    if weights is not None or label_smoothing != 0.0:
        return _weighted_cross_entropy(logits.log_softmax(1), targets, weights, label_smoothing, site)
    mass = targets.sum_along(1)
    normalizer = logits.logsumexp(1)
    total = (mass * normalizer).sum() - (targets * logits).sum()
    # An all-zero target row is an ignored target (class_targets' ignore_index): like
    # PyTorch's mean it counts neither in the sum nor in the number of rows averaged over.
    # Where no row is ignored the count is B exactly, so the bits are those of total / B.
    ignored = (-mass.abs()).step(0.0).sum()
    return total / (logits.tape.constant((), float(logits.shape[0])) - ignored)


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


def _weighted_cross_entropy(
    log_probabilities: Value, targets: Value, weights: Value | None, smoothing: float, site: str
) -> Value:
    """``sum_i [(1 - eps) w[y_i] (-lp[i, y_i]) + (eps / C) m_i sum_c w_c (-lp[i, c])] / sum_i w[y_i]``.

    ``m_i`` (1 for a kept row, 0 for an ignored one) is the row's sum of the one-hot target.
    """
    if isinstance(smoothing, bool) or not isinstance(smoothing, (int, float)) or not 0.0 <= smoothing <= 1.0:
        raise InvalidArgumentError(f"{site}: label_smoothing must be a number in [0, 1], got {smoothing!r}")
    batch, classes = log_probabilities.shape.axes
    if weights is not None and (not isinstance(weights, Value) or weights.shape.axes != (classes,)):
        shape = weights.shape if isinstance(weights, Value) else type(weights).__name__
        raise ShapeMismatchError(f"{site}: class weights must be a recorded Value [{classes}], got {shape}")
    per_class = weights.broadcast_along(0, batch) if weights is not None else None
    chosen = targets if per_class is None else targets * per_class
    selected = -(chosen * log_probabilities).sum()
    denominator = chosen.sum()
    total = selected if smoothing == 0.0 else selected * (1.0 - float(smoothing))
    if smoothing != 0.0:
        kept = targets.sum_along(1).broadcast_along(1, classes)
        spread = kept if per_class is None else kept * per_class
        total = total + (-(spread * log_probabilities).sum()) * (float(smoothing) / classes)
    return total / denominator


def _recorded(what: str, **named: object) -> None:
    for name, value in named.items():
        if not isinstance(value, Value):
            raise InvalidArgumentError(
                f"{user_site()}: {what}: {name} must be a recorded Value, got {type(value).__name__}; "
                "record data first with tape.input(...) or tape.leaf(...)"
            )


def _same_shape(what: str, first: Value, second: Value) -> None:
    if first.shape != second.shape:
        raise ShapeMismatchError(
            f"{user_site()}: {what}: shapes differ: %{first.index}{first.shape} and %{second.index}{second.shape}"
        )


def class_targets(
    indices: Sequence[int] | np.ndarray, classes: int, ignore_index: int | None = -100, element: ElementType = f32
) -> Tensor:
    """One-hot rows ``[len(indices), classes]``; an index equal to ``ignore_index`` gives a zero row.

    A zero row is how the class losses ignore a target: it selects nothing and weighs 0.

    Example:
        >>> class_targets([1, -100, 0], 2).tolist()
        [[0.0, 1.0], [0.0, 0.0], [1.0, 0.0]]
    """
    given = np.asarray(indices)
    if given.ndim != 1 or given.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{user_site()}: class_targets takes a 1-D list of integer indices, got {indices!r}")
    if isinstance(classes, bool) or not isinstance(classes, int) or classes < 1:
        raise InvalidArgumentError(f"{user_site()}: class_targets: classes must be an integer >= 1, got {classes!r}")
    kept = given != ignore_index if ignore_index is not None else np.ones(given.shape, dtype=bool)
    bad = kept & ((given < 0) | (given >= classes))
    if bad.any():
        raise InvalidArgumentError(
            f"{user_site()}: class_targets: index {int(given[bad][0])} is outside 0..{classes - 1} "
            f"(and is not the ignore_index {ignore_index!r})"
        )
    rows = np.zeros((given.shape[0], classes))
    rows[np.arange(given.shape[0])[kept], given[kept]] = 1.0
    return Tensor(rows, element=element)


@facade
def nll(log_probabilities: Value, targets: Value, weights: Value | None = None) -> Value:
    """Negative log-likelihood of one-hot ``targets [B, C]`` under ``log_probabilities [B, C]``.

    PyTorch's ``nll_loss``: ``sum_i w[y_i] (-lp[i, y_i]) / sum_i w[y_i]``; all-zero target
    rows are ignored (see :func:`class_targets`). Without ``weights`` every class weighs 1.

    Example:
        >>> import numpy as np
        >>> from topos import Tape, f64
        >>> def build(t):
        ...     return nll(t.input(np.log([[0.5, 0.5], [0.25, 0.75]])), t.input(class_targets([0, 1], 2, element=f64)))
        >>> network, loss = Tape.record(build, element=f64)
        >>> round(network.forward(network.parameters()).of(loss).scalar(), 6)
        0.490415
    """
    site = user_site()
    _recorded("nll", log_probabilities=log_probabilities, targets=targets)
    if log_probabilities.rank != 2 or targets.shape != log_probabilities.shape:
        raise ShapeMismatchError(
            f"{site}: nll: log_probabilities must be [B, C] and targets the same shape; got "
            f"%{log_probabilities.index}{log_probabilities.shape} and %{targets.index}{targets.shape}"
        )
    return _weighted_cross_entropy(log_probabilities, targets, weights, 0.0, site)


@facade
def binary_cross_entropy_with_logits(logits: Value, targets: Value) -> Value:
    """Mean of ``softplus(x) - t x`` (= ``-t log sigmoid(x) - (1 - t) log sigmoid(-x)``), rank 0.

    Finite for every finite logit: softplus is ``relu(x) + log1p(exp(-|x|))``, never a log of
    an underflowed probability. Targets may be soft (any value in [0, 1]).

    Example:
        >>> from topos import Tape, f64
        >>> network, loss = Tape.record(lambda t: binary_cross_entropy_with_logits(t.input([0.0, 800.0]), t.input([1.0, 1.0])), element=f64)
        >>> round(network.forward(network.parameters()).of(loss).scalar(), 6)
        0.346574
    """
    _recorded("binary_cross_entropy_with_logits", logits=logits, targets=targets)
    _same_shape("binary_cross_entropy_with_logits", logits, targets)
    return (logits.softplus() - targets * logits).mean()


def _threshold(what: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise InvalidArgumentError(f"{user_site()}: {what} must be a finite number > 0, got {value!r}")
    return float(value)


def _huber_terms(prediction: Value, target: Value, delta: float) -> Value:
    """``q²/2 + delta (|d| - q)`` with ``q = min(|d|, delta)``: both pieces in one expression.

    Inside ``|d| <= delta`` it is ``d²/2``, outside ``delta (|d| - delta/2)``; no select is needed.
    """
    magnitude = (prediction - target).abs()
    inner = -((-magnitude).maximum(magnitude.tape.constant(magnitude.shape, -delta)))
    return inner * inner * 0.5 + (magnitude - inner) * delta


@facade
def huber(prediction: Value, target: Value, delta: float = 1.0) -> Value:
    """Mean Huber loss: ``d²/2`` for ``|d| <= delta``, ``delta (|d| - delta/2)`` beyond (rank 0).

    Example:
        >>> from topos import Tape, f64
        >>> network, loss = Tape.record(lambda t: huber(t.input([0.5, 3.0]), t.input([0.0, 0.0])), element=f64)
        >>> network.forward(network.parameters()).of(loss).scalar()
        1.3125
    """
    _recorded("huber", prediction=prediction, target=target)
    _same_shape("huber", prediction, target)
    return _huber_terms(prediction, target, _threshold("huber: delta", delta)).mean()


@facade
def smooth_l1(prediction: Value, target: Value, beta: float = 1.0) -> Value:
    """Mean smooth L1 (PyTorch): ``d²/(2 beta)`` for ``|d| < beta``, ``|d| - beta/2`` beyond; ``huber / beta``."""
    _recorded("smooth_l1", prediction=prediction, target=target)
    _same_shape("smooth_l1", prediction, target)
    beta = _threshold("smooth_l1: beta", beta)
    return _huber_terms(prediction, target, beta).mean() / prediction.tape.constant((), beta)
