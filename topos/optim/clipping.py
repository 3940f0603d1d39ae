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
from typing import cast

import numpy as np

from topos.errors import user_site
from topos.ir.node import Symbol
from topos.optim.base import OptimizerError, check_table, real
from topos.optim.transforms import DecayPolicy, rank_at_least_two
from topos.state import Parameters
from topos.tensor import Tensor

__all__ = ["add_weight_decay", "clip_by_global_norm", "decay_mask", "global_norm", "masked"]


def _policy(what: str, where: object) -> DecayPolicy:
    if not callable(where):
        raise OptimizerError(f"{what}: where must be a predicate (symbol, payload) -> bool, got {where!r:.60}")
    return cast(DecayPolicy, where)


def global_norm(gradients: Parameters) -> float:
    """The Euclidean norm of every gradient element together, accumulated in f64.

    Example:
        >>> from topos import Tape, f32
        >>> network, _ = Tape.record(lambda t: (t.parameter([3.0]), t.parameter([[4.0]])), element=f32)
        >>> global_norm(network.parameters())
        5.0
    """
    total = 0.0
    for payload in check_table("global_norm", "gradients", gradients).payloads():
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
    table = check_table("clip_by_global_norm", "gradients", gradients)
    if not real(max_norm) or max_norm <= 0:
        raise OptimizerError(f"{user_site()}: clip_by_global_norm: max_norm must be finite and > 0; got {max_norm!r}")
    bound = float(max_norm)
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
    table = check_table("decay_mask", "parameters", parameters)
    _policy("decay_mask", where)
    try:
        given: frozenset[object] = frozenset(exclude)
    except TypeError:
        given = frozenset({None})  # not iterable, or holding something unhashable: refused below
    left_out = frozenset(s for s in given if isinstance(s, Symbol))
    if len(left_out) != len(given):
        raise OptimizerError(f"decay_mask: exclude must hold the table's Symbols, got {exclude!r:.80}")
    known = {symbol for symbol, _ in table}
    unknown = sorted(s.index for s in left_out if s not in known)
    if unknown:
        raise OptimizerError(f"{user_site()}: decay_mask: exclude names symbols not in the table: {unknown}")

    def policy(symbol: Symbol, payload: Tensor) -> bool:
        return symbol not in left_out and where(symbol, payload)

    return policy


def masked(parameters: Parameters, where: DecayPolicy) -> tuple[Symbol, ...]:
    """The symbols ``where`` selects, in table order."""
    table, policy = check_table("masked", "parameters", parameters), _policy("masked", where)
    return tuple(symbol for symbol, payload in table if policy(symbol, payload))


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
    grads = check_table("add_weight_decay", "gradients", gradients)
    params = check_table("add_weight_decay", "parameters", parameters)
    if not real(rate) or rate < 0:
        raise OptimizerError(f"{user_site()}: add_weight_decay: rate must be finite and >= 0; got {rate!r}")
    step = float(rate)
    _policy("add_weight_decay", where)
    if [s for s, _ in grads] != [s for s, _ in params]:
        raise OptimizerError(f"{user_site()}: add_weight_decay: gradients and parameters hold different symbols")
    chosen = set(masked(params, where))
    return grads.with_payloads(
        (symbol, g + p * step) for (symbol, g), p in zip(grads, params.payloads(), strict=True) if symbol in chosen
    )
