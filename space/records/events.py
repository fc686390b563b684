"""What the Runs layer says when a job starts or ends (pure records), published by
``space.runs.events`` to the metrics, the Live tab's log and the run history. Results of jobs
defined above this layer are held as ``Writable``."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, get_args

from space.records.config import EngineSpec
from space.records.trace import CompareRecord, RunTrace, Writable

EngineLabel = Literal["baseline", "speculative"]
# What a run is part of; None: a job of its own (a page run, a CLI compare).
PartOf = Literal["sweep", "workload", "traffic"]


@dataclass(frozen=True)
class Origin:
    user: str | None = None       # the login name; None without logins, or from the CLI
    part_of: PartOf | None = None  # the outermost job this run belongs to

    def inside(self, job: PartOf) -> Origin:
        """The origin of a run inside ``job`` (the outermost job is kept)."""
        return self if self.part_of else dataclasses.replace(self, part_of=job)


@dataclass(frozen=True)
class RunStarted:
    spec: EngineSpec
    origin: Origin = Origin()


@dataclass(frozen=True)
class RunFinished:
    record: CompareRecord | RunTrace  # its runs carry their request (temperature, ...)
    origin: Origin = Origin()

    def runs(self) -> list[tuple[EngineLabel, RunTrace]]:
        """The finished requests by engine (a comparison's median runs)."""
        r = self.record
        if isinstance(r, CompareRecord):
            return [("baseline", r.baseline), ("speculative", r.speculative)]
        return [("speculative" if r.speculative else "baseline", r)]


@dataclass(frozen=True)
class RunFailed:
    """An error that is not the visitor's input (a bug, a dead engine)."""

    spec: EngineSpec
    error: str                    # the exception's type name
    origin: Origin = Origin()


@dataclass(frozen=True)
class SweepFinished:
    result: Writable              # space.runs.sweep.SweepResult or GridResult
    variable: str                 # the swept variable, or "k_x_concurrency"
    spec: EngineSpec              # method, draft and k as asked (k is swept over a k sweep)
    origin: Origin = Origin()


@dataclass(frozen=True)
class TippingMeasured:
    curve: Writable               # space.judge.curves.TippingCurve
    label: str                    # the curve's own name ("ngram k=4 on ...")
    spec: EngineSpec
    origin: Origin = Origin()


@dataclass(frozen=True)
class TrafficFinished:
    result: Any                   # space.judge.traffic.TrafficResult (to_dict(keep_prompts))
    spec: EngineSpec
    origin: Origin = Origin()


Event = RunStarted | RunFinished | RunFailed | SweepFinished | TippingMeasured | TrafficFinished
# What each event that ends a job counts as (the jobs counter's kind label).
JobKind = Literal["compare", "trace", "sweep", "tipping", "traffic"]
JOB_KINDS: tuple[JobKind, ...] = get_args(JobKind)
_JOB_ENDED: dict[type, JobKind] = {SweepFinished: "sweep", TippingMeasured: "tipping",
                                   TrafficFinished: "traffic"}


def job_kind(event: Event) -> JobKind | None:
    """The job ``event`` ends; None for a start, a failure, or a part of a larger job."""
    if isinstance(event, RunStarted | RunFailed) or event.origin.part_of:
        return None
    if isinstance(event, RunFinished):
        return "compare" if isinstance(event.record, CompareRecord) else "trace"
    return _JOB_ENDED[type(event)]
