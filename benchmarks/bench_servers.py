"""Speedup through running vLLM servers beside the in-process engines' speedup.

Starts a plain and an ngram k=4 server of the CPU default on loopback (the
in-process engines' settings, tests/helpers/servers.py), builds the in-process
baseline and ngram engines with the same settings, and measures, at
concurrency 1 and 4, on the same prompts, the median per-request TPOT speedup
of each source, alternating server and in-process batches. Prints the CPU, its
bf16 units and the dtype beside the figures.

``--placement`` measures how the speculative server's streams split into steps
at concurrency 1, 4 and 8 instead (issue 29; no in-process engines): per
concurrency, the chunks that held several steps, the steps placed exactly, and
whether the steps' own counts equal the server's per-request metrics (the
run's counts are always the server's; this says that the split lost or made up
no verify step). ``--stream-interval 4`` asks each request to merge as a
deployment with a stream interval would.

    python benchmarks/bench_servers.py --runs 3
    python benchmarks/bench_servers.py --placement --runs 5 --max-tokens 128
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
from space.records.counts import SpecCounts  # noqa: E402
from space.records.trace import EXACT, MERGED, VERIFY, chunk_groups  # noqa: E402
from space.runs.source import encoder  # noqa: E402
from space.server.build import Declared, build_trace  # noqa: E402
from space.server.client import Server, completion_body  # noqa: E402
from space.server.compare import (  # noqa: E402
    ServerPair,
    _streams,
    check_servers,
    run_prompts,
    warm_up,
)
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
        b = run_prompts(pair.baseline, info.baseline, Declared(), [req] * n, [ids] * n)
        s = run_prompts(pair.speculative, info.speculative, pair.declared, [req] * n, [ids] * n)
        out["server"].append(_tpot(b) / _tpot(s))
        lb = base.run_many([req] * n, encoded=[ids] * n)
        ls = ngram.run_many([req] * n, encoded=[ids] * n)
        out["in-process"].append(_tpot(lb) / _tpot(ls))
    return out


def placement(pair, info, req, ids, n: int, runs: int, interval: int) -> list[int]:
    """[chunks, merged chunks, steps, exact steps, requests, requests whose steps'
    counts equal the server's] over ``runs`` batches of ``n`` requests."""
    body = completion_body(info.speculative.model, ids, req, req.max_tokens)
    if interval > 1:
        body["stream_interval"] = interval
    out = [0] * 6
    for _ in range(runs):
        for s in _streams(pair.speculative, [body] * n, None, lambda c: None):
            run = build_trace(s, info.speculative, pair.declared, req)
            groups = chunk_groups(run.steps)
            verify = [st for st in run.steps if st.kind == VERIFY]
            own = SpecCounts.from_per_step([st.num_accepted_tokens for st in verify],
                                           [st.num_draft_tokens for st in verify])
            figures = [len(s.chunks), sum(g[0].placement == MERGED for g in groups),
                       len(run.steps), sum(st.placement == EXACT for st in run.steps), 1,
                       int(own == SpecCounts.from_vllm_metrics(run.vllm_spec_metrics))]
            out = [a + b for a, b in zip(out, figures, strict=True)]
    return out


def placement_table(pair, info, a) -> None:
    print(f"stream interval {a.stream_interval}, {a.max_tokens} tokens, {a.runs} batches "
          "per concurrency")
    print(f"{'prompt':<8}{'conc':>5}{'chunks':>8}{'merged':>8}{'steps':>7}{'exact':>7}"
          f"{'counts = server':>17}")
    for name, prompt in PROMPTS.items():
        req = RequestSpec(prompt=prompt, max_tokens=a.max_tokens)
        ids, _ = encoder(SPEC, req)
        warm_up(pair.speculative, info.speculative, ids)
        for n in (1, 4, 8):
            c, m, st, ex, reqs, same = placement(pair, info, req, ids, n, a.runs,
                                                 a.stream_interval)
            print(f"{name:<8}{n:>5}{c:>8}{m:>8}{st:>7}{ex:>7}{f'{same}/{reqs}':>17}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--placement", action="store_true",
                    help="the step placement table at concurrency 1, 4, 8 (issue 29)")
    ap.add_argument("--stream-interval", type=int, default=1,
                    help="with --placement: the requests' stream_interval")
    a = ap.parse_args()
    spec = hardware.resolve_spec(SPEC)
    print(f"CPU: {hardware.cpu_model()}, {os.cpu_count()} cores, bf16 units: "
          f"{', '.join(hardware.cpu_bf16_flags()) or 'none'}; dtype {spec.dtype}")
    from space.engine.pool import EnginePool

    with tempfile.TemporaryDirectory() as logs:
        procs = start_all(SPEC, Path(logs), {"baseline": ([], False), "speculative": (
            ["--per-request-spec-decode-metrics", "detailed"], True)})
        try:
            if a.placement:
                pair = ServerPair(Server("baseline", procs["baseline"].url),
                                  Server("speculative", procs["speculative"].url),
                                  Declared(method="ngram", k=4))
                placement_table(pair, check_servers(pair), a)
                return
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
