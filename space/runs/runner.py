"""In-process runs for the CLI and the app: one trace, a comparison. The process's
``POOL`` holds the engines; its lock serializes runs."""
from __future__ import annotations

import dataclasses
import logging
import threading
import weakref
from typing import TYPE_CHECKING, Literal, Protocol

from space.common.cancel import check
from space.common.progress import Progress
from space.engine.pool import EnginePool
from space.judge import measure
from space.observe.memory import EngineReading
from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.records.trace import CompareRecord, RunTrace, make_compare
from space.runs import machine_inputs
from space.runs.events import Job, published
from space.runs.preflight import preflight
from space.runs.repeats import WARMUP_TOKENS, OnRepeat, alternate

if TYPE_CHECKING:  # vLLM loads with the first engine, not with this module
    from space.engine.core import StepCallback, TracedEngine

log = logging.getLogger(__name__)
POOL = EnginePool()


class CompareRunner(Protocol):
    """How the page compares one prompt: ``compare``, or the page tests' fake
    (tests/helpers/page.py), both checked against this."""

    def __call__(self, spec: EngineSpec, req: RequestSpec, *, repeats: int,
                 on_step: StepCallback | None, progress: Progress | None,
                 warmup: bool | Literal["once"], cancel: threading.Event | None,
                 on_repeat: OnRepeat | None, explain: bool,
                 job: Job | None) -> CompareRecord: ...


_warmed: weakref.WeakSet[TracedEngine] = weakref.WeakSet()


def trace_one(spec: EngineSpec, req: RequestSpec, pool: EnginePool = POOL,
              explain: bool = False) -> RunTrace:
    """One run; ``explain`` then scores its drafts on the baseline engine (after the run)."""
    [ids] = preflight(spec, [req])  # tokenized before the lock, as in ``compare``

    def run() -> RunTrace:
        with pool.lock:
            engine = pool.speculative(spec) if spec.is_speculative else pool.baseline(spec)
            trace = engine.run(req, prompt_ids=ids)
            _remember_memory(pool)
            if explain and spec.is_speculative:
                _explain(pool.baseline(spec), trace, req, None)
            return trace

    return published(Job(), spec, req, run)


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
    """Warm-up, then ``repeats`` measured runs alternating; the record has its checklist.

    ``warmup``: True runs ``req`` through each engine first; "once" a short run on
    engines never warmed (the app); False none. ``on_step`` streams the last
    speculative run. ``explain`` scores its drafts after the timed runs. The prompt is
    tokenized before the lock (or given as ``prompt_ids``), so one visitor's long
    prompt never holds up another's run.
    """
    if not spec.is_speculative:
        raise ConfigError("compare needs a speculative method (got none)")
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, got {repeats}")
    ids = prompt_ids if prompt_ids is not None else preflight(spec, [req], progress)[0]

    def run() -> CompareRecord:
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
                lambda e, last: e.run(req, on_step if e is spec_engine and last else None,
                                      cancel, ids),
                progress, on_repeat=on_repeat)
            cmp = make_compare(bases, specs)
            machine_inputs.attach_checklist(cmp, (base, spec_engine), context)
            _remember_memory(pool)
            if explain:
                _explain(base, cmp.speculative, req, progress)
        return cmp

    return published(job or Job(), spec, req, run)


_COMPARE: CompareRunner = compare  # mypy: the real runner is a CompareRunner


def _warm_once(engine: TracedEngine, req: RequestSpec, progress: Progress | None,
               cancel: threading.Event | None, prompt_ids: list[int]) -> None:
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
            _warm_once(engine, req, progress, None, ids)
        _remember_memory(pool)


def engine_memory(pool: EnginePool = POOL) -> EngineReading:
    """What the current engines hold; never waits: during a run, the last reading."""
    return pool.readings.read(pool.lock, lambda: [e.memory() for e in pool.current()])


def _remember_memory(pool: EnginePool) -> None:
    pool.readings.store([e.memory() for e in pool.current()])
