"""The trace: one record per run, one record per engine step.

Every view, export and test reads these records; nothing else carries run data.
This module is pure (no vLLM import) so that views and their tests load fast.

Units are in field names: ``*_s`` are seconds (``time.perf_counter`` clock for
absolute times), ``*_ids`` are token ids.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NoReturn, TypeGuard, get_args

from space.checklist import CHECK_NAMES, CHECK_OPS, VERDICTS, Checklist
from space.config import PREFIX_CACHE_MODES
from space.target_view import TOP_N, Explanation, TargetView

# The JSON contract's version. Bump it with every change to the contract, keep
# a fixture of the older version under tests/fixtures/ and teach ``_upgrade``
# to read it. Version 1 (no ``version`` key) is the format before the counts
# were renamed to vLLM's vocabulary (README, "JSON contract"). Version 3 adds
# num_cached_tokens, steps' num_placeholder_draft_tokens, config.prefix_cache
# and the derived draft_count_difference; older files read them as 0 / absent.
# Version 4 adds target views (steps' target_views, the run's explanation:
# space/target_view.py); older files have none and replay without them.
TRACE_VERSION: Final = 4

StepKind = Literal["prefill", "verify", "decode"]
PREFILL: Final = "prefill"  # the target reads (a chunk of) the prompt; the last chunk emits a token
VERIFY: Final = "verify"    # the target checks k draft tokens: accepted drafts + one token of its own
DECODE: Final = "decode"    # the proposer had nothing to propose: a plain one-token decode step
STEP_KINDS: tuple[StepKind, ...] = get_args(StepKind)

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

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def num_draft_tokens(self) -> int:
        return len(self.draft_token_ids)


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


@dataclass
class RunTrace:
    """One request through one engine, with run-level counts and metrics.

    Counts are stored (integers, vLLM's names); rates are derived from them in
    one place, the properties below, with vLLM's definitions
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
    token_text: dict[int, str] = field(default_factory=dict)  # id -> text: outputs and drafts
    vllm_spec_metrics: dict[str, Any] | None = None  # vLLM's own per-request counts
    num_cached_tokens: int = 0  # prompt tokens whose KV came from vLLM's prefix cache
    explanation: Explanation | None = None  # how target_views were scored; None: not scored
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
        verify = [s for s in self.steps if s.kind == VERIFY]
        self.num_drafts = len(verify)
        self.num_draft_tokens = sum(s.num_draft_tokens for s in verify)
        self.num_accepted_tokens = sum(s.num_accepted_tokens for s in verify)
        # vLLM accepts a prefix of the drafts: position p is accepted iff more than p were.
        k = max((s.num_draft_tokens for s in verify), default=0)
        self.num_accepted_tokens_per_pos = [
            sum(1 for s in verify if s.num_accepted_tokens > p) for p in range(k)]
        self.num_placeholder_draft_tokens = sum(s.num_placeholder_draft_tokens for s in self.steps)

    @property
    def draft_count_difference(self) -> DraftCountDifference | None:
        """vLLM's draft counts and SpecLens's with the reason, when they differ."""
        return DraftCountDifference.of(self)

    @property
    def acceptance_rate(self) -> float | None:
        """None when nothing was drafted: no drafts means no rate, not zero."""
        if not self.num_draft_tokens:
            return None
        return self.num_accepted_tokens / self.num_draft_tokens

    @property
    def mean_acceptance_length(self) -> float | None:
        if not self.num_drafts:
            return None
        return 1 + self.num_accepted_tokens / self.num_drafts

    @property
    def per_position_acceptance(self) -> list[float]:
        return [c / self.num_drafts for c in self.num_accepted_tokens_per_pos]

    @property
    def speculative(self) -> bool:
        return bool(self.config.get("speculative_config"))

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
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunTrace:
        """Inverse of ``to_dict``, for a dict already checked by ``load``."""
        names = _init_names(StepRecord)
        steps = [StepRecord(**{k: v for k, v in s.items() if k in names}) for s in d["steps"]]
        for step, raw in zip(steps, d["steps"], strict=True):
            step.target_views = [_build(TargetView, v) for v in raw.get("target_views", [])]
        kw = {k: v for k, v in d.items() if k in _init_names(cls)}
        kw["steps"] = steps
        if kw.get("explanation") is not None:
            kw["explanation"] = _build(Explanation, kw["explanation"])
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
    checklist: Checklist | None = None
    # This pair's tipping-point curve on this machine (space.curves.TippingCurve.to_dict),
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
        """Inverse of ``to_dict``, for a dict already checked by ``load``."""
        kw = {k: v for k, v in d.items() if k in _init_names(cls)}
        kw["baseline"] = RunTrace.from_dict(d["baseline"])
        kw["speculative"] = RunTrace.from_dict(d["speculative"])
        kw["checklist"] = Checklist.from_dict(d["checklist"]) if d.get("checklist") else None
        return cls(**kw)


def _init_names(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls) if f.init}


def _build(cls, d: dict[str, Any]):
    return cls(**{k: v for k, v in d.items() if k in _init_names(cls)})


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
    """Load a trace or compare JSON written by the CLI or the app, any version.

    Everything is checked against the schema (below in this module) before
    a record is built: a bad file raises ``TraceFormatError`` with one line
    naming the first bad field, e.g. "not a SpecLens trace:
    steps[3].index must be an integer".
    """
    try:
        d = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise TraceFormatError(f"not a SpecLens trace: not valid JSON ({_first_line(exc)})") \
            from None
    _refuse_lone_surrogates(text, d)
    d = validate_record(_upgrade(d))
    return CompareRecord.from_dict(d) if "baseline" in d else RunTrace.from_dict(d)


def _upgrade(d: Any) -> Any:
    """An older version's dict in today's names (in place; checked afterwards).

    Version 1 (no ``version`` key): a step's accepted count was ``num_accepted``.
    Version 2 lacks only fields that default (``num_cached_tokens``, steps'
    ``num_placeholder_draft_tokens``, ``config.prefix_cache``): nothing to rename.
    Version 3 has no target views (added in 4): the defaults (none) stand.
    """
    if not isinstance(d, dict) or "version" in d:
        return d
    runs = [d.get("baseline"), d.get("speculative")] if "baseline" in d else [d]
    for run in runs:
        steps = run.get("steps") if isinstance(run, dict) else None
        for s in steps if isinstance(steps, list) else []:
            if isinstance(s, dict) and "num_accepted" in s:
                s.setdefault("num_accepted_tokens", s.pop("num_accepted"))
    return d


def _refuse_lone_surrogates(text: str, d: Any) -> None:
    """A lone ``\\ud800`` escape parses to a string that cannot be written as
    UTF-8: the page's own JSON (orjson) and every export would fail on it.
    Looked for only when the file has a surrogate escape at all (our own files
    write emoji as escaped pairs, which are fine).

    Example:
        >>> _refuse_lone_surrogates('"\\\\ud83d\\\\ude00"', "\\U0001f600")  # a pair: one emoji
        >>> _refuse_lone_surrogates('"\\\\ud800"', "\\ud800")
        Traceback (most recent call last):
        ...
        space.trace.TraceFormatError: not a SpecLens trace: a lone surrogate escape, not Unicode text
    """
    if not _SURROGATE_ESCAPE.search(text):
        return
    try:
        json.dumps(d, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise TraceFormatError("not a SpecLens trace: a lone surrogate escape, "
                               "not Unicode text") from None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:120]



# --- The schema: every field a visitor's file may carry, with types and bounds ---
# ``load`` checks a file against it before any record is built, so views and
# exports only ever see well-typed values (escaping is still done where HTML is
# written). Unknown keys are ignored; derived figures are recomputed, not read.

class TraceFormatError(ValueError):
    """A file that is not a valid trace; the message is one line for the user."""


MAX_COUNT = 2**31 - 1   # ids, indices and counts: vLLM's token ids are int32
Check = Callable[[Any, str], Any]


def _fail(path: str, what: str) -> NoReturn:
    raise TraceFormatError(f"not a SpecLens trace: {path} must be {what}")


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        _fail(path, f"an integer in 0..{MAX_COUNT}")
    return value


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        _fail(path, "a finite number")
    return value


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        _fail(path, "true or false")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        _fail(path, "a string")
    return value


def _optional(check: Check) -> Check:
    return lambda v, path: None if v is None else check(v, path)


def _one_of(*allowed: str) -> Check:
    def check(value: Any, path: str) -> str:
        if value not in allowed:
            _fail(path, "one of " + ", ".join(allowed))
        return value
    return check


def _list(check: Check, max_len: int | None = None) -> Check:
    def each(value: Any, path: str) -> list:
        if not isinstance(value, list):
            _fail(path, "a list")
        if max_len is not None and len(value) > max_len:
            _fail(path, f"a list of at most {max_len}")
        return [check(v, f"{path}[{i}]") for i, v in enumerate(value)]
    return each


def _prob(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        _fail(path, "a probability in 0..1")
    return value


def _json_object(value: Any, path: str) -> dict:
    """Free-form settings (vLLM's keys): a JSON object, its values not rendered as markup."""
    if not isinstance(value, dict):
        _fail(path, "an object")
    return value


def _record(fields: dict[str, tuple[Check, bool]], post: Check | None = None) -> Check:
    """An object whose known keys pass their checks; (check, required) per key;
    then ``post`` (checks across fields) on the result."""
    def check(value: Any, path: str) -> dict:
        if not isinstance(value, dict):
            _fail(path, "an object")
        out = dict(value)
        for key, (check_field, required) in fields.items():
            where = f"{path}.{key}" if path else key
            if key in value:
                out[key] = check_field(value[key], where)
            elif required:
                _fail(where, "present")
        return post(out, path) if post else out
    return check


def _token_text(value: Any, path: str) -> dict:
    if not isinstance(value, dict):
        _fail(path, "an object of token id -> text")
    for key, text in value.items():
        if not (isinstance(key, str) and key.isdigit() and int(key) <= MAX_COUNT):
            _fail(f"{path} key {key[:20]!r}", "a token id")
        _str(text, f"{path}[{key}]")
    return value


_ids = _list(_int)
MAX_VIEWS_PER_STEP = 64  # one per verified draft: k is at most 16 here, vLLM allows more


def _tops_pair_up(view: dict, path: str) -> dict:
    if len(view.get("top_token_ids", [])) != len(view.get("top_probs", [])):
        _fail(f"{path}.top_probs", "as long as top_token_ids")
    return view


def _views_match_drafts(step: dict, path: str) -> dict:
    """Each view names a draft of its own step: the views index into the drafts."""
    drafts = step.get("draft_token_ids", [])
    for i, view in enumerate(step.get("target_views", [])):
        pos = view["draft_pos"]
        if pos >= len(drafts) or drafts[pos] != view["draft_token_id"]:
            _fail(f"{path}.target_views[{i}].draft_pos", "the position of its draft_token_id "
                                                          "in draft_token_ids")
    return step


EXPLANATION_SCHEMA = _record({
    "temperature": (_number, True), "top_p": (_prob, True), "score_s": (_number, True),
    "num_scored_tokens": (_int, True), "engine": (_str, False),
})
TARGET_VIEW_SCHEMA = _record({
    "draft_pos": (_int, True), "draft_token_id": (_int, True), "draft_prob": (_prob, True),
    "top_token_ids": (_list(_int, TOP_N), False), "top_probs": (_list(_prob, TOP_N), False),
    "draft_q": (_optional(_prob), False),
}, post=_tops_pair_up)
STEP_SCHEMA = _record({
    "index": (_int, True), "kind": (_one_of(*STEP_KINDS), True),
    "start_s": (_number, True), "end_s": (_number, True),
    "num_scheduled_tokens": (_int, True), "draft_token_ids": (_ids, False),
    "num_accepted_tokens": (_int, False), "emitted_token_ids": (_ids, False),
    "target_token_kind": (_optional(_one_of(*TARGET_TOKEN_KINDS)), False),
    "output_offset": (_int, False), "propose_s": (_number, False),
    "num_placeholder_draft_tokens": (_int, False),
    "placeholder_cause": (_optional(_one_of(*PLACEHOLDER_CAUSES)), False),
    "target_views": (_list(TARGET_VIEW_SCHEMA, MAX_VIEWS_PER_STEP), False),
}, post=_views_match_drafts)
CONFIG_SCHEMA = _record({
    key: (_optional(_str), False)
    for key in ("model", "model_path", "method", "draft_model", "draft_path", "dtype", "device")
} | {"k": (_optional(_int), False), "max_model_len": (_optional(_int), False),
     "speculative_config": (_optional(_json_object), False),
     "tracing_settings": (_optional(_json_object), False),
     "synthetic": (_bool, False), "prefix_cache": (_optional(_one_of(*PREFIX_CACHE_MODES)), False)})
RUN_SCHEMA = _record({
    "version": (_int, False), "config": (CONFIG_SCHEMA, True), "prompt": (_str, True),
    "prompt_token_ids": (_ids, True), "output_token_ids": (_ids, True), "text": (_str, True),
    "arrival_s": (_number, True), "first_token_s": (_number, True),
    "finish_s": (_number, True), "finish_reason": (_optional(_str), True),
    "steps": (_list(STEP_SCHEMA), True), "token_text": (_token_text, False),
    "vllm_spec_metrics": (_optional(_json_object), False), "num_cached_tokens": (_int, False),
    "explanation": (_optional(EXPLANATION_SCHEMA), False),
})
CHECK_SCHEMA = _record({
    "name": (_one_of(*CHECK_NAMES), True), "detail": (_str, True),
    "value": (_optional(lambda v, p: v if isinstance(v, str) else _number(v, p)), True),
    "threshold": (_optional(lambda v, p: v if isinstance(v, str) else _number(v, p)), True),
    "passed": (_optional(_bool), True), "decisive": (_bool, False),
    "op": (_one_of(*CHECK_OPS), False), "unit": (_str, False),
})
CHECKLIST_SCHEMA = _record({"verdict": (_one_of(*VERDICTS), True),
                            "checks": (_list(CHECK_SCHEMA), True)})
_figures = _list(lambda v, p: {k: _number(x, f"{p}.{k}") for k, x in _json_object(v, p).items()})
COMPARE_SCHEMA = _record({
    "version": (_int, False), "baseline": (RUN_SCHEMA, True), "speculative": (RUN_SCHEMA, True),
    "baseline_runs": (_figures, False), "speculative_runs": (_figures, False),
    "speedup": (_number, False), "e2e_speedup": (_number, False),
    "outputs_identical": (_bool, False), "first_divergence": (_optional(_int), False),
    "checklist": (_optional(CHECKLIST_SCHEMA), False),
    "tipping_curve": (_optional(_json_object), False),
})


def validate_record(d: Any) -> dict:
    """``d`` checked against the compare or the run schema; raises TraceFormatError.

    Example:
        >>> validate_record({"steps": [{"index": "<b>"}]})
        Traceback (most recent call last):
        ...
        space.trace.TraceFormatError: not a SpecLens trace: config must be present
    """
    if not isinstance(d, dict) or not ("steps" in d or "baseline" in d):
        raise TraceFormatError("not a SpecLens trace: expected 'steps' or "
                               "'baseline'/'speculative' keys")
    version = d.get("version", 1)
    if isinstance(version, int) and not isinstance(version, bool) and version > TRACE_VERSION:
        raise TraceFormatError(f"this trace was written by a newer SpecLens (version "
                               f"{version}; this one reads up to {TRACE_VERSION})")
    return COMPARE_SCHEMA(d, "") if "baseline" in d else RUN_SCHEMA(d, "")
