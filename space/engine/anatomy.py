"""Timers around vLLM's own methods, on one engine's instances only: the anatomy of
every engine step. A call inside another timed one runs untimed, so parts never overlap
(docs/vllm-hooks.md, "Step anatomy")."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from space.records import hooks
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
_MISSING = object()  # no instance attribute of that name before _patch


def _sample_part(args: tuple, kwargs: dict) -> str:
    """``_sample(logits, spec_decode_metadata)`` is rejection only when it verifies drafts: a
    speculative engine passes metadata on every step (docs/vllm-hooks.md, #44)."""
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
# Line numbers: vllm 0.33.0, v1/worker/gpu/model_runner.py (docs/vllm-hooks.md, #49-#53).
# execute_model runs the target by one of four paths; each has its hook, and a
# path that calls another hooked one (run_pw_graph calls model(...)) counts once.
V2_HOOKS: tuple[tuple[str, str, Part], ...] = (
    ("model", "forward", FORWARD),                    # eager: self.model(**model_inputs) :2097
    ("cudagraph_manager", "run_fullgraph", FORWARD),  # FULL graph replay :2059 (no forward call)
    ("cudagraph_manager", "run_pw_graph", FORWARD),   # piecewise graphs :2092
    ("ubatch_runner", "run", FORWARD),                # micro-batches :2084 (None unless enabled)
    ("model", "compute_logits", FORWARD),             # in sample() :1656
    ("sampler", "__call__", SAMPLING),                # self.sampler(logits, input_batch) :1683
    ("rejection_sampler", "__call__", REJECTION),     # only when the step verifies drafts :1688
    ("speculator", "propose", PROPOSER),              # BaseSpeculator.propose, from sample_tokens()
)


def hooks_for(runner: Any) -> tuple[tuple[str, str, Part], ...]:
    return V2_HOOKS if type(runner).__module__ == V2_RUNNER_MODULE else V1_HOOKS


class StepClock:
    """The current engine step's timed parts; ``busy`` while a part runs. ``every_n_steps``:
    time one engine step in n (the first, then every n-th)."""

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
        self.parts: set[str] = set()  # the parts it times (a part whose hook is missing is not)
        self.untimed: list[str] = []  # hook points this vLLM lacks (their time is "other")
        self.failed: dict[str, list[str]] = {}  # hook name -> "Owner.method: why" (not attached)
        self.tried: set[str] = set()  # hook names attach tried
        self._undo: list[Callable[[], None]] = []  # what detach() runs

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

    def begin_step(self) -> None:
        """Before each ``LLMEngine.step()``: forget what ran between steps; timed or not."""
        self.intervals.clear()
        self.drafter_forwards = 0
        self.timing = self._steps % self.every_n_steps == 0
        self._steps += 1

    def seconds(self, part: str) -> float:
        """Time in ``part`` so far in this step (the proposer's on untimed steps too)."""
        return sum(b - a for p, a, b in self.intervals if p == part)

    def take(self) -> StepAnatomy | None:
        """The step's anatomy in time order (None if not timed); the clock empties."""
        out = StepAnatomy([PartInterval(p, a, b) for p, a, b in sorted(self.intervals,  # type: ignore[arg-type]
                                                                        key=lambda i: i[1])],
                          self.drafter_forwards) if self.timing else None
        self.intervals.clear()
        self.drafter_forwards = 0
        return out

    def proposer_ran(self) -> bool:
        """Whether the proposer ran in this engine step (vLLM skips it near max_model_len)."""
        return any(p == PROPOSER for p, _, _ in self.intervals)

    @classmethod
    def attach(cls, runner: Any, scheduler: Any, every_n_steps: int | None = None) -> StepClock:
        """Wrap the methods; ``every_n_steps`` None: every step on CPU, ``GPU_EVERY_N_STEPS`` on GPU."""
        import torch  # here: the clock's logic loads and is tested without torch

        on_gpu = torch.cuda.is_available()
        if every_n_steps is None:
            every_n_steps = GPU_EVERY_N_STEPS if on_gpu else 1
        clock = cls(torch.cuda.synchronize if on_gpu else None, every_n_steps)
        clock.hook(runner, scheduler)
        drafter_model = getattr(getattr(runner, "drafter", None), "model", None)
        if isinstance(drafter_model, torch.nn.Module):
            handle = drafter_model.register_forward_pre_hook(clock._count_drafter_forward)
            clock._undo.append(handle.remove)
        return clock

    def hook(self, runner: Any, scheduler: Any) -> None:
        """Wrap the model runner's hook points (``hooks_for``) and the scheduler's."""
        for owner, name, part in hooks_for(runner):
            target = runner if not owner else getattr(runner, owner, None)
            if owner and target is None:
                continue  # no speculator on a baseline engine, no micro-batches: nothing to time
            self._wrap(target, name, part, self.sync)
        self._wrap(scheduler, "schedule", SCHEDULING, None)
        self._wrap(scheduler, "update_draft_token_ids", SCHEDULING, None)

    def states(self, speculative: bool) -> list[hooks.HookState]:
        """Whether each clock hook point attached (the proposer timer: speculative engines only)."""
        names: list[hooks.HookName] = [hooks.CLOCK_FORWARD, hooks.CLOCK_SAMPLING,
                                       hooks.CLOCK_SCHEDULING, hooks.PROPOSER_TIMER]
        return [hooks.missing(n, "; ".join(self.failed[n])) if n in self.failed
                else hooks.attached(n) if n in self.tried
                else hooks.missing(n, "this model runner has no such hook point")
                for n in names[:4 if speculative else 3]]

    def detach(self) -> None:
        """Give every wrapped object its own methods (and class) back, newest first."""
        while self._undo:
            self._undo.pop()()

    def _count_drafter_forward(self, module, args) -> None:
        self.drafter_forwards += 1

    def _wrap(self, owner: Any, name: str, part: Part, sync: Callable[[], None] | None) -> None:
        """Route ``owner.name`` through a timed wrapper (``_patch``)."""
        label = f"{type(owner).__name__}.{name}"
        hook = _HOOK_OF.get(part if isinstance(part, str) else "", hooks.CLOCK_SAMPLING)
        self.tried.add(hook)
        if getattr(owner, name, None) is None:
            why = f"{label}: {type(owner).__name__} has no {name}"
        else:
            try:
                self._undo.append(_patch(owner, name, lambda f: _timed(self, f, part, sync)))
                self.parts.update((SAMPLING, REJECTION) if callable(part) else (part,))
                return
            except Exception as exc:  # noqa: BLE001 - fail soft: the run goes on untimed there
                why = f"{label}: {type(exc).__name__}: {exc}"
        log.warning("step anatomy: cannot hook %s; that part shows as 'other'", why)
        self.untimed.append(label)
        self.failed.setdefault(hook, []).append(why)


# The hook (space.records.hooks) each part's wrappers belong to; the V1 ``_sample``
# (a callable part: sampling or rejection) is the sampling hook.
_HOOK_OF: dict[str, hooks.HookName] = {
    FORWARD: hooks.CLOCK_FORWARD, SAMPLING: hooks.CLOCK_SAMPLING,
    REJECTION: hooks.CLOCK_SAMPLING, SCHEDULING: hooks.CLOCK_SCHEDULING,
    PROPOSER: hooks.PROPOSER_TIMER,
}


def _patch(owner: Any, name: str, wrap: Callable[[Callable], Callable]) -> Callable[[], None]:
    """Route calls of ``owner.name`` through ``wrap(original)``; return the undo. A plain
    method becomes an instance attribute. A special method such as ``__call__`` is looked up
    on the type, so the instance gets a subclass of its own differing only in that method:
    identity and ``isinstance`` hold (docs/vllm-hooks.md, #55). ``TypeError`` for a built-in."""
    if name.startswith("__") and name.endswith("__"):
        cls = type(owner)
        meta: Any = type(cls)  # its metaclass (ABCMeta, say), so the subclass is a legal one
        timed = wrap(getattr(cls, name))  # a plain function: called with the instance first
        own = meta(cls.__name__, (cls,), {
            name: timed, "__slots__": (),  # no new fields: the same memory layout
            "__module__": cls.__module__, "__qualname__": cls.__qualname__})
        owner.__class__ = own

        def undo_class() -> None:
            if type(owner) is own:
                owner.__class__ = cls

        return undo_class
    before = vars(owner).get(name, _MISSING) if hasattr(owner, "__dict__") else _MISSING
    timed = wrap(getattr(owner, name))
    setattr(owner, name, timed)

    def undo_method() -> None:
        if vars(owner).get(name) is timed:  # not wrapped again since
            if before is _MISSING:
                delattr(owner, name)  # the class's method shows through again
            else:
                setattr(owner, name, before)

    return undo_method


def _timed(clock: StepClock, original: Callable, part: Part,
           sync: Callable[[], None] | None) -> Callable:
    perf = time.perf_counter
    always = part == PROPOSER  # timed on untimed steps too (propose_s, drafter skipped)

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
            clock.intervals.append((part if isinstance(part, str) else part(args, kwargs), t0, perf()))
            return out
        finally:
            clock.busy = False

    return timed
