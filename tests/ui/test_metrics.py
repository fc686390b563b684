"""A sweep and a tipping curve from the page: /metrics counts every run of the
sweep and each job once by its kind, the Live tab and the history have both,
and the sweep's plot and CSV equal its table. (After one compare, the counters
move by exactly the run's trace: tests/ui/test_api.py, on the run whose markup
it checks.)"""
from __future__ import annotations

import json
import re
import time

import pandas as pd
import pytest

from tests.helpers.page import delta, scrape

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def jobs(client, app_url) -> dict:
    """A one-point sweep and a tipping curve, with /metrics before and after."""
    before = scrape(app_url)
    # one point on the page's own engines (ngram, k=4): nothing new is built
    sweep = client.predict("structured_output", "temperature", "0", 8, 1, "ngram", "", 4,
                           api_name="/sweep")
    # ngram's curve is derived from the stored measured one: one short run, no forcing
    _curve, tipping_status, *_ = client.predict("ngram", "", 4, None, "length",
                                                api_name="/tipping")
    return dict(before=before, after=scrape(app_url), sweep=sweep, tipping_status=tipping_status)


def test_a_sweep_and_a_tipping_curve_from_the_page_reach_metrics_live_and_history(
        client, jobs):
    """Both end in the Runs layer's events: every run of the sweep counts in the run
    series, each job once by its kind, the Live tab says so, the history saves both."""
    from space.runs import presets
    from space.runs.workloads import requests_for

    before, after = jobs["before"], jobs["after"]
    sweep_status, tipping_status = jobs["sweep"][0], jobs["tipping_status"]
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


def test_the_sweep_returns_a_plot_and_a_csv_equal_to_its_table(jobs):
    """The Sweep tab's outputs (a k x concurrency sweep's: tests/ui/test_sweep_panel.py)."""
    status, plot, table, csv, deploy = jobs["sweep"]
    assert deploy == ""  # only a k x concurrency sweep derives a deployable config
    assert 'data-kind="done"' in status, status
    figure = json.loads(plot["plot"]) if isinstance(plot, dict) else plot
    assert "acceptance rate" in [t.get("name") for t in figure["data"]]
    shown = pd.DataFrame(table["data"], columns=table["headers"])
    saved = pd.read_csv(csv["value"] if isinstance(csv, dict) else csv)
    assert len(saved) == len(shown) == 1
    assert list(saved["value"]) == [0] == list(shown["value"])
    for col in ("speedup", "acceptance_rate", "baseline_tpot_ms", "speculative_tpot_ms"):
        assert saved[col].round(3).tolist() == pd.to_numeric(shown[col]).tolist(), col
    assert (saved["variable"] == "temperature").all()
