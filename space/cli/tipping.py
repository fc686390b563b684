"""The CLI's tipping-point and deployable-config (k x concurrency sweep) commands
(docs/sweeps.md)."""
from __future__ import annotations

import argparse
import logging
from functools import partial
from pathlib import Path

from space.cli.snapshot import save_outputs
from space.common import defaults
from space.common.versions import warn_if_untested
from space.judge import curves
from space.judge.costs import grid_text
from space.records.config import ConfigError, EngineSpec
from space.records.schema import load
from space.records.trace import CompareRecord
from space.runs import sweep_plan
from space.runs import tipping as tp
from space.runs.flags import engine_flags
from space.runs.sweep import GridResult
from space.runs.sweep_plan import SweepPlan
from vis.tipping import grid_figure, tipping_figure

log = logging.getLogger("space")


def tipping_parser(sub) -> None:
    s = sub.add_parser("tipping", help="speedup against forced acceptance (the tipping "
                                       "point), cached for the page and the checklist")
    s.add_argument("--concurrency", default="1,4", help="comma-separated (default 1,4)")
    s.add_argument("--points", type=int, default=6,
                   help="acceptance points from 1 to k+1, one engine each (default 6)")
    s.add_argument("--max-tokens", type=int, default=defaults.MAX_TOKENS,
                   help=f"tokens per request (default {defaults.MAX_TOKENS})")
    s.add_argument("--repeats", type=int, default=defaults.REPEATS,
                   help=f"measured runs per engine and point (default {defaults.REPEATS})")
    s.add_argument("--axis", choices=["length", "rate"], default="length",
                   help="x axis of --plot: mean acceptance length or acceptance rate")
    s.add_argument("--csv", metavar="PATH", help="write the points and the model curve as CSV")
    s.add_argument("--json", metavar="PATH", help="write the curve as JSON")
    s.add_argument("--plot", metavar="PATH", help="write the figure: .html or .png")
    s.add_argument("-v", "--verbose", action="store_true", help="show vLLM's logs")
    s.add_argument("--profile", metavar="RATES|FILE",
                   help="force acceptance with per-position rates shaped like this profile: k "
                        "comma-separated unconditional rates (0.8,0.6,0.4,0.2), or a trace / "
                        "compare JSON whose speculative run's per-position acceptance is used "
                        "(e.g. your workload's: compare --workload W --json F). Default: "
                        "vLLM's acceptance length (minimum-variance schedule)")
    s.add_argument("--pair", help="a model-pair id (default: the bad draft, cpu-bad-draft's "
                                  "settings); ngram/suffix pairs get a derived curve")
    engine_flags(s)
    # the CPU's model-based pair by default: a drafter that drafts every step
    s.set_defaults(method="draft_model", draft_model="default-truncated")


def bar(frac: float, msg: str, width: int = 24) -> None:
    """A text progress bar, one line per update (for logs and terminals alike)."""
    done = int(round(min(max(frac, 0.0), 1.0) * width))
    print(f"  [{'#' * done}{'.' * (width - done)}] {frac:4.0%} {msg}", flush=True)


def tipping(a: argparse.Namespace, spec: EngineSpec):
    try:
        concurrencies = sorted({int(c) for c in a.concurrency.split(",") if c.strip()})
    except ValueError:
        raise ConfigError(f"--concurrency must be whole numbers, got {a.concurrency!r}") from None
    warn_if_untested(log)
    profile = tp.check_profile(read_profile(a.profile), spec.k) if a.profile else None
    curve, path = tp.build_curve(spec, pair_id=a.pair, concurrencies=concurrencies,
                                 n_points=a.points, max_tokens=a.max_tokens,
                                 repeats=a.repeats, progress=bar, profile=profile)
    print(tp.describe(curve))
    print(f"cached {path}")
    save_outputs(a, partial(curves.to_csv, curve), lambda: tipping_figure(curve, a.axis))
    return curve


def read_profile(text: str) -> list[float]:
    """``--profile``: comma-separated rates, or a saved trace / compare file."""
    if "," in text or not Path(text).is_file():
        try:
            return [float(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise ConfigError(f"--profile: comma-separated rates or a JSON file, got {text!r}") from None
    try:
        record = load(Path(text).read_text())
    except (ValueError, OSError) as exc:  # TraceFormatError is a ValueError
        raise ConfigError(f"--profile {text}: {exc}") from None
    run = record.speculative if isinstance(record, CompareRecord) else record
    profile = tp.profile_of([run]) if run.speculative else None
    if not profile:
        raise ConfigError(f"--profile {text}: no verified drafts to take a profile from")
    return profile


def grid(a: argparse.Namespace, spec: EngineSpec, plan: SweepPlan):
    """The k x concurrency sweep, and the deployable config derived from it."""
    if a.max_batch < max(plan.values):
        raise ConfigError(f"--max-batch {a.max_batch} is below the largest concurrency")
    warn_if_untested(log)
    result = sweep_plan.run(spec, plan, max_batch=a.max_batch, progress=bar)
    assert isinstance(result, GridResult) and result.deploy is not None
    deploy = result.deploy
    print(result.table.to_string(index=False, float_format="%.3f"))
    print(deploy.describe())
    print(grid_text(result.step_costs()))  # where each step's time went, per k
    save_outputs(a, result.to_csv, lambda: grid_figure(
        result.table, deploy.choices, title=f"{plan.workload.title}: best k per concurrency"))
    return result
