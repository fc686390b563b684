"""A pytest plugin: the peak resident memory of pytest and every process it
started (servers, apps, Prometheus, Chromium), per tier, printed at the end
beside the slowest tests. On by default (pyproject.toml: ``-p tests.helpers.rss``).

A thread samples the process tree every ``INTERVAL_S``; each sample counts
for the tier of the test running then (tests/<tier>/...). Two sums:
  PSS: each process's proportional set size, summed: a page shared by n
       processes counts 1/n in each, so the sum is the memory the tree holds
       (the budget's figure);
  RSS: summed resident sizes, which count every shared page once per process
       (torch's and vLLM's libraries in each server and CLI subprocess): an
       upper bound, high by several GB when many Python processes run at once.
``SPECLENS_RSS_JSON=PATH`` also writes the peaks as JSON
(benchmarks/suite_memory.py reads it).
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


def tree_memory(root: psutil.Process) -> tuple[int, int]:
    """(summed PSS, summed RSS) of ``root`` and its descendants, in bytes."""
    pss = rss = 0
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0, 0
    for p in procs:
        with contextlib.suppress(psutil.Error):  # ended between the listing and the reading
            full = p.memory_full_info()  # /proc/PID/smaps_rollup
            pss += full.pss
            rss += full.rss
    return pss, rss


class TreeMemory:
    def __init__(self) -> None:
        self.tier = "collection"
        self.peaks: dict[str, int] = {}      # summed PSS
        self.rss_peaks: dict[str, int] = {}  # summed RSS
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)

    def _sample(self) -> None:
        me = psutil.Process()
        while True:
            tier = self.tier
            pss, rss = tree_memory(me)
            self.peaks[tier] = max(pss, self.peaks.get(tier, 0))
            self.rss_peaks[tier] = max(rss, self.rss_peaks.get(tier, 0))
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
                           "overall_bytes": max(self.peaks.values(), default=0),
                           "rss_peak_bytes": self.rss_peaks}, f)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.peaks:
            return
        tr = terminalreporter
        tr.write_sep("=", "peak memory of pytest and the processes it started")
        tr.write_line(f"{'tier':>12}  {'PSS':>8}  {'RSS':>8}  (summed; RSS counts shared pages "
                      "once per process)")
        for tier, peak in self.peaks.items():
            tr.write_line(f"{tier:>12}  {peak / GB:5.2f} GB  {self.rss_peaks.get(tier, 0) / GB:5.2f} GB")
        tr.write_line(f"{'overall':>12}  {max(self.peaks.values()) / GB:5.2f} GB  "
                      f"{max(self.rss_peaks.values()) / GB:5.2f} GB")


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # not in xdist workers
        config.pluginmanager.register(TreeMemory(), "speclens-tree-memory")
