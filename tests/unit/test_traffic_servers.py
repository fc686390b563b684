"""A traffic run through running servers without them (space/runs/source.py's
``Servers``, space/runs/traffic.py's order of work): fake HTTP calls and
tokenizer stand in; the real servers' run is tests/server/test_traffic_servers.py."""
from __future__ import annotations

import pytest

from space.common.cancel import Cancelled, check
from space.engine.pool import EnginePool
from space.judge.measure import Context
from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.records.events import RunFinished, RunStarted
from space.runs import source as server_runs
from space.runs import traffic as traffic_run
from space.runs.events import Job, Publisher
from space.runs.traffic_file import parse
from space.runs.traffic_groups import plan
from space.server import compare as server_compare
from space.server.build import Declared
from space.server.client import Server, ServerInfo
from space.server.compare import Checked, ServerPair
from tests.helpers.traces import timed_baseline, timed_run

PAIR = ServerPair(Server("baseline", "http://gpu-box:8000/v1"),
                  Server("speculative", "http://gpu-box:8001/v1"),
                  Declared(method="ngram", k=4))
SPEC = EngineSpec(method="ngram", k=4)
INFO = Checked(ServerInfo("m", 64, "0.32.0", 0), ServerInfo("m", 64, "0.32.0", 4))


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, list[list[int]]]]:
    """Every batch a server got: (its role, the prompts' ids); warm-ups as 'warm <role>'."""
    calls: list[tuple[str, list[list[int]]]] = []

    def run_prompts(server, info, declared, reqs, prompts, texts=None, *, cancel=None,
                    on_tokens=None):
        if on_tokens is not None:
            on_tokens(0, 1)  # as the real one does before its streams start
        check(cancel)  # a stream closes before its first chunk: nothing is measured
        calls.append((server.role, [list(p) for p in prompts]))
        run = timed_run if declared.method else timed_baseline
        return [run() for _ in prompts]

    def warm_up(server, info, ids, cancel=None):
        calls.append((f"warm {server.role}", [ids]))

    monkeypatch.setattr(server_runs, "check_servers", lambda pair: INFO)
    monkeypatch.setattr(server_compare, "run_prompts", run_prompts)
    monkeypatch.setattr(server_compare, "warm_up", warm_up)
    # no /metrics to read here: the servers are idle (tests/server has the real wait)
    monkeypatch.setattr(server_compare, "wait_idle", lambda pair, cancel=None, progress=None:
                        None)
    # prompt i of the file is i tokens long: "p3" -> [3, 3, 3]
    monkeypatch.setattr(server_runs, "encoder", lambda spec, req: (
        [int(req.prompt[1:])] * int(req.prompt[1:]), lambda ids: {}))
    return calls


def test_a_batch_of_different_prompts_alternates_the_servers_and_is_told(sent):
    heard = []
    events = Publisher()
    events.subscribe("log", heard.append)
    source = server_runs.Servers(PAIR)
    reqs = [RequestSpec(prompt="p1"), RequestSpec(prompt="p2")]
    cmps, runs = source.batch(SPEC, reqs, [[1], [2, 2]], repeats=2,
                              context=Context(concurrency=2), job=Job(events))
    assert len(runs) == 2  # each repeat's batch figures
    assert sent == [("warm baseline", [[1]]), ("warm speculative", [[1]]),
                    ("baseline", [[1], [2, 2]]), ("speculative", [[1], [2, 2]]),  # repeat 1
                    ("speculative", [[1], [2, 2]]), ("baseline", [[1], [2, 2]])]  # repeat 2
    assert len(cmps) == 2 and all(len(c.baseline_runs) == 2 for c in cmps)
    assert all(c.checklist is not None and c.checklist.check("concurrency").value == 2
               for c in cmps)
    assert [type(e) for e in heard] == [RunStarted, RunFinished, RunFinished]
    source.batch(SPEC, reqs[:1], [[1]], repeats=2, context=Context(), job=Job(events))
    assert [r for r, _ in sent].count("warm baseline") == 1  # once per run


def test_a_prompt_without_room_under_the_servers_length_is_refused_and_another_k(sent):
    source = server_runs.Servers(PAIR)
    assert source.encode(SPEC, RequestSpec(prompt="p3")) == [3, 3, 3]
    with pytest.raises(ConfigError, match="no room under the server's max_model_len 64"):
        source.encode(SPEC, RequestSpec(prompt="p64"))
    with pytest.raises(ConfigError, match="runs ngram with k=4"):
        source.spec_for(EngineSpec(method="ngram", k=2))


def test_run_traffic_with_servers_batches_as_in_process_and_builds_no_engine(
        sent, monkeypatch):
    monkeypatch.setattr(EnginePool, "_build", lambda *a: pytest.fail("an engine was built"))
    monkeypatch.setattr(traffic_run.models, "resolve_model", lambda name, *a: "/nowhere")
    text = (b'{"prompt": "p1", "category": "a"}\n{"prompt": "p2", "category": "a"}\n'
            b'{"prompt": "p3", "category": "a"}\n{"prompt": "p4", "category": "b"}\n'
            b'{"prompt": "p99", "category": "b"}\n')
    r = traffic_run.run_traffic(SPEC, plan(parse(text, "t.jsonl"), per_group=5), repeats=1,
                                concurrency=2, source=server_runs.Servers(PAIR))
    assert [ids for role, ids in sent if role == "baseline"] == [
        [[1], [2, 2]], [[4] * 4, [4] * 4], [[3] * 3, [1]]]  # the in-process batches' order
    assert [(it.group, it.line) for it in r.items] == [("a", 1), ("a", 2), ("b", 4), ("a", 3)]
    assert r.skipped == ["line 5: the prompt is 99 tokens: no room under the server's "
                         "max_model_len 64"]
    assert r.concurrency == 2 and {g.group for g in r.groups} == {"a", "b"}


def test_stopped_in_the_first_batch_sends_nothing_more(sent):
    import threading

    stop = threading.Event()
    source = server_runs.Servers(PAIR)
    with pytest.raises(Cancelled):
        source.batch(SPEC, [RequestSpec(prompt="p1")], [[1]], repeats=1, context=Context(),
                     progress=lambda f, m: stop.set(), cancel=stop, job=Job())
    assert [r for r, _ in sent] == ["warm baseline", "warm speculative"]

