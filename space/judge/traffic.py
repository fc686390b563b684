"""A traffic run's answer (pure, no vLLM): per group (``summarize_group``), for the
whole traffic (a ratio of totals over the groups, each weighted by its output tokens
in the traffic, so a sample never changes the traffic's mix), what to deploy
(``deployment``), and all of it in words and as CSV. docs/traffic.md tells the rules.
"""
from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from space.judge import deploy, dynamic_k, estimate, intervals, measure
from space.judge.checklist import WORTH_IT_SPEEDUP, evaluate, more_prompts
from space.judge.curves import TippingCurve
from space.judge.predicted import Predicted
from space.judge.predicted import advice as advice_for
from space.judge.predicted import predict as predict_from_acceptance
from space.records.run import RunConfig
from space.records.trace import CompareRecord, busy_server_sentence, other_requests
from space.records.verdict import UNDECIDED, WORTH_IT, Checklist, Verdict

Weighting = Literal["responses", "measured"]
Speculation = Literal["on", "off", "route"]
GROUP_COLUMNS = ["group", "requests", "prompts", "acceptance_rate", "mean_acceptance_length",
                 "speedup", "speedup_ci", "prediction_interval", "prediction_prompts",
                 "speedup_text", "basis", "tpot_speedup", "e2e_speedup", "e2e_speedup_ci",
                 "ttft_share", "prompts_to_decide", "predicted_speedup", "predicted_from",
                 "advice", "speedup_low", "speedup_high",
                 "output_token_share", "verdict"]
PROMPT_COLUMNS = ["group", "line", "speedup", "acceptance_rate", "mean_acceptance_length",
                  "prompt_tokens", "output_tokens", "response_tokens", "outputs_identical",
                  "verdict"]


@dataclass
class TrafficItem:
    """One measured request of the file, its whole comparison kept (token view)."""

    group: str
    line: int                         # its line in the file
    compare: CompareRecord
    temperature: float = 0.0          # the request's (the file's, else the run's)
    response_tokens: int | None = None  # the file's recorded response, in tokens

    def row(self) -> dict[str, Any]:
        c, s = self.compare, self.compare.speculative
        return {"group": self.group, "line": self.line, "speedup": c.speedup,
                "acceptance_rate": s.acceptance_rate, "mean_acceptance_length": s.mean_acceptance_length,
                "prompt_tokens": len(s.prompt_token_ids), "output_tokens": len(s.output_token_ids),
                "response_tokens": self.response_tokens, "outputs_identical": c.outputs_identical,
                "verdict": c.checklist.verdict if c.checklist else None}


@dataclass
class GroupSummary:
    group: str
    requests: int                      # in the file
    prompts: int                       # measured
    acceptance_rate: float | None      # pooled over the group's runs
    mean_acceptance_length: float | None
    speedup: float                     # ratio of totals on ``figures.basis`` (estimate.py)
    speedup_spread: tuple[float, float] | None  # min, max of per-prompt ratios (context)
    output_tokens: float               # the group's output tokens in the traffic (its weight)
    checklist: Checklist
    figures: intervals.Figures         # intervals, prediction, both bases
    pairs: estimate.Paired             # per-token TPOTs: the traffic's interval
    output_token_share: float = 0.0    # of the traffic's output tokens
    prompts_to_decide: int | None = None      # undecided: prompts in all likely to decide
    predicted: Predicted | None = None        # from its acceptance and step costs
    advice: str | None = None                 # predicted outside the interval: which to believe
    drafted_share: float | None = None        # of its decode-phase steps (measure.drafted_share)

    @property
    def verdict(self) -> Verdict:
        return self.checklist.verdict

    @property
    def gains(self) -> bool:
        return self.verdict == WORTH_IT

    @property
    def undecided(self) -> bool:
        return self.verdict == UNDECIDED

    def row(self) -> dict[str, Any]:
        """The GROUP_COLUMNS: this summary's own fields, its figures' and these."""
        (low, high), f, p = self.speedup_spread or (None, None), self.figures, self.predicted
        other = {"speedup_ci": _pair(f.ci), "prediction_interval": _pair(f.prediction),
                 "prediction_prompts": f.predict_prompts,
                 "speedup_text": estimate.describe(f.speedup, f.ci, f.prompts),
                 "e2e_speedup_ci": _pair(f.e2e_ci), "speedup_low": low, "speedup_high": high,
                 "predicted_speedup": p.speedup if p else None, "predicted_from": p.source if p else None,
                 **{c: getattr(f, c) for c in ("basis", "tpot_speedup", "e2e_speedup", "ttft_share")}}
        return {c: other[c] if c in other else getattr(self, c) for c in GROUP_COLUMNS}


def _pair(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [round(interval[0], 4), round(interval[1], 4)]


def summarize_group(group: str, items: Sequence[TrafficItem], requests: int,
                    response_tokens: int | None, headroom: Mapping[str, Any] | None,
                    concurrency: int, predict_prompts: int, curve: TippingCurve | None,
                    busy: bool) -> GroupSummary:
    """One group's figures and checklist from its measured items; ``headroom``: the
    break-even of this machine's cached tipping curve (space.runs.machine_inputs).
    ``busy``: other work shared the machine, so the timings are not comparable: the
    verdict rests on the predicted figure, with the measured interval's relative
    width, when its step costs come from a tipping curve (measured once, alone)."""
    cmps = [it.compare for it in items]
    spread = measure.spread([c.speedup for c in cmps] if len(cmps) > 1
                            else measure.repeat_speedups(cmps[0]))
    fig = intervals.group_figures(cmps, predict_prompts)
    temps = {it.temperature for it in items}  # the checklist's context line: one they share
    inputs = measure.inputs_from_runs(
        [c.baseline for c in cmps], [c.speculative for c in cmps], speedup=fig.speedup,
        speedup_spread=spread, temperature=temps.pop() if len(temps) == 1 else None,
        context=measure.Context(task_type=group, concurrency=concurrency,
                                task_note=f"the traffic's requests grouped as {group!r}"),
        headroom=headroom)
    inputs = replace(inputs, speedup_ci=fig.ci, speedup_prompts=len(cmps), speedup_basis=fig.basis,
                     speedup_repeats=len(cmps[0].baseline_runs) or 1,
                     needs_interval=True,  # a group's verdict is its interval's
                     prompt_verdicts={f"line {it.line}": it.compare.checklist.verdict for it in items
                                      if it.compare.checklist} if len(items) > 1 else None)
    checklist = evaluate(inputs)
    drafted = measure.drafted_share([c.speculative for c in cmps])
    pred = predict_from_acceptance(inputs.mean_acceptance_length, inputs.k, inputs.method,
                                   concurrency, curve, checklist, drafted)
    if busy and pred is not None and pred.from_curve and fig.ci is not None and fig.speedup > 0:
        scale = pred.speedup / fig.speedup
        inputs.speedup_median, inputs.speedup_basis = pred.speedup, "predicted"
        inputs.speedup_ci = (fig.ci[0] * scale, fig.ci[1] * scale)
        checklist = evaluate(inputs)
    # its weight: the file's responses when given, else requests x the mean measured output
    weight = (float(response_tokens) if response_tokens is not None else
              requests * statistics.mean(len(c.speculative.output_token_ids) for c in cmps))
    # undecided: prompts in all likely to decide; one run has no interval, a second gives one
    to_decide = None if checklist.verdict != UNDECIDED else (
        more_prompts(inputs) if inputs.speedup_ci is not None else len(cmps) + 1)
    return GroupSummary(group, requests, len(items), inputs.acceptance_rate,
                        inputs.mean_acceptance_length, fig.speedup, spread, weight,
                        checklist, fig, intervals.paired(cmps), prompts_to_decide=to_decide,
                        predicted=pred, advice=advice_for(pred, fig.ci, busy=None),
                        drafted_share=drafted)


@dataclass
class Deployment:
    """What to serve, from the groups' verdicts."""

    speculation: Speculation     # on for all, off, or on for the routed groups only
    without_routing: Literal["on", "off"]  # with one deployment for every request
    k: int | None                # the k measured; None with speculation off
    route_groups: list[str]      # groups to send to the speculative deployment
    command: str                 # `vllm serve` with speculation (the plain one when off)
    plain_command: str           # `vllm serve` without it
    concurrency: int = 1         # requests at once when the k was measured
    undecided: list[str] = field(default_factory=list)  # never routed: measure more
    end_to_end: list[str] = field(default_factory=list)  # groups decided on request time
    tpot_groups: int = 0         # how many groups were decided on TPOT

    def describe(self) -> str:
        if self.speculation == "off":
            lines = ["speculative decoding: off (no group gains)\n" + self.plain_command]
        else:
            head = (f"speculative decoding: on for all traffic, k={self.k}"
                    if self.speculation == "on" else
                    f"speculative decoding: route {', '.join(self.route_groups)} to a "
                    f"speculative deployment (k={self.k}), the rest to a plain one; with one "
                    f"deployment for everything: {self.without_routing}")
            plain = [f"plain: {self.plain_command}"] if self.speculation == "route" else []
            lines = [head, f"speculative: {self.command}", *plain,
                     f"(k={self.k} as measured, {at(self.concurrency)})"]
        if self.undecided:
            lines.append(f"left undecided, not routed: {', '.join(self.undecided)} (their "
                         "intervals straddle 1.05x or 1.10x; measure more: --until-decided)")
        lines.append(f"decided on end-to-end time (TTFT over 20 % of request time): "
                     f"{', '.join(self.end_to_end)}; on TPOT: "
                     + ("the other groups" if self.tpot_groups else "none") if self.end_to_end
                     else "decided on TPOT (TTFT under 20 % of request time in every group)")
        return "\n".join(lines)


def deployment(groups: Sequence[GroupSummary], config: RunConfig, low: float | None,
               concurrency: int) -> Deployment:
    """On when every group gains, off when none does, else route the gaining
    groups (an undecided group never is). One deployment for all is on only if
    ``low``, the traffic's interval's low end (else its point estimate), clears the
    worth-it bar."""
    model = config.model_path or config.model
    spec_cfg = dict(config.speculative_config or {})  # the run's, with its draft's path
    draft = config.draft_path or config.draft_model
    if draft and spec_cfg.get("model"):
        spec_cfg["model"] = draft
    gaining = [g.group for g in groups if g.gains]
    plain = deploy.serve_command(model, None)
    overall: Literal["on", "off"] = ("on" if low is not None and low >= WORTH_IT_SPEEDUP
                                     and gaining else "off")
    end_to_end = [g.group for g in groups if g.figures.basis == "end-to-end"]
    speculation: Speculation = ("off" if not gaining else
                                "on" if len(gaining) == len(groups) else "route")
    return Deployment(speculation, "on" if speculation == "on" else overall,
                      (config.k or None) if gaining else None, gaining,
                      deploy.serve_command(model, spec_cfg) if gaining else plain,
                      plain, concurrency, undecided=[g.group for g in groups if g.undecided],
                      end_to_end=end_to_end, tpot_groups=len(groups) - len(end_to_end))


@dataclass
class TrafficResult:
    """A traffic run: how its groups were made, every measured prompt, the answer."""

    source: str                   # the file's name
    how: str                      # how the groups were made and sampled
    config: RunConfig             # the speculative engine's config record
    repeats: int
    max_tokens: int               # the run's, where the file gives none
    weighting: Weighting
    items: list[TrafficItem]
    groups: list[GroupSummary]
    weighted_speedup: float | None
    gaining_share: float
    deployment: Deployment
    weighted_speedup_ci: tuple[float, float] | None = None
    skipped: list[str] = field(default_factory=list)  # lines not imported or not run, why
    concurrency: int = 1          # requests of a group run at once
    schedule: dynamic_k.Schedule | None = None  # k per batch size for the gaining groups
    # --until-decided: {"rounds", "added": {group: prompts}, "stopped": why, "open": [...]}
    until_decided: dict[str, Any] | None = None
    validation: dict[str, Any] | None = None  # --validate: space.judge.validate.summary
    busy: dict[str, Any] | None = None  # other processes' CPU during the run (observe.busy)

    def mark_busy(self, busy: dict[str, Any] | None) -> None:
        """Record what else ran on the machine; when it was busy, the groups' advice
        turns to the predicted figures (acceptance is exact, the timings are not)."""
        self.busy = busy
        is_busy = None if busy is None else bool(busy.get("busy"))
        for g in self.groups:
            g.advice = advice_for(g.predicted, g.figures.ci, is_busy)

    def by_group(self) -> dict[str, list[CompareRecord]]:
        """Each group's comparisons, in the order they were measured."""
        out: dict[str, list[CompareRecord]] = {}
        for it in self.items:
            out.setdefault(it.group, []).append(it.compare)
        return out

    def group_rows(self) -> list[dict[str, Any]]:
        return [g.row() for g in self.groups]

    def rows(self) -> list[dict[str, Any]]:
        return [it.row() for it in self.items]

    def summary(self) -> dict[str, Any]:
        """Everything but the per-prompt runs (all that a private history keeps)."""
        d = {k: getattr(self, k) for k in ("source", "how", "config", "repeats", "max_tokens",
                                           "weighting", "weighted_speedup", "gaining_share",
                                           "skipped", "concurrency", "until_decided",
                                           "validation", "busy")}
        d.update(weighted_speedup_ci=_pair(self.weighted_speedup_ci),
                 groups=[{**g.row(), "output_tokens": g.output_tokens,
                          "checklist": g.checklist.to_dict()} for g in self.groups],
                 config=self.config.to_dict(), prompts=self.rows(),
                 deployment=asdict(self.deployment),
                 schedule=asdict(self.schedule) if self.schedule else None, answer=describe(self))
        return d

    def to_dict(self, keep_prompts: bool = True) -> dict[str, Any]:
        """``summary()`` and, with ``keep_prompts``, every prompt's comparison."""
        d = self.summary()
        if not keep_prompts:  # a skipped line's reason may quote the file: its line only
            d["skipped"] = [s.split(":")[0] for s in self.skipped]
            d["answer"] = describe(self, skipped_reasons=False)
        else:
            d["items"] = [{"group": it.group, "line": it.line, "temperature": it.temperature,
                           "response_tokens": it.response_tokens,
                           "compare": it.compare.to_dict()} for it in self.items]
        return d


def answer(source: str, how: str, items: list[TrafficItem], counts: Mapping[str, int],
           response_tokens: Mapping[str, int] | None, *, repeats: int, max_tokens: int,
           skipped: Sequence[str] = (), headroom: Mapping[str, Any] | None = None,
           concurrency: int = 1, curve: TippingCurve | None = None,
           predict_prompts: int = estimate.PREDICT_PROMPTS,
           busy: Mapping[str, Any] | None = None) -> TrafficResult:
    """Every group summarized, the traffic's figures and the deployment.
    ``counts``: requests in the file per group; ``response_tokens``: the file's
    responses in tokens per group when every request has one; ``curve``: this
    machine's cached tipping curve, whose step costs give the k per batch size;
    ``busy``: ``space.observe.busy.Busy.to_dict()``, None when not recorded."""
    if not items:
        raise ValueError("no prompt was measured")
    by_group: dict[str, list[TrafficItem]] = {}
    for it in items:
        by_group.setdefault(it.group, []).append(it)
    groups = [summarize_group(g, its, counts.get(g, len(its)),
                              response_tokens.get(g) if response_tokens else None, headroom,
                              concurrency, predict_prompts, curve, busy=bool(busy and busy.get("busy")))
              for g, its in by_group.items()]
    total = sum(g.output_tokens for g in groups)
    for g in groups:
        g.output_token_share = g.output_tokens / total if total > 0 else 0.0
    gaining_share = sum(g.output_tokens for g in groups if g.gains) / total if total > 0 else 0.0
    # the traffic's speedup sum(w B) / sum(w S): w a group's output tokens, B and S its
    # mean per-token TPOTs; its interval resamples every group, the mix fixed
    pairs, weights = [g.pairs for g in groups], [g.output_tokens for g in groups]
    speed = estimate.weighted_ratio(pairs, weights)
    speed_ci = estimate.weighted_interval(pairs, weights)
    config = items[0].compare.speculative.config
    gainers = [dynamic_k.Gainer(g.group, g.mean_acceptance_length, g.output_tokens,
                                1.0 if g.drafted_share is None else g.drafted_share)
               for g in groups if g.gains and g.mean_acceptance_length is not None]
    result = TrafficResult(source, how, config, repeats, max_tokens,
                           "responses" if response_tokens else "measured", items, groups,
                           speed, gaining_share,
                           deployment(groups, config, speed_ci[0] if speed_ci else speed,
                                      concurrency),
                           speed_ci, list(skipped), concurrency,
                           dynamic_k.predict(gainers, config, curve, concurrency))
    if busy is not None:
        result.mark_busy(dict(busy))
    return result


# The answer in words and as CSV

def at(concurrency: int) -> str:
    return ("one request at a time" if concurrency == 1
            else f"{concurrency} requests at once")


def to_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """Rows as CSV text (None as an empty cell, an interval as "[lo, hi]")."""
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows([{k: _cell(r.get(k)) for k in columns} for r in rows])
    return out.getvalue()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return value


def _group_line(g: GroupSummary) -> str:
    """'translation: 2.27x (90 % CI 1.52-2.90, 3 prompts) TPOT; ...; worth-it', its advice."""
    f = g.figures
    line = f"{g.group}: {estimate.describe(f.speedup, f.ci, f.prompts)}" + (
        f" end-to-end (TTFT {f.ttft_share:.0%} of request time; TPOT {f.tpot_speedup:.2f}x)"
        if f.basis == "end-to-end" else f" TPOT; end-to-end {f.e2e_speedup:.2f}x")
    if f.prediction is not None:
        line += (f"; the next {f.predict_prompts} prompts: {f.prediction[0]:.2f}-"
                 f"{f.prediction[1]:.2f}x")
    if g.predicted is not None:
        line += f"; predicted from its acceptance {g.predicted.speedup:.2f}x"
        if g.drafted_share is not None:
            line += f" ({g.drafted_share:.0%} of its steps drafted)"
    line += f"; {g.verdict}"
    if g.undecided:
        need = g.prompts_to_decide
        line += (", no number of prompts would decide it (the estimate sits on a bar)"
                 if need is None else
                 f", more than {estimate.MAX_MORE_PROMPTS} prompts would be needed"
                 if need > estimate.MAX_MORE_PROMPTS else
                 f", about {need} prompts in all would decide it")
    return line + (f"\n  {g.group}: {g.advice}" if g.advice else "")


def validation_text(v: Mapping[str, Any]) -> str:
    """--validate's result in words (from ``space.judge.validate.summary``)."""
    head = (f"validation: the second half fell inside the first half's prediction interval "
            f"in {v.get('inside', 0)} of {v.get('judged', 0)} groups")
    lines = [head] if v.get("judged") else []
    for c in v.get("checks", []):
        pred = c.get("prediction")
        lines.append(f"  {c['group']}: no prediction from {c['first_prompts']} prompts"
                     if pred is None else
                     f"  {c['group']}: first {c['first_prompts']} prompts {c['first_speedup']:.2f}x"
                     f" ({c['basis']}) predict {pred[0]:.2f}-{pred[1]:.2f}x for the other "
                     f"{c['second_prompts']}; they gave {c['second_speedup']:.2f}x: "
                     + ("inside" if c["inside"] else "OUTSIDE"))
    lines += [f"  {line}" if lines else f"validation: {line}" for line in v.get("too_few", [])]
    return "\n".join(lines)


def until_decided_line(u: Mapping[str, Any]) -> str:
    """'measured until decided: 2 rounds, + 4 prompts (code 2, chat 2); stopped: ...'"""
    added = u.get("added") or {}
    per = ", ".join(f"{g} {n}" for g, n in added.items())
    return (f"measured until decided: {u.get('rounds', 0)} rounds, + {sum(added.values())} "
            f"prompts" + (f" ({per})" if per else "") + f"; stopped: {u.get('stopped')}"
            + (f"; still undecided: {', '.join(u['open'])}" if u.get("open") else ""))


def busy_requests(r: TrafficResult) -> int:
    """The most other requests a server served during any of the run's comparisons."""
    return max((other_requests(run) for it in r.items
                for run in (it.compare.baseline, it.compare.speculative)), default=0)


def describe(r: TrafficResult, skipped_reasons: bool = True) -> str:
    """The answer in words, for the terminal."""
    lines = [r.how + f"; measured {at(r.concurrency)}"
             + (" (a group's prompts in batches)" if r.concurrency > 1 else ""),
             f"{'group':<22}{'reqs':>5}{'runs':>5}{'accept':>8}{'tau':>6}"
                    f"{'speedup':>9}{'90 % CI':>12}{'tokens':>8}  verdict"]
    for g in r.groups:
        rate = "n/a" if g.acceptance_rate is None else f"{g.acceptance_rate:.0%}"
        tau = "n/a" if g.mean_acceptance_length is None else f"{g.mean_acceptance_length:.2f}"
        ci = g.figures.ci
        ci_txt = f"{ci[0]:.2f}-{ci[1]:.2f}" if ci else "-"
        lines.append(f"{g.group[:21]:<22}{g.requests:>5}{g.prompts:>5}{rate:>8}{tau:>6}"
                     f"{g.speedup:>8.2f}x{ci_txt:>12}{g.output_token_share:>8.0%}  {g.verdict}")
    lines += [_group_line(g) for g in r.groups]
    if r.busy and r.busy.get("busy"):
        lines.append(f"this machine was busy: {busy_used(r.busy)} during the run: timings "
                     f"are not comparable; the predicted figures (acceptance x this machine's "
                     f"step costs) are the ones to trust")
    if sources := sorted({g.predicted.source for g in r.groups if g.predicted is not None}):
        lines.append("predicted = (f tau + 1 - f) x decode step / (f verify step + (1 - f) "
                     "plain step), f the share of steps that drafted, tau the mean acceptance "
                     "length; step costs from " + "; ".join(sources))
    ws, ci = r.weighted_speedup, r.weighted_speedup_ci
    ws_txt = "n/a" if ws is None else f"{ws:.2f}x" + (
        f" ({estimate.CONFIDENCE * 100:.0f} % CI {ci[0]:.2f}-{ci[1]:.2f})" if ci else "")
    source = ("the file's responses" if r.weighting == "responses"
              else "the measured output tokens (the file has no responses)")
    lines.append(f"traffic-weighted speedup {ws_txt}; {r.gaining_share:.0%} of the output tokens "
                 f"are in groups that gain (weights from {source})")
    busy = busy_requests(r)
    if busy:
        lines.append(f"undecided: {busy_server_sentence(busy)}; measure again on idle servers")
    lines.append(r.deployment.describe())
    if r.until_decided is not None:
        lines.append(until_decided_line(r.until_decided))
    if r.validation is not None:
        lines.append(validation_text(r.validation))
    if r.schedule is not None:
        lines.append(r.schedule.describe())
    if r.skipped:
        shown = r.skipped[:5] if skipped_reasons else [s.split(":")[0] for s in r.skipped[:5]]
        lines.append(f"skipped {len(r.skipped)}: " + "; ".join(shown)
                     + ("; ..." if len(r.skipped) > 5 else ""))
    return "\n".join(lines)


def busy_used(busy: Mapping[str, Any]) -> str:
    """What other work used during a run, from ``space.observe.busy.Busy.to_dict()``."""
    parts = [f"{busy['share']:.0%} of its CPU time"]
    if busy.get("gpu_share") is not None:
        parts.append(f"{busy['gpu_share']:.0%} of the GPU's SM time "
                     f"({busy.get('gpu_processes')} other process(es))")
    return "other processes used " + " and ".join(parts)
