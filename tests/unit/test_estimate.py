"""The ratio-of-totals estimator, its seeded bootstrap and the interval's decision rule
(space/judge/estimate.py, space/judge/checklist.py): literal numbers, no engine."""
from __future__ import annotations

import numpy as np
import pytest

from space.judge import estimate
from space.judge.checklist import NO_GAIN_SPEEDUP, WORTH_IT_SPEEDUP, ChecklistInputs, evaluate
from space.judge.estimate import Paired
from space.records.verdict import BORDERLINE, NOT_WORTH_IT, UNDECIDED, WORTH_IT


def test_ratio_of_totals_is_not_a_mean_or_median_of_ratios():
    # prompt 1: 0.10 vs 0.01 s/token (10x), prompt 2: 0.30 vs 0.30 (1x), prompt 3 1x
    p = Paired([[0.10], [0.30], [0.30]], [[0.01], [0.30], [0.30]])
    assert estimate.ratio_of_totals(p) == pytest.approx(0.70 / 0.61)
    # the median of ratios would say 1x, their mean 4x; the deployment feels 1.15x
    # repeats are averaged per prompt before the sums
    q = Paired([[0.10, 0.20]], [[0.05, 0.05]])
    assert estimate.ratio_of_totals(q) == pytest.approx(0.15 / 0.05)


def test_paired_repeats_must_match():
    with pytest.raises(ValueError):
        Paired([[0.1, 0.2]], [[0.1]])
    with pytest.raises(ValueError):
        Paired([], [])


def test_bootstrap_is_seeded_and_one_run_has_no_interval():
    p = Paired([[0.10, 0.12], [0.20, 0.18], [0.30, 0.33]], [[0.05, 0.06], [0.19, 0.2],
                                                           [0.2, 0.21]])
    assert estimate.confidence_interval(p) == estimate.confidence_interval(p)
    assert estimate.confidence_interval(p, seed=1) != estimate.confidence_interval(p)
    assert estimate.confidence_interval(Paired([[0.1]], [[0.05]])) is None
    one = estimate.confidence_interval(Paired([[0.10, 0.12, 0.11]], [[0.05, 0.07, 0.06]]))
    assert one is not None and one[0] < 0.11 / 0.06 < one[1]  # over repeats
    assert estimate.prediction_interval(Paired([[0.1, 0.1]], [[0.05, 0.06]])) is None
    # prompts with different numbers of repeats: each resamples only its own
    uneven = Paired([[0.10], [0.20, 0.22, 0.21]], [[0.05], [0.10, 0.12, 0.11]])
    lo, hi = estimate.confidence_interval(uneven)
    assert lo <= estimate.ratio_of_totals(uneven) <= hi and lo >= 0.20 / 0.12


def test_bootstrap_covers_a_known_ratio_about_90_percent_of_the_time():
    """400 samples of 40 prompts from a heavy-tailed population with a known ratio of
    totals (E[b] / E[s]); the 90 % interval must cover it 85-95 % of the time."""
    rng = np.random.default_rng(2026)
    n, trials = 40, 400
    true = 0.10 / (0.10 / 1.5)  # b ~ 0.10 mean, s = b / speedup, speedup lognormal
    hits = 0
    for _ in range(trials):
        b = rng.gamma(4.0, 0.025, n)                 # mean 0.10 s/token
        speed = rng.lognormal(np.log(1.5), 0.35, n)  # per-prompt speedups, heavy right tail
        s = b / speed
        # scale s so that E[s] is exactly E[b] / 1.5: the population's ratio of totals
        s = s / np.exp(0.35 ** 2 / 2)
        lo, hi = estimate.confidence_interval(Paired(b[:, None], s[:, None]), draws=600)
        hits += lo <= true <= hi
    # E[b / X] with X lognormal = E[b] E[1/X] = E[b] exp(-mu + sigma^2 / 2), scaled above
    assert 0.85 <= hits / trials <= 0.95, hits  # 357 of 400 (89 %) with this seed


@pytest.mark.parametrize(("ci", "verdict"), [
    ((1.10, 2.0), WORTH_IT), ((1.0999, 2.0), UNDECIDED), ((0.5, 1.0499), NOT_WORTH_IT),
    ((0.5, 1.05), UNDECIDED), ((1.05, 1.10), BORDERLINE), ((1.06, 1.08), BORDERLINE),
    ((1.04, 1.20), UNDECIDED), ((0.2, 9.0), UNDECIDED),
])
def test_the_interval_decides_at_its_edges(ci, verdict):
    assert estimate.decide(ci, NO_GAIN_SPEEDUP, WORTH_IT_SPEEDUP) == verdict
    mid = (ci[0] + ci[1]) / 2
    checklist = evaluate(ChecklistInputs(speedup_median=mid, speedup_ci=ci, speedup_prompts=3))
    assert checklist.verdict == verdict and checklist.rule == "interval"


def test_undecided_says_how_many_prompts_would_decide():
    # 2.0x, 90 % CI 0.9-3.1 from 3 prompts: the lower half-width 1.1 must fall under
    # 2.0 - 1.1 = 0.9 -> 3 (1.1 / 0.9)^2 = 4.48 -> 5 prompts
    assert estimate.prompts_to_decide(2.0, (0.9, 3.1), 3, 1.05, 1.10) == 5
    # below both bars: the upper half-width 0.3 must fall under 1.05 - 0.9 = 0.15, strictly
    # (not-worth-it is hi < 1.05) -> more than 4 n = 24
    assert estimate.prompts_to_decide(0.9, (0.6, 1.2), 6, 1.05, 1.10) == 25
    # inside the band and straddling both: the tighter side decides, here the upper
    # half-width 0.13 against 1.10 - 1.07 -> 4 (0.13 / 0.03)^2 = 75.1 -> 76
    assert estimate.prompts_to_decide(1.07, (1.0, 1.2), 4, 1.05, 1.10) == 76
    assert estimate.prompts_to_decide(1.10, (1.0, 1.2), 4, 1.05, 1.10) is None  # on the bar
    assert estimate.prompts_to_decide(1.5, (1.2, 1.8), 3, 1.05, 1.10) is None  # decided
    line = evaluate(ChecklistInputs(speedup_median=2.0, speedup_ci=(0.9, 3.1),
                                    speedup_prompts=3)).check("measured speedup")
    assert line.passed is None
    assert "2.00x (90 % CI 0.90-3.10, 3 prompts)" in line.detail
    assert "about 5 prompts in all would decide it" in line.detail


def test_acceptance_keeps_its_force_and_one_slow_prompt_no_longer_demotes():
    clear = dict(speedup_median=2.0, speedup_ci=(1.5, 2.5), speedup_prompts=6)
    assert evaluate(ChecklistInputs(**clear, acceptance_rate=0.0, k=4,
                                    mean_acceptance_length=1.0)).verdict == NOT_WORTH_IT
    assert evaluate(ChecklistInputs(**clear, repetition_share=0.9)).verdict == BORDERLINE
    mixed = {"line 1": WORTH_IT, "line 2": NOT_WORTH_IT, "line 3": WORTH_IT}
    checklist = evaluate(ChecklistInputs(**clear, prompt_verdicts=mixed))
    assert checklist.verdict == WORTH_IT
    assert checklist.check("prompts").passed is False  # still shown as context
    # without an interval (one run) the older rule decides, and says so
    assert evaluate(ChecklistInputs(speedup_median=2.0)).rule == "spread"


def test_the_traffic_figure_weights_groups_by_tokens_and_has_an_interval():
    g1 = Paired([[0.10, 0.11], [0.12, 0.1]], [[0.05, 0.05], [0.06, 0.05]])
    g2 = Paired([[0.10], [0.10]], [[0.125], [0.12]])
    s = estimate.weighted_ratio([g1, g2], [300, 100])
    b1, s1 = g1.totals()
    b2, s2 = g2.totals()
    assert s == pytest.approx((300 * b1 / 2 + 100 * b2 / 2) / (300 * s1 / 2 + 100 * s2 / 2))
    lo, hi = estimate.weighted_interval([g1, g2], [300, 100])
    assert lo < s < hi
