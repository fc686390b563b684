"""Measure a traffic file: every sampled request (or batch of N of a group's prompts)
through both sides, each taking the engine lock for itself only, then the answer; with
``until_decided``, rounds of unseen prompts of the undecided groups. Imports no vLLM."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from space.common import defaults
from space.common.cancel import check
from space.common.progress import Progress, share
from space.engine import models, prompts
from space.engine.hardware import on_gpu
from space.judge.measure import Context
from space.judge.traffic import TrafficItem, TrafficResult, answer
from space.observe.busy import Meter
from space.observe.memory import nvml_index
from space.records.config import ConfigError, EngineSpec, RequestSpec, at_least_one
from space.records.events import TrafficFinished
from space.records.trace import CompareRecord
from space.runs import machine_inputs
from space.runs.events import Job
from space.runs.source import Engines, Source
from space.runs.sweep import MAX_CONCURRENCY
from space.runs.traffic_file import TrafficRequest
from space.runs.traffic_groups import Plan, unseen

log = logging.getLogger(__name__)
MORE_PER_ROUND = 2  # unseen prompts per undecided group in each round of --until-decided
Todo = tuple[str, TrafficRequest, RequestSpec, list[int]]  # group, request, spec, its ids


def check_concurrency(concurrency: int) -> None:
    """1..MAX_CONCURRENCY, the bound of a concurrency sweep's points; one line if not."""
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ConfigError(f"concurrency must be 1..{MAX_CONCURRENCY}, got {concurrency}")


def response_tokens(plan: Plan, model_path: str) -> dict[str, int] | None:
    """Per group, the file's responses in the model's tokens when every request has
    one; else None (the weights then come from measured outputs)."""
    every = [r for reqs in plan.groups.values() for r in reqs]
    if not every or any(r.response is None for r in every):
        return None
    tok = prompts.load_tokenizer(model_path)
    return {g: sum(len(tok.encode(r.response or "", add_special_tokens=False)) for r in reqs)
            for g, reqs in plan.groups.items()}


@dataclass
class Budget:
    """What ``until_decided`` may spend: prompts measured in all, minutes of wall time."""

    max_prompts: int | None = None
    max_minutes: float | None = None
    per_round: int = MORE_PER_ROUND
    seed: int = 0
    started_s: float = field(default_factory=time.monotonic)

    def spent(self, measured: int) -> str | None:
        """Why no more prompts may run, or None."""
        if self.max_prompts is not None and measured >= self.max_prompts:
            return f"the budget of {self.max_prompts} prompts is spent"
        if self.max_minutes is not None and \
                time.monotonic() - self.started_s >= self.max_minutes * 60:
            return f"the budget of {self.max_minutes:g} minutes is spent"
        return None


def run_traffic(spec: EngineSpec, plan: Plan, *, file_name: str = "",
                repeats: int = defaults.REPEATS, max_tokens: int = defaults.MAX_TOKENS,
                temperature: float = 0.0, source: Source | None = None,
                progress: Progress | None = None,
                cancel: threading.Event | None = None,
                skipped: list[str] | None = None,
                max_tokens_cap: int | None = None, concurrency: int = 1,
                job: Job | None = None, until_decided: Budget | None = None, predict_prompts: int = 3,
                previous: list[TrafficItem] | None = None) -> TrafficResult:
    """Baseline against speculation on every sampled request of ``plan``, and the answer.

    ``skipped``: the import's skipped lines, carried into the result.
    ``predict_prompts``: m of the groups' prediction intervals. ``previous``: items
    already measured (the page's "Measure more"), not run again.
    """
    at_least_one(repeats=repeats)
    check_concurrency(concurrency)
    if not spec.is_speculative:
        raise ConfigError("a traffic run compares a speculative method with the baseline")
    source = source or Engines()
    measured_spec = source.spec_for(spec)
    job = job or Job()
    report = progress or (lambda f, m: log.info(m))
    skipped = list(skipped or [])
    path = str(models.resolve_model(spec.model))
    run = _Run(source, measured_spec, repeats, report, cancel, job.inside("traffic"), path)
    # what else runs meanwhile (on this machine's GPU too, unless the runs are a server's)
    meter = Meter(gpu=nvml_index(0) if source.can.memory and on_gpu() else None).start()

    def measure(pairs: list[tuple[str, TrafficRequest]]) -> list[TrafficItem]:
        todo = []  # the requests that the model can take, tokenized (before any lock)
        for group, r in pairs:
            # the file's own max_tokens (at most max_tokens_cap) and temperature where it has them
            tokens = r.max_tokens or max_tokens
            req = RequestSpec(prompt=r.prompt, system=r.system, messages=r.context,
                              max_tokens=min(tokens, max_tokens_cap) if max_tokens_cap else tokens,
                              temperature=temperature if r.temperature is None else r.temperature)
            try:
                todo.append((group, r, req, source.encode(run.spec, req, report)))
            except ConfigError as exc:
                skipped.append(f"line {r.line}: {exc}")
        return run.batched(todo, concurrency) if concurrency > 1 else run.each(todo)

    items = list(previous) if previous else measure(plan.sampled)
    if not items:
        raise ConfigError("no request of the file can run: " + "; ".join(skipped[:3]))
    responses = response_tokens(plan, path)
    curve = machine_inputs.curve_for(items[0].compare.speculative.config)
    headroom = machine_inputs.headroom(curve, concurrency)

    def answered(its: list[TrafficItem], busy: dict[str, Any] | None = None) -> TrafficResult:
        return answer(file_name, plan.how, its, plan.counts(), responses, repeats=repeats,
                      max_tokens=max_tokens, skipped=skipped, headroom=headroom,
                      concurrency=concurrency, curve=curve,
                      predict_prompts=predict_prompts, busy=busy)

    result = answered(items)
    if until_decided is not None:
        result = _until_decided(result, plan, until_decided, measure, answered, report, skipped)
    metered = meter.stop()
    busy = metered.to_dict() if metered is not None else None
    if busy is not None and busy["busy"]:  # the verdicts then rest on the predicted figures
        rounds = result.until_decided
        result = answered(result.items, busy)
        result.until_decided = rounds
    result.mark_busy(busy)
    ws = "n/a" if result.weighted_speedup is None else f"{result.weighted_speedup:.2f}x"
    report(1.0, f"done: {len(result.items)} prompts in {len(result.groups)} groups; "
                f"traffic-weighted speedup {ws}")
    job.publish(TrafficFinished(result, spec, job.origin))
    return result


def _until_decided(result: TrafficResult, plan: Plan, budget: Budget,
                   measure: Callable[[list[tuple[str, TrafficRequest]]], list[TrafficItem]],
                   answered: Callable[[list[TrafficItem]], TrafficResult], report: Progress,
                   skipped: list[str]) -> TrafficResult:
    """Rounds of unseen prompts of the undecided groups until all are decided or the budget
    is spent; the result records the rounds, each group's gain and why it stopped."""
    items, rounds = list(result.items), 0
    added: dict[str, int] = {}
    heads = (s.split(":")[0].removeprefix("line ").strip() for s in skipped)  # "line 7: ..."
    tried = {it.line for it in items} | {int(h) for h in heads if h.isdigit()}
    while True:
        open_ = [g.group for g in result.groups if g.undecided]
        stop = "every group is decided" if not open_ else budget.spent(len(items))
        batch = [] if stop else unseen(plan, open_, tried, budget.per_round,
                                       budget.seed + 1000 * (rounds + 1))
        if budget.max_prompts is not None:
            batch = batch[:max(budget.max_prompts - len(items), 0)]
        if not stop and not batch:
            stop = f"no unseen prompt is left in {', '.join(open_)}"
        if stop:
            break
        rounds += 1
        report(0.0, f"measuring more (round {rounds}): still open: {', '.join(open_)}; "
                    f"{len(batch)} unseen prompts")
        tried |= {r.line for _, r in batch}
        new = measure(batch)
        for it in new:
            added[it.group] = added.get(it.group, 0) + 1
        items += new
        result = answered(items)
    result.until_decided = {"rounds": rounds, "added": added, "stopped": stop,
                            "open": [g.group for g in result.groups if g.undecided]}
    return result


def batches(todo: list[Todo], n: int) -> list[tuple[list[Todo], list[Todo]]]:
    """(kept, fillers) per batch of ``n`` of a group's prompts; the groups take turns.

    Example (group a has prompts 1, 2, 3 and group b prompt 4; n = 2):
        >>> from space.runs.traffic_file import TrafficRequest as R
        >>> todo = [(g, R(i, "p"), None, []) for g, i in (("a", 1), ("b", 4), ("a", 2), ("a", 3))]
        >>> [([t[1].line for t in kept], [t[1].line for t in fill])
        ...  for kept, fill in batches(todo, 2)]
        [([1, 2], []), ([4], [4]), ([3], [1])]
    """
    by_group: dict[str, list[Todo]] = {}
    for t in todo:
        by_group.setdefault(t[0], []).append(t)
    per_group = [[(ts[i:i + n], [ts[j % len(ts)] for j in range(n - len(ts[i:i + n]))])
                  for i in range(0, len(ts), n)] for ts in by_group.values()]
    return [b[turn] for turn in range(max(map(len, per_group), default=0)) for b in per_group
            if turn < len(b)]


@dataclass
class _Run:
    """What every measurement of one traffic run needs."""

    source: Source
    spec: EngineSpec
    repeats: int
    report: Progress
    cancel: threading.Event | None
    job: Job
    model_path: str

    def item(self, group: str, r: TrafficRequest, req: RequestSpec,
             cmp: CompareRecord) -> TrafficItem:
        tokens = None if r.response is None else len(prompts.load_tokenizer(
            self.model_path).encode(r.response, add_special_tokens=False))
        return TrafficItem(group, r.line, cmp, req.temperature, tokens)

    def each(self, todo: list[Todo]) -> list[TrafficItem]:
        items = []
        for i, (group, r, req, ids) in enumerate(todo):
            self.report(i / len(todo), f"prompt {i + 1}/{len(todo)}: line {r.line} ({group})")
            check(self.cancel, "the traffic run")
            cmp = self.source.compare(self.spec, req, repeats=self.repeats, warmup="once",
                                      context=Context(task_type=group), cancel=self.cancel,
                                      prompt_ids=ids, job=self.job)
            items.append(self.item(group, r, req, cmp))
        return items

    def batched(self, todo: list[Todo], n: int) -> list[TrafficItem]:
        items: list[TrafficItem] = []
        plan_ = batches(todo, n)
        for i, (kept, fillers) in enumerate(plan_):
            group = kept[0][0]
            lines = ", ".join(str(r.line) for _, r, _, _ in kept)
            extra = f" + {len(fillers)} repeated to make {n}" if fillers else ""
            self.report(i / len(plan_), f"batch {i + 1}/{len(plan_)}: {group}, lines {lines}{extra}")
            check(self.cancel, "the traffic run")
            members = kept + fillers
            cmps = self.source.batch(
                self.spec, [req for _, _, req, _ in members], [ids for *_, ids in members],
                repeats=self.repeats, context=Context(task_type=group, concurrency=n),
                progress=share(self.report, i, len(plan_), f"batch {i + 1}/{len(plan_)}"),
                cancel=self.cancel, job=self.job)[0]
            items += [self.item(group, r, req, cmp)
                      for (_, r, req, _), cmp in zip(kept, cmps, strict=False)]
        return items
