"""``python -m space trace|compare --baseline-url URL --speculative-url URL``:
the same records, measured through two running vLLM servers (space/server/).
``sweep --variable concurrency`` through them is ``space.cli.main``'s sweep."""
from __future__ import annotations

import argparse

from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.records.trace import CompareRecord, RunTrace
from space.runs.servers import check_pair, encoder, judged_compare
from space.server.compare import ServerPair, trace_server
from vis import text


def announce(pair: ServerPair, spec: EngineSpec) -> None:
    """The servers' hosts, and what makes their runs less comparable (one line each);
    servers that do not tokenize as ``--model`` are refused here, before any run."""
    print(f"servers: {pair.hosts}")
    for line in check_pair(pair, spec).warnings():
        print(f"warning: {line}")


def run_on_servers(a: argparse.Namespace, spec: EngineSpec, req: RequestSpec,
                   pair: ServerPair) -> RunTrace | CompareRecord:
    """Prompt ids from the local tokenizer of --model (sent as ids: no chat
    template can drift), then the run; prints what the CLI prints in-process."""
    if a.explain:
        raise ConfigError("--explain scores drafts with an in-process target: not with servers")
    if a.cmd == "compare" and a.workload and not a.prompt_id:
        print("servers: the workload's first prompt (choose with --prompt-id)")
    ids, texts = encoder(spec, req)
    announce(pair, spec)
    if a.cmd == "trace":
        run = trace_server(pair, req, ids, texts)
        print(text.describe_run(run))
        return run
    record = judged_compare(pair, req, ids, texts, repeats=a.repeats,
                            concurrency=a.concurrency or 1)
    print(text.describe_compare(record))
    if record.checklist is not None:
        print(text.describe_checklist(record.checklist))
    return record
