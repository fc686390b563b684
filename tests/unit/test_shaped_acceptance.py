"""Synthetic acceptance with a shape (issue 30): the tipping curve forces each
mean acceptance length as per-position rates shaped like a measured profile,
and says which of vLLM's two forms it used."""
from __future__ import annotations

import json

import pytest

from space.cli.tipping import read_profile
from space.judge import curves
from space.records.config import ConfigError, EngineSpec
from space.runs import tipping as tp
from tests.helpers.traces import ngram_run

PROFILE = [0.9, 0.7, 0.3, 0.35]  # measured; not monotone at the end


@pytest.mark.parametrize("length", tp.acceptance_lengths(4, 6))
def test_shaped_rates_meet_the_length_and_vllms_rules(length):
    rates = curves.shaped_rates(PROFILE, length)
    assert len(rates) == 4 and all(0.0 <= r <= 1.0 for r in rates)
    assert all(a >= b for a, b in zip(rates, rates[1:], strict=False))  # vLLM: non-increasing
    assert 1 + sum(rates) == pytest.approx(length, abs=1e-5)


def test_the_shape_follows_the_profile_where_no_rate_is_capped():
    rates = curves.shaped_rates([0.8, 0.4, 0.2, 0.1], 1.75)
    assert [r / rates[0] for r in rates] == pytest.approx([1, 0.5, 0.25, 0.125], abs=1e-4)
    # vLLM's length form at the same tau: [0.75, 0, 0, 0], all of it on position 0


def test_synthetic_spec_says_which_form():
    spec = EngineSpec(method="draft_model", draft_model="default-truncated", k=4)
    by_length = dict(tp.synthetic_spec(spec, 2.5).extra_speculative)
    assert by_length == {"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5}
    shaped = dict(tp.synthetic_spec(spec, 2.5, PROFILE).extra_speculative)
    assert "synthetic_acceptance_length" not in shaped
    assert shaped["synthetic_acceptance_rates"] == tuple(curves.shaped_rates(PROFILE, 2.5))
    assert tp.synthetic_spec(spec, 2.5, PROFILE).synthetic


def test_a_profile_has_k_rates():
    assert tp.check_profile(None, 4) is None
    with pytest.raises(ConfigError, match="4 rates"):
        tp.check_profile([0.5, 0.2], 4)
    with pytest.raises(ConfigError, match="4 rates"):
        tp.check_profile([1.5, 0.2, 0.1, 0.0], 4)


def test_a_profile_from_a_saved_run(tmp_path):
    run = ngram_run()
    expected = tp.profile_of([run])
    assert expected == pytest.approx(run.per_position_acceptance)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run.to_dict()))
    assert read_profile(str(path)) == expected
    assert read_profile("0.8, 0.6,0.4,0.2") == [0.8, 0.6, 0.4, 0.2]
    with pytest.raises(ConfigError):
        read_profile("0.8;0.6")


def test_the_curve_records_its_form_and_reads_old_files():
    curve = curves.TippingCurve(curves.MEASURED, "default", "draft_model", "d", 4, "cpu",
                                "0.32.0", "2026-12-04", acceptance_form=curves.SHAPED_FORM,
                                acceptance_profile=PROFILE)
    again = curves.TippingCurve.from_dict(json.loads(json.dumps(curve.to_dict())))
    assert (again.acceptance_form, again.acceptance_profile) == (curves.SHAPED_FORM, PROFILE)
    old = curve.to_dict()
    del old["acceptance_form"], old["acceptance_profile"]
    assert curves.TippingCurve.from_dict(old).acceptance_form == curves.LENGTH_FORM
    assert "shaped like" in tp.describe(again)
