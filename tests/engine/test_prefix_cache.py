"""Prefix-cache hits on repeated prompts: the placeholder-draft crash, and the policy.

vLLM pads a new request whose prefill is one token (a prompt of 128n+1 tokens
whose first 128n come from the prefix cache) with num_speculative_tokens
placeholder drafts (-1), verifies them and counts them as drafted. Before the
fix they reached the trace and crashed decoding (OverflowError in token_texts).
"""
from __future__ import annotations

import json

import pytest

from space.records.config import RequestSpec
from space.records.schema import load
from space.records.trace import PREFILL
from tests.helpers import corpus

pytestmark = pytest.mark.engine

# Two news articles, ~1000 tokens: long enough to cut at 769.
ARTICLE = next(p.prompt for p in corpus.load() if p.id == "summarize-two-articles")
CACHED = 768  # 6 blocks of 128 (the CPU default block size; 48 of 16 on GPU)


def article_769(engine) -> RequestSpec:
    assert CACHED % engine.scheduler.block_size == 0
    return corpus.fit(engine, RequestSpec(prompt="Summary, please:\n\n" + ARTICLE,
                                          max_tokens=32), CACHED + 1)


def test_repeated_128n_plus_1_prompt_has_no_placeholder_drafts(warm_engines):
    base, spec = warm_engines
    req = article_769(spec)
    spec.reset_prefix_cache()
    first, second = spec.run(req), spec.run(req)  # crashed here before the fix
    assert (first.num_cached_tokens, second.num_cached_tokens) == (0, CACHED)
    assert second.config.prefix_cache == "warm"
    step = second.steps[0]
    assert step.kind == PREFILL and step.draft_token_ids == []
    assert step.num_placeholder_draft_tokens == spec.spec.k
    assert step.num_scheduled_tokens == 1 + spec.spec.k
    ids = [t for s in second.steps for t in s.draft_token_ids + s.emitted_token_ids]
    assert min(ids + second.output_token_ids + list(second.token_text)) >= 0
    # vLLM's own counters include the placeholders: both figures, with the reason.
    diff = second.draft_count_difference
    assert diff is not None and "placeholder" in diff.reason
    assert diff.vllm_num_draft_tokens == second.num_draft_tokens + spec.spec.k
    assert first.draft_count_difference is None
    vocab = len(spec.tokenizer)
    for run in (first, second):
        corpus.check_trace(run, vocab)
    # What the exports carry: no placeholder id, and the difference survives a reload.
    d = second.to_dict()
    assert all(t >= 0 for s in d["steps"] for t in s["draft_token_ids"])
    again = load(json.dumps(d))
    assert again.draft_count_difference == diff
    assert again.num_cached_tokens == CACHED


def test_cold_runs_read_the_whole_prompt_every_time(ngram_engine, baseline_engine):
    """The default policy: each run starts with an empty prefix cache, on both engines."""
    req = article_769(ngram_engine)
    for engine in (baseline_engine, ngram_engine):
        runs = [engine.run(req), engine.run(req)]
        for run in runs:
            assert run.config.prefix_cache == "cold"
            assert run.num_cached_tokens == 0
            assert run.steps[0].num_scheduled_tokens == len(run.prompt_token_ids)
            assert run.draft_count_difference is None
            assert not any(s.num_placeholder_draft_tokens for s in run.steps)
