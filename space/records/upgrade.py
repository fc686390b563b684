"""Older trace versions in today's names: ``upgrade`` runs before the schema checks a file."""
from __future__ import annotations

from typing import Any

from space.records.counts import FROM_VLLM_METRICS
from space.records.run import SERVER, upgrade_config
from space.records.trace import PREFILL, TRACE_VERSION, UNCERTAIN


def upgrade(d: Any) -> Any:
    """An older version's dict in today's names, in place and not yet checked (so each step looks
    before it touches); a field an older file lacks takes its default unless this says otherwise
    (versions: ``space.records.trace.TRACE_VERSION``)."""
    if not isinstance(d, dict):
        return d
    version = d.get("version", 1)
    older = version if isinstance(version, int) else TRACE_VERSION  # bad: the schema says so
    for run in [d.get("baseline"), d.get("speculative")] if "baseline" in d else [d]:
        if not isinstance(run, dict):
            continue
        steps, config = run.get("steps"), run.get("config")
        for s in steps if version == 1 and isinstance(steps, list) else []:  # 1: "num_accepted"
            if isinstance(s, dict) and "num_accepted" in s:
                s.setdefault("num_accepted_tokens", s.pop("num_accepted"))
        if older < 6 and isinstance(config, dict):
            upgrade_config(config)
        # 6 -> 7: a server run's counts come from the vLLM metrics it carries (its steps may
        # have made counts up), and after an approximate split its steps after the prefill
        # are uncertain; in-process runs stay as they are.
        if older < 7 and isinstance(config, dict) and config.get("source") == SERVER:
            if isinstance(run.get("vllm_spec_metrics"), dict):
                run.setdefault("counts_from", FROM_VLLM_METRICS)
            split = run.get("step_split")
            if isinstance(split, dict) and split.get("exact") is False and isinstance(steps, list):
                for s in steps:
                    if isinstance(s, dict) and s.get("kind") != PREFILL:
                        s.setdefault("placement", UNCERTAIN)
    # 6 -> 7: a checklist decided by the spread rule keeps its verdict, and says so.
    if older < 7 and isinstance(d.get("checklist"), dict):
        d["checklist"].setdefault("rule", "spread")
    return d
