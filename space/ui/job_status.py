"""The status box of a long job's tab (Sweep, Traffic): the job's progress while it
runs, and its failure, the same on both tabs."""
from __future__ import annotations

import html
from typing import Any

import gradio as gr

from space.ui.live import Event, Progress
from space.ui.status import status_html


def progress_shown(status: gr.HTML, ev: Event, progress: Any) -> dict | None:
    """A ``Progress`` event on Gradio's bar (``progress``) and in ``status``: the only
    event a long job shows while it runs; None for the others."""
    if not isinstance(ev, Progress):
        return None
    progress(ev.fraction, desc=ev.message)
    return {status: status_html(ev.message, "working")}


def failure_shown(status: gr.HTML, message: str) -> dict:
    """A one-line failure as a toast and in ``status``."""
    gr.Warning(html.escape(message))  # a toast is drawn as HTML; messages quote input
    return {status: status_html(message, "error")}
