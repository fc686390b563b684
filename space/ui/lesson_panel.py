"""The step-through's lesson tools: a note for the class on the current step, and
the run as one HTML file to step through offline (``vis.lesson``, docs/lesson.md).
Notes live in the visitor's session with the record they belong to: a new run or
replay starts with none."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import gradio as gr

from space.records.notes import MAX_NOTE_CHARS, NotesError, StepNotes
from space.ui import datadir, views
from space.ui.status import QUICK, status_html
from vis.lesson import LessonError, LessonInfo, lesson_html

NOTE_LABEL = "Note for the class on this step (shown at this step in the exported lesson)"
NOTE_HINT = "e.g. here the draft copied the variable name from the prompt"


@dataclass
class LessonPanel:
    note: gr.Textbox
    notes: gr.State          # {"key": the record's key, "notes": {engine step: text}}
    make: gr.Button
    download: gr.DownloadButton
    status: gr.HTML


def build_lesson_panel() -> LessonPanel:
    gr.Markdown("**Lesson**: the run as one HTML file that opens anywhere, offline, with this "
                "step-through, the drafts, the timeline and the checklist; your notes show at "
                "their steps.")
    note = gr.Textbox("", label=NOTE_LABEL, placeholder=NOTE_HINT, lines=2,
                      max_length=MAX_NOTE_CHARS, elem_id="step-note")
    with gr.Row():
        make = gr.Button("Make lesson (HTML)", elem_id="make-lesson", scale=0)
        download = gr.DownloadButton("Download lesson", interactive=False,
                                     elem_id="download-lesson", scale=0)
    status = gr.HTML("", elem_id="lesson-status")
    return LessonPanel(note, gr.State({}), make, download, status)


def record_key(record: views.Record | None) -> str:
    """Which record notes belong to: its run's times, steps and prompt hash."""
    if record is None:
        return ""
    run, _ = views.runs(record)
    return f"{run.arrival_s!r}/{run.finish_s!r}/{len(run.steps)}/{run.request.prompt_sha256}"


def notes_of(record: views.Record | None, state: Any) -> StepNotes:
    """The session's notes when they belong to ``record``; else none."""
    if not isinstance(state, dict) or state.get("key") != record_key(record):
        return StepNotes()
    return StepNotes(dict(state.get("notes") or {}))


class LessonHandlers:
    def __init__(self, panel: LessonPanel) -> None:
        self.p = panel

    def follow(self, record, slider, state) -> dict:
        """The note box at the step shown; a new record starts without notes."""
        p = self.p
        step = views.shown_step(record, slider)
        if isinstance(state, dict) and state.get("key") == record_key(record):
            return {p.note: notes_of(record, state).get(step) if step is not None else ""}
        return {p.note: "", p.notes: {"key": record_key(record), "notes": {}},
                p.download: gr.DownloadButton(value=None, interactive=False), p.status: ""}

    def save(self, record, slider, state, text) -> dict:
        """The note on the step shown, kept for the lesson; a lesson made before is stale."""
        p = self.p
        step = views.shown_step(record, slider)
        if step is None:
            return {}
        try:
            notes = notes_of(record, state).with_note(step, str(text or ""))
        except NotesError as exc:
            return {p.status: status_html(str(exc), "error")}
        return {p.notes: {"key": record_key(record), "notes": notes.by_step},
                p.download: gr.DownloadButton(value=None, interactive=False),
                p.status: status_html(f"{len(notes.by_step)} note(s); make the lesson again "
                                      "to include them", "info")}

    def make(self, record, state) -> dict:
        p = self.p
        if record is None:
            return {p.status: status_html("run a prompt or open a saved trace first", "error")}
        notes = notes_of(record, state)
        try:
            now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            info = LessonInfo(exported_utc=now, source="the SpecLens page")
            data = lesson_html(record, notes, info).encode("utf-8")
        except LessonError as exc:
            return {p.status: status_html(str(exc), "error")}
        path = datadir.export_folder("speclens-lesson-") / "speclens-lesson.html"
        path.write_bytes(data)
        return {p.download: gr.DownloadButton(value=str(path), interactive=True),
                p.status: status_html(f"lesson ready: {len(data) / 1e6:.2f} MB, "
                                      f"{len(notes.by_step)} note(s)", "done")}


def wire(ui, panel: LessonPanel) -> None:
    """The note box follows the step-through, typing keeps the note, Make writes the file."""
    h, s = LessonHandlers(panel), ui.stepper
    shown = [panel.note, panel.notes, panel.download, panel.status]
    s.slider.change(h.follow, [ui.state, s.slider, panel.notes], shown, **QUICK)
    panel.note.input(h.save, [ui.state, s.slider, panel.notes, panel.note],
                     [panel.notes, panel.download, panel.status], trigger_mode="always_last",
                     **QUICK)
    panel.make.click(h.make, [ui.state, panel.notes], [panel.download, panel.status],
                     api_name="lesson", concurrency_limit=1, concurrency_id="lesson",
                     show_progress="minimal")

