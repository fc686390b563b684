"""The run history's observer: every job that ends goes into the history.

``HistoryRecorder`` hears the events of ``space.runs.events`` and saves each
finished job (a comparison or a trace, a sweep, a tipping curve, a traffic
run) with the login name of whoever started it. A run that is part of a
larger job is saved with that job, not on its own. Its reply, ``Saved``,
says under which number the job was saved, or why not: the page puts the
run's link in its status line from it.
"""
from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass

from space.records.events import (
    Event,
    RunFinished,
    SweepFinished,
    TippingMeasured,
    TrafficFinished,
)
from space.records.history import (
    History,
    HistoryError,
    NewRun,
    compare_run,
    sweep_run,
    tipping_run,
    traffic_run,
)
from space.records.trace import CompareRecord
from space.runs.events import PROCESS, Publisher
from space.runs.flags import open_history

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Saved:
    """The history's answer for one finished job."""

    run_id: int | None     # None: not saved
    reason: str = ""       # why not (one line, never a traceback)


class HistoryRecorder:
    """An observer (``Publisher.subscribe("history", recorder)``). ``private``: the
    operator's ``--traffic-private``, traffic runs saved without prompt text."""

    def __init__(self, history: History, private_traffic: bool = False) -> None:
        self.history, self.private_traffic = history, private_traffic

    def __call__(self, event: Event) -> Saved | None:
        row = self.row(event)
        if row is None:
            return None
        try:
            return Saved(self.history.save(row))
        except Exception as exc:  # a history that cannot take it never costs the result
            log.exception("saving the run to the history failed")
            return Saved(None, str(exc) if isinstance(exc, HistoryError) else type(exc).__name__)

    def row(self, event: Event) -> NewRun | None:
        """The history row of a finished job; None for anything else."""
        if event.origin.part_of:
            return None
        user = event.origin.user
        if isinstance(event, RunFinished) and isinstance(event.record, CompareRecord):
            return compare_run(event.record, user)
        if isinstance(event, SweepFinished):
            d = event.result.to_dict()
            d.setdefault("variable", event.variable)  # a k x concurrency grid has none
            return sweep_run(d, event.spec.model, event.spec.method or None, event.spec.k, user)
        if isinstance(event, TippingMeasured):
            return tipping_run(event.curve.to_dict(), user)
        if isinstance(event, TrafficFinished):
            d = event.result.to_dict(keep_prompts=not self.private_traffic)
            return traffic_run(d, event.spec.model, user)
        return None  # a start, a failure, a single trace (the page saves comparisons)


def record_to_history(a: argparse.Namespace, publisher: Publisher = PROCESS) -> None:
    """The CLI's ``--record``: ``publisher`` (the process's, which runs use when their
    caller names no job) saves what this process runs to the data folder's history,
    as the page does. ``HistoryError`` says why the history cannot be opened."""
    publisher.subscribe("history", HistoryRecorder(open_history(a)))
