"""Building an engine with the tracing scheduler, or without it when vLLM refuses it."""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from vllm import EngineArgs
from vllm.engine.llm_engine import LLMEngine

log = logging.getLogger(__name__)


def build_engine(args: EngineArgs, build: Callable[[EngineArgs], Any] | None = None
                 ) -> tuple[Any, str | None]:
    """The engine, and why the tracing scheduler is not in it (None: it is). Custom schedulers
    are non-public vLLM API: a vLLM that refuses ours gets its own, and runs take their counts
    from its per-request metrics."""
    build = build or LLMEngine.from_engine_args
    try:
        return build(args), None
    except Exception as exc:  # noqa: BLE001 - fail soft: build without the tracing scheduler
        why = f"the engine refused TracingScheduler: {type(exc).__name__}: {exc}"
        log.warning("%s; building with vLLM's own scheduler", why)
        return build(dataclasses.replace(args, scheduler_cls=None)), why

