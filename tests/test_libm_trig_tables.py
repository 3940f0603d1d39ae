"""The constants of topos.kernels.libm.trig, derived again with mpmath.

The sine, cosine and erf kernels read double-double tables and split constants written as
hex literals. Each is re-derived here from its definition at high precision, so a typo in a
literal (which could move a result by far more than the stated bound on a few inputs
only) cannot hide.
"""

from __future__ import annotations

import mpmath

from topos.kernels.libm import trig


def _double_double(value: mpmath.mpf) -> tuple[float, float]:
    hi = float(value)
    return hi, float(value - mpmath.mpf(hi))


def _hex_pair(row: tuple[str, str]) -> tuple[float, float]:
    return float.fromhex(row[0]), float.fromhex(row[1])


def test_sine_and_cosine_nodes_are_double_doubles_of_their_values() -> None:
    with mpmath.workprec(300):
        for j, row in enumerate(trig._SIN_COS_NODES):
            node = mpmath.mpf(j) / 64
            assert _hex_pair(row[:2]) == _double_double(mpmath.sin(node)), j
            assert _hex_pair(row[2:]) == _double_double(mpmath.cos(node)), j
    assert len(trig._SIN_COS_NODES) == trig._J_MAX + 1


def test_erf_nodes_are_double_doubles_of_erf_and_its_derivative() -> None:
    with mpmath.workprec(200):
        for offset, row in enumerate(trig._ERF_NODES):
            node = mpmath.mpf(trig._ERF_NODE_FIRST + offset) / 64
            assert _hex_pair(row[:2]) == _double_double(mpmath.erf(node)), node
            assert _hex_pair(row[2:]) == _double_double(2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-node * node)), node
    assert len(trig._ERF_NODES) == trig._ERF_NODE_LAST - trig._ERF_NODE_FIRST + 1


def test_series_coefficients_are_their_rationals_rounded() -> None:
    small = [(-1) ** n / (mpmath.factorial(n) * (2 * n + 1)) for n in range(1, len(trig._ERF_SMALL) + 1)]
    assert list(trig._ERF_SMALL) == [float(c) for c in small]
    assert trig._S3 == float(mpmath.mpf(-1) / 6) and trig._S5 == float(mpmath.mpf(1) / 120)
    assert trig._S7 == float(mpmath.mpf(-1) / 5040)
    assert trig._C4 == float(mpmath.mpf(1) / 24) and trig._C6 == float(mpmath.mpf(-1) / 720)


def test_pi_and_its_pieces() -> None:
    with mpmath.workprec(400):
        half_pi = mpmath.pi / 2
        assert (trig._PIO2_HI, trig._PIO2_LO) == _double_double(half_pi)
        assert trig._TWO_OVER_PI == float(2 / mpmath.pi)
        assert (trig.TWO_OVER_SQRTPI_HI, trig.TWO_OVER_SQRTPI_LO) == _double_double(2 / mpmath.sqrt(mpmath.pi))
        # Cody-Waite: three pieces of at most 33 bits, the fourth the rounded remainder.
        pieces = [trig._P1, -trig._NP2, -trig._NP3]
        for piece in pieces:
            mantissa = mpmath.mpf(piece) * mpmath.mpf(2) ** (-mpmath.floor(mpmath.log(abs(piece), 2)) + 32)
            assert mantissa == mpmath.floor(mantissa), piece
        remainder = half_pi - sum(mpmath.mpf(p) for p in pieces)
        assert -trig._NP4 == float(remainder)


def test_two_over_pi_digits_for_the_large_reduction() -> None:
    digits = trig._TWO_OVER_PI_CHUNKS
    with mpmath.workprec(24 * len(digits) + 64):
        scaled = int(mpmath.floor(2 / mpmath.pi * mpmath.mpf(2) ** (24 * len(digits))))
    expected = [(scaled >> (24 * (len(digits) - 1 - i))) & 0xFFFFFF for i in range(len(digits))]
    assert list(digits) == expected
    assert 24 * len(digits) >= 1200  # enough for the smallest reduced argument of any double
