"""Target views (trace version 4) in the contract and in every view that shows them."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from space.records.schema import TraceFormatError, load
from space.records.trace import TRACE_VERSION, CompareRecord, dumps
from space.ui import views
from tests.helpers.explained import make_explained
from tests.helpers.traces import views_run
from vis.compare import steps_dataframe
from vis.explain import (
    draft_probability_figure,
    explain_sentence,
    hover_note,
    ordinal,
    pct,
    top5_chart_html,
)
from vis.stepper import describe_step
from vis.timeline import CURRENT_NAME, timeline_figure
from vis.tokens import token_view_html

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_views_round_trip_since_version_4():
    run = make_explained()
    d = json.loads(dumps(run))
    assert TRACE_VERSION >= 4 and d["version"] == TRACE_VERSION
    assert d["steps"][2]["target_views"][1]["draft_prob"] == 0.07
    again = load(dumps(run))
    assert again.to_dict() == run.to_dict()
    assert again.steps[2].target_views[1].top_token_ids[0] == 20
    assert again.explanation.score_s == 0.2 and not again.explanation.sampled


def test_version_2_file_replays_without_explanations():
    text = (FIXTURES / "compare-v2-ngram.json").read_text()
    assert json.loads(text)["version"] == 2
    record = load(text)
    assert isinstance(record, CompareRecord) and record.speculative.explanation is None
    assert all(not s.target_views for s in record.speculative.steps)
    shown = views.render(record)
    assert 'data-status="rejected"' in shown.token_html and "data-explained" not in shown.token_html
    frame = views.steps_csv_frame(record)
    assert set(frame["draft_probs"]) == {""}
    step = views.step_view(record, 4)
    assert step is not None and "speclens-top5" not in step.title_html


def _bad(mutate) -> str:
    d = json.loads(dumps(make_explained()))
    mutate(d)
    with pytest.raises(TraceFormatError) as err:
        load(json.dumps(d))
    assert "\n" not in str(err.value)
    return str(err.value)


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["steps"][2]["target_views"][0].update(draft_prob=1.5),
     "steps[2].target_views[0].draft_prob must be a probability in 0..1"),
    (lambda d: d["steps"][2]["target_views"][0].update(draft_prob="<b>"), "probability"),
    (lambda d: d["steps"][2]["target_views"][0]["top_probs"].append(0.1),
     "top_probs must be a list of at most 5"),
    (lambda d: d["steps"][2]["target_views"][0]["top_token_ids"].pop(),
     "top_probs must be as long as top_token_ids"),
    (lambda d: d["steps"][2]["target_views"][0]["top_token_ids"].__setitem__(0, -3),
     "top_token_ids[0] must be an integer"),
    (lambda d: d["steps"][2]["target_views"][1].update(draft_pos=3),
     "target_views[1].draft_pos must be the position of its draft_token_id"),
    (lambda d: d["steps"][2]["target_views"][1].update(draft_pos=9), "draft_pos"),
    (lambda d: d["steps"][2].update(target_views=[d["steps"][2]["target_views"][0]] * 65),
     "a list of at most 64"),
    (lambda d: d["explanation"].update(top_p=2), "explanation.top_p must be a probability"),
    (lambda d: d["explanation"].pop("score_s"), "explanation.score_s must be present"),
])
def test_schema_bounds_target_views(mutate, expected):
    assert expected in _bad(mutate)


def test_words_for_a_rejection_an_agreement_and_a_miss():
    run = make_explained()
    assert explain_sentence(run, run.steps[2]) == (
        "The target agreed with the first draft (90%); at the 2nd it gave ' 2' only 7% "
        "and chose ',' (81%).")
    assert explain_sentence(run, run.steps[3]) == (
        "The target agreed with all 3 drafts (it gave them 95%, 60%, 99%).")
    assert explain_sentence(run, run.steps[4]) == (
        "The target disagreed with the first draft: it gave 'x' only <0.1% and chose "
        "'\"y' (60%).")
    assert explain_sentence(run, run.steps[1]) is None  # prefill: nothing was verified


def test_sampled_runs_state_the_rule_in_numbers():
    run = make_explained(temperature=0.8)
    said = explain_sentence(run, run.steps[2])
    assert "p = 0.070, q = 1" in said and "min(1, p/q) = 7%" in said and "rejected" in said
    assert run.steps[2].target_views[1].acceptance_prob() == pytest.approx(0.07)


def test_top5_chart_marks_drafted_and_chosen_and_escapes():
    run = make_explained()
    run.token_text[20] = '<img src=x onerror="1">'
    chart = top5_chart_html(run, run.steps[2])
    assert "<img" not in chart and "&lt;img src=x onerror=" in chart
    assert chart.count('class="t5-row"') == 5
    assert 'data-role="chosen" data-token="20"' in chart
    assert 'data-role="drafted" data-token="12"' in chart
    # a drafted token outside the top 5 is shown after a gap, its share spelled out
    miss = top5_chart_html(run, run.steps[4])
    assert miss.count('class="t5-row"') == 6 and "t5-gap" in miss and "&lt;0.1%" in miss
    assert top5_chart_html(run, run.steps[3]) == ""  # nothing rejected


def test_token_view_hover_says_what_the_target_wanted(spans):
    run = make_explained()
    got = {(s["data-step"], s.get("data-status"), s["text"]): s for s in spans(token_view_html(run))}
    rejected = got[("2", "rejected", " 2")]
    assert "target: ',' 81% \u00b7 drafted ' 2' 7%" in rejected["title"]
    assert rejected.get("data-explained") == "1"
    correction = got[("2", "correction", ",")]
    assert "target: ',' 81%" in correction["title"]
    accepted = got[("2", "accepted", " is")]["title"]
    assert "target: ' is' 90% \u00b7 drafted ' is' 90% \u00b7 top 5: ' is' 90%, ',' 5%" in accepted
    assert "data-explained" not in token_view_html(views_run())  # not explained: as before


def test_stepper_carries_the_why_and_the_chart():
    run = make_explained()
    d = describe_step(run, 2)
    assert d["why"].startswith("The target agreed with the first draft")
    assert "speclens-top5" in d["top5_html"]
    assert "data-explained" in d["drafts_html"]


def test_timeline_marks_the_current_step():
    run = make_explained()
    fig = timeline_figure(run, None, current_step=3)
    bands = [s for s in fig.layout.shapes if s.name == CURRENT_NAME]
    assert len(bands) == 1
    assert bands[0].x0 == pytest.approx((run.steps[3].start_s - run.arrival_s) * 1e3)
    assert not [s for s in timeline_figure(run).layout.shapes if s.name == CURRENT_NAME]


def test_steps_csv_has_the_probabilities():
    run = make_explained(temperature=0.7)
    frame = steps_dataframe(run)
    row = frame[frame["index"] == 2].iloc[0]
    assert json.loads(row["draft_probs"]) == [0.9, 0.07]
    assert json.loads(row["target_top5"])[1][0] == [",", 0.81]
    assert json.loads(row["acceptance_probs"]) == [0.9, 0.07]
    assert frame[frame["index"] == 5].iloc[0]["draft_probs"] == ""
    assert isinstance(frame, pd.DataFrame)


def test_acceptance_strip_splits_accepted_from_rejected():
    fig = draft_probability_figure(make_explained())
    names = [t.name for t in fig.data]
    assert names == ["accepted (6)", "rejected (2)"]
    assert sorted(fig.data[1].x) == [0.0005, 0.07]


def test_hover_note_without_views_is_none():
    run = make_explained()
    assert hover_note(run, run.steps[5], None) is None


@pytest.mark.parametrize("p, text", [(0.81, "81%"), (0.07, "7%"), (0.003, "0.3%"),
                                     (0.0004, "<0.1%"), (0.0, "0%")])
def test_pct(p, text):
    assert pct(p) == text


def test_ordinal():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd"]
