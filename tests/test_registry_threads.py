"""The plugin registry under threads: no registration is lost, the default is built once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

import pytest

import topos.plugins
from topos.optim import OptimizerFactory
from topos.plugins import Registry, hookimpl

THREADS = 8
PER_THREAD = 250


def _plugin(name: str) -> object:
    factory: Callable[..., object] = lambda **_: None  # noqa: E731 - only callability is checked

    class Plugin:
        @hookimpl
        def topos_optimizers(self) -> Mapping[str, object]:
            return {name: factory}

    return Plugin()


def _race(work: Callable[[int], None]) -> None:
    """Run ``work(thread)`` on THREADS threads released together; re-raise the first failure."""
    barrier = threading.Barrier(THREADS)
    failures: list[BaseException] = []

    def run(thread: int) -> None:
        barrier.wait()
        try:
            work(thread)
        except BaseException as error:  # collected and re-raised on the main thread
            failures.append(error)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]


def test_concurrent_registrations_all_land_exactly_once() -> None:
    registry = Registry()
    expected = {f"opt_{t}_{i}" for t in range(THREADS) for i in range(PER_THREAD)}

    def work(thread: int) -> None:
        for i in range(PER_THREAD):
            name = f"opt_{thread}_{i}"
            assert registry.register(_plugin(name), f"plugin_{thread}_{i}") == f"plugin_{thread}_{i}"

    _race(work)
    optimizers: Mapping[str, OptimizerFactory] = registry.optimizers()
    assert set(optimizers) == expected
    plugins = registry.plugins()
    assert len(plugins) == len(set(plugins)) == THREADS * PER_THREAD
    for name in expected:
        thread, index = name.split("_")[1:]
        assert registry.owner("topos_optimizers", name) == f"plugin_{thread}_{index}"


def test_the_default_registry_is_built_once_under_a_race(monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[int] = []
    real = Registry.with_builtins

    def counting(cls: type[Registry]) -> Registry:
        builds.append(threading.get_ident())
        time.sleep(0.05)  # widen the window in which an unlocked build would be repeated
        return real()

    monkeypatch.setattr(topos.plugins, "_DEFAULT", [])
    monkeypatch.setattr(Registry, "with_builtins", classmethod(counting))
    seen: list[Registry] = []
    _race(lambda _: seen.append(topos.plugins.registry()))
    assert len(builds) == 1
    assert len(seen) == THREADS and all(r is seen[0] for r in seen)
    assert "sgd" in seen[0].optimizers()
