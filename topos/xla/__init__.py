"""The XLA road: verify emitted StableHLO, compile it on XLA:CPU, run it with numpy arrays.

Contract:
- Needs the optional ``xla`` extra (``pip install 'topos-autodiff[xla]'``: jax and jaxlib 0.10.2).
  Importing this package never imports jax; the first call that needs it does, and a missing
  extra raises :class:`~topos.errors.XlaUnavailableError` saying how to install it.
- :func:`verify` parses and verifies any text with jaxlib's MLIR bindings and returns the
  MLIR diagnostics on failure (it never raises for bad text); ``strict=True`` also demands
  pure StableHLO (a portable artifact: no chlo, no sdy).
- :func:`compile_module` compiles a module once per (text, device count) and caches it.
  Every call checks the arrays against the module's signature first, because XLA itself
  only checks byte sizes; a mismatch raises :class:`~topos.errors.FeedError`.
- :class:`XlaExecutable` is a sealed, translated backend for one plan: ``forward(parameters,
  feeds)`` returns a :class:`~topos.state.Run` holding the plan's results, the
  same reading a numpy plan gives, so a training loop swaps one for the other in one line.
- Numerics are an envelope, never the reference bits: XLA:CPU flushes denormals to zero,
  contracts ``a*b+c`` into fused multiply-adds, sums in its own order and uses its own
  transcendentals. :func:`evaluate_module` (the StableHLO reference interpreter bundled
  with jaxlib) folds in the reference's order and reproduces its bits for the
  non-transcendental opcodes.
- Many devices: a module emitted with :class:`~topos.stages.stablehlo.DataParallel`, the
  FSDP policy :class:`~topos.stages.stablehlo.FullySharded` or a stated
  :class:`~topos.stages.stablehlo.Sharded` runs on its mesh's XLA devices through the SPMD
  partitioner (Shardy); ``CompiledModule.to_device`` / ``on_device`` keep arguments and
  results sharded on the devices between calls (``docs/sharding.md``). Asking for more
  devices than the process has raises :class:`XlaDeviceError`.

Where things live (this package only re-exports):
- :mod:`topos.xla.module` works on StableHLO text alone: jax loaded lazily, verification,
  signatures, the compile cache, :class:`CompiledModule`, running, the reference
  interpreter and export. It owns the road's mutable state (the jax handle, the lock, the
  caches, :data:`FAST_ROAD_FALLBACKS`): the names here are the same objects, but rebinding
  one here changes nothing, so a test that swaps state patches :mod:`topos.xla.module`.
- :mod:`topos.xla.executable` holds :class:`XlaExecutable`, the road over topos networks and
  plans; it imports the emission stage at module level.

Example:
    >>> import numpy as np
    >>> from topos import Tape
    >>> from topos import xla
    >>> network, y = Tape.record(lambda t: (t.input([1.0, 2.0]) * 3.0).sum())
    >>> executable = xla.XlaExecutable.of_network(network, [y])
    >>> executable.forward(network.parameters(), {}).of(y).scalar()
    9.0
"""

from topos.xla.executable import XlaExecutable
from topos.xla.module import COMPILE_CACHE_SIZE as COMPILE_CACHE_SIZE
from topos.xla.module import FAST_ROAD_FALLBACKS as FAST_ROAD_FALLBACKS
from topos.xla.module import IEEE_COMPILER_OPTIONS as IEEE_COMPILER_OPTIONS
from topos.xla.module import SIGNATURE_CACHE_SIZE as SIGNATURE_CACHE_SIZE
from topos.xla.module import Array as Array
from topos.xla.module import (
    CompiledModule,
    Signature,
    Verification,
    XlaDeviceError,
    available,
    compile_module,
    device_count,
    evaluate_module,
    exported_module,
    portable,
    run_module,
    signature,
    verify,
)

__all__ = [
    "CompiledModule", "Signature", "Verification", "XlaDeviceError", "XlaExecutable", "available",
    "compile_module", "device_count", "evaluate_module", "exported_module", "portable",
    "run_module", "signature", "verify"
]
