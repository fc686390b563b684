"""A comparison run in a worker thread, reported as a stream of events.

``runner.compare`` reports progress (engine builds, warm-up) and streams the
speculative run's steps through callbacks on the thread that runs it. A
Gradio generator handler cannot yield from inside those callbacks, so the
run goes to a worker thread and the callbacks put events on a queue that the
handler iterates. Steps that arrive while the page is still drawing the last
update are merged into one event, so a slow client never falls behind.
"""
from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from space.config import EngineSpec, RequestSpec
from space.trace import CompareRecord, StepRecord


@dataclass
class Progress:
    message: str


@dataclass
class Steps:
    """Every step of the speculative run so far (not only the new ones)."""

    steps: list[StepRecord]
    texts: dict[int, str] = field(default_factory=dict)


@dataclass
class Done:
    record: CompareRecord


Event = Progress | Steps | Done


class LiveCompare:
    """Iterate to run ``runner.compare``; exceptions from the run re-raise here."""

    def __init__(self, spec: EngineSpec, req: RequestSpec, repeats: int = 1,
                 warmup: bool | Literal["once"] = "once",
                 compare: Callable[..., CompareRecord] | None = None) -> None:
        self.spec, self.req, self.repeats, self.warmup = spec, req, repeats, warmup
        self.compare = compare  # None: space.runner.compare (tests pass a fake)
        self._events: queue.Queue = queue.Queue()
        self._steps: list[StepRecord] = []
        self._texts: dict[int, str] = {}

    def _on_step(self, _rid: str, step: StepRecord, texts: dict[int, str]) -> None:
        self._events.put(("step", step, texts))

    def _progress(self, _frac: float, message: str) -> None:
        self._events.put(("progress", message))

    def _work(self) -> None:
        try:
            if self.compare is None:
                from space.runner import compare  # imports vLLM
                self.compare = compare
            record = self.compare(self.spec, self.req, repeats=self.repeats,
                                  on_step=self._on_step, progress=self._progress,
                                  warmup=self.warmup)
            self._events.put(("done", record))
        except BaseException as exc:  # handed to the handler's thread, raised there
            self._events.put(("error", exc))

    def __iter__(self) -> Iterator[Event]:
        ctx = contextvars.copy_context()  # keep Gradio's request context in the worker
        threading.Thread(target=ctx.run, args=(self._work,), daemon=True,
                         name="speclens-run").start()
        while True:
            batch = [self._events.get()]
            while not self._events.empty():
                batch.append(self._events.get_nowait())
            yield from self._merge(batch)
            if batch[-1][0] in ("done", "error"):
                return

    def _merge(self, batch: list[tuple]) -> Iterator[Event]:
        """Progress and the end pass through in order; steps merge into one event."""
        new_steps = False
        for item in batch:
            if item[0] == "step":
                self._steps.append(item[1])
                self._texts.update(item[2])
                new_steps = True
                continue
            if new_steps:
                yield Steps(list(self._steps), dict(self._texts))
                new_steps = False
            if item[0] == "progress":
                yield Progress(item[1])
            elif item[0] == "done":
                yield Done(item[1])
            else:
                raise item[1]
        if new_steps:
            yield Steps(list(self._steps), dict(self._texts))
