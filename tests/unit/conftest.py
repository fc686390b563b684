"""Hand-written traces for the pure view tests.

``make_trace()`` covers every case the views must handle, one step each:

  step 0  prefill chunk 1 (8 prompt tokens), emits nothing
  step 1  prefill chunk 2 (4 prompt tokens), emits 'He'                -> prefill
  step 2  verify k=4: drafts ' is',' 2',' years',' old', 1 accepted   -> ' is' + correction ','
  step 3  verify k=3: drafts '<b>',' &','\\n', all accepted            -> + bonus ' ok'
  step 4  verify k=1: draft 'x' rejected                              -> correction '"y'
  step 5  decode: nothing proposed                                    -> ' fine'
  step 6  verify k=3, 3 accepted but cut by max_tokens after 2        -> '.', ' end'
"""
from __future__ import annotations

import pytest

from space.trace import (
    BONUS,
    CORRECTION,
    DECODE,
    PREFILL,
    VERIFY,
    CompareRecord,
    RunTrace,
    StepRecord,
    first_divergence,
)
from tests.spans import parse_spans

TOKEN_TEXT = {
    1: "Q", 2: ":", 3: " How", 4: " old", 5: " is", 6: " <b>", 7: "Bob", 8: "</b>",
    9: "?", 40: "\n", 41: "A", 42: ":",
    10: "He", 11: " is", 12: " 2", 13: " years", 14: " old", 20: ",",
    21: "<b>", 22: " &", 23: "\n", 24: " ok", 30: "x", 31: '"y', 26: " fine",
    27: ".", 28: " end", 29: "!", 99: " a",
}
PROMPT_IDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 40, 41, 42]
OUTPUT_IDS = [10, 11, 20, 21, 22, 23, 24, 31, 26, 27, 28]
ARRIVAL_S = 100.0


def _text(ids: list[int]) -> str:
    return "".join(TOKEN_TEXT[t] for t in ids)


def make_trace() -> RunTrace:
    """The speculative run described in the module docstring (10 ms per step)."""
    t = ARRIVAL_S + 0.002  # 2 ms queueing before the first step

    def step(i, kind, sched, drafts=(), na=0, emitted=(), kind_t=None, dur_ms=10.0):
        nonlocal t
        start, t = t, t + dur_ms / 1e3
        return StepRecord(index=i, kind=kind, start_s=start, end_s=t,
                          num_scheduled_tokens=sched, draft_token_ids=list(drafts),
                          num_accepted_tokens=na, emitted_token_ids=list(emitted),
                          target_token_kind=kind_t)

    steps = [
        step(0, PREFILL, 8),
        step(1, PREFILL, 4, emitted=[10]),
        step(2, VERIFY, 5, [11, 12, 13, 14], 1, [11, 20], CORRECTION),
        step(3, VERIFY, 4, [21, 22, 23], 3, [21, 22, 23, 24], BONUS, dur_ms=12.0),
        step(4, VERIFY, 2, [30], 0, [31], CORRECTION),
        step(5, DECODE, 1, emitted=[26], dur_ms=8.0),
        step(6, VERIFY, 4, [27, 28, 29], 3, [27, 28], None),
    ]
    offset = 0
    for s in steps:
        s.output_offset, offset = offset, offset + len(s.emitted_token_ids)
    return RunTrace(
        config={"speculative_config": {"method": "ngram", "num_speculative_tokens": 4}},
        prompt=_text(PROMPT_IDS), prompt_token_ids=list(PROMPT_IDS),
        output_token_ids=list(OUTPUT_IDS), text=_text(OUTPUT_IDS),
        arrival_s=ARRIVAL_S, first_token_s=steps[1].end_s, finish_s=steps[-1].end_s,
        finish_reason="length", steps=steps, token_text=dict(TOKEN_TEXT),
    )


def make_baseline(output_ids: list[int] | None = None, step_ms: float = 9.0) -> RunTrace:
    """A plain run: one prefill step, then one decode step per further token."""
    ids = list(OUTPUT_IDS if output_ids is None else output_ids)
    steps, t = [], ARRIVAL_S + 0.001
    for i, tid in enumerate(ids):
        kind, sched = (PREFILL, len(PROMPT_IDS)) if i == 0 else (DECODE, 1)
        steps.append(StepRecord(index=i, kind=kind, start_s=t, end_s=t + step_ms / 1e3,
                                num_scheduled_tokens=sched, emitted_token_ids=[tid],
                                output_offset=i))
        t += step_ms / 1e3
    return RunTrace(
        config={}, prompt=_text(PROMPT_IDS), prompt_token_ids=list(PROMPT_IDS),
        output_token_ids=ids, text=_text(ids), arrival_s=ARRIVAL_S,
        first_token_s=steps[0].end_s, finish_s=steps[-1].end_s, finish_reason="length",
        steps=steps, token_text=dict(TOKEN_TEXT),
    )


def make_compare(baseline: RunTrace, spec: RunTrace) -> CompareRecord:
    div = first_divergence(baseline.output_token_ids, spec.output_token_ids)
    return CompareRecord(
        baseline=baseline, speculative=spec,
        speedup=baseline.tpot_s / spec.tpot_s, e2e_speedup=baseline.e2e_s / spec.e2e_s,
        outputs_identical=div is None, first_divergence=div,
    )


@pytest.fixture
def spec_trace() -> RunTrace:
    return make_trace()


@pytest.fixture
def base_trace() -> RunTrace:
    return make_baseline()


@pytest.fixture
def baseline_factory():
    """make_baseline, for tests that need a baseline with a different output."""
    return make_baseline


@pytest.fixture
def compare_factory():
    return make_compare


@pytest.fixture
def spans():
    """parse_spans: HTML -> list of token spans (attributes + text)."""
    return parse_spans
