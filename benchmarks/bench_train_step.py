"""Whole training steps with the AdamW update, side by side in one process (issue 15's
"small GPT train step incl. AdamW update: XLA road / jax.jit with optax").

Run it with ``python benchmarks/bench_train_step.py [--quick] [--only gpt,mlp]``, pinned
to one thread by the environment the suite gives its workers (``OPENBLAS_NUM_THREADS``,
``XLA_FLAGS``; see :func:`benchmarks.suite.child_environment`): the script re-executes
itself under that environment for ``--threads N`` (default 1).

A step is the loss, the gradient of every parameter and one AdamW update (rate 1e-3,
decay 0.01) of the whole table, the parameters carried to the next step:

- ``topos Fast plan + AdamW``: the Fast plan, then ``topos.optim.AdamW`` (numpy fused passes);
- ``topos XLA road + compiled AdamW``: the step compiled by XLA, then
  ``topos.optim.compiled(AdamW)`` (the update jitted by XLA too);
- ``jax.jit + optax``: one jitted function of loss, gradient and ``optax.adamw`` update,
  parameters and state left on the device (the peer's best case);
- ``torch eager + AdamW``: the loss, ``backward()`` and ``torch.optim.AdamW(foreach)``.

The workloads are the suite's (``benchmarks/workloads.py``: the same model and data for
every system). Timings are medians of interleaved rounds after warm-up calls; nothing is
asserted. Peers that are not installed are skipped with a message.
"""

from __future__ import annotations

import importlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

Step = Callable[[], None]


def _topos_steps(key: str) -> dict[str, Step]:
    from benchmarks.workloads import workload
    from topos import Parameters, XlaExecutable
    from topos.optim import AdamW, compiled

    w = workload(key)
    plan = w.network.entry(w.roots()).lower()
    steps: dict[str, Step] = {}

    def carried(forward: Callable[[Parameters], Any], update: Any) -> Step:
        held: list[Any] = [w.network.parameters()]
        held.append(update.init(held[0]))

        def step() -> None:
            run = forward(held[0])
            held[0], held[1] = update.update(run.recorded_gradients(w.adjoints), held[1], held[0])

        return step

    steps["topos Fast plan + AdamW"] = carried(plan.forward, AdamW(1e-3, decay=0.01))
    try:
        executable = XlaExecutable.of_plan(plan)
        steps["topos XLA road + compiled AdamW"] = carried(lambda p: executable.forward(p, {}), compiled(AdamW(1e-3, decay=0.01)))
    except ImportError as error:
        print(f"topos XLA road: skipped ({error})")
    return steps


def _jax_step(key: str) -> Step | None:
    try:
        import jax

        optax: Any = importlib.import_module("optax")  # an optional peer, untyped
    except ImportError as error:
        print(f"jax.jit + optax: skipped ({error}; pip install topos-autodiff[peers])")
        return None
    from benchmarks.peers import jax_loss
    from benchmarks.workloads import workload

    w = workload(key)
    transform: Any = optax.adamw(1e-3, weight_decay=0.01)
    loss_of = jax.value_and_grad(jax_loss(key))

    def train(params: Any, state: Any, data: Any) -> Any:
        loss, grads = loss_of(params, data)
        updates, state = transform.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    jitted: Any = jax.jit(train)
    params = {k: jax.numpy.asarray(v) for k, v in w.params.items()}
    held: list[Any] = [params, transform.init(params)]
    data = {k: jax.numpy.asarray(v) for k, v in w.data.items()}

    ready: Any = jax.block_until_ready

    def step() -> None:
        held[0], held[1], loss = jitted(held[0], held[1], data)
        ready(loss)

    return step


def _torch_step(key: str) -> Step | None:
    try:
        import torch
    except ImportError as error:
        print(f"torch eager + AdamW: skipped ({error}; pip install topos-autodiff[peers])")
        return None
    from benchmarks.peers import torch_loss
    from benchmarks.workloads import workload

    w = workload(key)
    params = {k: torch.from_numpy(v.copy()).requires_grad_() for k, v in w.params.items()}
    data = {k: torch.from_numpy(v) for k, v in w.data.items()}
    optimizer = torch.optim.AdamW(list(params.values()), lr=1e-3, weight_decay=0.01, foreach=True)
    loss_of = torch_loss(key)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss_of(params, data).backward()
        optimizer.step()

    return step


def rows(key: str = "gpt", repeats: int = 15) -> list[dict[str, Any]]:
    """Milliseconds per step of each system on ``key`` (see the module docstring)."""
    steps = _topos_steps(key)
    for name, maker in (("jax.jit + optax", _jax_step), ("torch eager + AdamW", _torch_step)):
        made = maker(key)
        if made is not None:
            steps[name] = made
    for step in steps.values():
        step()
        step()
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            begin = time.perf_counter()
            step()
            samples[name].append(time.perf_counter() - begin)
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    return [
        {"workload": f"{key} train step + AdamW", "system": name, "threads": threads, "value": 1e3 * statistics.median(taken), "unit": "ms"}
        for name, taken in samples.items()
    ]


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    args = list(sys.argv[1:] if argv is None else argv)
    threads = int(args[args.index("--threads") + 1]) if "--threads" in args else 1
    if os.environ.get("TOPOS_BENCH_CHILD") != "1":
        from benchmarks.suite import child_environment

        environment = {**child_environment(threads), "TOPOS_BENCH_CHILD": "1"}
        os.execve(sys.executable, [sys.executable, "-m", "benchmarks.bench_train_step", *args], environment)
    keys = args[args.index("--only") + 1].split(",") if "--only" in args else ["gpt", "mlp"]
    found: list[dict[str, Any]] = []
    for key in keys:
        table = rows(key, repeats=3 if "--quick" in args else 15)
        base = {r["system"]: r["value"] for r in table}.get("jax.jit + optax")
        for row in table:
            ratio = f"{row['value'] / base:6.2f}x jax.jit+optax" if base else ""
            print(f"{row['workload']:<26} {row['system']:<34} threads {row['threads']:<3} {row['value']:9.2f} ms  {ratio}")
        found += table
    return found


if __name__ == "__main__":
    main()
