"""What ``--explain`` costs: the scoring pass after a run, against the run itself.

For each method (ngram k=4; draft_model with the target as its own draft, k=4)
and each output length, a timed speculative run is followed by the scoring
pass (one prefill of prompt + output on the baseline engine,
``space/engine/score.py``). Prints the median scoring time, the median
speculative run (end to end), and their ratio, over ``--runs`` runs.

    python benchmarks/bench_explain.py --runs 5
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    from space.engine.pool import EnginePool
    from space.engine.score import explain
    from space.records.config import EngineSpec, RequestSpec
    from space.runs.presets import get_workload

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--max-tokens", default="64,128", help="comma-separated output lengths")
    a = p.parse_args()
    prompt = get_workload("code_editing").prompt("add_rounding").text
    pool = EnginePool()
    print(f"{'method':<12}{'tokens':>7}{'prompt+out':>11}{'score ms':>10}{'run ms':>9}{'ratio':>7}"
          f"{'views':>7}")
    try:
        for method, draft in (("ngram", None), ("draft_model", "default")):
            engine = pool.speculative(EngineSpec(method=method, draft_model=draft, k=4))
            base = pool.baseline(engine.spec)
            for n in (int(x) for x in a.max_tokens.split(",")):
                req = RequestSpec(prompt=prompt, max_tokens=n, ignore_eos=True)
                engine.run(req)  # warm-up
                explain(base, engine.run(req), 0.0, 1.0)
                score, e2e, views, scored = [], [], 0, 0
                for _ in range(a.runs):
                    run = engine.run(req)
                    e = explain(base, run, 0.0, 1.0)
                    score.append(e.score_s)
                    e2e.append(run.e2e_s)
                    views, scored = sum(len(s.target_views) for s in run.steps), e.num_scored_tokens
                s_ms, r_ms = statistics.median(score) * 1e3, statistics.median(e2e) * 1e3
                print(f"{method:<12}{n:>7}{scored:>11}{s_ms:>10.0f}{r_ms:>9.0f}"
                      f"{s_ms / r_ms:>7.2f}{views:>7}", flush=True)
    finally:
        pool.close_all()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
