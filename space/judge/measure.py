"""The checklist's measured inputs, read from the traces of real runs (pure)."""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from space.judge import estimate, intervals, theory
from space.judge.checklist import ChecklistInputs
from space.records import methods
from space.records.anatomy import kind_costs
from space.records.run import SERVER
from space.records.trace import (
    DECODE,
    EXACT,
    VERIFY,
    CompareRecord,
    RunTrace,
    StepKind,
    other_requests,
)


@dataclass(frozen=True)
class Context:
    """What the runs cannot tell: the task, and what a sweep found."""

    task_type: str | None = None       # workload id, e.g. "code_editing"
    task_note: str | None = None       # the workload's one-line reason
    concurrency: int = 1               # requests decoding together
    gain_vanishes_at_concurrency: int | None = None  # from a concurrency sweep
    gain_vanishes_at_context: int | None = None      # from an input-length sweep


def _median(xs: Iterable[float]) -> float | None:
    xs = list(xs)
    return statistics.median(xs) if xs else None


def repeat_speedups(cmp: CompareRecord) -> list[float]:
    """Per-repeat TPOT ratios: repeat i of the baseline against repeat i of speculation."""
    return [b["tpot_s"] / s["tpot_s"]
            for b, s in zip(cmp.baseline_runs, cmp.speculative_runs, strict=False) if s.get("tpot_s")]


def spread(values: Sequence[float]) -> tuple[float, float] | None:
    """(min, max), or None with fewer than two values (one run has no spread)."""
    return (min(values), max(values)) if len(values) >= 2 else None


def pooled_acceptance(runs: Sequence[RunTrace]) -> tuple[float | None, float | None]:
    """vLLM acceptance rate and mean acceptance length over runs, counters summed
    first as vLLM's Prometheus counters are; None when no drafts were verified."""
    drafted = sum(r.num_draft_tokens for r in runs)
    accepted = sum(r.num_accepted_tokens for r in runs)
    steps = sum(r.num_drafts for r in runs)
    if not drafted:
        return None, None
    return accepted / drafted, 1 + accepted / steps


def drafted_share(runs: Sequence[RunTrace]) -> float | None:
    """The share of decode-phase engine steps that verified drafts, pooled over runs,
    from the run-level counts (a server run's are its metrics'); None with no such step.
    A verify step emits its accepted drafts plus one token; every other token after
    the prefill's first is a step without drafts (a lookup that found nothing).

    Example: 20 tokens, 4 verify steps that accepted 8: 19 - 12 = 7 plain steps,
    so 4 of 11 steps drafted.
        >>> from types import SimpleNamespace as R
        >>> round(drafted_share([R(output_token_ids=[0] * 20, num_drafts=4,
        ...                        num_accepted_tokens=8)]), 4)
        0.3636
    """
    verify = plain = 0
    for r in runs:
        emitted = max(len(r.output_token_ids) - 1, 0)  # the prefill emits the first
        verify += r.num_drafts
        plain += max(emitted - r.num_accepted_tokens - r.num_drafts, 0)
    return verify / (verify + plain) if verify + plain else None


def step_median(runs: Sequence[RunTrace], kind: StepKind) -> float | None:
    """Median step of one kind: DECODE of baseline runs (prefill steps excluded), VERIFY of
    speculative runs (drafting for the next step included). A server's steps only where each
    arrived alone: a merged chunk's window is not a step's."""
    return _median(s.duration_s for r in runs for s in r.steps
                   if s.kind == kind and s.placement == EXACT)


def draft_cost(runs: Sequence[RunTrace], method: str | None, k: int) -> dict[str, float | None]:
    """The draft's measured cost in the checklist's form for ``method``: a lookup's
    ``proposer_share`` (median propose_s / step time; it costs a share of each step
    whatever k is), or a model drafter's ``draft_step_s`` (median propose_s / k over
    verify steps). A step's ``propose_s`` is the proposer's time inside it (vLLM v1
    drafts for the next step inside the step). Through a server both are None (it
    reports no proposer time), never a 0 that would read as a free draft."""
    if any(r.config.source == SERVER for r in runs):
        return {"proposer_share": None, "draft_step_s": None}
    steps = [s for r in runs for s in r.steps if s.kind in (VERIFY, DECODE)]
    if method and (row := methods.info(method)) is not None and row.lookup:
        share = _median(s.propose_s / s.duration_s for s in steps if s.duration_s > 0)
        # the checklist wants [0, 1); a share of 1 would mean steps made of nothing else
        return {"proposer_share": None if share is None else min(share, 0.999),
                "draft_step_s": None}
    per_token = [s.propose_s / k for s in steps if s.kind == VERIFY and s.propose_s > 0]
    return {"proposer_share": None, "draft_step_s": _median(per_token)}


def inputs_from_runs(baselines: Sequence[RunTrace], speculatives: Sequence[RunTrace], *,
                     speedup: float | None, speedup_spread: tuple[float, float] | None,
                     temperature: float | None, context: Context = Context(),
                     memory_now: Mapping[str, int | None] | None = None,
                     headroom: Mapping[str, Any] | None = None) -> ChecklistInputs:
    """ChecklistInputs from the traces of one or more prompts (or batched requests);
    ``memory_now`` and ``headroom``: what the machine says beyond the traces
    (space.runs.machine_inputs)."""
    cfg = speculatives[0].config
    method, k = cfg.method, cfg.k
    rate, tau = pooled_acceptance(speculatives)
    cost = draft_cost(speculatives, method, k) if k else {}
    context_tokens = _median(len(r.prompt_token_ids) + len(r.output_token_ids)
                             for r in speculatives)
    mem = memory_now or {}
    # repetition share over all outputs, weighted by their lengths
    out_tokens = sum(len(r.output_token_ids) for r in speculatives)
    repeated = sum(theory.repetition_share(r.output_token_ids) * len(r.output_token_ids)
                   for r in speculatives)
    return ChecklistInputs(
        method=method, k=k or None, speedup_median=speedup, speedup_spread=speedup_spread,
        acceptance_rate=rate, mean_acceptance_length=tau,
        draft_step_s=cost.get("draft_step_s"), proposer_share=cost.get("proposer_share"),
        target_decode_step_s=step_median(baselines, DECODE), verify_step_s=step_median(speculatives, VERIFY),
        spare_memory_bytes=mem.get("spare_memory_bytes"),
        draft_kv_tax_tokens=mem.get("draft_kv_tax_tokens"),
        context_tokens=None if context_tokens is None else int(context_tokens),
        temperature=temperature, **asdict(context),  # its fields are ChecklistInputs'
        repetition_share=repeated / out_tokens if out_tokens else None,
        step_costs=kind_costs(baselines, speculatives),
        **(headroom or {}),
        dtype=cfg.dtype, dtype_reason=cfg.dtype_reason, device=cfg.device,
        cpu_model=cfg.cpu_model, cpu_bf16_flags=cfg.cpu_bf16_flags, source=cfg.source,
        other_requests=max((other_requests(r) for r in [*baselines, *speculatives]),
                           default=0) or None,
    )


def compare_inputs(cmp: CompareRecord, temperature: float | None,
                   context: Context = Context(),
                   memory_now: Mapping[str, int | None] | None = None,
                   headroom: Mapping[str, Any] | None = None) -> ChecklistInputs:
    """ChecklistInputs for one prompt's comparison (its median runs, its repeats); the
    speedup's interval is over its repeats (none for one run)."""
    inputs = inputs_from_runs([cmp.baseline], [cmp.speculative], speedup=cmp.speedup,
                              speedup_spread=spread(repeat_speedups(cmp)),
                              temperature=temperature, context=context, memory_now=memory_now,
                              headroom=headroom)
    pairs = intervals.paired([cmp])
    return replace(inputs, speedup_ci=estimate.confidence_interval(pairs), speedup_prompts=1,
                   speedup_repeats=len(pairs.baseline[0]))
