"""The exact kernels call only numpy operations whose bits every machine computes alike.

Read from the sources: every ``np.<name>`` (and ``math.<name>``) that the portable maps and
the reference kernels reach must be on the list below, and none of them may raise to a
power with ``**`` or call a reducing method (``.sum()``, ``.dot()``, ...). The list holds
what IEEE 754 rounds exactly (``+ - * /``, ``sqrt``, comparisons, conversions,
round-to-integral), selections and copies, integer operations, and the reference's ordered
folds (``add.accumulate`` adds left to right; ``maximum.reduce`` and ``add.at`` have no
rounding that order could change but the one the reference states). Anything else
(numpy's SIMD transcendentals, BLAS, pairwise sums, the platform's libm) fails here.

A second check runs the exact roads with those calls poisoned (see
``test_exact_roads_never_call_a_machine_map``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBM = sorted((ROOT / "topos" / "kernels" / "libm").glob("*.py"))
EXACT_MODULES = [*LIBM, ROOT / "topos" / "kernels" / "reference.py"]

# Elementwise operations IEEE 754 rounds exactly, selections, copies and bit operations.
ALLOWED_NUMPY = frozenset(
    {
        # arithmetic rounded once by IEEE 754
        "add", "subtract", "multiply", "divide", "negative", "absolute", "abs", "sqrt",
        # comparisons, logic, selection
        "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "where",
        "logical_and", "logical_or", "logical_not", "isnan", "isinf", "isfinite", "signbit",
        "copysign", "minimum", "maximum", "nextafter",
        # round to integral (exact by definition)
        "rint", "floor", "trunc", "ceil",
        # integers and bits
        "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift",
        # building, copying and indexing arrays
        "array", "asarray", "ascontiguousarray", "empty", "empty_like", "zeros", "zeros_like",
        "full", "full_like", "ones", "broadcast", "broadcast_to", "broadcast_arrays", "squeeze",
        "flatnonzero", "nonzero", "unique", "stack", "concatenate", "arange", "take", "linspace",
        # dtypes, scalars and the warning scope
        "float64", "float32", "float16", "int64", "int32", "uint64", "uint32", "uint16",
        "bool_", "True_", "False_", "inf", "nan", "ndarray", "dtype", "errstate", "finfo",
    }
)
# Ordered folds of the reference kernels (their order is the contract's, not numpy's choice).
ALLOWED_METHODS = frozenset({"add.accumulate", "maximum.reduce", "add.at"})
FORBIDDEN_ARRAY_METHODS = frozenset({"sum", "prod", "dot", "cumsum", "cumprod", "mean", "std", "var"})


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


# libm/exact.py settles the rare open float32 lanes in exact arithmetic: Python integers,
# fractions and mpmath, where raising to a power and an integer square root are exact.
EXACT_ARITHMETIC = "exact.py"


def _calls(path: Path) -> list[tuple[int, str]]:
    """(line, what) for each numpy or math name used and each forbidden construct."""
    exact = path.name == EXACT_ARITHMETIC and path.parent.name == "libm"
    found: list[tuple[int, str]] = []
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = _dotted(node)
            if name is None:
                continue
            head, _, rest = name.partition(".")
            if head in ("np", "numpy") and rest:
                parts = rest.split(".")
                if rest in ALLOWED_METHODS:
                    continue
                if len(parts) == 1 and parts[0] in ALLOWED_NUMPY:
                    continue
                ufunc = isinstance(getattr(np, parts[0], None), np.ufunc)
                if len(parts) > 1 and parts[0] in ALLOWED_NUMPY and not ufunc:
                    continue  # an attribute of a dtype or constant (np.float64.view)
                found.append((node.lineno, f"np.{rest}"))
            elif head == "math" and rest and not (exact and rest == "isqrt"):
                found.append((node.lineno, f"math.{rest}"))
            elif node.attr in FORBIDDEN_ARRAY_METHODS and isinstance(node.ctx, ast.Load):
                found.append((node.lineno, f".{node.attr}()"))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            constant = isinstance(node.left, ast.Constant) and isinstance(node.right, (ast.Constant, ast.UnaryOp))
            if not constant and not exact:  # 2.0**-52 written as a literal is exact; a power of arrays is not
                found.append((node.lineno, "**"))
    return found


@pytest.mark.parametrize("path", EXACT_MODULES, ids=[p.name if p.parent.name != "libm" else f"libm/{p.name}" for p in EXACT_MODULES])
def test_exact_kernels_use_only_operations_every_machine_rounds_alike(path: Path) -> None:
    offenders = _calls(path)
    assert offenders == [], f"{path.relative_to(ROOT)}: calls outside the portable list: {offenders}"


def test_the_audit_sees_a_machine_map(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import math\nimport numpy as np\n"
        "def f(x):\n"
        "    return np.exp(x) + math.erf(1.0) + x.sum() + x ** 2 + np.add.reduce(x) + np.add(x, 2.0**-52)\n"
    )
    offenders = {what for _, what in _calls(probe)}
    assert offenders == {"np.exp", "math.erf", ".sum()", "**", "np.add.reduce"}


def test_the_portable_maps_are_all_here() -> None:
    names = {p.stem for p in LIBM}
    assert {"core", "expfamily", "logfamily", "trig", "exact", "__init__"} <= names
