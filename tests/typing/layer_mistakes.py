"""Typed layer lookups misused: each line marked ``# E: <code>`` must fail mypy with that code.

Excluded from the project's mypy run (pyproject); tests/test_layer_lookup_typing.py checks
it alone and requires exactly the marked lines to fail.
"""

from __future__ import annotations

from topos.nn import Conv2d, Linear
from topos.plugins import layer


def mistakes() -> None:
    # Never called: these lines only have to fail the type checker.
    _: type[Conv2d] = layer("linear", Linear)  # E: arg-type
    layer("linear", "Linear")  # E: call-overload
    layer("linear", Linear).no_such_method()  # E: attr-defined
