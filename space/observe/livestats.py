"""What the Live tab shows, from the in-process metrics; never the engine lock. Pure: no
Gradio, no vLLM. ``RunLog`` observes the Runs layer's events; ``LiveSource`` reads anew
at most every ``IDLE_S`` (``BUSY_S`` during a measured run); a failed reading is skipped.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from space.observe.memory import GpuMemory
from space.records.events import Event, JobKind, RunFinished, job_kind

log = logging.getLogger(__name__)

IDLE_S = 2.0   # refresh while no run is measured
BUSY_S = 5.0   # at most this often while one is
KEEP = 500     # runs and readings kept per log


@dataclass(frozen=True)
class RunPoint:
    """One finished request of one engine (wall clock, for the time axis)."""

    t_s: float
    engine: str
    tpot_s: float | None
    acceptance_rate: float | None
    num_drafts: int
    num_accepted_tokens_per_pos: tuple[int, ...]


@dataclass(frozen=True)
class JobPoint:
    """One job that ended (a comparison, a sweep, a tipping curve, a traffic run)."""

    t_s: float
    kind: JobKind


@dataclass(frozen=True)
class KvPoint:
    t_s: float
    engine: str
    usage_ratio: float


class RunLog:
    """Recent runs and KV readings; appends and copies are thread-safe."""

    def __init__(self) -> None:
        self._runs: deque[RunPoint] = deque(maxlen=KEEP)
        self._kv: deque[KvPoint] = deque(maxlen=KEEP)
        self._jobs: deque[JobPoint] = deque(maxlen=KEEP)
        self._lock = threading.Lock()  # held for an append or a copy, microseconds
        self._drafts: Counter[str] = Counter()
        self._per_pos: defaultdict[str, Counter[int]] = defaultdict(Counter)  # position -> count

    def __call__(self, event: Event) -> None:
        """The observer: every finished request of each engine, and jobs as they end."""
        now = time.time()
        runs = event.runs() if isinstance(event, RunFinished) else []
        with self._lock:
            for engine, run in runs:
                if run.config.synthetic:  # forced acceptance: not what it serves
                    continue
                self._runs.append(RunPoint(now, engine,
                                           run.tpot_s if len(run.output_token_ids) > 1 else None,
                                           run.acceptance_rate, run.num_drafts,
                                           tuple(run.num_accepted_tokens_per_pos)))
                self._drafts[engine] += run.num_drafts
                self._per_pos[engine].update(dict(enumerate(run.num_accepted_tokens_per_pos)))
            kind = job_kind(event)
            if kind is not None:
                self._jobs.append(JobPoint(now, kind))

    def add_kv(self, engine: str, ratio: float, now_s: float) -> None:
        with self._lock:
            self._kv.append(KvPoint(now_s, engine, ratio))

    def recent(self) -> tuple[list[RunPoint], list[KvPoint], list[JobPoint]]:
        """Copies of the runs, KV readings and jobs kept, taken together."""
        with self._lock:
            return list(self._runs), list(self._kv), list(self._jobs)

    def per_position(self) -> dict[str, list[float]]:
        """Acceptance per draft position since start, per engine that drafted:
        verify steps that accepted position p / verify steps (vLLM's definition)."""
        with self._lock:
            return {e: [counts[p] / self._drafts[e] for p in range(len(counts))]
                    for e, counts in self._per_pos.items() if self._drafts[e]}


@dataclass(frozen=True)
class Snapshot:
    taken_s: float
    busy: bool
    runs: list[RunPoint]
    kv: list[KvPoint]
    per_position: dict[str, list[float]]
    gpu: GpuMemory | None
    process_rss_bytes: int | None = None
    kv_now: dict[str, float] = field(default_factory=dict)
    jobs: list[JobPoint] = field(default_factory=list)


class LiveSource:
    """Snapshots for the Live tab. ``kv_reader`` gives {engine: KV usage ratio}
    without waiting for a run; ``gpu_reader`` one NVML reading or None."""

    def __init__(self, log_: RunLog, kv_reader: Callable[[], dict[str, float]],
                 gpu_reader: Callable[[], GpuMemory | None],
                 rss_reader: Callable[[], int] | None = None,
                 busy: Callable[[], bool] = lambda: False,
                 clock: Callable[[], float] = time.time) -> None:
        self.log, self.kv_reader, self.gpu_reader = log_, kv_reader, gpu_reader
        self.rss_reader, self.busy, self.clock = rss_reader, busy, clock
        self._cached: Snapshot | None = None
        self._lock = threading.Lock()  # two watchers take one reading, not two

    def interval_s(self) -> float:
        return BUSY_S if self.busy() else IDLE_S

    def snapshot(self) -> tuple[Snapshot, bool]:
        """(snapshot, fresh): fresh is False when the cached one is returned."""
        with self._lock:
            now, cached = self.clock(), self._cached
            if cached is not None and now - cached.taken_s < self.interval_s() * 0.9:
                return cached, False
            self._cached = self._read(now)
            return self._cached, True

    def _read(self, now: float) -> Snapshot:
        kv_now = _safe(self.kv_reader, {})
        for engine, ratio in kv_now.items():
            self.log.add_kv(engine, ratio, now)
        gpu = _safe(self.gpu_reader, None)
        rss = _safe(self.rss_reader, None) if gpu is None and self.rss_reader else None
        runs, kv, jobs = self.log.recent()
        return Snapshot(taken_s=now, busy=self.busy(), runs=runs, kv=kv,
                        per_position=self.log.per_position(), gpu=gpu,
                        process_rss_bytes=rss, kv_now=kv_now, jobs=jobs)


def _safe(reader, default):
    try:
        return reader()
    except Exception:  # an engine closed under the reader: skip this reading
        log.debug("live reading failed", exc_info=True)
        return default


class Activity:
    """How many measured runs are going (the page's runs and sweeps)."""

    def __init__(self) -> None:
        self._n = 0
        self._lock = threading.Lock()

    def __call__(self) -> bool:
        return self._n > 0

    def __enter__(self) -> Activity:
        with self._lock:
            self._n += 1
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._n -= 1
