"""The baseline engine and the speculative engines kept beside it, within a memory budget:
least recently used ones close to make room, never the baseline for a speculative one, and
a build that cannot fit is refused (``NoRoom``) rather than left to the out-of-memory killer
(docs/memory.md). ``lock`` serializes runs: overlapping runs would corrupt the timings."""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, TypeVar

from space.common.progress import Progress
from space.engine import hardware, models
from space.observe import memory
from space.observe.memory import GiB, PoolBudget, ReadingCache
from space.records.config import ConfigError, EngineSpec
from space.records.methods import info as method_info

if TYPE_CHECKING:  # imports vLLM: at runtime only when an engine is built
    from space.engine.core import TracedEngine

log = logging.getLogger(__name__)

DEFAULT_SHARE = 0.8                 # of available RAM (CPU) or free GPU memory (GPU)
BUILD_OVERHEAD_BYTES = GiB // 2     # activations, buffers and allocator slack per engine (CPU)
BUDGET_FLAG = "--memory-budget-gb"

Key = TypeVar("Key", bound=Hashable)


class NoRoom(ConfigError):
    """An engine that does not fit the memory budget even alone beside the baseline."""


def plan_closes(held: Sequence[tuple[Key, int]], keep: set[Key], need: int,
                budget: int) -> list[Key] | None:
    """Which engines of ``held`` ((key, bytes), least recently used first) to close
    so that ``need`` more bytes fit in ``budget``; None if closing all but ``keep`` cannot."""
    total = sum(b for _, b in held)
    closes: list[Key] = []
    for key, size in held:
        if total + need <= budget:
            break
        if key in keep:
            continue
        closes.append(key)
        total -= size
    return closes if total + need <= budget else None


class EnginePool:
    def __init__(self, budget_bytes: int | None = None) -> None:
        self.lock = threading.RLock()
        self.readings = ReadingCache()  # the engines' memory, for readers that must not wait
        self.set_budget(budget_bytes)
        self._baseline: TracedEngine | None = None
        self._spec: OrderedDict[EngineSpec, TracedEngine] = OrderedDict()  # LRU first
        self._held: dict[EngineSpec, int] = {}      # bytes counted per built engine
        self._measured: dict[EngineSpec, int] = {}  # what past builds measured

    def set_budget(self, budget_bytes: int | None) -> None:
        """``--memory-budget-gb`` in bytes; None: the machine's default."""
        with self.lock:
            self._budget = budget_bytes
            self._budget_source = BUDGET_FLAG if budget_bytes is not None else ""

    def baseline(self, spec: EngineSpec, progress: Progress | None = None) -> TracedEngine:
        """The baseline engine for ``spec``'s target (rebuilt when it changes)."""
        base = hardware.resolve_spec(spec).baseline()
        with self.lock:
            if self._baseline is None or self._baseline.spec != base:
                self._close()
                # A new target: every speculative engine may go to make room.
                self._make_room(base, keep=set())
                self._baseline = self._build(base, progress)
            return self._baseline

    def speculative(self, spec: EngineSpec, progress: Progress | None = None) -> TracedEngine:
        spec = hardware.resolve_spec(spec)  # keyed on the dtype that runs, never "not given"
        with self.lock:
            if spec in self._spec:
                self._spec.move_to_end(spec)
                return self._spec[spec]
            self._make_room(spec, keep={self._baseline.spec} if self._baseline else set())
            engine = self._build(spec, progress)
            self._spec[spec] = engine
            return engine

    def budget(self) -> PoolBudget:
        """The budget and what is held now, without waiting for a run (before a build: the default)."""
        budget, source = ((self._budget, self._budget_source) if self._budget is not None
                          else default_budget())
        base = [("baseline", self._baseline.spec)] if self._baseline is not None else []
        held = base + [(spec.method or "speculative", spec) for spec in list(self._spec)]
        return PoolBudget(budget, source, tuple((n, self._held.get(s, 0)) for n, s in held))

    def cached_specs(self) -> list[EngineSpec]:
        return list(self._spec)

    def current(self) -> list[TracedEngine]:
        """The baseline, then the most recently used speculative engine (none built)."""
        with self.lock:
            return self.peek()

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
            for spec in [*self._spec, None]:
                self._close(spec)

    def need_bytes(self, spec: EngineSpec) -> int:
        """What building ``spec`` is counted as needing: its last build's measure, else the estimate."""
        spec = hardware.resolve_spec(spec)
        return self._measured.get(spec) or estimate_bytes(spec)

    def held_bytes(self) -> int:
        return sum(self._held.values())

    def _make_room(self, spec: EngineSpec, keep: set[EngineSpec]) -> None:
        need = self.need_bytes(spec)
        if self._budget is None:
            self._budget, self._budget_source = default_budget()
        budget = self._budget
        # Least recently used first: the speculative engines, then the baseline.
        order = list(self._spec) + ([self._baseline.spec] if self._baseline is not None else [])
        closes = plan_closes([(s, self._held.get(s, 0)) for s in order], keep, need, budget)
        if closes is None:
            kept = sum(self._held.get(s, 0) for s in keep)
            raise NoRoom(
                f"not enough memory for this engine: it needs about {memory.fmt_bytes(need)}"
                + (f" beside the baseline's {memory.fmt_bytes(kept)}" if kept else "")
                + f", and the engines' memory budget is {memory.fmt_bytes(budget)} "
                f"({self._budget_source}); choose a smaller model pair or KV cache, or raise "
                f"{BUDGET_FLAG} if the machine has the memory")
        for s in closes:
            log.info("closing the least recently used engine (%s) to fit the memory budget",
                     s.method or "baseline")
            self._close(s)

    def _build(self, spec: EngineSpec, progress: Progress | None) -> TracedEngine:
        from space.engine.core import TracedEngine  # imports vLLM (seconds), once

        before = memory.process_memory()
        engine = TracedEngine(spec, progress)
        grown = memory.process_memory() - before
        measured = engine.memory().total_bytes
        size = measured if hardware.on_gpu() else max(measured, grown)
        self._held[spec] = self._measured[spec] = size
        return engine

    def _close(self, spec: EngineSpec | None = None) -> None:
        """Close the speculative engine of ``spec``, else the baseline (if any)."""
        engine = self._spec.pop(spec, None) if spec is not None else None
        if engine is None:
            engine, self._baseline = self._baseline, None
        if engine is not None:
            self._held.pop(engine.spec, None)
            engine.close()


def estimate_bytes(spec: EngineSpec) -> int:
    """What an engine of ``spec`` will hold, before it is built: on GPU its share of
    the GPU; on CPU its weights in the dtype it runs, its KV cache and the overhead."""
    spec = hardware.resolve_spec(spec)
    if hardware.on_gpu():
        gpu = memory.gpu_memory()
        return int(spec.gpu_memory_utilization * gpu.total_bytes) if gpu else 0
    dtype = str(spec.dtype)
    names = [spec.model]
    row = method_info(spec.method) if spec.method else None
    if row is not None and row.takes_draft and spec.draft_model:
        names.append(spec.draft_model)
    folders = [f for f in map(models.local_folder, names) if f is not None]
    return (sum(models.weight_bytes(f, dtype) for f in folders)
            + hardware.kv_cache_bytes(spec.kv_cache_bytes, dtype) + BUILD_OVERHEAD_BYTES)


def default_budget() -> tuple[int, str]:
    """``DEFAULT_SHARE`` of what the machine can spare now, and how it was set."""
    pct = f"{DEFAULT_SHARE:.0%}"
    if hardware.on_gpu():
        gpu = memory.gpu_memory()
        if gpu is not None:
            return int(gpu.free_bytes * DEFAULT_SHARE), f"{pct} of the GPU's free memory"
    ram = memory.system_memory()
    return int(ram.available_bytes * DEFAULT_SHARE), f"{pct} of the RAM available at the first build"


def budget_from_flag(gb: float | None) -> int | None:
    """``--memory-budget-gb`` in bytes (None: the default); one line if it is bad."""
    if gb is None:
        return None
    if not gb > 0:
        raise ConfigError(f"{BUDGET_FLAG} must be a positive number of GB, got {gb}")
    return int(gb * GiB)
