"""The speedup estimator (the ratio of totals: what a deployment feels, unlike any
median or mean of per-prompt ratios), its seeded two-stage bootstrap intervals, and how
many prompts would decide (pure, numpy); docs/answer.md tells the rest.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.90          # the intervals' default level
PREDICT_PROMPTS = 3        # m, the next prompts a prediction interval is for
DRAWS = 2000               # bootstrap resamples; 2000 keep a 90 % bound stable to ~1 %
SEED = 0                   # the bootstrap's seed: the same records give the same interval
MAX_MORE_PROMPTS = 1000    # "more than this" beyond it: no sample size decides


@dataclass(frozen=True)
class Paired:
    """Per-token times of one group: ``baseline[i][j]`` and ``speculative[i][j]`` are
    prompt i's repeat j, in seconds per output token (repeats may differ per prompt)."""

    baseline: Sequence[Sequence[float]]
    speculative: Sequence[Sequence[float]]

    def __post_init__(self) -> None:
        if len(self.baseline) != len(self.speculative) or len(self.baseline) == 0:
            raise ValueError("one list of repeats per prompt on both sides, at least one")
        for b, s in zip(self.baseline, self.speculative, strict=True):
            if len(b) != len(s) or len(b) == 0:
                raise ValueError("paired repeats: as many baseline as speculative, at least one")

    @property
    def prompts(self) -> int:
        return len(self.baseline)

    def totals(self) -> tuple[float, float]:
        """(sum_i b_i, sum_i s_i): the prompts' mean per-token times, summed."""
        return (float(sum(np.mean(b) for b in self.baseline)),
                float(sum(np.mean(s) for s in self.speculative)))


def describe(speedup: float, ci: tuple[float, float] | None, prompts: int | None,
             repeats: int | None = None) -> str:
    """A speedup with its interval in words.

    Example:
        >>> describe(2.27, (1.52, 2.90), 3)
        '2.27x (90 % CI 1.52-2.90, 3 prompts)'
        >>> describe(1.4, None, 1), describe(1.4, (1.2, 1.6), 1, repeats=3)
        ('1.40x (one run: no interval)', '1.40x (90 % CI 1.20-1.60, 3 repeats of 1 prompt)')
    """
    if ci is None:
        return f"{speedup:.2f}x (one run: no interval)"
    over = (f"{repeats} repeats of 1 prompt" if prompts == 1 and repeats
            else f"{prompts} prompt{'s' if prompts != 1 else ''}")
    return f"{speedup:.2f}x ({CONFIDENCE * 100:.0f} % CI {ci[0]:.2f}-{ci[1]:.2f}, {over})"


def ratio_of_totals(p: Paired) -> float:
    """R = sum_i b_i / sum_i s_i."""
    b, s = p.totals()
    return b / s if s > 0 else 0.0


def _resampled_totals(p: Paired, rng: np.random.Generator, draws: int,
                      per_draw: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per draw, the totals (sum b_i, sum s_i) of a two-stage resample: [draws] each.
    ``per_draw``: draw that many prompts from each resample (a prediction for new ones)."""
    # [n, r_max] matrices padded with 0, and each prompt's repeats
    counts = np.array([len(b) for b in p.baseline])
    n, r_max = p.prompts, int(counts.max())
    b, s = np.zeros((n, r_max)), np.zeros((n, r_max))
    for i, (bi, si) in enumerate(zip(p.baseline, p.speculative, strict=True)):
        b[i, :len(bi)], s[i, :len(si)] = bi, si
    idx = rng.integers(0, n, size=(draws, n)) if n > 1 else np.zeros((draws, 1), int)
    if per_draw is not None:
        pick = rng.integers(0, idx.shape[1], size=(draws, per_draw))
        idx = np.take_along_axis(idx, pick, axis=1)
    # within each drawn prompt, its own r_i repeats with replacement (pairs kept); a
    # prompt with fewer repeats than the most uses only the first r_i draws
    n_reps = counts[idx][..., None]
    reps = (rng.random((*idx.shape, r_max)) * n_reps).astype(int)
    used = np.arange(r_max) < n_reps
    rows = idx[..., None]

    def means(x: np.ndarray) -> np.ndarray:
        return (np.where(used, x[rows, reps], 0.0).sum(axis=-1) / n_reps[..., 0]).sum(axis=-1)

    return means(b), means(s)


def _percentiles(num: np.ndarray, den: np.ndarray) -> tuple[float, float]:
    """The central ``CONFIDENCE`` interval of the draws' ratios num / den."""
    tail = (1.0 - CONFIDENCE) / 2 * 100
    lo, hi = np.percentile(num / np.where(den > 0, den, np.nan), [tail, 100 - tail])
    return float(lo), float(hi)


def confidence_interval(p: Paired, draws: int = DRAWS, seed: int = SEED) -> tuple[float, float] | None:
    """The ratio of totals' bootstrap interval (prompts, then repeats); None for one run."""
    if p.prompts == 1 and len(p.baseline[0]) == 1:  # an interval needs two runs
        return None
    return _percentiles(*_resampled_totals(p, np.random.default_rng(seed), draws))


def prediction_interval(p: Paired, m: int = PREDICT_PROMPTS) -> tuple[float, float] | None:
    """Where the ratio of totals of the next ``m`` prompts should fall; None with one
    prompt (a group's prompts must differ for a prediction about new ones)."""
    if m < 1:
        raise ValueError(f"predict at least one prompt, got {m}")
    if p.prompts < 2:
        return None
    return _percentiles(*_resampled_totals(p, np.random.default_rng(SEED + 1), DRAWS, per_draw=m))


def weighted_ratio(groups: Sequence[Paired], weights: Sequence[float]) -> float | None:
    """The traffic's S = sum_g w_g B_g / sum_g w_g S_g, B_g and S_g a group's mean
    per-token times over its prompts, w_g its output tokens in the traffic."""
    num = sum(w * g.totals()[0] / g.prompts for g, w in zip(groups, weights, strict=True))
    den = sum(w * g.totals()[1] / g.prompts for g, w in zip(groups, weights, strict=True))
    return num / den if den > 0 and num > 0 else None


def harmonic(weights: Sequence[float], speedups: Sequence[float]) -> float | None:
    """Token-weighted harmonic mean sum(w) / sum(w / s): a mix's speedup when only its
    parts' ratios are known. A speedup <= 0 was not measured: left out, never free.

    Example: 300 tokens at 2.0x and 100 at 0.8x -> 400 / 275.
        >>> round(harmonic([300, 100], [2.0, 0.8]), 4), harmonic([300, 100], [2.0, 0.0])
        (1.4545, 2.0)
    """
    kept = [(w, s) for w, s in zip(weights, speedups, strict=True) if s > 0]
    total = sum(w for w, _ in kept)
    cost = sum(w / s for w, s in kept)
    return total / cost if total > 0 and cost > 0 else None


def weighted_interval(groups: Sequence[Paired], weights: Sequence[float]) -> tuple[float, float] | None:
    """The traffic figure's interval: every group resampled on its own, the weights
    (the traffic's mix) fixed. None when no group has spread."""
    if all(g.prompts == 1 and len(g.baseline[0]) == 1 for g in groups):
        return None
    rng = np.random.default_rng(SEED + 2)
    num, den = np.zeros(DRAWS), np.zeros(DRAWS)
    for g, w in zip(groups, weights, strict=True):
        b, s = _resampled_totals(g, rng, DRAWS)
        num += w * b / g.prompts
        den += w * s / g.prompts
    return _percentiles(num, den)


def straddles(interval: tuple[float, float], no_gain: float, worth: float) -> list[float]:
    """The bars an interval straddles: ``no_gain`` when lo < no_gain <= hi, ``worth``
    when lo < worth < hi (an interval ending on ``worth`` lies inside the band)."""
    lo, hi = interval
    return ([no_gain] if lo < no_gain <= hi else []) + ([worth] if lo < worth < hi else [])


def decide(interval: tuple[float, float], no_gain: float, worth: float) -> str:
    """The interval's verdict: worth-it when lo >= worth, not-worth-it when hi < no_gain,
    borderline when it lies in [no_gain, worth], else undecided."""
    lo, hi = interval
    if lo >= worth:
        return "worth-it"
    if hi < no_gain:
        return "not-worth-it"
    return "undecided" if straddles(interval, no_gain, worth) else "borderline"


def prompts_to_decide(estimate: float, interval: tuple[float, float], n: int,
                      no_gain: float, worth: float) -> int | None:
    """About how many prompts in all would decide, if the interval's half-widths h
    shrink as 1/sqrt(n) around the estimate R: a straddled bar T is cleared on R's
    side when n' = n (h / |R - T|)^2. None when the interval already decides, or
    when no number of prompts would (R sits on a bar); tests/unit/test_estimate.py
    works examples."""
    lo, hi = interval
    h_lo, h_hi = max(estimate - lo, 0.0), max(hi - estimate, 0.0)
    scale = math.inf  # the largest sqrt(n / n') at which no bar is straddled
    bars = straddles(interval, no_gain, worth)
    for t in bars:
        gap = abs(estimate - t)
        half = h_lo if estimate >= t else h_hi
        if gap == 0.0:
            return None
        if half > 0:
            scale = min(scale, gap / half)
    if not bars or math.isinf(scale):
        return None
    need = math.ceil(n / scale ** 2 * (1 + 1e-9))
    return min(max(need, n + 1), MAX_MORE_PROMPTS + n)
