"""Engines are rebuilt when method, draft or k change, and their memory returns."""
from __future__ import annotations

import gc

import psutil
import pytest

from space.engine.hardware import resolve_spec
from space.engine.pool import EnginePool, estimate_bytes
from space.records.config import EngineSpec, MiB
from tests.helpers.engine import KV, req

pytestmark = pytest.mark.engine


def rss() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


def test_replacing_engines_frees_memory():
    """Cycle through speculative configurations with a budget that holds one
    engine: each build must close and free the previous one. (The budget is set
    before each build from what the pool counts, as the estimate before a first
    build and what a build measured differ by dtype and machine.) Every engine holds
    its weights (~270 MB in bf16, twice in float32) plus its KV cache; if neither
    rebuild freed its predecessor, RSS would grow by more than 1 GB. (Two
    rebuilds prove it as four did: each is the same close-then-build.)"""
    # resolved as the pool keys them (the dtype this machine runs)
    specs = [resolve_spec(EngineSpec(method="ngram", k=k, kv_cache_bytes=KV, max_model_len=1024))
             for k in (2, 3)]
    one = EnginePool(budget_bytes=int(estimate_bytes(specs[0]) * 1.5))
    try:
        first = one.speculative(specs[0])
        first.run(req(max_tokens=8))
        start = rss()
        for spec in specs[1:] + specs[:1]:
            # room for this engine and half of the one held: that one must close
            one.set_budget(one.need_bytes(spec) + one.held_bytes() // 2)
            engine = one.speculative(spec)
            assert one.cached_specs() == [spec]
            run = engine.run(req(max_tokens=8))
            assert run.config.k == spec.k
        growth = rss() - start
        assert growth < 400 * MiB, f"RSS grew {growth / MiB:.0f} MiB over 2 rebuilds"
    finally:
        one.close_all()
    assert one.cached_specs() == []


def test_cache_keeps_recent_engines_and_closing_one_leaves_the_other_working():
    """Recently used engines are reused, least recently used first out. And vLLM's
    shutdown destroys process-wide parallel state; SpecLens keeps it while another
    engine lives (space/engine/compat.keep_parallel_state): the engine left runs."""
    pool = EnginePool(budget_bytes=64 << 30)  # room for both: the order is the test
    a = resolve_spec(EngineSpec(method="ngram", k=2, kv_cache_bytes=KV, max_model_len=1024))
    b = resolve_spec(EngineSpec(method="ngram", k=3, kv_cache_bytes=KV, max_model_len=1024))
    try:
        ea = pool.speculative(a)
        eb = pool.speculative(b)
        assert pool.speculative(a) is ea  # cached: no rebuild
        assert pool.cached_specs() == [b, a]  # least recently used first
        runner, model, scheduler = ea.runner, ea.runner.model, ea.scheduler
        assert "_model_forward" in vars(runner) and "compute_logits" in vars(model)
        ea.close()
        # the step clock's wrappers are gone: the runner has vLLM's own methods back
        assert not {"_model_forward", "_sample", "propose_draft_token_ids"} & set(vars(runner))
        assert "compute_logits" not in vars(model) and "schedule" not in vars(scheduler)
        run = eb.run(req(max_tokens=8))
        assert len(run.output_token_ids) > 0
    finally:
        pool.close_all()
