"""KV-cache greedy decoding of the small GPT, tokens per second, side by side in one process.

Run it with ``python benchmarks/bench_decode.py [--quick] [--threads 1,2]``; the suite
imports :func:`rows` (a list of dicts: workload, system, threads, value, unit).
``--context 1024`` instead times a few tokens at that context against the full-context
recompute (:func:`long_context`).

The model is the small GPT of the speed issue: vocabulary 65, context 64, 4 layers, d 128,
4 heads, GPT-2's block (LayerNorm, fused qkv attention, tanh-GELU MLP of width 4d, learned
positions, logits through the tied token table), f32, one set of weights for every system.
Each system decodes greedily at batch 1 from a one-token prompt to the full context (63
decode steps, the chosen token read back to the host after each step), carrying its own
key/value cache:

- ``topos fast``: :class:`topos.nn.generation.Decoder` (the recorded decode step, lowered
  once on the Fast plan) through ``Decoder.generate``;
- ``topos xla``: the same recorded step emitted and compiled by XLA (needs jax), through
  ``Decoder.lower(network, road="xla")``: parameters and caches stay on the device;
- ``topos recompute``: no cache, the full-context forward (a fixed ``[1, 64]`` window)
  once per token: the baseline a KV cache is for;
- ``torch eager``: a hand-written torch model of the same math under ``inference_mode``,
  its cache preallocated and attended up to the current position (needs torch);
- ``jax.jit``: a hand-written jax decode step jitted once, the caches updated with
  ``dynamic_update_slice`` and masked beyond the position (needs jax).

A peer that is not installed is skipped with a message. Each system's greedy tokens are
compared with topos fast's (printed, not asserted: f32 roads may break a near tie apart).
Timings are medians of interleaved rounds (every system once per round, after a warm-up)
at each thread count: BLAS threads through threadpoolctl, ``torch.set_num_threads``.
XLA's CPU pool is fixed when jax loads: run as a script, this file pins it (XLA_FLAGS
``intra_op_parallelism_threads``) to the first thread count before jax loads; imported, it
leaves jax alone (call :func:`pin_xla_threads` first to pin). The rows of ``topos xla`` and
``jax.jit`` carry the pool's count from XLA_FLAGS (0: XLA's default). ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` are dropped from the environment
by a re-execution before numpy loads (as ``benchmarks/run.py`` does), and the BLAS that
ran is reported through threadpoolctl. Figures from a shared machine are provisional.
"""

from __future__ import annotations

import os
import sys

_PINNED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if __name__ == "__main__" and any(name in os.environ for name in _PINNED) and os.environ.get("TOPOS_BENCH_REEXEC") != "1":
    environment = {k: v for k, v in os.environ.items() if k not in _PINNED}
    environment["TOPOS_BENCH_REEXEC"] = "1"
    os.execve(sys.executable, [sys.executable, *sys.argv], environment)

import contextlib  # noqa: E402
import importlib  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator, Sequence  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from topos import Parameters, Tape, Tensor, ToposError, f32  # noqa: E402
from topos.init import normal  # noqa: E402
from topos.nn import (  # noqa: E402
    Activation,
    Block,
    Embedding,
    LayerNorm,
    Mlp,
    MultiHeadAttention,
    PositionTable,
    TransformerLm,
    named_parameters,
)
from topos.nn.generation import Decoder  # noqa: E402

Array = np.ndarray[Any, Any]
VOCAB, CONTEXT, LAYERS, DIM, HEADS = 65, 64, 4, 128, 4
WORKLOAD = f"small GPT decode (vocab {VOCAB}, ctx {CONTEXT}, {LAYERS} layers, d {DIM}, {HEADS} heads, batch 1)"
STEPS = CONTEXT - 1
Decode = Callable[[], list[int]]


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# --------------------------------------------------------------------------- topos


class _Topos:
    """The model recorded once: a decode step, and a full-context forward for recompute."""

    def __init__(self, seed: int = 0, context: int = CONTEXT) -> None:
        self.context = context
        tape = Tape(f32)
        # A wide draw makes the logits decisive, so roads agree on the greedy tokens.
        init = normal(seed, 0.2, tape.element)
        blocks = [
            Block(
                LayerNorm.init(tape, DIM, 1e-5),
                MultiHeadAttention.init(tape, DIM, HEADS, init),
                LayerNorm.init(tape, DIM, 1e-5),
                Mlp(tape, [DIM, 4 * DIM, DIM], Activation.GELU_TANH, init),
            )
            for _ in range(LAYERS)
        ]
        self.model = TransformerLm(
            Embedding.init(tape, VOCAB, DIM, init), PositionTable.init(tape, context, DIM, init), blocks, LayerNorm.init(tape, DIM, 1e-5)
        )
        self.tokens = tape.input(Tensor.selection([0] * context, VOCAB, f32))
        mask = tape.leaf(Tensor(np.where(np.triu(np.ones((context, context)), 1) > 0, -np.inf, 0.0), f32))
        positions = tape.input(Tensor.selection(list(range(context)), context, f32))
        self.logits = self.model(self.tokens, 1, mask, positions)
        self.decoder = Decoder(tape, self.model, context)
        # The same step recorded again for the XLA road (a Decoder is lowered on one road).
        self.on_xla = Decoder(tape, self.model, context)
        self.network = tape.seal()
        self.parameters: Parameters = self.network.parameters()
        self.decoder.lower(self.network)
        self.full = self.network.entry([self.logits.symbol]).lower()

    def weights(self) -> dict[str, Array]:
        return {str(path): self.parameters.of(symbol).numpy() for path, symbol in named_parameters(self.model)}

    def fast(self) -> list[int]:
        return self.decoder.generate(self.parameters, [0], STEPS, np.random.default_rng(0), temperature=0.0)

    def recompute(self, count: int | None = None) -> list[int]:
        """Greedy tokens from ``[0]``, the full ``[1, context]`` forward run once per token."""
        tokens = [0]
        while len(tokens) < 1 + (self.context - 1 if count is None else count):
            window = tokens + [0] * (self.context - len(tokens))
            run = self.full.forward(self.parameters, {self.tokens.symbol: Tensor.selection(window, VOCAB, f32)})
            tokens.append(int(np.argmax(run.of(self.logits.symbol).numpy()[len(tokens) - 1])))
        return tokens

    def xla(self) -> Decode:
        decoder = self.on_xla.lower(self.network, road="xla")
        return lambda: decoder.generate(self.parameters, [0], STEPS, np.random.default_rng(0), temperature=0.0)


# --------------------------------------------------------------------------- torch eager


def torch_decode(torch: Any, w: dict[str, Array]) -> Decode:
    t = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in w.items()}  # writable copies
    hd = DIM // HEADS
    scale = 1.0 / math.sqrt(hd)
    fn = torch.nn.functional
    keys = torch.zeros((LAYERS, HEADS, CONTEXT, hd))
    values = torch.zeros((LAYERS, HEADS, CONTEXT, hd))

    def norm(x: Any, name: str) -> Any:
        return fn.layer_norm(x, (DIM,), t[name + ".scale"], t[name + ".shift"], 1e-5)

    def step(token: int, position: int) -> Any:
        x = t["embedding.weights"][token] + t["positions.weights"][position]
        for i in range(LAYERS):
            p = f"blocks.{i}."
            qkv = norm(x, p + "norm1") @ t[p + "attention.qkv.weights"] + t[p + "attention.qkv.bias"]
            q, k, v = qkv.view(3, HEADS, hd)
            keys[i, :, position] = k
            values[i, :, position] = v
            scores = (keys[i, :, : position + 1] @ q.unsqueeze(-1)).squeeze(-1) * scale
            attended = (torch.softmax(scores, -1).unsqueeze(1) @ values[i, :, : position + 1]).reshape(DIM)
            x = x + attended @ t[p + "attention.output.weights"] + t[p + "attention.output.bias"]
            hidden = fn.gelu(norm(x, p + "norm2") @ t[p + "feed_forward.layers.0.weights"] + t[p + "feed_forward.layers.0.bias"], approximate="tanh")
            x = x + hidden @ t[p + "feed_forward.layers.1.weights"] + t[p + "feed_forward.layers.1.bias"]
        return norm(x, "norm") @ t["embedding.weights"].T

    def run() -> list[int]:
        tokens = [0]
        with torch.inference_mode():
            for position in range(STEPS):
                tokens.append(int(torch.argmax(step(tokens[-1], position))))
        return tokens

    return run


# --------------------------------------------------------------------------- jax.jit


def jax_decode(jax: Any, w: dict[str, Array]) -> Decode:
    jnp = jax.numpy
    params = {k: jnp.asarray(v) for k, v in w.items()}
    hd = DIM // HEADS

    def norm(x: Any, p: dict[str, Any], name: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-5) * p[name + ".scale"] + p[name + ".shift"]

    def step(p: dict[str, Any], keys: Any, values: Any, token: Any, position: Any) -> tuple[Any, Any, Any]:
        x = p["embedding.weights"][token] + p["positions.weights"][position]
        visible = jnp.arange(CONTEXT) <= position
        for i in range(LAYERS):
            b = f"blocks.{i}."
            qkv = norm(x, p, b + "norm1") @ p[b + "attention.qkv.weights"] + p[b + "attention.qkv.bias"]
            q, k, v = qkv.reshape(3, HEADS, hd)
            keys = jax.lax.dynamic_update_slice(keys, k[None, :, None, :], (i, 0, position, 0))
            values = jax.lax.dynamic_update_slice(values, v[None, :, None, :], (i, 0, position, 0))
            scores = jnp.where(visible, jnp.einsum("hld,hd->hl", keys[i], q) / jnp.sqrt(hd), -jnp.inf)
            attended = jnp.einsum("hl,hld->hd", jax.nn.softmax(scores, -1), values[i]).reshape(DIM)
            x = x + attended @ p[b + "attention.output.weights"] + p[b + "attention.output.bias"]
            hidden = jax.nn.gelu(norm(x, p, b + "norm2") @ p[b + "feed_forward.layers.0.weights"] + p[b + "feed_forward.layers.0.bias"], approximate=True)
            x = x + hidden @ p[b + "feed_forward.layers.1.weights"] + p[b + "feed_forward.layers.1.bias"]
        return norm(x, p, "norm") @ p["embedding.weights"].T, keys, values

    jitted = jax.jit(step)
    zeros = jnp.zeros((LAYERS, HEADS, CONTEXT, hd), jnp.float32)

    def run() -> list[int]:
        keys, values = zeros, zeros
        tokens = [0]
        for position in range(STEPS):
            logits, keys, values = jitted(params, keys, values, np.int32(tokens[-1]), np.int32(position))
            tokens.append(int(np.argmax(np.asarray(logits))))
        return tokens

    return run


# --------------------------------------------------------------------------- driver


def blas_report() -> str:
    pools = _optional("threadpoolctl")
    if pools is None:
        return "BLAS: threadpoolctl not installed (pip install threadpoolctl)"
    found = [
        f"{i.get('internal_api')} {i.get('version')} kernel={i.get('architecture')} threads={i.get('num_threads')}"
        for i in pools.threadpool_info()
        if i.get("user_api") == "blas"
    ]
    return "BLAS: " + ("; ".join(found) if found else "none found")


@contextlib.contextmanager
def _threads(count: int, torch: Any) -> Iterator[None]:
    pools = _optional("threadpoolctl")
    before = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(count)
    try:
        if pools is None:
            yield
        else:
            with pools.threadpool_limits(limits=count, user_api="blas"):
                yield
    finally:
        if torch is not None:
            torch.set_num_threads(before)


def pin_xla_threads(threads: int) -> None:
    """Fix XLA's CPU pool at ``threads`` for this process; effective only before jax loads."""
    if "jax" not in sys.modules:
        flags = os.environ.get("XLA_FLAGS", "")
        if "intra_op_parallelism_threads" not in flags:
            multi = "true" if threads > 1 else "false"
            os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen={multi} intra_op_parallelism_threads={threads}".strip()


def _xla_threads() -> int:
    """The thread count XLA_FLAGS gives XLA's CPU pool (0: not set, XLA's default)."""
    found = re.search(r"intra_op_parallelism_threads=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return int(found.group(1)) if found else 0


def rows(threads: Sequence[int] = (1, 2), repeats: int = 7, echo: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Tokens per second of each system at each thread count (see the module docstring).

    Example (slow: records the model and compiles the peers):
        >>> [row["system"] for row in rows((1,), repeats=1, echo=lambda _: None)]  # doctest: +SKIP
        ['topos fast', 'topos recompute', 'topos xla', 'torch eager', 'jax.jit']
    """
    torch = _optional("torch")
    jax, jax_threads = _optional("jax"), _xla_threads()
    topos = _Topos()
    systems: dict[str, Decode] = {"topos fast": topos.fast, "topos recompute": topos.recompute}
    pool: dict[str, int | None] = {}
    if jax is None:
        echo("topos xla, jax.jit: skipped (jax is not installed: pip install jax)")
    else:
        try:
            systems["topos xla"] = topos.xla()
            pool["topos xla"] = jax_threads
        except ToposError as error:
            echo(f"topos xla: skipped ({error})")
    if torch is None:
        echo("torch eager: skipped (torch is not installed: pip install torch)")
    else:
        systems["torch eager"] = torch_decode(torch, topos.weights())
    if jax is not None:
        systems["jax.jit"] = jax_decode(jax, topos.weights())
        pool["jax.jit"] = jax_threads
    reference = topos.fast()
    for name, decode in systems.items():
        agree = sum(a == b for a, b in zip(decode(), reference, strict=True)) - 1
        echo(f"{name}: greedy tokens agree with topos fast at {agree} of {STEPS} steps")
    if jax is not None:
        echo(f"XLA's CPU pool: {jax_threads or 'XLA default'} thread(s) for every row of topos xla and jax.jit (fixed when jax loads)")
    out: list[dict[str, Any]] = []
    for count in threads:
        with _threads(count, torch):
            echo(blas_report() + (f"; torch threads={torch.get_num_threads()}" if torch is not None else ""))
            medians = _interleaved(list(systems.values()), repeats)
        for (name, _), seconds in zip(systems.items(), medians, strict=True):
            ran = pool.get(name, count)
            out.append({"workload": WORKLOAD, "system": name, "threads": count if ran is None else ran, "value": STEPS / seconds, "unit": "tokens/s"})
    return out


def long_context(context: int = 1024, count: int = 16, repeats: int = 3, echo: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Milliseconds per token at ``context``: KV-cache decoding (Fast plan and, with jax, the
    XLA road) against the full-context recompute it replaces.

    Each system makes ``count`` greedy tokens from ``[0]``. A decode step attends over the
    whole cache (positions after the current one masked) and the recompute runs the whole
    ``[1, context]`` window, so both cost about the same at every position and a few tokens
    give the per-token figure of a full sequence. One thread, medians of ``repeats``.
    """
    topos = _Topos(context=context)
    systems: dict[str, Decode] = {
        "topos fast": lambda: topos.decoder.generate(topos.parameters, [0], count, np.random.default_rng(0), temperature=0.0),
        "topos recompute": lambda: topos.recompute(count),
    }
    if _optional("jax") is not None:
        on_xla = topos.on_xla.lower(topos.network, road="xla")
        systems["topos xla"] = lambda: on_xla.generate(topos.parameters, [0], count, np.random.default_rng(0), temperature=0.0)
    with _threads(1, _optional("torch")):
        medians = _interleaved(list(systems.values()), repeats)
    recompute = medians[1] / count
    out = []
    for name, seconds in zip(systems, medians, strict=True):
        per_token = seconds / count
        out.append({"workload": f"decode at context {context}", "system": name, "threads": 1, "value": 1e3 * per_token, "unit": "ms/token", "speed-up over recompute": recompute / per_token})
        echo(f"context {context}: {name:<16} {1e3 * per_token:9.2f} ms/token   {recompute / per_token:7.1f}x the recompute's speed")
    return out


def _interleaved(steps: list[Decode], repeats: int) -> list[float]:
    """The median of ``repeats`` rounds per step, the steps alternating within each round."""
    for step in steps:
        step()
    samples: list[list[float]] = [[] for _ in steps]
    for _ in range(repeats):
        for step, times in zip(steps, samples, strict=True):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
    return [statistics.median(times) for times in samples]


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    args = list(sys.argv[1:] if argv is None else argv)
    threads = tuple(int(n) for n in args[args.index("--threads") + 1].split(",")) if "--threads" in args else (1, 2)
    pin_xla_threads(threads[0])
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    if "--context" in args:
        return long_context(int(args[args.index("--context") + 1]), repeats=1 if "--quick" in args else 3)
    table = rows(threads, repeats=3 if "--quick" in args else 11)
    fast = {row["threads"]: row["value"] for row in table if row["system"] == "topos fast"}
    print(WORKLOAD)
    print(f"{'system':<16} {'threads':>7} {'tokens/s':>10} {'/ topos fast':>13}")
    for row in table:
        base = fast.get(row["threads"]) or fast[max(fast)]
        print(f"{row['system']:<16} {row['threads']:>7} {row['value']:>10.0f} {row['value'] / base:>13.2f}")
    return table


if __name__ == "__main__":
    main()
