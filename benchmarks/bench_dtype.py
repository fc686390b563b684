"""bf16 against float32 on this CPU: the same prompt, four engines in one process.

Why: on a CPU without bf16 units, bf16 matrix products are emulated. A
one-token decode step costs about the same in both dtypes, but prefill and the
(1 + k)-token verify pass of speculative decoding are several times slower, so
bf16 can turn a gain into a loss (an AVX2 EPYC: 1.33x in float32, 0.87x in bf16).
SpecLens therefore runs float32 there (space/engine/hardware.py); this prints what
each dtype gives on the machine it runs on, beside the machine's probes.

    python benchmarks/bench_dtype.py [--runs 5] [--max-tokens 64] [--json out.json]

Engines: baseline and ngram k=4, each in bfloat16 and in float32, built once;
then ``--runs`` rounds, each running all four on the extraction prompt of the
page's samples (temperature 0, cold prefix cache), the order reversed every
other round. Figures are medians over rounds; speedup = baseline TPOT / ngram
TPOT per round, per dtype. Run it alone: a second CPU-heavy process on 2 cores
slows every figure several-fold.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DTYPES = ("bfloat16", "float32")


def extraction_request(max_tokens: int):
    """The structured-output workload's first prompt: the page's extraction sample."""
    from space.runs import presets
    from space.runs.workloads import requests_for

    w = presets.get_workload("structured_output")
    return requests_for(w, max_tokens=max_tokens, temperature=0.0,
                        prompt_ids=[w.prompts[0].id])[0][1]


def machine() -> dict:
    from space.engine import hardware

    choice = hardware.choose_dtype()
    return {"cpu_model": hardware.cpu_model(), "cpus": os.cpu_count(),
            "cpu_bf16_flags": list(hardware.cpu_bf16_flags()),
            "speclens_default_dtype": f"{choice.dtype} ({choice.reason})"}


def run(runs: int, max_tokens: int) -> dict:
    from space.engine.core import TracedEngine
    from space.judge import measure
    from space.records.config import EngineSpec
    from space.records.trace import DECODE, VERIFY

    req = extraction_request(max_tokens)
    engines = {(d, m): TracedEngine(EngineSpec(method=m, k=4, dtype=d, max_model_len=2048))
               for d in DTYPES for m in (None, "ngram")}
    for e in engines.values():
        e.run(req)  # warm-up
    traces: dict[tuple, list] = {key: [] for key in engines}
    order = list(engines)
    for i in range(runs):
        for key in (order if i % 2 == 0 else order[::-1]):
            traces[key].append(engines[key].run(req))
    out: dict = {}
    for d in DTYPES:
        base, spec = traces[(d, None)], traces[(d, "ngram")]
        speedups = [b.tpot_s / s.tpot_s for b, s in zip(base, spec, strict=True)]
        decode, verify = measure.step_median(base, DECODE), measure.step_median(spec, VERIFY)
        out[d] = {
            "ttft_ms": {"baseline": _ms(r.ttft_s for r in base), "ngram": _ms(r.ttft_s for r in spec)},
            "tpot_ms": {"baseline": _ms(r.tpot_s for r in base), "ngram": _ms(r.tpot_s for r in spec)},
            "speedup_median": statistics.median(speedups),
            "speedup_min": min(speedups), "speedup_max": max(speedups),
            "decode_step_ms": None if decode is None else decode * 1e3,
            "verify_step_ms": None if verify is None else verify * 1e3,
            "acceptance_rate": spec[-1].acceptance_rate,
            "output_tokens": len(spec[-1].output_token_ids),
        }
    for e in engines.values():
        e.close()
    return out


def _ms(values) -> float:
    return statistics.median(values) * 1e3


def report(m: dict, res: dict, runs: int, max_tokens: int) -> str:
    lines = [f"machine: {m['cpu_model']}, {m['cpus']} CPUs, bf16 units: "
             f"{', '.join(m['cpu_bf16_flags']) or 'none'}; SpecLens picks "
             f"{m['speclens_default_dtype']}",
             f"extraction prompt, ngram k=4, {max_tokens} tokens, temperature 0, "
             f"{runs} alternating rounds (medians)",
             f"{'':<22}{'bfloat16':>12}{'float32':>12}"]
    rows = [("TTFT baseline ms", lambda r: r["ttft_ms"]["baseline"]),
            ("TTFT ngram ms", lambda r: r["ttft_ms"]["ngram"]),
            ("TPOT baseline ms", lambda r: r["tpot_ms"]["baseline"]),
            ("TPOT ngram ms", lambda r: r["tpot_ms"]["ngram"]),
            ("decode step ms", lambda r: r["decode_step_ms"]),
            ("verify step ms", lambda r: r["verify_step_ms"]),
            ("verify / decode", lambda r: (r["verify_step_ms"] or 0) / (r["decode_step_ms"] or 1)),
            ("speedup (TPOT)", lambda r: r["speedup_median"]),
            ("acceptance rate", lambda r: r["acceptance_rate"] or 0.0)]
    for label, get in rows:
        lines.append(f"{label:<22}" + "".join(f"{get(res[d]):>12.2f}" for d in DTYPES))
    lines.append("speedup spread (min-max): " + ", ".join(
        f"{d} {res[d]['speedup_min']:.2f}-{res[d]['speedup_max']:.2f}" for d in DTYPES))
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--json", type=Path, help="write the figures and the machine here")
    a = p.parse_args()
    m = machine()
    res = run(a.runs, a.max_tokens)
    print(report(m, res, a.runs, a.max_tokens))
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"machine": m, "runs": a.runs, "max_tokens": a.max_tokens,
                                      "results": res}, indent=1))
        print(f"wrote {a.json}")


if __name__ == "__main__":
    main()
