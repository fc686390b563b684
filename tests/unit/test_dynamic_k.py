"""A k per batch size for measured traffic (space/judge/dynamic_k.py) on literal
numbers, and the traffic answer that carries it (space/judge/traffic.py).
vLLM's own reading of the schedules: tests/engine/test_deploy_config.py."""
from __future__ import annotations

import dataclasses
import json
import shlex

import pytest

from space.judge import theory
from space.judge.curves import MEASURED, StepCosts, TippingCurve
from space.judge.dynamic_k import Gainer, predict, predicted_speedup, verify_step_s
from space.judge.traffic import answer, describe
from space.records.run import SERVER
from tests.helpers.traffic import NGRAM_CONFIG, NGRAM_CURVE, item

NGRAM, CURVE = NGRAM_CONFIG, NGRAM_CURVE
COSTS = CURVE.step_costs
TAU_08 = theory.expected_tokens_per_step(0.8, 4)   # 3.3616: alpha 0.8 at k=4
TAU_05 = theory.expected_tokens_per_step(0.5, 4)   # 1.9375: alpha 0.5


def test_verify_cost_grows_per_token_and_drafting_by_kind():
    c1 = COSTS[0]
    assert verify_step_s(c1, 4, 4, lookup=True) == pytest.approx(0.014)  # the curve's own k
    assert verify_step_s(c1, 4, 8, lookup=True) == pytest.approx(0.010 + 0.006 + 0.001)
    # a draft model drafts once per token: its 1 ms at k=4 is 2 ms at k=8
    assert verify_step_s(c1, 4, 8, lookup=False) == pytest.approx(0.010 + 0.006 + 0.002)
    # noise that puts verify under decode costs a verified token nothing, never less
    assert verify_step_s(StepCosts(1, 0.010, 0.009, 0.0), 4, 2, True) == pytest.approx(0.010)


def test_speedup_per_k_and_concurrency_by_hand():
    # c=1: tau(0.8, 7) = (1 - 0.8^8) / 0.2 = 4.1611 over 10 + 0.75 x 7 + 1 = 16.25 ms
    assert predicted_speedup(0.8, 7, COSTS[0], 4, True) == pytest.approx(
        4.16114 * 10 / 16.25, rel=1e-4)
    # c=4: tau(0.8, 3) = 2.952 over 12 + 4.25 x 3 + 1 = 25.75 ms
    assert predicted_speedup(0.8, 3, COSTS[1], 4, True) == pytest.approx(2.952 * 12 / 25.75)


def test_one_group_gets_its_own_best_k_per_concurrency():
    s = predict([Gainer("code", TAU_08, 100.0)], NGRAM, CURVE, measured_concurrency=1)
    assert s is not None and s.config is not None
    [g] = s.groups
    assert g.alpha == pytest.approx(0.8)
    # c=1: k=7 (2.561x) beats k=6 (2.549x) and k=8 (2.546x); c=4: k=3 (1.376x) beats 2 and 4
    assert [(c.concurrency, c.k) for c in g.choices] == [(1, 7), (4, 3)]
    assert g.at_measured == pytest.approx(TAU_08 * 10 / 14)  # the model at k=4, c=1
    assert s.config.schedule == [[1, 3, 7], [4, 256, 3]]


def test_the_deployment_weighs_its_groups_by_output_tokens():
    """code (alpha 0.8, 300 tokens) and chat (alpha 0.5, 100 tokens) share one deployment.

    c=1: H(k) = 400 / (300 / S_code + 100 / S_chat): k=5 gives 400 / (119.9 + 74.9) = 2.053,
    above k=4 (2.028) and k=6 (2.043). c=4: k=2 gives 1.240 (1.362x and 0.977x), above
    k=1 (1.193) and k=3 (1.203). chat alone loses at c=4: 1.04x at k=1 is under 1.05x.
    """
    s = predict([Gainer("code", TAU_08, 300.0), Gainer("chat", TAU_05, 100.0)], NGRAM, CURVE,
                measured_concurrency=4)
    assert s is not None and s.config is not None
    assert [(c.concurrency, c.k) for c in s.groups[1].choices] == [(1, 3), (4, 0)]
    assert [(c.concurrency, c.k, round(c.speedup, 3)) for c in s.config.choices] == [
        (1, 5, 2.053), (4, 2, 1.24)]
    assert s.config.schedule == [[1, 3, 5], [4, 256, 2]]
    cfg = json.loads(shlex.split(s.config.command)[-1])
    assert cfg == {"method": "ngram", "num_speculative_tokens": 5,
                   "num_speculative_tokens_per_batch_size": [[1, 3, 5], [4, 256, 2]],
                   "prompt_lookup_max": 5}
    text = s.describe()
    assert "predicted (not measured)" in text and "alpha 0.80" in text
    assert "num_speculative_tokens_per_batch_size [[1, 3, 5], [4, 256, 2]]" in text


def test_losing_at_every_concurrency_is_a_schedule_of_zeros_and_no_config():
    weak = theory.expected_tokens_per_step(0.1, 4)
    s = predict([Gainer("chat", weak, 10.0)], NGRAM, CURVE)
    assert s is not None and s.config is not None
    assert s.config.schedule == [[1, 256, 0]] and s.config.speculative_config is None
    assert "speculation loses at every concurrency" in s.describe()


def test_without_a_curve_it_says_what_measures_it_and_invents_nothing():
    s = predict([Gainer("code", TAU_08, 1.0)], NGRAM, None, measured_concurrency=2)
    assert s is not None and s.config is None and s.groups == []
    assert "no tipping curve of ngram k=4" in s.note
    assert "python -m space tipping" in s.note and "--variable k_x_concurrency" in s.note
    no_costs = TippingCurve(MEASURED, "default", "ngram", None, 4, "cpu", "0.32.0", "2026-12-02")
    assert predict([Gainer("code", TAU_08, 1.0)], NGRAM, no_costs).config is None  # type: ignore[union-attr]
    assert predict([], NGRAM, CURVE) is None  # no group gains: nothing to schedule


def test_through_servers_no_schedule_even_with_a_curve_and_it_says_why():
    server = dataclasses.replace(NGRAM, source=SERVER, device="unknown", dtype=None)
    s = predict([Gainer("code", TAU_08, 1.0)], server, CURVE, measured_concurrency=2)
    assert s is not None and s.config is None and s.groups == [] and s.curve == ""
    assert s.note.startswith("no k per batch size for the servers")
    assert "not the servers' hardware" in s.note and "k=4" in s.note
    assert "num_speculative_tokens_per_batch_size" not in s.describe()


def test_the_traffic_answer_at_concurrency_2_carries_it_everywhere():
    items = [item("code", 1, 2.0), item("chat", 2, 0.8), item("code", 3, 1.6)]
    r = answer("t.jsonl", "how", items, {"code": 10, "chat": 30}, None, repeats=1,
               max_tokens=32, concurrency=2, curve=CURVE)
    assert r.concurrency == 2 and r.deployment.concurrency == 2
    for g in r.groups:  # the checklist's concurrency line reads the run's
        assert g.checklist is not None and g.checklist.check("concurrency").value == 2
    code = r.groups[0]
    assert code.drafted_share is not None and 0 < code.drafted_share <= 1
    expected = predict([Gainer("code", code.mean_acceptance_length or 0, code.output_tokens,
                               code.drafted_share)], r.config, CURVE, 2)
    assert r.schedule is not None and expected is not None and expected.config is not None
    assert r.schedule.config is not None
    assert r.schedule.config.schedule == expected.config.schedule
    d = r.summary()
    assert d["concurrency"] == 2
    assert d["schedule"]["config"]["schedule"] == expected.config.schedule
    assert json.loads(json.dumps(d))["schedule"]["groups"][0]["group"] == "code"
    text = describe(r)
    assert "measured 2 requests at once (a group's prompts in batches)" in text
    assert "(k=4 as measured, 2 requests at once)" in text
    assert "num_speculative_tokens_per_batch_size" in text
    plain = answer("t.jsonl", "how", items, {}, None, repeats=1, max_tokens=32)
    assert plain.concurrency == 1 and "measured one request at a time" in describe(plain)
    assert plain.schedule is not None and "no tipping curve" in plain.schedule.note
