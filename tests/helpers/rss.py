"""A pytest plugin: the peak resident memory of pytest and every process it
started (servers, apps, Prometheus, Chromium), per tier, printed at the end
beside the slowest tests. On by default (pyproject.toml: ``-p tests.helpers.rss``).

A thread samples the process tree's summed RSS every ``INTERVAL_S``; each
sample counts for the tier of the test running then (tests/<tier>/...).
Summed RSS counts pages shared between processes more than once, so it errs
high, as a budget check should. ``SPECLENS_RSS_JSON=PATH`` also writes the
peaks as JSON (benchmarks/suite_memory.py reads it).
"""
from __future__ import annotations

import contextlib
import json
import os
import threading

import psutil
import pytest

INTERVAL_S = 0.5
GB = 1e9


def tree_rss(root: psutil.Process) -> int:
    """Summed RSS of ``root`` and its descendants, in bytes."""
    total = 0
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    for p in procs:
        with contextlib.suppress(psutil.Error):  # ended between the listing and the reading
            total += p.memory_info().rss
    return total


class TreeMemory:
    def __init__(self) -> None:
        self.tier = "collection"
        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)

    def _sample(self) -> None:
        me = psutil.Process()
        while True:
            rss = tree_rss(me)
            if rss > self.peaks.get(self.tier, 0):
                self.peaks[self.tier] = rss
            if self._stop.wait(INTERVAL_S):
                return

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._thread.start()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        parts = item.nodeid.split("/")
        self.tier = parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[0]

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self._stop.set()
        path = os.environ.get("SPECLENS_RSS_JSON")
        if path:
            with open(path, "w") as f:
                json.dump({"peak_bytes": self.peaks,
                           "overall_bytes": max(self.peaks.values(), default=0)}, f)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.peaks:
            return
        tr = terminalreporter
        tr.write_sep("=", "peak memory (pytest and the processes it started, summed RSS)")
        for tier, peak in self.peaks.items():
            tr.write_line(f"{tier:>12}  {peak / GB:6.2f} GB")
        tr.write_line(f"{'overall':>12}  {max(self.peaks.values()) / GB:6.2f} GB")


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # not in xdist workers
        config.pluginmanager.register(TreeMemory(), "speclens-tree-memory")
