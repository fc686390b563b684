"""Headless CLI: ``python -m space trace|compare|sweep|tipping|traffic|lesson ...``.

Bad input gets one line on stderr and exit code 2; nothing else is printed.

  python -m space compare --prompt "..."                    one prompt, with the checklist
  python -m space compare --workload code_editing           every prompt: medians + per prompt
  python -m space compare --workload creative_writing --pair cpu-bad-draft
  python -m space sweep --workload code_editing --variable k --values 1,2,4,8 \
      --csv sweep.csv --json sweep.json --plot sweep.html
  python -m space app --port 7860                          the web page (python app.py's flags)
  python -m space tipping --pair cpu-bad-draft --plot tipping.png   speedup vs forced acceptance
  python -m space traffic prompts.jsonl --csv groups.csv --json traffic.json   your own prompts
  python -m space lesson compare.json -o lesson.html --notes notes.json   one HTML file to teach from
  python -m space doctor --json doctor.json                what works here, proved (docs/doctor.md)

Installed (pip install -e .), the speclens command takes the same commands.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import warnings
from pathlib import Path

from space.cli.lesson import lesson, lesson_parser
from space.cli.snapshot import save_outputs
from space.cli.tipping import grid, tipping, tipping_parser
from space.cli.traffic import traffic, traffic_parser
from space.common import defaults, progress
from space.engine.models import ModelError
from space.records.config import ConfigError, EngineSpec, RequestSpec, at_least_one
from space.records.history import HistoryError
from space.records.trace import CompareRecord, dumps
from space.runs import doctor as run_doctor
from space.runs import presets, sweep_plan
from space.runs.flags import apply_memory_budget, engine_flags, spec_from_args
from space.runs.recorder import record_to_history
from space.runs.source import Source, pick
from space.runs.sweep import SweepResult
from space.runs.workloads import WorkloadResult, run_workload
from space.server.client import ServerError
from space.server.flags import pair_from_args, server_flags
from vis import text
from vis.sweep import sweep_figure


def preset_flags(s: argparse.ArgumentParser, workload_required: bool = False) -> None:
    g = s.add_argument_group("presets (presets/*.json)")
    g.add_argument("--workload", required=workload_required,
                   help="a workload id: its prompts, temperature and max tokens")
    g.add_argument("--prompt-id", action="append", default=None,
                   help="only this prompt of the workload (repeatable)")
    g.add_argument("--pair", help="a model-pair id (replaces --model/--method/--draft-model/--k)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m space", description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[3:]))
    p.add_argument("--record", action="store_true",
                   help="save what the command runs to the run history of the data folder "
                        "($SPECLENS_DATA_DIR), which the page's History tab lists")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, helptext in (("trace", "run one prompt through the speculative engine"),
                           ("compare", "baseline vs speculative on one prompt or a workload")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("--prompt", help="the prompt text")
        s.add_argument("--prompt-file", help="read the prompt from this file")
        s.add_argument("--raw", action="store_true", help="send the prompt as is (no chat template)")
        s.add_argument("--max-tokens", type=int, default=None,
                       help="default 128, or the workload's")
        s.add_argument("--temperature", type=float, default=None,
                       help="default 0, or the workload's")
        s.add_argument("--top-p", type=float, default=1.0)
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--json", metavar="PATH", help="write the record as JSON here")
        s.add_argument("--explain", action="store_true",
                       help="after the timed runs, score every verified draft with the target "
                            "(its probability and top 5; one prefill on the baseline engine)")
        s.add_argument("-v", "--verbose", action="store_true", help="show vLLM's logs")
        if name == "compare":
            s.add_argument("--repeats", type=int, default=3, help="measured runs per engine")
            s.add_argument("--concurrency", type=int, default=None,
                           help="with --workload: N requests at once (default the workload's)")
        preset_flags(s)
        engine_flags(s)
        server_flags(s)
    s = sub.add_parser("sweep", help="one workload across a range of k, concurrency, "
                                     "input length or temperature, or k x concurrency")
    s.add_argument("--variable", required=True, choices=sweep_plan.SWEPT)
    s.add_argument("--values", help="comma-separated, e.g. 1,2,4,8 (defaults: k 1..8, "
                                    "concurrency 1,2,4,8,16, input_length 128..3072, "
                                    "temperature 0..1); k_x_concurrency: '1,2,4 x 1,2,4'")
    s.add_argument("--max-batch", type=int, default=256,
                   help="k_x_concurrency: the deployable config's --max-num-seqs (default 256)")
    s.add_argument("--repeats", type=int, default=defaults.REPEATS,
                   help=f"measured runs per engine and point (default {defaults.REPEATS})")
    s.add_argument("--max-tokens", type=int, default=None, help="default the workload's")
    s.add_argument("--csv", metavar="PATH", help="write the results table as CSV")
    s.add_argument("--json", metavar="PATH", help="write the table and every run as JSON")
    s.add_argument("--plot", metavar="PATH", help="write the figure: .html, or .png "
                                                  "(headless chromium)")
    s.add_argument("-v", "--verbose", action="store_true", help="show vLLM's logs")
    preset_flags(s, workload_required=True)
    engine_flags(s)
    server_flags(s)
    tipping_parser(sub)
    traffic_parser(sub)
    lesson_parser(sub)
    s = sub.add_parser("doctor", help="check this machine: hooks, trace counts against vLLM's, "
                                      "step anatomy, GPU memory, available methods")
    s.add_argument("--json", metavar="PATH", help="write the report as JSON here")
    s.add_argument("--max-tokens", type=int, default=None,
                   help="tokens of the short compare (default 32)")
    s.add_argument("-v", "--verbose", action="store_true", help="show vLLM's logs")
    return p


def request_from_args(a: argparse.Namespace) -> RequestSpec:
    """The request from --prompt/--prompt-file, or from the workload's first (or
    --prompt-id) prompt with its temperature and max tokens."""
    temperature, max_tokens = a.temperature, a.max_tokens
    if a.workload:
        if a.prompt or a.prompt_file:
            raise ConfigError("give --prompt/--prompt-file or --workload, not both")
        w = presets.get_workload(a.workload)
        prompt = w.prompt(a.prompt_id[0]).text if a.prompt_id else w.prompts[0].text
        temperature = w.temperature if temperature is None else temperature
        max_tokens = max_tokens or w.max_tokens
    elif a.prompt_file:
        try:
            prompt = Path(a.prompt_file).read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read --prompt-file: {exc.strerror}: {a.prompt_file}") from None
    else:
        prompt = a.prompt or ""
    req = RequestSpec(prompt=prompt, temperature=0.0 if temperature is None else temperature,
                      top_p=a.top_p, max_tokens=max_tokens or 128, seed=a.seed, raw=a.raw)
    req.validate()
    return req


def _compare(a: argparse.Namespace, spec: EngineSpec, req: RequestSpec, ids: list[int],
             source: Source):
    at_least_one(repeats=a.repeats)
    record: WorkloadResult | CompareRecord
    if a.workload:
        if a.concurrency is not None:
            at_least_one(concurrency=a.concurrency)
        if a.explain:
            raise ConfigError("--explain scores one prompt: use --prompt or --prompt-file, "
                              "not --workload")
        record = run_workload(spec, presets.get_workload(a.workload), repeats=a.repeats,
                              source=source, progress=progress.to_terminal,
                              max_tokens=a.max_tokens, temperature=a.temperature,
                              concurrency=a.concurrency, prompt_ids=a.prompt_id)
        print(text.describe_workload(record))
    else:
        record = source.compare(spec, req, repeats=a.repeats, explain=a.explain,
                                concurrency=a.concurrency or 1, prompt_ids=ids)
        print(text.describe_compare(record))
    if record.checklist is not None:
        print(text.describe_checklist(record.checklist))
    return record


def _sweep(a: argparse.Namespace, spec: EngineSpec, source: Source):
    at_least_one(repeats=a.repeats)
    plan = sweep_plan.plan(a.workload, a.variable, a.values, a.repeats, a.max_tokens,
                           a.prompt_id, source)
    if plan.is_grid:
        return grid(a, spec, plan)
    start(source, spec)  # after the input checks: bad input stays one line
    if a.variable == "concurrency":
        prompts = ", ".join(plan.prompt_ids or [p.id for p in plan.workload.prompts])
        print(f"{plan.workload.id} ({prompts}): N requests at once at concurrency N")
    result = sweep_plan.run(spec, plan, progress=progress.to_terminal, source=source)
    assert isinstance(result, SweepResult)
    print(result.table.drop(columns=["variable"]).to_string(index=False, float_format="%.3f"))
    cross = "none" if result.crossover is None else f"{a.variable} = {result.crossover:.3g}"
    print(f"crossover (speedup = 1): {cross}")
    if a.variable == "concurrency":
        tc = result.throughput_crossover
        print("throughput crossover (aggregate tokens/s = baseline): "
              + ("none" if tc is None else f"concurrency = {tc:.3g}"))
    save_outputs(a, result.to_csv, lambda: sweep_figure(
        result, title=f"{plan.workload.title}: sweep over {a.variable}"))
    return result


def start(source: Source, spec: EngineSpec) -> None:
    """The source's checks at start; its lines printed, one each."""
    for line in source.start(spec):
        print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    if a.cmd == "lesson":  # no engine: a file or a history entry in, one HTML file out
        return lesson(a)
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO" if a.verbose else "ERROR")
    if not a.verbose:
        warnings.filterwarnings("ignore", category=FutureWarning)
    logging.basicConfig(level=logging.INFO if a.verbose else logging.WARNING,
                        format="%(message)s")
    if a.cmd == "doctor":  # what works here, and the proof (docs/doctor.md); 1: a check failed
        report = run_doctor.run(max_tokens=a.max_tokens or run_doctor.MAX_TOKENS,
                                progress=progress.to_terminal)
        print(text.doctor_table(report))
        if a.json:
            Path(a.json).write_text(json.dumps(report.to_dict(), indent=2) + "\n")
            print(f"wrote {a.json}")
        return 1 if report.failed else 0
    try:
        spec = spec_from_args(a)
        apply_memory_budget(a)
        if a.record:
            record_to_history(a)
        # the one place a run's source is picked: servers named by the flags, else here
        source = pick(pair_from_args(a, spec))
        if a.cmd == "sweep":
            record = _sweep(a, spec, source)
        elif a.cmd == "tipping":
            record = tipping(a, spec)
        elif a.cmd == "traffic":
            record = traffic(a, spec, source)
        else:
            req = request_from_args(a)
            if a.explain:
                source.require("explain")
            ids = source.encode(spec, req)  # bad input stays one line, before vLLM's import
            start(source, spec)
            if a.cmd == "trace":
                record = source.trace(spec, req, explain=a.explain)
                print(text.describe_run(record))
            else:
                record = _compare(a, spec, req, ids, source)
    except (ConfigError, ModelError, HistoryError, ServerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        # 1: a server down, stuck, failing or missing a flag; 2: bad input
        return 1 if isinstance(exc, ServerError) else 2
    if a.json:
        Path(a.json).write_text(dumps(record))  # the page's writer: compact anatomy, lists on a line
        print(f"wrote {a.json}")
    return 0
