"""The anatomy's medians in figures and words (space/judge/costs.py), and where the
tipping page and the deploy output show them (vis/tipping.py, the curve cache, the
CLI's printouts). Hand-made runs, no engine."""
from __future__ import annotations

import json

import pytest

from space.judge import costs, curves
from space.judge.curves import StepCosts, TippingCurve
from space.records.anatomy import KindCosts, kind_costs
from space.records.trace import VERIFY
from space.runs.tipping import describe
from tests.helpers.traces import step_anatomy, with_anatomy
from vis.tipping import anatomy_html, anatomy_markdown


def _costs(forward_ms: float = 9.0, proposer_ms: float = 0.5) -> KindCosts:
    """The helpers' anatomy: 6 ms decode forward, ``forward_ms`` per verify forward."""
    spec, base = with_anatomy(), with_anatomy(baseline=True)
    for s in spec.steps:
        s.anatomy = step_anatomy(s, proposer_ms=proposer_ms,
                                 forward_ms=forward_ms if s.kind == VERIFY else None)
    return kind_costs([base], [spec])


def _curve(anatomy: KindCosts | None) -> TippingCurve:
    return TippingCurve(curves.MEASURED, "default", "draft_model", "default-truncated", 4,
                        "cpu", "0.32.0", "2026-12-02T11:00:00",
                        step_costs=[StepCosts(1, 0.010, 0.016, 0.0005, anatomy)])


def test_rows_are_the_checklist_tables():
    rows = dict(costs.cost_rows(_costs()))
    assert rows["decode step (baseline): target forward"] == "6.00 ms"
    assert rows["verify step: target forward (5 tokens)"] == "9.00 ms"
    assert rows["verify step: rejection sampler"] == "1.00 ms"
    assert rows["verify step: proposer"] == "0.50 ms"
    assert rows["verify forward / decode forward"] == "1.50x"
    assert rows["timed steps (decode / verify)"] == "8 / 2"


def test_one_k_names_the_part_that_grows():
    forward = costs.grows_with_k(_costs(forward_ms=20.0), 4, "ngram", "cpu")
    assert "The part that grows with k is the target's forward pass" in forward
    assert "verifying 5 tokens costs 3.3x a decode step" in forward
    drafter = costs.grows_with_k(_costs(proposer_ms=30.0), 4, "ngram", "cpu")
    assert "The part that grows with k is the proposer" in drafter
    assert costs.grows_with_k(KindCosts(), 4, "ngram", "cpu") == costs.NOT_TIMED


def test_across_k_the_grown_part_and_its_cost_per_token():
    grid = [(1, 1, _costs(forward_ms=7.0)), (4, 1, _costs(forward_ms=13.0)),
            (1, 4, _costs(proposer_ms=0.5)), (4, 4, _costs(proposer_ms=6.5))]
    words = costs.grid_words(grid)
    assert words[0].startswith("Concurrency 1: From k=1 to k=4")
    assert "the target's forward pass, about 2.00 ms per extra draft token" in words[0]
    assert "grows with k is the proposer, about 2.00 ms per extra draft token" in words[1]
    text = costs.grid_text(grid)
    assert text.count("\n  ") == 5 and "verify / decode forward" in text  # head + 4 rows
    md = anatomy_markdown(grid)
    assert md.count("\n| 1 |") == 2 and md.count("\n| 4 |") == 2 and words[1] in md


def test_a_sweep_without_anatomy_says_so():
    assert costs.NOT_TIMED in anatomy_markdown([(1, 1, KindCosts()), (2, 1, KindCosts())])
    assert costs.grid_text([]) == f"step anatomy: {costs.NOT_TIMED}"


def test_curves_keep_the_anatomy_of_their_runs_and_old_files_read_without():
    curve = _curve(_costs())
    again = TippingCurve.from_dict(json.loads(json.dumps(curve.to_dict())))
    assert again.step_costs[0].anatomy == curve.step_costs[0].anatomy
    old = curve.to_dict()
    del old["step_costs"][0]["anatomy"]
    assert TippingCurve.from_dict(old).step_costs[0].anatomy is None


def test_tipping_page_and_printout_show_the_table_and_the_words():
    curve = _curve(_costs())
    page = anatomy_html(curve)
    assert "concurrency 1: median per step" in page and "9.00 ms" in page
    assert "The part that grows with k is" in page
    text = describe(curve)
    assert "step anatomy, medians at concurrency 1:" in text and "1.50x" in text
    assert costs.NOT_TIMED in anatomy_html(_curve(None)) and costs.NOT_TIMED in describe(_curve(None))


def test_a_derived_curve_points_to_the_measured_one():
    derived = curves.derive_lookup_curve(_curve(_costs()), "ngram", 2, 0.001)
    assert "derived" in anatomy_html(derived) and derived.source in anatomy_html(derived)
    assert f"derived from {derived.source}" in describe(derived)


def test_a_grid_pools_each_points_requests():
    import pandas as pd

    from space.records.trace import make_compare
    from space.runs.sweep import GridResult, SweepResult
    from space.runs.workloads import PromptResult, WorkloadResult

    cmp = make_compare([with_anatomy(baseline=True)], [with_anatomy()])
    point = WorkloadResult("w", cmp.speculative.config, 0.0, 48, 2, 1,
                           [PromptResult("p#1", cmp), PromptResult("p#2", cmp)])
    grid = GridResult("w", pd.DataFrame(), [SweepResult("w", "concurrency", pd.DataFrame(),
                                                        None, None, results=[point])])
    [(k, concurrency, kc)] = grid.step_costs()
    assert (k, concurrency) == (4, 2)
    assert (kc.num_decode_steps, kc.num_verify_steps) == (16, 4)
    assert kc.forward_ratio == pytest.approx(1.5)


def test_a_verify_steps_excess_over_a_decode_step_is_split_into_three_parts():
    c = KindCosts(decode_step_s=0.010, decode_forward_s=0.008, verify_forward_s=0.012,
                  rejection_s=0.001, proposer_s=0.003, overhead_s=0.002)
    assert c.excess_over_decode_s() == pytest.approx({"forward": 0.004, "proposer": 0.003, "rest": 0.001})
