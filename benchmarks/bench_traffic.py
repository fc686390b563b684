"""A mixed-task question file, Spec-Bench's format, through ``space.runs.traffic``:
per-category acceptance and speedup, beside each category's first prompt alone.

The file (benchmarks/traffic_questions.jsonl) is written for this project in
Spec-Bench's question.jsonl shape ({"question_id", "category", "turns"}): no
package on PyPI ships MT-Bench's or Spec-Bench's questions (fschat 0.2.36 has
none), and this machine reaches nothing else. Any question.jsonl of that shape
can be passed instead.

Per category: the traffic run's group figures (acceptance pooled over its
prompts, median speedup and spread over them, verdict) and the category's first
prompt alone, as one ``python -m space compare --prompt`` would report it. With
``--fresh-compares`` that prompt is compared again on its own (a separate
``runner.compare``); otherwise its record from the traffic run is shown.

    python benchmarks/bench_traffic.py                        # 3 a category, ~5 min
    python benchmarks/bench_traffic.py --per-group 2 --max-tokens 32 --fresh-compares
    python benchmarks/bench_traffic.py --file question.jsonl --json /tmp/traffic.json
    python benchmarks/bench_traffic.py --concurrency 4        # a category's prompts 4 at once

At ``--concurrency`` N > 1 a category's prompts run N at once (its 3 prompts and
one of them again); its first prompt's record then comes from its batch (the
column says so), or, with ``--fresh-compares``, from a compare on its own.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from space.judge.traffic import TrafficResult, describe  # noqa: E402
from space.records.config import EngineSpec  # noqa: E402
from space.runs.traffic_file import parse  # noqa: E402
from space.runs.traffic_groups import plan  # noqa: E402

QUESTIONS = Path(__file__).resolve().parent / "traffic_questions.jsonl"


def cpu_model() -> str:
    """The CPU's model name and whether it has bf16 instructions (AMX, AVX-512 BF16)."""
    name, flags = platform.processor() or "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                name = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    except OSError:
        pass
    bf16 = [f for f in ("amx_bf16", "avx512_bf16") if f in flags]
    return f"{name}; bf16 instructions: {', '.join(bf16) or 'none'}; {os.cpu_count()} cores"


def alone(result: TrafficResult, spec: EngineSpec, fresh: bool, max_tokens: int,
          repeats: int) -> dict[str, tuple[float, float | None]]:
    """Per group, (speedup, acceptance) of its first prompt compared on its own."""
    out = {}
    for g in result.groups:
        first = min((it for it in result.items if it.group == g.group), key=lambda it: it.line)
        cmp = first.compare
        if fresh:
            from space.records.config import RequestSpec
            from space.runs import runner

            run = cmp.speculative
            req = RequestSpec(prompt=run.prompt, max_tokens=max_tokens,
                              temperature=first.temperature)
            cmp = runner.compare(spec, req, repeats=repeats, warmup="once")
        out[g.group] = (cmp.speedup, cmp.speculative.acceptance_rate)
    return out


def table(result: TrafficResult, single: dict[str, tuple[float, float | None]],
          first: str = "first prompt alone") -> str:
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    lines = ["| category | prompts | acceptance | speedup (spread) | verdict | "
             f"{first}: acceptance | speedup |", "|---|---|---|---|---|---|---|"]
    for g in result.groups:
        spread = (f" ({g.speedup_spread[0]:.2f}-{g.speedup_spread[1]:.2f})"
                  if g.speedup_spread else "")
        s, a = single[g.group]
        lines.append(f"| {g.group} | {g.prompts} | {pct(g.acceptance_rate)} | "
                     f"{g.speedup:.2f}x{spread} | {g.verdict} | {pct(a)} | {s:.2f}x |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--file", default=str(QUESTIONS))
    p.add_argument("--per-group", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--concurrency", type=int, default=1, help="a category's prompts N at once")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--fresh-compares", action="store_true",
                   help="compare each category's first prompt again, on its own")
    p.add_argument("--json", help="write the traffic result here")
    a = p.parse_args()
    from space.runs.traffic import run_traffic

    print(f"machine: {cpu_model()}; dtype {a.dtype}", flush=True)
    traffic = parse(Path(a.file).read_bytes(), Path(a.file).name)
    print(traffic.describe(), flush=True)
    spec = EngineSpec(method="ngram", k=a.k, dtype=a.dtype)
    start = time.perf_counter()
    result = run_traffic(spec, plan(traffic, per_group=a.per_group, max_prompts=10_000),
                         file_name=Path(a.file).name, repeats=a.repeats, max_tokens=a.max_tokens,
                         progress=lambda f, m: print(f"  {f:4.0%} {m}", flush=True),
                         concurrency=a.concurrency)
    single = alone(result, spec, a.fresh_compares, a.max_tokens, a.repeats)
    first = ("first prompt alone" if a.fresh_compares or a.concurrency == 1
             else "first prompt, in its batch")
    print(f"\n{describe(result)}\n\n{table(result, single, first)}")
    print(f"\nngram k={a.k}, concurrency {a.concurrency}, {a.max_tokens} tokens, "
          f"{a.repeats} repeats; "
          f"{time.perf_counter() - start:.0f} s; machine: {cpu_model()}")
    if a.json:
        Path(a.json).write_text(json.dumps(result.to_dict()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
