"""The run slot belongs to someone who is still there (real app, real CPU engine).

A client that leaves mid-run, or a sweep stopped halfway, frees the engines
within about one engine step: the next user's short run starts at once.
Without cancellation the first case waits for minutes (the long run's
remaining tokens) and the second for the remaining sweep points. While a run
holds the engines, a page load and the memory panel answer at once.
"""
from __future__ import annotations

import time

import httpx
import pytest

from space.cancel import FAULT_MARKER
from space.trace import dumps, make_compare
from tests.helpers.page import LeavingClient, fetch_record, run
from tests.helpers.traces import ngram_run, short_baseline

pytestmark = pytest.mark.engine

WAIT_BOUND_S = 15.0  # generous: a free engine answers this short run in 1-3 s
SHORT = "Name three colours."
LONG = "Write the numbers from 1 to 500 separated by commas."  # runs to max_tokens


def timed_short_run(client, outputs, app_url) -> tuple[float, object]:
    t0 = time.monotonic()
    job = client.submit(SHORT, "ngram", "", 4, 0.0, 1.0, 8, 0, 1, api_name="/run")
    out = job.result(timeout=4 * WAIT_BOUND_S)  # fails here, not minutes later
    wait_s = time.monotonic() - t0
    assert 'data-kind="done"' in out[outputs.index("Status")]
    return wait_s, fetch_record(app_url, out[outputs.index("Download trace (JSON)")])


def test_a_client_that_leaves_mid_run_frees_the_engines(client, outputs, app_url, tmp_path):
    from gradio_client import handle_file

    # 1024 tokens x 3 repeats on each engine: minutes, if it ran to its end.
    a = LeavingClient(app_url, "run", [LONG, "ngram", "", 4, 0.0, 1.0, 1024, 0, 3, None, False])
    a.wait_for("running the baseline engine")  # A holds the engines now
    # A page load, the memory panel (a page load calls it) and a replay with its
    # exports do not wait for A's run.
    saved = tmp_path / "saved.json"
    saved.write_text(dumps(make_compare([short_baseline()], [ngram_run()])))
    t0 = time.monotonic()
    page = httpx.get(app_url, timeout=30)
    _, summary = client.predict(api_name="/memory")
    replayed = client.predict(handle_file(str(saved)), api_name="/replay")
    assert page.status_code == 200 and time.monotonic() - t0 < 3.0
    assert 'data-fresh="0"' in summary and "s ago" in summary  # the last reading, its age
    assert "replaying the saved comparison" in replayed[outputs.index("Status")]
    a.leave()
    wait_s, record = timed_short_run(client, outputs, app_url)
    assert wait_s < WAIT_BOUND_S, f"B waited {wait_s:.1f} s"
    # B's own figures are those of a free machine: a few tokens in well under a second each
    for r in (record.baseline, record.speculative):
        assert len(r.output_token_ids) == 8 and 0 < r.tpot_s < 0.5 and r.e2e_s < 5


def test_a_stopped_sweep_runs_no_more_points(app_url, client, outputs):
    from gradio_client import Client

    sweeper = Client(app_url, verbose=False)  # its own session: Stop cancels only its events
    job = sweeper.submit("structured_output", "temperature", "0,0.25,0.5,0.75,1", 48, 1,
                         "ngram", "", 4, api_name="/sweep")
    deadline = time.monotonic() + 180
    while not any("point 2/5" in str(o[0]) for o in job.outputs()):
        assert time.monotonic() < deadline and not job.done(), job.outputs()[-1:]
        time.sleep(0.2)
    job.cancel()  # what the page's Stop button sends (/cancel)
    wait_s, _ = timed_short_run(client, outputs, app_url)
    # points 2-5 would take about a minute: they were not run
    assert wait_s < WAIT_BOUND_S, f"B waited {wait_s:.1f} s"


def test_stop_buttons_cancel_runs_and_sweeps(client):
    deps = client.config["dependencies"]
    ids = {d.get("api_name"): d["id"] for d in deps}
    cancelled = [d["cancels"] for d in deps if d.get("cancels")]
    assert [ids["run"]] in cancelled and [ids["sweep"]] in cancelled


def test_an_engine_fault_mid_run_is_one_line_and_the_next_run_works(client, outputs, app_url):
    """The app runs with SPECLENS_FAULT_AT_STEP (tests/ui/conftest.py): a prompt with
    the marker fails inside the engine's step loop."""
    out = run(client, f"{SHORT} {FAULT_MARKER}", max_tokens=32)
    status = out[outputs.index("Status")]
    assert 'data-kind="error"' in status and "InjectedFault" in status
    assert "Traceback" not in status
    wait_s, record = timed_short_run(client, outputs, app_url)
    assert len(record.speculative.output_token_ids) == 8
