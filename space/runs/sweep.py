"""Sweeps: one workload across one variable's values, a ``run_workload`` per point, and
where the speedup crosses 1. Every bound is checked before anything runs, so that one
request cannot hold the engines for hours. Imports no vLLM."""
from __future__ import annotations

import dataclasses
import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from space.common.cancel import check
from space.common.progress import Progress, share
from space.engine import models, prompts
from space.judge.crossover import crossing
from space.records.anatomy import KindCosts, kind_costs
from space.records.config import GRID, K_RANGE, ConfigError, EngineSpec, RequestSpec
from space.records.events import SweepFinished
from space.runs.events import Job
from space.runs.presets import PRESETS_DIR, Workload
from space.runs.source import Engines, Source
from space.runs.workloads import WorkloadResult, run_workload

if TYPE_CHECKING:
    import pandas as pd

    from space.judge.deploy import DeployConfig

log = logging.getLogger(__name__)

MAX_POINTS = 32               # values in one sweep
MAX_CONCURRENCY = 64          # requests submitted together at one point
MAX_INPUT_LENGTH = 32_768     # prompt tokens at one point of an input-length sweep
MAX_SWEEP_TOKENS = 1_000_000  # prompt + output tokens over every run (planned_tokens)


@dataclass(frozen=True)
class Variable:
    name: str
    label: str                  # axis title
    defaults: tuple[float, ...]  # values swept when none are given
    low: float                  # smallest value allowed
    high: float                 # largest value allowed
    log_axis: bool = False      # plot (and interpolate the crossover) on a log scale
    integer: bool = True


VARIABLES: dict[str, Variable] = {v.name: v for v in (
    Variable("k", "k (draft tokens per verify step)", tuple(range(1, 9)), *K_RANGE),
    Variable("concurrency", "concurrent requests", (1, 2, 4, 8, 16), 1, MAX_CONCURRENCY,
             log_axis=True),
    # "short" is the prompt as written: values below its length leave it unpadded
    Variable("input_length", "prompt tokens", (128, 512, 1024, 2048, 3072), 16,
             MAX_INPUT_LENGTH, log_axis=True),
    Variable("temperature", "temperature", (0.0, 0.25, 0.5, 0.75, 1.0), 0.0, 2.0,
             integer=False),
)}

COLUMNS = ["variable", "value", "speedup", "speedup_low", "speedup_high", "e2e_speedup",
           "throughput_speedup", "acceptance_rate", "mean_acceptance_length",
           "baseline_tpot_ms", "speculative_tpot_ms", "baseline_tokens_per_s",
           "speculative_tokens_per_s", "prompt_tokens", "output_tokens", "verdict"]

# Background text that pads prompts for the input-length sweep (~3,200 tokens, cycled).
FILLER_FILE = PRESETS_DIR / "texts" / "long_passage.txt"
FILLER_HEADER = "Background document, for reference only:\n"


def parse_values(variable: str, text: str | None) -> list[float]:
    """'1,2,4' -> [1, 2, 4]; None or '' -> the variable's defaults."""
    var = VARIABLES[variable]
    if not text or not text.strip():
        return list(var.defaults)
    items = [v for v in text.split(",") if v.strip()]
    if len(items) > MAX_POINTS:  # before parsing: a huge list costs nothing more
        raise ConfigError(f"at most {MAX_POINTS} values per sweep, got {len(items)}")
    try:
        values = [float(v) for v in items]
    except ValueError:
        shown = text if len(text) <= 60 else text[:60] + "\u2026"
        raise ConfigError(f"--values must be numbers separated by commas, got {shown!r}") from None
    return check_values(variable, values)


def check_values(variable: str, values: Sequence[float]) -> list[float]:
    """The values sorted and deduplicated, whole numbers for integer variables;
    ``ConfigError`` naming the bound a value breaks."""
    var = VARIABLES[variable]
    if not values:
        raise ConfigError("no values to sweep")
    if len(values) > MAX_POINTS:
        raise ConfigError(f"at most {MAX_POINTS} values per sweep, got {len(values)}")
    for v in values:  # NaN fails both comparisons
        if not var.low <= v <= var.high:
            raise ConfigError(f"{variable} values must be in {var.low:g}..{var.high:g}, "
                              f"got {v:g}")
        if var.integer and v != int(v):
            raise ConfigError(f"{variable} values must be whole numbers, got {v:g}")
    return sorted({int(v) if var.integer else float(v) for v in values})


def planned_tokens(workload: Workload, variable: str, values: Sequence[float], repeats: int,
                   max_tokens: int | None = None, prompt_ids: list[str] | None = None) -> int:
    """Prompt + output tokens over every run of the sweep (an upper estimate)."""
    chosen = [workload.prompt(p) for p in prompt_ids] if prompt_ids else list(workload.prompts)
    own = max(p.estimated_tokens for p in chosen)
    out = max_tokens or workload.max_tokens
    runs = 2 * (repeats + 1)  # baseline and speculative; a warm-up and the measured repeats
    total = 0
    for v in values:
        n = int(v) if variable == "concurrency" else (
            workload.concurrency if workload.concurrency > 1 else len(chosen))
        prompt = max(own, int(v)) if variable == "input_length" else own
        total += n * (prompt + out) * runs
    return total


def check_plan(workload: Workload, variable: str, values: Sequence[float], repeats: int,
               max_tokens: int | None = None, prompt_ids: list[str] | None = None) -> None:
    """Every bound of a sweep, before anything runs; ``ConfigError`` with one line."""
    if variable not in VARIABLES:
        raise ConfigError(f"unknown sweep variable {variable!r}: one of {', '.join(VARIABLES)}")
    check_values(variable, values)
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, got {repeats}")
    _check_tokens(planned_tokens(workload, variable, values, repeats, max_tokens, prompt_ids),
                  " (prompts and outputs over every run)")


def check_grid(workload: Workload, ks: Sequence[int], concurrencies: Sequence[int],
               repeats: int, max_tokens: int | None = None,
               prompt_ids: list[str] | None = None) -> None:
    """``check_plan`` for a k x concurrency sweep: a concurrency sweep per k."""
    check_values("k", ks)
    if len(ks) * len(concurrencies) > MAX_POINTS:
        raise ConfigError(f"at most {MAX_POINTS} points per sweep, got "
                          f"{len(ks)} x {len(concurrencies)}")
    check_plan(workload, "concurrency", concurrencies, repeats, max_tokens, prompt_ids)
    _check_tokens(len(ks) * planned_tokens(workload, "concurrency", concurrencies, repeats,
                                           max_tokens, prompt_ids))


def _check_tokens(tokens: int, detail: str = "") -> None:
    if tokens > MAX_SWEEP_TOKENS:
        raise ConfigError(f"this sweep would process about {tokens:,} tokens{detail}, more than "
                          f"the limit of {MAX_SWEEP_TOKENS:,}: use fewer values, prompts, repeats "
                          "or max tokens")


def check_source(variable: str, source: Source) -> None:
    """Only concurrency is swept through a source whose k is fixed (running servers)."""
    if variable != "concurrency":
        source.require("vary_k")


def point_row(variable: str, value: float, r: WorkloadResult) -> dict[str, Any]:
    """A table row: the point's figures by COLUMNS' names (no acceptance: NaN)."""
    low, high = r.speedup_spread or (math.nan, math.nan)
    row: dict[str, Any] = {"variable": variable, "value": value, "speedup_low": low,
                           "speedup_high": high, "baseline_tpot_ms": r.baseline_tpot_s * 1e3,
                           "speculative_tpot_ms": r.speculative_tpot_s * 1e3}
    for name in ("acceptance_rate", "mean_acceptance_length"):
        row[name] = math.nan if getattr(r, name) is None else getattr(r, name)
    return {c: row[c] if c in row else getattr(r, c) for c in COLUMNS}


@dataclass
class SweepResult:
    workload_id: str
    variable: str
    table: pd.DataFrame          # COLUMNS, one row per value
    crossover: float | None        # where speedup crosses 1, interpolated
    gain_vanishes_at: float | None  # first value with speedup <= 1 (concurrency: throughput)
    throughput_crossover: float | None = None  # where aggregate tokens/s crosses baseline
    results: list[WorkloadResult] = field(default_factory=list)  # the full record per point

    @property
    def axis(self) -> Variable:
        return VARIABLES[self.variable]

    def to_csv(self, path=None) -> str | None:
        return self.table.to_csv(path, index=False)

    def to_dict(self) -> dict[str, Any]:
        return {"workload_id": self.workload_id, "variable": self.variable,
                "crossover": self.crossover, "gain_vanishes_at": self.gain_vanishes_at,
                "throughput_crossover": self.throughput_crossover,
                "table": self.table.to_dict(orient="records"),
                "results": [r.to_dict() for r in self.results]}


def make_table(variable: str, values: Sequence[float],
               results: Sequence[WorkloadResult]) -> SweepResult:
    """The table, crossover and vanishing point of finished points (pure)."""
    import pandas as pd  # here, so that the CLI's argument parsing stays fast

    rows = [point_row(variable, v, r) for v, r in zip(values, results, strict=False)]
    table = pd.DataFrame(rows, columns=COLUMNS)
    xs, log_axis = list(table["value"]), VARIABLES[variable].log_axis
    tpot, throughput = (crossing(xs, list(table[c]), log_axis=log_axis)
                        for c in ("speedup", "throughput_speedup"))
    # Under load a server loses aggregate tokens/s before per-request TPOT suffers:
    # for concurrency the gain vanishes where throughput falls to the baseline's.
    vanishes = (throughput if variable == "concurrency" else tpot).first_not_faster
    return SweepResult(workload_id=results[0].workload_id if results else "",
                       variable=variable, table=table, crossover=tpot.at,
                       gain_vanishes_at=vanishes, throughput_crossover=throughput.at,
                       results=list(results))


def padded_workload(workload: Workload, target_tokens: int, tokenizer) -> Workload:
    """Each prompt padded to ~target_tokens with background text before it (the
    instruction stays last); longer prompts are left as they are."""
    filler_ids = tokenizer.encode(FILLER_FILE.read_text(encoding="utf-8"),
                                  add_special_tokens=False)
    header = len(tokenizer.encode(FILLER_HEADER + "\n\n", add_special_tokens=False))
    padded = []
    for p in workload.prompts:
        own = len(prompts.encode(tokenizer, RequestSpec(prompt=p.text), 1 << 30))
        if (need := target_tokens - own - header) > 0:
            filler = tokenizer.decode((filler_ids * (need // len(filler_ids) + 1))[:need])
            p = dataclasses.replace(p, text=f"{FILLER_HEADER}{filler}\n\n{p.text}")
        padded.append(p)
    return dataclasses.replace(workload, prompts=tuple(padded))


def run_sweep(spec: EngineSpec, workload: Workload, variable: str,
              values: Sequence[float] | None = None, *, repeats: int = 2,
              source: Source | None = None,
              progress: Progress | None = None, max_tokens: int | None = None,
              prompt_ids: list[str] | None = None,
              cancel: threading.Event | None = None, job: Job | None = None) -> SweepResult:
    """Run ``workload`` once per value of ``variable`` through ``source`` (default:
    in-process); the table and crossover. ``job`` hears ``SweepFinished``."""
    values = list(values or (VARIABLES[variable].defaults if variable in VARIABLES else ()))
    check_plan(workload, variable, values, repeats, max_tokens, prompt_ids)  # the variable first
    source = source or Engines()
    check_source(variable, source)
    progress = progress or (lambda f, m: log.info(m))
    job, asked = job or Job(), spec
    n_tokens = max_tokens or workload.max_tokens
    tokenizer = None
    if variable == "input_length":
        tokenizer = prompts.load_tokenizer(str(models.resolve_model(spec.model, progress)))
        # one max_model_len for every point, so the engines are built once
        need = int(max(values)) + n_tokens + 64
        if need > spec.max_model_len:
            spec = dataclasses.replace(spec, max_model_len=need)
    results = []
    for i, value in enumerate(values):
        inner = share(progress, i, len(values), f"point {i + 1}/{len(values)} ({variable}={value:g})")
        check(cancel, "the sweep")
        inner(0.0, "starting")
        point_spec = dataclasses.replace(spec, k=int(value)) if variable == "k" else spec
        wl = padded_workload(workload, int(value), tokenizer) if variable == "input_length" \
            else workload
        results.append(run_workload(
            point_spec, wl, repeats=repeats, source=source, progress=inner, max_tokens=n_tokens,
            prompt_ids=prompt_ids, concurrency=int(value) if variable == "concurrency" else None,
            temperature=float(value) if variable == "temperature" else None,
            cancel=cancel, job=job.inside("sweep")))
    progress(1.0, "sweep done")
    result = make_table(variable, values, results)
    job.publish(SweepFinished(result, variable, asked, job.origin))
    return result


# --- k x concurrency: the grid a deployable schedule of k is derived from -------------


def parse_grid(text: str | None) -> tuple[list[int], list[int]]:
    """'1,2,4 x 1,4' -> ([1, 2, 4], [1, 4]) (k values, then concurrencies); '' -> 1,2,4 x 1,2,4."""
    if not text or not text.strip():
        return [1, 2, 4], [1, 2, 4]
    parts = text.lower().split("x")
    if len(parts) != 2:
        raise ConfigError(f"k x concurrency values look like '1,2,4 x 1,2,4', got {text!r}")
    ks, cs = (parse_values(name, part) for name, part in zip(("k", "concurrency"), parts,
                                                              strict=True))
    return [int(k) for k in ks], [int(c) for c in cs]


@dataclass
class GridResult:
    workload_id: str
    table: pd.DataFrame               # space.judge.deploy.GRID_COLUMNS, one row per (k, concurrency)
    sweeps: list[SweepResult] = field(default_factory=list)  # one concurrency sweep per k
    deploy: DeployConfig | None = None  # derived by space.runs.sweep_plan.run; not stored

    def to_csv(self, path=None) -> str | None:
        return self.table.to_csv(path, index=False)

    def to_dict(self) -> dict[str, Any]:
        return {"workload_id": self.workload_id, "table": self.table.to_dict(orient="records"),
                "sweeps": [s.to_dict() for s in self.sweeps]}

    def step_costs(self) -> list[tuple[int, int, KindCosts]]:
        """The step anatomy's medians per (k, concurrency), over every request's steps."""
        return [(int(r.config.k or 0), r.concurrency,
                 kind_costs([i.compare.baseline for i in r.items], [i.compare.speculative for i in r.items]))
                for sweep in self.sweeps for r in sweep.results]


def run_grid(spec: EngineSpec, workload: Workload, ks: Sequence[int],
             concurrencies: Sequence[int], *, repeats: int = 2,
             source: Source | None = None, progress: Progress | None = None, max_tokens: int | None = None,
             prompt_ids: list[str] | None = None,
             cancel: threading.Event | None = None, job: Job | None = None) -> GridResult:
    """A concurrency sweep at each k (one speculative engine per k)."""
    import pandas as pd

    from space.judge.deploy import GRID_COLUMNS

    check_grid(workload, ks, concurrencies, repeats, max_tokens, prompt_ids)
    source = source or Engines()
    check_source(GRID, source)
    progress = progress or (lambda f, m: log.info(m))
    job = job or Job()
    sweeps = []
    for i, k in enumerate(ks):
        inner = share(progress, i, len(ks), f"k={k} ({i + 1}/{len(ks)})")
        sweeps.append((k, run_sweep(dataclasses.replace(spec, k=int(k)), workload, "concurrency",
                                    concurrencies, repeats=repeats, source=source, progress=inner,
                                    max_tokens=max_tokens, prompt_ids=prompt_ids,
                                    cancel=cancel, job=job.inside("sweep"))))
    progress(1.0, "k x concurrency sweep done")
    # one row per (k, concurrency); check_grid refused an empty ks
    table = pd.concat([s.table.rename(columns={"value": "concurrency"}).assign(k=k)
                       for k, s in sweeps], ignore_index=True)
    result = GridResult(workload.id, table.reindex(columns=GRID_COLUMNS), [s for _, s in sweeps])
    job.publish(SweepFinished(result, GRID, spec, job.origin))
    return result
