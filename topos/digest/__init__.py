"""SHA-256 digests of exact training runs: one hex string that stands for every bit of a run.

Contract:
- :func:`digest_run` trains a recorded network for ``steps`` steps of plain SGD
  (``p - g * rate`` for every parameter, the same fixed ``rate`` throughout) through one
  plan lowered under ``Numerics.EXACT``: the network's gradient (recorded once, with respect
  to every parameter, by :func:`topos.stages.gradient.gradient`) is lowered with
  ``longer.entry([*roots, *gradients]).numerics(Numerics.EXACT).lower()``, and each step is
  one ``plan.forward(parameters, feeds(step))`` followed by ``parameters.step`` under
  :meth:`~topos.ir.numerics.Numerics.exactly`. The first root is the loss (rank 0) that SGD descends; every
  root is hashed at every step, so a job can pin forward values the loss would hide.
- The feeds of step ``k`` are a pure function of ``k``: :func:`uniform_draws`,
  :func:`index_draws` and :func:`bit_draws` draw them from :func:`topos.init.splitmix64`
  (integer arithmetic, then at most two IEEE-rounded f64 operations), never from
  ``numpy.random``, whose samplers call the platform's libm. Without ``feeds`` every input
  keeps its recorded default.
- What is hashed, in this order (every integer 8 bytes little-endian, every tensor its shape
  then its bits as little-endian unsigned integers of the element's width, row-major; so the
  byte stream is the same on a big-endian machine and for any memory layout):
  the lines ``FORMAT``, the element's name and ``nans=MODE`` (UTF-8, each ending in a
  newline), the step count, the rate as a little-endian f64, the numbers of roots and of
  parameter slots; then for each step every root and every parameter's
  gradient, in root order and slot (recording) order; then every parameter's final payload.
  :func:`digest_run` returns the SHA-256 of that stream as 64 hex digits.
- NaNs: by default (``nans="canonical"``) every NaN is hashed as the element's one quiet
  NaN, so a digest pins every other bit and which values are NaN, but not a NaN's sign or
  payload. Those are not portable today: which of two NaNs survives ``NaN + NaN`` depends on
  numpy's CPU dispatch (measured with numpy 2.4 on x86-64: the dispatched ``add`` loop keeps
  the first operand, the baseline loop the second; ``every-op`` differs between those two
  settings of ``.ci/portability.py`` in NaN signs only), and IEEE 754 leaves the sign of the NaN an invalid operation makes
  (``inf - inf``, ``0 * inf``) to the hardware (x86 sets it, ARM clears it).
  ``nans="bits"`` hashes NaNs as they are; the mode is hashed too, so the two never agree.
- :data:`JOBS` are the named digests (``every-op``, ``makemore``, ``lenet``, ``gpt``), each
  in f32, f64 and bf16 at smoke sizes (each job's ``sizes`` says which). The committed table
  ``topos/assets/digests.json`` holds their digests; ``python -m topos.digest --write``
  regenerates it and ``python -m topos.digest --check`` recomputes every entry, prints each
  mismatch and exits 1 on any. A digest changes whenever any bit of any kernel's output
  changes (a new transcendental kernel included): regenerate the table in the same change.

Where each part lives: :mod:`topos.digest.run` (the draws, the hashed stream,
:func:`digest_run`), :mod:`topos.digest.jobs` (the named :data:`JOBS`) and
:mod:`topos.digest.table` (the committed table and ``python -m topos.digest``). This
package re-exports every public name of the three.

Example:
    >>> from topos import Tape, f64
    >>> def line(tape):
    ...     w = tape.parameter(0.5)
    ...     x = tape.input(2.0)
    ...     return (w * x - 1.0) * (w * x - 1.0), w
    >>> network, (loss, w) = Tape.record(line, element=f64)
    >>> digest = digest_run(network, [loss, w], steps=3)
    >>> len(digest), digest == digest_run(network, [loss, w], steps=3)
    (64, True)
"""

from __future__ import annotations

from topos.digest.jobs import (
    GPT,
    JOBS,
    LENET,
    MAKEMORE,
    GptSizes,
    Job,
    LenetSizes,
    MakemoreSizes,
    Prepared,
    special_values,
)
from topos.digest.run import (
    ELEMENTS,
    FORMAT,
    NAN_MODES,
    RATE,
    bit_draws,
    digest_run,
    index_draws,
    uniform_draws,
)
from topos.digest.table import TABLE, check, compute, main, read_table, write_table

__all__ = [
    "ELEMENTS",
    "FORMAT",
    "GPT",
    "JOBS",
    "LENET",
    "MAKEMORE",
    "NAN_MODES",
    "RATE",
    "TABLE",
    "GptSizes",
    "Job",
    "LenetSizes",
    "MakemoreSizes",
    "Prepared",
    "bit_draws",
    "check",
    "compute",
    "digest_run",
    "index_draws",
    "main",
    "read_table",
    "special_values",
    "uniform_draws",
    "write_table",
]
