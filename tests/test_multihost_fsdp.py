"""FSDP across processes: the small GPT's training step over a mesh that spans jax processes.

P Python processes on this machine play P hosts with D host devices each; they meet through
a coordinator on 127.0.0.1 and exchange collectives through gloo over loopback TCP (as
``tests/test_multihost.py``). Each runs ``tests/multihost_fsdp_child.py``: the GPT step of
``tests/sharding_child.py`` (2 blocks of width 16, SGD with momentum carried in the step)
under ``FullySharded`` over ``Mesh({"data": P * D})``, each process placing only the pieces
its devices hold (its rows of the batch, its pieces of every split parameter and momentum)
and reading back only its addressable shards. The test puts the processes' shards together
and compares every result with the one-device XLA step run here.

- Default: 2 processes x 2 devices, and the same mesh as 1 process x 4 devices, bit for bit
  alike (about 25 s on two idle cores).
- ``-m multihost_full``: the layouts of 8 devices, processes x devices 1x8, 2x4, 4x2, 8x1.

Every child runs under a hard timeout and the test kills them all on the first failure, so a
lost peer can never hang the suite.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sharding_child as sc
from conftest import free_loopback_port, supervise

HERE = Path(__file__).resolve().parent
ENVELOPE = 8.0
"""Every result within ENVELOPE · eps32 · max|one-device result| of the one-device result,
the FSDP proof's envelope (tests/test_sharding.py): each device sums its own rows' partial
products and gradients and the reduce-scatters add those partial sums, another order of
the same additions than one device's. Where the partial sums are added (one process's
devices or gloo between processes) changes nothing: an IEEE sum of the same pieces in the
same order is the same number on any machine."""
ZERO = 1e-9
"""A one-device result below ZERO in magnitude is zero in exact arithmetic (rounding noise
near 2e-12, see tests/test_sharding.py) and must stay below ZERO."""
TIMEOUT_S = 120.0
"""Hard limit for each run of 4 devices (10-20 s on two cores; a loaded machine doubles it)."""
FULL_TIMEOUT_S = 420.0
"""Hard limit for one layout of 8 devices (8 processes each compile the 8-partition step)."""
FULL_LAYOUTS = [(1, 8), (2, 4), (4, 2), (8, 1)]
_EIGHT: list[list[Any]] = []
"""The first 8-device layout's results this process ran, for the layouts after it."""



def _run(tmp_path: Path, processes: int, devices: int, timeout_s: float) -> tuple[list[tuple[dict[str, Any], Any]], list[Any]]:
    """Start every process, compute the one-device step meanwhile, wait for all (or kill
    all on the first failure or the deadline); each process's report and shards."""
    address = f"127.0.0.1:{free_loopback_port()}"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    tmp_path.mkdir(parents=True, exist_ok=True)
    outs = [tmp_path / f"host{i}" for i in range(processes)]
    logs = [(tmp_path / f"host{i}.log").open("w+") for i in range(processes)]
    children = [
        subprocess.Popen(
            [sys.executable, str(HERE / "multihost_fsdp_child.py"), address, str(i), str(processes), str(outs[i])],
            stdout=logs[i], stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
        for i in range(processes)
    ]  # fmt: skip
    # The one-device step is computed while the children start: the cores would idle on their imports.
    expected = supervise(children, logs, timeout_s, _one_device)
    return [(json.loads(Path(f"{out}.json").read_text(encoding="utf-8")), np.load(f"{out}.npz")) for out in outs], expected


def _one_device() -> list[Any]:
    network, *_ = sc.gpt_step(*sc._model("fsdp"))
    one = sc.one_device(*sc._model("fsdp"))
    return [np.asarray(r) for r in one.compiled.run(one.arrays(network.parameters(), {}))]


def _prove(found: tuple[list[tuple[dict[str, Any], Any]], list[Any]], processes: int, devices: int) -> list[Any]:
    """Check one layout's run; its results put together from every process's shards."""
    hosts, expected = found
    mesh = processes * devices
    for i, (report, _) in enumerate(hosts):
        assert (report["process_count"], report["process_index"]) == (processes, i)
        assert (report["device_count"], report["local_device_count"]) == (mesh, devices)
        assert all(report["kept"])  # updates come back laid out as the next step takes them
    first = hosts[0][0]
    # Each process held exactly its own rows of the batch: a contiguous 1/P of them, in order.
    for position in first["batch"]:
        rows = sc.BATCH * sc.CONTEXT // processes
        for i, (report, _) in enumerate(hosts):
            held = sorted(tuple(r[0]) for r in report["held"][position])
            assert (held[0][0], held[-1][1]) == (i * rows, (i + 1) * rows) and len(held) == devices, (position, held)
    # Each split parameter and momentum: a process holds 1/P of its rows, no two the same.
    split = 0
    for position in first["carried"]:
        pieces = [sorted(tuple(r[0]) for r in report["held"][position]) for report, _ in hosts]
        assert all(len(p) == devices for p in pieces), (position, pieces)
        every = sorted(r for piece in pieces for r in piece)
        if len(set(every)) == 1:
            continue  # replicated (its first axis does not divide the mesh): every device holds it whole
        split += 1
        assert every[0][0] == 0 and all(a[1] == b[0] for a, b in itertools.pairwise(every)), (position, pieces)
    assert split >= len(first["carried"]) - 2  # all but the position table and its momentum on 4 and 8
    eps = float(np.finfo(np.float32).eps)
    worst = 0.0
    whole = []
    for k, want in enumerate(expected):
        got = np.full(want.shape, np.nan, dtype=np.float64)
        for report, shards in hosts:
            for j, ranges in enumerate(report["results"][k]):
                index = tuple(slice(a, b) for a, b in ranges)
                piece = shards[f"r{k}_{j}"].astype(np.float64)
                seen = got[index]
                # Where two devices hold the same piece (a replicated result) they hold it bit for bit.
                assert np.all(np.isnan(seen) | (seen == piece)), k
                got[index] = piece
        assert not np.any(np.isnan(got)), k  # the processes' shards cover the whole result
        whole.append(got)
        diff = float(np.max(np.abs(got - want))) if want.size else 0.0
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        assert diff <= ENVELOPE * eps * scale or (scale < ZERO and diff < ZERO), (k, diff, scale)
        if scale >= ZERO:
            worst = max(worst, diff / (eps * scale))
    print(f"{processes}x{devices}: worst {worst:.2f} eps32 of the largest magnitude")
    return whole


def test_fsdp_step_across_two_processes_of_two_devices_matches_one_device(tmp_path: Path) -> None:
    across = _prove(_run(tmp_path / "2x2", 2, 2, TIMEOUT_S), 2, 2)
    within = _prove(_run(tmp_path / "1x4", 1, 4, TIMEOUT_S), 1, 4)
    # The same 4-device mesh in one process: partial sums that meet through gloo between
    # processes are the same IEEE sums as those that meet between one process's devices.
    for k, (got, want) in enumerate(zip(across, within, strict=True)):
        assert np.array_equal(got.view(np.uint64), want.view(np.uint64)), k


@pytest.mark.multihost_full
@pytest.mark.xdist_group("multihost_full")  # one worker runs every layout: the later compare with the first
@pytest.mark.parametrize(("processes", "devices"), FULL_LAYOUTS, ids=[f"{p}x{d}" for p, d in FULL_LAYOUTS])
def test_fsdp_step_over_eight_devices_in_every_layout_matches_one_device(
    tmp_path: Path, processes: int, devices: int, request: pytest.FixtureRequest
) -> None:
    expression = str(request.config.getoption("-m") or "")
    if "multihost_full" not in expression or "not multihost_full" in expression:
        pytest.skip("opt-in: run with -m multihost_full (8 devices as 1x8, 2x4, 4x2, 8x1 processes x devices)")
    whole = _prove(_run(tmp_path, processes, devices, FULL_TIMEOUT_S), processes, devices)
    # One program over one mesh: which process holds which device changes no bit of any result.
    for k, (got, first) in enumerate(zip(whole, _EIGHT[0] if _EIGHT else whole, strict=True)):
        assert np.array_equal(got.view(np.uint64), first.view(np.uint64)), k
    _EIGHT.append(whole)
