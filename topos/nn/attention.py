"""Attention: one head of scaled dot-product attention, and a causal mask.

Contract: :func:`scaled_dot_product` records
``softmax((q · kᵀ) * scale + mask, axis=1) · v`` for ``q [T, d]``, ``k [S, d]``,
``v [S, e]``, ``mask [T, S]`` and a rank-0 ``scale`` the caller supplies; nothing else.
Head loops, projections, rotary embeddings, grouped queries and caches are the caller's
(a KV cache is just more inputs). :func:`causal_mask` builds the ``[extent, extent]`` payload
with 0 on and below the diagonal and the caller's ``fill`` above it, because an element type
need not have an infinity. Mismatched extents raise before anything is recorded.
"""

from __future__ import annotations

import numpy as np

from topos import ElementType, InvalidArgumentError, ShapeMismatchError, Tensor, Value, f32
from topos.errors import user_site
from topos.nn.module import facade

__all__ = ["causal_mask", "scaled_dot_product"]


@facade
def scaled_dot_product(
    q: Value, k: Value, v: Value, mask: Value | None, scale: Value | float
) -> Value:
    """One attention head: ``softmax(q kᵀ * scale + mask) v``.

    ``scale`` is a rank-0 value (or a number, recorded as a rank-0 leaf), broadcast once to
    ``[T, S]``; ``mask`` is added to the scores (pass ``None`` for no mask).

    Example:
        >>> from topos import Tape, Tensor, f64
        >>> def build(t: Tape):
        ...     q = t.input([[1.0, 0.0]])
        ...     kv = t.input([[1.0, 0.0], [0.0, 1.0]])
        ...     return scaled_dot_product(q, kv, kv, None, t.leaf(0.0))
        >>> network, y = Tape.record(build, element=f64)
        >>> network.forward(network.parameters()).of(y).tolist()
        [[0.5, 0.5]]
    """
    site = user_site()
    for name, value in (("q", q), ("k", k), ("v", v)):
        if not isinstance(value, Value):
            raise InvalidArgumentError(f"{site}: scaled_dot_product: {name} must be a recorded Value")
        if value.rank != 2:
            raise ShapeMismatchError(
                f"{site}: scaled_dot_product: {name} must be rank 2 (one head); got {value.shape}"
            )
    t, d = q.shape[0], q.shape[1]
    s = k.shape[0]
    if k.shape[1] != d:
        raise ShapeMismatchError(
            f"{site}: scaled_dot_product: head dimensions differ: q {q.shape} and k {k.shape}"
        )
    if v.shape[0] != s:
        raise ShapeMismatchError(
            f"{site}: scaled_dot_product: k {k.shape} and v {v.shape} have different lengths"
        )
    if mask is not None and not isinstance(mask, Value):
        raise InvalidArgumentError(f"{site}: scaled_dot_product: mask must be a recorded Value or None, got {type(mask).__name__}")
    if mask is not None and mask.shape.axes != (t, s):
        raise ShapeMismatchError(
            f"{site}: scaled_dot_product: mask must be [{t}, {s}] for q {q.shape} and k {k.shape}; got {mask.shape}"
        )
    if isinstance(scale, Value):
        if scale.rank != 0:
            raise ShapeMismatchError(f"{site}: scaled_dot_product: scale must be rank 0; got {scale.shape}")
        factor = scale
    elif isinstance(scale, (int, float, np.integer, np.floating)) and not isinstance(scale, (bool, np.bool_)):
        factor = q.tape.leaf(float(scale))
    else:
        raise InvalidArgumentError(
            f"{site}: scaled_dot_product: scale must be a rank-0 Value or a number, got {scale!r}"
        )
    scores = q.matmul(k.transpose()) * factor.broadcast((t, s))
    if mask is not None:
        scores = scores + mask
    return scores.softmax(1).matmul(v)


def causal_mask(extent: int, fill: float, element: ElementType = f32) -> Tensor:
    """``[extent, extent]``: 0 on and below the diagonal, ``fill`` above (e.g. ``-inf``).

    Example:
        >>> causal_mask(3, -1.0).tolist()
        [[0.0, -1.0, -1.0], [0.0, 0.0, -1.0], [0.0, 0.0, 0.0]]
    """
    if not isinstance(extent, (int, np.integer)) or isinstance(extent, bool) or extent < 1:
        raise InvalidArgumentError(f"{user_site()}: causal_mask: extent must be a positive integer; got {extent!r}")
    above = np.triu(np.ones((extent, extent), dtype=bool), k=1)
    return Tensor(np.where(above, float(fill), 0.0), element=element)
