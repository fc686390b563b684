"""A group of comparisons as the estimator's inputs, and the group's figures on two
bases: TPOT (decode time per output token) and end-to-end (request time per output
token, what a user waits; it decides when TTFT is over ``TTFT_SHARE_FOR_E2E``)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from space.judge import estimate
from space.judge.estimate import Paired
from space.records.trace import CompareRecord

Basis = Literal["TPOT", "end-to-end"]
TTFT_SHARE_FOR_E2E = 0.20


def paired(cmps: Sequence[CompareRecord], basis: Basis = "TPOT") -> Paired:
    """The comparisons as paired per-token times, one prompt each: its per-repeat times
    (the median run when the comparison kept no repeats, as older records may not)."""
    key = "tpot_s" if basis == "TPOT" else "e2e_s"

    def per_token(row: dict[str, float], tokens: int) -> float:
        if key == "tpot_s":
            return row["tpot_s"]
        return row["e2e_s"] / max(int(row.get("num_output_tokens", tokens)), 1)

    base, spec = [], []
    for cmp in cmps:
        nb, ns = len(cmp.baseline.output_token_ids), len(cmp.speculative.output_token_ids)
        rows = [(b, s) for b, s in zip(cmp.baseline_runs, cmp.speculative_runs, strict=False)
                if s.get(key) and b.get(key) is not None]
        if not rows:
            rows = [({"tpot_s": cmp.baseline.tpot_s, "e2e_s": cmp.baseline.e2e_s},
                     {"tpot_s": cmp.speculative.tpot_s, "e2e_s": cmp.speculative.e2e_s})]
        base.append([per_token(b, nb) for b, _ in rows])
        spec.append([per_token(s, ns) for _, s in rows])
    return Paired(base, spec)


@dataclass
class Figures:
    """A group's speedup with its intervals, on the basis that decides."""

    basis: Basis
    speedup: float                              # ratio of totals, on ``basis``
    ci: tuple[float, float] | None              # its confidence interval
    prediction: tuple[float, float] | None      # for the next ``predict_prompts`` prompts
    predict_prompts: int
    tpot_speedup: float
    e2e_speedup: float
    e2e_ci: tuple[float, float] | None
    ttft_share: float | None
    prompts: int


def group_figures(cmps: Sequence[CompareRecord],
                  predict_prompts: int = estimate.PREDICT_PROMPTS) -> Figures:
    """Both bases' ratios of totals and intervals; the deciding basis's prediction.
    The basis: TTFT's share of request time, both engines' median runs pooled."""
    runs = [r for c in cmps for r in (c.baseline, c.speculative)]
    total = sum(r.e2e_s for r in runs)
    share = sum(r.ttft_s for r in runs) / total if total > 0 else None
    tp, e2 = paired(cmps, "TPOT"), paired(cmps, "end-to-end")
    t, e = estimate.ratio_of_totals(tp), estimate.ratio_of_totals(e2)
    eci = estimate.confidence_interval(e2)
    e2e = share is not None and share > TTFT_SHARE_FOR_E2E
    basis: Basis = "end-to-end" if e2e else "TPOT"
    pairs, speedup, ci = (e2, e, eci) if e2e else (tp, t, estimate.confidence_interval(tp))
    return Figures(basis, speedup, ci, estimate.prediction_interval(pairs, predict_prompts),
                   predict_prompts, t, e, eci, share, len(cmps))
