"""Tipping-point curves (space/judge/curves.py): break-even, the model, the cache, the
checklist's headroom line, and the figure. Literal curves, no engine."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from space.common import paths, versions
from space.judge import curves
from space.judge.checklist import ChecklistInputs, evaluate
from space.judge.curves import CurvePoint, StepCosts, TippingCurve
from space.records import verdict
from space.records.schema import load
from space.runs import curve_cache, machine_inputs
from tests.helpers.traces import ngram_run, run_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _point(c: int, tau: float, speedup: float, k: int = 4, steps: int = 100) -> CurvePoint:
    accepted = round((tau - 1) * steps)
    return CurvePoint(concurrency=c, asked_acceptance_length=tau, num_drafts=steps,
                      num_draft_tokens=k * steps, num_accepted_tokens=accepted,
                      baseline_tpot_s=0.036, speculative_tpot_s=0.036 / speedup,
                      speedup=speedup, speedup_low=speedup * 0.95, speedup_high=speedup * 1.05)


def _curve(method="draft_model", draft="default-truncated", **kw) -> TippingCurve:
    pts = [_point(1, t, s) for t, s in ((1.0, 0.41), (1.8, 0.74), (2.6, 1.08), (3.4, 1.40))]
    pts += [_point(4, t, s) for t, s in ((1.0, 0.30), (2.6, 0.81), (3.4, 1.04))]
    kw.setdefault("points", pts)
    kw.setdefault("step_costs", [StepCosts(1, 0.035, 0.087, 0.047), StepCosts(4, 0.045, 0.15, 0.06)])
    return TippingCurve(curves.MEASURED, "default", method, draft, 4, "cpu", "0.32.0",
                        "2026-11-30T15:00:00", **kw)


def test_break_even_falls_back_to_the_model_where_points_never_cross():
    curve = _curve(points=[_point(1, 3.0, 1.3), _point(1, 5.0, 1.9)])
    tau, source = curve.break_even_length(1)
    assert source == "model" and tau == pytest.approx(0.087 / 0.035)
    assert curve.break_even_length(4) == (pytest.approx(0.15 / 0.045), "model")
    assert curve.break_even_rate(1)[0] == pytest.approx((0.087 / 0.035 - 1) / 4)


def test_point_rates_derive_from_counts():
    p = _point(1, 2.6, 1.0)
    assert (p.num_accepted_tokens, p.mean_acceptance_length) == (160, pytest.approx(2.6))
    assert p.acceptance_rate == pytest.approx(0.4)


def test_derived_lookup_curve_takes_the_drafter_out_and_adds_the_lookup():
    lookup = curves.derive_lookup_curve(_curve(), "ngram", 4, lookup_step_s=0.0005)
    c1 = lookup.costs_at(1)
    # target verify of 5 tokens = 0.087 - 0.047; same k, so no extrapolation
    assert c1.verify_step_s == pytest.approx(0.040 + 0.0005)
    assert lookup.kind == curves.DERIVED and not lookup.points and lookup.draft_model is None
    assert lookup.break_even_length(1) == (pytest.approx(0.0405 / 0.035), "model")
    assert lookup.source == curves.cache_name(_curve())


def test_cache_round_trip_and_lookup_by_run_config(tmp_path):
    curve = _curve()
    path = curve_cache.save(curve, tmp_path)
    assert path.parent == tmp_path / "tipping"
    config = {"model": "default", "method": "draft_model", "draft_model": "default-truncated",
              "k": 4, "device": "cpu"}
    back = curve_cache.find_for_config(run_config({**config, "dtype": "bfloat16"}), "0.32.0",
                                       tmp_path)
    assert back.to_dict() == curve.to_dict()
    assert curve_cache.find_for_config(run_config(config), "0.32.0", tmp_path) is not None
    assert curve_cache.find_for_config(run_config({**config, "k": 3}), "0.32.0", tmp_path) is None
    assert curve_cache.find_for_config(run_config(config), "0.33.0", tmp_path) is None
    # a replayed file's free-form k (markup, a float, true) names no curve, and never raises
    for bad in ("<img src=x>", 4.5, True, -4):
        hostile = {**config, "k": None, "speculative_config": {"num_speculative_tokens": bad}}
        assert curve_cache.find_for_config(run_config(hostile), "0.32.0", tmp_path) is None
    # a float32 run never gets the bf16 curve (its verify pass costs another multiple)
    assert curve_cache.find_for_config(run_config({**config, "dtype": "float32"}), "0.32.0", tmp_path) is None
    (tmp_path / "tipping" / "broken.json").write_text("{not json")
    assert [c.method for c in curve_cache.all_curves(tmp_path)] == ["draft_model"]


def test_csv_has_points_and_the_model_curve():
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(curves.to_csv(_curve())))
    assert (frame["series"] == "measured").sum() == 7
    assert (frame["series"] == "model").sum() == 2 * curves.MODEL_GRID_POINTS
    assert set(curves.CSV_COLUMNS) == set(frame.columns)


def test_headroom_line_reads_like_the_issue():
    inputs = ChecklistInputs(method="ngram", k=4, acceptance_rate=0.61,
                             break_even_acceptance_rate=0.34, break_even_concurrency=1,
                             break_even_source="measured curve, interpolated, 2026-11-30")
    line = evaluate(inputs).check("acceptance headroom")
    assert line.detail.startswith("acceptance headroom on this machine: 0.61 measured vs "
                                  "0.34 break-even at concurrency 1")
    assert line.passed is True and line.op in verdict.CHECK_OPS
    below = evaluate(ChecklistInputs(method="ngram", k=4, acceptance_rate=0.2,
                                     break_even_acceptance_rate=0.34))
    assert below.check("acceptance headroom").passed is False
    assert "acceptance headroom" not in {c.name for c in evaluate(ChecklistInputs()).checks}


def test_compare_of_a_pair_with_a_cached_curve_gets_the_line(tmp_path, monkeypatch):
    """The stored ngram k=4 compare, with this machine's cached ngram k=4 curve."""
    monkeypatch.setenv("SPECLENS_CACHE", str(tmp_path))
    monkeypatch.setattr(versions, "public_vllm", lambda: "0.32.0")
    cmp = load((FIXTURES / "compare-v1.json").read_text())
    checks = machine_inputs.attach_checklist(cmp, None).checks
    assert "acceptance headroom" not in {c.name for c in checks}
    curve_cache.save(curves.derive_lookup_curve(_curve(), "ngram", 4, 0.0005), paths.data_dir())
    result = machine_inputs.attach_checklist(cmp, None)
    line = result.check("acceptance headroom")
    assert line.value == pytest.approx(cmp.speculative.acceptance_rate)
    assert "derived from measured step costs" in line.detail
    assert cmp.tipping_curve["method"] == "ngram"
    assert json.loads(json.dumps(cmp.to_dict()))["tipping_curve"]["k"] == 4
    assert load(json.dumps(cmp.to_dict())).tipping_curve["kind"] == curves.DERIVED


def test_synthetic_runs_stay_out_of_metrics_and_checklists(tmp_path, monkeypatch):
    from space.observe.prom import Metrics

    run = ngram_run()
    run.config = dataclasses.replace(run.config, synthetic=True)
    metrics = Metrics()
    metrics.observe_run("speculative", run)
    assert b'speclens_spec_decode_num_drafts_total{engine="speculative"} 0.0' in metrics.render()
    assert machine_inputs.curve_for(run.config) is None


def test_figure_marks_break_even_and_the_workload():
    from vis.tipping import tipping_figure

    fig = tipping_figure(_curve(), "rate", workload_acceptance=0.61, workload_concurrency=1)
    texts = [a.text for a in fig.layout.annotations]
    assert any(t.startswith("break-even") and "c=1" in t for t in texts)
    assert any(t.startswith("break-even") and "c=4" in t for t in texts)
    assert any(t.startswith("this workload: 61%") for t in texts)
    assert {s.x0 for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1} == {0.61}
    names = [t.name for t in fig.data]
    assert "measured, concurrency 1" in names and "model (measured step costs), concurrency 4" in names
    measured = next(t for t in fig.data if t.name == "measured, concurrency 1")
    assert measured.error_y.array is not None  # the spread over repeats
    with pytest.raises(ValueError):
        tipping_figure(_curve(), "speed")


def test_curves_are_keyed_by_dtype_and_old_files_read_as_bf16(tmp_path):
    """A float32 curve and a bf16 one of the same pair live side by side; a file
    saved before the dtype was recorded (no field, the old name) is a bf16 curve."""
    curve_cache.save(_curve(dtype="float32"), tmp_path)
    config = {"model": "default", "method": "draft_model", "draft_model": "default-truncated",
              "k": 4, "device": "cpu"}
    assert curve_cache.find_for_config(run_config({**config, "dtype": "float32"}), "0.32.0", tmp_path).dtype \
        == "float32"
    bf16 = run_config({**config, "dtype": "bfloat16"})
    assert curve_cache.find_for_config(bf16, "0.32.0", tmp_path) is None
    legacy = _curve().to_dict()
    del legacy["dtype"]
    (tmp_path / "tipping" / "default__draft_model__default-truncated__k4__cpu__vllm-0.32.0.json") \
        .write_text(json.dumps(legacy))
    assert curve_cache.find_for_config(run_config(config), "0.32.0", tmp_path).dtype == "bfloat16"
    assert curve_cache.find_for_config(run_config({**config, "dtype": "float32"}), "0.32.0", tmp_path).dtype \
        == "float32"
