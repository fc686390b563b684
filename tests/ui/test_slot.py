"""The run slot belongs to someone who is still there (real app, real CPU engine).

A client that leaves mid-run, or a sweep stopped halfway, frees the engines
within about one engine step: the next user's short run starts at once.
Without cancellation the first case waits for minutes (the long run's
remaining tokens) and the second for the remaining sweep points. While a run
holds the engines, a page load and the memory panel answer at once. (An engine
fault mid-run, one line and the next run working: the faults of
tests/ui/test_load.py.)

No bound here is a fixed number of seconds: each wait is compared with work
timed on the same machine in the same test (a sweep point, a token of the next
user's run), so a slower or busier machine moves both sides alike.
"""
from __future__ import annotations

import time

import httpx
import pytest

from space.records.trace import dumps, make_compare
from tests.helpers.page import LeavingClient, fetch_record
from tests.helpers.traces import ngram_run, short_baseline

pytestmark = pytest.mark.engine

RESULT_TIMEOUT_S = 600  # a hang fails here, not at the CI's limit
SHORT = "Name three colours."
LONG = "Write the numbers from 1 to 500 separated by commas."  # runs to max_tokens


def timed_short_run(client, outputs, app_url) -> tuple[float, object]:
    t0 = time.monotonic()
    job = client.submit(SHORT, "ngram", "", 4, 0.0, 1.0, 8, 0, 1, api_name="/run")
    out = job.result(timeout=RESULT_TIMEOUT_S)
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
    page = httpx.get(app_url, timeout=RESULT_TIMEOUT_S)
    _, summary = client.predict(api_name="/memory")
    replayed = client.predict(handle_file(str(saved)), api_name="/replay")
    assert page.status_code == 200
    assert 'data-fresh="0"' in summary and "s ago" in summary  # the last reading, its age
    assert "replaying the saved comparison" in replayed[outputs.index("Status")]
    assert a.running()  # all three answered while A's run still held the engines
    a.leave()
    wait_s, record = timed_short_run(client, outputs, app_url)
    for r in (record.baseline, record.speculative):
        assert len(r.output_token_ids) == 8
    # Had A run on, B would have waited for thousands of A's tokens; at B's own pace,
    # 200 tokens' time (plus B's own run, twice) is far below that on any machine.
    token_s = max(record.baseline.tpot_s, record.speculative.tpot_s)
    own_s = record.baseline.e2e_s + record.speculative.e2e_s
    assert wait_s < 200 * token_s + 2 * own_s + 5, \
        f"B waited {wait_s:.1f} s ({token_s * 1e3:.0f} ms per token)"


def test_a_stopped_sweep_runs_no_more_points(app_url, client, outputs):
    from gradio_client import Client

    # Ten points: only the first runs to its end here; had Stop not stopped it,
    # the eight after the second would have run before B.
    values = [f"{t / 10:g}" for t in range(10)]
    first, second = (f"point {i}/{len(values)}" for i in (1, 2))
    sweeper = Client(app_url, verbose=False)  # its own session: Stop cancels only its events
    # 48 tokens a point: with shorter points a fast machine's point can be shorter
    # than the bound's fixed 5 s, and the check below that the bound can fail would not hold
    job = sweeper.submit("structured_output", "temperature", ",".join(values), 48, 1,
                         "ngram", "", 4, api_name="/sweep")
    seen: dict[str, float] = {}  # when each point's progress first showed
    deadline = time.monotonic() + RESULT_TIMEOUT_S
    while second not in seen:
        assert time.monotonic() < deadline and not job.done(), job.outputs()[-1:]
        for point in (first, second):
            if point not in seen and any(point in str(o[0]) for o in job.outputs()):
                seen[point] = time.monotonic()
        time.sleep(0.1)
    point_s = seen[second] - seen.get(first, seen[second])
    job.cancel()  # what the page's Stop button sends (/cancel)
    wait_s, record = timed_short_run(client, outputs, app_url)
    # The points after the second would have taken that many points' time, as long
    # as the first took on this machine now; B waits for one engine step and its own
    # short run.
    own_s = record.baseline.e2e_s + record.speculative.e2e_s
    bound_s = max(2 * point_s, 4 * own_s + 5)
    assert wait_s < bound_s, f"B waited {wait_s:.1f} s; one sweep point took {point_s:.1f} s"
    # and the bound is below what the rest of the sweep would have taken: this can fail
    assert (len(values) - 2) * point_s > bound_s, (point_s, own_s)


def test_stop_buttons_cancel_runs_and_sweeps(client):
    deps = client.config["dependencies"]
    ids = {d.get("api_name"): d["id"] for d in deps}
    cancelled = [d["cancels"] for d in deps if d.get("cancels")]
    assert [ids["run"]] in cancelled and [ids["sweep"]] in cancelled
