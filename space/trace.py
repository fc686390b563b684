"""The trace: one record per run, one record per engine step.

Every view, export and test reads these records; nothing else carries run data.
This module is pure (no vLLM import) so that views and their tests load fast.

Units are in field names: ``*_s`` are seconds (``time.perf_counter`` clock for
absolute times), ``*_ids`` are token ids.
"""
from __future__ import annotations

import dataclasses
import json
import statistics
from dataclasses import dataclass, field
from typing import Any

# Step kinds.
PREFILL = "prefill"  # the target reads (a chunk of) the prompt; the last chunk emits one token
VERIFY = "verify"    # the target checks k draft tokens and emits accepted drafts + one token of its own
DECODE = "decode"    # the proposer had nothing to propose: a plain one-token decode step

# What the target's own token at the end of a step is.
CORRECTION = "correction"  # a draft was rejected; the target's token replaces it
BONUS = "bonus"            # every draft was accepted; the target adds one more token


@dataclass
class StepRecord:
    """One engine step of one request.

    Example (ngram, k=4): drafts ['2',' years',' old',' and'] -> the target
    sampled ['2', ','] : num_accepted=1, emitted ['2', ','], target_token_kind
    'correction' (',' replaced ' years'; ' old' and ' and' were never checked
    against the target's own choice, they are discarded with ' years').
    """

    index: int                     # engine step number within the request, from 0
    kind: str                      # PREFILL | VERIFY | DECODE
    start_s: float                 # perf_counter at the start of the engine step
    end_s: float                   # perf_counter when the step's outputs reached the caller
    num_scheduled_tokens: int      # prompt tokens on a prefill step; 1 + len(drafts) otherwise
    draft_token_ids: list[int] = field(default_factory=list)   # drafts verified in this step
    num_accepted: int = 0          # vLLM's count: sampled tokens - 1 on a verify step
    emitted_token_ids: list[int] = field(default_factory=list)  # tokens committed to the output
    target_token_kind: str | None = None  # CORRECTION | BONUS on verify steps, else None;
    # None too when max_tokens/EOS cut the step before the target's own token.
    output_offset: int = 0         # output tokens committed before this step
    propose_s: float = 0.0         # proposer time inside this step (drafting for the next one)

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def num_drafts(self) -> int:
        return len(self.draft_token_ids)


@dataclass
class RunTrace:
    """One request through one engine, with run-level metrics.

    Metric definitions follow vLLM's (vllm/v1/spec_decode/metrics.py):
      acceptance_rate        = accepted draft tokens / drafted tokens
      mean_acceptance_length = 1 + accepted draft tokens / number of verify steps
      per_position_acceptance[p] = verify steps that accepted the draft at
                                   position p / number of verify steps
    Latency definitions follow ``vllm bench``:
      ttft_s   = first token time - arrival
      tpot_s   = (e2e_s - ttft_s) / (output tokens - 1)
      tokens_per_s = output tokens / e2e_s
    """

    config: dict[str, Any]
    prompt: str
    prompt_token_ids: list[int]
    output_token_ids: list[int]
    text: str
    arrival_s: float
    first_token_s: float
    finish_s: float
    finish_reason: str | None
    steps: list[StepRecord]
    token_text: dict[int, str] = field(default_factory=dict)  # id -> text, for ids in outputs and drafts
    vllm_spec_metrics: dict[str, Any] | None = None  # vLLM's own per-request counts, for cross-checks
    ttft_s: float = 0.0
    tpot_s: float = 0.0
    e2e_s: float = 0.0
    tokens_per_s: float = 0.0
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    per_position_acceptance: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.recompute()

    def recompute(self) -> None:
        """Derive the run-level metrics from the raw times and steps."""
        n = len(self.output_token_ids)
        self.e2e_s = self.finish_s - self.arrival_s
        self.ttft_s = self.first_token_s - self.arrival_s
        self.tpot_s = (self.e2e_s - self.ttft_s) / (n - 1) if n > 1 else 0.0
        self.tokens_per_s = n / self.e2e_s if self.e2e_s > 0 else 0.0
        verify = [s for s in self.steps if s.kind == VERIFY]
        self.num_drafts = len(verify)
        self.num_draft_tokens = sum(s.num_drafts for s in verify)
        self.num_accepted_tokens = sum(s.num_accepted for s in verify)
        if self.num_draft_tokens:  # guarded: no drafts means no rate, not zero
            self.acceptance_rate = self.num_accepted_tokens / self.num_draft_tokens
            self.mean_acceptance_length = 1 + self.num_accepted_tokens / self.num_drafts
        else:
            self.acceptance_rate = None
            self.mean_acceptance_length = None
        k = max((s.num_drafts for s in verify), default=0)
        self.per_position_acceptance = [
            sum(1 for s in verify if s.num_accepted > p) / self.num_drafts for p in range(k)
        ]

    @property
    def speculative(self) -> bool:
        return bool(self.config.get("speculative_config"))

    def token_str(self, token_id: int) -> str:
        return self.token_text.get(token_id, f"<{token_id}>")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["token_text"] = {str(k): v for k, v in self.token_text.items()}
        for s, rec in zip(d["steps"], self.steps, strict=False):
            s["duration_s"] = rec.duration_s
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunTrace:
        names = {f.name for f in dataclasses.fields(StepRecord)}
        steps = [StepRecord(**{k: v for k, v in s.items() if k in names}) for s in d["steps"]]
        raw = {f.name for f in dataclasses.fields(cls) if f.init}
        kw = {k: v for k, v in d.items() if k in raw}
        kw["steps"] = steps
        kw["token_text"] = {int(k): v for k, v in d.get("token_text", {}).items()}
        return cls(**kw)


@dataclass
class CompareRecord:
    """Baseline and speculative runs of one prompt, with medians over repeats.

    ``baseline`` and ``speculative`` are the median-TPOT runs among the
    measured repeats; ``*_runs`` hold the per-repeat figures.
    speedup = baseline TPOT / speculative TPOT (median over repeats);
    e2e_speedup = baseline end-to-end time / speculative end-to-end time.
    """

    baseline: RunTrace
    speculative: RunTrace
    baseline_runs: list[dict[str, float]] = field(default_factory=list)
    speculative_runs: list[dict[str, float]] = field(default_factory=list)
    speedup: float = 0.0
    e2e_speedup: float = 0.0
    outputs_identical: bool = False
    first_divergence: int | None = None  # index in output tokens of the first difference
    checklist: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["baseline"] = self.baseline.to_dict()
        d["speculative"] = self.speculative.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompareRecord:
        kw = dict(d)
        kw["baseline"] = RunTrace.from_dict(d["baseline"])
        kw["speculative"] = RunTrace.from_dict(d["speculative"])
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in kw.items() if k in names})


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """Index of the first differing token, or None if the lists are equal."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def run_figures(run: RunTrace) -> dict[str, float]:
    return {"ttft_s": run.ttft_s, "tpot_s": run.tpot_s, "e2e_s": run.e2e_s,
            "tokens_per_s": run.tokens_per_s, "num_output_tokens": len(run.output_token_ids)}


def make_compare(baselines: list[RunTrace], speculatives: list[RunTrace]) -> CompareRecord:
    """Pick the median-TPOT run of each side and compute medians of the ratios' inputs."""
    def median_run(runs: list[RunTrace]) -> RunTrace:
        return sorted(runs, key=lambda r: r.tpot_s)[(len(runs) - 1) // 2]

    b, s = median_run(baselines), median_run(speculatives)
    b_tpot = statistics.median(r.tpot_s for r in baselines)
    s_tpot = statistics.median(r.tpot_s for r in speculatives)
    b_e2e = statistics.median(r.e2e_s for r in baselines)
    s_e2e = statistics.median(r.e2e_s for r in speculatives)
    div = first_divergence(b.output_token_ids, s.output_token_ids)
    return CompareRecord(
        baseline=b, speculative=s,
        baseline_runs=[run_figures(r) for r in baselines],
        speculative_runs=[run_figures(r) for r in speculatives],
        speedup=b_tpot / s_tpot if s_tpot > 0 else 0.0,
        e2e_speedup=b_e2e / s_e2e if s_e2e > 0 else 0.0,
        outputs_identical=div is None, first_divergence=div,
    )


def dumps(obj: RunTrace | CompareRecord) -> str:
    return json.dumps(obj.to_dict(), indent=1)


def load(text: str) -> RunTrace | CompareRecord:
    """Load a trace or compare JSON written by the CLI or the app."""
    d = json.loads(text)
    if "baseline" in d and "speculative" in d:
        return CompareRecord.from_dict(d)
    if "steps" in d:
        return RunTrace.from_dict(d)
    raise ValueError("not a SpecLens trace: expected 'steps' or 'baseline'/'speculative' keys")
