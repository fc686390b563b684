"""vis/sweep.py: the sweep figure from a results table."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from space.judge.crossover import crossing
from space.records.verdict import NOT_WORTH_IT, WORTH_IT
from space.runs import sweep
from vis.sweep import sweep_figure


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
        "w", variable, frame, crossover=crossing(values, speedups, log_axis=log_axis).at,
        gain_vanishes_at=None,
        throughput_crossover=crossing(values, throughput or speedups, log_axis=log_axis).at)


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
