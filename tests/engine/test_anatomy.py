"""Step anatomy on real engines: the timed parts tell the truth.

The parts never overlap and lie inside their step (so the remainder is never
negative), the right parts appear on the right steps, draft models count their
forward passes, and a forward made slow on purpose shows up in the forward part
and nowhere else. Only that last test reads a duration, and only the one it caused.
"""
from __future__ import annotations

import statistics
import time

import pytest

from space.records.anatomy import (
    FORWARD,
    OTHER,
    PROPOSER,
    REJECTION,
    SAMPLING,
    SCHEDULING,
    SHOWN_PARTS,
    breakdown,
    problems,
)
from space.records.trace import DECODE, VERIFY, RunTrace
from tests.helpers.engine import CODE_PROMPT, JSON_PROMPT, req

pytestmark = pytest.mark.engine


def assert_anatomy_holds(run: RunTrace) -> None:
    for s in run.steps:
        a = s.anatomy
        assert a is not None, f"step {s.index} has no anatomy"
        assert problems(a, s.start_s, s.end_s) == [], f"step {s.index}"
        last = s.start_s
        for i in a.intervals:  # the same truth, spelled out
            assert last <= i.start_s <= i.end_s <= s.end_s
            last = i.end_s
        assert breakdown(a, s.duration_s)[OTHER] >= 0
        assert a.has(FORWARD) and a.has(SCHEDULING)
    timing = (run.config.tracing_settings or {})["step_anatomy"]
    assert timing["untimed"] == [] and "perf_counter" in timing["clock"]  # every hook found


def test_ngram_verify_steps_show_rejection_and_proposer(ngram_engine):
    run = ngram_engine.run(req(CODE_PROMPT, max_tokens=24))
    assert_anatomy_holds(run)
    verify = [s for s in run.steps if s.kind == VERIFY]
    assert verify
    for s in verify:
        assert s.anatomy.has(REJECTION) and not s.anatomy.has(SAMPLING)
        assert s.anatomy.has(PROPOSER)
        assert s.propose_s == s.anatomy.seconds(PROPOSER)
        assert s.anatomy.num_drafter_forwards == 0  # a lookup, no model
    for s in run.steps:
        if s.kind != VERIFY:
            assert not s.anatomy.has(REJECTION) and s.anatomy.has(SAMPLING)


def test_baseline_steps_show_no_rejection_and_no_proposer(baseline_engine):
    run = baseline_engine.run(req(CODE_PROMPT, max_tokens=8))
    assert_anatomy_holds(run)
    for s in run.steps:
        assert s.anatomy.has(SAMPLING)
        assert not (s.anatomy.has(REJECTION) or s.anatomy.has(PROPOSER))
        assert s.anatomy.num_drafter_forwards == 0


def test_draft_model_steps_count_k_drafter_forwards(self_draft_engine):
    k = self_draft_engine.spec.k
    run = self_draft_engine.run(req(JSON_PROMPT, max_tokens=12))
    assert_anatomy_holds(run)
    drafting = [s for s in run.steps if s.anatomy.has(PROPOSER)]
    assert drafting and any(s.kind == VERIFY for s in drafting)
    # one forward over the step's new tokens, then k - 1 one-token forwards
    assert [s.anatomy.num_drafter_forwards for s in drafting] == [k] * len(drafting)
    for s in run.steps:
        if s.kind == VERIFY:
            assert s.anatomy.has(REJECTION)


def _decode_medians(run: RunTrace) -> dict[str, float]:
    decode = [s for s in run.steps if s.kind == DECODE]
    assert len(decode) >= 4
    parts = [breakdown(s.anatomy, s.duration_s) for s in decode]
    return {p: statistics.median(b[p] for b in parts) for p in SHOWN_PARTS}


def test_a_slow_forward_grows_the_forward_part_only(baseline_engine, monkeypatch):
    """The one test that reads durations: it makes the target's forward pass
    ``sleep_s`` slower and sees the forward part take it and nothing else grow.

    No upper bound on the forward's growth: on this shared 2-core machine a CPU-heavy
    process elsewhere can slow every forward pass many-fold (torch's OpenMP threads
    descheduled), which says nothing about where the sleep was counted."""
    sleep_s = 0.05
    model = baseline_engine.runner.model
    request = req(CODE_PROMPT, max_tokens=8, ignore_eos=True)
    before = _decode_medians(baseline_engine.run(request))
    fast_forward = model.forward

    def slow_forward(*args, **kwargs):
        time.sleep(sleep_s)
        return fast_forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", slow_forward)
    try:
        slow = baseline_engine.run(request)
    finally:
        monkeypatch.undo()
    assert_anatomy_holds(slow)
    # the sleep runs inside the forward part of every step, so each holds all of it
    assert all(s.anatomy.seconds(FORWARD) >= sleep_s for s in slow.steps)
    after = _decode_medians(slow)
    grew = {p: after[p] - before[p] for p in SHOWN_PARTS}
    assert grew[FORWARD] >= 0.8 * sleep_s, grew
    for part in SHOWN_PARTS:
        if part != FORWARD:
            assert grew[part] < 0.5 * sleep_s, (part, grew)
