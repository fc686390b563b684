"""An answer you can trust, measured: intervals per group, the prompts ``--until-decided``
needed, and ``--validate``'s check, on a public mixed-task question file.

The file is benchmarks/answer_questions.jsonl (Spec-Bench's question.jsonl shape,
written for this project: the issue's 6 categories, 8 prompts each, so that
--until-decided has unseen prompts to add and --validate has two halves); any
file of that shape can be passed. Each category is a group. The run:

  1. samples ``--per-group`` prompts a category and answers: per group the ratio
     of totals with its 90 % CI, the prediction interval for the next 3 prompts,
     and the verdict (``space/judge/estimate.py``);
  2. with ``--until-decided`` (the default here), measures unseen prompts of the
     undecided groups until they are decided or ``--max-prompts`` /
     ``--max-minutes`` are spent, and records how many each group needed;
  3. checks the answer against prompts it never saw (``--validate``): each group's
     prompts in halves, the first half's prediction interval against the second
     half's ratio of totals (4+ prompts a group, else one line).

    python benchmarks/bench_answer.py --json docs/benchmarks/answer.json      # ~20-30 min
    python benchmarks/bench_answer.py --categories coding,writing --lines-per-category 3 \\
        --per-group 1 --max-tokens 8 --max-prompts 4 --repeats 1            # smoke, ~1 min
    python benchmarks/bench_answer.py --from-json docs/benchmarks/traffic.json  # no engine:
                                                       re-answer a saved traffic run's items

Run it alone: a second CPU-heavy process on 2 cores changes every timing (the
figures are only comparable on an idle machine). The machine, the dtype and
the date are written beside the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from space.judge import validate  # noqa: E402
from space.judge.traffic import TrafficItem, TrafficResult, answer, describe  # noqa: E402
from space.records.trace import CompareRecord  # noqa: E402

QUESTIONS = Path(__file__).resolve().parent / "answer_questions.jsonl"


def reanswer(path: Path) -> TrafficResult:
    """A saved traffic run (``--json`` of ``python -m space traffic``, with its items)
    answered again by today's estimator and rule: no engine."""
    d = json.loads(path.read_text())
    if "items" not in d:
        raise SystemExit(f"{path} has no items (saved without its prompts)")
    items = [TrafficItem(i["group"], i["line"], CompareRecord.from_dict(i["compare"]),
                         i.get("temperature", 0.0), i.get("response_tokens"))
             for i in d["items"]]
    counts = {g["group"]: g["requests"] for g in d["groups"]}
    return answer(d["source"], d["how"], items, counts, None, repeats=d["repeats"],
                  max_tokens=d["max_tokens"])


def measured(a: argparse.Namespace) -> TrafficResult:
    """The question file through both engines, until decided within the budget."""
    from space.records.config import EngineSpec
    from space.runs.traffic import Budget, run_traffic
    from space.runs.traffic_file import parse
    from space.runs.traffic_groups import plan

    data = Path(a.file).read_bytes()
    if a.categories or a.lines_per_category:  # a smaller file for a smoke run
        seen: dict[str, int] = {}
        kept = []
        for line in data.splitlines():
            cat = str(json.loads(line).get("category")) if line.strip() else ""
            if a.categories and cat not in a.categories.split(","):
                continue
            seen[cat] = seen.get(cat, 0) + 1
            if not a.lines_per_category or seen[cat] <= a.lines_per_category:
                kept.append(line)
        data = b"\n".join(kept) + b"\n"
    traffic = parse(data, Path(a.file).name)
    p = plan(traffic, a.per_group, a.max_prompts, a.seed)
    spec = EngineSpec(method="ngram", k=4, max_model_len=2048)
    budget = Budget(a.max_prompts, a.max_minutes, seed=a.seed) if a.until_decided else None
    return run_traffic(spec, p, file_name=Path(a.file).name, repeats=a.repeats,
                       max_tokens=a.max_tokens, until_decided=budget,
                       progress=lambda f, m: print(f"  [{f:4.0%}] {m}", flush=True))


def machine(result: TrafficResult) -> dict:
    c = result.config
    return {"cpu_model": c.cpu_model, "cpus": os.cpu_count(), "device": c.device,
            "dtype": c.dtype, "dtype_reason": c.dtype_reason,
            "date": time.strftime("%Y-%m-%d", time.gmtime())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", default=str(QUESTIONS))
    ap.add_argument("--from-json", type=Path, help="re-answer a saved traffic run; no engine")
    ap.add_argument("--per-group", type=int, default=4)
    ap.add_argument("--max-prompts", type=int, default=48, help="in all, with the rounds")
    ap.add_argument("--max-minutes", type=float, default=30.0)
    ap.add_argument("--no-until-decided", dest="until_decided", action="store_false")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--categories", default="", help="comma-separated: only these (smoke)")
    ap.add_argument("--lines-per-category", type=int, default=0,
                    help="the first N lines of each category only (smoke)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    a = ap.parse_args(argv)
    started = time.perf_counter()
    result = reanswer(a.from_json) if a.from_json else measured(a)
    checks, short = validate.validate(result.by_group())
    result.validation = validate.summary(checks, short)
    print(describe(result))
    out = {"machine": machine(result), "command": " ".join(sys.argv),
           "source": (f"re-answered from {a.from_json} (timings as recorded there; 'date' is "
                      "the re-analysis')" if a.from_json else "measured by this run"),
           "wall_s": round(time.perf_counter() - started, 1),
           "groups": result.group_rows(), "weighted_speedup": result.weighted_speedup,
           "weighted_speedup_ci": result.summary()["weighted_speedup_ci"],
           "until_decided": result.until_decided, "validation": result.validation,
           "deployment": result.deployment.describe()}
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
        print(f"wrote {a.json}")
    else:
        Path(tempfile.gettempdir(), "bench_answer.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
