"""A hand-written stream to a RunTrace (pure): kinds, counts, missing flags."""
from __future__ import annotations

import pytest

from space.records.run import SERVER
from space.records.trace import BONUS, CORRECTION, DECODE, PREFILL, VERIFY
from space.server.build import build_trace, spec_metrics
from space.server.client import DETAILED_FLAG, ServerError
from tests.helpers.server_records import INFO, NGRAM, REQ, spec_decode, stream


def test_kinds_and_unreported_drafts():
    # prefill 1; verify 4/4 (bonus 5); verify 1/4 (correction); decode; verify cut to 2 of 4+1
    s = stream([[1], [2, 3, 4, 5, 6], [7, 8], [9], [10, 11]], spec_decode([4, 1, 4], [4, 4, 4]))
    run = build_trace(s, INFO, NGRAM, REQ)
    assert [st.kind for st in run.steps] == [PREFILL, VERIFY, VERIFY, DECODE, VERIFY]
    assert [st.target_token_kind for st in run.steps] == [None, BONUS, CORRECTION, None, None]
    assert [st.draft_token_ids for st in run.steps] == [[], [2, 3, 4, 5], [7], [], [10, 11]]
    assert [st.num_unreported_draft_tokens for st in run.steps] == [0, 0, 3, 0, 2]
    assert run.num_draft_tokens == 12 and run.num_accepted_tokens == 9
    assert run.config.source == SERVER and run.step_split is not None and run.step_split.exact
    assert run.output_token_ids == list(range(1, 12))
    assert run.server is not None and run.server["timing_ms"] == {"time_to_first_token_ms": 10.0}
    assert run.steps[1].start_s == pytest.approx(0.1) and run.steps[1].end_s == pytest.approx(0.2)


def test_missing_flag_names_it():
    with pytest.raises(ServerError, match=DETAILED_FLAG):
        spec_metrics("speculative", stream([[1]], None))
    summary = spec_decode([1], [4])
    del summary["per_step_accepted"], summary["per_step_drafted"]
    with pytest.raises(ServerError, match=DETAILED_FLAG):
        spec_metrics("speculative", stream([[1], [2, 3]], summary))


def test_no_verify_step_at_all_is_not_a_missing_flag():
    """vLLM omits the per-step arrays when no step drafted, even at detailed."""
    sd = {"num_spec_steps": 0, "num_draft_tokens": 0, "num_spec_tokens": 4,
          "acceptance_histogram": [0] * 5}
    run = build_trace(stream([[1], [2]], sd), INFO, NGRAM, REQ)
    assert [st.kind for st in run.steps] == [PREFILL, DECODE]


def test_token_view_counts_unreported_drafts():
    """The token view shows a server step's rejected drafts as a count, and why."""
    from vis.tokens import token_view_html

    s = stream([[1], [2, 3, 4, 5, 6], [7, 8], [9], [10, 11]], spec_decode([4, 1, 4], [4, 4, 4]))
    html = token_view_html(build_trace(s, INFO, NGRAM, REQ))
    assert html.count("tok-unreported") == 1  # before the correction; the cut step has none
    assert "3 rejected draft(s): ids not reported by the server" in html
