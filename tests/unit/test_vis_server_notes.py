"""A server run's views say why a field is missing, instead of drawing it empty:
the rejected drafts' ids, the target's side of a draft, the step anatomy
(vis/server_notes.py). On a record built by the real server path from a
hand-written stream (tests/helpers/server_records.py)."""
from __future__ import annotations

import html

from space.records.anatomy import BEFORE_ANATOMY
from space.ui import views
from tests.helpers.server_records import (
    CORRECTION_STEP,
    NO_DRAFT_IDS_STEP,
    server_compare,
    server_run,
)
from tests.helpers.traces import ngram_run, short_baseline
from vis.anatomy import step_breakdown_html
from vis.explain import draft_probability_figure
from vis.server_notes import (
    REJECTED_IDS,
    SENTENCES,
    STEP_ANATOMY,
    TARGET_VIEW,
    plot_lines,
)
from vis.stepper import describe_step
from vis.timeline import timeline_figure
from vis.tokens import token_view_html


def said(markup: str, why: str) -> bool:
    """The view's sentence for ``why``, escaped, on an element marked ``data-why``."""
    return f'data-why="{why}"' in markup and html.escape(SENTENCES[why]) in markup


def test_token_view_says_why_its_marks_have_no_ids():
    page = token_view_html(server_run())
    assert "\u00d73</span>" in page and "\u00d74</span>" in page  # the two corrections' marks
    assert said(page, REJECTED_IDS) and page.count(f'data-why="{REJECTED_IDS}"') == 1
    assert "data-why" not in token_view_html(server_run(), show_legend=False)  # compare lanes
    assert "data-why" not in token_view_html(ngram_run())  # in-process: the ids are shown


def test_stepper_counts_drafts_without_ids():
    run = server_run()
    step = describe_step(run, CORRECTION_STEP)
    assert step["sentence"] == (
        "Engine step 2: the draft proposed 4 tokens: ' w7' and 3 more whose ids the server "
        "does not report. The target accepted ' w7'; at the 2nd draft the target wanted "
        "' w8' instead, so the 3 rejected drafts are discarded and ' w8' is emitted.")
    assert "\u00d73</span>" in str(step["drafts_html"]) and said(str(step["drafts_html"]),
                                                                   REJECTED_IDS)


def test_stepper_step_whose_every_draft_was_rejected():
    """No draft id at all is still a verify step, not 'nothing to propose'."""
    step = describe_step(server_run(), NO_DRAFT_IDS_STEP)
    assert step["sentence"] == (
        "Engine step 3: the draft proposed 4 tokens, whose ids the server does not report. "
        "The target accepted no draft; at the 1st draft the target wanted ' w9' instead, so "
        "the 4 rejected drafts are discarded and ' w9' is emitted.")
    drafts = str(step["drafts_html"])
    assert "no drafts" not in drafts and "\u00d74</span>" in drafts and said(drafts, REJECTED_IDS)


def test_stepper_drafts_cut_by_max_tokens_are_unused_not_rejected():
    step = describe_step(server_run(), 4)
    assert "' w10', ' w11' and 2 more whose ids" in str(step["sentence"])
    drafts = str(step["drafts_html"])
    assert "tok-unused tok-unreported" in drafts and "2 unused draft(s)" in drafts
    assert "data-why" not in drafts


def test_stepper_says_why_a_server_step_has_no_target_side():
    run = server_run()
    assert said(str(describe_step(run, CORRECTION_STEP)["top5_html"]), TARGET_VIEW)
    assert describe_step(run, 0)["top5_html"] == ""  # the prefill verified no draft
    assert describe_step(ngram_run(), 1)["top5_html"] == ""  # in-process, not explained


def test_step_view_says_what_a_server_does_not_report():
    title = views.step_view(server_compare(), CORRECTION_STEP).title_html
    assert said(title, TARGET_VIEW) and said(title, STEP_ANATOMY)
    assert BEFORE_ANATOMY not in title  # not an old trace: a server's
    plain = views.step_view(ngram_run(), 1).title_html
    assert BEFORE_ANATOMY in plain and "data-why" not in plain


def test_step_breakdown_names_the_server():
    step = server_run().steps[CORRECTION_STEP]
    assert said(step_breakdown_html(step, source="server"), STEP_ANATOMY)
    assert BEFORE_ANATOMY in step_breakdown_html(step)


def test_draft_probability_figure_says_why_it_is_empty():
    fig = draft_probability_figure(server_run())
    assert [a.text for a in fig.layout.annotations] == [plot_lines(TARGET_VIEW)]
    assert "<br>" in plot_lines(TARGET_VIEW)  # plotly does not wrap
    assert "explain on" in draft_probability_figure(ngram_run()).layout.annotations[0].text


def test_timeline_step_anatomy_says_why_for_a_server_run():
    cmp = server_compare()
    title = timeline_figure(cmp.speculative, cmp.baseline, anatomy=True).layout.title.text
    assert plot_lines(STEP_ANATOMY) in title and BEFORE_ANATOMY not in title
    assert plot_lines(STEP_ANATOMY) not in timeline_figure(cmp.speculative).layout.title.text
    plain = timeline_figure(ngram_run(), short_baseline(), anatomy=True).layout.title.text
    assert BEFORE_ANATOMY in plain


def test_render_a_server_compare():
    """Every view of the page's record renders; the empty ones say why."""
    v = views.render(server_compare())
    assert said(v.token_html, REJECTED_IDS)
    assert v.draft_probs.layout.annotations[0].text == plot_lines(TARGET_VIEW)
    assert "through a vLLM 0.32.0 server" in v.summary
    for pos in range(len(server_run().steps)):  # every step through, none fails
        assert views.step_view(server_compare(), pos) is not None
