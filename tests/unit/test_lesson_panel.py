"""The page's lesson tools (space/ui/lesson_panel.py): the note box follows the
step-through, notes belong to their record, Make writes the lesson. No server."""
from __future__ import annotations

from pathlib import Path

import gradio as gr
import pytest

from space.ui.lesson_panel import LessonHandlers, build_lesson_panel, record_key
from tests.helpers.hostile import payload
from tests.helpers.lessons import problems, views_compare


@pytest.fixture(scope="module")
def panel():
    with gr.Blocks():
        return build_lesson_panel()


def test_notes_follow_the_step_and_go_into_the_lesson(panel):
    h, record = LessonHandlers(panel), views_compare()
    fresh = h.follow(record, 1, {})  # a new record: no notes, no lesson yet
    state = fresh[panel.notes]
    assert state == {"key": record_key(record), "notes": {}} and fresh[panel.note] == ""
    # slider 4 is the 4th step that emits tokens: engine step 4 (step 0 is a prefill chunk)
    state = h.save(record, 4, state, "far off <here> " + payload("prompt"))[panel.notes]
    assert list(state["notes"]) == [4]
    assert h.follow(record, 4, state) == {panel.note: state["notes"][4]}
    assert h.follow(record, 3, state) == {panel.note: ""}
    made = h.make(record, state)
    value = made[panel.download].value  # the file the button offers (Gradio's file data)
    path = Path(value["path"] if isinstance(value, dict) else value)
    page = path.read_text(encoding="utf-8")
    assert 'data-note-step="4"' in page and "far off &lt;here&gt;" in page
    assert problems(page) == []
    # another record: the notes stay with theirs
    other = views_compare()
    other.speculative.finish_s += 1.0
    assert h.follow(other, 4, state)[panel.notes]["notes"] == {}


def test_without_a_record_nothing_is_made(panel):
    h = LessonHandlers(panel)
    assert h.save(None, 1, {}, "x") == {}
    assert 'data-kind="error"' in h.make(None, {})[panel.status]
