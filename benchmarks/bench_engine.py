"""Engine benchmarks: tracing overhead, tracing settings, two engines, start time.

Prints figures side by side with vLLM run plainly (``vllm.LLM``) in the same
process. Ratios, not absolute numbers, are what to read: this machine is noisy.
Every run, traced or plain, starts with a cold prefix cache (the app's default):
the same prompt is run again and again, and a warm cache would measure
something no new prompt gets.

    python benchmarks/bench_engine.py            # all sections
    python benchmarks/bench_engine.py --runs 10 --section overhead
    python benchmarks/bench_engine.py --section anatomy --dtype float32 --runs 3

Sections:
  start     engine start time for the CPU default (baseline and ngram)
  overhead  traced ngram engine vs the same configuration run plainly, and vs
            vLLM's default settings (async scheduling on): median tokens/s
            ratio over alternating runs in one process, with its spread. The
            traced engine times every step's parts (step anatomy) as the app does
  anatomy   where a decode step's and a verify step's time goes (k = 1, 2, 4, 8,
            ngram, verify steps with exactly k drafts), at --dtype, with the CPU model
  baseline  the traced baseline engine (no speculation: the denominator of
            every speedup) vs vLLM's LLM with the same settings
  speedup   the app's end-to-end speedup (traced baseline and ngram engines)
            vs plain vLLM's (LLM without and with ngram), four engines in one
            process, alternating, same prompt
  two       each engine in one process with the other vs alone (subprocesses)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROMPT = ("Rename the variable x to total in this code and output the whole code:\n\n"
          "def add(a, b):\n    x = a + b\n    print(x)\n    return x\n\n"
          "def mul(a, b):\n    x = a * b\n    print(x)\n    return x\n")
MAX_TOKENS = 128


def _req():
    from space.records.config import RequestSpec
    return RequestSpec(prompt=PROMPT, max_tokens=MAX_TOKENS)


def _spec(method):
    """ngram k=4, or the target drafting for itself (the only CPU draft that accepts)."""
    from space.records.config import EngineSpec
    draft = "default" if method == "draft_model" else None
    return EngineSpec(method=method, k=4, draft_model=draft)


def _timed(fn) -> float:
    """tokens/s of one call, timed outside the engine the same way for every side."""
    t0 = time.perf_counter()
    n = fn()
    return n / (time.perf_counter() - t0)


def plain_llm(method: str | None, defaults: bool):
    """``vllm.LLM`` with the engine settings SpecLens uses, minus its scheduler."""
    from vllm import LLM

    from space.engine import models
    from space.engine.core import engine_kwargs
    from space.records.config import TracingSettings
    path = models.prepare_default()
    draft = str(path) if method == "draft_model" else None
    kw = engine_kwargs(_spec(method), path, draft, TracingSettings(), tracing=False)
    if not defaults:
        kw["async_scheduling"] = False  # the tracing setting; defaults let vLLM choose
    from space.engine.compat import guard_kernel_scan
    guard_kernel_scan()
    return LLM(**kw)


def _seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def plain_runner(llm, ids, outputs: list | None = None):
    """One plain run per call; the output token ids go to ``outputs`` when given."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt
    sp = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS, seed=0)

    def run():
        llm.reset_prefix_cache()  # cold, as TracedEngine does before each run
        out = llm.generate([TokensPrompt(prompt_token_ids=ids)], sp, use_tqdm=False)
        if outputs is not None:
            outputs.append(list(out[0].outputs[0].token_ids))
        return len(out[0].outputs[0].token_ids)
    return run


def traced_runner(engine, runs: list | None = None):
    """One traced run per call; the traces go to ``runs`` when given."""
    req = _req()

    def run():
        trace = engine.run(req)
        if runs is not None:
            runs.append(trace)
        return len(trace.output_token_ids)
    return run


def alternate(runners: dict, runs: int, measure=_timed) -> dict[str, list[float]]:
    """Warm-up, then ``runs`` rounds; odd rounds run the engines in reverse order."""
    for r in runners.values():
        r()  # warm-up
    out: dict[str, list[float]] = {k: [] for k in runners}
    names = list(runners)
    for i in range(runs):
        order = names if i % 2 == 0 else names[::-1]
        for k in order:
            out[k].append(measure(runners[k]))
    return out


def ratio_line(label, num, den) -> str:
    ratios = [a / b for a, b in zip(num, den, strict=False)]
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [min(ratios), 0, max(ratios)]
    return (f"{label:<44} median {statistics.median(ratios):.3f}  "
            f"IQR {q[0]:.3f}-{q[2]:.3f}  min {min(ratios):.3f}  max {max(ratios):.3f}")


def cpu_model() -> str:
    """The CPU's model name and its bf16 support (what a bf16 figure depends on)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    name = next((ln.split(":", 1)[1].strip() for ln in info.splitlines()
                 if ln.startswith("model name")), "unknown CPU")
    flags = next((ln.split(":", 1)[1].split() for ln in info.splitlines()
                  if ln.startswith("flags")), [])
    bf16 = [f for f in ("avx512_bf16", "amx_bf16") if f in flags]
    return f"{name}; bf16 in hardware: {', '.join(bf16) if bf16 else 'no (emulated)'}"


ANATOMY_COLUMNS = ("forward", "sampling", "rejection", "proposer", "scheduling", "recording",
                   "other")


def _anatomy_row(label: str, steps: list, decode_forward_ms: float | None) -> tuple[str, float]:
    """Median ms per part over ``steps`` (each with an anatomy), one printed line."""
    from space.records.anatomy import breakdown
    parts = [breakdown(s.anatomy, s.duration_s) for s in steps]
    med = {p: statistics.median(b[p] for b in parts) * 1e3 for p in ANATOMY_COLUMNS}
    step_ms = statistics.median(s.duration_s for s in steps) * 1e3
    ratio = f"{med['forward'] / decode_forward_ms:5.2f}x" if decode_forward_ms else "    -"
    cells = " ".join(f"{med[p]:9.2f}" for p in ANATOMY_COLUMNS)
    return (f"  {label:<22} n={len(steps):<4} {step_ms:8.2f} {cells}  {ratio}",
            med["forward"])


def section_anatomy(runs: int, dtype: str, ks: list[int]) -> None:
    """The anatomy of a decode step (baseline) and of verify steps at each k (ngram)."""
    import dataclasses

    from space.engine.core import TracedEngine
    from space.records.trace import DECODE, VERIFY
    print(f"step anatomy, {dtype}, {cpu_model()}; median ms per step over {runs} runs of "
          f"{MAX_TOKENS} tokens")
    print(f"  {'step':<22} {'':<6} {'step ms':>8} " + " ".join(f"{p:>9}" for p in ANATOMY_COLUMNS)
          + "  fwd/decode fwd")

    def steps_of(spec, keep) -> list:
        engine = TracedEngine(spec)
        try:
            engine.run(_req())  # warm-up
            return [s for _ in range(runs) for s in engine.run(_req()).steps
                    if s.anatomy is not None and keep(s)]
        finally:
            engine.close()

    base = dataclasses.replace(_spec(None), dtype=dtype)
    line, decode_fwd = _anatomy_row("decode (baseline)", steps_of(base, lambda s: s.kind == DECODE),
                                    None)
    print(line)
    for k in ks:
        spec = dataclasses.replace(_spec("ngram"), k=k, dtype=dtype)
        steps = steps_of(spec, lambda s, k=k: s.kind == VERIFY and s.num_draft_tokens == k)
        if steps:
            print(_anatomy_row(f"verify k={k} ({k + 1} tokens)", steps, decode_fwd)[0])
        else:
            print(f"  verify k={k}: no verify step with {k} drafts on this prompt")


def section_start() -> None:
    from space.engine.core import TracedEngine
    for method in (None, "ngram"):
        e = TracedEngine(_spec(method))
        print(f"engine start, {method or 'baseline':<9} {e.build_s:6.1f} s  (target <= 20 s)")
        e.close()


def section_overhead(runs: int, method: str) -> None:
    from space.engine.core import TracedEngine
    traced = TracedEngine(_spec(method))
    ids = traced.encode(_req())
    runners = {"traced": traced_runner(traced),
               "plain": plain_runner(plain_llm(method, defaults=False), ids),
               "default": plain_runner(plain_llm(method, defaults=True), ids)}
    res = alternate(runners, runs)
    print(f"{method}: traced engine vs vLLM's LLM, same process, alternating")
    for k, v in res.items():
        print(f"  {k:<8} tokens/s median {statistics.median(v):6.1f}  "
              f"min {min(v):6.1f}  max {max(v):6.1f}  (n={len(v)})")
    print(ratio_line("tracing overhead: traced / plain (same cfg)", res["traced"], res["plain"]))
    print(ratio_line("tracing settings: traced / vLLM defaults", res["traced"], res["default"]))


def section_baseline(runs: int) -> None:
    from space.engine.core import TracedEngine
    traced = TracedEngine(_spec(None))
    ids = traced.encode(_req())
    res = alternate({"traced": traced_runner(traced),
                     "plain": plain_runner(plain_llm(None, defaults=False), ids)}, runs)
    print("baseline (no speculation): traced engine vs vLLM's LLM, same settings, "
          "same process, alternating")
    for k, v in res.items():
        print(f"  {k:<8} tokens/s median {statistics.median(v):6.1f}  "
              f"min {min(v):6.1f}  max {max(v):6.1f}  (n={len(v)})")
    print(ratio_line("traced baseline / plain baseline (tok/s)", res["traced"], res["plain"]))
    traced.close()


def section_speedup(runs: int) -> None:
    """End-to-end seconds per run; speedup = baseline seconds / ngram seconds, per round."""
    from space.engine.core import TracedEngine
    app_base, app_ngram = TracedEngine(_spec(None)), TracedEngine(_spec("ngram"))
    ids = app_base.encode(_req())
    traces: dict[str, list] = {"base": [], "ngram": []}
    plain: dict[str, list] = {"base": [], "ngram": []}
    runners = {"app baseline": traced_runner(app_base, traces["base"]),
               "app ngram": traced_runner(app_ngram, traces["ngram"]),
               "vLLM baseline": plain_runner(plain_llm(None, defaults=False), ids, plain["base"]),
               "vLLM ngram": plain_runner(plain_llm("ngram", defaults=False), ids,
                                          plain["ngram"])}
    res = alternate(runners, runs, measure=_seconds)
    print("end-to-end speedup, ngram k=4 over no speculation: the app's traced engines vs "
          "vLLM's LLM, four engines in one process, alternating")
    for k, v in res.items():
        print(f"  {k:<14} e2e median {statistics.median(v) * 1e3:7.0f} ms  "
              f"min {min(v) * 1e3:7.0f}  max {max(v) * 1e3:7.0f}  (n={len(v)})")
    app = [b / n for b, n in zip(res["app baseline"], res["app ngram"], strict=True)]
    vllm = [b / n for b, n in zip(res["vLLM baseline"], res["vLLM ngram"], strict=True)]
    print(ratio_line("app speedup (wall clock, per round)", app, [1.0] * len(app)))
    print(ratio_line("plain vLLM speedup (per round)", vllm, [1.0] * len(vllm)))
    print(ratio_line("app speedup / plain vLLM speedup", app, vllm))
    # What the page shows: the traces' own arrival-to-finish times (warm-up dropped).
    reported = [b.e2e_s / n.e2e_s for b, n in zip(traces["base"][1:], traces["ngram"][1:],
                                                    strict=True)]
    print(ratio_line("app speedup as the page reports it (trace e2e)", reported,
                     [1.0] * len(reported)))
    outputs = {"app baseline": traces["base"][-1].output_token_ids,
               "app ngram": traces["ngram"][-1].output_token_ids,
               "vLLM baseline": plain["base"][-1], "vLLM ngram": plain["ngram"][-1]}
    print("  output tokens: " + ", ".join(f"{k} {len(v)}" for k, v in outputs.items())
          + "; app and vLLM outputs identical: baseline "
          f"{outputs['app baseline'] == outputs['vLLM baseline']}, ngram "
          f"{outputs['app ngram'] == outputs['vLLM ngram']}")


def _child(which: str, runs: int) -> None:
    """Subprocess body for section 'two': prints JSON tokens/s lists."""
    from space.engine.core import TracedEngine
    engines = {m: TracedEngine(_spec(None if m == "baseline" else m))
               for m in (["baseline", "ngram"] if which == "both" else [which])}
    res = alternate({m: traced_runner(e) for m, e in engines.items()}, runs)
    print("RESULT " + json.dumps(res))


def _spawn(which: str, runs: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", which, "--runs", str(runs)],
                         capture_output=True, text=True, check=True)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[7:])


def section_two(runs: int) -> None:
    both = _spawn("both", runs)
    for m in ("baseline", "ngram"):
        alone = _spawn(m, runs)[m]
        together = both[m]
        r = statistics.median(together) / statistics.median(alone)
        print(f"two engines, {m:<8} alone {statistics.median(alone):6.1f} tok/s, "
              f"with the other {statistics.median(together):6.1f} tok/s: "
              f"{r:.1%} of alone (target >= 90%)")


def main() -> None:
    global MAX_TOKENS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--section", choices=["start", "overhead", "baseline", "speedup", "two",
                                          "anatomy", "all"], default="all")
    p.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16",
                   help="the anatomy section's dtype")
    p.add_argument("--ks", default="1,2,4,8", help="the anatomy section's k values")
    p.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--methods", default="ngram,draft_model",
                   help="methods for the overhead section (draft_model: the target drafts for itself)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        return _child(a.child, a.runs)
    MAX_TOKENS = a.max_tokens
    print(f"prompt: code edit, max_tokens {MAX_TOKENS}, temperature 0, k=4, "
          f"{os.cpu_count()} CPUs")
    if a.section in ("start", "all"):
        section_start()
    if a.section in ("overhead", "all"):
        for method in a.methods.split(","):
            section_overhead(a.runs, method)
    if a.section in ("baseline", "all"):
        section_baseline(a.runs)
    if a.section in ("speedup", "all"):
        section_speedup(a.runs)
    if a.section in ("two", "all"):
        section_two(a.runs)
    if a.section in ("anatomy", "all"):
        section_anatomy(a.runs, a.dtype, [int(k) for k in a.ks.split(",")])


if __name__ == "__main__":
    main()
