"""space/runs/sweep.py without an engine: values, crossover, and the table from
workload results (hand-made runs)."""
from __future__ import annotations

import pytest

from space.records.config import GRID, ConfigError
from space.runs import presets, sweep, sweep_plan
from space.runs.workloads import PromptResult, WorkloadResult, summarize
from tests.helpers.traces import compare_with_repeats, timed_baseline, timed_run


def test_parse_values():
    assert sweep.parse_values("k", None) == list(range(1, 9))
    assert sweep.parse_values("concurrency", "") == [1, 2, 4, 8, 16]
    assert sweep.parse_values("k", "4, 1,2,2") == [1, 2, 4]
    assert sweep.parse_values("temperature", "1,0,0.5") == [0.0, 0.5, 1.0]
    for bad in ("0,1", "1.5", "a,b"):
        with pytest.raises(ValueError):
            sweep.parse_values("k", bad)


@pytest.mark.parametrize("variable, text, message", [
    ("concurrency", "1,100000", "concurrency values must be in 1..64, got 100000"),
    ("temperature", ",".join(f"{i / 1000}" for i in range(2001)),
     "at most 32 values per sweep, got 2001"),
    ("temperature", "0,nan", "temperature values must be in 0..2, got nan"),
    ("temperature", "0,inf", "must be in 0..2, got inf"),
    ("k", "1,17", "k values must be in 1..16, got 17"),
    ("k", "1,1e308", "k values must be in 1..16"),
    ("input_length", "128,100000", "input_length values must be in 16..32768, got 100000"),
    ("k", "x" * 100_000, "numbers separated by commas"),
])
def test_values_out_of_bounds_get_one_line(variable, text, message):
    with pytest.raises(ConfigError) as e:
        sweep.parse_values(variable, text)
    assert message in str(e.value) and "\n" not in str(e.value) and len(str(e.value)) < 200


def test_every_default_sweep_fits_the_bounds():
    for w in presets.load_workloads():
        for name, var in sweep.VARIABLES.items():
            sweep.check_plan(w, name, var.defaults, repeats=2)  # the CLI's default repeats


def test_a_sweep_over_the_token_limit_is_refused_up_front():
    w = presets.get_workload("structured_output")
    values = list(range(1, 33))
    tokens = sweep.planned_tokens(w, "concurrency", values, repeats=10, max_tokens=1024)
    assert tokens > sweep.MAX_SWEEP_TOKENS
    with pytest.raises(ConfigError, match="more than the limit of 1,000,000"):
        sweep.check_plan(w, "concurrency", values, repeats=10, max_tokens=1024)
    sweep.check_plan(w, "concurrency", [1, 2], repeats=1, max_tokens=32)


def test_a_plan_reads_either_kind_of_sweep_the_same_way_for_page_and_cli():
    p = sweep_plan.plan("structured_output", "k", "4,1,2", repeats=1, max_tokens=16)
    assert (p.variable, p.values, p.ks, p.is_grid) == ("k", [1, 2, 4], [], False)
    g = sweep_plan.plan("structured_output", GRID, "2,4 x 1,2", repeats=1, max_tokens=16)
    assert (g.ks, g.values, g.is_grid) == ([2, 4], [1, 2], True)
    assert set(sweep_plan.SWEPT) == {*sweep.VARIABLES, GRID}


@pytest.mark.parametrize("variable, values, prompt_ids, message", [
    ("nope", "1", None, "unknown sweep variable 'nope'"),
    (GRID, "1,2", None, "k x concurrency values look like"),
    (GRID, "1,2,4,8,16,3,5 x 1,2,4,8,16", None, "at most 32 points"),
    ("k", "1,2", ["no-such-prompt"], "has no prompt 'no-such-prompt': one of"),
    (GRID, "1 x 1", ["no-such-prompt"], "has no prompt 'no-such-prompt': one of"),
])
def test_a_plan_out_of_bounds_gets_one_line(variable, values, prompt_ids, message):
    with pytest.raises(ConfigError, match=message):
        sweep_plan.plan("structured_output", variable, values, repeats=1, prompt_ids=prompt_ids)


def test_make_table_from_results():
    results = []
    for s in (1.4, 0.8):
        c = compare_with_repeats(timed_baseline(), timed_run(), [0.010, 0.011], [0.010 / s, 0.011 / s])
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
        c = compare_with_repeats(timed_baseline(), timed_run(), [0.010], [0.010 / tpot_speedup])
        c.speedup = tpot_speedup
        r = WorkloadResult("w", c.speculative.config, 0.0, 48, 4, 1, [PromptResult("p#1", c)],
                           batch_runs=[{"baseline_tokens_per_s": tps[0],
                                        "speculative_tokens_per_s": tps[1]}])
        results.append(summarize(r))
    assert [r.throughput_speedup for r in results] == pytest.approx([1.8, 0.9])
    res = sweep.make_table("concurrency", [1, 8], results)
    assert res.crossover is None and res.gain_vanishes_at == 8
    assert 1 < res.throughput_crossover < 8
