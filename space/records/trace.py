"""The trace: one record per run, one record per engine step.

Every view, export and test reads these records; nothing else carries run data.
This module is pure (no vLLM import) so that views and their tests load fast.

Units are in field names: ``*_s`` are seconds (``time.perf_counter`` clock for
absolute times), ``*_ids`` are token ids.

Records are written here (``to_dict``, ``dumps``); files are read back, checked
against the schema first, by ``space.records.schema.load``.
"""
from __future__ import annotations

import dataclasses
import json
import statistics
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, TypeGuard, get_args

from space.records import hooks
from space.records.anatomy import StepAnatomy
from space.records.anatomy import from_json as anatomy_from_json
from space.records.anatomy import to_json as anatomy_json
from space.records.counts import FROM_STEPS, FROM_VLLM_METRICS, CountsSource, SpecCounts
from space.records.dicts import build, known
from space.records.run import RequestRecord, RunConfig
from space.records.target_view import Explanation, TargetView
from space.records.verdict import Checklist

# The JSON contract's version. Bump it with every change to the contract, keep
# a fixture of the older version under tests/fixtures/ and teach
# ``space.records.upgrade.upgrade`` to read it. Version 1 (no ``version`` key) is
# the format before the counts were renamed to vLLM's vocabulary (docs/cli.md, "JSON
# contract"). Version 3 adds num_cached_tokens, steps'
# num_placeholder_draft_tokens, config.prefix_cache and the derived
# draft_count_difference; older files read them as 0 / absent.
# Version 4 adds target views (steps' target_views, the run's explanation:
# space/records/target_view.py); older files have none and replay without them.
# Version 5 adds steps' anatomy (space/records/anatomy.py: timed parts of each engine
# step); older files have none and replay without it.
# Version 6 types what was run (space/records/run.py): the config's method and k
# are always at its top level (older files are upgraded from speculative_config),
# it gains source and vllm_version, and every run carries its request (sampling
# settings and a hash of the prompt; older files replay with it unknown). Runs
# from a vLLM server (space/server/) carry their step split and server notes,
# and steps their num_unreported_draft_tokens (drafts counted without ids); an
# in-process run has none of them. A step's anatomy is written compactly (parts,
# start_us, end_us: whole microseconds after the step's start); the schema also
# reads version 5's perf_counter intervals.
# Version 7 decides verdicts by the speedup's confidence interval (space/judge/estimate.py):
# a checklist gains ``rule`` ("interval" | "spread") and the verdict "undecided";
# older checklists keep their verdicts, read as decided by the "spread" rule.
# Version 7 also: a run says where its counts come from (counts_from:
# space/records/counts.py), and a step how it was placed on a server's stream
# (placement: exact, merged, uncertain). Older server runs are upgraded to take
# their counts from vLLM's metrics (``space.records.upgrade.upgrade_to_7``).
TRACE_VERSION: Final = 7

StepKind = Literal["prefill", "verify", "decode"]
PREFILL: Final = "prefill"  # the target reads (a chunk of) the prompt; the last chunk emits a token
VERIFY: Final = "verify"    # the target checks k draft tokens: accepted drafts + one token of its own
DECODE: Final = "decode"    # the proposer had nothing to propose: a plain one-token decode step
STEP_KINDS: tuple[StepKind, ...] = get_args(StepKind)

UNREPORTED_DRAFTS: Final = "ids not reported by the server"

# How a step was placed on a server's stream (space/server/split.py); in-process
# every step is seen alone, so "exact".
StepPlacement = Literal["exact", "merged", "uncertain"]
EXACT: Final = "exact"          # one chunk held this step alone, and the counts allow no other
MERGED: Final = "merged"        # one chunk held several steps: their times are the chunk's
UNCERTAIN: Final = "uncertain"  # one step per chunk, but another placement fits the counts too
STEP_PLACEMENTS: tuple[StepPlacement, ...] = get_args(StepPlacement)

# What the target's own token at the end of a step is.
TargetTokenKind = Literal["correction", "bonus"]
CORRECTION: Final = "correction"  # a draft was rejected; the target's token replaces it
BONUS: Final = "bonus"            # every draft was accepted; the target adds one more token
TARGET_TOKEN_KINDS: tuple[TargetTokenKind, ...] = get_args(TargetTokenKind)

# Why vLLM verified draft slots that no proposer filled (docs/vllm-hooks.md).
PlaceholderCause = Literal["padding", "drafter_skipped"]
PADDING: Final = "padding"                  # ids -1: a one-token schedule padded to 1 + k
DRAFTER_SKIPPED: Final = "drafter_skipped"  # zeros: the drafter's input would pass max_model_len
PLACEHOLDER_CAUSES: tuple[PlaceholderCause, ...] = get_args(PlaceholderCause)

# What became of one draft token of a verify step (StepRecord.draft_fates).
DraftFate = Literal["accepted", "rejected", "unused"]
ACCEPTED: Final = "accepted"  # the target agreed with it; part of the output
REJECTED: Final = "rejected"  # the target turned it down, or one before it; not output
UNUSED: Final = "unused"      # cut off by max_tokens/EOS before the output took it


@dataclass
class StepRecord:
    """One engine step of one request.

    Example (ngram, k=4): drafts ['2',' years',' old',' and'] -> the target
    sampled ['2', ','] : num_accepted_tokens=1, emitted ['2', ','],
    target_token_kind 'correction' (',' replaced ' years'; ' old' and ' and'
    were never checked against the target's own choice, they are discarded
    with ' years').
    """

    index: int                     # engine step number within the request, from 0
    kind: StepKind
    start_s: float                 # perf_counter at the start of the engine step
    end_s: float                   # perf_counter when the step's outputs reached the caller
    num_scheduled_tokens: int      # prompt tokens on a prefill step; 1 + len(drafts) otherwise
    draft_token_ids: list[int] = field(default_factory=list)   # drafts verified in this step
    num_accepted_tokens: int = 0   # vLLM's count: sampled tokens - 1 on a verify step
    emitted_token_ids: list[int] = field(default_factory=list)  # tokens committed to the output
    target_token_kind: TargetTokenKind | None = None  # on verify steps, else None; None too
    # when max_tokens/EOS cut the step before the target's own token.
    output_offset: int = 0         # output tokens committed before this step
    propose_s: float = 0.0         # proposer time inside this step (drafting for the next one)
    # Draft slots vLLM verified and counted that no proposer filled, and why; never
    # in draft_token_ids, never counted by SpecLens (see DraftCountDifference).
    num_placeholder_draft_tokens: int = 0
    placeholder_cause: PlaceholderCause | None = None
    # What the target thought of each verified draft (scored after the run; empty
    # when the run was not explained, or before trace version 4).
    target_views: list[TargetView] = field(default_factory=list)
    # Where the step's time went (timed parts of vLLM's own methods); None before
    # trace version 5, and for steps the engine did not time.
    anatomy: StepAnatomy | None = None
    # Drafts the target verified whose ids the source did not report: a server
    # reports how many drafts a step verified and how many it accepted; the
    # accepted ones are the step's first emitted tokens (in draft_token_ids),
    # the rejected ones are only counted here. Always 0 in-process.
    num_unreported_draft_tokens: int = 0
    # How the step was placed on a server's stream (always "exact" in-process).
    # "merged": its chunk held several steps, so start_s/end_s are the chunk's
    # (shared with the others) and its tokens are its own only where
    # ``tokens_certain`` says so; "uncertain": counts allow another kind here.
    placement: StepPlacement = EXACT

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def num_draft_tokens(self) -> int:
        return len(self.draft_token_ids) + self.num_unreported_draft_tokens

    def draft_fates(self) -> list[DraftFate]:
        """What became of each draft token, in order.

        vLLM's rejection sampler accepts drafts up to the first one the target
        turns down; the target's own token replaces that one (a correction), and
        the drafts after it are rejected with it, since they were conditioned on
        it. Drafts past a max_tokens/EOS cut are unused: the output ended before them.

        Example (k=4): drafts [a, b, c, d], 1 accepted, emitted [a, X], correction
          -> accepted, rejected, rejected, rejected.
        """
        na, n_out = self.num_accepted_tokens, len(self.emitted_token_ids)
        corrected = self.target_token_kind == CORRECTION
        # one fate per draft id: a server's unreported drafts have no id to show
        return [ACCEPTED if j < na and j < n_out else REJECTED if corrected and j >= na
                else UNUSED for j in range(len(self.draft_token_ids))]

    def own_token_kind(self) -> TargetTokenKind | None:
        """The kind of the target's own token at the end of a verify step, from the
        counts (what ``target_token_kind`` records; space/engine/build.py sets it so).

        After the accepted drafts the target emits one token of its own: a
        correction in place of the first rejected draft, or a bonus after the last
        draft when every one was accepted. None on prefill and decode steps, and
        when max_tokens/EOS cut the step before that token (nothing was emitted
        past the accepted drafts).

        Example (k=4): drafts [a, b, c, d], 1 accepted, emitted [a, X] -> correction;
        emitted [a] (cut) -> None; 4 accepted, emitted [a, b, c, d, Y] -> bonus.
        """
        k, na = self.num_draft_tokens, self.num_accepted_tokens
        if self.kind != VERIFY or not k or len(self.emitted_token_ids) <= min(na, k):
            return None
        return CORRECTION if na < k else BONUS


def chunk_groups(steps: list[StepRecord]) -> list[list[StepRecord]]:
    """Steps grouped as their stream delivered them: consecutive merged steps that
    share one window (start_s, end_s) form a group; every other step is its own.

    Example: placements [exact, merged, merged, exact], the merged two with equal
    times -> [[s0], [s1, s2], [s3]].
    """
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
    """Whether each step of a group (``chunk_groups``) owns the tokens it lists.

    A lone step does. In a merged group the step lengths are known but not their
    order, unless the steps after a prefill are all one kind (verify steps come
    in the server's order; decode steps are one token each).
    Example: [prefill, verify, verify] -> True; [verify, decode] -> False.
    """
    return len({s.kind for s in group if s.kind != PREFILL}) <= 1


PLACEHOLDER_REASONS: dict[str, str] = {
    PADDING: "{n} placeholder ids (-1) padding a one-token prefill (the prompt's last "
             "token; the rest came from the prefix cache) to 1 + k tokens",
    DRAFTER_SKIPPED: "{n} zeros the model runner put in place of drafts when it skipped "
                     "the drafter (its input would have passed max_model_len)",
}


@dataclass(frozen=True)
class DraftCountDifference:
    """vLLM's own per-request draft counts beside SpecLens's, where they differ.

    Example: a repeated prompt of 769 tokens, 768 of them cached: vLLM counts
    31 spec steps and 124 draft tokens, SpecLens 30 and 120, because step 0
    (the one-token prefill) carried 4 placeholder drafts.
    """

    vllm_num_drafts: int          # vLLM's spec steps (RequestSpecDecodeMetrics)
    vllm_num_draft_tokens: int
    num_drafts: int               # SpecLens's: verify steps with proposed drafts
    num_draft_tokens: int
    reason: str

    @classmethod
    def of(cls, run: RunTrace) -> DraftCountDifference | None:
        m = run.vllm_spec_metrics or {}
        steps, tokens = m.get("num_spec_steps"), m.get("num_draft_tokens")
        if not (_is_count(steps) and _is_count(tokens)):
            return None  # no vLLM figures (baseline, older vLLM, a hand-made file)
        if (steps, tokens) == (run.num_drafts, run.num_draft_tokens):
            return None
        padded = [s for s in run.steps if s.num_placeholder_draft_tokens]
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
        return cls(steps, tokens, run.num_drafts, run.num_draft_tokens, reason)


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class StepSplit:
    """How a server run's steps were placed on its streamed chunks."""

    exact: bool  # False: some steps are merged or uncertain (the note says which and why)
    note: str


def other_requests(run: RunTrace) -> int:
    """Requests other than SpecLens's own that the server was serving around and
    during this run (``server.other_requests``, space/server/compare.py); files
    from before it was sampled give the running gauge before and after. 0
    in-process."""
    notes = run.server or {}
    figures = [notes.get(key) for key in ("other_requests", "requests_running_before",
                                          "requests_running_after")]
    return int(max((f for f in figures if isinstance(f, int | float)), default=0))


def busy_server_sentence(n: int) -> str:
    """What every view says of a run measured beside other traffic."""
    return (f"the server was serving {n} other request{'s' if n != 1 else ''}: "
            "timings are not comparable")


@dataclass
class RunTrace:
    """One request through one engine, with run-level counts and metrics.

    Counts are stored (integers, vLLM's names), taken from the steps or from
    vLLM's per-request metrics as ``counts_from`` says; rates are derived from
    them in one place, ``space.records.counts.SpecCounts``, with vLLM's definitions
    (vllm/v1/spec_decode/metrics.py):
      acceptance_rate        = num_accepted_tokens / num_draft_tokens
      mean_acceptance_length = 1 + num_accepted_tokens / num_drafts
      per_position_acceptance[p] = num_accepted_tokens_per_pos[p] / num_drafts
    where num_drafts counts verify steps (a draft is one step's proposal).
    Latency definitions follow ``vllm bench``:
      ttft_s   = first token time - arrival
      tpot_s   = (e2e_s - ttft_s) / (output tokens - 1)
      tokens_per_s = output tokens / e2e_s
    """

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
    # Server runs (config.source "server"): how the stream's chunks were split
    # into engine steps (space.server.split), and what the server said beside
    # the stream (its timing fields, concurrency, other traffic); None in-process.
    step_split: StepSplit | None = None
    server: dict[str, Any] | None = None
    # Where the run-level counts come from (space/records/counts.py): the steps,
    # or vLLM's per-request metrics (always, for a server run's speculative side:
    # its steps may be merged, and a placement never makes a count).
    counts_from: CountsSource = FROM_STEPS
    # Derived from the fields above by ``recompute`` (never read from a file).
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
        """Derive the run-level figures and counts from the raw times and steps."""
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
        """True when the tracing scheduler was missing: the run has no steps, and its
        counts are vLLM's per-request metrics (``space.records.hooks``)."""
        return hooks.is_missing(self.config, hooks.TRACING_SCHEDULER)

    @property
    def counts(self) -> SpecCounts:
        """The run's counts from ``counts_from``, or from vLLM's metrics when the
        tracing scheduler was missing (``untraced``: no steps were recorded); vLLM's
        metrics that hold no counts (a hand-made file) fall back to the steps."""
        if self.counts_from == FROM_VLLM_METRICS or self.untraced:
            c = SpecCounts.from_vllm_metrics(self.vllm_spec_metrics)
            if c is not None:
                return c
        verify = [s for s in self.steps if s.kind == VERIFY]
        return SpecCounts.from_per_step([s.num_accepted_tokens for s in verify],
                                        [s.num_draft_tokens for s in verify])

    @property
    def draft_count_difference(self) -> DraftCountDifference | None:
        """vLLM's draft counts and SpecLens's with the reason, when they differ."""
        return DraftCountDifference.of(self)

    @property
    def acceptance_rate(self) -> float | None:
        """None when nothing was drafted: no drafts means no rate, not zero."""
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
        d["token_text"] = {str(k): v for k, v in self.token_text.items()}
        # The rates are written too, so readers of the JSON need not derive them.
        diff = self.draft_count_difference
        d.update(acceptance_rate=self.acceptance_rate,
                 mean_acceptance_length=self.mean_acceptance_length,
                 per_position_acceptance=self.per_position_acceptance,
                 draft_count_difference=dataclasses.asdict(diff) if diff else None)
        for s, rec in zip(d["steps"], self.steps, strict=True):
            s["duration_s"] = rec.duration_s
            if rec.anatomy is not None:  # offsets in whole microseconds: a third of the bytes
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
        kw = known(cls, d)
        kw["steps"] = steps
        if kw.get("explanation") is not None:
            kw["explanation"] = build(Explanation, kw["explanation"])
        if kw.get("step_split") is not None:
            kw["step_split"] = build(StepSplit, kw["step_split"])
        kw["token_text"] = {int(k): v for k, v in d.get("token_text", {}).items()}
        kw["config"] = RunConfig.from_dict(d["config"])
        kw["request"] = RequestRecord.from_dict(d.get("request") or {})
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
    checklist: Checklist | None = None
    # This pair's tipping-point curve on this machine (space.judge.curves.TippingCurve.to_dict),
    # when one was cached at compare time: data for the reader, never drawn from a file.
    tipping_curve: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["version"] = TRACE_VERSION
        d["baseline"] = self.baseline.to_dict()
        d["speculative"] = self.speculative.to_dict()
        d["checklist"] = self.checklist.to_dict() if self.checklist else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompareRecord:
        """Inverse of ``to_dict``, for a dict already checked by ``space.records.schema.load``."""
        kw = known(cls, d)
        kw["baseline"] = RunTrace.from_dict(d["baseline"])
        kw["speculative"] = RunTrace.from_dict(d["speculative"])
        kw["checklist"] = Checklist.from_dict(d["checklist"]) if d.get("checklist") else None
        return cls(**kw)


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


class Writable(Protocol):
    """A record that says itself as a dict (runs, comparisons, sweeps, ...)."""

    def to_dict(self) -> dict[str, Any]: ...


def dumps(obj: Writable) -> str:
    """The record as JSON, one key per line, lists of plain values on one line
    (token ids, an anatomy's parts and times): about a tenth smaller than
    ``json.dumps(indent=1)``, and easier to read."""
    return _json(obj.to_dict(), 0)


def _json(value: Any, level: int) -> str:
    """``json.dumps(value, indent=1)``, except that a list holding no dict or list
    is written on one line."""
    if isinstance(value, dict) and value:
        pad = "\n" + " " * (level + 1)
        items = (f"{json.dumps(str(k))}: {_json(v, level + 1)}" for k, v in value.items())
        return "{" + pad + ("," + pad).join(items) + "\n" + " " * level + "}"
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        pad = "\n" + " " * (level + 1)
        return ("[" + pad + ("," + pad).join(_json(v, level + 1) for v in value) + "\n"
                + " " * level + "]")
    return json.dumps(value)
