"""A traffic run's records and its answer: per group, for the whole traffic, and
what to deploy (pure: comparisons in, figures and words out; no vLLM).

Per group (``summarize_group``): the prompts measured, vLLM's acceptance rate
and mean acceptance length pooled over them (counters summed, as vLLM's
Prometheus counters pool), the median speedup over prompts with its spread
(min, max; over repeats when the group has one prompt), and the checklist's
verdict over the group, as a workload's (``space.runs.workloads.workload_checklist``).

For the traffic (``weighted_speedup``): a group's weight is its share of the
traffic's output tokens. Serving w_g tokens of group g costs w_g / s_g
baseline-token-times with speculation, so the traffic's speedup is the
token-weighted harmonic mean S = sum(w) / sum(w / s). The weights come from
the file's recorded responses when every request has one ("responses"), else
from the requests in the file times the group's mean measured output
("measured"): a sample never changes the traffic's mix.

A group *gains* when its verdict is worth-it. At concurrency N > 1 a group's
prompts ran N at once (``space/runs/traffic.py``): its speedup is the median
per-request TPOT ratio inside those batches, and its checklist reads N. For the
gaining groups, a k per batch size is predicted from their acceptance and this
machine's step costs (``space/judge/dynamic_k.py``).
"""
from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from space.judge import deploy, dynamic_k, measure
from space.judge.checklist import WORTH_IT_SPEEDUP, evaluate
from space.judge.curves import TippingCurve
from space.records.run import RunConfig
from space.records.trace import CompareRecord, busy_server_sentence, other_requests
from space.records.verdict import WORTH_IT, Checklist, Verdict

Weighting = Literal["responses", "measured"]
Speculation = Literal["on", "off", "route"]
GROUP_COLUMNS = ["group", "requests", "prompts", "acceptance_rate", "mean_acceptance_length",
                 "speedup", "speedup_low", "speedup_high", "output_token_share", "verdict"]
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
        c = self.compare
        return {"group": self.group, "line": self.line, "speedup": c.speedup,
                "acceptance_rate": c.speculative.acceptance_rate,
                "mean_acceptance_length": c.speculative.mean_acceptance_length,
                "prompt_tokens": len(c.speculative.prompt_token_ids),
                "output_tokens": len(c.speculative.output_token_ids),
                "response_tokens": self.response_tokens,
                "outputs_identical": c.outputs_identical,
                "verdict": c.checklist.verdict if c.checklist else None}


@dataclass
class GroupSummary:
    group: str
    requests: int                      # in the file
    prompts: int                       # measured
    acceptance_rate: float | None      # pooled over the group's runs
    mean_acceptance_length: float | None
    speedup: float                     # median over prompts of baseline / speculative TPOT
    speedup_spread: tuple[float, float] | None
    output_tokens: float               # the group's output tokens in the traffic (its weight)
    checklist: Checklist | None = None
    output_token_share: float = 0.0    # of the traffic's output tokens

    @property
    def verdict(self) -> Verdict | None:
        return self.checklist.verdict if self.checklist else None

    @property
    def gains(self) -> bool:
        return self.verdict == WORTH_IT

    def row(self) -> dict[str, Any]:
        low, high = self.speedup_spread or (None, None)
        return {"group": self.group, "requests": self.requests, "prompts": self.prompts,
                "acceptance_rate": self.acceptance_rate,
                "mean_acceptance_length": self.mean_acceptance_length,
                "speedup": self.speedup, "speedup_low": low, "speedup_high": high,
                "output_token_share": self.output_token_share, "verdict": self.verdict}


def group_weight(items: Sequence[TrafficItem], requests: int,
                 response_tokens: int | None) -> float:
    """The group's output tokens in the traffic: the file's responses when given,
    else its requests times the mean measured output of its sampled prompts.

    Example: 10 requests, 2 measured of 30 and 50 tokens -> 400.0 (no responses).
    """
    if response_tokens is not None:
        return float(response_tokens)
    return requests * statistics.mean(len(it.compare.speculative.output_token_ids)
                                      for it in items)


def summarize_group(group: str, items: Sequence[TrafficItem], requests: int,
                    response_tokens: int | None = None,
                    headroom: Mapping[str, Any] | None = None,
                    concurrency: int = 1) -> GroupSummary:
    """One group's figures and checklist from its measured items; ``headroom``: the
    break-even of this machine's cached tipping curve (space.runs.machine_inputs);
    ``concurrency``: requests that ran at once (the checklist's concurrency line)."""
    cmps = [it.compare for it in items]
    speedups = [c.speedup for c in cmps]
    spread = (measure.spread(speedups) if len(cmps) > 1
              else measure.spread(measure.repeat_speedups(cmps[0])))
    rate, length = measure.pooled_acceptance([c.speculative for c in cmps])
    speedup = statistics.median(speedups)
    inputs = measure.inputs_from_runs(
        [c.baseline for c in cmps], [c.speculative for c in cmps], speedup=speedup,
        speedup_spread=spread, temperature=_temperature(items),
        context=measure.Context(task_type=group, concurrency=concurrency,
                                task_note=f"the traffic's requests grouped as {group!r}"),
        headroom=headroom)
    if len(items) > 1:
        inputs.prompt_verdicts = {f"line {it.line}": it.compare.checklist.verdict
                                  for it in items if it.compare.checklist}
    return GroupSummary(group, requests, len(items), rate, length, speedup, spread,
                        group_weight(items, requests, response_tokens), evaluate(inputs))


def _temperature(items: Sequence[TrafficItem]) -> float | None:
    """The group's temperature when its prompts share one (the checklist's context line)."""
    temps = {it.temperature for it in items}
    return temps.pop() if len(temps) == 1 else None


def weighted_speedup(groups: Sequence[GroupSummary]) -> float | None:
    """The traffic's speedup: sum(w) / sum(w / s), w the groups' output tokens.

    Example: 300 tokens at 2.0x and 100 at 0.8x -> 400 / (150 + 125) = 1.4545...
    """
    total = sum(g.output_tokens for g in groups)
    cost = sum(g.output_tokens / g.speedup for g in groups if g.speedup > 0)
    return total / cost if total > 0 and cost > 0 else None


def gaining_share(groups: Sequence[GroupSummary]) -> float:
    """The share of the traffic's output tokens in groups that gain."""
    total = sum(g.output_tokens for g in groups)
    return sum(g.output_tokens for g in groups if g.gains) / total if total > 0 else 0.0


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

    def describe(self) -> str:
        if self.speculation == "off":
            return ("speculative decoding: off (no group gains)\n" + self.plain_command)
        if self.speculation == "on":
            head = f"speculative decoding: on for all traffic, k={self.k}"
        else:
            head = (f"speculative decoding: route {', '.join(self.route_groups)} to a "
                    f"speculative deployment (k={self.k}), the rest to a plain one; with one "
                    f"deployment for everything: {self.without_routing}")
        return "\n".join([head, f"speculative: {self.command}",
                          *([f"plain: {self.plain_command}"] if self.speculation == "route"
                            else []),
                          f"(k={self.k} as measured, {_at(self.concurrency)})"])


def _at(concurrency: int) -> str:
    return ("one request at a time" if concurrency == 1
            else f"{concurrency} requests at once")


def serve_config(config: RunConfig) -> tuple[str, dict[str, Any]]:
    """(model, ``--speculative-config``) of the run's speculative engine (its config record)."""
    spec = dict(config.speculative_config or {})
    draft = config.draft_path or config.draft_model
    if draft and spec.get("model"):
        spec["model"] = draft
    return config.model_path or config.model, spec


def deployment(groups: Sequence[GroupSummary], config: RunConfig,
               traffic_speedup: float | None,
               max_batch: int = deploy.DEFAULT_MAX_BATCH, concurrency: int = 1) -> Deployment:
    """On when every group gains, off when none does, else route the gaining
    groups; one deployment for all is on only if the traffic's speedup is
    clearly above 1 (the checklist's worth-it line, 1.10x)."""
    model, spec_cfg = serve_config(config)
    gaining = [g.group for g in groups if g.gains]
    plain = deploy.serve_command(model, None, max_batch)
    on = deploy.serve_command(model, spec_cfg, max_batch)
    k = config.k or None
    overall: Literal["on", "off"] = ("on" if traffic_speedup is not None
                                     and traffic_speedup >= WORTH_IT_SPEEDUP and gaining
                                     else "off")
    if not gaining:
        return Deployment("off", "off", None, [], plain, plain, concurrency)
    if len(gaining) == len(groups):
        return Deployment("on", "on", k, gaining, on, plain, concurrency)
    return Deployment("route", overall, k, gaining, on, plain, concurrency)


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
    skipped: list[str] = field(default_factory=list)  # lines not imported or not run, why
    concurrency: int = 1          # requests of a group run at once
    schedule: dynamic_k.Schedule | None = None  # k per batch size for the gaining groups

    def group_rows(self) -> list[dict[str, Any]]:
        return [g.row() for g in self.groups]

    def rows(self) -> list[dict[str, Any]]:
        return [it.row() for it in self.items]

    def summary(self) -> dict[str, Any]:
        """Everything but the per-prompt runs: the figures, the tables' rows, the answer
        in words. What the figures are drawn from, and all that a private history keeps."""
        from dataclasses import asdict

        d = {k: getattr(self, k) for k in ("source", "how", "config", "repeats", "max_tokens",
                                           "weighting", "weighted_speedup", "gaining_share",
                                           "skipped", "concurrency")}
        d["groups"] = [{**g.row(), "output_tokens": g.output_tokens,
                        "checklist": g.checklist.to_dict() if g.checklist else None}
                       for g in self.groups]
        d["config"] = self.config.to_dict()
        d["prompts"] = self.rows()
        d["deployment"] = asdict(self.deployment)
        d["schedule"] = self.schedule.to_dict() if self.schedule else None
        d["answer"] = describe(self)
        return d

    def to_dict(self, keep_prompts: bool = True) -> dict[str, Any]:
        """``summary()`` and, with ``keep_prompts``, every prompt's comparison (its
        text, tokens and steps) for the token view."""
        d = self.summary()
        if not keep_prompts:  # a skipped line's reason may quote the file: its line only
            d["skipped"] = [s.split(":")[0] for s in self.skipped]
            d["answer"] = describe(self, skipped_reasons=False)
        if keep_prompts:
            d["items"] = [{"group": it.group, "line": it.line, "temperature": it.temperature,
                           "response_tokens": it.response_tokens,
                           "compare": it.compare.to_dict()} for it in self.items]
        return d


def answer(source: str, how: str, items: list[TrafficItem], counts: Mapping[str, int],
           response_tokens: Mapping[str, int] | None, *, repeats: int, max_tokens: int,
           skipped: Sequence[str] = (), headroom: Mapping[str, Any] | None = None,
           concurrency: int = 1, curve: TippingCurve | None = None) -> TrafficResult:
    """Every group summarized, the traffic's figures and the deployment.

    ``counts``: requests in the file per group; ``response_tokens``: the file's
    responses in tokens per group when every request has one, else None;
    ``concurrency``: requests that ran at once; ``curve``: this machine's cached
    tipping curve for the pair and k, whose step costs give the k per batch size.
    """
    if not items:
        raise ValueError("no prompt was measured")
    by_group: dict[str, list[TrafficItem]] = {}
    for it in items:
        by_group.setdefault(it.group, []).append(it)
    groups = [summarize_group(g, its, counts.get(g, len(its)),
                              response_tokens.get(g) if response_tokens else None, headroom,
                              concurrency)
              for g, its in by_group.items()]
    total = sum(g.output_tokens for g in groups)
    for g in groups:
        g.output_token_share = g.output_tokens / total if total > 0 else 0.0
    speed = weighted_speedup(groups)
    config = items[0].compare.speculative.config
    gainers = [dynamic_k.Gainer(g.group, g.mean_acceptance_length, g.output_tokens)
               for g in groups if g.gains and g.mean_acceptance_length is not None]
    return TrafficResult(source, how, config, repeats, max_tokens,
                         "responses" if response_tokens else "measured", items, groups, speed,
                         gaining_share(groups),
                         deployment(groups, config, speed, concurrency=concurrency),
                         list(skipped), concurrency,
                         dynamic_k.predict(gainers, config, curve, concurrency))


def to_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """Rows as CSV text (None as an empty cell)."""
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows([{k: ("" if r.get(k) is None else r.get(k)) for k in columns} for r in rows])
    return out.getvalue()


def busy_requests(r: TrafficResult) -> int:
    """The most other requests a server served during any of the run's comparisons."""
    return max((other_requests(run) for it in r.items
                for run in (it.compare.baseline, it.compare.speculative)), default=0)


def describe(r: TrafficResult, skipped_reasons: bool = True) -> str:
    """The answer in words, for the terminal."""
    lines = [r.how + f"; measured {_at(r.concurrency)}"
             + (" (a group's prompts in batches)" if r.concurrency > 1 else ""),
             f"{'group':<22}{'reqs':>5}{'runs':>5}{'accept':>8}{'tau':>6}"
                    f"{'speedup':>9}{'spread':>12}{'tokens':>8}  verdict"]
    for g in r.groups:
        rate = "n/a" if g.acceptance_rate is None else f"{g.acceptance_rate:.0%}"
        tau = "n/a" if g.mean_acceptance_length is None else f"{g.mean_acceptance_length:.2f}"
        spread = (f"{g.speedup_spread[0]:.2f}-{g.speedup_spread[1]:.2f}"
                  if g.speedup_spread else "-")
        lines.append(f"{g.group[:21]:<22}{g.requests:>5}{g.prompts:>5}{rate:>8}{tau:>6}"
                     f"{g.speedup:>8.2f}x{spread:>12}{g.output_token_share:>8.0%}  {g.verdict}")
    ws = "n/a" if r.weighted_speedup is None else f"{r.weighted_speedup:.2f}x"
    source = ("the file's responses" if r.weighting == "responses"
              else "the measured output tokens (the file has no responses)")
    lines.append(f"traffic-weighted speedup {ws}; {r.gaining_share:.0%} of the output tokens "
                 f"are in groups that gain (weights from {source})")
    busy = busy_requests(r)
    if busy:
        lines.append(f"undecided: {busy_server_sentence(busy)}; measure again on idle servers")
    lines.append(r.deployment.describe())
    if r.schedule is not None:
        lines.append(r.schedule.describe())
    if r.skipped:
        shown = r.skipped[:5] if skipped_reasons else [s.split(":")[0] for s in r.skipped[:5]]
        lines.append(f"skipped {len(r.skipped)}: " + "; ".join(shown)
                     + ("; ..." if len(r.skipped) > 5 else ""))
    return "\n".join(lines)
