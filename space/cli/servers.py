"""``python -m space trace|compare --baseline-url URL --speculative-url URL``:
the same records, measured through two running vLLM servers (space/server/)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.records.trace import CompareRecord, RunTrace
from space.runs.servers import encoder
from space.server.compare import ServerPair, compare_servers, trace_server
from vis import text


def run_on_servers(a: argparse.Namespace, spec: EngineSpec, req: RequestSpec,
                   pair: ServerPair) -> RunTrace | CompareRecord:
    """Prompt ids from the local tokenizer of --model (sent as ids: no chat
    template can drift), then the run; prints what the CLI prints in-process."""
    if a.explain:
        raise ConfigError("--explain scores drafts with an in-process target: not with servers")
    if a.cmd == "compare" and a.workload and not a.prompt_id:
        print("servers: the workload's first prompt (choose with --prompt-id)")
    ids, texts = encoder(spec, req)
    print(f"servers: {pair.hosts}")
    if a.cmd == "trace":
        run = trace_server(pair, req, ids, texts)
        print(text.describe_run(run))
        return run
    record = compare_servers(pair, req, ids, repeats=a.repeats,
                             concurrency=a.concurrency or 1, texts=texts)
    print(text.describe_compare(record))
    return record


@dataclass
class ServerSweep:
    """``sweep --variable concurrency`` through the servers: one compare per value."""

    workload_id: str
    prompt_id: str
    records: dict[int, CompareRecord] = field(default_factory=dict)

    def rows(self) -> list[dict[str, float | int | None]]:
        return [{"concurrency": n, "speedup": r.speedup, "e2e_speedup": r.e2e_speedup,
                 "acceptance_rate": r.speculative.acceptance_rate,
                 "baseline_tokens_per_s": n * r.baseline.tokens_per_s,
                 "speculative_tokens_per_s": n * r.speculative.tokens_per_s}
                for n, r in self.records.items()]

    def to_dict(self) -> dict:
        return {"workload": self.workload_id, "prompt": self.prompt_id, "source": "server",
                "rows": self.rows(),
                "records": {str(n): r.to_dict() for n, r in self.records.items()}}


def sweep_on_servers(a: argparse.Namespace, spec: EngineSpec, workload,
                     pair: ServerPair) -> ServerSweep:
    """Concurrency is the one variable a client sweeps: k, the method and the
    engine settings are the servers' own."""
    from space.runs.sweep import parse_values

    if a.variable != "concurrency":
        raise ConfigError("against servers only --variable concurrency is swept (k and the "
                          "method are the servers' settings)")
    values = [int(v) for v in parse_values("concurrency", a.values)]
    prompt = workload.prompt(a.prompt_id[0]) if a.prompt_id else workload.prompts[0]
    req = RequestSpec(prompt=prompt.text, temperature=workload.temperature,
                      max_tokens=a.max_tokens or workload.max_tokens)
    ids, texts = encoder(spec, req)
    print(f"servers: {pair.hosts}; {workload.id}/{prompt.id}")
    result = ServerSweep(workload.id, prompt.id)
    for n in values:
        result.records[n] = compare_servers(pair, req, ids, repeats=a.repeats,
                                            concurrency=n, texts=texts)
    print(f"{'concurrency':>11}{'speedup':>9}{'accept':>8}{'base tok/s':>12}{'spec tok/s':>12}")
    for row in result.rows():
        rate = row["acceptance_rate"]
        print(f"{row['concurrency']:>11}{row['speedup']:>8.2f}x"
              f"{'n/a' if rate is None else f'{rate:.0%}':>8}"
              f"{row['baseline_tokens_per_s']:>12.1f}{row['speculative_tokens_per_s']:>12.1f}")
    return result
