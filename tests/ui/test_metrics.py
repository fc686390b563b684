"""/metrics after a real run: the counters move by exactly the run's trace."""
from __future__ import annotations

import re
import time
import urllib.request

import pytest

from space.records.trace import VERIFY
from tests.helpers.page import fetch_record, run

pytestmark = pytest.mark.engine

LINE = re.compile(r'^(speclens_\w+)\{([^}]*)\} ([0-9.e+-]+)$')


def scrape(app_url: str) -> dict[tuple[str, frozenset], float]:
    with urllib.request.urlopen(app_url + "metrics") as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            labels = frozenset(tuple(kv.split("=", 1)) for kv in m.group(2).split(","))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def delta(before, after, name, **labels) -> float:
    key = (name, frozenset((k, f'"{v}"') for k, v in labels.items()))
    return after.get(key, 0.0) - before.get(key, 0.0)


def test_counters_equal_the_trace(client, outputs, app_url, code_edit_prompt):
    before = scrape(app_url)
    out = run(client, code_edit_prompt, max_tokens=32)
    after = scrape(app_url)
    rec = fetch_record(app_url, out[outputs.index("Download trace (JSON)")])
    spec = rec.speculative
    verify = [s for s in spec.steps if s.kind == VERIFY]
    assert verify, "the run drafted nothing: the test prompt no longer exercises ngram"
    e = "speculative"
    assert delta(before, after, "speclens_spec_decode_num_drafts_total", engine=e) == len(verify)
    assert delta(before, after, "speclens_spec_decode_num_draft_tokens_total", engine=e) == \
        sum(s.num_draft_tokens for s in verify)
    assert delta(before, after, "speclens_spec_decode_num_accepted_tokens_total", engine=e) == \
        sum(s.num_accepted_tokens for s in verify)
    for p in range(max(s.num_draft_tokens for s in verify)):
        assert delta(before, after, "speclens_spec_decode_num_accepted_tokens_per_pos_total",
                     engine=e, position=p) == sum(1 for s in verify if s.num_accepted_tokens > p)
    assert delta(before, after, "speclens_spec_decode_num_drafts_total", engine="baseline") == 0
    assert delta(before, after, "speclens_requests_total", engine=e, status="ok") == 1
    assert delta(before, after, "speclens_tpot_seconds_count", engine=e) == 1
    assert delta(before, after, "speclens_tpot_seconds_sum", engine=e) == \
        pytest.approx(spec.tpot_s)


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
