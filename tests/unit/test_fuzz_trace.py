"""Fuzzing replayed files through ``load`` and every view (pure, in-process).

Each example takes a valid record (clean or with payloads everywhere) and
breaks it: a field replaced by any JSON value (unicode, control characters,
markup, huge or non-finite numbers, wrong types), a key removed, or the text
cut short. Whatever the file, ``load`` either refuses it with one line, or
every view renders it without an exception and without markup from the file.
The API test (tests/ui/test_fuzz_api.py) sends such files through the page.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from space.records.schema import TraceFormatError, load
from space.ui import views
from space.ui.status import status_html
from tests.helpers.fuzzing import JSON, broken_files, odd_valid_files
from tests.helpers.hostile import markup_problems, plot_problems

FUZZ = settings(max_examples=300, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def render_everything(record) -> list[str]:
    """Every view of the record; returns the problems found in its markup."""
    v = views.render(record)
    problems = []
    for fragment in (v.token_html, v.compare_html, v.acceptance_html, v.checklist_html):
        problems += markup_problems(fragment)
    for fig in (v.timeline, v.per_position, v.histogram):
        problems += plot_problems(fig)
        fig.to_json()  # what the page sends: must serialize
    first = views.step_view(record, 0)
    for pos in range(first.count if first else 0):
        sv = views.step_view(record, pos)
        for fragment in (sv.title_html, sv.context_html, sv.drafts_html, sv.emitted_html):
            problems += markup_problems(fragment)
    problems += markup_problems(status_html(v.summary, "done"))
    json_path, _ = views.write_exports(record)  # the page's downloads
    try:
        load(Path(json_path).read_text(encoding="utf-8"))  # opens again
    finally:
        shutil.rmtree(Path(json_path).parent)
    return problems


@FUZZ
@given(st.one_of(broken_files(), odd_valid_files()))
def test_a_broken_file_is_refused_in_one_line_or_renders_safely(text):
    try:
        record = load(text)
    except TraceFormatError as exc:
        message = str(exc)
        event("refused")
        assert "\n" not in message and len(message) < 500
        assert message.startswith(("not a SpecLens trace", "this trace was written by"))
        return
    event("rendered")
    assert render_everything(record) == []


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.one_of(st.text(), st.binary().map(lambda b: b.decode("latin-1")),
                 JSON.map(json.dumps)))
def test_any_text_is_refused_in_one_line_or_loads(text):
    try:
        record = load(text)
    except TraceFormatError as exc:
        assert "\n" not in str(exc)
        return
    assert render_everything(record) == []
