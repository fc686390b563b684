"""The corpus (tests/fixtures/corpus.json), run for real: every prompt through the
baseline and the ngram engine, twice each in one process, every trace checked.

The engines keep their prefix cache (``prefix_cache="warm"``) and it is reset
before each prompt: the first run of a prompt reads its whole prompt, the second
reads what the first cached, as a repeat in ``compare --prefix-cache warm`` does.
CI runs the prompts marked ``ci`` at 20 tokens; ``benchmarks/corpus.py`` runs all
of them at 128.
"""
from __future__ import annotations

import pytest

from tests.helpers import corpus

pytestmark = pytest.mark.engine
CI_MAX_TOKENS = 20  # several verify steps per run; benchmarks/corpus.py runs 128


def test_corpus_is_varied():
    prompts = corpus.load()
    assert len(prompts) >= 40
    assert {"summarize", "code_write", "code_edit", "json", "multilingual", "math", "open",
            "unicode", "one_word", "near_max", "mid_word"} <= {p.category for p in prompts}
    assert 10 <= len(corpus.load(ci_only=True)) <= 14


@pytest.mark.parametrize("p", corpus.load(ci_only=True), ids=lambda p: p.id)
def test_prompt_twice_through_both_engines(warm_engines, p):
    base, spec = warm_engines
    req = corpus.request(p, spec, CI_MAX_TOKENS)
    for e in (base, spec):
        e.reset_prefix_cache()
    runs = {base: [], spec: []}
    for _ in range(2):
        for e in (base, spec):
            runs[e].append(e.run(req))
    vocab = len(spec.tokenizer)
    for b, s in zip(runs[base], runs[spec], strict=True):
        corpus.check_trace(b, vocab)
        corpus.check_trace(s, vocab, baseline=b)
    first, second = runs[spec]
    assert first.num_cached_tokens == 0
    full_blocks = (len(first.prompt_token_ids) - 1) // spec.scheduler.block_size
    assert second.num_cached_tokens == full_blocks * spec.scheduler.block_size
