"""One "host" of a multi-process FSDP step: ``tests/test_multihost_fsdp.py`` starts P of these.

Run as ``python tests/multihost_fsdp_child.py ADDRESS PROCESS_ID PROCESSES OUT`` with
``XLA_FLAGS=--xla_force_host_platform_device_count=D`` (D host devices per process). The
processes meet through a coordinator on ``ADDRESS`` (127.0.0.1) and exchange collectives
through gloo pinned to loopback. Each one records ``tests/sharding_child.py``'s GPT step,
compiles it under ``FullySharded`` over ``Mesh({"data": P * D})`` and places only the pieces
its own devices hold (its rows of the batch, its pieces of every split parameter and
momentum) with ``jax.make_array_from_single_device_arrays``; it runs one step with
``compiled.on_device`` and writes its addressable result shards, with their index ranges,
to ``OUT`` (an npz and a JSON beside it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

address, process_id, processes, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])

import jax  # noqa: E402
import numpy as np  # noqa: E402

# jax's private pieces are used only here (as in tests/test_multihost.py), to pin gloo's
# listening socket to loopback: its default is the address the host name resolves to.
from jax._src import distributed, xla_bridge  # noqa: E402
from jax._src.lib import _jax  # noqa: E402

jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_cpu_collectives_implementation", "gloo")
xla_bridge.register_backend_factory(
    "cpu",
    lambda: xla_bridge.make_cpu_client(
        collectives=_jax.make_gloo_tcp_collectives(distributed_client=distributed.global_state.client, hostname="127.0.0.1")
    ),
    priority=0,
    fail_quietly=False,
)
jax.distributed.initialize(
    coordinator_address=address,
    coordinator_bind_address=address,
    num_processes=processes,
    process_id=process_id,
    initialization_timeout=60,
    heartbeat_timeout_seconds=30,
    shutdown_timeout_seconds=30,
)

import sharding_child as sc  # noqa: E402

from topos.xla import XlaExecutable  # noqa: E402


def ranges(index: tuple[slice, ...], shape: tuple[int, ...]) -> list[list[int]]:
    """A shard's index as [start, stop) per axis (a whole axis reads as [0, n))."""
    return [[s.start or 0, n if s.stop is None else s.stop] for s, n in zip(index, shape, strict=True)]


def main() -> dict[str, Any]:
    network, roots, weights, batch, momenta, _, policy = sc.policy_for("fsdp", jax.device_count())
    many = XlaExecutable.of_network(network, roots, sharding=policy)
    arrays = many.arrays(network.parameters(), {})
    wanted, given = many.compiled.shardings
    placed = []
    held: list[list[list[list[int]]]] = []
    for array, sharding in zip(arrays, wanted, strict=True):
        local = sharding.addressable_devices_indices_map(array.shape)
        # Only this process's slices are read and moved: no device of another process is touched.
        pieces = [jax.device_put(np.ascontiguousarray(array[index]), device) for device, index in local.items()]
        placed.append(jax.make_array_from_single_device_arrays(array.shape, sharding, pieces))
        held.append([ranges(index, array.shape) for index in local.values()])
    results = many.compiled.on_device(placed)
    shards: dict[str, Any] = {}
    where: list[list[list[list[int]]]] = []
    for k, result in enumerate(results):
        where.append([])
        for j, shard in enumerate(result.addressable_shards):
            shards[f"r{k}_{j}"] = np.asarray(shard.data)
            where[-1].append(ranges(shard.index, result.shape))
    np.savez(out, **shards)
    count = len(weights)
    carried = [many.position_of(s) for s in (*weights, *momenta)]
    updated = results[1 + count :]
    # Each updated parameter and momentum comes back laid out as the next step takes it.
    kept = [bool(r.sharding.is_equivalent_to(wanted[p], r.ndim)) for r, p in zip(updated, carried, strict=True) if p is not None]
    report = {
        "process_count": jax.process_count(),
        "process_index": jax.process_index(),
        "device_count": jax.device_count(),
        "local_device_count": jax.local_device_count(),
        "held": held,
        "results": where,
        "shapes": [list(r.shape) for r in results],
        "kept": kept,
        "carried": carried,
        "batch": [many.position_of(s) for s in batch],
        "fully_addressable": [bool(r.is_fully_addressable) for r in results],
        "text_bytes": len(many.text),
        "given": len(given),
    }
    jax.distributed.shutdown()
    return report


if __name__ == "__main__":
    Path(f"{out}.json").write_text(json.dumps(main()), encoding="utf-8")
