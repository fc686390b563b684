"""A sweep as the page and the CLI ask for it: one variable or k x concurrency
(``GRID``), bounded before anything runs (``plan``), run (``run``), and for the grid
the deployable config (``deploy_config``). Imports no vLLM.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from space.common.progress import Progress
from space.judge import deploy
from space.records.config import GRID, ConfigError, EngineSpec
from space.runs import presets, sweep
from space.runs.events import Job
from space.runs.sweep import VARIABLES, GridResult, SweepResult

if TYPE_CHECKING:
    from space.runs.source import Source

SWEPT = (*VARIABLES, GRID)  # what a sweep may sweep, in the page's and the CLI's order


@dataclass(frozen=True)
class SweepPlan:
    """What one sweep will run, checked against every bound."""

    workload: presets.Workload
    variable: str                  # one of SWEPT
    values: list[float]            # the swept values; GRID: the concurrencies
    ks: list[int]                  # GRID: the k values, one concurrency sweep each; else []
    repeats: int
    max_tokens: int | None         # None: the workload's
    prompt_ids: list[str] | None = None  # None: every prompt of the workload

    @property
    def is_grid(self) -> bool:
        return self.variable == GRID


def plan(workload_id: str, variable: str, values: str | None, repeats: int,
         max_tokens: int | None = None, prompt_ids: list[str] | None = None,
         source: Source | None = None) -> SweepPlan:
    """The sweep asked for, read, bounded and one ``source`` can run (checked first);
    ``values``: "1,2,4" (empty: the defaults), for GRID "1,2,4 x 1,2,4" (k x concurrency).
    """
    if variable not in SWEPT:
        raise ConfigError(f"unknown sweep variable {variable!r}")
    if source is not None:
        sweep.check_source(variable, source)
    ks, concurrencies = sweep.parse_grid(values) if variable == GRID else ([], [])
    points = ([float(c) for c in concurrencies] if variable == GRID
              else sweep.parse_values(variable, values))
    workload = presets.get_workload(workload_id)  # UnknownPreset: a ConfigError
    for prompt_id in prompt_ids or ():
        workload.prompt(prompt_id)  # UnknownPreset, naming the prompts there are
    if variable == GRID:
        sweep.check_grid(workload, ks, concurrencies, repeats, max_tokens, prompt_ids)
    else:
        sweep.check_plan(workload, variable, points, repeats, max_tokens, prompt_ids)
    return SweepPlan(workload, variable, points, ks, repeats, max_tokens, prompt_ids)


def run(spec: EngineSpec, plan: SweepPlan, *, max_batch: int = deploy.DEFAULT_MAX_BATCH,
        source: Source | None = None, progress: Progress | None = None,
        cancel: threading.Event | None = None, job: Job | None = None) -> SweepResult | GridResult:
    """Run the plan through ``source``; a grid gets its deployable config for ``max_batch``."""
    kw: dict[str, Any] = dict(repeats=plan.repeats, source=source, progress=progress,
                              max_tokens=plan.max_tokens, prompt_ids=plan.prompt_ids,
                              cancel=cancel, job=job)
    if plan.is_grid:
        grid = sweep.run_grid(spec, plan.workload, plan.ks, [int(c) for c in plan.values], **kw)
        grid.deploy = deploy_config(grid, max_batch)
        return grid
    return sweep.run_sweep(spec, plan.workload, plan.variable, plan.values, **kw)


def deploy_config(grid: GridResult, max_batch: int = deploy.DEFAULT_MAX_BATCH) -> deploy.DeployConfig:
    """The best k per concurrency of a grid as a ``vllm serve`` config; vLLM's own schedule
    reader must pick the chosen k at every measured concurrency (``ConfigError`` if not)."""
    from space.engine.dynamic import check_schedule  # imports vLLM

    cfg = deploy.derive_for_run(grid.table.to_dict(orient="records"),
                                grid.sweeps[0].results[0].config, max_batch)
    if cfg.speculative_config is not None:
        check_schedule(cfg.schedule, cfg.speculative_config["num_speculative_tokens"],
                       cfg.max_batch, {c.concurrency: c.k for c in cfg.choices})
    return cfg
