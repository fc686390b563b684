"""A visitor's prompt is tokenized before the engine lock is taken (issue 9 §3):
a long prompt never holds up the run in progress, and the trace is unchanged."""
from __future__ import annotations

import pytest

from space.engine import prompts
from space.records.config import RequestSpec
from space.runs import runner

pytestmark = pytest.mark.engine


def test_prompts_are_tokenized_outside_the_engine_lock(pool, ngram_engine, baseline_engine,
                                                      monkeypatch):
    """Timing-free: each tokenization records whether this thread holds the lock."""
    held: list[bool] = []
    encode = prompts.encode

    def spy(tokenizer, req, max_model_len):
        held.append(pool.lock._is_owned())  # RLock: owned by the calling thread
        return encode(tokenizer, req, max_model_len)

    monkeypatch.setattr(prompts, "encode", spy)
    spec, req = ngram_engine.spec, RequestSpec("Name three colours.", max_tokens=8)
    record = runner.compare(spec, req, repeats=1, pool=pool, warmup=True)
    one = runner.trace_one(spec, req, pool=pool)
    assert held and not any(held), held  # before: every engine run encoded under the lock
    # the ids the engines ran are those the engine's own tokenizer gives
    want = encode(ngram_engine.tokenizer, req, spec.max_model_len)
    assert want == encode(baseline_engine.tokenizer, req, spec.max_model_len)
    for run in (record.baseline, record.speculative, one):
        assert run.prompt_token_ids == want
