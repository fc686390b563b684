"""vis/compare.py: the compare table and summary, and the per-step table behind CSV export."""
from __future__ import annotations

import io
import json
import math

import pandas as pd
import pytest

from space.records.trace import CompareRecord, make_compare
from tests.helpers.traces import views_baseline
from vis.compare import STEP_COLUMNS, compare_html, compare_table, steps_dataframe


def test_compare_table_rows_columns_and_ratio(spec_trace, base_trace):
    df = compare_table(make_compare([base_trace], [spec_trace]))
    assert list(df.index) == ["TTFT ms", "TPOT ms", "tokens/s", "end-to-end ms", "output tokens"]
    assert list(df.columns) == ["baseline", "speculative", "ratio"]
    assert df.loc["TPOT ms", "baseline"] == pytest.approx(9.0)
    assert df.loc["TPOT ms", "speculative"] == pytest.approx(5.0)  # (72 - 22) / 10 tokens
    assert df.loc["end-to-end ms", "ratio"] == pytest.approx(0.72)
    assert df.loc["output tokens", "speculative"] == 11


def test_compare_table_zero_baseline_gives_nan(spec_trace, base_trace):
    base_trace.finish_s = base_trace.arrival_s
    base_trace.recompute()
    df = compare_table(CompareRecord(baseline=base_trace, speculative=spec_trace))
    assert math.isnan(df.loc["end-to-end ms", "ratio"])


def test_compare_html_identical(spec_trace, base_trace):
    html = compare_html(make_compare([base_trace], [spec_trace]))
    assert "1.80x" in html and "1.39x" in html
    assert "identical" in html and "data-diverge" not in html


def test_compare_html_marks_first_divergence_in_both(spec_trace, spans):
    base = views_baseline([10, 11, 20, 21, 99])  # differs at output token 4
    html = compare_html(make_compare([base], [spec_trace]))
    assert "differ" in html and "output token 4" in html
    marked = [s for s in spans(html) if s.get("data-diverge") == "1"]
    assert [(m["data-out"], m["text"]) for m in marked] == [("4", " a"), ("4", " &")]
    assert "slower" in html  # the shorter baseline finished first


def test_compare_html_when_one_output_is_a_prefix(spec_trace):
    html = compare_html(make_compare([views_baseline([10, 11, 20])], [spec_trace]))
    assert "output ended" in html and "tok-end" in html
    assert html.count('data-diverge="1"') == 2


def test_steps_dataframe_one_row_per_step(spec_trace):
    df = steps_dataframe(spec_trace)
    assert list(df.columns) == STEP_COLUMNS
    assert len(df) == len(spec_trace.steps)
    row = df.iloc[2]
    assert row["kind"] == "verify" and row["target_token_kind"] == "correction"
    assert json.loads(row["drafts"]) == [" is", " 2", " years", " old"]
    assert json.loads(row["emitted"]) == [" is", ","]
    assert row["start_ms"] == pytest.approx(22.0) and row["duration_ms"] == pytest.approx(10.0)
    assert json.loads(df.iloc[0]["emitted"]) == []  # first prefill chunk emits nothing
    assert (df["num_placeholder_draft_tokens"] == 0).all() and df["placeholder_cause"].isna().all()


def test_steps_csv_states_placeholder_drafts(spec_trace):
    """A step vLLM padded (a cached one-token prefill) says so in its row."""
    step = spec_trace.steps[2]
    step.num_placeholder_draft_tokens, step.placeholder_cause = 4, "padding"
    row = steps_dataframe(spec_trace).iloc[2]
    assert row["num_placeholder_draft_tokens"] == 4 and row["placeholder_cause"] == "padding"
    assert json.loads(row["drafts"]) == [" is", " 2", " years", " old"]  # only the real ones


def test_steps_csv_round_trips_whitespace_and_markup(spec_trace):
    csv = steps_dataframe(spec_trace).to_csv(index=False)
    back = pd.read_csv(io.StringIO(csv))
    assert json.loads(back.iloc[3]["emitted"]) == ["<b>", " &", "\n", " ok"]
    assert len(back) == 7


def test_steps_dataframe_empty_run_keeps_columns(spec_trace):
    spec_trace.steps = []
    assert list(steps_dataframe(spec_trace).columns) == STEP_COLUMNS
