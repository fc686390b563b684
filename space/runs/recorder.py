"""The run history's observer: each finished job (not its parts) is saved with its
user; the reply, ``Saved``, gives the page the run's link or why not."""
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
    """``private_traffic``: ``--traffic-private``, traffic runs saved without prompt text."""

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
    """The CLI's ``--record``: save what this process runs to the history, as the page
    does; ``HistoryError`` says why the history cannot be opened."""
    publisher.subscribe("history", HistoryRecorder(open_history(a)))
