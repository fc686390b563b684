"""Tipping-point curves: speedup against acceptance (forced by vLLM's synthetic
acceptance, ``space/runs/tipping.py``) measured on this machine, beside the model
S(tau) = tau x decode step / verify step (pure; no vLLM, no pandas at import).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from space.judge import theory
from space.judge.crossover import crossing
from space.records import methods
from space.records.anatomy import KindCosts
from space.records.dicts import build, known

MEASURED = "measured"
DERIVED = "derived from measured step costs"
LOOKUP_METHODS = methods.names(lookup=True)  # curves derived from step costs

# How a measured curve forced acceptance (vLLM's SpeculativeConfig takes one of two)
LENGTH_FORM = "length"
SHAPED_FORM = "rates"
FORM_WORDS = {
    LENGTH_FORM: "synthetic_acceptance_length: vLLM's minimum-variance schedule (the first "
                 "tau - 1 positions always accepted, one partly, the rest never)",
    SHAPED_FORM: "synthetic_acceptance_rates: per-position rates shaped like a measured profile, "
                 "scaled to each tau",
}
PROFILE_FLOOR = 1e-3  # a position the profile never accepted still reaches 1 at tau = k + 1


def shaped_rates(profile: list[float] | tuple[float, ...], length: float) -> list[float]:
    """Per-position acceptance rates shaped like ``profile`` with mean acceptance length
    ``length``: r_p = min(1, s * q_p), q the profile made non-increasing (vLLM requires
    it) and floored at ``PROFILE_FLOOR``, s found by bisection.

    Example: a profile measured on a workload (k = 4)
        >>> shaped_rates([0.8, 0.6, 0.4, 0.2], 3.0)
        [0.8, 0.6, 0.4, 0.2]
        >>> shaped_rates([0.8, 0.6, 0.4, 0.2], 2.0)
        [0.4, 0.3, 0.2, 0.1]
        >>> shaped_rates([0.8, 0.6, 0.4, 0.2], 4.4)
        [1.0, 1.0, 0.933333, 0.466667]
    """
    k = len(profile)
    if k == 0 or not all(0.0 <= p <= 1.0 for p in profile):
        raise ValueError(f"a profile is k rates in [0, 1], got {list(profile)}")
    if not 1.0 <= length <= k + 1:
        raise ValueError(f"mean acceptance length must be in [1, {k + 1}], got {length}")
    q = list(accumulate((max(p, PROFILE_FLOOR) for p in profile), min))  # running minimum
    want = length - 1.0

    def total(s: float) -> float:
        return sum(min(1.0, s * x) for x in q)

    lo, hi = 0.0, 1.0 / q[-1]  # total(hi) == k
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total(mid) < want else (lo, mid)
    return [round(min(1.0, hi * x), 6) for x in q]


MODEL_GRID_POINTS = 21  # taus per concurrency at which the model curve is tabulated


@dataclass
class CurvePoint:
    """One speculative engine with forced acceptance, against the baseline, at one concurrency."""

    concurrency: int
    asked_acceptance_length: float    # synthetic_acceptance_length given to vLLM
    num_drafts: int                   # verify steps of the measured speculative runs
    num_draft_tokens: int
    num_accepted_tokens: int
    baseline_tpot_s: float            # median over repeats (per-request median in a batch)
    speculative_tpot_s: float
    speedup: float                    # median over repeats of baseline TPOT / speculative TPOT
    speedup_low: float | None = None  # min and max of the per-repeat ratios
    speedup_high: float | None = None
    verify_step_s: float | None = None   # median verify step, drafting included
    propose_step_s: float | None = None  # median drafter time inside a verify step

    @property
    def mean_acceptance_length(self) -> float | None:
        return 1 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else None

    @property
    def acceptance_rate(self) -> float | None:
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens else None


@dataclass
class StepCosts:
    """Measured step times at one concurrency, the model curve's inputs."""

    concurrency: int
    decode_step_s: float    # baseline: median plain decode step
    verify_step_s: float    # speculative: median verify step (k + 1 tokens per request)
    propose_step_s: float   # the drafter's share of that step (0 for none measured)
    anatomy: KindCosts | None = None  # step anatomy medians; None when derived, or older

    def speedup(self, tau: float) -> float:
        """Measured-cost model: tau tokens per verify step against one per decode step."""
        return theory.measured_cost_speedup(tau, self.decode_step_s, self.verify_step_s)

    @property
    def break_even_length(self) -> float:
        return theory.measured_break_even_acceptance_length(self.decode_step_s,
                                                            self.verify_step_s)


@dataclass
class TippingCurve:
    """Speedup against acceptance for one model pair and k, on one device and vLLM."""

    kind: str                   # MEASURED or DERIVED
    model: str                  # the target as given ("default", a folder or a hub id)
    method: str
    draft_model: str | None
    k: int
    device: str                 # "cpu" | "gpu"
    vllm_version: str
    date: str                   # ISO date of the measurement
    # the engines' resolved dtype: a verify pass costs another multiple of a decode
    # step in float32 than in bf16, so curves never mix
    dtype: str = "bfloat16"     # files from before it was recorded were all bf16
    max_tokens: int = 0
    repeats: int = 0
    pair_id: str | None = None
    synthetic: bool = True      # measured with forced acceptance: timings only
    points: list[CurvePoint] = field(default_factory=list)
    step_costs: list[StepCosts] = field(default_factory=list)
    source: str | None = None   # DERIVED: the measured curve whose step costs it uses
    note: str = ""
    # How acceptance was forced (FORM_WORDS); the profile the rates were shaped like.
    acceptance_form: str = LENGTH_FORM  # files from before it was recorded used the length
    acceptance_profile: list[float] | None = None

    @property
    def concurrencies(self) -> list[int]:
        return sorted({c.concurrency for c in self.step_costs} |
                      {p.concurrency for p in self.points})

    def points_at(self, concurrency: int) -> list[CurvePoint]:
        return sorted((p for p in self.points if p.concurrency == concurrency),
                      key=lambda p: p.mean_acceptance_length or 0.0)

    def costs_at(self, concurrency: int) -> StepCosts | None:
        return next((c for c in self.step_costs if c.concurrency == concurrency), None)

    def break_even_length(self, concurrency: int) -> tuple[float | None, str]:
        """Mean acceptance length where speedup = 1, and what it comes from:
        interpolated on the measured points where they cross 1, else the model's."""
        pts = self.points_at(concurrency)
        # more acceptance never makes speculation slower: a later dip is noise
        be = crossing([p.mean_acceptance_length for p in pts], [p.speedup for p in pts],
                      rising_only=True).at
        if be is not None:
            return be, MEASURED
        costs = self.costs_at(concurrency)
        return (None, "") if costs is None else (costs.break_even_length, "model")

    def break_even_rate(self, concurrency: int) -> tuple[float | None, str]:
        tau, source = self.break_even_length(concurrency)
        return (None if tau is None else theory.acceptance_rate_from_length(tau, self.k)), source

    @property
    def label(self) -> str:
        draft = f" + {self.draft_model}" if self.draft_model else ""
        return (f"{self.model}{draft}, {self.method} k={self.k}, {self.device} {self.dtype}, "
                f"vLLM {self.vllm_version}")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for p, rec in zip(d["points"], self.points, strict=True):
            p.update(mean_acceptance_length=rec.mean_acceptance_length,
                     acceptance_rate=rec.acceptance_rate)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TippingCurve:
        return cls(**known(cls, d) | {
            "points": [build(CurvePoint, p) for p in d.get("points", [])],
            "step_costs": [StepCosts(**{**c, "anatomy": build(KindCosts, c["anatomy"])
                                        if c.get("anatomy") else None})
                           for c in d.get("step_costs", [])]})


CSV_COLUMNS = ["series", "concurrency", "asked_acceptance_length", "mean_acceptance_length",
               "acceptance_rate", "speedup", "speedup_low", "speedup_high", "model_speedup",
               "baseline_tpot_ms", "speculative_tpot_ms", "verify_step_ms"]


def to_csv(curve: TippingCurve, path=None) -> str | None:
    """One row per measured point, with the model's prediction at its acceptance, then
    the model curve at ``MODEL_GRID_POINTS`` taus from 1 to k + 1 per concurrency, one
    CSV (``series`` tells them apart)."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for p in sorted(curve.points, key=lambda p: (p.concurrency, p.asked_acceptance_length)):
        costs, tau = curve.costs_at(p.concurrency), p.mean_acceptance_length
        # concurrency to speedup_high: the point's own fields
        rows.append({"series": "measured", **{c: getattr(p, c) for c in CSV_COLUMNS[1:8]},
                     "model_speedup": costs.speedup(tau) if costs and tau else None,
                     "baseline_tpot_ms": p.baseline_tpot_s * 1e3,
                     "speculative_tpot_ms": p.speculative_tpot_s * 1e3,
                     "verify_step_ms": None if p.verify_step_s is None else p.verify_step_s * 1e3})
    for costs in curve.step_costs:
        for i in range(MODEL_GRID_POINTS):
            tau = 1.0 + curve.k * i / (MODEL_GRID_POINTS - 1)
            rows.append({"series": "model", "concurrency": costs.concurrency,
                         "mean_acceptance_length": tau,
                         "acceptance_rate": theory.acceptance_rate_from_length(tau, curve.k),
                         "speedup": costs.speedup(tau)})
    return pd.DataFrame(rows, columns=CSV_COLUMNS).to_csv(path, index=False)


def derive_lookup_curve(measured: TippingCurve, method: str, k: int,
                        lookup_step_s: float = 0.0, date: str | None = None) -> TippingCurve:
    """A lookup proposer's curve at ``k`` from a measured curve of the same target: the
    target's verify cost linear in tokens verified (one token: a decode step; k_m + 1:
    the measured verify step less its drafter's time), plus the lookup's own time."""
    costs = []
    for mc in measured.step_costs:  # the target's verify step: the measured one less its drafter
        per_token_s = (mc.verify_step_s - mc.propose_step_s - mc.decode_step_s) / measured.k
        costs.append(StepCosts(mc.concurrency, mc.decode_step_s,
                               mc.decode_step_s + per_token_s * k + lookup_step_s,
                               lookup_step_s))
    return TippingCurve(
        kind=DERIVED, model=measured.model, method=method, draft_model=None, k=k,
        device=measured.device, dtype=measured.dtype, vllm_version=measured.vllm_version,
        date=date or measured.date, synthetic=False, step_costs=costs,
        source=cache_name(measured),
        note=(f"derived from measured step costs: the target's verify cost from "
              f"{measured.method} ({measured.draft_model}) k={measured.k} with its drafter's "
              f"time taken out, plus the {method} lookup's measured time"))


def slug(text: str | None) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "--", text or "none").strip("-") or "none"


def cache_name(curve_or_key: TippingCurve | tuple) -> str:
    """File name of a curve: model, method, draft, k, device, dtype, vLLM version.

    Example:
        >>> cache_name(("meta-llama/Llama-3.1-8B-Instruct", "eagle3", "yuhuili/EAGLE3", 4,
        ...             "gpu", "bfloat16", "0.33.0"))
        'meta-llama--Llama-3.1-8B-Instruct__eagle3__yuhuili--EAGLE3__k4__gpu-bfloat16__vllm-0.33.0.json'
    """
    if isinstance(curve_or_key, TippingCurve):
        c = curve_or_key
        curve_or_key = (c.model, c.method, c.draft_model, c.k, c.device, c.dtype, c.vllm_version)
    model, method, draft, k, device, dtype, version = curve_or_key
    return (f"{slug(model)}__{slug(method)}__{slug(draft)}__k{int(k)}__{slug(device)}"
            f"-{slug(dtype)}__vllm-{slug(version)}.json")
