"""Speedup through running vLLM servers beside the in-process engines' speedup.

Starts a plain and an ngram k=4 server of the CPU default on loopback (the
in-process engines' settings, tests/helpers/servers.py), builds the in-process
baseline and ngram engines with the same settings, and measures, at
concurrency 1 and 4, on the same prompts, the median per-request TPOT speedup
of each source, alternating server and in-process batches. Prints the CPU, its
bf16 units and the dtype beside the figures.

    python benchmarks/bench_servers.py --runs 3
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from space.engine import hardware  # noqa: E402
from space.records.config import EngineSpec, RequestSpec  # noqa: E402
from space.server.build import Declared  # noqa: E402
from space.server.client import Server  # noqa: E402
from space.server.compare import ServerPair, check_servers, run_batch, warm_up  # noqa: E402
from tests.helpers.engine import CODE_PROMPT, JSON_PROMPT, KV  # noqa: E402
from tests.helpers.servers import start_all  # noqa: E402

SPEC = EngineSpec(method="ngram", k=4, kv_cache_bytes=KV, max_model_len=2048)
PROMPTS = {"code": CODE_PROMPT, "json": JSON_PROMPT}


def _tpot(traces) -> float:
    return statistics.median(t.tpot_s for t in traces)


def measure(pair, info, engines, req, ids, n: int, runs: int) -> dict[str, list[float]]:
    """Per run: the TPOT speedup of the servers and of the in-process engines."""
    base, ngram = engines
    out: dict[str, list[float]] = {"server": [], "in-process": []}
    for _ in range(runs):
        b = run_batch(pair.baseline, info.baseline, Declared(), req, ids, n)
        s = run_batch(pair.speculative, info.speculative, pair.declared, req, ids, n)
        out["server"].append(_tpot(b) / _tpot(s))
        lb = base.run_many([req] * n, encoded=[ids] * n)
        ls = ngram.run_many([req] * n, encoded=[ids] * n)
        out["in-process"].append(_tpot(lb) / _tpot(ls))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=96)
    a = ap.parse_args()
    spec = hardware.resolve_spec(SPEC)
    print(f"CPU: {hardware.cpu_model()}, {os.cpu_count()} cores, bf16 units: "
          f"{', '.join(hardware.cpu_bf16_flags()) or 'none'}; dtype {spec.dtype}")
    from space.engine import EnginePool

    with tempfile.TemporaryDirectory() as logs:
        procs = start_all(SPEC, Path(logs), {"baseline": ([], False), "speculative": (
            ["--per-request-spec-decode-metrics", "detailed"], True)})
        try:
            pool = EnginePool()
            engines = pool.baseline(SPEC), pool.speculative(SPEC)
            pair = ServerPair(Server("baseline", procs["baseline"].url),
                              Server("speculative", procs["speculative"].url),
                              Declared(method="ngram", k=4))
            info = check_servers(pair)
            print(f"{'prompt':<8}{'conc':>5}{'server':>10}{'in-process':>12}   (median TPOT "
                  f"speedup over {a.runs} alternating runs, range)")
            for name, prompt in PROMPTS.items():
                req = RequestSpec(prompt=prompt, max_tokens=a.max_tokens)
                ids = engines[1].encode(req)
                warm_up(pair.baseline, info.baseline, ids)
                warm_up(pair.speculative, info.speculative, ids)
                for n in (1, 4):
                    r = measure(pair, info, engines, req, ids, n, a.runs)
                    cells = [f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"
                             for v in (r["server"], r["in-process"])]
                    print(f"{name:<8}{n:>5}  {cells[0]:>18}  {cells[1]:>18}")
            pool.close_all()
        finally:
            for p in procs.values():
                p.stop()


if __name__ == "__main__":
    main()
