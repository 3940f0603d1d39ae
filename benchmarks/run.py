"""Side-by-side timings of training steps, reported as ratios measured in one process.

Run it with ``python benchmarks/run.py [--quick]``. Rows:

- a training step (loss and every parameter gradient) of an MLP 784-256-10, batch 64, and
  of a LeNet-style convnet on 28x28 inputs (conv5-pool-conv5-pool-fc-fc), each as
  (a) the Fast plan over ``adjoints.roots()``, (b) the Exact plan, (c) the interpreter with
  engine backward, (d) hand-written numpy of the same math;
- forward-only peak live volume against retain-all on the MLP.

Timings are the fastest of several interleaved rounds after a warm-up (medians printed
too); ratios divide by the numpy row; one BLAS thread unless ``--threads N``. Nothing here is asserted: the figures are for reading. The BLAS library and kernel
that actually ran are reported through threadpoolctl.

OpenBLAS reads ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` once, when numpy loads it; a
host that pins them (to a conservative core type) would measure a slower kernel than the
machine has, so this script drops them from its own environment and re-executes itself
before numpy is imported.
"""

from __future__ import annotations

import os
import sys

_PINNED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# Only as the main program: importing this module (the suite's workloads do, and so do the
# tests) must neither replace the importing process nor change its environment.
if __name__ == "__main__" and any(name in os.environ for name in _PINNED) and os.environ.get("TOPOS_BENCH_REEXEC") != "1":
    environment = {k: v for k, v in os.environ.items() if k not in _PINNED}
    environment["TOPOS_BENCH_REEXEC"] = "1"
    os.execve(sys.executable, [sys.executable, *sys.argv], environment)
if __package__ in (None, ""):
    # Run as a script, the checkout's topos (beside this folder) comes first, not an installed one.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from topos import Network, Numerics, Parameters, Symbol, Tape, Value, f32  # noqa: E402
from topos.nn import conv2d, max_pool  # noqa: E402
from topos.stages.gradient import Adjoints, gradient  # noqa: E402

Array = np.ndarray[Any, Any]
BATCH = 64


def blas_report() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - the dev extra installs it
        return "BLAS: threadpoolctl not installed (pip install threadpoolctl)"
    rows = [
        f"{i.get('internal_api')} {i.get('version')} kernel={i.get('architecture')} threads={i.get('num_threads')}"
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]
    return "BLAS: " + ("; ".join(rows) if rows else "none found")


def interleaved(steps: list[Callable[[], object]], repeats: int) -> list[float]:
    """The fastest of ``repeats`` rounds per step, the steps alternating within each round.

    Alternating exposes every row to the same neighbours on a shared host, and the minimum
    is the run least disturbed by them (the median is printed alongside for honesty).
    """
    for step in steps:
        step()
    samples: list[list[float]] = [[] for _ in steps]
    for _ in range(repeats):
        for step, times in zip(steps, samples, strict=True):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
    for times in samples:
        MEDIANS.append(statistics.median(times))
    return [min(times) for times in samples]


MEDIANS: list[float] = []


def cross_entropy(logits: Value, labels: Value) -> Value:
    return -(logits.log_softmax(1) * labels).sum() * (1.0 / BATCH)


# --------------------------------------------------------------------------- MLP


def mlp_data(rng: np.random.Generator) -> dict[str, Array]:
    return {
        "x": rng.standard_normal((BATCH, 784)).astype(np.float32),
        "y": np.eye(10, dtype=np.float32)[rng.integers(0, 10, BATCH)],
        "w1": (rng.standard_normal((784, 256)) * 0.05).astype(np.float32),
        "b1": np.zeros(256, np.float32),
        "w2": (rng.standard_normal((256, 10)) * 0.05).astype(np.float32),
        "b2": np.zeros(10, np.float32),
    }


def mlp_record(d: dict[str, Array]) -> tuple[Network, dict[str, Any]]:
    def build(t: Tape) -> dict[str, Any]:
        x, y = t.input(d["x"]), t.input(d["y"])
        w1, b1, w2, b2 = (t.parameter(d[k]) for k in ("w1", "b1", "w2", "b2"))
        hidden = (x.matmul(w1) + b1.broadcast_along(0, BATCH)).tanh()
        logits = hidden.matmul(w2) + b2.broadcast_along(0, BATCH)
        return {"loss": cross_entropy(logits, y), "params": [w1, b1, w2, b2]}

    return Tape.record(build, element=f32)


def mlp_numpy(d: dict[str, Array]) -> Callable[[], list[Array]]:
    x, y, w1, b1, w2, b2 = (d[k] for k in ("x", "y", "w1", "b1", "w2", "b2"))

    def step() -> list[Array]:
        h = np.tanh(x @ w1 + b1)
        logits = h @ w2 + b2
        shifted = logits - logits.max(1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        loss = -(logp * y).sum() / BATCH
        g_logits = (np.exp(logp) * y.sum(1, keepdims=True) - y) / BATCH
        g_w2, g_b2 = h.T @ g_logits, g_logits.sum(0)
        g_pre = (g_logits @ w2.T) * (1 - h * h)
        g_w1, g_b1 = x.T @ g_pre, g_pre.sum(0)
        return [np.asarray(loss), g_w1, g_b1, g_w2, g_b2]

    return step


# --------------------------------------------------------------------------- LeNet


def lenet_data(rng: np.random.Generator) -> dict[str, Array]:
    def init(*shape: int) -> Array:
        fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[0]
        drawn: Array = rng.standard_normal(shape) / np.sqrt(fan_in)
        return drawn.astype(np.float32)

    return {
        "x": rng.standard_normal((BATCH, 1, 28, 28)).astype(np.float32),
        "y": np.eye(10, dtype=np.float32)[rng.integers(0, 10, BATCH)],
        "k1": init(6, 1, 5, 5), "c1": np.zeros(6, np.float32),
        "k2": init(16, 6, 5, 5), "c2": np.zeros(16, np.float32),
        "w3": init(400, 120), "b3": np.zeros(120, np.float32),
        "w4": init(120, 10), "b4": np.zeros(10, np.float32),
    }  # fmt: skip


LENET_PARAMS = ("k1", "c1", "k2", "c2", "w3", "b3", "w4", "b4")


def lenet_record(d: dict[str, Array]) -> tuple[Network, dict[str, Any]]:
    def build(t: Tape) -> dict[str, Any]:
        x, y = t.input(d["x"]), t.input(d["y"])
        k1, c1, k2, c2, w3, b3, w4, b4 = (t.parameter(d[k]) for k in LENET_PARAMS)
        h = max_pool(conv2d(x, k1, c1, padding=2).relu(), 2)
        h = max_pool(conv2d(h, k2, c2).relu(), 2)
        flat = h.reshape((BATCH, 400))
        hidden = (flat.matmul(w3) + b3.broadcast_along(0, BATCH)).relu()
        logits = hidden.matmul(w4) + b4.broadcast_along(0, BATCH)
        return {"loss": cross_entropy(logits, y), "params": [k1, c1, k2, c2, w3, b3, w4, b4]}

    return Tape.record(build, element=f32)


def _patches(x: Array, k: int, pad: int) -> tuple[Array, tuple[int, ...]]:
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))
    b, c, oh, ow = windows.shape[:4]
    return windows.transpose(0, 2, 3, 1, 4, 5).reshape(b * oh * ow, c * k * k), (b, c, oh, ow, x.shape[2])


def _unpatch(g: Array, meta: tuple[int, ...], k: int, pad: int) -> Array:
    b, c, oh, ow, side = meta
    cols = g.reshape(b, oh, ow, c, k, k)
    out = np.zeros((b, c, side, side), g.dtype)
    for i in range(k):
        for j in range(k):
            out[:, :, i : i + oh, j : j + ow] += cols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
    return out[:, :, pad : side - pad, pad : side - pad] if pad else out


def _pool(x: Array) -> tuple[Array, Array]:
    b, c, h, w = x.shape
    windows = x.reshape(b, c, h // 2, 2, w // 2, 2)
    out = windows.max(axis=(3, 5))
    mask = windows == out[:, :, :, None, :, None]
    return out, mask


def lenet_numpy(d: dict[str, Array]) -> Callable[[], list[Array]]:
    x, y = d["x"], d["y"]
    k1, c1, k2, c2, w3, b3, w4, b4 = (d[k] for k in LENET_PARAMS)

    def conv(inp: Array, kern: Array, bias: Array, pad: int) -> tuple[Array, Array, tuple[int, ...]]:
        cols, meta = _patches(inp, kern.shape[2], pad)
        out = cols @ kern.reshape(kern.shape[0], -1).T + bias
        b, _, oh, ow, _ = meta
        return out.reshape(b, oh, ow, -1).transpose(0, 3, 1, 2), cols, meta

    def step() -> list[Array]:
        a1, cols1, _ = conv(x, k1, c1, 2)
        r1 = np.maximum(a1, 0)
        p1, m1 = _pool(r1)
        a2, cols2, meta2 = conv(p1, k2, c2, 0)
        r2 = np.maximum(a2, 0)
        p2, m2 = _pool(r2)
        flat = p2.reshape(BATCH, 400)
        pre3 = flat @ w3 + b3
        h3 = np.maximum(pre3, 0)
        logits = h3 @ w4 + b4
        shifted = logits - logits.max(1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        loss = -(logp * y).sum() / BATCH
        g = (np.exp(logp) * y.sum(1, keepdims=True) - y) / BATCH
        g_w4, g_b4 = h3.T @ g, g.sum(0)
        g = (g @ w4.T) * (pre3 > 0)
        g_w3, g_b3 = flat.T @ g, g.sum(0)
        g = (g @ w3.T).reshape(p2.shape)
        g = (m2 * g[:, :, :, None, :, None]).reshape(r2.shape) * (a2 > 0)
        rows2 = g.transpose(0, 2, 3, 1).reshape(-1, 16)
        g_k2, g_c2 = (cols2.T @ rows2).T.reshape(k2.shape), rows2.sum(0)
        g = _unpatch(rows2 @ k2.reshape(16, -1), meta2, 5, 0)
        g = (m1 * g[:, :, :, None, :, None]).reshape(r1.shape) * (a1 > 0)
        rows1 = g.transpose(0, 2, 3, 1).reshape(-1, 6)
        g_k1, g_c1 = (cols1.T @ rows1).T.reshape(k1.shape), rows1.sum(0)
        return [np.asarray(loss), g_k1, g_c1, g_k2, g_c2, g_w3, g_b3, g_w4, g_b4]

    return step


# --------------------------------------------------------------------------- driver


def rows_for(
    name: str, network: Network, symbols: dict[str, Any], reference: Callable[[], list[Array]], repeats: int, slow: int
) -> list[tuple[str, float]]:
    loss: Symbol = symbols["loss"]
    params: list[Symbol] = symbols["params"]
    longer, adjoints = gradient(network, loss, params)
    parameters: Parameters = longer.parameters()
    fast = longer.entry(adjoints.roots()).numerics(Numerics.FAST).lower()
    exact = longer.entry(adjoints.roots()).numerics(Numerics.EXACT).lower()
    base = network.parameters()

    def interpreter() -> object:
        return network.forward(base).backward(loss)

    check(name, fast.forward(parameters), adjoints, reference())
    t_numpy, t_fast = interleaved([reference, lambda: fast.forward(parameters)], repeats)
    t_exact, t_interp = interleaved([lambda: exact.forward(parameters), interpreter], slow)
    return [
        (f"{name} (a) fast plan", t_fast / t_numpy),
        (f"{name} (b) exact plan", t_exact / t_numpy),
        (f"{name} (c) interpreter + engine backward", t_interp / t_numpy),
        (f"{name} (d) numpy by hand [{t_numpy * 1e3:.2f} ms]", 1.0),
        (f"{name} exact plan / interpreter", t_exact / t_interp),
    ]


def check(name: str, run: Any, adjoints: Adjoints, expected: list[Array]) -> None:
    got = [run.of(adjoints.target).numpy(), *(run.of(g).numpy() for g in adjoints.gradients())]
    worst = max(float(np.max(np.abs(a.astype(np.float64) - b))) for a, b in zip(got, expected, strict=True))
    print(f"{name}: fast plan vs numpy by hand, largest difference {worst:.2e}")


def main() -> None:
    quick = "--quick" in sys.argv
    # One BLAS thread by default: on a shared host a second spinning thread measures the
    # neighbours, not the kernel. ``--threads N`` lifts it.
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - the dev extra installs it
        body(quick)
        return
    with threadpool_limits(limits=threads, user_api="blas"):
        body(quick)


def body(quick: bool = False) -> None:
    repeats, slow = (5, 1) if quick else (30, 3)
    rng = np.random.default_rng(0)
    print(blas_report())
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    table: list[tuple[str, float]] = []
    d = mlp_data(rng)
    network, symbols = mlp_record(d)
    table += rows_for("MLP 784-256-10 b64", network, symbols, mlp_numpy(d), repeats, slow)
    forward = network.entry(symbols["loss"]).lower()
    peak, _ = forward.peak()
    table.append((f"MLP forward-only peak live / retain-all ({peak} / {forward.retain_all()} elements)", peak / forward.retain_all()))
    d = lenet_data(rng)
    network, symbols = lenet_record(d)
    table += rows_for("LeNet 28x28 b64", network, symbols, lenet_numpy(d), max(3, repeats // 3), slow)
    width = max(len(label) for label, _ in table)
    print(f"{'row':<{width}}  ratio")
    for label, ratio in table:
        print(f"{label:<{width}}  {ratio:6.3f}")
    print("medians (ms, in measuring order):", " ".join(f"{m * 1e3:.2f}" for m in MEDIANS))


if __name__ == "__main__":
    main()
