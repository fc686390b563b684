"""Edge cases of the trace: cut last step, the prefill token, EOS, chunked prefill."""
from __future__ import annotations

import pytest

from space.records.config import EngineSpec
from space.records.trace import DECODE, PREFILL, VERIFY
from tests.helpers.engine import JSON_PROMPT, KV, check_against_vllm, req

pytestmark = pytest.mark.engine


def test_prefill_step_emits_the_first_token(ngram_engine):
    run = ngram_engine.run(req(max_tokens=8))
    first = run.steps[0]
    assert first.kind == PREFILL
    assert first.num_scheduled_tokens == len(run.prompt_token_ids)
    assert first.emitted_token_ids == run.output_token_ids[:1]
    assert first.draft_token_ids == []


def test_last_step_cut_by_max_tokens(self_draft_engine):
    """k=3 drafts accepted by the target itself: a verify step would emit up to
    4 tokens, max_tokens=3 leaves room for 2 after the prefill token."""
    run = self_draft_engine.run(req(JSON_PROMPT, max_tokens=3))
    check_against_vllm(run)
    assert len(run.output_token_ids) == 3
    assert run.finish_reason == "length"
    last = run.steps[-1]
    assert last.kind == VERIFY
    assert last.emitted_token_ids == run.output_token_ids[last.output_offset:]
    assert len(last.emitted_token_ids) < last.num_accepted_tokens + 1
    assert last.target_token_kind is None  # the target's own token was cut


def test_eos_ends_the_run(ngram_engine):
    run = ngram_engine.run(req("Answer with one word: is the sky blue?", max_tokens=64))
    assert run.finish_reason == "stop"
    check_against_vllm(run)
    assert run.output_token_ids[-1] == ngram_engine.tokenizer.eos_token_id or \
        len(run.output_token_ids) < 64


def test_long_prompt_prefilled_in_chunks(pool):
    engine = pool.speculative(EngineSpec(method="ngram", k=4, kv_cache_bytes=KV,
                                         max_model_len=2048, max_num_batched_tokens=64))
    prompt = "Summarize: " + " ".join(f"item {i} costs {i * 3} euros." for i in range(60))
    run = engine.run(req(prompt, max_tokens=16))
    check_against_vllm(run)
    prefill = [s for s in run.steps if s.kind == PREFILL]
    assert len(prefill) >= 3
    assert sum(s.num_scheduled_tokens for s in prefill) == len(run.prompt_token_ids)
    assert all(s.emitted_token_ids == [] for s in prefill[:-1])
    assert prefill[-1].emitted_token_ids == run.output_token_ids[:1]
    assert {s.kind for s in run.steps[len(prefill):]} <= {VERIFY, DECODE}
