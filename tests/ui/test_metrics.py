"""/metrics after a sweep and a tipping curve from the page: every run of the
sweep counts, each job once by its kind. (After one compare, the counters move
by exactly the run's trace: tests/ui/test_api.py, on the run whose markup it checks.)"""
from __future__ import annotations

import re
import time

import pytest

from tests.helpers.page import delta, scrape

pytestmark = pytest.mark.engine


def test_a_sweep_and_a_tipping_curve_from_the_page_reach_metrics_live_and_history(
        client, app_url):
    """Both end in the Runs layer's events: every run of the sweep counts in the run
    series, each job once by its kind, the Live tab says so, the history saves both."""
    from space.runs import presets
    from space.runs.workloads import requests_for

    before = scrape(app_url)
    # one point on the page's own engines (ngram, k=4): nothing new is built
    sweep_status, *_ = client.predict("structured_output", "temperature", "0", 8, 1, "ngram",
                                      "", 4, api_name="/sweep")
    # ngram's curve is derived from the stored measured one: one short run, no forcing
    _curve, tipping_status, *_ = client.predict("ngram", "", 4, None, "length",
                                                api_name="/tipping")
    after = scrape(app_url)
    assert 'data-kind="done"' in sweep_status and 'data-kind="done"' in tipping_status
    runs = len(requests_for(presets.get_workload("structured_output"), max_tokens=8))
    assert delta(before, after, "speclens_requests_total", engine="speculative",
                 status="ok") == runs
    assert delta(before, after, "speclens_tpot_seconds_count", engine="baseline") == runs
    assert delta(before, after, "speclens_jobs_total", kind="sweep") == 1
    assert delta(before, after, "speclens_jobs_total", kind="tipping") == 1
    assert delta(before, after, "speclens_jobs_total", kind="compare") == 0  # its parts
    saved = [int(re.search(r"saved as run #(\d+)", s).group(1))
             for s in (sweep_status, tipping_status)]
    table, *_ = client.predict("any", "any", "any", 1, None, None, api_name="/history")
    assert all(f'data-run="{i}"' in table for i in saved)
    summary = ""
    for _ in range(5):  # the Live tab's reading is cached for 2 s after the last one
        summary = client.predict(api_name="/live")[0] or ""
        if summary:
            break
        time.sleep(1)
    assert re.search(r"jobs ended: .*\d+ sweeps.*\d+ tipping curves", summary), summary
