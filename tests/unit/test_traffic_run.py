"""space/runs/traffic.py's order of work without an engine: a fake runner and
tokenizer stand in (the real engine's run is tests/engine/test_traffic.py)."""
from __future__ import annotations

import threading
import types

import pytest

from space.common.cancel import Cancelled, check
from space.records.config import ConfigError, EngineSpec
from space.runs import source as source_mod
from space.runs import traffic as traffic_run
from space.runs.source import Engines
from space.runs.traffic_file import parse
from space.runs.traffic_groups import plan
from tests.helpers.traffic import item

FILE = (b'{"prompt": "copy this", "category": "a", "max_tokens": 4000}\n'
        b'{"prompt": "too long for the model", "category": "a"}\n'
        b'{"prompt": "say hi", "category": "b", "temperature": 0.5}\n')


@pytest.fixture
def fake(monkeypatch):
    """runner.compare recorded, preflight refusing one prompt, no model files."""
    calls: list = []

    def compare(spec, req, **kw):
        calls.append((req, kw))
        return item("x", 0, 1.5).compare

    runner = types.SimpleNamespace(POOL=object(), compare=compare)
    monkeypatch.setattr(source_mod, "runner", runner)

    def preflight(spec, reqs, progress=None):
        if "too long" in reqs[0].prompt:
            raise ConfigError("the prompt is 5000 tokens, longer than max_model_len allows")
        return [[1, 2, 3]]

    monkeypatch.setattr(source_mod, "preflight", preflight)
    monkeypatch.setattr(traffic_run.models, "resolve_model", lambda name, *a: "/nowhere")
    return calls


def test_each_prompt_once_in_turn_with_its_settings_and_a_skip(fake):
    said: list[str] = []
    p = plan(parse(FILE, "t.jsonl"), per_group=5)
    r = traffic_run.run_traffic(EngineSpec(), p, repeats=1, max_tokens=16,
                                progress=lambda f, m: said.append(m), skipped=["line 9: x"],
                                max_tokens_cap=256)
    reqs = [req for req, _ in fake]
    assert [(q.prompt, q.max_tokens, q.temperature) for q in reqs] == [
        ("copy this", 256, 0.0), ("say hi", 16, 0.5)]  # the file's 4000 capped
    assert all(kw["prompt_ids"] == [1, 2, 3] and kw["warmup"] == "once" for _, kw in fake)
    assert said[:2] == ["prompt 1/2: line 1 (a)", "prompt 2/2: line 3 (b)"]
    assert r.skipped == ["line 9: x", "line 2: the prompt is 5000 tokens, longer than "
                                      "max_model_len allows"]
    assert [(it.group, it.line, it.temperature) for it in r.items] == [
        ("a", 1, 0.0), ("b", 3, 0.5)]


def test_stopped_between_prompts_and_nothing_runnable(fake):
    stop = threading.Event()
    p = plan(parse(FILE, "t.jsonl"), per_group=5)
    with pytest.raises(Cancelled):
        traffic_run.run_traffic(EngineSpec(), p, progress=lambda f, m: stop.set(), cancel=stop)
    assert fake == []  # stopped before the first compare
    only_long = plan(parse(b"too long for the model\n", "t.txt"))
    with pytest.raises(ConfigError, match="no request of the file can run: line 1: the prompt"):
        traffic_run.run_traffic(EngineSpec(), only_long)
    with pytest.raises(ConfigError, match="compares a speculative method"):
        traffic_run.run_traffic(EngineSpec(method=None), only_long)


class Batches(Engines):
    """In-process engines whose batches are recorded: (prompts, concurrency, ids), each
    taken under the pool's lock, as the real ``Engines.batch`` takes it."""

    def __init__(self) -> None:
        super().__init__(types.SimpleNamespace(lock=threading.RLock()))  # type: ignore[arg-type]
        self.seen: list = []

    def batch(self, spec, reqs, encoded, *, repeats, context, progress=None, cancel=None,
              job=None):
        check(cancel)
        with self.pool.lock:
            self.seen.append(([r.prompt for r in reqs], context.concurrency, encoded))
        return [item("x", 0, 1.5).compare for _ in reqs], []


def test_at_concurrency_2_a_groups_prompts_run_as_batches_the_lock_let_go_between(fake):
    source = Batches()
    free: list[bool] = []

    def progress(_f, message):
        said.append(message)
        t = threading.Thread(target=lambda: free.append(_free(source.pool.lock)))
        t.start()
        t.join()

    said: list[str] = []
    text = "".join(f'{{"prompt": "p{i}", "category": "{g}"}}\n'
                   for i, g in enumerate("aaab", start=1)).encode()
    r = traffic_run.run_traffic(EngineSpec(), plan(parse(text, "t.jsonl"), per_group=5),
                                repeats=1, source=source, progress=progress, concurrency=2)
    assert fake == []  # no prompt ran on its own
    assert [(prompts, n) for prompts, n, _ in source.seen] == [
        (["p1", "p2"], 2),
        (["p4", "p4"], 2),   # b has one prompt: filled with it again
        (["p3", "p1"], 2)]   # a's last: filled with its first, not kept
    assert all(enc == [[1, 2, 3]] * 2 for _, _, enc in source.seen)
    assert [m for m in said if m.startswith("batch")] == [
        "batch 1/3: a, lines 1, 2", "batch 2/3: b, lines 4 + 1 repeated to make 2",
        "batch 3/3: a, lines 3 + 1 repeated to make 2"]
    assert all(free)  # between batches another thread can take the engines
    assert [(it.group, it.line) for it in r.items] == [("a", 1), ("a", 2), ("b", 4), ("a", 3)]
    assert r.concurrency == 2 and "2 requests at once" in r.deployment.describe()


def test_concurrency_is_bounded_and_a_stop_between_batches_stops(fake):
    p = plan(parse(FILE, "t.jsonl"), per_group=5)
    for bad in (0, 65):
        with pytest.raises(ConfigError, match="concurrency must be 1..64"):
            traffic_run.run_traffic(EngineSpec(), p, concurrency=bad)
    stop = threading.Event()
    source = Batches()
    with pytest.raises(Cancelled):
        traffic_run.run_traffic(EngineSpec(), p, progress=lambda f, m: stop.set(), cancel=stop,
                                concurrency=2, source=source)
    assert source.seen == []
    only_long = plan(parse(b"too long for the model\n", "t.txt"))
    with pytest.raises(ConfigError, match="no request of the file can run: line 1: the prompt"):
        traffic_run.run_traffic(EngineSpec(), only_long, concurrency=2, source=Batches())


def _free(lock) -> bool:
    if lock.acquire(blocking=False):
        lock.release()
        return True
    return False


def test_until_decided_measures_unseen_prompts_of_open_groups_within_the_budget(
        fake, monkeypatch):
    """Group "even" gains 2.0x on every prompt (decided at once); "odd" alternates
    0.6x and 1.9x from one prompt measured to the next, so it stays open until the
    budget or its prompts run out."""
    def compare(spec, req, **kw):
        fake.append(req)
        odd = sum(q.prompt.startswith("odd") for q in fake)
        return item("x", 0, 2.0 if req.prompt.startswith("even") else (0.6, 1.9)[odd % 2]).compare

    monkeypatch.setattr(source_mod.runner, "compare", compare)
    lines = [f'{{"prompt": "{g} {i}", "category": "{g}"}}' for i in range(8)
             for g in ("even", "odd")]
    p = plan(parse("\n".join(lines).encode(), "t.jsonl"), per_group=2)
    said: list[str] = []
    r = traffic_run.run_traffic(EngineSpec(), p, repeats=1, progress=lambda f, m: said.append(m),
                                until_decided=traffic_run.Budget(max_prompts=9))
    assert len(r.items) == 9 == len(fake)  # the budget: 9 prompts in all
    assert r.until_decided is not None and r.until_decided["added"] == {"odd": 5}
    assert r.until_decided["stopped"] == "the budget of 9 prompts is spent"
    assert r.until_decided["open"] == ["odd"] and r.groups[1].verdict == "undecided"
    assert "measuring more (round 1): still open: odd; 2 unseen prompts" in said
    assert len({it.line for it in r.items}) == 9  # never the same prompt twice
    # without a prompt budget: every unseen prompt of the open group, then it stops
    fake.clear()
    r = traffic_run.run_traffic(EngineSpec(), p, repeats=1, until_decided=traffic_run.Budget())
    assert r.until_decided is not None and len(r.items) == 10
    assert r.until_decided["stopped"].startswith("no unseen prompt is left in odd") or \
        r.until_decided["stopped"] == "every group is decided"
    from space.judge.traffic import describe
    assert "measured until decided: " in describe(r)
