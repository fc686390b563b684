"""What each panel shows for a record (space/ui/views.py), on hand-written traces."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from space.judge.checklist import ChecklistInputs, evaluate
from space.records.schema import load
from space.records.trace import dumps, make_compare
from space.ui import views
from tests.helpers.traces import ngram_run, short_baseline


def lanes(fig) -> set[str]:
    return {y for t in fig.data if t.type == "bar" for y in t.y}


@pytest.fixture
def cmp():
    return make_compare([short_baseline()], [ngram_run()])


def test_render_compare_fills_every_view(cmp):
    v = views.render(cmp)
    assert v.token_html.count('data-status="rejected"') == 3 + 4  # steps 1 and 3
    assert "TPOT speedup" in v.compare_html
    assert list(v.compare_table["metric"])[:2] == ["TTFT ms", "TPOT ms"]
    assert lanes(v.timeline) == {"speculative", "baseline"}
    assert "Acceptance rate" in v.acceptance_html
    assert v.checklist_html == views.NO_VERDICT
    assert "TPOT speedup" in v.summary


def test_render_single_trace_has_no_baseline():
    v = views.render(ngram_run())
    assert v.compare_html == views.NO_BASELINE and v.compare_table is None
    assert lanes(v.timeline) == {"speculative"}


def test_checklist_from_the_record(cmp):
    checklist = evaluate(ChecklistInputs(method="ngram", k=4, speedup_median=1.5,
                                         speedup_spread=(1.4, 1.6)))
    cmp.checklist = checklist
    html = views.render(load(dumps(cmp))).checklist_html  # as read back from a saved JSON
    assert f'data-verdict="{checklist.verdict}"' in html


def test_step_view_clamps_and_describes(cmp):
    first = views.step_view(cmp, -5)
    assert first.position == 0 and first.count == 5 and "prefill" in first.title_html
    last = views.step_view(cmp, 99)
    assert last.position == 4 and "decoded" in last.title_html
    assert "Pass 5 of 5." in last.title_html and "Engine step" in last.title_html
    rejected = views.step_view(cmp, 1)
    assert rejected.drafts_html.count('data-status="rejected"') == 3
    assert views.step_view(None, 0) is None


def test_exports_round_trip(cmp):
    json_path, csv_path = views.write_exports(cmp)
    assert load(Path(json_path).read_text()).to_dict() == cmp.to_dict()
    frame = pd.read_csv(csv_path)
    assert list(frame.columns[:2]) == ["run", "index"]
    assert (frame["run"] == "speculative").sum() == len(cmp.speculative.steps)
    assert (frame["run"] == "baseline").sum() == len(cmp.baseline.steps)


def test_live_view_shows_steps_so_far():
    run = ngram_run()
    html = views.live_token_html(run.steps[:2], {})
    assert html.count('data-status="accepted"') == 1
    assert html.count('data-status="rejected"') == 3
    assert "no output tokens" in views.live_token_html([], {})


def test_the_memory_panel_marks_an_old_reading():
    from space.observe.memory import EngineReading

    assert views.reading_note(EngineReading([], 100.0, True), now=130.0) == ""
    old = views.reading_note(EngineReading([], 100.0, False), now=130.0)
    assert 'data-fresh="0"' in old and "from 30 s ago" in old
    assert "busy" in views.reading_note(EngineReading([], None, False))

