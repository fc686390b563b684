"""space/runs/measure.py: the checklist's measured inputs from hand-made runs."""
from __future__ import annotations

import pytest

from space.judge import measure
from space.records.verdict import Checklist
from space.runs import machine_inputs
from tests.helpers.memory import engines
from tests.helpers.traces import compare_with_repeats, timed_baseline, timed_run
from vis import text


def test_repeat_speedups_and_spread():
    cmp = compare_with_repeats(timed_baseline(), timed_run(), [0.10, 0.12, 0.11], [0.05, 0.08, 0.11])
    assert measure.repeat_speedups(cmp) == pytest.approx([2.0, 1.5, 1.0])
    assert measure.spread(measure.repeat_speedups(cmp)) == pytest.approx((1.0, 2.0))
    assert measure.spread([1.2]) is None


def test_ngram_inputs_use_the_proposer_share():
    cmp = compare_with_repeats(timed_baseline(), timed_run(propose_s=0.0012), [0.01], [0.008])
    i = measure.compare_inputs(cmp, temperature=0.0)
    assert (i.method, i.k) == ("ngram", 4)
    assert i.acceptance_rate == pytest.approx(6 / 8)
    assert i.mean_acceptance_length == pytest.approx(1 + 6 / 2)
    # shares 1.2/12, 1.2/12, 1.2/10 over the verify and decode steps -> median 0.1
    assert i.proposer_share == pytest.approx(0.1) and i.draft_step_s is None
    assert i.target_decode_step_s == pytest.approx(0.010)
    assert i.verify_step_s == pytest.approx(0.012)
    assert i.context_tokens == 6 + 10 and i.concurrency == 1
    assert i.speedup_spread is None  # one repeat
    assert i.repetition_share == 0.0


def test_draft_model_inputs_use_time_per_draft_token():
    cmp = compare_with_repeats(timed_baseline(), timed_run("draft_model", propose_s=0.004), [0.01], [0.008])
    i = measure.compare_inputs(cmp, temperature=0.8)
    assert i.draft_step_s == pytest.approx(0.004 / 4) and i.proposer_share is None
    assert i.temperature == 0.8


def test_looped_output_is_measured():
    cmp = compare_with_repeats(timed_baseline(), timed_run(loop=True), [0.01], [0.008])
    assert measure.compare_inputs(cmp, 0.0).repetition_share > 0.5


def test_attach_checklist_stores_the_verdict():
    class Engine:  # what memory_figures reads from a TracedEngine
        def __init__(self, mem):
            self._mem = mem

        def memory(self):
            return self._mem

    base_mem, spec_mem = engines()
    cmp = compare_with_repeats(timed_baseline(), timed_run(), [0.010, 0.011], [0.006, 0.007])
    result = machine_inputs.attach_checklist(cmp, (Engine(base_mem), Engine(spec_mem)),
                                             measure.Context(task_type="t"))
    assert cmp.checklist is result
    assert result.check("spare memory").value > 0
    assert "16,384 tokens of KV cache" in result.check("spare memory").detail
    assert result.check("task type").value == "t"
    assert Checklist.from_dict(result.to_dict()) == result  # round trip through the JSON
    said = text.describe_checklist(cmp.checklist)
    assert said.splitlines()[0] == f"verdict: {result.verdict}"
    assert len(said.splitlines()) == 1 + len(result.checks)
