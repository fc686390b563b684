"""A pytest plugin: every in-process engine build, printed at the end beside the
slowest tests (on by default: pyproject.toml ``-p tests.helpers.builds``).

A build costs seconds (more in float32), and the suite's time depends on how
often the pool's budget makes a test rebuild an engine that an earlier test
closed: the summary counts the builds per configuration and names the tests
that built. Engines that servers and app subprocesses build are not seen here.
"""
from __future__ import annotations

import time
from collections import defaultdict

import pytest


def _label(spec) -> str:
    if not spec.method:
        return f"baseline {spec.dtype}"
    draft = f" draft={spec.draft_model}" if spec.draft_model else ""
    return f"{spec.method} k={spec.k}{draft} {spec.dtype}"


class EngineBuilds:
    def __init__(self) -> None:
        self.test = "collection"
        self.builds: list[tuple[str, str, float]] = []  # (test, label, seconds)

    def install(self) -> None:
        from space.engine.pool import EnginePool

        original = EnginePool._build
        plugin = self

        def timed_build(pool, spec, progress):
            t0 = time.perf_counter()
            try:
                return original(pool, spec, progress)
            finally:
                plugin.builds.append((plugin.test, _label(spec), time.perf_counter() - t0))

        EnginePool._build = timed_build  # type: ignore[method-assign]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.test = item.nodeid

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.builds:
            return
        tr = terminalreporter
        total = sum(s for *_, s in self.builds)
        tr.write_sep("=", f"in-process engine builds: {len(self.builds)} in {total:.0f} s")
        per: dict[str, list[float]] = defaultdict(list)
        for _, label, s in self.builds:
            per[label].append(s)
        for label, secs in sorted(per.items(), key=lambda kv: -sum(kv[1])):
            tr.write_line(f"{len(secs):4d} x {label:<48} {sum(secs):6.1f} s")
        tr.write_line("builds by test:")
        for test, label, s in self.builds:
            tr.write_line(f"  {s:5.1f} s  {label:<40} {test}")


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        plugin = EngineBuilds()
        plugin.install()
        config.pluginmanager.register(plugin, "speclens-engine-builds")
