"""What the Runs layer says when a job ends: one record per kind of ending.

``space.runs.events`` publishes these to the observers the app (or the CLI)
registered at start: the metrics, the Live tab's log, the run history. Each
event carries its ``Origin``: who asked for the job, and whether the run is a
part of a larger one (a prompt of a sweep), which the history does not save
on its own.

Pure records: the results of jobs defined above this layer (a sweep, a
tipping curve, a traffic run) are held as ``Result``: anything with ``to_dict``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from space.records.config import EngineSpec
from space.records.trace import CompareRecord, RunTrace

EngineLabel = Literal["baseline", "speculative"]
# What a run is part of; None: a job of its own (a page run, a CLI compare).
PartOf = Literal["sweep", "workload", "traffic"]


@dataclass(frozen=True)
class Origin:
    """Who asked for a job, and what it is part of."""

    user: str | None = None       # the login name; None without logins, or from the CLI
    part_of: PartOf | None = None  # the outermost job this run belongs to

    def inside(self, job: PartOf) -> Origin:
        """The origin of a run inside ``job`` (the outermost job is kept).

        Example:
            >>> Origin("ada").inside("sweep").inside("workload")
            Origin(user='ada', part_of='sweep')
        """
        return self if self.part_of else dataclasses.replace(self, part_of=job)


class Result(Protocol):
    """A finished job's result as JSON-ready data (SweepResult, GridResult, TippingCurve)."""

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class RunStarted:
    """A run (compare or trace) is about to use the engines of ``spec``."""

    spec: EngineSpec
    origin: Origin = Origin()


@dataclass(frozen=True)
class RunFinished:
    """A comparison, or one traced run, ended with a record."""

    record: CompareRecord | RunTrace  # its runs carry their request (temperature, ...)
    origin: Origin = Origin()

    def runs(self) -> list[tuple[EngineLabel, RunTrace]]:
        """The finished requests by engine: a comparison's reported (median) run of
        each engine, or the one traced run."""
        r = self.record
        if isinstance(r, CompareRecord):
            return [("baseline", r.baseline), ("speculative", r.speculative)]
        return [("speculative" if r.speculative else "baseline", r)]


@dataclass(frozen=True)
class RunFailed:
    """A run ended in an error that is not the visitor's input (a bug, a dead engine)."""

    spec: EngineSpec
    error: str                    # the exception's type name
    origin: Origin = Origin()


@dataclass(frozen=True)
class SweepFinished:
    """A sweep over one variable, or a k x concurrency grid, ended."""

    result: Result                # space.runs.sweep.SweepResult or GridResult
    variable: str                 # the swept variable, or "k_x_concurrency"
    spec: EngineSpec              # method, draft and k as asked (k is swept over a k sweep)
    origin: Origin = Origin()


@dataclass(frozen=True)
class TippingMeasured:
    """A tipping curve was measured (or derived) and cached."""

    curve: Result                 # space.judge.curves.TippingCurve
    label: str                    # the curve's own name ("ngram k=4 on ...")
    spec: EngineSpec
    origin: Origin = Origin()


@dataclass(frozen=True)
class TrafficFinished:
    """A traffic file's sampled prompts were measured and answered."""

    result: Any                   # space.judge.traffic.TrafficResult (to_dict(keep_prompts))
    spec: EngineSpec
    origin: Origin = Origin()


Event = RunStarted | RunFinished | RunFailed | SweepFinished | TippingMeasured | TrafficFinished
# What each event that ends a job counts as (the jobs counter's kind label).
JobKind = Literal["compare", "trace", "sweep", "tipping", "traffic"]
JOB_KINDS: tuple[JobKind, ...] = ("compare", "trace", "sweep", "tipping", "traffic")


def job_kind(event: Event) -> JobKind | None:
    """The job ``event`` ends, or None (a start, a failure, or a part of a larger job).

    Example:
        >>> from space.records.config import EngineSpec
        >>> job_kind(RunStarted(EngineSpec())) is None
        True
    """
    if isinstance(event, RunStarted | RunFailed) or event.origin.part_of:
        return None
    if isinstance(event, RunFinished):
        return "compare" if isinstance(event.record, CompareRecord) else "trace"
    if isinstance(event, SweepFinished):
        return "sweep"
    if isinstance(event, TippingMeasured):
        return "tipping"
    return "traffic"
