"""How far the predicted k per batch size is from a measured one (issue 28, point 6).

A traffic answer's schedule is *predicted*: each gaining group's per-token
acceptance alpha (from its mean acceptance length at the measured k) and this
machine's step costs per concurrency from a cached tipping curve give
S(k, c) = tau(alpha, k) x decode step / verify step(k) (``space.judge.dynamic_k``).
This measures its error once, against a k x concurrency sweep of the same
prompts:

  1. the step costs: the cpu-bad-draft tipping curve measured at ``--concurrency``,
     and the ngram curve derived from it (``python -m space tipping --pair
     cpu-bad-draft``, then ``--pair cpu-ngram``), cached in a folder of its own;
  2. the sweep: the workload's prompts (code_editing by default, a gaining group
     on CPU) at every k of ``--ks`` and every concurrency, against the baseline;
  3. the prediction, made as the traffic answer makes it: alpha from the sweep's
     own mean acceptance length at ``--measured-k`` and concurrency 1, with the
     share of its steps that drafted, the step costs from the curve; then, per
     (k, c), predicted beside measured, their ratio, and the best k per
     concurrency by each.

    python benchmarks/bench_schedule.py --json docs/benchmarks/schedule.json   # ~10 min
    python benchmarks/bench_schedule.py --ks 2,4 --concurrency 1 --points 3 \\
        --max-tokens 16 --repeats 1                                           # smoke

Run it alone: a second CPU-heavy process changes every timing.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from space.engine import hardware  # noqa: E402
from space.judge import dynamic_k, measure, theory  # noqa: E402
from space.judge.curves import LOOKUP_METHODS  # noqa: E402
from space.runs import presets  # noqa: E402


def ints(text: str) -> list[int]:
    return sorted({int(v) for v in text.split(",") if v.strip()})


def progress(f: float, msg: str) -> None:
    print(f"  [{f:4.0%}] {msg}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="code_editing")
    ap.add_argument("--ks", default="1,2,4,6,8", help="the sweep's k values")
    ap.add_argument("--concurrency", default="1,4", help="the curve's and the sweep's")
    ap.add_argument("--measured-k", type=int, default=4, help="the traffic run's k")
    ap.add_argument("--points", type=int, default=6, help="the tipping curve's points")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write the figures here")
    a = ap.parse_args(argv)
    ks, concurrencies = ints(a.ks), ints(a.concurrency)
    if a.measured_k not in ks:
        ap.error(f"--measured-k {a.measured_k} must be one of --ks")
    started = time.perf_counter()

    from space.runs import sweep
    from space.runs import tipping as tp

    folder = Path(tempfile.mkdtemp(prefix="bench-schedule-"))  # this run's curves only
    bad = presets.get_model_pair("cpu-bad-draft").engine_spec()
    ngram_pair = presets.get_model_pair("cpu-ngram")
    ngram = dataclasses.replace(ngram_pair.engine_spec(), k=a.measured_k)
    print(f"CPU: {hardware.cpu_model()}, {os.cpu_count()} cores; dtype "
          f"{hardware.resolve_spec(ngram).dtype}", flush=True)
    print("1. the step costs: the bad draft's tipping curve, then ngram's derived from it",
          flush=True)
    tp.build_curve(bad, pair_id="cpu-bad-draft", concurrencies=concurrencies,
                   n_points=a.points, max_tokens=a.max_tokens, repeats=max(a.repeats, 2),
                   progress=progress, folder=folder)
    curve, _ = tp.build_curve(ngram, pair_id="cpu-ngram", progress=progress, folder=folder)
    print(f"2. the sweep: {a.workload}, k {ks} x concurrency {concurrencies}", flush=True)
    grid = sweep.run_grid(ngram, presets.get_workload(a.workload), ks, concurrencies,
                          repeats=a.repeats, max_tokens=a.max_tokens, progress=progress)
    rows = grid.table.to_dict(orient="records")
    measured = {(int(r["k"]), int(r["concurrency"])): r for r in rows}

    base = measured[(a.measured_k, 1)]
    tau = float(base["mean_acceptance_length"])
    if math.isnan(tau):
        print("the measured k drafted nothing at concurrency 1: no prediction to check")
        return 1
    alpha = theory.alpha_from_acceptance_length(tau, a.measured_k)
    at_measured = next(r for sw in grid.sweeps for r in sw.results
                       if r.config.k == a.measured_k and r.concurrency == 1)
    drafted = measure.drafted_share([it.compare.speculative for it in at_measured.items])
    f = 1.0 if drafted is None else drafted
    lookup = str(ngram.method) in LOOKUP_METHODS
    print(f"3. predicted from tau {tau:.2f} at k={a.measured_k}, c=1 (alpha {alpha:.2f}, "
          f"{f:.0%} of the steps drafted) and the curve {curve.label} ({curve.kind})",
          flush=True)
    table = []
    for (k, c), r in sorted(measured.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        costs = curve.costs_at(c)
        predicted = (None if costs is None else
                     dynamic_k.predicted_speedup(alpha, k, costs, curve.k, lookup, f))
        got = float(r["speedup"])
        table.append({"k": k, "concurrency": c, "predicted": predicted, "measured": got,
                      "ratio": None if predicted is None or not got else predicted / got,
                      "measured_tau": r["mean_acceptance_length"]})
    print(f"{'conc':>5}{'k':>4}{'predicted':>11}{'measured':>10}{'pred/meas':>11}{'tau':>7}")
    for t in table:
        pred = "n/a" if t["predicted"] is None else f"{t['predicted']:.2f}x"
        ratio = "n/a" if t["ratio"] is None else f"{t['ratio']:.2f}"
        print(f"{t['concurrency']:>5}{t['k']:>4}{pred:>11}{t['measured']:>9.2f}x{ratio:>11}"
              f"{t['measured_tau']:>7.2f}")
    best = {}
    for c in concurrencies:
        at = [t for t in table if t["concurrency"] == c]
        by_pred = max((t for t in at if t["predicted"] is not None),
                      key=lambda t: t["predicted"], default=None)
        by_meas = max(at, key=lambda t: t["measured"])
        best[c] = {"predicted_k": by_pred and by_pred["k"], "measured_k": by_meas["k"],
                   "measured_at_predicted_k": by_pred and by_pred["measured"],
                   "measured_best": by_meas["measured"]}
        lost = ("" if not by_pred else
                f"; the predicted k's measured speedup {by_pred['measured']:.2f}x against "
                f"the best {by_meas['measured']:.2f}x")
        print(f"best k at c={c}: predicted {by_pred and by_pred['k']}, measured "
              f"{by_meas['k']}{lost}")
    ratios = [t["ratio"] for t in table if t["ratio"] is not None]
    if ratios:
        print(f"predicted / measured: median {statistics.median(ratios):.2f}, range "
              f"{min(ratios):.2f}-{max(ratios):.2f}; median absolute error "
              f"{statistics.median(abs(r - 1) for r in ratios):.0%}")
    out = {"machine": {"cpu_model": hardware.cpu_model(), "cpus": os.cpu_count(),
                       "dtype": str(hardware.resolve_spec(ngram).dtype),
                       "date": time.strftime("%Y-%m-%d", time.gmtime())},
           "command": " ".join(sys.argv), "wall_s": round(time.perf_counter() - started, 1),
           "workload": a.workload, "measured_k": a.measured_k, "tau": tau, "alpha": alpha,
           "drafted_share": f,
           "curve": {"label": curve.label, "kind": curve.kind, "date": curve.date},
           "table": table, "best_k": best}
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
