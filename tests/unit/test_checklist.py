"""space/judge/checklist.py: the worth-it checklist on literal measured numbers."""
import json

import pytest

from space.judge import checklist as cl
from space.judge.checklist import ChecklistInputs, evaluate
from tests.helpers.checklists import BAD_DRAFT, GOOD_NGRAM, LOOPED


def test_fast_good_ngram_run_is_worth_it():
    result = evaluate(ChecklistInputs(**GOOD_NGRAM))
    assert result.verdict == cl.WORTH_IT
    assert result.check("measured speedup").passed is True
    assert result.check("measured speedup").decisive
    for name in ("acceptance rate", "mean acceptance length",
                 "per-token acceptance vs draft cost", "predicted speedup (ideal)",
                 "predicted speedup (measured step times)", "spare memory", "repetition"):
        assert result.check(name).passed is True, name
    # break-even for a 3 % proposer share: tau = 1 / 0.97
    assert result.check("mean acceptance length").threshold == pytest.approx(1 / 0.97)


def test_bad_draft_is_not_worth_it():
    result = evaluate(ChecklistInputs(**BAD_DRAFT))
    assert result.verdict == cl.NOT_WORTH_IT
    assert result.check("measured speedup").passed is False
    # c = 12 ms / 50 ms = 0.24; break-even tau = 4 * 0.24 + 1 = 1.96
    length = result.check("mean acceptance length")
    assert length.threshold == pytest.approx(1.96) and length.passed is False
    assert result.check("acceptance rate").threshold == pytest.approx(0.24)
    necessary = result.check("per-token acceptance vs draft cost")
    assert necessary.threshold == pytest.approx(0.24)
    assert necessary.value == pytest.approx(0.0385, abs=1e-3)  # tau 1.04 inverted at k=4
    assert necessary.passed is False
    assert result.check("predicted speedup (ideal)").value < 1


def test_looped_output_fails_repetition_and_acceptance_is_not_counted():
    result = evaluate(ChecklistInputs(**LOOPED))
    rep = result.check("repetition")
    assert rep.passed is False
    assert "loop" in rep.detail and "not the task" in rep.detail
    # high acceptance stays visible but is not a pass
    assert result.check("acceptance rate").passed is None
    assert "loop" in result.check("acceptance rate").detail
    assert result.verdict == cl.BORDERLINE


def test_loop_turns_a_fast_run_borderline():
    result = evaluate(ChecklistInputs(**{**LOOPED, "speedup_median": 1.3,
                                         "speedup_spread": (1.2, 1.4)}))
    assert result.verdict == cl.BORDERLINE
    assert result.check("repetition").decisive


def test_speedup_thresholds():
    def verdict(s, spread=None):
        return evaluate(ChecklistInputs(speedup_median=s, speedup_spread=spread)).verdict
    assert verdict(1.10) == cl.WORTH_IT
    assert verdict(1.20, (0.9, 1.4)) == cl.BORDERLINE   # a repeat was slower than baseline
    assert verdict(1.05) == cl.BORDERLINE               # a small gain
    assert verdict(1.049) == cl.NOT_WORTH_IT            # no gain beyond noise
    assert verdict(0.97, (0.84, 1.16)) == cl.NOT_WORTH_IT
    assert verdict(0.60) == cl.NOT_WORTH_IT


def test_speedup_line_says_why():
    def detail(s):
        return evaluate(ChecklistInputs(speedup_median=s)).check("measured speedup").detail
    assert "slower than baseline" in detail(0.9)
    assert "no gain beyond noise" in detail(1.02)
    assert "not a clear one" in detail(1.07)
    assert detail(1.2).endswith("faster.")


def test_unmeasured_speedup_is_borderline():
    assert evaluate(ChecklistInputs()).verdict == cl.BORDERLINE


def test_failed_necessary_condition_only_pushes_down():
    # alpha ~ 0.1 (tau 1.11 at k=4) against c = 0.3
    weak = dict(method="draft_model", k=4, mean_acceptance_length=1.11,
                draft_step_s=0.015, target_decode_step_s=0.050)
    borderline = evaluate(ChecklistInputs(**weak, speedup_median=1.07))
    assert borderline.verdict == cl.NOT_WORTH_IT
    assert borderline.check("per-token acceptance vs draft cost").decisive
    assert evaluate(ChecklistInputs(speedup_median=1.07)).verdict == cl.BORDERLINE
    unmeasured = evaluate(ChecklistInputs(**weak))
    assert unmeasured.verdict == cl.NOT_WORTH_IT
    # a speedup clearly above 1 is not overridden by the prediction
    fast = evaluate(ChecklistInputs(**weak, speedup_median=1.3, speedup_spread=(1.2, 1.4)))
    assert fast.verdict == cl.WORTH_IT


@pytest.mark.parametrize("temperature", [0.0, 0.8, 1.5, None])
@pytest.mark.parametrize("task", ["creative_writing", "code_editing", None])
def test_temperature_and_task_are_context_only(temperature, task):
    for base in (GOOD_NGRAM, BAD_DRAFT, LOOPED):
        result = evaluate(ChecklistInputs(**{**base, "temperature": temperature,
                                             "task_type": task}))
        assert result.verdict == evaluate(ChecklistInputs(**base)).verdict
        assert result.check("temperature").passed is None
        assert result.check("task type").passed is None


def test_load_lines_against_sweeps():
    result = evaluate(ChecklistInputs(concurrency=8, gain_vanishes_at_concurrency=4,
                                      context_tokens=1000, gain_vanishes_at_context=8000))
    assert result.check("concurrency").passed is False
    assert result.check("context length").passed is True
    no_sweep = evaluate(ChecklistInputs(concurrency=8))
    assert no_sweep.check("concurrency").passed is None


def test_memory_line():
    result = evaluate(ChecklistInputs(spare_memory_bytes=-2**30, draft_kv_tax_tokens=8192,
                                      context_tokens=4096))
    mem = result.check("spare memory")
    assert mem.passed is False and "8,192 tokens" in mem.detail and "2.0 requests" in mem.detail


def test_nothing_measured_is_borderline_and_has_no_passes():
    result = evaluate(ChecklistInputs())
    assert result.verdict == cl.BORDERLINE
    assert all(c.passed is None for c in result.checks)


def test_to_dict_is_json():
    d = json.loads(json.dumps(evaluate(ChecklistInputs(**GOOD_NGRAM)).to_dict()))
    assert d["verdict"] == "worth-it"
    assert {"name", "value", "threshold", "passed", "detail"} <= set(d["checks"][0])


@pytest.mark.parametrize("bad", [dict(k=0), dict(proposer_share=1.0),
                                 dict(speedup_spread=(1.2, 1.0))])
def test_meaningless_inputs_raise(bad):
    with pytest.raises(ValueError):
        evaluate(ChecklistInputs(**bad))


def test_no_accepted_draft_is_not_worth_it_whatever_the_clock_says():
    # the story prompt with nothing to copy: ngram drafted, nothing accepted, and
    # the machine's noise put the measured ratio at 1.12x
    story = dict(GOOD_NGRAM, acceptance_rate=0.0, mean_acceptance_length=1.0,
                 speedup_median=1.12, speedup_spread=(1.07, 1.16), task_type="creative_writing")
    result = evaluate(ChecklistInputs(**story))
    assert result.verdict == cl.NOT_WORTH_IT
    rate = result.check("acceptance rate")
    assert rate.decisive and rate.passed is False and "noise" in rate.detail
    speed = result.check("measured speedup")
    assert not speed.decisive and speed.passed is None and "Not counted" in speed.detail
    unmeasured_cost = evaluate(ChecklistInputs(k=4, acceptance_rate=0.0, speedup_median=1.2))
    assert unmeasured_cost.verdict == cl.NOT_WORTH_IT


def test_a_workload_that_loses_on_some_prompts_is_borderline():
    mixed = {"lighthouse_poem": cl.WORTH_IT, "letter": cl.WORTH_IT,
             "market_story": cl.NOT_WORTH_IT}
    result = evaluate(ChecklistInputs(**GOOD_NGRAM, prompt_verdicts=mixed))
    assert result.verdict == cl.BORDERLINE
    line = result.check("prompts")
    assert line.decisive and line.passed is False and line.value == 1
    assert "2 worth-it, 0 borderline, 1 not-worth-it" in line.detail
    assert "market_story" in line.detail
    agreeing = {"a": cl.WORTH_IT, "b": cl.BORDERLINE}
    result = evaluate(ChecklistInputs(**GOOD_NGRAM, prompt_verdicts=agreeing))
    assert result.verdict == cl.WORTH_IT and result.check("prompts").passed is True
    # a slow workload stays not-worth-it; one prompt gets no such line
    assert evaluate(ChecklistInputs(**BAD_DRAFT, prompt_verdicts=mixed)).verdict == \
        cl.NOT_WORTH_IT
    single = evaluate(ChecklistInputs(**GOOD_NGRAM, prompt_verdicts={"a": cl.WORTH_IT}))
    assert "prompts" not in [c.name for c in single.checks]


@pytest.mark.parametrize("machine, expected", [
    (dict(dtype="float32", device="cpu", cpu_model="AMD EPYC", cpu_bf16_flags=()),
     "Measured in float32 on a CPU without bf16 units (AMD EPYC); a GPU in bf16/FP8 has "
     "another verify cost."),
    (dict(dtype="bfloat16", device="cpu", cpu_model="Xeon", cpu_bf16_flags=("amx_tile",)),
     "Measured in bfloat16 on a CPU with bf16 units (amx_tile) (Xeon); a GPU in bf16/FP8 has "
     "another verify cost."),
    (dict(dtype="bfloat16", device="gpu", dtype_reason="the model's own dtype"),
     "Measured in bfloat16 on a GPU (the model's own dtype)."),
    ({}, "Not recorded (a trace from before the dtype was recorded)."),
])
def test_hardware_line_says_where_it_was_measured_and_never_decides(machine, expected):
    result = evaluate(ChecklistInputs(**GOOD_NGRAM, **machine))
    line = result.check(cl.HARDWARE)
    assert line.detail == expected
    assert line.passed is None and not line.decisive
    assert result.verdict == cl.WORTH_IT  # context only


def test_hardware_line_warns_of_emulated_bf16():
    """bf16 forced by --dtype on a CPU without bf16 units: the verdict describes the
    emulation (issue: 1.33x in float32 became 0.87x in bf16 on an AVX2 EPYC)."""
    line = evaluate(ChecklistInputs(**BAD_DRAFT, dtype="bfloat16", device="cpu",
                                    dtype_reason="set by --dtype", cpu_bf16_flags=())) \
        .check(cl.HARDWARE)
    assert "bf16 is emulated on this CPU" in line.detail and "--dtype" in line.detail
