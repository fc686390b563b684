"""Older trace files in today's names, before the schema checks them (pure).

``space.records.schema.load`` calls ``upgrade`` on every file it reads. What each
version added is told at ``space.records.trace.TRACE_VERSION``; a field an older
file lacks takes its default (absent, none or 0), except where a function here
says otherwise. Everything is done in place and on a dict not yet checked, so
each step looks before it touches.
"""
from __future__ import annotations

from typing import Any

from space.records.counts import FROM_VLLM_METRICS
from space.records.run import SERVER, upgrade_config
from space.records.trace import PREFILL, TRACE_VERSION, UNCERTAIN


def upgrade(d: Any) -> Any:
    """An older version's dict in today's names (in place).

    Version 1 (no ``version`` key): a step's accepted count was ``num_accepted``.
    Version 5 may keep method and k only in ``speculative_config`` and has no
    source (``space.records.run.upgrade_config``).
    Version 6 decided verdicts by the spread rule (``upgrade_verdict_rule``) and
    had no counts source nor step placements (``upgrade_to_7``).
    """
    if not isinstance(d, dict):
        return d
    version = d.get("version", 1)
    older = version if isinstance(version, int) else TRACE_VERSION  # bad: the schema says so
    for run in [d.get("baseline"), d.get("speculative")] if "baseline" in d else [d]:
        if not isinstance(run, dict):
            continue
        steps = run.get("steps") if version == 1 else None
        for s in steps if isinstance(steps, list) else []:
            if isinstance(s, dict) and "num_accepted" in s:
                s.setdefault("num_accepted_tokens", s.pop("num_accepted"))
        if older < 6 and isinstance(run.get("config"), dict):
            upgrade_config(run["config"])
        if older < 7:
            upgrade_to_7(run)
    return upgrade_verdict_rule(d) if older < 7 else d


def upgrade_verdict_rule(d: dict) -> dict:
    """Version 6 -> 7: a comparison's checklist was decided by the spread rule (every
    repeat at or above 1.00x), not by an interval. Its verdict stays as recorded;
    ``rule`` says how it was reached, so the page does not present it as an interval's.

    Example:
        >>> upgrade_verdict_rule({"checklist": {"verdict": "worth-it", "checks": []}})
        {'checklist': {'verdict': 'worth-it', 'checks': [], 'rule': 'spread'}}
    """
    checklist = d.get("checklist")
    if isinstance(checklist, dict):
        checklist.setdefault("rule", "spread")
    return d


def upgrade_to_7(run: dict) -> None:
    """Version 6 had no ``counts_from`` nor steps' ``placement`` (issue 29).

    A server run took its counts from its steps, and where no placement fitted
    its chunks those steps made counts up: its counts now come from vLLM's
    metrics it carries (``counts_from: vllm_metrics``). Its steps were exact
    where its step split said so; an approximate split did not say which steps
    it guessed, so its steps after the prefill are ``uncertain``. In-process
    steps were all seen: the default, exact, stands.
    """
    config = run.get("config")
    if not (isinstance(config, dict) and config.get("source") == SERVER):
        return
    if isinstance(run.get("vllm_spec_metrics"), dict):
        run.setdefault("counts_from", FROM_VLLM_METRICS)
    split, steps = run.get("step_split"), run.get("steps")
    if isinstance(split, dict) and split.get("exact") is False and isinstance(steps, list):
        for s in steps:
            if isinstance(s, dict) and s.get("kind") != PREFILL:
                s.setdefault("placement", UNCERTAIN)
