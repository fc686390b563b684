"""The test suite's peak memory per tier, and its time, in a forced dtype.

    python benchmarks/suite_memory.py                 # float32, the whole suite in one run
    python benchmarks/suite_memory.py --dtype bfloat16
    python benchmarks/suite_memory.py --per-tier      # each tier in a pytest of its own

pytest runs with ``SPECLENS_DTYPE`` set, so every engine it builds, in-process,
in the apps and in the servers it starts, runs in that dtype whatever this CPU
has (float32 holds twice a bf16 engine's bytes). The peaks are the summed PSS of
pytest and every process it started (shared pages counted once), sampled twice a
second by the suite's own plugin (tests/helpers/rss.py); the summed RSS, which
counts shared libraries once per process, is printed beside as an upper bound.
The budget: at most 12 GB PSS in every tier.
Run it alone: on 2 cores anything beside it slows the suite several-fold.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: space/ is the project's package

from space.engine import hardware  # noqa: E402

TIERS = ["cli", "engine", "server", "ui", "unit"]
BUDGET_GB = 12.0


def run(paths: list[str], dtype: str, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rss.json"
        env = {**os.environ, hardware.DTYPE_ENV: dtype, "SPECLENS_RSS_JSON": str(out)}
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               *paths, *extra], cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.monotonic() - t0
        got = json.loads(out.read_text()) if out.exists() else {}
    last = [ln for ln in proc.stdout.splitlines() if " in " in ln and ("passed" in ln or "failed" in ln)]
    return {"paths": paths, "exit": proc.returncode, "wall_s": round(wall, 1),
            "summary": last[-1].strip("= ") if last else proc.stdout[-300:],
            "peak_gb": {k: round(v / 1e9, 2) for k, v in got.get("peak_bytes", {}).items()},
            "rss_peak_gb": {k: round(v / 1e9, 2) for k, v in got.get("rss_peak_bytes", {}).items()}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", default="float32", help="SPECLENS_DTYPE for the run (default float32)")
    p.add_argument("--per-tier", action="store_true", help="one pytest per tier instead of one run")
    p.add_argument("--json", help="also write the figures here")
    p.add_argument("pytest_args", nargs="*", help="passed to pytest (e.g. -k ...)")
    a = p.parse_args()
    cpu = hardware.cpu_model()
    flags = ", ".join(hardware.cpu_bf16_flags()) or "none"
    runs = ([run([f"tests/{t}"], a.dtype, a.pytest_args) for t in TIERS] if a.per_tier
            else [run(["tests"], a.dtype, a.pytest_args)])
    print(f"machine: {cpu}, {os.cpu_count()} cores, native bf16: {flags}; "
          f"dtype forced: {a.dtype}; {datetime.date.today()}")
    print(f"{'tier':>10}  {'PSS GB':>8}  within {BUDGET_GB:g} GB  {'RSS GB':>8}")
    for r in runs:
        for tier, gb in r["peak_gb"].items():
            print(f"{tier:>10}  {gb:8.2f}  {'yes' if gb <= BUDGET_GB else 'NO':>12}  "
                  f"{r['rss_peak_gb'].get(tier, float('nan')):8.2f}")
        print(f"  {' '.join(r['paths'])}: {r['summary']} ({r['wall_s'] / 60:.1f} min, exit {r['exit']})")
    if a.json:
        Path(a.json).write_text(json.dumps({"machine": cpu, "bf16": flags, "dtype": a.dtype,
                                            "date": str(datetime.date.today()), "runs": runs},
                                           indent=1))


if __name__ == "__main__":
    main()
