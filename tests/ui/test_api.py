"""The page's run event through gradio_client, on the real CPU engine."""
from __future__ import annotations

import pytest

from space.records.trace import VERIFY, CompareRecord
from tests.helpers.page import delta, fetch_record, run, scrape
from vis.tokens import token_entries

pytestmark = pytest.mark.engine


def error_message(client, outputs, prompt, **kw) -> str:
    """The message a bad input gets: our status box (role=alert), or Gradio's own
    range check on a slider, which the client raises as AppError."""
    from gradio_client.exceptions import AppError

    try:
        out = run(client, prompt, **kw)
    except AppError as exc:
        return str(exc)
    status = out[outputs.index("Status")]
    assert 'data-kind="error"' in status, status
    return status


@pytest.mark.parametrize("prompt, kw, message", [
    ("", {}, "the prompt is empty"),
    ("   ", {}, "the prompt is empty"),
    ("word " * 3000, {}, "longer than max_model_len"),
    ("Hi", {"k": 99}, "16"),  # Gradio's slider check: "greater than maximum value 16"
    ("Hi", {"k": 0}, "1"),
    # wrong types from an API client: one line, not Gradio's unnamed error
    ("Hi", {"k": "four"}, "k (draft tokens per step) must be a number, got 'four'"),
    ("Hi", {"temperature": [0.5]}, "Temperature must be a number, got [0.5]"),
    ("Hi", {"seed": "nan"}, "Seed must be a number, got 'nan'"),
    ("Hi", {"method": "eagle3", "draft": "default-truncated"}, "needs trained heads and a GPU"),
    ("Hi", {"method": "suffix"}, "arctic-inference"),
    ("Hi", {"method": "draft_model", "draft": ""}, "needs --draft-model"),
    # only the offered drafts (tests/ui/test_hostile_models.py)
    ("Hi", {"method": "draft_model", "draft": "/no/such/folder"}, "not in the list of choices"),
])
def test_bad_input_gets_a_message(client, outputs, prompt, kw, message):
    text = error_message(client, outputs, prompt, **kw)
    assert message in text and "Traceback" not in text


def test_run_markup_and_metrics_match_trace(client, outputs, app_url, code_edit_prompt, spans):
    before = scrape(app_url)
    out = run(client, code_edit_prompt, max_tokens=32)  # after the bad inputs: the server still runs
    after = scrape(app_url)
    status = out[outputs.index("Status")]
    assert 'data-kind="done"' in status, status
    record = fetch_record(app_url, out[outputs.index("Download trace (JSON)")])
    assert isinstance(record, CompareRecord)
    spec = record.speculative
    assert spec.config.method == "ngram"
    assert len(spec.output_token_ids) > 0 and len(record.baseline.output_token_ids) > 0

    got = spans(out[outputs.index("Tokens")])
    want = token_entries(spec)
    assert [(s["data-status"], int(s["data-step"])) for s in got] == \
        [(e.status, e.step) for e in want]
    assert [s["text"] for s in got] == [spec.token_str(e.token_id) for e in want]
    emitted = [s for s in got if "data-out" in s]
    assert [int(s["data-out"]) for s in emitted] == list(range(len(spec.output_token_ids)))
    assert "".join(s["text"] for s in emitted) == \
        "".join(spec.token_str(t) for t in spec.output_token_ids)
    # ngram on a code edit: drafts are both accepted and rejected.
    assert {"accepted", "rejected"} <= {s["data-status"] for s in got}
    counters_equal_the_trace(before, after, spec)


def counters_equal_the_trace(before, after, spec) -> None:
    """/metrics moved by exactly the run's trace: its verify steps, one request each."""
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


def test_runs_queue_one_at_a_time(client, outputs, app_url):
    """Two runs submitted together: the second waits; their engine steps never overlap."""
    args = ("Name three colours.", "ngram", "", 4, 0.0, 1.0, 8, 0, 1)
    jobs = [client.submit(*args, api_name="/run") for _ in range(2)]
    results = [j.result(timeout=300) for j in jobs]
    records = [fetch_record(app_url, r[outputs.index("Download trace (JSON)")])
               for r in results]
    spans_s = sorted((min(r.baseline.arrival_s, r.speculative.arrival_s),
                      max(r.baseline.finish_s, r.speculative.finish_s)) for r in records)
    # One server process, one perf_counter clock: the second starts after the first ends.
    assert spans_s[0][1] <= spans_s[1][0]
