"""Runs publish ``space.records.events`` through their ``Job`` to the observers registered
at start (metrics, the Live log, the history). Observers run in order on the job's thread,
maybe with the engine lock held: quick, never taking it; one that raises is logged, skipped."""
from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from space.common.cancel import Cancelled
from space.engine.models import ModelError
from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.records.events import Event, Origin, PartOf, RunFailed, RunFinished, RunStarted
from space.records.trace import CompareRecord, RunTrace

log = logging.getLogger(__name__)

Observer = Callable[[Event], Any]  # what it returns is the publisher's reply under its name


class Publisher:
    """Observers by name, told of every event in the order they were registered."""

    def __init__(self) -> None:
        self._observers: list[tuple[str, Observer]] = []
        self._lock = threading.Lock()  # registering at start vs. a job publishing

    def subscribe(self, name: str, observer: Observer) -> None:
        with self._lock:
            if any(n == name for n, _ in self._observers):
                raise ValueError(f"an observer named {name!r} is registered already")
            self._observers.append((name, observer))

    def publish(self, event: Event) -> dict[str, Any]:
        """Tell every observer; {name: what it returned} of those that did not raise."""
        with self._lock:
            observers = list(self._observers)
        replies: dict[str, Any] = {}
        for name, observer in observers:
            try:
                replies[name] = observer(event)
            except Exception:  # one broken consumer never costs the others or the run
                log.exception("the %s observer failed on %s", name, type(event).__name__)
        return replies


# Where a run publishes when its caller gave no job (the CLI, the engine tests).
PROCESS = Publisher()


@dataclass(frozen=True)
class Job:
    """Where a job's events go and whose job it is. ``replies``: the observers' answers
    to the job's own end, not its parts (the page shows the history's run link)."""

    publisher: Publisher = PROCESS
    origin: Origin = Origin()
    replies: dict[str, Any] = field(default_factory=dict, compare=False)

    def inside(self, part_of: PartOf) -> Job:
        """This job's runs inside a larger one, marked so the history does not save them alone."""
        return dataclasses.replace(self, origin=self.origin.inside(part_of))

    def publish(self, event: Event) -> dict[str, Any]:
        replies = self.publisher.publish(event)
        if event.origin.part_of is None:
            self.replies.update((k, v) for k, v in replies.items() if v is not None)
        return replies


R = TypeVar("R", CompareRecord, RunTrace)


def published(job: Job, spec: EngineSpec, req: RequestSpec, run: Callable[[], R]) -> R:
    """``run()``, told to ``job``: started, then finished with its record, or failed.
    Input errors and a stop are the visitor's doing, not the run's: no failure."""
    job.publish(RunStarted(spec, job.origin))
    try:
        record = run()
    except (ConfigError, ModelError, Cancelled):
        raise
    except Exception as exc:
        job.publish(RunFailed(spec, type(exc).__name__, job.origin))
        raise
    job.publish(RunFinished(record, job.origin))
    return record
