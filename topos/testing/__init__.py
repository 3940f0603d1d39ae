"""Conformance checks a plugin author runs against an optimizer, an element type or a layer.

Each check runs a fixed list of properties, always all of them, and either returns a
:class:`~topos.testing.common.Report` (every property held) or raises
:class:`~topos.testing.common.ConformanceError`, an ``AssertionError`` that is also a
:class:`~topos.errors.ToposError`, whose message lists every property with ``ok`` or
``FAILED`` and why. Being an ``AssertionError``, it fails a pytest test, a unittest case or
a plain script alike; the kit itself needs only topos and numpy. A misuse of a check itself
(a factory that is not callable or cannot take the arguments given, an element named by a
string, an input that is not an array) is refused by name before any property runs, with
:class:`~topos.errors.InvalidArgumentError`, :class:`~topos.errors.ElementError` or
:class:`~topos.optim.OptimizerError`.

The built-ins are held to exactly these checks (``tests/test_testing_kit.py``).

Contract: this package re-exports the names below and defines nothing; each seam has its
own module, which lists its properties in its docstring:

- :mod:`topos.testing.common`: what every check shares: :class:`~topos.testing.common.Report`,
  :class:`~topos.testing.common.Check`, :class:`~topos.testing.common.ConformanceError`,
  the runner that always runs every property, and the bit-for-bit comparisons.
- :mod:`topos.testing.optimizers`: :func:`~topos.testing.optimizers.check_optimizer`, its
  learning-rate grid (:data:`~topos.testing.optimizers.LEARNING_RATES`) and step budgets
  (:data:`~topos.testing.optimizers.QUADRATIC_STEPS`,
  :data:`~topos.testing.optimizers.ILL_CONDITIONED_STEPS`).
- :mod:`topos.testing.elements`: :func:`~topos.testing.elements.check_element_type`.
- :mod:`topos.testing.layers`: :func:`~topos.testing.layers.check_layer`.

The seams import only :mod:`topos.testing.common` from the kit, never each other. Importing
the kit loads neither :mod:`topos.checkpoint` nor the ``nn`` facade: the checks that need
them import them when they run.

Example:
    >>> from topos.optim import Sgd
    >>> report = check_optimizer(Sgd, name="sgd")
    >>> report.passed, report.names()[:3]
    (True, ('pure', 'aligned', 'zero gradient'))
"""

from topos.testing.common import Check, ConformanceError, Report
from topos.testing.elements import check_element_type
from topos.testing.layers import check_layer
from topos.testing.optimizers import (
    ILL_CONDITIONED_STEPS,
    LEARNING_RATES,
    QUADRATIC_STEPS,
    check_optimizer,
)

__all__ = [
    "ILL_CONDITIONED_STEPS",
    "LEARNING_RATES",
    "QUADRATIC_STEPS",
    "Check",
    "ConformanceError",
    "Report",
    "check_element_type",
    "check_layer",
    "check_optimizer",
]
