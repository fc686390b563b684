"""A k per batch size for measured traffic, predicted from its groups' acceptance and
this machine's step costs (a cached tipping curve); one deployment serves every gaining
group (pure; docs/traffic.md tells the model and its measured error).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from space.judge import deploy, estimate, theory
from space.judge.checklist import NO_GAIN_SPEEDUP
from space.judge.curves import LOOKUP_METHODS, StepCosts, TippingCurve
from space.records.run import SERVER, RunConfig

K_CHOICES = tuple(range(1, 9))  # the k sweep's default values; the model is linear in k
# measured once by benchmarks/bench_schedule.py
MEASURED_ERROR = ("its error, measured once against a k x concurrency sweep (code edits, "
                  "k 1-8 x concurrency 1, 4, a 2-core EPYC): predicted speedups 1-17 % under "
                  "the measured ones, the best k right at concurrency 1 and one step off at 4 "
                  "(3 % of speedup lost); see docs/traffic.md")


@dataclass(frozen=True)
class Gainer:
    """A gaining group's measured figures: what the prediction starts from."""

    group: str
    mean_acceptance_length: float   # vLLM's, pooled over the group, at the measured k
    output_tokens: float            # its weight in the traffic
    drafted: float = 1.0            # share of its steps that drafted (measure.drafted_share)


def verify_step_s(costs: StepCosts, curve_k: int, k: int, lookup: bool) -> float:
    """Predicted verify step at ``k`` from a curve's step costs at ``curve_k``: the
    target's cost of one more verified token is u = (t_v - t_p - t_d) / k_c, so t_v(k) =
    t_d + u k + drafting (a lookup's t_p whatever k; a draft model's t_p k / k_c)."""
    per_token_s = max(0.0, (costs.verify_step_s - costs.propose_step_s - costs.decode_step_s)
                      / curve_k)  # noise can put verify under decode: a token is never < free
    draft_s = costs.propose_step_s if lookup else costs.propose_step_s * k / curve_k
    return costs.decode_step_s + per_token_s * k + draft_s


def plain_step_s(costs: StepCosts, lookup: bool) -> float:
    """A step that proposed nothing: a decode step, and a lookup's search that found
    nothing (a draft model drafts every step: it has no such step)."""
    return costs.decode_step_s + (costs.propose_step_s if lookup else 0.0)


def step_model_speedup(tau: float, decode_s: float, verify_s: float, plain_s: float,
                       drafted: float = 1.0) -> float:
    """(f tau + 1 - f) x t_d / (f t_v + (1 - f) t_plain): f of the steps verify drafts
    (tau tokens each), the others emit one token at a plain step's cost.

    Example: tau 3, decode 10 ms, verify 15 ms: 2.0 when every step drafts; when half
    find nothing (plain step 11 ms): 2 x 10 / 13 = 1.538.
        >>> step_model_speedup(3.0, 0.010, 0.015, 0.011), round(
        ...     step_model_speedup(3.0, 0.010, 0.015, 0.011, drafted=0.5), 3)
        (2.0, 1.538)
    """
    f = min(max(drafted, 0.0), 1.0)
    return (f * tau + 1 - f) * decode_s / (f * verify_s + (1 - f) * plain_s)


def predicted_speedup(alpha: float, k: int, costs: StepCosts, curve_k: int,
                      lookup: bool, drafted: float = 1.0) -> float:
    """``step_model_speedup`` at tau(alpha, k) (``drafted`` carries across k: whether a
    lookup finds a match does not depend on how many tokens it may propose)."""
    return step_model_speedup(theory.expected_tokens_per_step(alpha, k), costs.decode_step_s,
                              verify_step_s(costs, curve_k, k, lookup),
                              plain_step_s(costs, lookup), drafted)


@dataclass
class GroupPrediction:
    group: str
    alpha: float                       # per token, from its tau at the measured k
    choices: list[deploy.Choice]       # its own best k per concurrency (0: loses)
    at_measured: float | None = None   # the model at the measured k and concurrency


@dataclass
class Schedule:
    """The k and the batch-size schedule for the gaining groups, or why there is none."""

    measured_k: int
    measured_concurrency: int
    note: str                          # how it was derived, or what would give it
    curve: str = ""                    # the curve's label and date ("" without one)
    groups: list[GroupPrediction] = field(default_factory=list)
    config: deploy.DeployConfig | None = None  # the gaining groups together

    def describe(self) -> str:
        cfg = self.config
        if cfg is None:
            return self.note
        lines = [self.note]
        for g in self.groups:
            model = ("" if g.at_measured is None else
                     f"; at the measured k={self.measured_k}, c={self.measured_concurrency} "
                     f"the model says {g.at_measured:.2f}x")
            lines.append(f"  {g.group}: alpha {g.alpha:.2f}; best k {_best(g.choices)}{model}")
        lines.append("  the speculative deployment (gaining groups, token-weighted): "
                     + _best(cfg.choices))
        lines.append("  schedule: " + ("speculation loses at every concurrency of the curve"
                                       if cfg.speculative_config is None else
                                       f"num_speculative_tokens_per_batch_size {cfg.schedule}"))
        lines.append(f"  {cfg.command}")
        return "\n".join(lines)


def _best(choices: Sequence[deploy.Choice]) -> str:
    return ", ".join(f"c={c.concurrency}: k={c.k} ({c.speedup:.2f}x)" for c in choices)


def predict(gainers: Sequence[Gainer], config: RunConfig, curve: TippingCurve | None,
            measured_concurrency: int = 1,
            max_batch: int = deploy.DEFAULT_MAX_BATCH) -> Schedule | None:
    """The schedule for the gaining groups from ``curve``'s step costs; None when no
    group gains; without a curve (or one without step costs), a note saying what
    measures it. ``config``: the traffic's speculative engine (method, k, pair)."""
    if not gainers or not config.k:
        return None
    k_m = config.k
    if config.source == SERVER:
        return Schedule(k_m, measured_concurrency, (
            f"no k per batch size for the servers: it is predicted from a tipping "
            f"curve's step costs, and the curves cached here measure in-process "
            f"engines on this machine, not the servers' hardware. Through the "
            f"servers only their own k={k_m} is measured: start a speculative server "
            f"per k and measure each (`python -m space traffic` or `sweep "
            f"--variable concurrency` with --speculative-url)"))
    if curve is None or not curve.step_costs:
        return Schedule(k_m, measured_concurrency, (
            f"no k per batch size: no tipping curve of {config.method} k={k_m} for "
            f"this pair is cached on this machine ({config.device}, {config.dtype}). "
            "`python -m space tipping` with this pair and k measures its step costs per "
            "concurrency, or a k x concurrency sweep on a workload of these prompts (`python -m "
            'space sweep --workload WORKLOAD --variable k_x_concurrency --values "1,2,4 x 1,4"`) '
            "measures the schedule itself"))
    lookup = str(config.method) in LOOKUP_METHODS
    alphas = {g.group: theory.alpha_from_acceptance_length(g.mean_acceptance_length, k_m)
              for g in gainers}
    rows: list[dict[str, Any]] = []
    per_group: dict[str, list[dict[str, Any]]] = {g.group: [] for g in gainers}
    for costs in sorted(curve.step_costs, key=lambda c: c.concurrency):
        for k in K_CHOICES:
            s = {g.group: predicted_speedup(alphas[g.group], k, costs, curve.k, lookup, g.drafted)
                 for g in gainers}
            for g, v in s.items():
                per_group[g].append({"k": k, "concurrency": costs.concurrency, "speedup": v})
            rows.append({"k": k, "concurrency": costs.concurrency,
                         "speedup": estimate.harmonic([g.output_tokens for g in gainers],
                                                      [s[g.group] for g in gainers]) or 0.0})
    at = curve.costs_at(measured_concurrency)
    groups = [GroupPrediction(g.group, alphas[g.group], deploy.best_k(per_group[g.group]),
                              None if at is None else
                              predicted_speedup(alphas[g.group], k_m, at, curve.k, lookup, g.drafted))
              for g in gainers]
    label = f"{curve.label}, {curve.kind}, {curve.date[:10]}"
    note = (f"k per batch size, predicted (not measured) for the gaining groups: each "
            f"group's per-token acceptance alpha from its mean acceptance length at "
            f"k={k_m}, and this machine's step costs per concurrency from the tipping "
            f"curve {label} (decode step, verify cost per token"
            f"{', one lookup a step' if lookup else ', drafting per token'}); speedup "
            f"tau(alpha, k) x decode / verify(k), k {K_CHOICES[0]}..{K_CHOICES[-1]} (past "
            f"the curve's k={curve.k}, the cost per token is extrapolated), 0 below "
            f"{NO_GAIN_SPEEDUP}x; {MEASURED_ERROR}")
    return Schedule(k_m, measured_concurrency, note, label, groups,
                    deploy.derive_for_run(rows, config, max_batch))
