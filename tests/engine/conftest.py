"""Real vLLM engines on the CPU default model, shared across the engine tests.

Engines are built once per session (a few seconds each) and reused; tests must
not leave requests running.
"""
from __future__ import annotations

import dataclasses
import os

import pytest

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

from space.engine import EnginePool  # noqa: E402
from space.records.config import EngineSpec  # noqa: E402
from tests.helpers.engine import KV  # noqa: E402


@pytest.fixture(scope="session")
def pool():
    p = EnginePool(max_speculative=3)
    yield p
    p.close_all()


@pytest.fixture(scope="session")
def ngram_engine(pool):
    return pool.speculative(EngineSpec(method="ngram", k=4, kv_cache_bytes=KV, max_model_len=2048))


@pytest.fixture(scope="session")
def self_draft_engine(pool):
    """The target as its own draft: the only CPU draft that accepts, so the
    accepted and bonus paths are exercised (the truncated draft accepts ~0)."""
    return pool.speculative(EngineSpec(method="draft_model", draft_model="default", k=3,
                                       kv_cache_bytes=KV, max_model_len=2048))


@pytest.fixture(scope="session")
def baseline_engine(pool, ngram_engine):
    return pool.baseline(ngram_engine.spec)


@pytest.fixture(scope="session")
def bad_draft_spec():
    """The cpu-bad-draft model pair (a layer-truncated copy as draft), with the
    test engines' memory settings; built by the pool when first run."""
    from space.runs import presets

    pair = presets.get_model_pair("cpu-bad-draft")
    return dataclasses.replace(pair.engine_spec(), kv_cache_bytes=KV, max_model_len=2048)


@pytest.fixture(scope="session")
def warm_engines():
    """A baseline and an ngram engine that keep their prefix cache between runs
    (``prefix_cache="warm"``), in a pool of their own so that the session's cold
    engines stay as they are: (baseline, ngram)."""
    p = EnginePool(max_speculative=1)
    spec = EngineSpec(method="ngram", k=4, kv_cache_bytes=KV, max_model_len=2048,
                      prefix_cache="warm")
    yield p.baseline(spec), p.speculative(spec)
    p.close_all()
