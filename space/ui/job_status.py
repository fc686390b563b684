"""What a long job's tab (the run, Sweep, Tipping, Traffic) shares: its handlers' state, and
its status box's progress and failure."""
from __future__ import annotations

import functools
import html
from collections.abc import Generator
from typing import Any

import gradio as gr

from space.records.config import EngineSpec
from space.runs import offer as offers
from space.runs.events import Publisher
from space.runs.source import Engines, Source
from space.ui.live import Event, LiveJob, Progress, Work, follow, guarded
from space.ui.status import status_html


class JobHandlers:
    """A long job's handlers: the page's start spec, what a visitor may pick, who hears
    how the job ends, and where it runs."""

    def __init__(self, panel: Any, base_spec: EngineSpec, offer: offers.Offer | None = None,
                 publisher: Publisher | None = None, source: Source | None = None) -> None:
        self.panel, self.base_spec = panel, base_spec
        self.offer = offer or offers.build(base_spec)  # the drafts a visitor may pick
        self.publisher = publisher or Publisher()  # the page's observers (space.ui.app)
        self.source = source or Engines()  # where the page's runs go

    def _follow(self, work: Work, progress: Any, what: str) -> Generator[Any, None, Any]:
        """``live.follow`` of ``work`` in a ``LiveJob``: its ``Progress`` events on
        Gradio's bar and in the tab's status box; returns the work's result."""
        def shown(ev: Event) -> dict | None:
            if not isinstance(ev, Progress):
                return None
            progress(ev.fraction, desc=ev.message)
            return {self.panel.status: status_html(ev.message, "working")}

        return (yield from follow(LiveJob(work), shown, what))

    def _guarded(self, body: Generator[Any, None, Any], what: str, stopped: str,
                 expected: tuple[type[Exception], ...],
                 detail: bool = False) -> Generator[Any, None, Any]:
        """``live.guarded`` answering in the tab's status box: ``stopped`` on Stop, an
        expected failure as a toast and a line there."""
        return (yield from guarded(body, what, {self.panel.status: status_html(stopped)},
                                   functools.partial(failure_shown, self.panel.status), expected,
                                   detail))


def failure_shown(status: gr.HTML, message: str) -> dict:
    """A one-line failure as a toast and in ``status``."""
    gr.Warning(html.escape(message))  # a toast is drawn as HTML; messages quote input
    return {status: status_html(message, "error")}
