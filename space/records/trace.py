"""The trace: one record per run, one per engine step (pure: no vLLM import), read back by
``space.records.schema.load``. Units are in field names: ``*_s`` seconds (``time.perf_counter``
for absolute times), ``*_ids`` token ids."""
from __future__ import annotations

import dataclasses
import json
import statistics
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

from space.records import hooks
from space.records.anatomy import StepAnatomy
from space.records.anatomy import from_json as anatomy_from_json
from space.records.anatomy import to_json as anatomy_json
from space.records.counts import FROM_STEPS, FROM_VLLM_METRICS, CountsSource, SpecCounts
from space.records.dicts import build, known
from space.records.run import RequestRecord, RunConfig
from space.records.target_view import Explanation, TargetView
from space.records.verdict import Checklist

# The JSON contract's version (docs/cli.md, "JSON contract"). Bump it with every change
# to the contract, keep a fixture of the older version under tests/fixtures/ and teach
# ``space.records.schema.upgrade`` to read it. What each version added:
#   1 (no ``version`` key) the counts before vLLM's names; 3 num_cached_tokens, placeholder
#   drafts, config.prefix_cache; 4 target views; 5 step anatomy; 6 the typed RunConfig and
#   RequestRecord, server runs, compact anatomy; 7 interval verdicts ("undecided", the
#   checklist's ``rule``), ``counts_from`` and steps' ``placement``.
TRACE_VERSION: Final = 7

StepKind = Literal["prefill", "verify", "decode"]
PREFILL: Final = "prefill"  # the target reads (a chunk of) the prompt; the last chunk emits a token
VERIFY: Final = "verify"    # the target checks k draft tokens: accepted drafts + one token of its own
DECODE: Final = "decode"    # the proposer had nothing to propose: a plain one-token decode step

UNREPORTED_DRAFTS: Final = "ids not reported by the server"

# How a step was placed on a server's stream (space/server/split.py); in-process: "exact".
StepPlacement = Literal["exact", "merged", "uncertain"]
EXACT: Final = "exact"          # one chunk held this step alone, and the counts allow no other
MERGED: Final = "merged"        # one chunk held several steps: their times are the chunk's
UNCERTAIN: Final = "uncertain"  # one step per chunk, but another placement fits the counts too

# What the target's own token at the end of a step is.
TargetTokenKind = Literal["correction", "bonus"]
CORRECTION: Final = "correction"  # a draft was rejected; the target's token replaces it
BONUS: Final = "bonus"            # every draft was accepted; the target adds one more token

# Why vLLM verified draft slots that no proposer filled (docs/vllm-hooks.md).
PlaceholderCause = Literal["padding", "drafter_skipped"]
PADDING: Final = "padding"                  # ids -1: a one-token schedule padded to 1 + k
DRAFTER_SKIPPED: Final = "drafter_skipped"  # zeros: the drafter's input would pass max_model_len

# What became of one draft token of a verify step (StepRecord.draft_fates).
DraftFate = Literal["accepted", "rejected", "unused"]
ACCEPTED: Final = "accepted"  # the target agreed with it; part of the output
REJECTED: Final = "rejected"  # the target turned it down, or one before it; not output
UNUSED: Final = "unused"      # cut off by max_tokens/EOS before the output took it


@dataclass
class StepRecord:
    """One engine step of one request."""

    index: int                     # engine step number within the request, from 0
    kind: StepKind
    start_s: float                 # perf_counter at the start of the engine step
    end_s: float                   # perf_counter when the step's outputs reached the caller
    num_scheduled_tokens: int      # prompt tokens on a prefill step; 1 + len(drafts) otherwise
    draft_token_ids: list[int] = field(default_factory=list)   # drafts verified in this step
    num_accepted_tokens: int = 0   # vLLM's count: sampled tokens - 1 on a verify step
    emitted_token_ids: list[int] = field(default_factory=list)  # tokens committed to the output
    # On verify steps, else None; None too when max_tokens/EOS cut the step before it.
    target_token_kind: TargetTokenKind | None = None
    output_offset: int = 0         # output tokens committed before this step
    propose_s: float = 0.0         # proposer time inside this step (drafting for the next one)
    # Draft slots vLLM verified and counted that no proposer filled; never in
    # draft_token_ids, never counted by SpecLens (see DraftCountDifference).
    num_placeholder_draft_tokens: int = 0
    placeholder_cause: PlaceholderCause | None = None
    target_views: list[TargetView] = field(default_factory=list)  # empty: not explained
    anatomy: StepAnatomy | None = None  # None: not timed
    # Drafts a server counted as verified without their ids (the rejected ones; the
    # accepted ones are the first emitted tokens). Always 0 in-process.
    num_unreported_draft_tokens: int = 0
    # "merged": the step's chunk held several, so start_s/end_s are the chunk's and its
    # tokens its own only where ``tokens_certain`` says so.
    placement: StepPlacement = EXACT

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def num_draft_tokens(self) -> int:
        return len(self.draft_token_ids) + self.num_unreported_draft_tokens

    def draft_fates(self) -> list[DraftFate]:
        """What became of each draft with an id: vLLM accepts drafts up to the first one
        the target turns down, which the target's token replaces, and rejects those
        after it with it; drafts past a max_tokens/EOS cut are unused."""
        na, n_out = self.num_accepted_tokens, len(self.emitted_token_ids)
        corrected = self.target_token_kind == CORRECTION
        return [ACCEPTED if j < na and j < n_out else REJECTED if corrected and j >= na
                else UNUSED for j in range(len(self.draft_token_ids))]

    def own_token_kind(self) -> TargetTokenKind | None:
        """The target's own token ending a verify step, from the counts (a correction or
        a bonus); None on other steps and when max_tokens/EOS cut the step before it."""
        k, na = self.num_draft_tokens, self.num_accepted_tokens
        if self.kind != VERIFY or not k or len(self.emitted_token_ids) <= min(na, k):
            return None
        return CORRECTION if na < k else BONUS


def chunk_groups(steps: list[StepRecord]) -> list[list[StepRecord]]:
    """Steps as their stream delivered them: consecutive merged steps that share one
    window (start_s, end_s) form a group; every other step is its own."""
    groups: list[list[StepRecord]] = []
    for s in steps:
        last = groups[-1][-1] if groups else None
        if (last is not None and s.placement == MERGED and last.placement == MERGED
                and (last.start_s, last.end_s) == (s.start_s, s.end_s)):
            groups[-1].append(s)
        else:
            groups.append([s])
    return groups


def tokens_certain(group: list[StepRecord]) -> bool:
    """Whether each step of a ``chunk_groups`` group owns the tokens it lists: in a merged
    group only when the steps after a prefill are all one kind ([prefill, verify, verify], not
    [verify, decode])."""
    return len({s.kind for s in group if s.kind != PREFILL}) <= 1


PLACEHOLDER_REASONS: dict[str, str] = {
    PADDING: "{n} placeholder ids (-1) padding a one-token prefill (the prompt's last "
             "token; the rest came from the prefix cache) to 1 + k tokens",
    DRAFTER_SKIPPED: "{n} zeros the model runner put in place of drafts when it skipped "
                     "the drafter (its input would have passed max_model_len)",
}


@dataclass(frozen=True)
class DraftCountDifference:
    """vLLM's own per-request draft counts beside SpecLens's, where they differ."""

    vllm_num_drafts: int          # vLLM's spec steps (RequestSpecDecodeMetrics)
    vllm_num_draft_tokens: int
    num_drafts: int               # SpecLens's: verify steps with proposed drafts
    num_draft_tokens: int
    reason: str


@dataclass(frozen=True)
class StepSplit:
    """How a server run's steps were placed on its streamed chunks."""

    exact: bool  # False: some steps are merged or uncertain (the note says which and why)
    note: str


def other_requests(run: RunTrace) -> int:
    """Requests other than SpecLens's own the server was serving during this run
    (``server.other_requests``; older files: the running gauge before and after)."""
    notes = run.server or {}
    figures = [notes.get(key) for key in ("other_requests", "requests_running_before",
                                          "requests_running_after")]
    return int(max((f for f in figures if isinstance(f, int | float)), default=0))


def busy_server_sentence(n: int) -> str:
    return (f"the server was serving {n} other request{'s' if n != 1 else ''}: "
            "timings are not comparable")


@dataclass
class RunTrace:
    """One request through one engine. Counts are stored in vLLM's names (rates derive
    from them in ``SpecCounts``); latencies follow ``vllm bench``."""

    config: RunConfig
    prompt: str
    prompt_token_ids: list[int]
    output_token_ids: list[int]
    text: str
    arrival_s: float
    first_token_s: float
    finish_s: float
    finish_reason: str | None
    steps: list[StepRecord]
    token_text: dict[int, str] = field(default_factory=dict)  # id -> text: outputs and drafts
    vllm_spec_metrics: dict[str, Any] | None = None  # vLLM's own per-request counts
    num_cached_tokens: int = 0  # prompt tokens whose KV came from vLLM's prefix cache
    explanation: Explanation | None = None  # how target_views were scored; None: not scored
    request: RequestRecord = field(default_factory=RequestRecord)  # how the prompt was sampled
    # Server runs only: how the stream was split into steps (space.server.split), and
    # what the server said beside the stream (timings, concurrency, other traffic).
    step_split: StepSplit | None = None
    server: dict[str, Any] | None = None
    counts_from: CountsSource = FROM_STEPS
    # Derived by ``recompute`` (never read from a file).
    ttft_s: float = field(init=False, default=0.0)
    tpot_s: float = field(init=False, default=0.0)
    e2e_s: float = field(init=False, default=0.0)
    tokens_per_s: float = field(init=False, default=0.0)
    num_drafts: int = field(init=False, default=0)          # verify steps
    num_draft_tokens: int = field(init=False, default=0)
    num_accepted_tokens: int = field(init=False, default=0)
    num_accepted_tokens_per_pos: list[int] = field(init=False, default_factory=list)
    num_placeholder_draft_tokens: int = field(init=False, default=0)  # vLLM's padding, not drafts

    def __post_init__(self) -> None:
        self.recompute()

    def recompute(self) -> None:
        n = len(self.output_token_ids)
        self.e2e_s = self.finish_s - self.arrival_s
        self.ttft_s = self.first_token_s - self.arrival_s
        self.tpot_s = (self.e2e_s - self.ttft_s) / (n - 1) if n > 1 else 0.0
        self.tokens_per_s = n / self.e2e_s if self.e2e_s > 0 else 0.0
        c = self.counts
        self.num_drafts = c.num_drafts
        self.num_draft_tokens = c.num_draft_tokens
        self.num_accepted_tokens = c.num_accepted_tokens
        self.num_accepted_tokens_per_pos = list(c.num_accepted_tokens_per_pos)
        self.num_placeholder_draft_tokens = sum(s.num_placeholder_draft_tokens for s in self.steps)

    @property
    def untraced(self) -> bool:
        """The tracing scheduler was missing: no steps, the counts are vLLM's."""
        return hooks.is_missing(self.config, hooks.TRACING_SCHEDULER)

    @property
    def counts(self) -> SpecCounts:
        """From ``counts_from``, or vLLM's metrics when ``untraced``; metrics that hold
        no counts (a hand-made file) fall back to the steps."""
        if self.counts_from == FROM_VLLM_METRICS or self.untraced:
            c = SpecCounts.from_vllm_metrics(self.vllm_spec_metrics)
            if c is not None:
                return c
        verify = [s for s in self.steps if s.kind == VERIFY]
        return SpecCounts.from_per_step([s.num_accepted_tokens for s in verify],
                                        [s.num_draft_tokens for s in verify])

    @property
    def draft_count_difference(self) -> DraftCountDifference | None:
        m = self.vllm_spec_metrics or {}
        steps, tokens = m.get("num_spec_steps"), m.get("num_draft_tokens")
        if type(steps) is not int or type(tokens) is not int:
            return None  # no vLLM figures (baseline, older vLLM, a hand-made file)
        if (steps, tokens) == (self.num_drafts, self.num_draft_tokens):
            return None
        padded = [s for s in self.steps if s.num_placeholder_draft_tokens]
        if padded:
            causes = "; ".join(
                f"step {s.index}: " + PLACEHOLDER_REASONS.get(
                    s.placeholder_cause or "", "{n} placeholder drafts").format(
                        n=s.num_placeholder_draft_tokens) for s in padded)
            reason = (f"vLLM verified and counted draft slots no proposer filled ({causes}); "
                      "SpecLens counts only the proposer's drafts.")
        else:
            reason = ("not explained by placeholder drafts (a vLLM version SpecLens "
                      "was not tested with?)")
        return DraftCountDifference(steps, tokens, self.num_drafts, self.num_draft_tokens, reason)

    @property
    def acceptance_rate(self) -> float | None:
        return self._stored().acceptance_rate

    @property
    def mean_acceptance_length(self) -> float | None:
        return self._stored().mean_acceptance_length

    @property
    def per_position_acceptance(self) -> list[float]:
        return self._stored().per_position_acceptance

    def _stored(self) -> SpecCounts:
        """The counts ``recompute`` stored (callers may adjust them, e.g. tests)."""
        return SpecCounts(self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens,
                          tuple(self.num_accepted_tokens_per_pos))

    @property
    def speculative(self) -> bool:
        return self.config.speculative

    def token_str(self, token_id: int) -> str:
        return self.token_text.get(token_id, f"<{token_id}>")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"version": TRACE_VERSION, **dataclasses.asdict(self)}
        # Token ids as JSON keys, and the rates, so readers of the JSON need not derive them.
        diff = self.draft_count_difference
        d.update(token_text={str(k): v for k, v in self.token_text.items()},
                 acceptance_rate=self.acceptance_rate,
                 mean_acceptance_length=self.mean_acceptance_length,
                 per_position_acceptance=self.per_position_acceptance,
                 draft_count_difference=dataclasses.asdict(diff) if diff else None)
        for s, rec in zip(d["steps"], self.steps, strict=True):
            s["duration_s"] = rec.duration_s
            if rec.anatomy is not None:
                s["anatomy"] = anatomy_json(rec.anatomy, rec.start_s)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunTrace:
        """Inverse of ``to_dict``, for a dict already checked by ``space.records.schema.load``."""
        steps = [build(StepRecord, s) for s in d["steps"]]
        for step, raw in zip(steps, d["steps"], strict=True):
            step.target_views = [build(TargetView, v) for v in raw.get("target_views", [])]
            if raw.get("anatomy") is not None:
                step.anatomy = anatomy_from_json(raw["anatomy"], step.start_s, step.end_s)
        kw = known(cls, d) | {
            "steps": steps, "config": RunConfig.from_dict(d["config"]),
            "token_text": {int(k): v for k, v in d.get("token_text", {}).items()},
            "request": build(RequestRecord, d.get("request") or {})}
        for key, record in (("explanation", Explanation), ("step_split", StepSplit)):
            if kw.get(key) is not None:
                kw[key] = build(record, kw[key])
        return cls(**kw)


@dataclass
class CompareRecord:
    """Baseline and speculative runs of one prompt: the median-TPOT run of each side,
    per-repeat figures in ``*_runs``; speedup = baseline TPOT / speculative TPOT
    (medians over repeats), e2e_speedup the same of end-to-end times.
    """

    baseline: RunTrace
    speculative: RunTrace
    baseline_runs: list[dict[str, float]] = field(default_factory=list)
    speculative_runs: list[dict[str, float]] = field(default_factory=list)
    speedup: float = 0.0
    e2e_speedup: float = 0.0
    outputs_identical: bool = False
    first_divergence: int | None = None  # index in output tokens of the first difference
    checklist: Checklist | None = None
    # This pair's cached tipping curve (TippingCurve.to_dict): for the reader, never drawn.
    tipping_curve: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)} | {
            "version": TRACE_VERSION, "baseline": self.baseline.to_dict(),
            "speculative": self.speculative.to_dict(),
            "checklist": self.checklist.to_dict() if self.checklist else None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompareRecord:
        """Inverse of ``to_dict``, for a dict already checked by ``space.records.schema.load``."""
        runs = {side: RunTrace.from_dict(d[side]) for side in ("baseline", "speculative")}
        return cls(**known(cls, d) | runs | {
            "checklist": Checklist.from_dict(d["checklist"]) if d.get("checklist") else None})


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """Index of the first differing token, or None if the lists are equal."""
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return None if n == len(a) == len(b) else n


def make_compare(baselines: list[RunTrace], speculatives: list[RunTrace]) -> CompareRecord:
    """The median-TPOT run of each side; ratios of the sides' medians."""
    def median_run(runs: list[RunTrace]) -> RunTrace:
        return sorted(runs, key=lambda r: r.tpot_s)[(len(runs) - 1) // 2]

    def ratio(key: str) -> float:
        b = statistics.median(getattr(r, key) for r in baselines)
        s = statistics.median(getattr(r, key) for r in speculatives)
        return b / s if s > 0 else 0.0

    def figures(runs: list[RunTrace]) -> list[dict[str, float]]:
        return [{"ttft_s": r.ttft_s, "tpot_s": r.tpot_s, "e2e_s": r.e2e_s, "tokens_per_s": r.tokens_per_s,
                 "num_output_tokens": len(r.output_token_ids)} for r in runs]

    b, s = median_run(baselines), median_run(speculatives)
    div = first_divergence(b.output_token_ids, s.output_token_ids)
    return CompareRecord(b, s, figures(baselines), figures(speculatives), speedup=ratio("tpot_s"),
                         e2e_speedup=ratio("e2e_s"), outputs_identical=div is None, first_divergence=div)


class Writable(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def dumps(obj: Writable) -> str:
    """The record as JSON, one key per line, lists of plain values on one line:
    about a tenth smaller than ``json.dumps(indent=1)``, and easier to read."""
    return _json(obj.to_dict(), 0)


def _json(value: Any, level: int) -> str:
    if isinstance(value, dict) and value:
        pad = "\n" + " " * (level + 1)
        items = (f"{json.dumps(str(k))}: {_json(v, level + 1)}" for k, v in value.items())
        return "{" + pad + ("," + pad).join(items) + "\n" + " " * level + "}"
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        pad = "\n" + " " * (level + 1)
        return ("[" + pad + ("," + pad).join(_json(v, level + 1) for v in value) + "\n"
                + " " * level + "]")
    return json.dumps(value)
