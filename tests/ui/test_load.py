"""Three visitors at once, then faults injected for real (benchmarks/load.py,
its 3-client version; the 20-client figures are in docs/performance.md).

Each visitor runs, loads the page and replays a trace at the same time as the
others; then an engine error inside the step loop (the test hook, on in the
session's app: tests/ui/servers.py), a client leaving mid-run, a malformed upload and a sweep
cancelled halfway, each followed by a normal run that must work.
"""
from __future__ import annotations

import json

import pytest

from benchmarks.load import benchmark

pytestmark = pytest.mark.engine

CLIENTS = 3  # one run waits behind two others


@pytest.fixture(scope="module")
def report(app_url) -> dict:
    # No runs alone: their TPOT is the benchmark's figure to compare with, not checked here.
    report = benchmark(app_url, clients=CLIENTS, max_tokens=8, alone_runs=0, hang_s=180,
                       fault_hook=True)
    print(json.dumps(report, indent=1))  # pytest -s shows the figures
    return report


def test_every_request_completes_without_server_errors_or_hangs(report):
    assert report["hangs"] == 0 and report["server_errors"] == 0, report["errors"]
    assert report["completed"] == report["requests"] == {"run": CLIENTS, "replay": CLIENTS,
                                                         "page": CLIENTS}
    assert report["queue_wait_s"] is not None


def test_server_memory_comes_back(report):
    memory = report["memory_mib"]
    assert memory["peak_during"] >= memory["before"] > 0
    assert abs(memory["after_vs_before"] - 1) <= 0.10, memory


def test_after_each_fault_the_next_run_works(report):
    faults = {row["fault"]: row for row in report["faults"]}
    assert len(faults) == 4
    assert all(row["next_run_ok"] for row in faults.values()), faults
    assert faults["an engine error mid-run (test hook)"]["refused_in_one_line"], faults
    assert faults["a malformed upload"]["refused_in_one_line"], faults
    assert faults["a client disconnecting mid-run"]["outcome"] == "left mid-run"
    assert faults["a sweep cancelled halfway"]["cancelled"]
