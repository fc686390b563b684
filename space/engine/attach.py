"""Attaching SpecLens's hooks to one engine, and whether each attached (issue 30).

Each hook point attaches or says why not (``space.records.hooks``); the
engine (``space.engine.core``) writes the states into every trace's config.
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from vllm import EngineArgs
from vllm.engine.llm_engine import LLMEngine

from space.engine.scheduler import TracingScheduler
from space.records import hooks

log = logging.getLogger(__name__)


def build_engine(args: EngineArgs, build: Callable[[EngineArgs], Any] | None = None
                 ) -> tuple[Any, str | None]:
    """The engine, and why the tracing scheduler is not in it (None: it is).

    vLLM marks custom schedulers as non-public: a vLLM whose ``Scheduler``
    changed may refuse ``TracingScheduler``. Then the engine is built with
    vLLM's own scheduler and runs take their counts from vLLM's per-request
    metrics (the second build costs a model load; only on that vLLM).
    """
    build = build or LLMEngine.from_engine_args
    if args.scheduler_cls is not TracingScheduler:
        return build(args), None
    try:
        return build(args), None
    except Exception as exc:  # noqa: BLE001 - fail soft: build without the tracing scheduler
        why = f"the engine refused TracingScheduler: {type(exc).__name__}: {exc}"
        log.warning("%s; building with vLLM's own scheduler", why)
        return build(dataclasses.replace(args, scheduler_cls=None)), why


def hook_states(engine: Any) -> list[hooks.HookState]:
    """Every hook point's state of a ``TracedEngine``, in the doctor's order: the
    tracing scheduler, the step clock's parts, the proposer timer, the why-rejected hook."""
    from space.engine.score import why_rejected_state

    states = [scheduler_state(engine._scheduler_why, engine.scheduler)]
    if engine.clock is not None:
        states += engine.clock.states(engine.spec.is_speculative)
    states.append(why_rejected_state(engine.runner))
    return states


def scheduler_state(build_why: str | None, scheduler: Any) -> hooks.HookState:
    """The tracing scheduler: refused at build (``build_why``), stopped recording
    during a run (its ``failure``), or attached."""
    if build_why is not None:
        return hooks.missing(hooks.TRACING_SCHEDULER, build_why)
    failure = getattr(scheduler, "failure", None)
    if failure:
        return hooks.missing(hooks.TRACING_SCHEDULER, f"recording stopped: {failure}")
    return hooks.attached(hooks.TRACING_SCHEDULER)
