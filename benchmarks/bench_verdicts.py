"""The verdict per workload on this machine: where "code edits gain, creative writing
does not" is measured (it used to be a test, and failed on a slower CPU).

    python benchmarks/bench_verdicts.py [--repeats 3] [--dtype float32] [--json out.json]

For each workload (structured output, code editing, creative writing; ngram k=4)
and for the bad-draft pair (a layer-truncated copy drafting for the default):
every prompt through the baseline and the speculative engine, alternating, then
the checklist. Prints one row per workload with its speedup, spread,
acceptance and verdict, and the machine: CPU model, its bf16 units, the dtype
and why. A verdict here is a time: it holds for this machine and dtype only.
Run it alone (a second CPU-heavy process on 2 cores slows runs several-fold).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# (workload, max_tokens): the lengths the old engine test used
WORKLOADS = (("structured_output", 48), ("code_editing", 48), ("creative_writing", 64))


def run(repeats: int, dtype: str | None) -> list[dict]:
    from space.engine import hardware
    from space.engine.pool import EnginePool
    from space.records.config import EngineSpec
    from space.runs import presets
    from space.runs.source import Engines
    from space.runs.workloads import run_workload

    pool = EnginePool()
    ngram = hardware.resolve_spec(EngineSpec(method="ngram", k=4, dtype=dtype, max_model_len=2048))
    bad = dataclasses.replace(presets.get_model_pair("cpu-bad-draft").engine_spec(),
                              dtype=ngram.dtype, max_model_len=2048)
    jobs = [(wid, wid, ngram, tokens, None) for wid, tokens in WORKLOADS]
    jobs.append(("bad draft (structured_output)", "structured_output", bad, 32, None))
    rows = []
    for label, wid, spec, tokens, prompt_ids in jobs:
        r = run_workload(spec, presets.get_workload(wid), repeats=repeats,
                         source=Engines(pool),
                         max_tokens=tokens, prompt_ids=prompt_ids)
        rows.append({"workload": label, "method": spec.method, "dtype": spec.dtype,
                     "speedup": r.speedup, "spread": list(r.speedup_spread or ()),
                     "acceptance_rate": r.acceptance_rate, "verdict": r.verdict,
                     "prompts": [{"prompt": p["prompt"], "speedup": p["speedup"],
                                  "acceptance_rate": p["acceptance_rate"],
                                  "verdict": p["verdict"]} for p in r.rows()]})
        print(_row(rows[-1]), flush=True)
    pool.close_all()
    return rows


def _row(r: dict) -> str:
    rate = "n/a" if r["acceptance_rate"] is None else f"{r['acceptance_rate']:.0%}"
    spread = "-".join(f"{x:.2f}" for x in r["spread"]) or "n/a"
    return (f"{r['workload']:<32}{r['speedup']:>7.2f}x  spread {spread:<11} acceptance "
            f"{rate:>4}  {r['verdict']}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dtype", default=None, help="default: what SpecLens picks here")
    p.add_argument("--json", type=Path, help="write the rows and the machine here")
    a = p.parse_args()
    from space.engine import hardware

    spec_dtype = hardware.choose_dtype(a.dtype)
    flags = list(hardware.cpu_bf16_flags())
    machine = {"cpu_model": hardware.cpu_model(), "cpus": os.cpu_count(),
               "cpu_bf16_flags": flags, "dtype": f"{spec_dtype.dtype} ({spec_dtype.reason})"}
    print(f"machine: {machine['cpu_model']}, {machine['cpus']} CPUs, bf16 units: "
          f"{', '.join(flags) or 'none'}; dtype {machine['dtype']}; "
          f"{a.repeats} repeats per prompt, temperature per workload, cold prefix cache")
    rows = run(a.repeats, a.dtype)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"machine": machine, "repeats": a.repeats, "rows": rows},
                                     indent=1))
        print(f"wrote {a.json}")


if __name__ == "__main__":
    main()
