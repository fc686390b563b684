"""A teacher's notes (space/records/notes.py): bounded, checked, plain text. Pure."""
from __future__ import annotations

import json

import pytest

from space.records.notes import MAX_NOTE_CHARS, MAX_NOTES, NotesError, StepNotes


def test_notes_read_from_a_file_are_cleaned_and_sorted():
    notes = StepNotes.loads(json.dumps({"9": " all four kept\r\n", "4": "copied\x1b[31m", "5": " "}))
    assert notes.by_step == {4: "copied[31m", 9: "all four kept"}  # the blank one is no note
    assert StepNotes.loads(notes.to_json()) == notes
    assert notes.unknown({4, 5}) == [9]


def test_editing_a_note_replaces_or_removes_it():
    notes = StepNotes().with_note(3, "first").with_note(3, "second").with_note(1, "a")
    assert notes.by_step == {1: "a", 3: "second"}
    assert notes.with_note(3, "  ").by_step == {1: "a"}
    assert notes.get(2) == ""


@pytest.mark.parametrize("text, needle", [
    ("[1]", "a JSON object"),
    ('{"x": "a"}', "not an engine step number"),
    ('{"-1": "a"}', "not an engine step number"),
    ('{"\\u0663": "a"}', "not an engine step number"),  # an Arabic-Indic three: isdigit, not ASCII
    ('{"99999999999": "a"}', "not an engine step number"),
    ('{"1": 5}', "must be text"),
    ('{"1": "' + "n" * (MAX_NOTE_CHARS + 1) + '"}', f"at most {MAX_NOTE_CHARS:,}"),
    ('{"1": "\\ud800"}', "not Unicode text"),
    ("{" + ",".join(f'"{i}": "n"' for i in range(MAX_NOTES + 1)) + "}", f"at most {MAX_NOTES}"),
    ("{not json", "not valid JSON"),
])
def test_bad_notes_are_refused_in_one_line(text, needle):
    with pytest.raises(NotesError, match=needle) as e:
        StepNotes.loads(text)
    assert "\n" not in str(e.value)


def test_a_note_past_the_bound_is_refused_when_edited_too():
    with pytest.raises(NotesError, match="at most"):
        StepNotes().with_note(1, "n" * (MAX_NOTE_CHARS + 1))
