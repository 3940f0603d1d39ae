"""The XLA road beside jax.jit: training steps and compile times, measured side by side.

Run: ``python benchmarks/bench_xla.py [--repeats N]``.

Rows:
- ``mlp``: 784-256-10 ReLU classifier, batch 128, loss + gradients of every weight.
- ``lenet``: conv(1->6, 5x5, pad 2) relu pool2, conv(6->16, 5x5) relu pool2, 400-120-10,
  batch 32, loss + gradients.

For each, the step time of the topos XLA road (``XlaExecutable.forward``: numpy in, tensors
out, signature checked on every call) against ``jax.jit(jax.value_and_grad(loss))`` of the
same model in jax.numpy (numpy in, numpy out), and the compile time of each road: topos
records, differentiates, lowers, emits and compiles; jax traces, lowers and compiles.
Medians of ``repeats`` runs; ratios > 1 mean topos is slower.
"""

from __future__ import annotations

import os

# The shared machines pin OpenBLAS to a conservative core type; this process needs neither.
# Only as the main program (before numpy loads): an importer's environment is its own.
if __name__ == "__main__":
    os.environ.pop("OPENBLAS_CORETYPE", None)
    os.environ.pop("OPENBLAS_L2_SIZE", None)

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from topos import Network, Symbol, Tape, Value, XlaExecutable, f32, xla
from topos.nn.functional import conv2d, max_pool

Array = np.ndarray[Any, Any]


def median_seconds(call: Callable[[], Any], repeats: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# --------------------------------------------------------------------------- the models


def mlp_weights(rng: np.random.Generator) -> list[Array]:
    return [
        (rng.standard_normal((784, 256)) * 0.05).astype(np.float32), np.zeros(256, np.float32),
        (rng.standard_normal((256, 10)) * 0.05).astype(np.float32), np.zeros(10, np.float32),
    ]  # fmt: skip


def lenet_weights(rng: np.random.Generator) -> list[Array]:
    return [
        (rng.standard_normal((6, 1, 5, 5)) * 0.2).astype(np.float32), np.zeros(6, np.float32),
        (rng.standard_normal((16, 6, 5, 5)) * 0.1).astype(np.float32), np.zeros(16, np.float32),
        (rng.standard_normal((400, 120)) * 0.05).astype(np.float32), np.zeros(120, np.float32),
        (rng.standard_normal((120, 10)) * 0.05).astype(np.float32), np.zeros(10, np.float32),
    ]  # fmt: skip


def _loss(logits: Value, labels: Value, batch: int) -> Value:
    return -(logits.log_softmax(1) * labels).sum() / float(batch)


def _dense(t: Tape, x: Value, w: Value, b: Value, rows: int) -> Value:
    return x.matmul(w) + b.broadcast_along(0, rows)


def record_mlp(weights: list[Array], x: Array, y: Array) -> tuple[Network, list[Symbol], Symbol, Symbol]:
    batch = x.shape[0]

    def build(t: Tape) -> tuple[list[Value], Value, Value]:
        xs, ys = t.input(x), t.input(y)
        w1, b1, w2, b2 = (t.parameter(w) for w in weights)
        hidden = _dense(t, xs, w1, b1, batch).relu()
        loss = _loss(_dense(t, hidden, w2, b2, batch), ys, batch)
        adjoints = t.differentiate(loss, [w1, b1, w2, b2])
        return [loss, *(t.resolve(g) for g in adjoints.gradients())], xs, ys

    network, (roots, xs, ys) = Tape.record(build, element=f32)
    return network, list(roots), xs, ys


def record_lenet(weights: list[Array], x: Array, y: Array) -> tuple[Network, list[Symbol], Symbol, Symbol]:
    batch = x.shape[0]

    def build(t: Tape) -> tuple[list[Value], Value, Value]:
        xs, ys = t.input(x), t.input(y)
        k1, c1, k2, c2, w3, b3, w4, b4 = (t.parameter(w) for w in weights)
        h = max_pool(conv2d(xs, k1, c1, padding=2).relu(), 2)
        h = max_pool(conv2d(h, k2, c2).relu(), 2).reshape((batch, 400))
        h = _dense(t, h, w3, b3, batch).relu()
        loss = _loss(_dense(t, h, w4, b4, batch), ys, batch)
        adjoints = t.differentiate(loss, [k1, c1, k2, c2, w3, b3, w4, b4])
        return [loss, *(t.resolve(g) for g in adjoints.gradients())], xs, ys

    network, (roots, xs, ys) = Tape.record(build, element=f32)
    return network, list(roots), xs, ys


def jax_mlp(params: list[Any], x: Any, y: Any) -> Any:
    w1, b1, w2, b2 = params
    hidden = jnp.maximum(x @ w1 + b1, 0.0)
    logits = hidden @ w2 + b2
    return -(jax.nn.log_softmax(logits, axis=1) * y).sum() / x.shape[0]


def _jax_conv(x: Any, k: Any, b: Any, padding: int) -> Any:
    out = jax.lax.conv_general_dilated(x, k, (1, 1), [(padding, padding)] * 2, dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return out + b[None, :, None, None]


def _jax_pool(x: Any) -> Any:
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def jax_lenet(params: list[Any], x: Any, y: Any) -> Any:
    k1, c1, k2, c2, w3, b3, w4, b4 = params
    h = _jax_pool(jnp.maximum(_jax_conv(x, k1, c1, 2), 0.0))
    h = _jax_pool(jnp.maximum(_jax_conv(h, k2, c2, 0), 0.0)).reshape(x.shape[0], 400)
    h = jnp.maximum(h @ w3 + b3, 0.0)
    logits = h @ w4 + b4
    return -(jax.nn.log_softmax(logits, axis=1) * y).sum() / x.shape[0]


# --------------------------------------------------------------------------- measuring


def bench(
    name: str,
    weights: list[Array],
    x: Array,
    y: Array,
    recorder: Callable[[list[Array], Array, Array], tuple[Network, list[Symbol], Symbol, Symbol]],
    jax_loss: Callable[[list[Any], Any, Any], Any],
    repeats: int,
) -> dict[str, float]:
    # Compile time, topos: record + differentiate, lower, emit, compile (a fresh compile).
    def topos_compile() -> Any:
        network, roots, _, _ = recorder(weights, x, y)
        plan = network.entry(roots).lower()
        text = plan.emit_stablehlo()
        return xla.CompiledModule(text, 1)

    def jax_compile() -> Any:
        fresh = jax.jit(jax.value_and_grad(lambda p, a, b: jax_loss(p, a, b)))
        return fresh.lower(weights, x, y).compile()

    compile_topos = median_seconds(topos_compile, max(3, repeats // 10), warmup=1)
    compile_jax = median_seconds(jax_compile, max(3, repeats // 10), warmup=1)

    network, roots, xs, ys = recorder(weights, x, y)
    plan = network.entry(roots).lower()
    executable = XlaExecutable.of_plan(plan)
    parameters = network.parameters()
    feeds = {xs: x, ys: y}
    step = jax.jit(jax.value_and_grad(jax_loss))

    def topos_step() -> Any:
        run = executable.forward(parameters, feeds)
        return [run.of(r) for r in roots]

    def jax_step() -> Any:
        loss, grads = step(weights, x, y)
        return [np.asarray(loss), *(np.asarray(g) for g in grads)]

    # Same model, same numbers: the two roads agree within an f32 envelope.
    ours = topos_step()
    theirs = jax_step()
    gap = max(float(np.max(np.abs(a.numpy() - b))) for a, b in zip(ours, theirs, strict=True))

    step_topos = median_seconds(topos_step, repeats)
    step_jax = median_seconds(jax_step, repeats)
    arrays = executable.arrays(parameters, feeds)
    step_raw = median_seconds(lambda: executable.compiled(*arrays), repeats)
    row = {
        "step_topos_ms": step_topos * 1e3,
        "step_raw_ms": step_raw * 1e3,
        "step_jax_ms": step_jax * 1e3,
        "step_ratio": step_topos / step_jax,
        "compile_topos_ms": compile_topos * 1e3,
        "compile_jax_ms": compile_jax * 1e3,
        "compile_ratio": compile_topos / compile_jax,
        "max_gap": gap,
    }
    print(
        f"{name:<6} step: topos {row['step_topos_ms']:8.3f} ms (raw executable {row['step_raw_ms']:8.3f} ms)  "
        f"jax.jit {row['step_jax_ms']:8.3f} ms  ratio {row['step_ratio']:5.2f}x | "
        f"compile: topos {row['compile_topos_ms']:7.1f} ms  jax {row['compile_jax_ms']:7.1f} ms  "
        f"ratio {row['compile_ratio']:5.2f}x | max |topos - jax| {gap:.2e}"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
    bench("mlp", mlp_weights(rng), x, y, record_mlp, jax_mlp, args.repeats)
    images = rng.standard_normal((32, 1, 28, 28)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)]
    bench("lenet", lenet_weights(rng), images, labels, record_lenet, jax_lenet, args.repeats)


if __name__ == "__main__":
    main()
