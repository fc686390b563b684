"""A labelled traffic file on the real engine (space/runs/traffic.py): one group
copies from its prompt, one has nothing to copy (sampled at 0.8, the story of
the creative-writing preset, which accepts no draft). Acceptance figures and
the lines they decide are asserted; nothing derived from time is."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from space.common.cancel import Cancelled
from space.judge.measure import pooled_acceptance
from space.records.verdict import ACCEPTANCE_RATE, NOT_WORTH_IT
from space.runs.source import Engines
from space.runs.traffic import Budget, run_traffic
from space.runs.traffic_file import parse
from space.runs.traffic_groups import plan

pytestmark = pytest.mark.engine
FILE = Path(__file__).resolve().parents[1] / "fixtures" / "traffic" / "two_groups.jsonl"
MAX_TOKENS = 32


def traffic_plan():
    return plan(parse(FILE.read_bytes(), FILE.name), per_group=2)


@pytest.fixture(scope="module")
def run(pool, ngram_engine, baseline_engine):
    """The file through both engines; whether another thread could take the pool's
    lock at each prompt's start (it must: the lock is let go between prompts)."""
    free: list[bool] = []

    def progress(_frac, message):
        if message.startswith("prompt "):
            t = threading.Thread(target=lambda: free.append(_try_lock(pool)))
            t.start()
            t.join()

    result = run_traffic(ngram_engine.spec, traffic_plan(), file_name=FILE.name, repeats=1,
                         max_tokens=MAX_TOKENS, source=Engines(pool), progress=progress)
    for g in result.groups:
        print(f"\n{g.group}: {g.prompts} prompts, acceptance {g.acceptance_rate}, "
              f"length {g.mean_acceptance_length}, speedup {g.speedup:.2f}x, {g.verdict}")
    return result, free


def _try_lock(pool) -> bool:
    if pool.lock.acquire(blocking=False):
        pool.lock.release()
        return True
    return False


def test_every_prompt_is_kept_with_its_group_and_settings(run):
    result, free = run
    assert [(it.group, it.line, it.temperature) for it in result.items] == [
        ("copy", 1, 0.0), ("fresh", 3, 0.8), ("copy", 2, 0.0)]  # groups take turns
    for it in result.items:
        assert it.compare.baseline.output_token_ids and it.compare.speculative.steps
        assert len(it.compare.speculative.output_token_ids) <= MAX_TOKENS
    assert free == [True, True, True]  # other visitors' runs interleave between prompts


def test_the_conversation_is_templated_with_its_earlier_turns(run, ngram_engine):
    result, _ = run
    chat = next(it for it in result.items if it.line == 2).compare.speculative
    text = ngram_engine.tokenizer.decode(chat.prompt_token_ids)
    assert "shopping list: apples" in text and "Got it." in text
    assert text.index("Got it.") < text.index("Repeat the shopping list exactly")


def test_group_acceptance_is_vllms_pooled_counters(run):
    result, _ = run
    copy, fresh = result.groups
    assert (copy.group, copy.prompts, fresh.group, fresh.prompts) == ("copy", 2, "fresh", 1)
    for g in (copy, fresh):
        runs = [it.compare.speculative for it in result.items if it.group == g.group]
        assert (g.acceptance_rate, g.mean_acceptance_length) == pooled_acceptance(runs)
        assert g.checklist is not None
        assert g.checklist.check(ACCEPTANCE_RATE).value == g.acceptance_rate
        assert g.checklist.check("mean acceptance length").value == g.mean_acceptance_length
    assert copy.acceptance_rate is not None and copy.acceptance_rate > 0.3


def test_a_group_that_accepts_nothing_is_not_worth_it_and_not_routed(run):
    result, _ = run
    fresh = result.groups[1]
    assert fresh.acceptance_rate == 0.0  # drafts were made; none matched the sample
    line = fresh.checklist.check(ACCEPTANCE_RATE)
    assert line.passed is False and line.decisive and line.detail.startswith("No draft")
    assert fresh.verdict == NOT_WORTH_IT  # decided by acceptance, not by the clock
    assert "fresh" not in result.deployment.route_groups


def test_weights_are_the_files_responses_in_the_models_tokens(run, ngram_engine):
    result, _ = run
    assert result.weighting == "responses"
    tok = ngram_engine.tokenizer
    plan_ = traffic_plan()
    for g in result.groups:
        expected = sum(len(tok.encode(r.response, add_special_tokens=False))
                       for r in plan_.groups[g.group])
        assert g.output_tokens == expected
    assert sum(g.output_token_share for g in result.groups) == pytest.approx(1.0)


def test_cancelled_between_prompts_and_the_engines_are_free(pool, ngram_engine):
    stop = threading.Event()

    def progress(_frac, message):
        if message.startswith("prompt 2/"):
            stop.set()  # as the page's Stop does

    with pytest.raises(Cancelled):
        run_traffic(ngram_engine.spec, traffic_plan(), repeats=1, max_tokens=8, source=Engines(pool),
                    progress=progress, cancel=stop)
    assert _try_lock(pool)
    # the engine the pool holds now: the session fixture's may have been evicted
    # (least recently used) by earlier tests and rebuilt by this run
    assert not pool.speculative(ngram_engine.spec).engine.has_unfinished_requests()


@pytest.fixture(scope="module")
def batched(pool, ngram_engine, baseline_engine):
    """The same file at concurrency 2: "copy" as one batch of its two prompts, "fresh"
    (one prompt) filled with itself; whether the lock was free at each batch's start."""
    free: list[bool] = []

    def progress(_frac, message):
        if message.startswith("batch ") and ", lines " in message:  # a batch's start
            t = threading.Thread(target=lambda: free.append(_try_lock(pool)))
            t.start()
            t.join()

    result = run_traffic(ngram_engine.spec, traffic_plan(), file_name=FILE.name, repeats=1,
                         max_tokens=16, source=Engines(pool), progress=progress, concurrency=2)
    return result, free


def test_at_concurrency_2_a_groups_prompts_decode_together(batched):
    result, free = batched
    assert [(it.group, it.line) for it in result.items] == [("copy", 1), ("copy", 2),
                                                            ("fresh", 3)]  # filler not kept
    assert free == [True, True]  # the lock let go between batches
    first, second = (it.compare.speculative for it in result.items[:2])
    # one batch: both requests were in the engines at once
    assert first.arrival_s < second.finish_s and second.arrival_s < first.finish_s
    assert result.concurrency == 2 and result.deployment.concurrency == 2
    for g in result.groups:
        runs = [it.compare.speculative for it in result.items if it.group == g.group]
        assert (g.acceptance_rate, g.mean_acceptance_length) == pooled_acceptance(runs)
        assert g.checklist is not None and g.checklist.check("concurrency").value == 2
    for it in result.items:
        assert it.compare.checklist and it.compare.checklist.check("concurrency").value == 2


def test_the_schedule_from_real_acceptance_is_what_vllm_reads(batched):
    """The gaining groups' measured acceptance through a literal curve's step costs:
    the schedule derived is one vLLM's own reader takes as meant."""
    from space.engine.dynamic import check_schedule
    from space.judge.dynamic_k import Gainer, predict
    from tests.helpers.traffic import NGRAM_CURVE

    result, _ = batched
    copy = result.groups[0]
    assert copy.mean_acceptance_length is not None and copy.mean_acceptance_length > 1
    s = predict([Gainer(copy.group, copy.mean_acceptance_length, copy.output_tokens)],
                result.config, NGRAM_CURVE, measured_concurrency=2)
    assert s is not None and s.config is not None
    cfg = s.config
    if cfg.speculative_config is not None:
        check_schedule(cfg.schedule, cfg.speculative_config["num_speculative_tokens"],
                       cfg.max_batch, {c.concurrency: c.k for c in cfg.choices})


def test_until_decided_stops_and_acceptance_keeps_its_force(pool, ngram_engine, baseline_engine):
    """--until-decided on a small labelled file: "copy" (4 prompts) may stay open and
    get unseen prompts; "fresh" (sampled at 0.8) accepts no draft, so it is decided
    not-worth-it whatever the clock says and never gets more. The loop stops within
    the budget; which round it stops in depends on timing, and is not asserted."""
    path = FILE.parent / "until_decided.jsonl"
    p = plan(parse(path.read_bytes(), path.name), per_group=2)
    said: list[str] = []
    result = run_traffic(ngram_engine.spec, p, file_name=path.name, repeats=2, max_tokens=8,
                         source=Engines(pool), progress=lambda f, m: said.append(m),
                         until_decided=Budget(max_prompts=6))
    u = result.until_decided
    assert u is not None and len(result.items) <= 6
    assert u["stopped"] in ("every group is decided", "the budget of 6 prompts is spent") \
        or u["stopped"].startswith("no unseen prompt is left in")
    assert len({it.line for it in result.items}) == len(result.items)  # never twice
    copy, fresh = result.groups
    assert fresh.acceptance_rate == 0.0 and fresh.verdict == NOT_WORTH_IT
    assert "fresh" not in u["added"] and "fresh" not in u["open"]
    assert copy.acceptance_rate is not None and copy.acceptance_rate > 0.3
    assert all("still open: copy;" in m for m in said if m.startswith("measuring more"))
