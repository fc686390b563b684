"""Requests and checks shared by the engine tests (the engines themselves are
session fixtures in tests/engine/conftest.py)."""
from __future__ import annotations

import pytest

from space.records.config import EngineSpec, MiB, RequestSpec
from space.records.trace import VERIFY, RunTrace

# Every engine the tests build, in-process, in the apps and servers they start:
# a few thousand tokens of KV (128 MiB at 2 bytes per value: ~5,800 tokens of
# the default model; float32 gets twice the bytes) and prompts under 2,048.
KV_MIB = 128
KV = KV_MIB * MiB
MAX_MODEL_LEN = 2048
ENGINE_FLAGS = ("--kv-cache-mib", str(KV_MIB), "--max-model-len", str(MAX_MODEL_LEN))
# The apps the UI tests start: their engines within 4 GiB (a baseline and two
# speculative engines in float32), not the 80 % of RAM an app takes by default.
APP_BUDGET_FLAGS = ("--memory-budget-gb", "4")
# The ngram k=4 engine of the engine tests, the CLI tests' flags and the servers'.
ENGINE_SPEC = EngineSpec(method="ngram", k=4, kv_cache_bytes=KV, max_model_len=MAX_MODEL_LEN)
CODE_PROMPT = ("Rewrite this Python function with the variable x renamed to total. "
               "Output only the code.\n\n```python\ndef add(a, b):\n    x = a + b\n"
               "    print(x)\n    return x\n```")
JSON_PROMPT = ("Extract the name, age and city from this text as JSON with keys name, age, "
               "city: 'Maria Lopez is 34 years old and lives in Porto.'")
POEM_PROMPT = "Write a short poem about the sea at night."


def req(prompt: str = CODE_PROMPT, **kw) -> RequestSpec:
    kw.setdefault("max_tokens", 48)
    return RequestSpec(prompt=prompt, **kw)


def assert_per_step_counts(run: RunTrace) -> dict:
    """Per-step drafted and accepted counts equal vLLM's detailed arrays, the slots
    no proposer filled included; returns vLLM's metrics."""
    m = run.vllm_spec_metrics
    assert m is not None, "vLLM reported no per-request spec decode metrics"
    # vLLM also counts slots no proposer filled (the trace keeps them apart).
    counted = [s for s in run.steps if s.kind == VERIFY or s.num_placeholder_draft_tokens]
    assert [s.num_draft_tokens + s.num_placeholder_draft_tokens for s in counted] \
        == m["per_step_drafted"]
    assert [s.num_accepted_tokens for s in counted] == m["per_step_accepted"]
    return m


def check_against_vllm(run: RunTrace) -> None:
    """The trace's per-step counts equal vLLM's own per-request arrays, and its
    emitted tokens, concatenated, are the output."""
    verify = [s for s in run.steps if s.kind == VERIFY]
    m = assert_per_step_counts(run)
    assert [t for s in run.steps for t in s.emitted_token_ids] == run.output_token_ids
    if verify and run.draft_count_difference is None:
        assert run.acceptance_rate == pytest.approx(m["draft_acceptance_rate"])
        assert run.mean_acceptance_length == pytest.approx(m["mean_acceptance_length"])
    for s in verify:
        assert all(t >= 0 for t in s.draft_token_ids), "placeholder draft ids (-1)"
        # Accepted drafts are exactly the first emitted tokens of the step.
        n = min(s.num_accepted_tokens, len(s.emitted_token_ids))
        assert s.emitted_token_ids[:n] == s.draft_token_ids[:n]
