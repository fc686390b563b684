"""Who asked for a job (``job_for``: the login name, None without logins), and
``?run=<id>``, which opens a saved run (``opened_run``)."""
from __future__ import annotations

from typing import Any

import gradio as gr

from space.records.events import Origin
from space.records.history import History, HistoryError
from space.records.schema import TraceFormatError, load
from space.runs.events import Job, Publisher
from vis import text
from vis.history import when, who


def job_for(publisher: Publisher, request: gr.Request | None) -> Job:
    """A page job of the visitor behind ``request``, told to the page's observers."""
    return Job(publisher, Origin(getattr(request, "username", None) or None))


def opened_run(history: History, run_id_text: str) -> tuple[Any, str] | str:
    """(record, status message) for ``?run=<id>``, or a one-line reason; a sweep,
    traffic run or tipping curve comes as its JSON text."""
    try:
        run_id = int(run_id_text)
    except ValueError:
        return f"?run={run_id_text[:20]!r} is not a run number"
    try:
        found = history.get(run_id)
    except HistoryError as exc:
        return f"the history cannot be read: {exc}"
    if found is None:
        return f"there is no run #{run_id} in the history (deleted, or past the retention cap)"
    row, record_json = found
    said = f"run #{row.id}, run by {who(row.user)} on {when(row.created_s)}"
    if row.kind in ("sweep", "traffic", "tipping"):
        return record_json, said
    try:
        record = load(record_json)
    except TraceFormatError as exc:
        return f"run #{row.id} cannot be shown: {exc}"
    return record, f"{said}: {text.summary(record)}"
