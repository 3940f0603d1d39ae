"""Data parallelism across processes: two jax processes joined by ``jax.distributed``.

Two Python processes on this machine play two hosts. They meet through a coordinator bound
to 127.0.0.1, exchange cross-process collectives through gloo over TCP (also pinned to
127.0.0.1), and run one training step of a small MLP that topos recorded and emitted with
:class:`~topos.stages.emission.DataParallel` over the two processes' devices. Each process
feeds only the rows of the batch its device holds. The test compares what each process
reads back with the single-process, single-device run of the same network.

Every child runs under a hard timeout and the test kills both on the first failure, so a
lost peer can never hang the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from conftest import free_loopback_port, supervise

from topos import DataParallel, Network, Symbol, Tape, Value, XlaExecutable, emit_network

BATCH = 8
PROCESSES = 2
RATE = 0.5
TIMEOUT_S = 120.0


def data(shape: tuple[int, ...], seed: int) -> Any:
    """Magnitudes in [0.25, 2] with random signs: no denormal can arise (XLA flushes them)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.25, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def training_step() -> tuple[Network, list[Symbol], dict[str, Symbol]]:
    """A 6-5-3 classifier: its loss, the gradient of each weight and the SGD-updated weights.

    The parameters are recorded before the inputs, so the emitted ``@main`` takes
    (w1, b1, w2, x, labels) in that order.
    """

    def build(t: Tape) -> tuple[list[Value], dict[str, Value]]:
        w1, b1 = t.parameter(data((6, 5), 2) * 0.5), t.parameter(data((5,), 3) * 0.1)
        w2 = t.parameter(data((5, 3), 4) * 0.5)
        x = t.input(data((BATCH, 6), 1))
        labels = t.input(np.eye(3)[np.arange(BATCH) % 3])
        hidden = (x.matmul(w1) + b1.broadcast_along(0, BATCH)).tanh()
        loss = -(hidden.matmul(w2).log_softmax(1) * labels).sum() / float(BATCH)
        gradients = [t.resolve(g) for g in t.differentiate(loss, [w1, b1, w2]).gradients()]
        updated = [w - g * RATE for w, g in zip((w1, b1, w2), gradients, strict=True)]
        return [loss, *gradients, *updated], {"x": x, "labels": labels}

    network, (roots, named) = Tape.record(build)
    return network, list(roots), named


# The child is one "host". jax's private pieces are used only here, to pin gloo's own
# listening socket to loopback (its default is the address the host name resolves to).
_CHILD = """
import sys
sys.path.insert(0, {tests!r})
address, process_id, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]

import jax
import numpy as np
from jax._src import distributed, xla_bridge
from jax._src.lib import _jax
from jax._src.sharding_impls import GSPMDSharding

jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_cpu_collectives_implementation", "gloo")
xla_bridge.register_backend_factory(
    "cpu",
    lambda: xla_bridge.make_cpu_client(
        collectives=_jax.make_gloo_tcp_collectives(
            distributed_client=distributed.global_state.client, hostname="127.0.0.1"
        )
    ),
    priority=0,
    fail_quietly=False,
)
jax.distributed.initialize(
    coordinator_address=address,
    coordinator_bind_address=address,
    num_processes={processes},
    process_id=process_id,
    initialization_timeout=60,
    heartbeat_timeout_seconds=30,
    shutdown_timeout_seconds=30,
)

import test_multihost as m
from topos import XlaExecutable

network, roots, named = m.training_step()
devices = jax.devices()
executable = XlaExecutable.of_network(
    network, roots, devices=len(devices), split=[named["x"], named["labels"]]
)
compiled = executable.compiled.executable
arrays = executable.arrays(network.parameters(), {{}})
shardings = [GSPMDSharding(devices, s) for s in compiled.get_parameter_shardings()]
rows = []
arguments = []
for array, sharding in zip(arrays, shardings, strict=True):
    local = sharding.addressable_devices_indices_map(array.shape)
    rows.append(sorted((index[0].start or 0) for index in local.values()) if array.ndim else [])
    # Only the addressable shards are read from ``array``: this process's slice of the batch.
    arguments.append(jax.make_array_from_callback(array.shape, sharding, lambda i, a=array: a[i]))
pieces = compiled.execute_sharded(arguments).disassemble_into_single_device_arrays()
results = {{f"r{{k}}": np.asarray(shards[0]) for k, shards in enumerate(pieces)}}
np.savez(
    out,
    text=np.frombuffer(executable.text.encode(), dtype=np.uint8),
    process_count=jax.process_count(),
    process_index=jax.process_index(),
    device_count=len(devices),
    local_device_count=jax.local_device_count(),
    x_rows=np.array(rows[3]),
    **results,
)
jax.distributed.shutdown()
"""



def _run_two_hosts(tmp_path: Path) -> list[Any]:
    """Start both processes, wait for both (or kill both), return each one's npz."""
    address = f"127.0.0.1:{free_loopback_port()}"
    script = _CHILD.format(tests=str(Path(__file__).parent), processes=PROCESSES)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("XLA_FLAGS", None)  # one device per process: the mesh spans the processes
    outs = [tmp_path / f"host{i}.npz" for i in range(PROCESSES)]
    logs = [(tmp_path / f"host{i}.log").open("w+") for i in range(PROCESSES)]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, address, str(i), str(outs[i])],
            stdout=logs[i],
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        for i in range(PROCESSES)
    ]
    supervise(children, logs, TIMEOUT_S)
    return [np.load(out) for out in outs]


def test_one_training_step_across_two_processes_matches_one_process(tmp_path: Path) -> None:
    hosts = _run_two_hosts(tmp_path)
    network, roots, named = training_step()

    # Both processes joined one job and saw a global mesh of one device each.
    for i, host in enumerate(hosts):
        assert int(host["process_count"]) == PROCESSES
        assert int(host["process_index"]) == i
        assert int(host["device_count"]) == PROCESSES and int(host["local_device_count"]) == 1
    # Each process held its own half of the batch rows, and the halves cover the batch.
    held = [list(host["x_rows"]) for host in hosts]
    assert sorted(r for rows in held for r in rows) == [0, BATCH // PROCESSES]
    assert held[0] != held[1]

    # The module each host ran is the one emitted here: it names a mesh, not machines.
    text = emit_network(
        network, roots, sharding=DataParallel(PROCESSES, (named["x"], named["labels"]))
    )
    for host in hosts:
        assert host["text"].tobytes().decode() == text
    assert f'sdy.mesh @mesh = <["data"={PROCESSES}]>' in text

    # The all-reduced loss and gradients reach both processes bit for bit alike: with two
    # partial sums, a + b and b + a are the same IEEE sum whichever way gloo adds them.
    count = len(roots)
    for k in range(count):
        assert (
            hosts[0][f"r{k}"].view(np.uint32).tolist() == hosts[1][f"r{k}"].view(np.uint32).tolist()
        ), k

    single = [t.numpy() for t in XlaExecutable.of_network(network, roots)(network.parameters(), {})]
    eps = float(np.finfo(np.float32).eps)
    # Envelope: only the order of the batch sums changes (two partial sums of 4 rows, then
    # a cross-process add, against XLA's own order over 8 rows); per-row work is the same
    # kernels. Each side is within (K+1)·eps·Σ|terms| of the exact sum, K = 8 terms of
    # magnitude <= 4 (the data's bound), so the two differ by at most 2·9·eps·32. The
    # updated weights subtract RATE times a gradient from an unchanged weight: RATE times
    # that gap, plus one rounding of half an ulp of the result on each side.
    envelope = 2 * 9 * eps * 32
    updates = range(1 + count // 2, count)
    for k in range(count):
        many = hosts[0][f"r{k}"].astype(np.float64)
        one = single[k].astype(np.float64)
        assert many.shape == one.shape, k
        bound = RATE * envelope + eps * float(np.max(np.abs(one))) if k in updates else envelope
        assert np.max(np.abs(many - one)) <= bound, (k, np.max(np.abs(many - one)), bound)
