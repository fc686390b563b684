"""A traffic file through the real servers (``run_traffic(source=Servers(pair))``): two
groups, a group's different prompts sent together; the CLI's server flags on
``traffic`` (refusals one line, exit 2; a server down one line, exit 1)."""
from __future__ import annotations

import json

import pytest

from space.cli.main import main
from space.records.config import EngineSpec
from space.records.counts import SpecCounts
from space.records.run import SERVER
from space.records.trace import EXACT, VERIFY
from space.runs.source import Servers
from space.runs.traffic import run_traffic
from space.runs.traffic_file import parse
from space.runs.traffic_groups import plan
from tests.helpers.engine import CODE_PROMPT, JSON_PROMPT, POEM_PROMPT
from tests.helpers.servers import free_port

SPEC = EngineSpec(method="ngram", k=4, max_model_len=2048)  # the servers' method, k, tokenizer
FILE = "".join(json.dumps({"prompt": p, "category": c}) + "\n"
               for p, c in ((CODE_PROMPT, "code"), (JSON_PROMPT, "code"),
                            (POEM_PROMPT, "chat"))).encode()


@pytest.mark.engine
def test_traffic_through_servers_sends_a_groups_prompts_together(pair):
    p = plan(parse(FILE, "t.jsonl"), per_group=2)
    r = run_traffic(SPEC, p, file_name="t.jsonl", repeats=1, max_tokens=8, concurrency=2,
                    source=Servers(pair))
    assert [(g.group, g.prompts) for g in r.groups] == [("code", 2), ("chat", 1)]
    for it in r.items:  # the chat prompt sent twice: a batch is always 2
        for run in (it.compare.baseline, it.compare.speculative):
            assert run.config.source == SERVER and run.server["concurrency"] == 2
    # the code batch: its two different prompts in flight together on each server
    a, b = (it.compare for it in r.items if it.group == "code")
    assert a.speculative.prompt_token_ids != b.speculative.prompt_token_ids
    for x, y in ((a.baseline, b.baseline), (a.speculative, b.speculative)):
        assert x.arrival_s < y.finish_s and y.arrival_s < x.finish_s
    # the declared configuration is what the answer deploys (the verdicts are the machine's)
    assert r.concurrency == 2 and r.config.source == SERVER
    assert r.config.speculative_config == {"method": "ngram", "num_speculative_tokens": 4,
                                           "prompt_lookup_min": 2, "prompt_lookup_max": 5}
    assert r.schedule is None or r.schedule.note.startswith("no k per batch size for the servers")


@pytest.mark.engine
def test_traffic_at_concurrency_8_keeps_every_requests_own_counts(pair):
    """Eight different prompts in flight together on each server: each request's
    steps, and its run's counts, are the server's metrics for that request (no
    stream's chunks mixed with another's, no verify step lost or made up)."""
    lines = "".join(json.dumps({"prompt": f"{CODE_PROMPT} Call it f{i}.", "category": "code"})
                    + "\n" for i in range(8)).encode()
    r = run_traffic(SPEC, plan(parse(lines, "t8.jsonl"), per_group=8), file_name="t8.jsonl",
                    repeats=1, max_tokens=16, concurrency=8, source=Servers(pair))
    runs = [it.compare.speculative for it in r.items]
    assert len(runs) == 8 and len({tuple(x.prompt_token_ids) for x in runs}) == 8
    # sent together: most are in flight at once (a short one may end before the last
    # arrives: the server takes eight requests' prefills one after another)
    in_flight = max(sum(x.arrival_s <= y.arrival_s < x.finish_s for x in runs) for y in runs)
    assert in_flight >= 4, [(x.arrival_s, x.finish_s) for x in runs]
    for run in runs:
        server = SpecCounts.from_vllm_metrics(run.vllm_spec_metrics)
        verify = [st for st in run.steps if st.kind == VERIFY]
        steps = SpecCounts.from_per_step([st.num_accepted_tokens for st in verify],
                                         [st.num_draft_tokens for st in verify])
        assert server is not None and run.counts == server
        if all(st.placement == EXACT for st in run.steps):  # a busy server may merge chunks
            assert steps == server
        else:  # then the merged chunks' steps are not drawn: none is made up
            assert steps.num_drafts <= server.num_drafts


def test_traffic_cli_server_flags_refused_and_a_down_server(capsys, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(FILE)
    assert main(["traffic", str(path), "--method", "ngram",
                 "--baseline-url", "http://gpu-box:8000/v1"]) == 2
    assert "both" in capsys.readouterr().err
    url = f"http://127.0.0.1:{free_port()}/v1"
    assert main(["traffic", str(path), "--method", "ngram", "--k", "4",
                 "--baseline-url", url, "--speculative-url", url]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "down or unreachable" in err and "\n" not in err


@pytest.mark.engine
def test_traffic_cli_through_servers(pair, capsys, tmp_path):
    path, out = tmp_path / "t.txt", tmp_path / "traffic.json"
    path.write_text(POEM_PROMPT + "\n")
    assert main(["traffic", str(path), "--method", "ngram", "--k", "4", "--max-tokens", "4",
                 "--repeats", "1", "--max-model-len", "2048", "--baseline-url",
                 pair.baseline.url, "--speculative-url", pair.speculative.url,
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "servers: baseline 127.0.0.1" in printed and "traffic-weighted speedup" in printed
    d = json.loads(out.read_text())
    assert d["config"]["source"] == SERVER and len(d["items"]) == 1
