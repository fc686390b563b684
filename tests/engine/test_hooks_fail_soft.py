"""Each tracing hook removed in turn: the run completes, and the page and the
terminal name the hook that is missing (issue 30). One short run per hook on
the session's ngram engine; every hook is attached again afterwards."""
from __future__ import annotations

import dataclasses

import pytest

from space.engine import anatomy, score
from space.engine.core import TracedEngine, build_engine
from space.engine.scheduler import TracingScheduler
from space.records import hooks
from space.records.anatomy import FORWARD
from space.ui.views import missing_hooks_html
from tests.helpers.engine import req
from vis.text import describe_run

SHORT = dict(max_tokens=8)
# hook -> the methods whose wrapping is made to fail (space.engine.anatomy.V1_HOOKS)
CLOCK_METHODS = {
    hooks.CLOCK_FORWARD: {"_model_forward", "compute_logits"},
    hooks.CLOCK_SAMPLING: {"_sample"},
    hooks.CLOCK_SCHEDULING: {"schedule", "update_draft_token_ids"},
    hooks.PROPOSER_TIMER: {"propose_draft_token_ids"},
}


@pytest.fixture
def engine(ngram_engine, monkeypatch):
    assert all(h.attached for h in ngram_engine.hooks), ngram_engine.hooks
    yield ngram_engine
    monkeypatch.undo()
    ngram_engine.attach_hooks(retry=True)
    assert all(h.attached for h in ngram_engine.hooks), ngram_engine.hooks


def _state(run, name):
    return next(h for h in hooks.from_config(run.config) if h.name == name)


def _names_it(run, name) -> None:
    assert f"{name}: did not attach" in describe_run(run)
    assert f"{name}: did not attach" in missing_hooks_html(run)
    others = [h for h in hooks.missing_in(run.config) if h.name != name]
    assert others == []


@pytest.mark.parametrize("name", list(CLOCK_METHODS))
def test_a_clock_hook_missing(engine, monkeypatch, name):
    real = anatomy._patch

    def refuse(owner, method, wrap):
        if method in CLOCK_METHODS[name]:
            raise AttributeError(f"no {method} on this vLLM")
        return real(owner, method, wrap)

    monkeypatch.setattr(anatomy, "_patch", refuse)
    engine.attach_hooks()
    run = engine.run(req(**SHORT))
    assert run.output_token_ids and run.steps  # the run completed, traced step by step
    state = _state(run, name)
    assert state.state == hooks.MISSING and "no " in state.why
    _names_it(run, name)
    if name == hooks.CLOCK_FORWARD:
        assert not any(s.anatomy.has(FORWARD) for s in run.steps if s.anatomy is not None)


def test_the_tracing_scheduler_stops_recording(engine, monkeypatch):
    def broken(self, scheduler_output, before):
        raise KeyError("scheduled_spec_decode_tokens")

    monkeypatch.setattr(TracingScheduler, "_record", broken)
    run = engine.run(req(**SHORT))
    assert run.output_token_ids and run.steps == [] and run.untraced
    assert "KeyError" in _state(run, hooks.TRACING_SCHEDULER).why
    _names_it(run, hooks.TRACING_SCHEDULER)
    # the run's counts are vLLM's own per-request metrics
    m = run.vllm_spec_metrics
    assert m is not None and run.num_drafts == m["num_spec_steps"]
    assert (run.num_draft_tokens, run.num_accepted_tokens) == (
        m["num_draft_tokens"], m["num_accepted_draft_tokens"])
    assert run.draft_count_difference is None
    assert run.ttft_s > 0 and run.e2e_s >= run.ttft_s


def test_the_why_rejected_hook_missing(engine, monkeypatch):
    from space.runs.runner import _explain

    monkeypatch.setattr(score, "why_rejected_state", lambda runner: hooks.missing(
        hooks.WHY_REJECTED, "Sampler has no gather_logprobs"))
    engine.attach_hooks()
    r = req(**SHORT)
    run = engine.run(r)
    _explain(engine, run, r, None)  # skipped, not raised
    assert run.explanation is None and run.steps
    _names_it(run, hooks.WHY_REJECTED)


def test_an_engine_that_refuses_the_tracing_scheduler_is_built_without_it(ngram_engine):
    args = dataclasses.replace(ngram_engine.args)
    assert args.scheduler_cls is TracingScheduler
    tried = []

    def build(a):
        tried.append(a.scheduler_cls)
        if a.scheduler_cls is TracingScheduler:
            raise TypeError("Scheduler.__init__() got an unexpected keyword argument")
        return "engine"

    engine, why = build_engine(args, build)
    assert engine == "engine" and tried == [TracingScheduler, None]
    assert why is not None and "TypeError" in why
    assert TracedEngine  # the engine module builds this way for every traced engine
