"""The whole prompt corpus (tests/fixtures/corpus.json) through both engines, every
trace checked against the invariants of tests/helpers/corpus.py, with figures.

Each prompt runs through the baseline and the ngram engine (k=4, temperature 0)
twice, in one process: the prefix cache is emptied before the first pair of
runs (cold) and kept for the second (warm), where prompts of 128n+1 tokens get
vLLM's placeholder drafts. Speedups come from the cold pair, one run each:
per-prompt figures are noisy, the medians per category less so.

    python benchmarks/corpus.py                                 # all prompts
    python benchmarks/corpus.py --shard 1/3 --json /tmp/c1.json  # a third of them
    python benchmarks/corpus.py --report /tmp/c1.json /tmp/c2.json /tmp/c3.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import corpus  # noqa: E402


def run_prompt(p: corpus.CorpusPrompt, base, spec, max_tokens: int) -> dict:
    """Two runs per engine (cold, then warm), all four checked; one row of figures."""
    req = corpus.request(p, spec, max_tokens)
    for e in (base, spec):
        e.reset_prefix_cache()
    runs: dict[str, list] = {"base": [], "spec": []}
    for _ in range(2):
        runs["base"].append(base.run(req))
        runs["spec"].append(spec.run(req))
    failures = []
    vocab = len(spec.tokenizer)
    for i in range(2):
        b, s = runs["base"][i], runs["spec"][i]
        for label, run, ref in (("baseline", b, None), ("ngram", s, b)):
            try:
                corpus.check_trace(run, vocab, baseline=ref)
            except AssertionError as exc:
                failures.append(f"{label} run {i + 1}: {exc}")
    (b, s), warm = (runs["base"][0], runs["spec"][0]), runs["spec"][1]
    return {"id": p.id, "category": p.category, "prompt_tokens": len(s.prompt_token_ids),
            "output_tokens": len(s.output_token_ids), "acceptance_rate": s.acceptance_rate,
            "tpot_speedup": b.tpot_s / s.tpot_s if s.tpot_s > 0 else None,
            "e2e_speedup": b.e2e_s / s.e2e_s if s.e2e_s > 0 else None,
            "outputs_identical": b.output_token_ids == s.output_token_ids,
            "warm_cached_tokens": warm.num_cached_tokens,
            "cold_ttft_ms": s.ttft_s * 1e3, "warm_ttft_ms": warm.ttft_s * 1e3,
            "warm_placeholder_drafts": warm.num_placeholder_draft_tokens,
            "vllm_minus_trace_draft_tokens": (warm.draft_count_difference.vllm_num_draft_tokens
                                              - warm.num_draft_tokens
                                              if warm.draft_count_difference else 0),
            "traces_checked": 4, "failures": failures}


def measure(prompts: list[corpus.CorpusPrompt], max_tokens: int) -> list[dict]:
    from space.engine.pool import EnginePool
    from space.records.config import EngineSpec, MiB

    pool = EnginePool()
    spec = EngineSpec(method="ngram", k=4, kv_cache_bytes=256 * MiB, max_model_len=2048,
                      prefix_cache="warm")
    base, ngram = pool.baseline(spec), pool.speculative(spec)
    rows = []
    for i, p in enumerate(prompts):
        t0 = time.perf_counter()
        rows.append(run_prompt(p, base, ngram, max_tokens))
        r = rows[-1]
        print(f"[{i + 1}/{len(prompts)}] {p.id:<24} {r['prompt_tokens']:>5} tok, "
              f"{time.perf_counter() - t0:5.1f} s, failures {len(r['failures'])}", flush=True)
    pool.close_all()
    return rows


def _median(values) -> str:
    values = [v for v in values if v is not None]
    return f"{statistics.median(values):.2f}" if values else "n/a"


def report(rows: list[dict]) -> str:
    cats = sorted({r["category"] for r in rows})
    lines = [f"{'category':<14}{'prompts':>8}{'accept':>8}{'TPOT x':>8}{'e2e x':>7}"
             f"{'identical':>11}{'padded warm':>13}"]
    for c in cats:
        rs = [r for r in rows if r["category"] == c]
        lines.append(
            f"{c:<14}{len(rs):>8}{_median(r['acceptance_rate'] for r in rs):>8}"
            f"{_median(r['tpot_speedup'] for r in rs):>8}{_median(r['e2e_speedup'] for r in rs):>7}"
            f"{sum(r['outputs_identical'] for r in rs):>7}/{len(rs):<3}"
            f"{sum(1 for r in rs if r['warm_placeholder_drafts']):>13}")
    fails = [f"{r['id']}: {f}" for r in rows for f in r["failures"]]
    padded = [r for r in rows if r["warm_placeholder_drafts"]]
    lines += [
        f"all: {len(rows)} prompts, {sum(r['traces_checked'] for r in rows)} traces checked, "
        f"{len(fails)} invariant failures; median acceptance "
        f"{_median(r['acceptance_rate'] for r in rows)}, median TPOT speedup "
        f"{_median(r['tpot_speedup'] for r in rows)}x (cold runs, one each)",
        f"warm runs padded with placeholder drafts (vLLM counts them, the trace does not): "
        f"{', '.join(r['id'] for r in padded) or 'none'}; vLLM minus trace draft tokens: "
        f"{[r['vllm_minus_trace_draft_tokens'] for r in padded]}",
        f"warm TTFT / cold TTFT (ngram), median over prompts of 256+ tokens: "
        f"{_median(r['warm_ttft_ms'] / r['cold_ttft_ms'] for r in rows if r['prompt_tokens'] >= 256)}",
    ]
    return "\n".join(lines + [f"FAIL {f}" for f in fails])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--shard", default="1/1", help="i/n: the i-th of n equal parts")
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--report", nargs="+", metavar="JSON", help="merge row files and report")
    a = p.parse_args()
    if a.report:
        rows = [r for f in a.report for r in json.loads(Path(f).read_text())]
    else:
        i, n = (int(x) for x in a.shard.split("/"))
        prompts = corpus.load()[i - 1::n]
        print(f"corpus shard {i}/{n}: {len(prompts)} prompts, max_tokens {a.max_tokens}, "
              f"ngram k=4, temperature 0, {os.cpu_count()} CPUs")
        rows = measure(prompts, a.max_tokens)
        if a.json:
            Path(a.json).write_text(json.dumps(rows, indent=1))
    print(report(rows))
    return 1 if any(r["failures"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
