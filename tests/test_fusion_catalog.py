"""The fusion catalog is the only list of idioms: each entry is whole, and the enum agrees.

An idiom is one family module and one catalog line; its name is one ``Formula`` member on
the kernels floor, with a fused coverage row when it has a home kernel. These tests fail
when an entry lacks a part, when the catalog and ``Formula`` disagree, or when the fused
coverage and the match classes' ``has_home_kernel`` drift apart.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
from typing import Any

import attrs

from topos.kernels.dispatch import Backend, Formula
from topos.stages import emission
from topos.stages.fusion import CATALOG, Idiom, PatternMatch, RaiseWriter, View, idiom_of
from topos.stages.fusion.windows import WINDOW_PRODUCT

OFFERED = {Formula.GEMM, Formula.REDUCE, Formula.MAP}
"""The formulas offered at run time; every other member of ``Formula`` names an idiom."""


def missing_parts(idiom: Idiom[Any]) -> list[str]:
    """What ``idiom`` lacks, one phrase per missing part (empty when it is whole)."""
    match = idiom.match
    if not (inspect.isclass(match) and issubclass(match, PatternMatch)):
        return ["its match is not a PatternMatch class"]
    problems: list[str] = []
    kind = getattr(match, "kind", None)
    if not isinstance(kind, Formula) or kind in OFFERED:
        problems.append("its match class names no idiom of Formula as its kind")
    if not callable(idiom.matcher):
        problems.append("no matcher")
    if not callable(idiom.raise_):
        problems.append("no raise")
    if not match.field_names():
        problems.append("no typed fields for describe to print")
    defines_kernel = match.home_kernel is not PatternMatch.home_kernel and match.reads is not PatternMatch.reads
    if match.has_home_kernel and not defines_kernel:
        problems.append("claims a home kernel but defines no home_kernel and reads")
    if not match.has_home_kernel and match.home_kernel is not PatternMatch.home_kernel:
        problems.append("defines a home kernel it does not claim")
    if isinstance(kind, Formula):
        coverage = Backend.FUSED.coverage(kind)
        if coverage.serves != match.has_home_kernel:
            problems.append("the fused coverage and has_home_kernel disagree")
        if coverage.serves and not coverage.precisions:
            problems.append("a fused coverage row without precisions")
    # The family module holds every part: the match class, its matcher and its raise.
    homes = {match.__module__, getattr(idiom.matcher, "__module__", None), getattr(idiom.raise_, "__module__", None)}
    if len(homes) != 1 or not str(match.__module__).startswith("topos.stages.fusion."):
        problems.append(f"its parts are spread over {sorted(map(str, homes))}")
    return problems


def test_every_catalog_idiom_has_all_its_parts() -> None:
    for idiom in CATALOG:
        assert missing_parts(idiom) == [], idiom.kind


def test_the_catalog_and_the_enum_name_the_same_idioms_in_the_same_order() -> None:
    kinds = [idiom.kind for idiom in CATALOG]
    assert kinds == [formula for formula in Formula if formula not in OFFERED]
    assert len({idiom.match for idiom in CATALOG}) == len(CATALOG)
    # Matcher order is pool order: a first-wins election depends on it.
    assert [kind.value for kind in kinds] == [
        "window_product", "window_input_gradient", "window_kernel_gradient", "reduce_window",
        "reduce_window_gradient", "batch_norm_training", "batch_norm_inference",
    ]  # fmt: skip


def test_the_fused_backend_covers_exactly_the_idioms_with_a_home_kernel() -> None:
    covered = {formula for formula in Formula if Backend.FUSED.coverage(formula).serves}
    assert covered == {idiom.kind for idiom in CATALOG if idiom.match.has_home_kernel}
    assert covered.isdisjoint(OFFERED)


@attrs.frozen(slots=True)
class _Orphan(PatternMatch):
    """A match class that forgot its kind and its home kernel."""

    source: int


@attrs.frozen(slots=True)
class _Bare(PatternMatch):
    """A match class with a kind but no fields, no home kernel and no coverage row."""

    kind = Formula.BATCH_NORM_INFERENCE


def _no_match(view: View, index: int) -> PatternMatch | None:
    return None


def _no_text(writer: RaiseWriter, match: PatternMatch) -> None:
    return None


def test_the_guard_names_each_missing_part() -> None:
    orphan = missing_parts(Idiom(_Orphan, _no_match, _no_text))
    assert "its match class names no idiom of Formula as its kind" in orphan
    assert "claims a home kernel but defines no home_kernel and reads" in orphan
    assert any(problem.startswith("its parts are spread over") for problem in orphan)
    bare = missing_parts(Idiom(_Bare, _no_match, _no_text))
    assert "no typed fields for describe to print" in bare
    assert "the fused coverage and has_home_kernel disagree" in bare
    no_raise = missing_parts(attrs.evolve(WINDOW_PRODUCT, raise_=None))
    assert "no raise" in no_raise
    no_matcher = missing_parts(attrs.evolve(WINDOW_PRODUCT, matcher=None))
    assert "no matcher" in no_matcher


def _imports(module: str) -> set[str]:
    tree = ast.parse(inspect.getsource(sys.modules[module]))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_raises_live_in_the_idiom_modules_and_emission_asks_the_catalog() -> None:
    for module in {idiom.match.__module__ for idiom in CATALOG}:
        assert "topos.stages.emission" not in _imports(module), module
    assert not [name for name in vars(emission) if name.startswith("_raise_")]
    # The old home of the kernels is gone, with no alias left behind.
    assert importlib.util.find_spec("topos.stages.fused") is None
    for idiom in CATALOG:
        assert idiom_of(_any_match(idiom)) is idiom
    assert idiom_of(_Orphan(0, (), source=0)) is None


def _any_match(idiom: Idiom[Any]) -> PatternMatch:
    """A value of the idiom's match class (every field 0; positions need not exist here)."""
    value: PatternMatch = idiom.match(0, (), **dict.fromkeys(idiom.match.field_names(), 0))
    return value
