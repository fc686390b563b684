"""The baseline engine and a small LRU cache of speculative engines.

Method, draft and k are fixed when a vLLM engine is built, so a change builds a
new speculative engine. Recently used ones are kept while they fit the memory
budget; the least recently used is closed (and its memory freed) first.
Runs are serialized with ``lock``: both engines share the machine, and
overlapping runs would corrupt each other's timings.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from space.common.progress import Progress
from space.engine.hardware import resolve_spec
from space.observe.memory import ReadingCache
from space.records.config import EngineSpec

if TYPE_CHECKING:  # imports vLLM: at runtime only when an engine is built
    from space.engine.core import TracedEngine

log = logging.getLogger(__name__)


class EnginePool:
    def __init__(self, max_speculative: int = 2) -> None:
        self.max_speculative = max(1, max_speculative)  # engines kept besides the baseline
        self.lock = threading.RLock()
        self.readings = ReadingCache()  # the engines' memory, for readers that must not wait
        self._baseline: TracedEngine | None = None
        self._spec: OrderedDict[EngineSpec, TracedEngine] = OrderedDict()

    def baseline(self, spec: EngineSpec, progress: Progress | None = None) -> TracedEngine:
        """The baseline engine for ``spec``'s target (rebuilt when the target changes)."""
        base = resolve_spec(spec).baseline()
        with self.lock:
            if self._baseline is None or self._baseline.spec != base:
                self._close(self._baseline)
                self._baseline = None
                self._baseline = _build(base, progress)
            return self._baseline

    def speculative(self, spec: EngineSpec, progress: Progress | None = None) -> TracedEngine:
        spec = resolve_spec(spec)  # keyed on the dtype that runs, never "not given"
        with self.lock:
            if spec in self._spec:
                self._spec.move_to_end(spec)
                return self._spec[spec]
            # Free before building: the budget must hold the new engine too.
            while len(self._spec) >= self.max_speculative:
                _, old = self._spec.popitem(last=False)
                log.info("closing the least recently used engine (%s)", old.spec.method)
                self._close(old)
            engine = _build(spec, progress)
            self._spec[spec] = engine
            return engine

    def cached_specs(self) -> list[EngineSpec]:
        return list(self._spec)

    def current(self) -> list[TracedEngine]:
        """The engines built so far: the baseline, then the most recently used
        speculative one; nothing is built."""
        with self.lock:
            latest = [next(reversed(self._spec.values()))] if self._spec else []
            return ([self._baseline] if self._baseline is not None else []) + latest

    def peek(self) -> list[TracedEngine]:
        """``current()`` without the lock, for readers that must never wait for a
        run (the Live tab); an engine being built or closed may be missed."""
        try:
            spec = list(self._spec.values())  # a copy: a build may change the dict
        except RuntimeError:  # changed during the copy
            spec = []
        base = self._baseline
        return ([base] if base is not None else []) + spec[-1:]

    def close_all(self) -> None:
        with self.lock:
            for e in self._spec.values():
                self._close(e)
            self._spec.clear()
            self._close(self._baseline)
            self._baseline = None

    @staticmethod
    def _close(engine: TracedEngine | None) -> None:
        if engine is not None:
            engine.close()


def _build(spec: EngineSpec, progress: Progress | None) -> TracedEngine:
    from space.engine.core import TracedEngine  # imports vLLM (seconds), once

    return TracedEngine(spec, progress)
