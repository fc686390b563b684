"""A server's stream -> the same ``RunTrace`` the in-process engine builds (pure).

Times are the client's: each step ends when its chunk arrived and starts when the
previous one did (the prefill when the request was sent), so TTFT, TPOT and e2e
include network and HTTP, as a user of the server sees them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from space.records.config import RequestSpec
from space.records.counts import FROM_STEPS, FROM_VLLM_METRICS, CountsSource
from space.records.run import SERVER, RequestRecord, RunConfig
from space.records.trace import (
    BONUS,
    CORRECTION,
    PREFILL,
    VERIFY,
    RunTrace,
    StepRecord,
    StepSplit,
    chunk_groups,
    tokens_certain,
)
from space.server.client import DETAILED_FLAG, ServerError, ServerInfo, Stream
from space.server.ngram import ngram_drafts
from space.server.split import PlannedStep, Split, split_steps

Texts = Callable[[list[int]], dict[int, str]]  # token id -> its text (the tokenizer's)
UNKNOWN_DEVICE = "unknown"  # a server does not say what hardware it runs on
TIMING_KEYS = ("time_to_first_token_ms", "generation_time_ms", "queue_time_ms", "mean_itl_ms",
               "tokens_per_second")


@dataclass(frozen=True)
class Declared:
    """What the operator says the speculative server runs (``/v1/models`` does not
    tell); k is checked against the server's own figures."""

    method: str | None = None        # None: the baseline server
    k: int = 0
    draft_model: str | None = None
    prompt_lookup_min: int = 2       # ngram: needed to replay its proposer
    prompt_lookup_max: int = 5

    def speculative_config(self) -> dict[str, Any] | None:
        if self.method is None:
            return None
        cfg: dict[str, Any] = {"method": self.method, "num_speculative_tokens": self.k}
        if self.method == "ngram":
            cfg.update(prompt_lookup_min=self.prompt_lookup_min,
                       prompt_lookup_max=self.prompt_lookup_max)
        if self.draft_model:
            cfg["model"] = self.draft_model
        return cfg


def spec_metrics(role: str, stream: Stream) -> dict[str, Any] | None:
    """The server's ``metrics.speculative_decoding`` with the per-step arrays;
    None for a baseline. Raises ServerError naming the flag when they are missing."""
    sd = stream.metrics.get("speculative_decoding")
    if role == "baseline":
        return None
    if not isinstance(sd, dict):
        raise ServerError(f"the speculative server sent no per-request speculative decoding "
                          f"metrics: start it with {DETAILED_FLAG}")
    if sd.get("num_spec_steps") and not sd.get("per_step_accepted"):
        raise ServerError(f"the speculative server sent a summary without per-step counts: "
                          f"start it with {DETAILED_FLAG}")
    out = dict(sd)
    out["histogram"] = list(sd.get("acceptance_histogram") or [])  # the in-process key
    out.setdefault("per_step_accepted", [])
    out.setdefault("per_step_drafted", [])
    return out


def split_stream(stream: Stream, m: dict[str, Any] | None, declared: Declared,
                 max_model_len: int | None) -> Split:
    """Steps placed on the chunks; with ngram, its proposer replayed as a check."""
    lengths = [len(c.token_ids) for c in stream.chunks]
    accepted = list(m["per_step_accepted"]) if m else []
    drafted = list(m["per_step_drafted"]) if m else []
    replayed = None
    if m and declared.method == "ngram" and stream.prompt_token_ids:
        context = list(stream.prompt_token_ids) + (stream.chunks[0].token_ids if lengths else [])
        replayed = []
        for c in stream.chunks[1:]:
            replayed.append(ngram_drafts(context, declared.prompt_lookup_min,
                                         declared.prompt_lookup_max, declared.k,
                                         max_model_len or 1 << 30))
            context += c.token_ids
    return split_steps(lengths, accepted, drafted, replayed,
                       [c.token_ids for c in stream.chunks[1:]])


def build_trace(stream: Stream, info: ServerInfo, declared: Declared, req: RequestSpec,
                texts: Texts | None = None, extra: dict[str, Any] | None = None) -> RunTrace:
    """The run's record. ``extra``: more ``server`` notes (e.g. other traffic). What a
    server cannot tell (dtype, device, prefix cache) stays unknown, never guessed."""
    m = spec_metrics("baseline" if declared.method is None else "speculative", stream)
    split = split_stream(stream, m, declared, info.max_model_len)
    out_ids = [t for c in stream.chunks for t in c.token_ids]
    if texts:
        token_text = texts(list(dict.fromkeys(stream.prompt_token_ids[-1:] + out_ids)))
    else:  # the text of one-token chunks (others stay ``<id>``)
        token_text = {c.token_ids[0]: c.text for c in stream.chunks if len(c.token_ids) == 1}
    finish = stream.chunks[-1].arrival_s if stream.chunks else stream.sent_s
    cached = (stream.usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    config = RunConfig(model=info.model, method=declared.method, k=declared.k,
                       draft_model=declared.draft_model, device=UNKNOWN_DEVICE, source=SERVER,
                       vllm_version=info.vllm_version, max_model_len=info.max_model_len,
                       speculative_config=declared.speculative_config())
    notes = {"served_model": info.model, "num_draft_positions": info.num_draft_positions,
             "declared": "method, draft and k are declared by the operator",
             # None: the server exports no vllm:cache_config_info (comparable runs need False)
             "prefix_caching": info.prefix_caching,
             "timing_ms": {k: stream.metrics[k] for k in TIMING_KEYS
                           if stream.metrics.get(k) is not None}, **(extra or {})}
    counts_from: CountsSource = FROM_VLLM_METRICS if m else FROM_STEPS
    return RunTrace(
        config=config, prompt=req.prompt,
        prompt_token_ids=list(stream.prompt_token_ids), output_token_ids=out_ids,
        text="".join(c.text for c in stream.chunks), arrival_s=stream.sent_s,
        first_token_s=stream.chunks[0].arrival_s if stream.chunks else finish,
        finish_s=finish, finish_reason=stream.finish_reason, steps=_steps(stream, split.steps),
        token_text=token_text, vllm_spec_metrics=m, num_cached_tokens=int(cached),
        request=RequestRecord.of(req), step_split=StepSplit(split.exact, split.note),
        server=notes, counts_from=counts_from)


def _steps(stream: Stream, plan: list[PlannedStep]) -> list[StepRecord]:
    """StepRecords from the planned steps: a verify step with 4 drafted, 1 accepted,
    chunk [12, 30] -> draft_token_ids [12], 3 unreported drafts, correction 30. A merged
    step's window is its chunks'; unless ``tokens_certain`` it names no draft or kind."""
    out = [t for c in stream.chunks for t in c.token_ids]
    arrivals = [stream.sent_s] + [c.arrival_s for c in stream.chunks]
    steps: list[StepRecord] = []
    offset = 0
    for i, p in enumerate(plan):
        emitted = out[offset:offset + p.num_tokens]
        first = p.chunk if p.first_chunk < 0 else p.first_chunk
        steps.append(StepRecord(
            index=i, kind=p.kind, start_s=arrivals[first], end_s=arrivals[p.chunk + 1],
            num_scheduled_tokens=(len(stream.prompt_token_ids) if p.kind == PREFILL
                                  else 1 + p.num_draft_tokens),
            num_accepted_tokens=p.num_accepted_tokens, emitted_token_ids=emitted,
            output_offset=offset, num_unreported_draft_tokens=p.num_draft_tokens,
            placement=p.placement))
        offset += len(emitted)
    for group in chunk_groups(steps):
        if not tokens_certain(group):
            continue
        # A verify step that owns its tokens: its accepted drafts are its first
        # emitted tokens, its last the target's own (unless cut short).
        for st in group:
            if st.kind != VERIFY:
                continue
            drafts = st.num_unreported_draft_tokens
            st.draft_token_ids = st.emitted_token_ids[:min(st.num_accepted_tokens, drafts)]
            st.num_unreported_draft_tokens = drafts - len(st.draft_token_ids)
            if len(st.emitted_token_ids) == st.num_accepted_tokens + 1:
                st.target_token_kind = CORRECTION if st.num_accepted_tokens < drafts else BONUS
    return steps
