"""Real vLLM engines on the CPU default model, shared across the engine tests.

Engines live in the session's pool (tests/conftest.py): built once (a few
seconds each) and reused while they fit its memory budget. The fixtures ask the
pool per module, not once per session: an engine a module holds stays open for
that module (the budget holds the few engines one module uses), and the next
module asks again, so it never gets one the budget has closed since.
Tests must not leave requests running.
"""
from __future__ import annotations

import dataclasses
import os

import pytest

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

from space.engine.pool import EnginePool  # noqa: E402
from space.records.config import EngineSpec  # noqa: E402
from tests.helpers.engine import ENGINE_SPEC, KV, MAX_MODEL_LEN  # noqa: E402


@pytest.fixture(scope="module")
def ngram_engine(pool):
    return pool.speculative(ENGINE_SPEC)


@pytest.fixture(scope="module")
def self_draft_engine(pool):
    """The target as its own draft: the only CPU draft that accepts, so the
    accepted and bonus paths are exercised (the truncated draft accepts ~0)."""
    return pool.speculative(EngineSpec(method="draft_model", draft_model="default", k=3,
                                       kv_cache_bytes=KV, max_model_len=MAX_MODEL_LEN))


@pytest.fixture(scope="module")
def baseline_engine(pool, ngram_engine):
    return pool.baseline(ngram_engine.spec)


@pytest.fixture(scope="session")
def bad_draft_spec():
    """The cpu-bad-draft model pair (a layer-truncated copy as draft), with the
    test engines' memory settings; built by the pool when first run."""
    from space.runs import presets

    pair = presets.get_model_pair("cpu-bad-draft")
    return dataclasses.replace(pair.engine_spec(), kv_cache_bytes=KV, max_model_len=MAX_MODEL_LEN)


@pytest.fixture(scope="module")
def warm_engines():
    """A baseline and an ngram engine that keep their prefix cache between runs
    (``prefix_cache="warm"``), in a pool of their own so that the session's cold
    engines stay as they are: (baseline, ngram). Built per module (the corpus and
    the prefix-cache tests) and closed when it is done: their 3 GiB come on top
    of the session pool's budget (tests/conftest.py), and held for the whole
    package they put the engine tier's peak at 12.5 GB in float32 (two builds
    more cost ~6 s)."""
    p = EnginePool(budget_bytes=3 << 30)
    spec = dataclasses.replace(ENGINE_SPEC, prefix_cache="warm")
    yield p.baseline(spec), p.speculative(spec)
    p.close_all()
