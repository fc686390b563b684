"""Stopping a run between engine steps, and the test-only fault (tests/helpers/faults.py), on the real engine:
the request is aborted, the pool lock is released, and the next run works."""
from __future__ import annotations

import threading

import pytest

from space.common.cancel import Cancelled
from space.engine import core
from space.runs import runner
from tests.helpers.engine import POEM_PROMPT, req
from tests.helpers.faults import FAULT_MARKER, InjectedFault, faulty_guard

pytestmark = pytest.mark.engine


def test_a_cancelled_run_stops_at_the_next_step_and_the_next_run_works(ngram_engine):
    stop, seen = threading.Event(), []

    def on_step(_rid, step, _texts):
        seen.append(step.index)
        if len(seen) == 3:
            stop.set()  # as the page does when its client leaves

    with pytest.raises(Cancelled):
        ngram_engine.run(req(POEM_PROMPT, max_tokens=200), on_step, stop)
    assert len(seen) == 3  # not one step more
    assert not ngram_engine.engine.has_unfinished_requests()  # aborted
    after = ngram_engine.run(req(POEM_PROMPT, max_tokens=8))
    assert len(after.output_token_ids) == 8


def test_compare_releases_the_pool_when_cancelled(pool, ngram_engine):
    stop = threading.Event()

    def progress(_frac, message):
        if message.startswith("measured run 2"):
            stop.set()

    with pytest.raises(Cancelled):
        runner.compare(ngram_engine.spec, req(max_tokens=8), repeats=3, pool=pool,
                       progress=progress, cancel=stop)
    assert pool.lock.acquire(blocking=False)  # free: the next user can start
    pool.lock.release()
    record = runner.compare(ngram_engine.spec, req(max_tokens=8), repeats=1, pool=pool,
                            warmup=False)
    assert len(record.speculative.output_token_ids) == 8


def test_fault_hook_raises_inside_the_step_loop(ngram_engine, monkeypatch):
    monkeypatch.setattr(core, "StepGuard", faulty_guard(4))
    plain = ngram_engine.run(req(max_tokens=8))  # no marker in the prompt: no fault
    assert len(plain.output_token_ids) == 8
    steps = []
    with pytest.raises(InjectedFault, match="step 4"):
        ngram_engine.run(req(f"{POEM_PROMPT} {FAULT_MARKER}", max_tokens=64),
                         lambda _r, s, _t: steps.append(s))
    assert len(steps) == 4
    assert not ngram_engine.engine.has_unfinished_requests()
    monkeypatch.undo()
    assert len(ngram_engine.run(req(max_tokens=8)).output_token_ids) == 8
