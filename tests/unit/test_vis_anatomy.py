"""Step anatomy views (vis/anatomy.py, the timeline's anatomy mode) and the
checklist's prediction line from the anatomy, on hand-written traces."""
from __future__ import annotations

import pytest

from space.judge.checklist import evaluate
from space.judge.costs import gap_part
from space.judge.measure import inputs_from_runs
from space.records.anatomy import BEFORE_ANATOMY, KindCosts
from space.records.verdict import PREDICTED_MEASURED
from tests.helpers.traces import with_anatomy
from vis.anatomy import costs_table_html, step_breakdown_html
from vis.timeline import timeline_figure


def _bars(fig):
    return {t.name: t for t in fig.data if t.type == "bar"}


def test_timeline_draws_each_part_at_its_time_over_the_remainder():
    spec, base = with_anatomy(), with_anatomy(baseline=True)
    bars = _bars(timeline_figure(spec, base, anatomy=True))
    assert list(bars) == ["other", "forward", "sampling / rejection", "proposer", "scheduling",
                          "recording (SpecLens)"]
    # the grey remainder: one bar per step, the step's full length
    assert len(bars["other"].x) == len(spec.steps) + len(base.steps)
    fwd = bars["forward"]
    spec_fwd = [(cd[0], w) for y, w, cd in zip(fwd.y, fwd.x, fwd.customdata, strict=True)
                if y == "speculative"]
    assert spec_fwd == [(0, pytest.approx(15.0)), (1, pytest.approx(9.0)),
                        (2, pytest.approx(9.0)), (3, pytest.approx(6.0))]
    # each forward starts 0.2 ms (scheduling) into its step, in ms since arrival
    step1 = spec.steps[1]
    base_ms = [b for y, b, cd in zip(fwd.y, fwd.base, fwd.customdata, strict=True)
               if y == "speculative" and cd[0] == 1][0]
    assert base_ms == pytest.approx((step1.start_s - spec.arrival_s) * 1e3 + 0.2)
    proposer = bars["proposer"]
    assert set(proposer.y) == {"speculative"}  # the baseline proposes nothing


def test_timeline_toggle_back_to_one_bar_per_step():
    spec = with_anatomy()
    assert [n for n in _bars(timeline_figure(spec))] == ["prefill", "verify", "decode"]


def test_old_runs_keep_one_bar_per_step_and_say_why(spec_trace, base_trace):
    fig = timeline_figure(spec_trace, base_trace, anatomy=True)
    assert list(_bars(fig)) == ["prefill", "verify", "decode"]
    assert BEFORE_ANATOMY in fig.layout.title.text


def test_step_breakdown_beside_a_baseline_decode_step():
    spec, base = with_anatomy(), with_anatomy(baseline=True)
    html = step_breakdown_html(spec.steps[1], base)
    assert "step 1 (verify)" in html and "baseline decode step" in html
    assert '<tr data-part="forward"><td>forward</td><td>9.00</td><td>75%</td><td>6.00</td>' \
        in html
    assert '<tr data-part="proposer"><td>proposer</td><td>0.50</td>' in html
    # other: 12 ms - 10.85 ms timed
    assert '<tr data-part="other"><td>other</td><td>1.15</td>' in html


def test_step_breakdown_of_an_old_run_says_so(spec_trace):
    assert BEFORE_ANATOMY in step_breakdown_html(spec_trace.steps[2])


def test_medians_table():
    html = costs_table_html(with_anatomy(), with_anatomy(baseline=True))
    for row, value in (("decode step (baseline): target forward", "6.00 ms"),
                       ("verify step: target forward (5 tokens)", "9.00 ms"),
                       ("verify step: rejection sampler", "1.00 ms"),
                       ("verify step: proposer", "0.50 ms"),
                       ("verify forward / decode forward", "1.50x"),
                       ("draft cost ratio c (proposer / decode step)", "0.050")):
        assert f"<td>{row}</td><td>{value}</td>" in html, row


def test_medians_table_of_an_old_run(spec_trace, base_trace):
    assert BEFORE_ANATOMY in costs_table_html(spec_trace, base_trace)


# --- the checklist's prediction line from the measured parts --------------------

def _line(**kw):
    spec, base = with_anatomy(), with_anatomy(baseline=True)
    inputs = inputs_from_runs([base], [spec], speedup=kw.pop("speedup", 0.9),
                              speedup_spread=None, temperature=0.0)
    return evaluate(inputs).check(PREDICTED_MEASURED), inputs


def test_prediction_line_uses_the_measured_parts():
    line, inputs = _line()
    c = inputs.step_costs
    assert c is not None and c.verify_forward_s == pytest.approx(0.009)
    tau = inputs.mean_acceptance_length
    cost = c.verify_forward_s + c.proposer_s + c.rejection_s + c.overhead_s
    assert line.value == pytest.approx(tau * c.decode_step_s / cost)
    assert "verify forward + proposer + rejection + overhead" in line.detail
    assert "9.0 + 0.5 + 1.0" in line.detail


def test_prediction_line_names_the_part_that_took_the_difference():
    line, _ = _line(speedup=0.9)
    assert "verifying 5 tokens costs 1.5x a decode step on this CPU" in line.detail
    assert "measure it there" in line.detail


def test_runs_before_step_anatomy_keep_the_old_line(spec_trace, base_trace):
    inputs = inputs_from_runs([base_trace], [spec_trace], speedup=0.9, speedup_spread=None,
                              temperature=0.0)
    assert inputs.step_costs is not None and inputs.step_costs.verify_forward_s is None
    line = evaluate(inputs).check(PREDICTED_MEASURED)
    assert "tau x decode step / speculative step" in line.detail


@pytest.mark.parametrize("costs, method, device, expected", [
    (dict(verify_forward_s=0.0105, proposer_s=0.030, num_drafter_forwards=4), "draft_model",
     "cpu", "the drafter's 4 forward passes cost 60% of a target decode step"),
    (dict(verify_forward_s=0.0105, proposer_s=0.030), "ngram", "cpu",
     "the n-gram lookup cost 60% of a target decode step"),
    (dict(verify_forward_s=0.012, proposer_s=0.001), "ngram", "gpu",
     "verifying 5 tokens costs 1.2x a decode step on this GPU (memory-bound)"),
    (dict(verify_forward_s=0.0105, proposer_s=0.001, overhead_s=0.060), "ngram", "cpu",
     "the rejection sampler and the rest of the step (scheduling, output processing) cost "
     "21.0 ms more than in a decode step"),
])
def test_gap_part_names_the_largest_excess(costs, method, device, expected):
    base = dict(decode_step_s=0.050, decode_forward_s=0.010, verify_tokens=5,
                rejection_s=0.001, overhead_s=0.039, verify_step_s=0.060)
    c = KindCosts(**(base | costs))
    assert expected in gap_part(c, 4, method, device)


def test_the_page_shows_the_medians_and_each_steps_breakdown(spec_trace, base_trace):
    from space.records.trace import make_compare
    from space.ui import views

    cmp = make_compare([with_anatomy(baseline=True)], [with_anatomy()])
    assert 'data-anatomy="medians"' in views.render(cmp).checklist_html
    sv = views.step_view(cmp, 1)
    assert sv is not None and "Where this step" in sv.title_html
    assert '<tr data-part="forward"><td>forward</td><td>9.00</td>' in sv.title_html
    old = make_compare([base_trace], [spec_trace])  # recorded before step anatomy
    assert "data-anatomy" not in views.render(old).checklist_html
    assert BEFORE_ANATOMY in views.step_view(old, 1).title_html


def test_steps_csv_has_each_parts_ms():
    from vis.compare import steps_dataframe

    df = steps_dataframe(with_anatomy())
    row = df.iloc[1]  # a 12 ms verify step
    assert row["forward_ms"] == pytest.approx(9.0) and row["rejection_ms"] == pytest.approx(1.0)
    assert row["proposer_ms"] == pytest.approx(0.5) and row["sampling_ms"] == 0
    assert row["other_ms"] == pytest.approx(12.0 - 10.85)
    assert df.iloc[0]["sampling_ms"] == pytest.approx(1.0)


def test_steps_csv_of_an_old_run_leaves_the_parts_empty(spec_trace):
    from vis.compare import steps_dataframe

    df = steps_dataframe(spec_trace)
    assert df["forward_ms"].isna().all() and df["num_drafter_forwards"].isna().all()


def test_a_step_left_untimed_beside_timed_ones_says_why():
    from space.records.anatomy import NOT_TIMED_STEP

    run = with_anatomy()
    run.steps[1].anatomy = None  # a GPU times one step in n
    assert NOT_TIMED_STEP in step_breakdown_html(run.steps[1], with_anatomy(baseline=True))
    assert BEFORE_ANATOMY in step_breakdown_html(run.steps[1], None)
