"""Runs shared by the CLI and the app: preflight, one trace, a comparison.

One process-wide ``EnginePool`` holds the engines; its lock serializes runs.
Each run tells its ``job`` (``space.runs.events``) when it starts, and how it
ends: ``RunFinished`` with its record, or ``RunFailed`` for an error that is
not the input's (bad input and a stop end the run with no event).
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import weakref
from typing import TYPE_CHECKING, Literal, Protocol

from space.common.cancel import check
from space.common.progress import Progress
from space.engine import EnginePool
from space.judge import measure
from space.observe.memory import EngineReading
from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.records.trace import CompareRecord, RunTrace, make_compare
from space.runs import machine_inputs
from space.runs.events import Job, job_or_default, published
from space.runs.preflight import preflight
from space.runs.repeats import WARMUP_TOKENS, OnRepeat, alternate

if TYPE_CHECKING:  # vLLM loads with the first engine, not with this module
    from space.engine.core import StepCallback, TracedEngine

log = logging.getLogger(__name__)
POOL = EnginePool()


class CompareRunner(Protocol):
    """How the page compares one prompt (``space.ui.live.LiveCompare``): ``compare``
    below, or the fake engine of the page tests (tests/helpers/page.py), which is
    checked against this too, so that the two cannot drift apart."""

    def __call__(self, spec: EngineSpec, req: RequestSpec, *, repeats: int,
                 on_step: StepCallback | None, progress: Progress | None,
                 warmup: bool | Literal["once"], cancel: threading.Event | None,
                 on_repeat: OnRepeat | None, explain: bool,
                 job: Job | None) -> CompareRecord: ...
_warmed: weakref.WeakSet[TracedEngine] = weakref.WeakSet()
def trace_one(spec: EngineSpec, req: RequestSpec, pool: EnginePool = POOL,
              on_step: StepCallback | None = None,
              progress: Progress | None = None,
              cancel: threading.Event | None = None, explain: bool = False,
              job: Job | None = None) -> RunTrace:
    """One run; ``explain`` then scores its drafts on the baseline engine (after the run)."""
    [ids] = preflight(spec, [req], progress)  # tokenized before the lock, as in ``compare``

    def run() -> RunTrace:
        with pool.lock:
            engine = pool.speculative(spec, progress) if spec.is_speculative \
                else pool.baseline(spec, progress)
            trace = engine.run(req, on_step, cancel, ids)
            _remember_memory(pool)
            if explain and spec.is_speculative:
                _explain(pool.baseline(spec, progress), trace, req, progress)
            return trace

    return published(job_or_default(job), spec, req, run)


def _explain(base: TracedEngine, run: RunTrace, req: RequestSpec,
             progress: Progress | None) -> None:
    """What the target thought of each draft (space/engine/score.py); never timed."""
    from space.engine.score import explain
    from space.records import hooks

    state = next((h for h in getattr(base, "hooks", ()) if h.name == hooks.WHY_REJECTED), None)
    if state is not None and not state.attached:  # the run keeps no target views
        log.warning("%s", state.sentence(base.config.vllm_version))
        return
    if progress:
        progress(1.0, "scoring the drafts with the target (after the timed runs)")
    explain(base, run, req.temperature, req.top_p)


def compare(spec: EngineSpec, req: RequestSpec, repeats: int = 3, pool: EnginePool = POOL,
            on_step: StepCallback | None = None, progress: Progress | None = None,
            warmup: bool | Literal["once"] = True,
            context: measure.Context | None = None,
            cancel: threading.Event | None = None,
            on_repeat: OnRepeat | None = None, explain: bool = False,
            prompt_ids: list[int] | None = None, job: Job | None = None) -> CompareRecord:
    """Warm-up run of each engine, then ``repeats`` measured runs, alternating.

    The record carries the checklist (``space.runs.measure.attach_checklist``);
    ``context`` names the task and what sweeps found, for its context lines.

    ``warmup``: True runs ``req`` once through each engine first; "once" warms
    only engines never warmed before, with a short run (the app: keeps
    the page fast after the first run); False skips it.
    ``on_step`` streams the last measured speculative run. ``cancel`` set:
    ``space.common.cancel.Cancelled`` before the next engine step.
    ``explain`` scores the reported speculative run's drafts on the baseline
    engine after every timed run is over (``RunTrace.explanation``).
    The prompt is tokenized before the engine lock is taken (by ``preflight``,
    or ``prompt_ids`` from a caller that ran it already), so that one visitor's
    long prompt never holds up another's run. ``job``: who hears how it ends
    (default: the process's publisher, ``space.runs.events``).
    """
    if not spec.is_speculative:
        raise ConfigError("compare needs a speculative method (got none)")
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, got {repeats}")
    ids = prompt_ids if prompt_ids is not None else preflight(spec, [req], progress)[0]
    return published(job_or_default(job), spec, req, lambda: _compare(
        spec, req, repeats, pool, on_step, progress, warmup, context, cancel, on_repeat,
        explain, ids))


def _compare(spec: EngineSpec, req: RequestSpec, repeats: int, pool: EnginePool,
             on_step: StepCallback | None, progress: Progress | None,
             warmup: bool | Literal["once"], context: measure.Context | None,
             cancel: threading.Event | None, on_repeat: OnRepeat | None, explain: bool,
             ids: list[int]) -> CompareRecord:
    with pool.lock:
        check(cancel)  # stopped while waiting for the engines: build nothing
        base = pool.baseline(spec, progress)
        spec_engine = pool.speculative(spec, progress)
        for e in (base, spec_engine):
            if warmup is True:
                e.run(req, cancel=cancel, prompt_ids=ids)
            elif warmup == "once":
                _warm_once(e, req, progress, cancel, ids)
        bases, specs = alternate(
            base, spec_engine, repeats,
            lambda e, last: e.run(req, on_step if e is spec_engine and last else None, cancel,
                                  ids),
            progress, on_repeat=on_repeat)
        cmp = make_compare(bases, specs)
        machine_inputs.attach_checklist(cmp, (base, spec_engine), context or measure.Context())
        _remember_memory(pool)
        if explain:
            _explain(base, cmp.speculative, req, progress)
    return cmp


_COMPARE: CompareRunner = compare  # mypy: the real runner is a CompareRunner


def _warm_once(engine: TracedEngine, req: RequestSpec,
               progress: Progress | None = None,
               cancel: threading.Event | None = None,
               prompt_ids: list[int] | None = None) -> None:
    if engine in _warmed:
        return
    if progress:
        progress(0.0, f"warming up the {engine.spec.method or 'baseline'} engine")
    # max_tokens does not change the prompt's ids
    engine.run(dataclasses.replace(req, max_tokens=min(req.max_tokens, WARMUP_TOKENS)),
               cancel=cancel, prompt_ids=prompt_ids)
    _warmed.add(engine)


def prepare(spec: EngineSpec, req: RequestSpec, pool: EnginePool = POOL,
            progress: Progress | None = None) -> None:
    """Build and warm the baseline and speculative engines for ``spec`` (app start)."""
    [ids] = preflight(spec, [req], progress)
    with pool.lock:
        for engine in (pool.baseline(spec, progress), pool.speculative(spec, progress)):
            _warm_once(engine, req, progress, prompt_ids=ids)
        _remember_memory(pool)


def engine_memory(pool: EnginePool = POOL) -> EngineReading:
    """What the current baseline and speculative engines hold; builds nothing and
    never waits: while a run holds the engines, the last reading (with its age)."""
    return pool.readings.read(pool.lock, lambda: [e.memory() for e in pool.current()])


def _remember_memory(pool: EnginePool) -> None:
    """A reading for ``engine_memory`` to show during the next run (the caller holds the lock)."""
    pool.readings.store([e.memory() for e in pool.current()])
