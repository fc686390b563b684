"""A comparison or a sweep in a worker thread, reported as a stream of events that a
Gradio generator handler iterates (it cannot yield from the engine's callbacks). Steps
that arrive while the page draws merge into one event; closing the stream cancels the
work before its next step; a ``Heartbeat`` every ``HEARTBEAT_S`` of quiet lets Gradio
notice a client that left.
"""
from __future__ import annotations

import contextvars
import logging
import queue
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from space.common.cancel import Cancelled
from space.records.config import EngineSpec, RequestSpec
from space.records.trace import StepRecord
from space.runs import runner
from space.runs.events import Job
from space.runs.runner import CompareRunner

log = logging.getLogger(__name__)

HEARTBEAT_S = 0.5  # how long a quiet worker goes without an event (bounds the stop delay)


@dataclass
class Progress:
    message: str
    fraction: float = 0.0


@dataclass
class Steps:
    """Every step of the speculative run so far (not only the new ones)."""

    steps: list[StepRecord]
    texts: dict[int, str] = field(default_factory=dict)


@dataclass
class Done:
    record: Any  # what the work returned: a CompareRecord, a SweepResult


@dataclass
class MeasuredRun:
    """A measured repeat starts (``index`` from 0 of ``count``)."""

    index: int
    count: int


@dataclass
class Heartbeat:
    """Nothing new; lets the handler yield so Gradio can tell whether its client is there."""


Event = Progress | MeasuredRun | Steps | Done | Heartbeat
# work(on_step, progress, cancel) -> result, run on the worker thread
Work = Callable[[Callable, Callable[[float, str], None], threading.Event], Any]


class LiveJob:
    """Iterate to run ``work`` in a worker thread; exceptions from it re-raise here."""

    def __init__(self, work: Work) -> None:
        self.work = work
        self.cancel = threading.Event()
        self._events: queue.Queue = queue.Queue()
        self._steps: list[StepRecord] = []
        self._texts: dict[int, str] = {}

    def stop(self) -> None:
        """Ask the work to stop before its next engine step (returns at once)."""
        self.cancel.set()

    def _on_step(self, _rid: str, step: StepRecord, texts: dict[int, str]) -> None:
        self._events.put((step, texts))

    def _work(self) -> None:
        def progress(frac: float, message: str) -> None:
            self._events.put(Progress(message, frac))

        try:
            self._events.put(Done(self.work(self._on_step, progress, self.cancel)))
        except BaseException as exc:  # handed to the handler's thread, raised there
            self._events.put(exc)

    def __iter__(self) -> Iterator[Event]:
        ctx = contextvars.copy_context()  # keep Gradio's request context in the worker
        threading.Thread(target=ctx.run, args=(self._work,), daemon=True,
                         name="speclens-run").start()
        try:
            while True:
                try:
                    batch = [self._events.get(timeout=HEARTBEAT_S)]
                except queue.Empty:
                    yield Heartbeat()
                    continue
                while not self._events.empty():
                    batch.append(self._events.get_nowait())
                yield from self._merge(batch)
                if isinstance(batch[-1], Done | BaseException):
                    return
        finally:  # finished, failed, or closed because the client left: nothing more runs
            self.stop()

    def _merge(self, batch: list) -> Iterator[Event]:
        """Events and the end pass through in order; (step, texts) merge into one event."""
        new_steps = False
        for item in batch:
            if isinstance(item, tuple):
                self._steps.append(item[0])
                self._texts.update(item[1])
                new_steps = True
                continue
            if new_steps:
                yield Steps(list(self._steps), dict(self._texts))
                new_steps = False
            if isinstance(item, BaseException):
                raise item
            yield item
        if new_steps:
            yield Steps(list(self._steps), dict(self._texts))


def follow(job: LiveJob, show: Callable[[Event], dict | None],
           what: str) -> Generator[Any, None, Any]:
    """``result = yield from follow(job, show, "the run")`` in a Gradio generator
    handler: yields ``show(event)`` unless None, ``gr.skip()`` on a heartbeat;
    returns the job's result. The work's exceptions (``Cancelled`` too) re-raise here;
    the job stops however the handler ends."""
    try:
        for ev in job:
            if isinstance(ev, Heartbeat):
                yield gr.skip()  # lets Gradio see whether the client is still there
            elif isinstance(ev, Done):
                return ev.record
            else:
                update = show(ev)
                if update is not None:
                    yield update
        raise RuntimeError(f"{what} ended without a result")
    finally:
        job.stop()


def guarded(body: Generator[Any, None, Any], what: str, stopped: dict,
            failed: Callable[[str], dict], expected: tuple[type[Exception], ...],
            detail: bool = False) -> Generator[Any, None, Any]:
    """A long job's handler body with the page's answers to its ends: ``stopped`` on
    ``Cancelled``, an ``expected`` error's line through ``failed``, anything else
    logged and named by its type (and, with ``detail``, its first line). Returns the
    body's result, or None after those. GeneratorExit passes through to the body,
    whose ``finally`` stops its job."""
    try:
        return (yield from body)
    except Cancelled:
        yield stopped
    except expected as exc:
        yield failed(str(exc))
    except Exception as exc:  # anything else: log it, say it briefly, stay up
        log.exception("%s failed", what)
        name = f"{type(exc).__name__}: {short(exc)}" if detail else type(exc).__name__
        yield failed(f"{what} failed ({name}); details are in the server log")
    return None


def short(exc: BaseException) -> str:
    """The error's first line (its type without one), at most 200 characters."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "\u2026"


class LiveCompare(LiveJob):
    """A baseline and a speculative run of ``req``; ``compare`` defaults to
    space.runs.runner.compare (tests pass a fake), ``explain`` scores the drafts after
    the timed runs, ``job`` hears how it ends (None: the process's publisher)."""

    def __init__(self, spec: EngineSpec, req: RequestSpec, repeats: int = 1,
                 compare: CompareRunner | None = None, explain: bool = False,
                 job: Job | None = None) -> None:
        def work(on_step, progress, cancel: threading.Event):
            run = compare if compare is not None else runner.compare
            return run(spec, req, repeats=repeats, on_step=on_step, progress=progress,
                       warmup="once", cancel=cancel, explain=explain, job=job,
                       on_repeat=lambda index, count: self._events.put(MeasuredRun(index, count)))

        super().__init__(work)
