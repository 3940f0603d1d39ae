"""The portable float32 maps are correctly rounded: bit for bit against an independent reference.

- every map (``topos.kernels.libm.evaluate`` on float32, SQRT included) on 2**20 fixed
  inputs: uniformly random bit patterns, every float32 in narrow windows around the map's
  hard regions (zero and the subnormals, overflow and underflow thresholds, saturation
  points, near 1 for log and -1 for log1p, multiples of pi/2 and huge arguments for sin and
  cos), integers and half-integers, in-range values, and the special values; compared with
  ``tests/libm_reference.py`` (long double with a stated bound, mpmath where that does not
  decide). ``pow`` on 2**18 sampled pairs plus IEEE 754's special-case table;
- the reference itself: against mpmath alone on a sample, its special values, its long
  double to float32 cast, the erf saturation threshold;
- the harness finds misroundings: numpy's own float32 ufuncs and a candidate with one ulp
  added to one lane are reported;
- ``pytest -m libm_exhaustive`` (or ``TOPOS_LIBM_EXHAUSTIVE=1``): all 2**32 inputs of every
  map through ``tests/libm_exhaustive.py``; slice files go to ``$TOPOS_LIBM_EXHAUSTIVE_OUT``
  (resumable) or a temporary folder.
"""

from __future__ import annotations

import functools
import json
import math
import os
import zlib
from pathlib import Path
from typing import Any

import libm_exhaustive
import libm_reference as ref
import numpy as np
import pytest

from topos.ir.ops import MapOperation
from topos.kernels import libm

Array = np.ndarray[Any, Any]

try:
    ref.require_long_double()
    _NO_LONG_DOUBLE = ""
except ref.LongDoubleUnavailable as error:  # pragma: no cover - x86_64 Linux has it
    _NO_LONG_DOUBLE = str(error)
pytestmark = pytest.mark.skipif(bool(_NO_LONG_DOUBLE), reason=_NO_LONG_DOUBLE or "x87 long double")

INPUTS = 2**20
PAIRS = 2**18
WINDOW = 2**12  # float32 neighbours taken either side of a hard point
OPERATIONS = {name: MapOperation[op] for name, op in libm_exhaustive.OPERATION_NAMES.items()}
assert set(OPERATIONS.values()) == set(MapOperation)

# Points where float32 results change character, and where implementations switch methods.
# The thresholds are where the true value crosses a float32 rounding boundary (derived with
# mpmath: for example exp overflows past ln(2**128 - 2**103), tanh rounds to 1 once
# 1 - tanh(x) <= 2**-25).
HARD: dict[str, list[float]] = {
    "exp": [88.72283908, 88.0, -87.33654475, -103.27892990, -103.97207708, 0.6931472, -0.6931472, 1.0, -1.0, 10.0, 2.0**-25],
    "log": [1.0, 2.0, 0.5, math.e, 1.0 / math.e, 0.75, 1.5, 10.0, 3.4e38],
    "sqrt": [1.0, 2.0, 4.0, 0.5, 3.0, 1e-40, 3.4e38],
    "tanh": [9.01091334, 0.55, 0.5, 1.0, 2.0**-12, 2.0**-13, 0.625, 5.0, 20.0, 2.0**-25],
    "sin": [1.0, 2.0**-12, 1e4, 1e8, 1e16, 1e22, 1e30, 3.0e38, 0.785398163, 2.0**-25],
    "cos": [1.0, 2.0**-12, 1e4, 1e8, 1e16, 1e22, 1e30, 3.0e38, 0.785398163, 2.0**-25],
    "log1p": [-1.0, -0.99, -0.5, 0.5, 1.0, math.e - 1, 2.0**-24, 2.0**-12, 1e30, -0.29289322, 0.41421356],
    "expm1": [88.72283908, -17.32867951, -0.34657359, 0.34657359, 0.6931472, 1.0, -1.0, 2.0**-24, 2.0**-12, -88.0],
    "erf": [3.91920590, 0.5, 0.84375, 1.0, 1.25, 2.0, 2.0**-12, 2.0**-25, 3.0, 6.0],
    "erf_derivative": [9.35186222, 10.16856490, 10.20259081, 2.0**-12, 1.7e-4, 0.5, 1.0, 2.0, 4.0],
    "atan": [62919774.0, 1.0, 2.0**-12, 2.0**-25, 16.0, 2.41421356, 0.41421356, 0.4375, 1e10, 3.4e38],
}
# Uniform in-range draws per map.
DOMAIN: dict[str, tuple[float, float]] = {
    "exp": (-104.0, 89.0),
    "log": (0.0, 10.0),
    "sqrt": (0.0, 100.0),
    "tanh": (-10.0, 10.0),
    "sin": (-100.0, 100.0),
    "cos": (-100.0, 100.0),
    "log1p": (-1.0, 10.0),
    "expm1": (-20.0, 89.0),
    "erf": (-4.0, 4.0),
    "erf_derivative": (-11.0, 11.0),
    "atan": (-10.0, 10.0),
}

SPECIAL_BITS = np.array(
    [
        0x00000000, 0x80000000,  # ±0
        0x7F800000, 0xFF800000,  # ±inf
        0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF,  # quiet, negative, signalling NaNs
        0x00000001, 0x80000001,  # ±smallest subnormal
        0x007FFFFF, 0x807FFFFF,  # ±largest subnormal
        0x00800000, 0x80800000,  # ±smallest normal
        0x7F7FFFFF, 0xFF7FFFFF,  # ±largest normal
        0x3F800000, 0xBF800000,  # ±1
    ],
    dtype=np.uint32,
)  # fmt: skip


def _around(value: float, half: int = WINDOW) -> Array:
    """The bit patterns of the ``2 * half`` float32 values nearest ``value`` (and of its
    negation), clipped to the finite range and zero."""
    centre = int(np.float32(abs(value)).view(np.uint32))
    low, high = max(0, centre - half), min(0x7F7FFFFF, centre + half)
    bits = np.arange(low, high + 1, dtype=np.uint32)
    return np.concatenate([bits, bits | np.uint32(0x80000000)])


def _pi_multiples(count: int, rng: np.random.Generator) -> list[float]:
    """float32 values nearest ``k * pi/2``, for small ``k`` and for ``k`` up to ~2**100."""
    ks = list(range(1, 33)) + [int(k) for k in 2.0 ** rng.uniform(5, 100, count)]
    return [k * math.pi / 2 for k in ks]


def map_inputs(name: str) -> Array:
    """The fixed float32 inputs of ``name`` (2**20 of them, seeded by the name)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    parts = [SPECIAL_BITS, _around(0.0, 2 * WINDOW)]
    for point in (2.0**-126, 2.0**-149 * 2**22, 2.0**-24, 1.0, 3.4e38):  # common edges
        parts.append(_around(point, WINDOW // 4))
    for point in HARD[name]:
        parts.append(_around(point))
    if name in ("sin", "cos"):
        parts += [_around(p, 64) for p in _pi_multiples(96, rng)]
    integers = np.arange(-2048, 2049, dtype=np.float32)
    halves = np.arange(-512, 512, dtype=np.float32) + np.float32(0.5)
    low, high = DOMAIN[name]
    uniform = rng.uniform(low, high, 2**16).astype(np.float32)
    parts += [integers.view(np.uint32), halves.view(np.uint32), uniform.view(np.uint32)]
    chosen = np.concatenate(parts)
    if chosen.size > INPUTS // 2:
        raise AssertionError(f"{name}: {chosen.size} window inputs leave too few random ones")
    random_bits = rng.integers(0, 2**32, INPUTS - chosen.size, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([chosen, random_bits]).view(np.float32)


@functools.cache
def reference(name: str) -> tuple[Array, Array]:
    x = map_inputs(name)
    return x, ref.correctly_rounded_f32(name, x)


def describe(x: Array, got: Array, want: Array, lanes: Array, limit: int = 12) -> str:
    rows = []
    for lane in lanes[:limit]:
        rows.append(
            f"  x=0x{int(x.view(np.uint32)[lane]):08x} ({float(x[lane])!r}): "
            f"got 0x{int(got.view(np.uint32)[lane]):08x} ({float(got[lane])!r}), "
            f"want 0x{int(want.view(np.uint32)[lane]):08x} ({float(want[lane])!r})"
        )
    return f"{lanes.size} of {x.size} lanes misrounded:\n" + "\n".join(rows)


# --- the maps -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_map_is_correctly_rounded(name: str) -> None:
    x, want = reference(name)
    got = libm.evaluate(OPERATIONS[name], x)
    assert got.dtype == np.float32 and got.shape == x.shape
    lanes = ref.mismatches(got, want)
    assert lanes.size == 0, f"{name}: " + describe(x, got, want, lanes)


def pow_inputs() -> tuple[Array, Array]:
    """2**18 fixed (a, b) pairs over pow's hard regions, then random bit patterns."""
    rng = np.random.default_rng(20260501)
    f32 = np.float32
    finite = rng.integers(0, 0x7F800000, 2**16, dtype=np.uint64).astype(np.uint32).view(f32)
    parts_a = [finite]
    parts_b = [rng.uniform(-8, 8, 2**16).astype(f32)]
    # Results near overflow, the subnormal boundary and the last subnormal: b ~ t / log2(a).
    base = (2.0 ** rng.uniform(-20, 20, 2**15)).astype(f32)
    targets = rng.choice(np.array([128.0, 127.99, -126.0, -149.0, -150.0, 64.0]), 2**15)
    logs = np.log2(base.astype(np.float64))
    logs[logs == 0] = 1.0
    parts_a.append(base)
    parts_b.append((targets / logs * (1 + rng.normal(0, 2.0**-22, 2**15))).astype(f32))
    # Bases next to 1 with large exponents: (1 + e)**b.
    near_one = (np.uint32(0x3F800000) + rng.integers(-(2**12), 2**12, 2**15)).astype(np.uint32).view(f32)
    parts_a.append(near_one)
    parts_b.append((rng.choice([-1.0, 1.0], 2**15) * 2.0 ** rng.uniform(0, 30, 2**15)).astype(f32))
    # Negative bases with integer exponents (the sign of odd powers).
    parts_a.append(-(2.0 ** rng.uniform(-10, 10, 2**15)).astype(f32))
    parts_b.append(rng.integers(-40, 41, 2**15).astype(f32))
    # Exact results and exact float32 midpoints: squares of 13-bit values, roots of squares.
    short = (rng.integers(2**12, 2**13, 2**13) * 2.0 ** rng.integers(-20, 20, 2**13)).astype(f32)
    parts_a += [short, (short.astype(np.float64) ** 2).astype(f32), short]
    parts_b += [np.full(2**13, 2.0, f32), rng.choice(np.array([0.5, 1.5], f32), 2**13), np.full(2**13, -2.0, f32)]
    a = np.concatenate(parts_a)
    b = np.concatenate(parts_b)
    rest = PAIRS - a.size
    random_a = rng.integers(0, 2**32, rest, dtype=np.uint64).astype(np.uint32).view(f32)
    random_b = rng.integers(0, 2**32, rest, dtype=np.uint64).astype(np.uint32).view(f32)
    return np.concatenate([a, random_a]), np.concatenate([b, random_b])


def test_pow_is_correctly_rounded() -> None:
    a, b = pow_inputs()
    want = ref.correctly_rounded_pow_f32(a, b)
    got = libm.power(a, b)
    lanes = ref.mismatches(got, want)
    detail = [
        f"  pow({float(a[i])!r}, {float(b[i])!r}): got {float(got[i])!r}, want {float(want[i])!r}"
        for i in lanes[:12]
    ]
    assert lanes.size == 0, f"{lanes.size} of {a.size} pairs misrounded:\n" + "\n".join(detail)


INF, NAN = math.inf, math.nan
# IEEE 754-2019 9.2.1 / C99 F.9.4.4, each as (a, b, result).
POW_SPECIAL = [
    (NAN, 0.0, 1.0), (NAN, -0.0, 1.0), (INF, 0.0, 1.0), (-3.0, -0.0, 1.0),
    (1.0, NAN, 1.0), (1.0, INF, 1.0), (1.0, -INF, 1.0), (1.0, 3.5, 1.0),
    (NAN, 2.0, NAN), (2.0, NAN, NAN), (-1.0, NAN, NAN),
    (0.0, -3.0, INF), (-0.0, -3.0, -INF), (0.0, -2.0, INF), (-0.0, -2.0, INF),
    (-0.0, -0.5, INF), (-0.0, -INF, INF), (0.0, -INF, INF),
    (0.0, 3.0, 0.0), (-0.0, 3.0, -0.0), (-0.0, 2.0, 0.0), (-0.0, 0.5, 0.0), (-0.0, INF, 0.0),
    (-1.0, INF, 1.0), (-1.0, -INF, 1.0),
    (0.5, -INF, INF), (-0.5, -INF, INF), (2.0, -INF, 0.0), (-2.0, -INF, 0.0),
    (0.5, INF, 0.0), (-0.5, INF, 0.0), (2.0, INF, INF), (-2.0, INF, INF),
    (-INF, -3.0, -0.0), (-INF, -2.0, 0.0), (-INF, -0.5, 0.0),
    (-INF, 3.0, -INF), (-INF, 2.0, INF), (-INF, 0.5, INF),
    (INF, -1.0, 0.0), (INF, -INF, 0.0), (INF, 0.5, INF), (INF, INF, INF),
    (-2.0, 0.5, NAN), (-8.0, 1.0 / 3.0, NAN), (-INF, NAN, NAN),
    (-2.0, 3.0, -8.0), (-2.0, 2.0, 4.0), (-2.0, -1.0, -0.5), (-1.0, 3.0, -1.0), (-1.0, 2.0**30, 1.0),
    (-2.0, 2.0**30, INF), (-2.0, -(2.0**30), 0.0), (-0.5, 2.0**30, 0.0), (-0.5, -(2.0**30) - 128, INF),
    (-2.0, 127.0, -(2.0**127)), (-2.0, 128.0, INF), (-2.0, 129.0, -INF), (-2.0, -149.0, -(2.0**-149)),
    (2.0, -150.0, 0.0), (-2.0, -151.0, -0.0), (2.0, 0.5, float(np.float32(math.sqrt(2.0)))),
    (3.4028234663852886e38, 2.0, INF), (1.401298464324817e-45, 0.5, float(np.float32(2.0**-74.5))),
]  # fmt: skip


def test_pow_special_cases() -> None:
    a = np.array([case[0] for case in POW_SPECIAL], np.float32)
    b = np.array([case[1] for case in POW_SPECIAL], np.float32)
    want = np.array([case[2] for case in POW_SPECIAL], np.float32)
    for label, got in (("reference", ref.correctly_rounded_pow_f32(a, b)), ("topos", libm.power(a, b))):
        lanes = ref.mismatches(got, want)
        detail = [f"  pow({POW_SPECIAL[i][0]!r}, {POW_SPECIAL[i][1]!r}) = {float(got[i])!r}" for i in lanes]
        assert lanes.size == 0, f"{label}:\n" + "\n".join(detail)


# --- the reference --------------------------------------------------------------------------

PI_2 = float(np.float32(math.pi / 2))
C = float(np.float32(2 / math.sqrt(math.pi)))
# Each map at -inf, -1, -0, +0, +inf, NaN (C99 Annex F; erf_derivative(+-0) is 2/sqrt(pi)).
UNARY_SPECIAL = {
    "exp": [0.0, float(np.float32(1 / math.e)), 1.0, 1.0, INF, NAN],
    "log": [NAN, NAN, -INF, -INF, INF, NAN],
    "sqrt": [NAN, NAN, -0.0, 0.0, INF, NAN],
    "tanh": [-1.0, float(np.float32(math.tanh(-1))), -0.0, 0.0, 1.0, NAN],
    "sin": [NAN, float(np.float32(math.sin(-1))), -0.0, 0.0, NAN, NAN],
    "cos": [NAN, float(np.float32(math.cos(-1))), 1.0, 1.0, NAN, NAN],
    "log1p": [NAN, -INF, -0.0, 0.0, INF, NAN],
    "expm1": [-1.0, float(np.float32(math.expm1(-1))), -0.0, 0.0, INF, NAN],
    "erf": [-1.0, float(np.float32(math.erf(-1))), -0.0, 0.0, 1.0, NAN],
    "erf_derivative": [0.0, float(np.float32(2 / math.sqrt(math.pi) / math.e)), C, C, 0.0, NAN],
    "atan": [-PI_2, float(np.float32(-math.pi / 4)), -0.0, 0.0, PI_2, NAN],
}


@pytest.mark.parametrize("name", list(UNARY_SPECIAL))
def test_reference_special_values(name: str) -> None:
    x = np.array([-INF, -1.0, -0.0, 0.0, INF, NAN], np.float32)
    want = np.array(UNARY_SPECIAL[name], np.float32)
    got = ref.correctly_rounded_f32(name, x)
    assert ref.mismatches(got, want).size == 0, f"{name}: {got.tolist()} != {want.tolist()}"


@pytest.mark.parametrize("name", [*OPERATIONS, "pow"])
def test_reference_agrees_with_mpmath_alone(name: str) -> None:
    # The long double path on a sample of the same inputs (windows and random alike), each
    # lane settled by mpmath alone: a violation of the assumed long double bound big enough
    # to matter would show here.
    rng = np.random.default_rng(7)
    if name == "pow":
        a, b = pow_inputs()
        pick = rng.choice(a.size, 2000, replace=False)
        a, b = a[pick], b[pick]
        fast = ref.correctly_rounded_pow_f32(a, b)
        arguments = list(zip(a.tolist(), b.tolist(), strict=True))
    else:
        x, full = reference(name)
        pick = rng.choice(x.size, 2000, replace=False)
        fast = full[pick]
        arguments = [(v,) for v in x[pick].tolist()]
    checked = 0
    for lane, args in enumerate(arguments):
        if not np.isfinite(fast[lane]) or fast[lane] == 0 or not all(map(math.isfinite, args)):
            continue  # special values: the tables above
        if name == "pow" and args[0] < 0 and not float(args[1]).is_integer():
            continue
        checked += 1
        slow = ref.settle_one(name, tuple(args))
        assert slow.view(np.uint32) == fast[lane].view(np.uint32), f"{name}{args}: {fast[lane]!r} != mpmath {slow!r}"
    assert checked >= 400


def test_reference_erf_series_against_mpmath() -> None:
    # The hand-written series where its cancellation is worst (|x| near 4) and where it is
    # trivial (tiny and subnormal x): every lane against mpmath.
    rng = np.random.default_rng(11)
    x = np.concatenate(
        [
            rng.uniform(3.0, 4.0, 300),
            rng.uniform(0.5, 3.0, 200),
            2.0 ** rng.uniform(-149, -10, 200),
            np.nextafter(np.float32(4.0), np.float32(0)) - np.arange(20, dtype=np.float32) * np.float32(2**-21),
        ]
    ).astype(np.float32)
    x = np.concatenate([x, -x])
    fast = ref.correctly_rounded_f32("erf", x)
    slow = np.array([ref.settle_one("erf", (v,)) for v in x.tolist()], np.float32)
    assert ref.mismatches(fast, slow).size == 0


def test_erf_saturates_below_the_series_cutoff() -> None:
    threshold = ref.erf_saturation_f32()
    assert 3.9192 < threshold < 3.9193 < 4.0
    below = float(np.nextafter(np.float32(threshold), np.float32(0)))
    assert ref.settle_one("erf", (below,)) < 1.0
    assert ref.correctly_rounded_f32("erf", np.array([below, threshold], np.float32)).tolist() == [
        float(np.float32(1.0) - np.float32(2.0**-24)),
        1.0,
    ]


def test_long_double_cast_rounds_once() -> None:
    assert ref.cast_is_single_rounding() == []


def test_reference_settles_exact_pow_ties_to_even() -> None:
    # Exact float32 midpoints, which round to the even neighbour:
    # (1 + 2**-12)**2 = 1 + 2**-11 + 2**-24 (down to 1 + 2**-11);
    # (1 + 3 * 2**-12)**2 = 1 + 12292.5 * 2**-23 (down to 12292);
    # 257**3 = 66049**1.5 = 16974593, odd with 25 bits (down to 16974592).
    a = np.array([1 + 2**-12, 1 + 3 * 2**-12, 257.0, 66049.0], np.float32)
    b = np.array([2.0, 2.0, 3.0, 1.5], np.float32)
    want = [1 + 2**-11, 1 + 12292 * 2**-23, 16974592.0, 16974592.0]
    assert ref.correctly_rounded_pow_f32(a, b).tolist() == want
    assert [float(ref.settle_one("pow", (float(p), float(q)))) for p, q in zip(a, b, strict=True)] == want


# --- the harness catches misroundings -------------------------------------------------------


@pytest.mark.parametrize("name", ["exp", "sin"])
def test_harness_reports_numpys_own_misroundings(name: str) -> None:
    x, want = reference(name)
    with np.errstate(all="ignore"):
        stand_in = libm_exhaustive.numpy_candidate(name, x)
    lanes = ref.mismatches(stand_in, want)
    # numpy's float32 SIMD maps are within a few ulps, not correctly rounded.
    assert lanes.size > 100, f"numpy's float32 {name} matched the reference in all but {lanes.size} lanes"
    assert np.all(np.abs(stand_in.view(np.int32)[lanes].astype(np.int64) - want.view(np.int32)[lanes]) < 16)


def test_harness_reports_a_single_ulp() -> None:
    x, want = reference("exp")
    tampered = libm.evaluate(MapOperation.EXP, x)
    lane = 123457
    tampered[lane] = np.nextafter(tampered[lane], np.float32(np.inf))
    assert ref.mismatches(tampered, want).tolist() == [lane]
    assert ref.mismatches(np.full(4, np.nan, np.float32), np.array([np.nan, -np.nan, np.inf, 0], np.float32)).tolist() == [2, 3]


def _copy_libm(tmp_path: Path, edit: Any = None) -> Path:
    folder = tmp_path / "libm"
    folder.mkdir()
    for path in sorted(libm_exhaustive.LIBM.glob("*.py")):
        text = path.read_text()
        (folder / path.name).write_text(edit(path.name, text) if edit else text)
    return folder


def test_fingerprint_keeps_docstrings_comments_and_the_package_out(tmp_path: Path) -> None:
    # A slice proved against the sources stays proved when only words or the package move.
    def reword(name: str, text: str) -> str:
        text = text.replace("topos.kernels.libm", "topos.backends.libm").replace("# ", "#  ")
        return text.replace('"""', '"""Reworded. ', 1) if name == "core.py" else text

    assert libm_exhaustive.sources_fingerprint(_copy_libm(tmp_path, reword)) == libm_exhaustive.fingerprint("topos")


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [("core.py", "134217729.0", "134217728.0"), ("expfamily.py", "x", "x_"), ("__init__.py", "import exact", "import exact as exact_")],
)
def test_fingerprint_sees_every_change_of_code(tmp_path: Path, name: str, old: str, new: str) -> None:
    def change(file: str, text: str) -> str:
        assert file != name or old in text, f"{old!r} is not in {file}"
        return text.replace(old, new) if file == name else text

    assert libm_exhaustive.sources_fingerprint(_copy_libm(tmp_path, change)) != libm_exhaustive.fingerprint("topos")


def test_adopt_refuses_sources_that_compute_otherwise(tmp_path: Path) -> None:
    older = _copy_libm(tmp_path, lambda f, t: t.replace("134217729.0", "134217728.0") if f == "core.py" else t)
    out = tmp_path / "out" / "exp"
    out.mkdir(parents=True)
    record = {"candidate": "topos", "sources": libm_exhaustive.text_fingerprint(older), "count": 1}
    (out / "slice-000.json").write_text(json.dumps(record))
    with pytest.raises(SystemExit, match="must be checked again"):
        libm_exhaustive.adopt(tmp_path / "out", older)
    assert json.loads((out / "slice-000.json").read_text()) == record


def test_adopt_takes_slices_of_equivalent_sources(tmp_path: Path) -> None:
    older = _copy_libm(tmp_path, lambda f, t: t.replace("topos.kernels.libm", "topos.backends.libm"))
    out = tmp_path / "out" / "exp"
    out.mkdir(parents=True)
    old = libm_exhaustive.text_fingerprint(older)
    (out / "slice-000.json").write_text(json.dumps({"candidate": "topos", "sources": old, "count": 1}))
    (out / "slice-001.json").write_text(json.dumps({"candidate": "topos", "sources": "elsewhere", "count": 1}))
    assert libm_exhaustive.adopt(tmp_path / "out", older) == 1
    assert json.loads((out / "slice-000.json").read_text()) == {
        "candidate": "topos",
        "sources": libm_exhaustive.fingerprint("topos"),
        "count": 1,
        "checked_sources": old,
    }
    assert json.loads((out / "slice-001.json").read_text())["sources"] == "elsewhere"


# --- every input (opt-in) -------------------------------------------------------------------


def _exhaustive_selected(config: pytest.Config) -> bool:
    expression = str(config.getoption("-m") or "")
    chosen = "libm_exhaustive" in expression and "not libm_exhaustive" not in expression
    return os.environ.get("TOPOS_LIBM_EXHAUSTIVE") == "1" or chosen


@pytest.mark.libm_exhaustive
def test_libm_exhaustive(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # Hours of CPU: every map's 256 slices, one worker process per available core. Slice files
    # go to $TOPOS_LIBM_EXHAUSTIVE_OUT when set, so a stopped run resumes where it was;
    # $TOPOS_LIBM_EXHAUSTIVE_SLICES (A:B) checks part of the range.
    if not _exhaustive_selected(request.config):
        pytest.skip("opt-in: run with -m libm_exhaustive or TOPOS_LIBM_EXHAUSTIVE=1")
    out = Path(os.environ.get("TOPOS_LIBM_EXHAUSTIVE_OUT") or tmp_path)
    slices = libm_exhaustive.parse_slices(os.environ.get("TOPOS_LIBM_EXHAUSTIVE_SLICES") or "0:256")
    jobs = max(1, len(os.sched_getaffinity(0)))
    libm_exhaustive.run(list(OPERATIONS), slices, out, jobs=jobs)
    table = libm_exhaustive.summary(out)
    (out / "summary.md").write_text(table)
    totals = libm_exhaustive.totals(out, list(OPERATIONS), slices=slices)
    assert all(count == len(slices) * libm_exhaustive.SLICE_SIZE for count, _ in totals.values()), table
    assert not any(bad for _, bad in totals.values()), table
