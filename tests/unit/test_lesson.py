"""The lesson file (vis/lesson.py): what it holds, that it escapes every string of
a hostile trace and of the notes, that it loads nothing, and its size. Pure."""
from __future__ import annotations

import json
import re

import pytest

from space.records.notes import StepNotes
from space.records.schema import load
from space.records.trace import CompareRecord, dumps
from tests.helpers.explained import make_explained
from tests.helpers.hostile import CANARY, hostile_compare, payload
from tests.helpers.lessons import explained_compare, parse, problems, views_compare
from tests.helpers.traces import long_compare, with_anatomy
from vis.explain import draft_reason
from vis.lesson import LESSON_JS, MAX_LESSON_STEPS, LessonError, LessonInfo, lesson_html, script_hash
from vis.lesson_svg import timeline_svg
from vis.stepper import emitting_step_indices

INFO = LessonInfo(exported_utc="2026-12-04 16:00 UTC", measured_utc="2026-12-04 15:00 UTC",
                  source="compare.json")
MB = 10**6


def test_the_checker_sees_unescaped_markup():
    raw = payload("prompt")
    page = lesson_html(views_compare(), info=INFO)
    assert problems(page) == []
    assert problems(page.replace("<main>", f"<main>{raw}"))
    assert problems(page.replace("<main>", '<main><span data-step="1 x">'))


def test_a_lesson_holds_the_run_its_steps_the_baseline_and_the_verdict():
    cmp = views_compare()
    page = lesson_html(cmp, StepNotes({4: "the draft was far off here"}), INFO)
    run = cmp.speculative
    p = parse(page)
    metas = {a["data-meta"] for t, a in p.tags if "data-meta" in a}
    assert {"machine", "model pair", "method", "k (drafts per step)", "dtype", "measured",
            "exported"} <= metas
    tokens = [a for t, a in p.tags if t == "span" and "data-status" in a]
    # the token view, then each section's drafts and emitted tokens
    assert len([a for a in tokens if "data-out" in a]) >= len(run.output_token_ids)
    sections = [int(a["data-step"]) for t, a in p.tags if t == "section"]
    assert sections == [run.steps[i].index for i in emitting_step_indices(run)]
    bars = [int(a["data-step"]) for t, a in p.tags if t == "rect" and "data-step" in a]
    assert bars == [s.index for s in run.steps]
    assert len([a for t, a in p.tags if "data-base-step" in a]) == len(cmp.baseline.steps)
    # every verified draft of the explained run has the target's top 5
    views = sum(len(s.target_views) for s in run.steps)
    assert len([a for t, a in p.tags if t == "ol" and a.get("class") == "top5"]) == views
    assert 'data-verdict="worth-it"' in page and "Baseline beside it" in page
    assert 'data-note-step="4"' in page and "the draft was far off here" in page
    assert "2026-12-04 15:00 UTC" in page and "not explained" not in page


def test_a_lesson_loads_nothing_and_runs_only_its_own_script():
    page = lesson_html(views_compare(), info=INFO)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    policy = csp.group(1).replace("&#x27;", "'")
    assert "default-src 'none'" in policy and f"script-src {script_hash(LESSON_JS)};" in policy
    assert not re.search(r"https?://", page)
    assert "plotly" not in page.lower()


def test_every_string_of_a_hostile_trace_and_of_the_notes_is_escaped():
    record = load(json.dumps(hostile_compare()))
    notes = StepNotes({1: payload("prompt"), 3: "</aside></section>" + payload("text")})
    page = lesson_html(record, notes, LessonInfo(exported_utc=payload("status"),
                                                 source=payload("memory")))
    assert problems(page) == []
    assert CANARY in page  # the payloads are there, as text
    assert "&lt;img src=x onerror=window.__pwned=1&gt;" in page


def test_drafts_say_why_they_were_kept_or_dropped():
    run = make_explained()
    s = run.steps
    assert draft_reason(run, s[2], 0) == "kept: the target's likeliest token too (90%)"
    assert draft_reason(run, s[2], 1) == ("dropped: the target gave it 7% and put ',' (81%) "
                                          "in its place")
    assert draft_reason(run, s[2], 2) == ("dropped: it came after the rejected 2nd draft ' 2', "
                                          "so the target never checked it")
    assert draft_reason(run, s[4], 0) == ("dropped: the target gave it <0.1% and put '\"y' "
                                          "(60%) in its place")
    assert draft_reason(run, s[6], 2) == "unused: the output ended before it (finish reason: length)"
    sampled = make_explained(temperature=0.8)
    assert "min(1, p/q) = 90%" in draft_reason(sampled, sampled.steps[2], 0)


def test_an_unexplained_lone_trace_says_what_it_lacks():
    run = views_compare().speculative
    for s in run.steps:
        s.target_views = []
    run.explanation = None
    page = lesson_html(run, info=INFO)
    assert "not explained" in page and "no baseline run" in page and "no checklist" in page
    assert problems(page) == []
    assert 'class="top5"' not in page


def test_the_timeline_draws_the_step_anatomy_when_timed():
    timed = timeline_svg(with_anatomy(), with_anatomy(baseline=True))
    assert timed.count('class="p0"') == len(with_anatomy().steps) + len(
        with_anatomy(baseline=True).steps)  # a forward part in every step
    assert "part of the step" in timed
    plain = timeline_svg(views_compare().speculative)
    assert 'class="p0"' not in plain and "part of the step" not in plain


def test_a_256_token_explained_run_exports_to_at_most_3_mb():
    record = load(dumps(explained_compare(256)))
    assert isinstance(record, CompareRecord)
    run = record.speculative
    assert len(run.output_token_ids) == 256 and run.explanation is not None
    assert all(s.anatomy is not None for s in run.steps)
    page = lesson_html(record, StepNotes({3: "n" * 1000}), INFO).encode("utf-8")
    assert len(page) <= 3 * MB, f"{len(page) / MB:.2f} MB"
    # the whole run: every output token in the token view, and again in its step's section
    assert page.count(b"data-out=") == 2 * len(run.output_token_ids)


def test_a_run_too_long_for_a_lesson_is_refused_in_one_line():
    with pytest.raises(LessonError, match=f"at most {MAX_LESSON_STEPS:,}"):
        lesson_html(long_compare(MAX_LESSON_STEPS + 1), info=INFO)
