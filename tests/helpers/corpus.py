"""The prompt corpus (``tests/fixtures/corpus.json``) and the invariants every
trace must hold.

Shared by ``tests/engine/test_corpus.py`` (the prompts marked ``ci``) and
``benchmarks/corpus.py`` (all of them). The checks raise ``AssertionError``
with a message naming the step, so a benchmark run reports the same failures
a test would.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from space.records.config import ConfigError, RequestSpec
from space.records.trace import DRAFTER_SKIPPED, PADDING, PREFILL, RunTrace, first_divergence
from tests.helpers.engine import assert_per_step_counts

CORPUS_FILE = Path(__file__).parents[1] / "fixtures" / "corpus.json"


@dataclass(frozen=True)
class CorpusPrompt:
    id: str
    category: str
    prompt: str
    raw: bool = False
    ci: bool = False                     # in the CI subset
    fit_tokens: int | None = None        # trim to exactly this many templated tokens
    near_max_margin: int | None = None   # trim to max_model_len minus this many tokens
    note: str = ""


def load(ci_only: bool = False) -> list[CorpusPrompt]:
    items = [CorpusPrompt(**p) for p in json.loads(CORPUS_FILE.read_text())["prompts"]]
    return [p for p in items if p.ci or not ci_only]


def request(p: CorpusPrompt, engine, max_tokens: int) -> RequestSpec:
    """The prompt as a temperature-0 request, trimmed to its token target if it has one."""
    req = RequestSpec(prompt=p.prompt, raw=p.raw, max_tokens=max_tokens)
    target = p.fit_tokens
    if p.near_max_margin is not None:
        target = engine.spec.max_model_len - p.near_max_margin
    return fit(engine, req, target) if target else req


def fit(engine, req: RequestSpec, n_tokens: int) -> RequestSpec:
    """``req`` with its prompt cut (at a character) to exactly ``n_tokens`` encoded tokens."""
    def size(n_chars: int) -> int:
        try:
            return len(engine.encode(RequestSpec(prompt=req.prompt[:n_chars], raw=req.raw)))
        except ConfigError:  # longer than max_model_len allows: too long, whatever its length
            return engine.spec.max_model_len

    lo, hi = 1, len(req.prompt)  # the longest prefix with at most n_tokens
    if size(hi) < n_tokens:
        raise ValueError(f"prompt too short for {n_tokens} tokens")
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if size(mid) <= n_tokens else (lo, mid - 1)
    for n_chars in range(lo, max(lo - 40, 0), -1):  # a merge can skip a length: step back
        if size(n_chars) == n_tokens:
            return RequestSpec(prompt=req.prompt[:n_chars], raw=req.raw, max_tokens=req.max_tokens,
                               temperature=req.temperature, seed=req.seed)
    raise ValueError(f"no prefix of the prompt has exactly {n_tokens} tokens")


# --- invariants --------------------------------------------------------------

def check_trace(run: RunTrace, vocab_size: int, baseline: RunTrace | None = None) -> None:
    """Every invariant on one trace; ``baseline``: the baseline engine's run of the same
    temperature-0 request, for the speculative run's accepted drafts."""
    check_ids(run, vocab_size)
    check_emitted(run)
    if not run.speculative:
        assert run.vllm_spec_metrics is None
        assert all(not s.draft_token_ids and not s.num_placeholder_draft_tokens
                   for s in run.steps), "a baseline step with drafts"
        return
    check_counts_against_vllm(run)
    if run.config.method == "ngram":
        check_ngram_drafts_in_context(run)
    if baseline is not None:
        check_accepted_against_baseline(run, baseline)


def check_ids(run: RunTrace, vocab_size: int) -> None:
    """Prompt, output, draft and emitted ids, and the token-text keys, are real ids."""
    def bad(ids):
        return [t for t in ids if not (isinstance(t, int) and 0 <= t < vocab_size)]

    assert not bad(run.prompt_token_ids), f"prompt ids {bad(run.prompt_token_ids)}"
    assert not bad(run.output_token_ids), f"output ids {bad(run.output_token_ids)}"
    for s in run.steps:
        assert not bad(s.draft_token_ids), f"step {s.index} drafts {s.draft_token_ids}"
        assert not bad(s.emitted_token_ids), f"step {s.index} emitted {s.emitted_token_ids}"
    assert not bad(run.token_text), f"token_text keys {bad(run.token_text)}"


def check_emitted(run: RunTrace) -> None:
    """Emitted tokens concatenate to the output; accepted drafts are a prefix of emitted."""
    emitted = [t for s in run.steps for t in s.emitted_token_ids]
    assert emitted == run.output_token_ids, "emitted tokens do not concatenate to the output"
    for s in run.steps:
        assert s.num_accepted_tokens <= s.num_draft_tokens, f"step {s.index}"
        n = min(s.num_accepted_tokens, len(s.emitted_token_ids))
        assert s.emitted_token_ids[:n] == s.draft_token_ids[:n], \
            f"step {s.index}: accepted drafts are not the first emitted tokens"


def check_counts_against_vllm(run: RunTrace) -> None:
    """Per-step counts equal vLLM's detailed arrays, placeholder slots included; where
    vLLM counted placeholders, the trace states both figures and the reason."""
    m = assert_per_step_counts(run)
    diff = run.draft_count_difference
    placeholder_steps = [s for s in run.steps if s.num_placeholder_draft_tokens]
    if not placeholder_steps:
        assert diff is None, diff
        assert run.num_draft_tokens == m["num_draft_tokens"]
        assert run.num_drafts == m["num_spec_steps"]
        return
    k = run.config.k
    for s in placeholder_steps:  # the two documented causes (docs/vllm-hooks.md)
        assert not s.draft_token_ids, f"step {s.index}: placeholders beside real drafts"
        if s.placeholder_cause == PADDING:  # a one-token prefill after a prefix-cache hit
            assert s.kind == PREFILL and run.num_cached_tokens > 0, f"step {s.index}"
            assert s.num_scheduled_tokens == 1 + s.num_placeholder_draft_tokens
        else:  # zeros: the drafter's input (the context and k slots) would pass max_model_len
            assert s.placeholder_cause == DRAFTER_SKIPPED, f"step {s.index}"
            context = len(run.prompt_token_ids) + s.output_offset
            assert context + k > (run.config.max_model_len or 0), f"step {s.index}"
    assert diff is not None and "no proposer filled" in diff.reason
    assert (diff.vllm_num_draft_tokens, diff.vllm_num_drafts) == \
        (m["num_draft_tokens"], m["num_spec_steps"])
    assert (diff.num_draft_tokens, diff.num_drafts) == (run.num_draft_tokens, run.num_drafts)
    assert diff.vllm_num_draft_tokens - diff.num_draft_tokens == run.num_placeholder_draft_tokens


def check_ngram_drafts_in_context(run: RunTrace) -> None:
    """ngram proposes the tokens that followed an earlier match of the context's last
    ``prompt_lookup_min`` (or more) tokens: each draft run is in the context, preceded
    by that suffix."""
    n_min = (run.config.speculative_config or {}).get("prompt_lookup_min", 1)
    for s in run.steps:
        if not s.draft_token_ids:
            continue
        ctx = run.prompt_token_ids + run.output_token_ids[:s.output_offset]
        d, suffix = s.draft_token_ids, ctx[len(ctx) - n_min:]
        found = any(ctx[j - n_min:j] == suffix and ctx[j:j + len(d)] == d
                    for j in range(n_min, len(ctx) - len(d) + 1))
        assert found, f"step {s.index}: ngram drafts {d} not found after the suffix {suffix}"


def check_accepted_against_baseline(run: RunTrace, baseline: RunTrace) -> None:
    """At temperature 0, every accepted draft before the first divergence of the two
    outputs is the baseline's token at that output position."""
    div = first_divergence(run.output_token_ids, baseline.output_token_ids)
    end = min(len(run.output_token_ids), len(baseline.output_token_ids)) if div is None else div
    for s in run.steps:
        for i, t in enumerate(s.draft_token_ids[:s.num_accepted_tokens]):
            pos = s.output_offset + i
            if pos < end:
                assert t == baseline.output_token_ids[pos], \
                    f"step {s.index}: accepted draft {t} at output {pos}, baseline has " \
                    f"{baseline.output_token_ids[pos]}"
