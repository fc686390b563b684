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

from space.trace import TraceFormatError, load
from space.ui import views
from space.ui.handlers import status_html
from tests.hostile import (
    clean_compare,
    hostile_compare,
    markup_problems,
    payloads,
    plot_problems,
)

MARKUP = st.sampled_from(payloads(99) + ["\x00", "\u202e", "\ud7ff", "\r\n", "%{x}", "&amp;"])
# Control characters, lone surrogates, private use, line and paragraph separators.
ODD = st.text(alphabet=st.characters(categories=["Cc", "Cs", "Co", "Zl", "Zp"]), max_size=10)
TEXT = st.one_of(st.text(max_size=40), MARKUP, ODD)
NUMBER = st.one_of(st.integers(min_value=-(2**70), max_value=2**70),
                   st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0, -1, 2**31, 2**31 - 1, 1e308, -1e308, 5e-324]))
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, TEXT)
JSON = st.recursive(SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)), max_leaves=12)

FUZZ = settings(max_examples=300, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _paths(value, path=()):
    """Every place in a JSON document: dict keys and list items, depth first."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:6]):
            yield from _paths(v, path + (i,))


def _set(doc, path, value, delete=False):
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


@st.composite
def broken_files(draw) -> str:
    doc = draw(st.sampled_from([clean_compare, hostile_compare]))()
    if draw(st.booleans()):
        doc = doc["speculative"]  # a single-run trace file
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        _set(doc, path, draw(JSON), delete=draw(st.integers(0, 5)) == 0)
    text = json.dumps(doc)  # NaN and Infinity are written as JSON's extensions
    if draw(st.integers(0, 9)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text


def _like(value):
    """Another value of the same JSON type: a file the schema lets through, but
    whose values are extreme or disagree with each other (counts past the drafts,
    ids without text, times going backwards, enormous numbers)."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.one_of(st.integers(0, 40), st.integers(0, 2**31 - 1))
    if isinstance(value, float):
        return st.floats(allow_nan=False, allow_infinity=False)
    if isinstance(value, str):
        return TEXT
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return st.lists(st.one_of(st.integers(0, 40), st.integers(0, 2**31 - 1)), max_size=8)
    return st.just(value)


@st.composite
def odd_valid_files(draw) -> str:
    doc = draw(st.sampled_from([clean_compare, hostile_compare]))()
    if draw(st.booleans()):
        doc = doc["speculative"]
    for _ in range(draw(st.integers(1, 6))):
        paths = [p for p in _paths(doc) if p and p[-1] != "version"]
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        _set(doc, path, draw(_like(parent[path[-1]])))
    return json.dumps(doc)


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
    problems += markup_problems(status_html(views.summary(record), "done"))
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
        assert "\n" not in message and len(message) < 300
        assert message.startswith(("not a SpecLens trace", "this trace was written by"))
        return
    event("rendered")
    assert render_everything(record) == []


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.one_of(st.text(), st.binary().map(lambda b: b.decode("latin-1")), JSON.map(json.dumps)))
def test_any_text_is_refused_in_one_line_or_loads(text):
    try:
        record = load(text)
    except TraceFormatError as exc:
        assert "\n" not in str(exc)
        return
    assert render_everything(record) == []
