"""Attaching SpecLens's hooks to one engine, and whether each attached (``space.records.hooks``)."""
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

    Custom schedulers are non-public vLLM API: a vLLM that refuses ours gets
    its own scheduler, and runs take their counts from its per-request metrics.
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
    """Every hook point's state of a ``TracedEngine``, in the doctor's order."""
    from space.engine.score import why_rejected_state

    return [scheduler_state(engine._scheduler_why, engine.scheduler),
            *engine.clock.states(engine.spec.is_speculative), why_rejected_state(engine.runner)]


def scheduler_state(build_why: str | None, scheduler: Any) -> hooks.HookState:
    """The tracing scheduler: refused at build, stopped recording, or attached."""
    if build_why is not None:
        return hooks.missing(hooks.TRACING_SCHEDULER, build_why)
    failure = getattr(scheduler, "failure", None)
    if failure:
        return hooks.missing(hooks.TRACING_SCHEDULER, f"recording stopped: {failure}")
    return hooks.attached(hooks.TRACING_SCHEDULER)
