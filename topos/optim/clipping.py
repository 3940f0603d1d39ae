"""Gradient clipping by global norm, and weight-decay masks: pure helpers beside the optimizers.

Contract. Each helper reads a gradient table (and, for decay, the parameters), returns a new
table of the same symbols and shapes, and changes nothing it was given. They compose with
any optimizer by running before its ``update``::

    gradients = clip_by_global_norm(run.recorded_gradients(adjoints), 1.0)
    gradients = add_weight_decay(gradients, parameters, 1e-4, where=decay_mask(parameters))
    parameters, state = optimizer.update(gradients, state, parameters)

Numerics. The global norm is ``sqrt(sum over slots, in table order, of sum(g * g))`` with
every square and sum taken in f64 (``numpy.sum`` over each slot's elements, then the slot
totals added one by one), whatever the element of the gradients: a bf16 or f32 sum of
squares would overflow or lose the small slots. The clipping factor
``max_norm / max(norm, max_norm)`` is formed in f64 and multiplies each payload in its own
element, so a table whose norm is within the bound comes back bit for bit unchanged.

A weight-decay mask is a :data:`~topos.optim.DecayPolicy` (``(symbol, payload) -> bool``),
the same predicate :class:`~topos.optim.AdamW` takes as ``decay_where``: :func:`decay_mask`
builds one from a rule and a set of symbols to leave out (biases, norm scales, embeddings),
and :func:`masked` says which slots it selects, for printing or a test.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from topos.errors import user_site
from topos.ir.node import Symbol
from topos.optim.base import OptimizerError
from topos.optim.transforms import DecayPolicy, rank_at_least_two
from topos.state import Parameters
from topos.tensor import Tensor

__all__ = ["add_weight_decay", "clip_by_global_norm", "decay_mask", "global_norm", "masked"]


def _table(what: str, table: object) -> Parameters:
    if not isinstance(table, Parameters):
        raise OptimizerError(f"{user_site()}: {what} takes a Parameters table; got {type(table).__name__}")
    return table


def global_norm(gradients: Parameters) -> float:
    """The Euclidean norm of every gradient element together, accumulated in f64.

    Example:
        >>> from topos import Tape, f32
        >>> network, _ = Tape.record(lambda t: (t.parameter([3.0]), t.parameter([[4.0]])), element=f32)
        >>> global_norm(network.parameters())
        5.0
    """
    total = 0.0
    for payload in _table("global_norm", gradients).payloads():
        wide = payload.numpy().astype(np.float64)
        total += float(np.sum(wide * wide))
    return math.sqrt(total)


def clip_by_global_norm(gradients: Parameters, max_norm: float) -> Parameters:
    """Scale every gradient by ``max_norm / norm`` when the global norm exceeds ``max_norm``.

    The direction is kept; only the length is capped. Within the bound the same table is
    returned, so clipping never perturbs a small gradient.

    Example:
        >>> from topos import Tape, f64
        >>> network, _ = Tape.record(lambda t: (t.parameter([3.0]), t.parameter([4.0])), element=f64)
        >>> [p.tolist() for p in clip_by_global_norm(network.parameters(), 1.0).payloads()]
        [[0.6000000000000001], [0.8]]
    """
    table = _table("clip_by_global_norm", gradients)
    bound = float(max_norm)
    if not math.isfinite(bound) or bound <= 0.0:
        raise OptimizerError(f"{user_site()}: clip_by_global_norm: max_norm must be finite and > 0; got {max_norm!r}")
    norm = global_norm(table)
    if not math.isfinite(norm):
        raise OptimizerError(
            f"{user_site()}: clip_by_global_norm: the gradients' norm is {norm} (a NaN or infinite element); "
            "clipping would hide it"
        )
    if norm <= bound:
        return table
    factor = bound / norm
    return table.map(lambda g: g * factor)


def decay_mask(
    parameters: Parameters, where: DecayPolicy = rank_at_least_two, exclude: Iterable[Symbol] = ()
) -> DecayPolicy:
    """A decay policy: ``where`` says yes and the symbol is not in ``exclude``.

    The default rule decays matrices and kernels (rank >= 2) and leaves biases and norm
    scales alone; ``exclude`` removes more (an embedding table, say). Every excluded symbol
    must belong to ``parameters``, so a typo cannot silently decay everything.

    Example:
        >>> from topos import Tape, f64
        >>> network, (w, e) = Tape.record(lambda t: (t.parameter([[1.0]]), t.parameter([[2.0]])), element=f64)
        >>> masked(network.parameters(), decay_mask(network.parameters(), exclude=[e])) == (w,)
        True
    """
    table = _table("decay_mask", parameters)
    left_out = frozenset(exclude)
    known = {symbol for symbol, _ in table}
    unknown = sorted(s.index for s in left_out if s not in known)
    if unknown:
        raise OptimizerError(f"{user_site()}: decay_mask: exclude names symbols not in the table: {unknown}")

    def policy(symbol: Symbol, payload: Tensor) -> bool:
        return symbol not in left_out and where(symbol, payload)

    return policy


def masked(parameters: Parameters, where: DecayPolicy) -> tuple[Symbol, ...]:
    """The symbols ``where`` selects, in table order."""
    return tuple(symbol for symbol, payload in _table("masked", parameters) if where(symbol, payload))


def add_weight_decay(
    gradients: Parameters, parameters: Parameters, rate: float, where: DecayPolicy = rank_at_least_two
) -> Parameters:
    """``g + rate * p`` on the slots ``where`` selects (coupled L2 decay, for any optimizer).

    For decoupled decay use :class:`~topos.optim.AdamW` with the same mask as ``decay_where``.

    Example:
        >>> from topos import Tape, f64
        >>> network, _ = Tape.record(lambda t: (t.parameter([[2.0]]), t.parameter([2.0])), element=f64)
        >>> p = network.parameters()
        >>> [g.tolist() for g in add_weight_decay(p.map(lambda x: x * 0.0), p, 0.5).payloads()]
        [[[1.0]], [0.0]]
    """
    grads = _table("add_weight_decay", gradients)
    params = _table("add_weight_decay", parameters)
    step = float(rate)
    if not math.isfinite(step) or step < 0.0:
        raise OptimizerError(f"{user_site()}: add_weight_decay: rate must be finite and >= 0; got {rate!r}")
    if [s for s, _ in grads] != [s for s, _ in params]:
        raise OptimizerError(f"{user_site()}: add_weight_decay: gradients and parameters hold different symbols")
    chosen = set(masked(params, where))
    return grads.with_payloads(
        (symbol, g + p * step) for (symbol, g), p in zip(grads, params.payloads(), strict=True) if symbol in chosen
    )
