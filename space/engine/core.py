"""One in-process vLLM ``LLMEngine`` with a tracing scheduler: ``TracedEngine.run`` drives
``LLMEngine.step()`` itself, times each step and joins the times with what
``TracingScheduler`` recorded, producing one ``RunTrace`` per request."""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import gc
import itertools
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import torch
from vllm import EngineArgs, SamplingParams
from vllm.engine.llm_engine import LLMEngine
from vllm.inputs import TokensPrompt
from vllm.sampling_params import RequestOutputKind

from space.common import versions
from space.common.cancel import StepGuard
from space.common.progress import Progress
from space.engine import compat, hardware, models, prompts
from space.engine.anatomy import StepClock
from space.engine.build import build_steps, token_texts
from space.engine.hardware import on_gpu
from space.engine.scheduler import TracingScheduler
from space.observe.memory import EngineMemory
from space.records import hooks
from space.records.anatomy import PROPOSER
from space.records.config import EngineSpec, RequestSpec, TracingSettings
from space.records.run import IN_PROCESS, RequestRecord, RunConfig
from space.records.trace import RunTrace, StepRecord

log = logging.getLogger(__name__)
_ids = itertools.count()
_LIVE: weakref.WeakSet[TracedEngine] = weakref.WeakSet()  # engines built and not closed

StepCallback = Callable[[str, StepRecord, dict[int, str]], None]


class TracedEngine:
    """A vLLM engine built from an ``EngineSpec``; ``run`` returns traces."""

    def __init__(self, spec: EngineSpec, progress: Progress | None = None) -> None:
        spec = hardware.resolve_spec(spec)
        spec.validate(on_gpu())
        progress = progress or (lambda f, m: log.info(m))
        self.spec = spec
        self.model_path = models.resolve_model(spec.model, progress)
        self.draft_path = models.resolve_draft(spec.method, spec.draft_model,
                                               self.model_path, progress)
        self.settings = TracingSettings(enforce_eager=not on_gpu())
        self.args = EngineArgs(**engine_kwargs(spec, self.model_path, self.draft_path,
                                                 self.settings))
        label = spec.method or "baseline"
        progress(0.1, f"building the {label} engine on {self.model_path.name}")
        t0 = time.perf_counter()
        compat.guard_kernel_scan()
        compat.fix_cpu_expand_kernel()
        compat.fix_cpu_synthetic_kernels()
        self.engine, self._scheduler_why = build_engine(self.args)
        _LIVE.add(self)
        self.build_s = time.perf_counter() - t0
        progress(1.0, f"{label} engine ready in {self.build_s:.1f} s")
        self.tokenizer = self.engine.get_tokenizer()
        self.scheduler = self.engine.engine_core.engine_core.scheduler
        self.runner = self.engine.engine_core.engine_core.model_executor \
            .driver_worker.worker.model_runner
        self._text_cache: dict[int, str] = {}
        self.attach_hooks()

    def attach_hooks(self, retry: bool = False) -> list[hooks.HookState]:
        """Attach the tracing hooks (again: the old ones come off first) and write
        whether each attached into ``self.config``; runs complete without any.
        ``retry``: let a tracing scheduler that stopped recording record again."""
        old: StepClock | None = getattr(self, "clock", None)
        if old is not None:
            old.detach()
        self.clock = StepClock.attach(self.runner, self.scheduler)
        if isinstance(self.scheduler, TracingScheduler):
            if retry:
                self.scheduler.failure = None
            self.scheduler.clock = self.clock
            self.scheduler.proposer_ran = (self.clock.proposer_ran if self.spec.is_speculative
                                           and PROPOSER in self.clock.parts else None)
        return self._note_hooks()

    def _note_hooks(self) -> list[hooks.HookState]:
        """Read every hook's state (the doctor's order) into ``self.hooks`` and the traces' config."""
        from space.engine import score

        failure = getattr(self.scheduler, "failure", None)  # refused at build, stopped, or none
        why = self._scheduler_why or (f"recording stopped: {failure}" if failure else None)
        scheduler = (hooks.missing(hooks.TRACING_SCHEDULER, why) if why
                     else hooks.attached(hooks.TRACING_SCHEDULER))
        self.hooks = [scheduler, *self.clock.states(self.spec.is_speculative),
                      score.why_rejected_state(self.runner)]
        for state in self.hooks:
            if not state.attached:
                log.warning("%s", state.sentence(versions.public_vllm()))
        dtype = hardware.explain(str(self.spec.dtype), self.model_path)
        settings = {k: v for k, v in dataclasses.asdict(self.settings).items() if k != "extra"}
        self.config = RunConfig(
            model=self.spec.model, method=self.spec.method, k=self.spec.k if self.spec.method else 0,
            draft_model=self.spec.draft_model, dtype=dtype.dtype,
            device=dtype.device, source=IN_PROCESS,
            # forced acceptance: timings only, kept out of /metrics and checklists
            synthetic=self.spec.synthetic, vllm_version=versions.public_vllm(),
            model_path=str(self.model_path), draft_path=self.draft_path,
            max_model_len=self.spec.max_model_len, prefix_cache=self.spec.prefix_cache,
            dtype_reason=dtype.reason, cpu_model=dtype.cpu_model,
            cpu_bf16_flags=tuple(dtype.bf16_flags),
            speculative_config=self.spec.speculative_config(self.draft_path),
            tracing_settings={**settings, "step_anatomy": self.clock.settings,
                              "hooks": hooks.to_json(self.hooks)})
        return self.hooks

    @property
    def recording(self) -> bool:
        """Whether the tracing scheduler records steps (its hook attached and works)."""
        return isinstance(self.scheduler, TracingScheduler) and self.scheduler.recording

    def encode(self, req: RequestSpec) -> list[int]:
        return prompts.encode(self.tokenizer, req, self.spec.max_model_len)

    def run(self, req: RequestSpec, on_step: StepCallback | None = None,
            cancel: threading.Event | None = None,
            prompt_ids: list[int] | None = None) -> RunTrace:
        return self.run_many([req], on_step, cancel,
                             None if prompt_ids is None else [prompt_ids])[0]

    def run_many(self, reqs: list[RequestSpec], on_step: StepCallback | None = None,
                 cancel: threading.Event | None = None,
                 encoded: list[list[int]] | None = None) -> list[RunTrace]:
        """Run requests concurrently (one batch) and return one trace each. ``cancel`` set:
        ``Cancelled`` before the next engine step (the requests are aborted). ``encoded``: the
        prompts' ids, tokenized before the engine lock (``space.runs.preflight``), else here."""
        if self.engine.has_unfinished_requests():
            raise RuntimeError("engine busy: runs must be serialized")
        if self.spec.prefix_cache == "cold":
            self.reset_prefix_cache()
        if encoded is None:
            encoded = [self.encode(r) for r in reqs]
        elif len(encoded) != len(reqs):
            raise ValueError(f"{len(encoded)} encoded prompts for {len(reqs)} requests")
        req_ids = [f"sl-{next(_ids)}" for _ in reqs]
        recording = self.recording
        arrival = time.perf_counter()
        for rid, req, ids in zip(req_ids, reqs, encoded, strict=False):
            max_tokens = min(req.max_tokens, self.spec.max_model_len - len(ids))
            self.engine.add_request(rid, TokensPrompt(prompt_token_ids=ids), SamplingParams(
                temperature=req.temperature, top_p=req.top_p, max_tokens=max_tokens,
                seed=req.seed, ignore_eos=req.ignore_eos, output_kind=RequestOutputKind.DELTA))
        finals: dict[str, list] = {rid: [] for rid in req_ids}
        times: dict[str, list[tuple]] = {rid: [] for rid in req_ids}  # t0, t1, propose_s, anatomy
        raws: dict[str, list] = {rid: [] for rid in req_ids}
        out_s: dict[str, list[float]] = {rid: [] for rid in req_ids}  # ends of steps that emitted
        clock = self.clock
        guard = StepGuard(cancel, [r.prompt for r in reqs])
        try:
            while self.engine.has_unfinished_requests():
                guard()  # raises Cancelled when the run is stopped
                clock.begin_step()  # nothing timed between steps belongs to this one
                t0 = time.perf_counter()
                outs = self.engine.step()
                t1 = time.perf_counter()
                # the proposer is timed on every step, the rest on sampled ones (GPU)
                propose_s = clock.seconds(PROPOSER)
                anatomy = clock.take()
                for out in outs:
                    finals[out.request_id].append(out)
                    if out.outputs and out.outputs[0].token_ids:
                        out_s[out.request_id].append(t1)
                if not recording:
                    continue
                for internal_id, raw in self.scheduler.take_step():
                    # vLLM appends ``-<random suffix>`` to request ids inside the engine core
                    rid = internal_id if internal_id in times else internal_id.rsplit("-", 1)[0]
                    if rid in times:
                        raws[rid].append(raw)
                        times[rid].append((t0, t1, propose_s, anatomy))
                        if on_step:
                            step = build_steps([raw], times[rid][-1:], len(times[rid]) - 1)[0]
                            on_step(rid, step, self.texts(step.emitted_token_ids
                                                          + step.draft_token_ids))
        except BaseException:
            self.engine.abort_request(req_ids)
            raise
        if recording and not self.recording:  # the scheduler stopped recording in this run
            self._note_hooks()  # the config now names it; no half-recorded steps below
        return [self._finish(req, ids, arrival, finals[rid],
                             build_steps(raws[rid], times[rid]) if self.recording else [],
                             out_s[rid])
                for rid, req, ids in zip(req_ids, reqs, encoded, strict=False)]

    def reset_prefix_cache(self) -> None:
        """Forget the KV blocks earlier runs cached: the next run reads its whole prompt."""
        if not self.engine.reset_prefix_cache():
            log.warning("vLLM did not reset the prefix cache (blocks still in use)")

    def texts(self, ids: list[int]) -> dict[int, str]:
        return token_texts(self.tokenizer, ids, self._text_cache)

    def _finish(self, req, ids, arrival, outs, steps, out_s) -> RunTrace:
        out_ids = [t for o in outs for t in o.outputs[0].token_ids]
        last = outs[-1].outputs[0]
        # Without a trace (the tracing scheduler missing), the steps' outputs time it.
        first = next((s.end_s for s in steps if s.emitted_token_ids), out_s[0] if out_s else None)
        finish = steps[-1].end_s if steps else (out_s[-1] if out_s else time.perf_counter())
        m = getattr(last, "spec_decode_metrics", None)
        return RunTrace(
            config=self.config, prompt=req.prompt, prompt_token_ids=ids,
            output_token_ids=out_ids, text="".join(o.outputs[0].text for o in outs), arrival_s=arrival,
            first_token_s=first if first is not None else finish, finish_s=finish,
            finish_reason=last.finish_reason, steps=steps,
            token_text=self.texts(out_ids + [t for s in steps for t in s.draft_token_ids]),
            vllm_spec_metrics=None if m is None else {
                **m.to_dict(), "num_draft_tokens": m.num_draft_tokens,
                "histogram": list(m.histogram), "per_step_drafted": list(m.per_step_drafted),
                "per_step_accepted": list(m.per_step_accepted)},
            num_cached_tokens=outs[0].num_cached_tokens or 0,
            request=RequestRecord.of(req),
        )

    def memory(self) -> EngineMemory:
        """Weights (target and draft, counted from the loaded tensors) and KV cache."""
        weights = {"target": _param_bytes(getattr(self.runner, "model", None))}
        draft = getattr(getattr(self.runner, "drafter", None), "model", None)
        if draft is not None:
            weights["draft"] = _param_bytes(draft)
        kv_cfg = self.scheduler.kv_cache_config
        reserved = sum(t.size for t in kv_cfg.kv_cache_tensors)
        usage = self.scheduler.kv_cache_manager.usage
        block = self.scheduler.block_size
        label = "speculative" if self.spec.is_speculative else "baseline"
        return EngineMemory(label=label, weights_bytes=weights, kv_cache_reserved_bytes=reserved,
                            kv_cache_used_bytes=int(reserved * usage),
                            kv_cache_capacity_tokens=kv_cfg.num_blocks * block,
                            block_size=block)

    def close(self) -> None:
        """Shut the engine core down and drop references so memory returns."""
        engine = getattr(self, "engine", None)
        if engine is None:
            return
        _LIVE.discard(self)
        # The clock is missing when the build failed after the engine existed (e.g. another
        # vLLM's runner path): close must still shut the engine down.
        clock = getattr(self, "clock", None)
        if clock is not None:
            clock.detach()  # the runner's objects get their own methods back
        # The last engine tears vLLM's process-wide state down; earlier ones keep it.
        keep = compat.keep_parallel_state() if _LIVE else contextlib.nullcontext()
        try:
            with keep:
                engine.engine_core.shutdown()
        except Exception:  # shutting down twice or half-built: nothing left to free
            log.debug("engine shutdown", exc_info=True)
        self.engine = self.scheduler = self.runner = None
        gc.collect()
        # Give freed heap pages back to the system: glibc keeps a closed engine's weights
        # and KV in its arenas (measured: RSS 2.85 -> 0.95 GB after two engines).
        with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
            ctypes.CDLL("libc.so.6").malloc_trim(0)


def _param_bytes(model) -> int:
    """Bytes of every tensor the model holds: parameters, buffers, and plain tensor
    attributes (where the CPU backend keeps its oneDNN-repacked linear weights)."""
    if model is None:
        return 0
    seen: set[int] = set()
    total = 0
    for mod in model.modules():
        tensors = list(mod.parameters(recurse=False)) + list(mod.buffers(recurse=False))
        tensors += [v for v in vars(mod).values() if isinstance(v, torch.Tensor)]
        for t in tensors:
            if t.numel() and t.data_ptr() not in seen:
                seen.add(t.data_ptr())
                total += t.numel() * t.element_size()
    return total


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


def engine_kwargs(spec: EngineSpec, model_path, draft_path: str | None,
                  settings: TracingSettings, tracing: bool = True) -> dict:
    """vLLM engine keywords for ``spec``; ``tracing=False`` gives the plain engine."""
    spec = hardware.resolve_spec(spec)
    kw: dict[str, Any] = dict(model=str(model_path), dtype=spec.dtype, seed=0,
                              max_model_len=spec.max_model_len,
                              speculative_config=spec.speculative_config(draft_path),
                              max_num_batched_tokens=spec.max_num_batched_tokens)
    if tracing:
        kw.update(scheduler_cls=TracingScheduler, async_scheduling=settings.async_scheduling)
        if spec.is_speculative:
            kw["per_request_spec_decode_metrics"] = settings.per_request_spec_decode_metrics
    if on_gpu():
        kw["gpu_memory_utilization"] = spec.gpu_memory_utilization
    else:  # explicit KV bytes: the CPU backend would otherwise claim a share of RAM per engine
        kw.update(kv_cache_memory_bytes=hardware.kv_cache_bytes(spec.kv_cache_bytes, str(spec.dtype)),
                  enforce_eager=settings.enforce_eager)
    return kw

