"""The CLI's lesson command: a saved trace or a history run as one self-contained HTML
file (docs/lesson.md). Bad input: one line, exit code 2.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from space.records import replay
from space.records.history import FILENAME, History, HistoryError
from space.records.notes import NotesError, StepNotes
from space.records.schema import TraceFormatError, load
from space.records.trace import CompareRecord, RunTrace
from space.runs.flags import data_folder
from vis.lesson import LessonError, LessonInfo, lesson_html
from vis.stepper import emitting_step_indices

MAX_NOTES_BYTES = 1 << 20  # a notes file: 200 notes of 1,000 characters fit many times over


def lesson_parser(sub) -> None:
    s = sub.add_parser("lesson", help="a run as one self-contained HTML file to step through "
                                      "offline (a saved trace or comparison, or a history id)")
    s.add_argument("source", help="a trace or compare JSON (python -m space compare --json, the "
                                  "page's download), or the id of a run in the run history")
    s.add_argument("-o", "--output", required=True, metavar="PATH", help="the lesson's HTML file")
    s.add_argument("--notes", metavar="PATH",
                   help='notes for the class: a JSON object of engine step -> text, '
                        'e.g. {"4": "the draft copied this from the prompt"}')
    s.add_argument("--data-dir", default=None,
                   help="the data folder holding the run history (default $SPECLENS_DATA_DIR)")


def utc(seconds: float | None = None) -> str:
    """'2026-12-04 16:10 UTC' for a Unix time (default now)."""
    when = (dt.datetime.now(dt.timezone.utc) if seconds is None
            else dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc))
    return when.strftime("%Y-%m-%d %H:%M UTC")


def read_source(a: argparse.Namespace) -> tuple[RunTrace | CompareRecord, LessonInfo]:
    """The record to teach from, and what the lesson says about where it came from."""
    path = Path(a.source)
    if path.exists() or not a.source.isdigit():
        try:
            record = replay.read_record(path)
        except OSError as exc:
            raise TraceFormatError(f"cannot read {a.source}: {exc.strerror}") from None
        return record, LessonInfo(exported_utc=utc(), source=path.name)
    file = data_folder(a) / FILENAME
    if not file.exists():  # opening would create an empty one
        raise HistoryError(f"no file or history run {a.source}: there is no run history at {file}")
    found = History(file).get(int(a.source))
    if found is None:
        raise HistoryError(f"no run {int(a.source)} in the run history of {data_folder(a)}")
    row, text = found
    if row.kind != "compare":
        raise HistoryError(f"run {row.id} is a {row.kind}, not a comparison: a lesson steps "
                           "through one prompt's run")
    return load(text), LessonInfo(exported_utc=utc(), measured_utc=utc(row.created_s),
                                  source=f"run history #{row.id}")


def read_notes(path: str | None, record: RunTrace | CompareRecord) -> StepNotes:
    """The notes file, checked; a note on a step the lesson does not show is refused."""
    if not path:
        return StepNotes()
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise NotesError(f"cannot read the notes: {exc.strerror}: {path}") from None
    if len(data) > MAX_NOTES_BYTES:
        raise NotesError(f"the notes file is {len(data):,} bytes; at most {MAX_NOTES_BYTES:,}")
    try:
        notes = StepNotes.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise NotesError("the notes are not UTF-8 text") from None
    run = record.speculative if isinstance(record, CompareRecord) else record
    shown = {run.steps[i].index for i in emitting_step_indices(run)}
    if unknown := notes.unknown(shown):
        first, last = min(shown, default=0), max(shown, default=0)
        raise NotesError(f"a note on engine step {unknown[0]}, which the lesson does not step "
                         f"through (its steps that emit tokens: {first}..{last})")
    return notes


def lesson(a: argparse.Namespace) -> int:
    try:
        record, info = read_source(a)
        notes = read_notes(a.notes, record)
        data = lesson_html(record, notes, info).encode("utf-8")
        Path(a.output).write_bytes(data)
    except (TraceFormatError, HistoryError, NotesError, LessonError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot write {a.output}: {exc.strerror}", file=sys.stderr)
        return 2
    print(f"wrote {a.output} ({len(data) / 1e6:.2f} MB, {len(notes.by_step)} notes)")
    return 0
