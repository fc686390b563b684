"""The CLI's traffic command: your own prompts, a verdict per group (docs/answer.md)."""
from __future__ import annotations

import argparse
from pathlib import Path

from space.cli.snapshot import save_outputs
from space.cli.tipping import bar
from space.common import defaults
from space.judge import validate
from space.judge.traffic import GROUP_COLUMNS, PROMPT_COLUMNS, describe, to_csv
from space.records.config import ConfigError, EngineSpec, at_least_one
from space.runs.flags import engine_flags
from space.runs.source import Source
from space.runs.sweep import MAX_CONCURRENCY
from space.runs.traffic import Budget, check_concurrency, run_traffic
from space.runs.traffic_file import parse
from space.runs.traffic_groups import DEFAULT_MAX_PROMPTS, plan
from space.server.flags import server_flags
from vis.traffic import traffic_figure


def traffic_parser(sub) -> None:
    s = sub.add_parser(
        "traffic", help="your own prompts (JSONL, ShareGPT, CSV or text): a verdict per "
                        "group of requests and what to deploy")
    s.add_argument("file", help="JSONL (prompt, messages or turns), a ShareGPT .json, a CSV "
                                "with a prompt column, or text with one prompt a line")
    s.add_argument("--label-field", default=None,
                   help="the field that groups requests (default: category, label or task; "
                        "without one, groups by what requests look like)")
    s.add_argument("--per-group", type=int, default=defaults.PROMPTS_PER_GROUP,
                   help=f"prompts measured per group (default {defaults.PROMPTS_PER_GROUP})")
    s.add_argument("--max-prompts", type=int, default=DEFAULT_MAX_PROMPTS,
                   help=f"prompts measured in all (default {DEFAULT_MAX_PROMPTS}, about 10 "
                        "minutes on the CPU default)")
    s.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    s.add_argument("--max-tokens", type=int, default=defaults.MAX_TOKENS,
                   help=f"where the file gives none (default {defaults.MAX_TOKENS})")
    s.add_argument("--temperature", type=float, default=0.0,
                   help="where the file gives none (default 0)")
    s.add_argument("--repeats", type=int, default=defaults.REPEATS,
                   help=f"measured runs per engine and prompt (default {defaults.REPEATS})")
    s.add_argument("--concurrency", type=int, default=1,
                   help="a group's prompts N at once through each engine (default 1; "
                        f"1..{MAX_CONCURRENCY})")
    s.add_argument("--predict-prompts", type=int, default=3, metavar="M",
                   help="each group's prediction interval is for its next M prompts "
                        "(default 3)")
    s.add_argument("--until-decided", action="store_true",
                   help="then keep measuring unseen prompts of the undecided groups, a few "
                        "at a time, until every group is decided or the budget is spent "
                        "(--max-prompts in all, --max-minutes)")
    s.add_argument("--max-minutes", type=float, default=None,
                   help="with --until-decided: stop starting new prompts after this many "
                        "minutes (default: no limit)")
    s.add_argument("--validate", action="store_true",
                   help="split each group's prompts in halves: the first half's prediction "
                        "interval against the second half's ratio of totals (4+ per group)")
    s.add_argument("--csv", metavar="PATH", help="write one row per group as CSV")
    s.add_argument("--prompts-csv", metavar="PATH", help="write one row per prompt as CSV")
    s.add_argument("--json", metavar="PATH",
                   help="write the groups, the answer and every prompt's runs as JSON")
    s.add_argument("--plot", metavar="PATH", help="write the figures: .html or .png")
    s.add_argument("-v", "--verbose", action="store_true", help="show vLLM's logs")
    engine_flags(s)
    server_flags(s)


def traffic(a: argparse.Namespace, spec: EngineSpec, source: Source):
    if not spec.is_speculative:  # before anything is printed: bad input stays one line
        raise ConfigError("a traffic run compares a speculative method with the baseline: "
                          "choose a --method")
    at_least_one(per_group=a.per_group, max_prompts=a.max_prompts, repeats=a.repeats,
                 predict_prompts=a.predict_prompts)
    if a.max_minutes is not None and a.max_minutes <= 0:
        raise ConfigError("--max-minutes must be above 0")
    check_concurrency(a.concurrency)
    try:
        data = Path(a.file).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the traffic file: {exc.strerror}: {a.file}") from None
    file = parse(data, Path(a.file).name, a.label_field)
    if not file.requests:
        raise ConfigError(f"no request could be read from {a.file}: {file.describe()}")
    groups = plan(file, a.per_group, a.max_prompts, a.seed)
    print(file.describe())
    for line in source.start(spec):  # after the input checks: bad input stays one line
        print(line, flush=True)
    result = run_traffic(spec, groups, file_name=Path(a.file).name, repeats=a.repeats,
                         max_tokens=a.max_tokens, temperature=a.temperature, progress=bar,
                         skipped=[str(s) for s in file.skipped], concurrency=a.concurrency,
                         source=source, predict_prompts=a.predict_prompts,
                         until_decided=(Budget(a.max_prompts, a.max_minutes, seed=a.seed)
                                        if a.until_decided else None))
    if a.validate:
        checks, short = validate.validate(result.by_group())
        result.validation = validate.summary(checks, short)
    print(describe(result))
    for path, rows, columns in ((a.csv, result.group_rows(), GROUP_COLUMNS),
                                (a.prompts_csv, result.rows(), PROMPT_COLUMNS)):
        if path:
            Path(path).write_text(to_csv(rows, columns))
            print(f"wrote {path}")
    save_outputs(a, None, lambda: traffic_figure(result.summary()))
    return result
