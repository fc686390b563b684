"""A traffic run's answer in words and as CSV (pure); the figures are
``space.judge.traffic``'s."""
from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from space.judge import estimate
from space.records.trace import busy_server_sentence, other_requests

if TYPE_CHECKING:
    from space.judge.traffic import GroupSummary, TrafficResult


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
    line = f"{g.group}: {f.words()}"
    if f.basis == "end-to-end":
        line += f" end-to-end (TTFT {f.ttft_share:.0%} of request time; TPOT {f.tpot_speedup:.2f}x)"
    else:
        line += f" TPOT; end-to-end {f.e2e_speedup:.2f}x"
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
        if pred is None:
            lines.append(f"  {c['group']}: no prediction from {c['first_prompts']} prompts")
            continue
        lines.append(f"  {c['group']}: first {c['first_prompts']} prompts {c['first_speedup']:.2f}x"
                     f" ({c['basis']}) predict {pred[0]:.2f}-{pred[1]:.2f}x for the other "
                     f"{c['second_prompts']}; they gave {c['second_speedup']:.2f}x: "
                     + ("inside" if c["inside"] else "OUTSIDE"))
    lines += [f"  {line}" if lines else f"validation: {line}" for line in v.get("too_few", [])]
    return "\n".join(lines)


def until_decided_line(u: Mapping[str, Any]) -> str:
    """'measured until decided: 2 rounds, + 4 prompts (code 2, chat 2); stopped: ...'"""
    added = u.get("added") or {}
    per = ", ".join(f"{g} {n}" for g, n in added.items())
    line = (f"measured until decided: {u.get('rounds', 0)} rounds, + {sum(added.values())} "
            f"prompts" + (f" ({per})" if per else "") + f"; stopped: {u.get('stopped')}")
    if u.get("open"):
        line += f"; still undecided: {', '.join(u['open'])}"
    return line


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
    if any(g.predicted is not None for g in r.groups):
        sources = sorted({g.predicted.source for g in r.groups if g.predicted is not None})
        lines.append("predicted = (f tau + 1 - f) x decode step / (f verify step + (1 - f) "
                     "plain step), f the share of steps that drafted, tau the mean acceptance "
                     "length; step costs from " + "; ".join(sources))
    ws = "n/a" if r.weighted_speedup is None else f"{r.weighted_speedup:.2f}x"
    if r.weighted_speedup is not None and r.weighted_speedup_ci is not None:
        lo, hi = r.weighted_speedup_ci
        ws += f" ({estimate.CONFIDENCE * 100:.0f} % CI {lo:.2f}-{hi:.2f})"
    source = ("the file's responses" if r.weighting == "responses"
              else "the measured output tokens (the file has no responses)")
    lines.append(f"traffic-weighted speedup {ws}; {r.gaining_share:.0%} of the output tokens "
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
