"""Generation: choosing the next token from logits, and a KV-cache decoding loop.

Contract: :func:`choose` is greedy at ``temperature == 0`` (the first largest logit), else
draws from ``softmax(logits / temperature)`` restricted to the ``top_k`` largest logits
(ties at the cut keep the earliest ids), with the caller's seeded ``numpy`` Generator: the
same seed gives the same tokens. :class:`Decoder` records one decode step of a
:class:`~topos.nn.transformer.TransformerLm` on the model's tape (before it is sealed),
lowers it once, and :meth:`Decoder.generate` feeds it token by token, carrying the caches
from one step's outputs to the next step's inputs. On the XLA road (``lower(network,
road="xla")``) the step is compiled once and the parameters and caches stay on the XLA
device for a whole :meth:`~Decoder.generate`; only the token, the position's feeds and the
logits cross between host and device each step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from topos import (
    InvalidArgumentError,
    Network,
    Numerics,
    Parameters,
    ParametersError,
    Plan,
    Symbol,
    Tape,
    Tensor,
    XlaExecutable,
    f64,
)
from topos.errors import user_site
from topos.nn.transformer import Position, TransformerLm

__all__ = ["Decoder", "choose"]


def choose(logits: Any, rng: np.random.Generator, temperature: float = 1.0, top_k: int | None = None) -> int:
    """The next token id from one row of logits.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> choose([0.0, 3.0, 1.0], rng, temperature=0.0)
        1
        >>> choose([0.0, 3.0, 1.0], rng, top_k=1)
        1
    """
    row = _logits_row(logits)
    _check_sampling("choose", rng, temperature, top_k)
    if temperature == 0:
        return int(np.argmax(row))
    kept = np.arange(row.size)
    if top_k is not None and top_k < row.size:
        kept = np.sort(np.argsort(-row, kind="stable")[:top_k])
    with np.errstate(over="ignore"):  # an overflow is refused by name just below
        scaled = row[kept] / temperature
    if not np.all(np.isfinite(scaled)):
        # A temperature this close to zero overflows the division; the draw would be NaN.
        raise InvalidArgumentError(
            f"{user_site()}: choose: temperature={temperature!r} is so small that logits / temperature "
            "overflows; use temperature=0.0 for greedy choice"
        )
    # Portable exponentials and an ordered total: the same draw on every machine for the
    # same generator state (numpy's exp and pairwise sum are the CPU's and the build's).
    with Numerics.exactly():
        weights = Tensor(scaled - scaled.max(), f64).exp().numpy()
    total = np.add.accumulate(weights)[-1]
    return int(kept[rng.choice(kept.size, p=weights / total)])


def _logits_row(logits: object) -> np.ndarray[Any, np.dtype[np.float64]]:
    """``logits`` as one finite float64 row (shape ``[n]`` or ``[1, n]``), refused by name otherwise."""
    if isinstance(logits, (str, bytes)):
        raise InvalidArgumentError(f"{user_site()}: choose: logits must be a row of numbers, got the string {logits!r:.40}")
    try:
        array = np.asarray(logits, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentError(
            f"{user_site()}: choose: logits must be a row of real numbers, got {type(logits).__name__} ({error})"
        ) from None
    # One row only: a [batch, vocab] block, flattened, would yield ids past the vocabulary.
    if array.ndim > 2 or (array.ndim == 2 and array.shape[0] != 1):
        raise InvalidArgumentError(
            f"{user_site()}: choose: logits must be one row ([n] or [1, n]), got shape {list(array.shape)}"
        )
    row = array.reshape(-1)
    if row.size == 0 or not np.all(np.isfinite(row)):
        raise InvalidArgumentError(f"{user_site()}: choose: logits must be a non-empty row of finite numbers")
    return row


def _check_sampling(where: str, rng: object, temperature: object, top_k: object) -> None:
    """Refuse, by name, a sampling parameter :func:`choose` cannot use (before any step runs)."""
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float, np.integer, np.floating))
        or not math.isfinite(float(temperature))
        or temperature < 0
    ):
        raise InvalidArgumentError(
            f"{user_site()}: {where}: temperature must be a finite number >= 0 (0 is greedy); got {temperature!r}"
        )
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1):
        raise InvalidArgumentError(f"{user_site()}: {where}: top_k must be a positive integer or None; got {top_k!r}")
    if not isinstance(rng, np.random.Generator):
        raise InvalidArgumentError(
            f"{user_site()}: {where}: rng must be a numpy Generator (np.random.default_rng(seed)); "
            f"got {type(rng).__name__}"
        )


def _prompt_ids(prompt: object, vocab: int, what: str = "Decoder.generate: prompt") -> list[int]:
    """``prompt`` (a sequence or a 1-D integer array of ids) as ints in ``[0, vocab)``, refused by name otherwise."""
    items: Sequence[object]
    if isinstance(prompt, np.ndarray):
        if prompt.ndim != 1 or not np.issubdtype(prompt.dtype, np.integer):
            raise InvalidArgumentError(
                f"{user_site()}: {what} must be a 1-D integer array of token ids; "
                f"got {prompt.dtype} of shape {list(prompt.shape)}"
            )
        items = prompt.tolist()
    elif isinstance(prompt, Sequence) and not isinstance(prompt, (str, bytes)):
        items = prompt
    else:
        raise InvalidArgumentError(
            f"{user_site()}: {what} must be a sequence of token ids, got {type(prompt).__name__}"
        )
    if not items:
        raise InvalidArgumentError(f"{user_site()}: {what} must hold at least one token")
    ids: list[int] = []
    for at, item in enumerate(items):
        # int() would truncate a float id silently: only whole integers in range are ids.
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)) or not 0 <= item < vocab:
            raise InvalidArgumentError(
                f"{user_site()}: {what}[{at}] = {item!r} is not a token id in [0, {vocab})"
            )
        ids.append(int(item))
    return ids


class Decoder:
    """One recorded decode step of ``model`` (batch 1) over caches of ``length`` positions.

    Record it on the model's tape before sealing; then :meth:`lower` it from the sealed
    network and :meth:`generate`.

    Example:
        >>> from topos import Tape, Tensor
        >>> from topos.init import normal
        >>> from topos.nn import Block, Embedding, LayerNorm, MultiHeadAttention, PositionTable, SwiGlu
        >>> tape = Tape()
        >>> init = normal(0, 0.5)
        >>> lm = TransformerLm(
        ...     Embedding.init(tape, 7, 4, init), PositionTable.init(tape, 6, 4, init),
        ...     [Block(LayerNorm.init(tape, 4, 1e-5), MultiHeadAttention.init(tape, 4, 2, init),
        ...            LayerNorm.init(tape, 4, 1e-5), SwiGlu.init(tape, 4, 8, init))],
        ...     LayerNorm.init(tape, 4, 1e-5))
        >>> decoder = Decoder(tape, lm, length=6)
        >>> network = tape.seal()
        >>> tokens = decoder.lower(network).generate(network.parameters(), [1, 2], 3, np.random.default_rng(0))
        >>> len(tokens)
        5
    """

    __slots__ = ("_fed", "_plan", "_xla", "caches", "logits", "model", "position", "token", "updated")

    def __init__(self, tape: Tape, model: TransformerLm, length: int) -> None:
        if not isinstance(tape, Tape) or not isinstance(model, TransformerLm):
            raise InvalidArgumentError(
                f"{user_site()}: Decoder takes a Tape and a TransformerLm, got {type(tape).__name__} and {type(model).__name__}"
            )
        self.model = model
        self.token = tape.input(Tensor.selection([0], model.vocab, tape.element))
        self.position = Position(tape, length)
        self.caches = model.caches(tape, 1, length)
        self.logits, self.updated = model.step(self.token, self.position, self.caches)
        self._plan: Plan | None = None
        self._xla: _XlaSteps | None = None
        # Feeds are immutable tensors: each position's and each token's are built once.
        self._fed: dict[tuple[str, int], dict[Symbol, Tensor]] = {}

    @property
    def length(self) -> int:
        return self.position.length

    def roots(self) -> list[Symbol]:
        return [self.logits.symbol] + [v.symbol for cache in self.updated for v in (cache.keys, cache.values)]

    def lower(self, network: Network, numerics: Numerics | None = None, road: Literal["plan", "xla"] = "plan") -> Decoder:
        """Lower the step once: a numpy plan (``road="plan"``, under ``numerics``) or a module
        compiled by XLA (``road="xla"``, which needs the ``xla`` extra; its numerics are the
        XLA envelope). Returns ``self``."""
        if not isinstance(network, Network):
            raise InvalidArgumentError(f"{user_site()}: Decoder.lower: network must be the sealed Network, got {type(network).__name__}")
        entry = network.entry(self.roots())
        if road == "xla" and numerics is not None:
            raise InvalidArgumentError(
                f"{user_site()}: Decoder.lower: numerics={numerics} applies to road='plan'; the XLA road's numerics are its envelope"
            )
        if road == "xla":
            self._xla = _XlaSteps(self, XlaExecutable.of_plan(entry.lower()))
            self._plan = None
        elif road == "plan":
            self._plan = (entry if numerics is None else entry.numerics(numerics)).lower()
            self._xla = None
        else:
            raise InvalidArgumentError(f"{user_site()}: Decoder.lower: road must be 'plan' or 'xla'; got {road!r}")
        return self

    def _start(self) -> dict[Symbol, Tensor]:
        if self._plan is None and self._xla is None:
            raise InvalidArgumentError(f"{user_site()}: Decoder: lower(network) before decoding")
        element = self.token.element
        return {v.symbol: Tensor.zeros(v.shape, element) for cache in self.caches for v in (cache.keys, cache.values)}

    def _feed(self, parameters: Parameters, state: dict[Symbol, Tensor], position: int, token: int) -> Tensor:
        """Run one step; ``state`` (the caches) is replaced by the step's updated caches."""
        assert self._plan is not None
        token = int(token)
        fed = self._fed
        if ("token", token) not in fed:
            fed["token", token] = {self.token.symbol: Tensor.selection([token], self.model.vocab, self.token.element)}
        if ("position", position) not in fed:
            fed["position", position] = self.position.feeds(position)
        feeds = {**fed["token", token], **fed["position", position], **state}
        run = self._plan.forward(parameters, feeds)
        for before, after in zip(self.caches, self.updated, strict=True):
            state[before.keys.symbol] = run.of(after.keys.symbol)
            state[before.values.symbol] = run.of(after.values.symbol)
        return run.of(self.logits.symbol)

    def logits_along(self, parameters: Parameters, tokens: Sequence[int]) -> list[Tensor]:
        """Each step's logits ``[1, vocab]`` while feeding ``tokens`` one by one from position 0."""
        # An empty sequence feeds nothing; anything else is checked as a prompt is.
        empty = isinstance(tokens, (Sequence, np.ndarray)) and not isinstance(tokens, (str, bytes)) and len(tokens) == 0
        tokens = [] if empty else _prompt_ids(tokens, self.model.vocab, "Decoder.logits_along: tokens")
        if len(tokens) > self.length:
            raise InvalidArgumentError(f"{user_site()}: Decoder: {len(tokens)} tokens exceed the cache length {self.length}")
        state = self._start()
        if self._xla is not None:
            step = self._xla.begin(parameters, state)
            return [Tensor(step(position, token), self.token.element) for position, token in enumerate(tokens)]
        return [self._feed(parameters, state, position, token) for position, token in enumerate(tokens)]

    def generate(
        self,
        parameters: Parameters,
        prompt: Sequence[int] | np.ndarray[Any, Any],
        count: int,
        rng: np.random.Generator,
        temperature: float = 1.0,
        top_k: int | None = None,
    ) -> list[int]:
        """``prompt`` followed by ``count`` chosen tokens (at most ``length`` in all); one
        step per token, the caches carried from step to step."""
        # Every argument is checked before the first step, so a refused call leaves the
        # decoder (and its feed cache) as it was.
        if self._plan is None and self._xla is None:
            raise InvalidArgumentError(f"{user_site()}: Decoder: lower(network) before decoding")
        if not isinstance(parameters, Parameters):
            raise ParametersError(
                f"{user_site()}: Decoder.generate: parameters must be a Parameters table, got {type(parameters).__name__}"
            )
        tokens = _prompt_ids(prompt, self.model.vocab)
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise InvalidArgumentError(
                f"{user_site()}: Decoder.generate: count must be a whole number >= 0 of tokens to add; got {count!r}"
            )
        count = int(count)
        _check_sampling("Decoder.generate", rng, temperature, top_k)
        if len(tokens) + count > self.length:
            raise InvalidArgumentError(
                f"{user_site()}: Decoder.generate: {len(tokens)} + {count} tokens exceed the cache length {self.length}"
            )
        state = self._start()
        if self._xla is not None:
            step = self._xla.begin(parameters, state)
        else:

            def step(position: int, token: int) -> Any:
                return self._feed(parameters, state, position, token).numpy()

        total = len(tokens) + count
        for position, token in enumerate(tokens):
            logits = step(position, token)
        for _ in range(count):
            tokens.append(choose(logits[0], rng, temperature, top_k))
            if len(tokens) < total:
                logits = step(len(tokens) - 1, tokens[-1])
        return tokens


class _XlaSteps:
    """The decode step compiled by XLA, with the argument slots of each feed found once.

    :meth:`begin` moves the parameters (and zero caches) to the device for one generation;
    each step (:meth:`feed`) then sends the token and the position's feeds, keeps the updated
    caches on the device as that generation's next arguments, and brings back only the logits.
    """

    __slots__ = ("_cache_slots", "_executable", "_fed", "_logits_at", "_position_slots", "_token_slot", "decoder")

    def __init__(self, decoder: Decoder, executable: XlaExecutable) -> None:
        self.decoder = decoder
        self._executable = executable
        results = list(executable.results)
        self._logits_at = results.index(decoder.logits.symbol)
        self._cache_slots: list[tuple[int, int]] = []
        for before, after in zip(decoder.caches, decoder.updated, strict=True):
            for old, new in ((before.keys, after.keys), (before.values, after.values)):
                slot = executable.position_of(old.symbol)
                if slot is not None:
                    self._cache_slots.append((slot, results.index(new.symbol)))
        self._token_slot = executable.position_of(decoder.token.symbol)
        self._position_slots = [
            (slot, symbol)
            for symbol in decoder.position.feeds(0)
            if (slot := executable.position_of(symbol)) is not None
        ]
        # Host arrays for tokens and positions, converted once (they repeat across calls).
        self._fed: dict[tuple[str, int], list[tuple[int, Any]]] = {}

    def begin(self, parameters: Parameters, caches: dict[Symbol, Tensor]) -> Callable[[int, int], Any]:
        """One generation's step function, starting from ``caches``: its own arguments on the
        device, so threads decoding with one Decoder never share caches."""
        decoder = self.decoder
        feeds = {
            decoder.token.symbol: Tensor.selection([0], decoder.model.vocab, decoder.token.element),
            **decoder.position.feeds(0),
            **caches,
        }
        # Every argument checked once, the interpreter's way; then all of them live on the device.
        arguments = self._executable.compiled.to_device(self._executable.arrays(parameters, feeds))
        return lambda position, token: self.feed(arguments, position, token)

    def feed(self, arguments: list[Any], position: int, token: int) -> Any:
        decoder, executable, fed = self.decoder, self._executable, self._fed
        if ("token", token) not in fed:
            slot = self._token_slot
            selection = Tensor.selection([token], decoder.model.vocab, decoder.token.element)
            fed["token", token] = [] if slot is None else [(slot, executable.argument(decoder.token.symbol, selection))]
        if ("position", position) not in fed:
            feeds = decoder.position.feeds(position)
            fed["position", position] = [(slot, executable.argument(symbol, feeds[symbol])) for slot, symbol in self._position_slots]
        for slot, array in fed["token", token] + fed["position", position]:
            arguments[slot] = array
        outputs = executable.compiled.on_device(arguments)
        for slot, result in self._cache_slots:
            arguments[slot] = outputs[result]
        return np.asarray(outputs[self._logits_at])
