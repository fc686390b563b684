"""Sweeps without an engine: values, crossover, the table and the figure.

Also the checklist's measured inputs (space/measure.py) and the workload
medians (space/workloads.py) on hand-written traces.
"""
from __future__ import annotations

import math

import pandas as pd
import pytest

from space import measure, presets, sweep
from space.checklist import NOT_WORTH_IT, WORTH_IT, Checklist
from space.trace import DECODE, PREFILL, VERIFY, CompareRecord, RunTrace, StepRecord
from space.workloads import PromptResult, WorkloadResult, pair_status, requests_for, summarize
from vis import text
from vis.sweep import sweep_figure

# --- hand-written runs ------------------------------------------------------

def base_run(n_tokens: int = 9, step_s: float = 0.010) -> RunTrace:
    """Prefill (20 ms) then one 10 ms decode step per further token."""
    steps = [StepRecord(0, PREFILL, 0.0, 0.020, 6, emitted_token_ids=[100])]
    for i in range(1, n_tokens):
        t = 0.020 + (i - 1) * step_s
        steps.append(StepRecord(i, DECODE, t, t + step_s, 1, emitted_token_ids=[100 + i],
                                output_offset=i))
    return RunTrace(config={"method": None, "k": 0}, prompt="p", prompt_token_ids=list(range(6)),
                    output_token_ids=[100 + i for i in range(n_tokens)], text="", arrival_s=0.0,
                    first_token_s=0.020, finish_s=steps[-1].end_s, finish_reason="length",
                    steps=steps)


def spec_run(method: str = "ngram", propose_s: float = 0.001, loop: bool = False) -> RunTrace:
    """k=4: prefill, 2 verify steps (4 then 2 accepted), 1 decode; 10 tokens in 54 ms.

    Verify steps last 12 ms, the decode step 10 ms; propose_s is spent in
    every step after the prefill.
    """
    out = [100 + i for i in range(10)] if not loop else [7, 8, 9, 10] * 2 + [7, 8]
    steps = [
        StepRecord(0, PREFILL, 0.0, 0.020, 6, emitted_token_ids=out[:1], propose_s=propose_s),
        StepRecord(1, VERIFY, 0.020, 0.032, 5, out[1:5], 4, out[1:6], "bonus", 1,
                   propose_s=propose_s),
        StepRecord(2, VERIFY, 0.032, 0.044, 5, out[6:8] + [1, 2], 2, out[6:9], "correction", 6,
                   propose_s=propose_s),
        StepRecord(3, DECODE, 0.044, 0.054, 1, emitted_token_ids=out[9:], output_offset=9,
                   propose_s=propose_s),
    ]
    cfg = {"method": method, "k": 4, "device": "cpu",
           "speculative_config": {"method": method, "num_speculative_tokens": 4}}
    return RunTrace(config=cfg, prompt="p", prompt_token_ids=list(range(6)), output_token_ids=out,
                    text="", arrival_s=0.0, first_token_s=0.020, finish_s=0.054,
                    finish_reason="length", steps=steps)


def compare_of(base: RunTrace, spec: RunTrace, base_tpots, spec_tpots) -> CompareRecord:
    return CompareRecord(
        baseline=base, speculative=spec,
        baseline_runs=[{"tpot_s": t, "tokens_per_s": 1 / t, "e2e_s": 8 * t} for t in base_tpots],
        speculative_runs=[{"tpot_s": t, "tokens_per_s": 1 / t, "e2e_s": 8 * t}
                          for t in spec_tpots],
        speedup=base.tpot_s / spec.tpot_s, e2e_speedup=base.e2e_s / spec.e2e_s,
        outputs_identical=True)


# --- crossover and values ---------------------------------------------------

def test_crossover_interpolates_the_first_crossing():
    assert sweep.crossover([1, 2, 4, 8], [1.6, 1.3, 0.9, 0.7]) == pytest.approx(3.5)
    # on a log axis, halfway between 1 and 4 is 2
    assert sweep.crossover([1, 4], [1.2, 0.8], log_axis=True) == pytest.approx(2.0)
    assert sweep.crossover([1, 2, 3], [0.8, 1.0, 1.3]) == 2.0       # exactly 1 at a point
    assert sweep.crossover([3, 1, 2], [0.7, 1.5, 1.1]) == pytest.approx(2.25)  # unsorted input
    assert sweep.crossover([1, 2], [1.4, 1.2]) is None
    assert sweep.crossover([1, 2, 3], [1.2, math.nan, 0.8]) == pytest.approx(2.0)


def test_gain_vanishes_at_the_first_point_at_or_below_one():
    assert sweep.gain_vanishes_at([1, 2, 4, 8, 16], [1.4, 1.2, 1.0, 0.9, 0.8]) == 4
    assert sweep.gain_vanishes_at([1, 2], [1.4, 1.2]) is None


def test_parse_values():
    assert sweep.parse_values("k", None) == list(range(1, 9))
    assert sweep.parse_values("concurrency", "") == [1, 2, 4, 8, 16]
    assert sweep.parse_values("k", "4, 1,2,2") == [1, 2, 4]
    assert sweep.parse_values("temperature", "1,0,0.5") == [0.0, 0.5, 1.0]
    for bad in ("0,1", "1.5", "a,b"):
        with pytest.raises(ValueError):
            sweep.parse_values("k", bad)


# --- the figure ---------------------------------------------------------------

def table(variable="k", values=(1, 2, 4, 8), speedups=(1.5, 1.2, 0.9, 0.6),
          throughput=None) -> pd.DataFrame:
    throughput = throughput or speedups
    rows = [{"variable": variable, "value": v, "speedup": s, "speedup_low": s - 0.1,
             "speedup_high": s + 0.1, "throughput_speedup": t, "acceptance_rate": 0.5,
             "mean_acceptance_length": 2.0, "verdict": WORTH_IT if s > 1.1 else NOT_WORTH_IT}
            for v, s, t in zip(values, speedups, throughput, strict=False)]
    return pd.DataFrame(rows, columns=sweep.COLUMNS)


def result(variable="k", values=(1, 2, 4, 8), speedups=(1.5, 1.2, 0.9, 0.6),
           throughput=None, frame: pd.DataFrame | None = None) -> sweep.SweepResult:
    """A sweep's result around ``table``, its crossovers computed as make_table does."""
    frame = table(variable, values, speedups, throughput) if frame is None else frame
    log_axis = sweep.VARIABLES[variable].log_axis
    return sweep.SweepResult(
        "w", variable, frame, crossover=sweep.crossover(values, speedups, log_axis),
        gain_vanishes_at=None,
        throughput_crossover=sweep.crossover(values, throughput or speedups, log_axis))


def test_figure_has_speedup_acceptance_baseline_and_crossover():
    fig = sweep_figure(result())
    names = [t.name for t in fig.data]
    assert names == ["speedup (TPOT)", "crossover", "acceptance rate"]
    speed = fig.data[0]
    assert list(speed.x) == [1, 2, 4, 8] and list(speed.y) == [1.5, 1.2, 0.9, 0.6]
    assert list(speed.error_y.array) == pytest.approx([0.1] * 4)
    cross = fig.data[1]
    assert cross.x[0] == pytest.approx(2 + 2 * (0.2 / 0.3)) and cross.y[0] == 1.0
    lines = [s for s in fig.layout.shapes]
    assert any(s.y0 == 1.0 and s.y1 == 1.0 and s.line.dash == "dash" for s in lines), \
        "no baseline (speedup = 1) line"
    assert any(s.x0 == pytest.approx(cross.x[0]) and s.line.dash == "dot" for s in lines)
    texts = [a.text for a in fig.layout.annotations]
    assert "baseline (1x)" in texts and any(t.startswith("crossover") for t in texts)
    assert fig.layout.yaxis2.tickformat == ".0%"
    assert fig.layout.xaxis2.title.text.startswith("k")


def test_figure_without_crossover_and_log_axis():
    fig = sweep_figure(result("temperature", (0.0, 0.5, 1.0), (1.5, 1.3, 1.2)))
    assert [t.name for t in fig.data] == ["speedup (TPOT)", "acceptance rate"]
    texts = [a.text for a in fig.layout.annotations]
    assert not any(t.startswith("crossover") for t in texts)
    assert "no crossover: TPOT speedup stays above 1 over this range" in texts


def test_concurrency_figure_adds_throughput_and_its_crossover():
    fig = sweep_figure(result("concurrency", (1, 2, 4, 8), (1.5, 1.4, 1.3, 1.2),
                              throughput=(1.8, 1.1, 1.05, 0.9)))
    names = [t.name for t in fig.data]
    assert names == ["speedup (TPOT)", "throughput speedup (batch)", "throughput crossover",
                     "acceptance rate"]
    assert fig.layout.xaxis2.type == "log" and fig.layout.showlegend
    # between 4 (1.05) and 8 (0.9), a third of the way in log2: 4 * 2^(1/3)
    assert fig.data[2].x[0] == pytest.approx(4 * 2 ** (1 / 3))
    label = next(a for a in fig.layout.annotations if a.text.startswith("throughput crossover"))
    assert label.x == pytest.approx(math.log10(4 * 2 ** (1 / 3)))  # log axes place by log10


def test_figure_without_spread_has_no_error_bars():
    t = table()
    t["speedup_low"] = t["speedup_high"] = math.nan
    assert sweep_figure(result(frame=t)).data[0].error_y.array is None


# --- measured checklist inputs ---------------------------------------------

def test_repeat_speedups_and_spread():
    cmp = compare_of(base_run(), spec_run(), [0.10, 0.12, 0.11], [0.05, 0.08, 0.11])
    assert measure.repeat_speedups(cmp) == pytest.approx([2.0, 1.5, 1.0])
    assert measure.spread(measure.repeat_speedups(cmp)) == pytest.approx((1.0, 2.0))
    assert measure.spread([1.2]) is None


def test_ngram_inputs_use_the_proposer_share():
    cmp = compare_of(base_run(), spec_run(propose_s=0.0012), [0.01], [0.008])
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
    cmp = compare_of(base_run(), spec_run("draft_model", propose_s=0.004), [0.01], [0.008])
    i = measure.compare_inputs(cmp, temperature=0.8)
    assert i.draft_step_s == pytest.approx(0.004 / 4) and i.proposer_share is None
    assert i.temperature == 0.8


def test_looped_output_is_measured():
    cmp = compare_of(base_run(), spec_run(loop=True), [0.01], [0.008])
    assert measure.compare_inputs(cmp, 0.0).repetition_share > 0.5


def test_attach_checklist_stores_the_verdict():
    class Engine:  # what memory_figures reads from a TracedEngine
        def __init__(self, mem):
            self._mem = mem

        def memory(self):
            return self._mem

    from tests.unit.handmade import engines
    base_mem, spec_mem = engines()
    cmp = compare_of(base_run(), spec_run(), [0.010, 0.011], [0.006, 0.007])
    from space.config import RequestSpec
    result = measure.attach_checklist(cmp, (Engine(base_mem), Engine(spec_mem)),
                                      RequestSpec(prompt="p"), measure.Context(task_type="t"))
    assert cmp.checklist is result
    assert result.check("spare memory").value > 0
    assert "16,384 tokens of KV cache" in result.check("spare memory").detail
    assert result.check("task type").value == "t"
    assert Checklist.from_dict(result.to_dict()) == result  # round trip through the JSON
    said = text.describe_checklist(cmp.checklist)
    assert said.splitlines()[0] == f"verdict: {result.verdict}"
    assert len(said.splitlines()) == 1 + len(result.checks)


# --- workloads -----------------------------------------------------------------

def test_requests_cycle_prompts_for_concurrency():
    w = presets.get_workload("concurrency")
    reqs = requests_for(w, concurrency=4, max_tokens=24)
    ids = [i for i, _ in reqs]
    first = w.prompts[0].id
    assert ids[0] == f"{first}#1" and ids[3] == f"{first}#4" and len(ids) == 4
    assert [r.seed for _, r in reqs] == [0, 1, 2, 3]
    assert all(r.max_tokens == 24 and r.temperature == w.temperature for _, r in reqs)
    single = requests_for(presets.get_workload("code_editing"), temperature=0.5)
    assert [i for i, _ in single] == [p.id for p in presets.get_workload("code_editing").prompts]
    assert all(r.temperature == 0.5 for _, r in single)


def test_summarize_takes_medians_over_prompts():
    cmps = [compare_of(base_run(), spec_run(), [0.010], [t]) for t in (0.005, 0.010, 0.020)]
    for c, s in zip(cmps, (2.0, 1.0, 0.5), strict=False):
        c.speedup = s
    r = WorkloadResult("w", cmps[0].speculative.config, 0.0, 48, 1, 1,
                       [PromptResult(f"p{i}", c) for i, c in enumerate(cmps)])
    summarize(r)
    assert r.speedup == 1.0 and r.speedup_spread == (0.5, 2.0)
    assert r.speculative_tpot_s == pytest.approx(0.010)
    assert r.throughput_speedup == pytest.approx(1.0)
    assert r.acceptance_rate == pytest.approx(0.75)  # pooled: 18 of 24 drafts
    assert len(r.rows()) == 3 and r.rows()[0]["prompt"] == "p0"
    back = WorkloadResult.from_dict(r.to_dict())
    assert back.speedup == r.speedup and back.items[1].compare.speedup == 1.0


def test_make_table_from_results():
    results = []
    for s in (1.4, 0.8):
        c = compare_of(base_run(), spec_run(), [0.010, 0.011], [0.010 / s, 0.011 / s])
        c.speedup = s
        r = WorkloadResult("w", c.speculative.config, 0.0, 48, 1, 2, [PromptResult("p", c)])
        results.append(summarize(r))
    res = sweep.make_table("k", [2, 6], results)
    assert list(res.table.columns) == sweep.COLUMNS
    assert res.crossover == pytest.approx(2 + 4 * (0.4 / 0.6))
    assert res.throughput_crossover == pytest.approx(res.crossover)  # tokens/s = 1 / TPOT here
    assert res.gain_vanishes_at == 6
    assert res.to_csv().splitlines()[0] == ",".join(sweep.COLUMNS)


def test_concurrency_gain_vanishes_where_throughput_falls():
    results = []
    for tpot_speedup, tps in ((1.5, (10.0, 18.0)), (1.4, (40.0, 36.0))):
        c = compare_of(base_run(), spec_run(), [0.010], [0.010 / tpot_speedup])
        c.speedup = tpot_speedup
        r = WorkloadResult("w", c.speculative.config, 0.0, 48, 4, 1, [PromptResult("p#1", c)],
                           batch_runs=[{"baseline_tokens_per_s": tps[0],
                                        "speculative_tokens_per_s": tps[1]}])
        results.append(summarize(r))
    assert [r.throughput_speedup for r in results] == pytest.approx([1.8, 0.9])
    res = sweep.make_table("concurrency", [1, 8], results)
    assert res.crossover is None and res.gain_vanishes_at == 8
    assert 1 < res.throughput_crossover < 8


def test_pair_status_on_cpu():
    pairs = {p.id: p for p in presets.load_model_pairs()}
    assert pair_status(pairs["cpu-ngram"], on_gpu=False).available
    suffix = pair_status(pairs["cpu-suffix"], on_gpu=False)
    assert not suffix.available and "arctic-inference" in suffix.reason
    for p in pairs.values():
        if p.needs_gpu:
            st = pair_status(p, on_gpu=False)
            assert not st.available and "GPU" in st.reason
