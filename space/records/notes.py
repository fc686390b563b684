"""A teacher's notes on a run's engine steps for an exported lesson (pure): one JSON object,
engine step (``StepRecord.index``) -> text. A visitor's input: bounded here, checked when read,
escaped in HTML (vis/lesson.py)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

MAX_NOTES = 200          # notes on one run: far more than a class steps through
MAX_NOTE_CHARS = 1_000   # one note: a few sentences, not an essay
MAX_STEP = 2**31 - 1     # step indices are counts (space.records.schema.MAX_COUNT)
# Control characters but tab and newline: removed, not refused (a paste may carry them).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class NotesError(ValueError):
    """Notes that cannot be used (a one-line message)."""


def clean_note(text: str) -> str:
    """A note as stored: control characters gone, line ends as "\\n", trimmed."""
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).strip()


@dataclass(frozen=True)
class StepNotes:
    by_step: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.by_step) > MAX_NOTES:
            raise NotesError(f"at most {MAX_NOTES} notes on one run, got {len(self.by_step)}")
        for step, text in self.by_step.items():
            if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= MAX_STEP:
                raise NotesError(f"note key {str(step)[:20]!r} is not an engine step number")
            if not isinstance(text, str):
                raise NotesError(f"the note on step {step} must be text")
            if len(text) > MAX_NOTE_CHARS:
                raise NotesError(f"the note on step {step} has {len(text):,} characters; "
                                 f"a note has at most {MAX_NOTE_CHARS:,}")
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate from a JSON escape: not writable text
                raise NotesError(f"the note on step {step} is not Unicode text") from None

    def get(self, step: int) -> str:
        return self.by_step.get(step, "")

    def with_note(self, step: int, text: str) -> StepNotes:
        """With ``text`` on ``step`` (an empty text removes its note)."""
        notes = dict(self.by_step)
        text = clean_note(text)
        if text:
            notes[step] = text
        else:
            notes.pop(step, None)
        return StepNotes(dict(sorted(notes.items())))

    def unknown(self, steps: set[int]) -> list[int]:
        """The noted steps not in ``steps``."""
        return sorted(s for s in self.by_step if s not in steps)

    def to_json(self) -> str:
        return json.dumps({str(k): v for k, v in sorted(self.by_step.items())}, indent=1,
                          ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Any) -> StepNotes:
        """From a file's object, checked."""
        if not isinstance(d, dict):
            raise NotesError("notes must be a JSON object of engine step -> text, "
                             'e.g. {"4": "the draft copied this from the prompt"}')
        if len(d) > MAX_NOTES:
            raise NotesError(f"at most {MAX_NOTES} notes on one run, got {len(d)}")
        notes: dict[int, str] = {}
        for key, value in d.items():
            if not (isinstance(key, str) and key.isascii() and key.isdigit()
                    and int(key) <= MAX_STEP):
                raise NotesError(f"note key {key[:20]!r} is not an engine step number")
            if not isinstance(value, str):
                raise NotesError(f"the note on step {int(key)} must be text")
            text = clean_note(value)
            if text:
                notes[int(key)] = text
        return cls(dict(sorted(notes.items())))

    @classmethod
    def loads(cls, text: str) -> StepNotes:
        try:
            d = json.loads(text)
        except (ValueError, RecursionError) as exc:
            first = (str(exc).splitlines() or [type(exc).__name__])[0][:120]
            raise NotesError(f"notes are not valid JSON ({first})") from None
        return cls.from_dict(d)
