"""The trace against vLLM itself, on real runs.

For every run: the per-step drafted/accepted counts equal vLLM's own
``per_request_spec_decode_metrics="detailed"`` arrays, and the emitted tokens,
concatenated, equal the request's output token ids.
"""
from __future__ import annotations

import pytest

from space.records.trace import BONUS, CORRECTION, PREFILL, VERIFY
from tests.helpers.engine import CODE_PROMPT, JSON_PROMPT, POEM_PROMPT, check_against_vllm, req

pytestmark = pytest.mark.engine


@pytest.mark.parametrize("temperature", [0.0, 0.8])
@pytest.mark.parametrize("prompt", [CODE_PROMPT, JSON_PROMPT, POEM_PROMPT])
def test_ngram_trace_matches_vllm(ngram_engine, prompt, temperature):
    run = ngram_engine.run(req(prompt, temperature=temperature, seed=1))
    check_against_vllm(run)
    assert run.steps[0].kind == PREFILL


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_draft_model_trace_matches_vllm(self_draft_engine, temperature):
    run = self_draft_engine.run(req(JSON_PROMPT, temperature=temperature, seed=2,
                                    max_tokens=40))
    check_against_vllm(run)
    kinds = {s.target_token_kind for s in run.steps if s.kind == VERIFY}
    assert run.num_accepted_tokens > 0
    if temperature == 0.0:
        # Greedy: the target drafting for itself agrees with itself, so whole
        # drafts are accepted and bonus tokens appear. (Sampled, vLLM's draft
        # model proposes its argmax, accepted with the target's probability.)
        assert BONUS in kinds
        assert run.acceptance_rate > 0.5


def test_ngram_code_edit_accepts_and_rejects(ngram_engine):
    """A code edit copies from the prompt: ngram drafts get accepted and rejected."""
    run = ngram_engine.run(req(CODE_PROMPT, max_tokens=64))
    check_against_vllm(run)
    verify = [s for s in run.steps if s.kind == VERIFY]
    assert sum(s.num_accepted_tokens for s in verify) > 0
    assert any(s.target_token_kind == CORRECTION for s in verify)


def test_trace_text_and_metrics(ngram_engine):
    run = ngram_engine.run(req(CODE_PROMPT))
    assert run.text == ngram_engine.tokenizer.decode(run.output_token_ids,
                                                     skip_special_tokens=True)
    assert run.ttft_s > 0 and run.tpot_s > 0 and run.tokens_per_s > 0
    assert run.config.method == "ngram"
    assert (run.config.tracing_settings or {})["async_scheduling"] is False
    starts = [s.start_s for s in run.steps]
    assert starts == sorted(starts)
    assert all(s.end_s > s.start_s for s in run.steps)
