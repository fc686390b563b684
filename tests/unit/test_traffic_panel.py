"""The Traffic tab's checks before a run (space/ui/traffic_panel.py), no engine: an
upload over the bound is refused by its size before it is read; settings are bounded;
a page measuring servers runs the operator's method and k through them."""
from __future__ import annotations

import pytest

from space.records.config import ConfigError, EngineSpec
from space.runs.offer import Offer
from space.runs.traffic_file import Bounds, TrafficFormatError
from space.ui.traffic_panel import TrafficHandlers, done_line
from tests.helpers.traffic import two_groups


def handlers(operator_file=None, max_bytes=1 << 20) -> TrafficHandlers:
    return TrafficHandlers(None, EngineSpec(), Offer(), operator_file,  # type: ignore[arg-type]
                           Bounds(max_bytes=max_bytes))


def plan(h: TrafficHandlers, file, per_group=3, max_tokens=32, method="ngram", concurrency=1):
    return h._plan(file, "", per_group, max_tokens, 1, concurrency, method, "", 4, None)


def test_an_upload_over_the_bound_is_refused_by_its_size(tmp_path, monkeypatch):
    big = tmp_path / "big.jsonl"
    big.write_bytes(b'{"prompt": "hi"}\n' * 100)
    read = []
    monkeypatch.setattr("pathlib.Path.read_bytes", lambda self: read.append(self) or b"")
    with pytest.raises(TrafficFormatError, match="is 1,700 bytes, more than the 1,000 bytes allowed"):
        plan(handlers(max_bytes=1000), str(big))
    assert read == []  # never read


def test_the_operators_file_without_an_upload_and_the_settings_bounds(tmp_path):
    own = tmp_path / "own.txt"
    own.write_text("first prompt\nsecond prompt\n")
    traffic, s = plan(handlers(str(own)), None, concurrency=4)
    assert (s.spec.method, s.max_tokens, s.repeats, s.concurrency, len(traffic.requests)) == (
        "ngram", 32, 1, 4, 2)
    assert s.source == "own.txt"
    assert sum(len(v) for v in s.plan.sample.values()) == 2
    with pytest.raises(ConfigError, match="upload a traffic file first"):
        plan(handlers(), None)
    with pytest.raises(ConfigError, match="prompts per group must be in 1..10"):
        plan(handlers(str(own)), None, per_group=11)
    with pytest.raises(ConfigError, match="max tokens must be in 1..256"):
        plan(handlers(str(own)), None, max_tokens=0)
    for bad in (0, 65, "two"):  # bounded as a concurrency sweep's points are
        with pytest.raises(ConfigError, match="requests at once must be"):
            plan(handlers(str(own)), None, concurrency=bad)
    with pytest.raises(ConfigError, match="choose a speculative method"):
        plan(handlers(str(own)), None, method="")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": 1}\n')
    with pytest.raises(ConfigError, match="no request could be read: read 0 requests"):
        plan(handlers(), str(bad))


def test_the_done_line():
    r = two_groups()
    assert r.weighted_speedup_ci is not None
    lo, hi = r.weighted_speedup_ci
    assert done_line(r.summary()) == (
        f"done: 3 prompts in 2 groups; traffic-weighted speedup 0.93x (90 % CI {lo:.2f}-"
        f"{hi:.2f}); undecided: chat (Measure more); 25% of output tokens in groups that gain")


def test_the_tabs_inputs_are_the_handlers_first_parameters():
    import inspect

    import gradio as gr

    from space.ui.traffic_panel import build_traffic_panel

    with gr.Blocks():
        p = build_traffic_panel()
    names = list(inspect.signature(TrafficHandlers.run).parameters)[1:len(p.inputs()) + 1]
    assert names == ["file", "label_field", "per_group", "max_tokens", "repeats", "concurrency"]
    assert (p.concurrency.value, p.concurrency.minimum, p.concurrency.maximum) == (1, 1, 64)


def test_a_traffic_run_is_the_visitors_job_and_shows_the_historys_answer(tmp_path, monkeypatch):
    """The handler hands its job (who asked, the page's observers) to the Runs layer,
    whose end the history hears; the status line shows the saved run's link."""
    import gradio as gr

    import space.runs.traffic
    from space.records.events import TrafficFinished
    from space.records.history import History
    from space.runs.events import Job, Publisher
    from space.runs.recorder import HistoryRecorder
    from space.ui.traffic_panel import build_traffic_panel

    own = tmp_path / "own.txt"
    own.write_text("first prompt\nsecond prompt\n")
    history = History(tmp_path / "history.sqlite3")
    events = Publisher()
    events.subscribe("history", HistoryRecorder(history))

    class Result:
        def to_dict(self, keep_prompts=True):
            return {"source": "own.txt", "prompts": [], "groups": []}

    def run_traffic(spec, plan, *, job, **_kw):
        assert isinstance(job, Job) and job.origin.user == "ada"
        job.publish(TrafficFinished(Result(), spec, job.origin))
        return Result()

    monkeypatch.setattr(space.runs.traffic, "run_traffic", run_traffic)
    with gr.Blocks():
        panel = build_traffic_panel(str(own))
    h = TrafficHandlers(panel, EngineSpec(), Offer(), str(own), publisher=events)
    monkeypatch.setattr(h, "show", lambda result, saved="": {"saved": saved})

    class Request:
        username = "ada"

    updates = list(h.run(None, "", 3, 32, 1, 1, "ngram", "", 4, None, lambda *a, **k: None,
                         Request()))
    (row,), _ = history.runs()
    assert (row.kind, row.user) == ("traffic", "ada")
    assert f"saved as run #{row.id}" in updates[-1]["saved"]


def test_the_traffic_tab_with_servers_runs_the_operators_spec_and_refuses_another_k(
        tmp_path, monkeypatch):
    import space.runs.traffic
    from space.runs.source import Servers
    from space.server.build import Declared
    from space.server.client import Server
    from space.server.compare import ServerPair

    pair = ServerPair(Server("baseline", "http://gpu-box:8000/v1"),
                      Server("speculative", "http://gpu-box:8001/v1"),
                      Declared(method="ngram", k=4))
    own = tmp_path / "own.txt"
    own.write_text("first prompt\n")
    start = EngineSpec(method="ngram", k=4, max_model_len=2048)
    h = TrafficHandlers(None, start, Offer(), str(own),  # type: ignore[arg-type]
                        source=Servers(pair))
    spec = h._plan(None, "", 3, 32, 1, 2, "ngram", "", 4, None)[1].spec
    # the operator's tokenizer and settings
    assert (spec.model, spec.method, spec.k, spec.max_model_len) == (
        start.model, start.method, start.k, start.max_model_len)
    with pytest.raises(ConfigError, match="the speculative one runs ngram with k=4"):
        h._plan(None, "", 3, 32, 1, 2, "ngram", "", 2, None)
    seen = {}

    def run_traffic(spec, plan, **kw):
        seen.update(kw)
        raise ConfigError("stop here")

    monkeypatch.setattr(space.runs.traffic, "run_traffic", run_traffic)
    h.panel = type("P", (), {"status": "status"})()  # type: ignore[assignment]
    monkeypatch.setattr("gradio.Warning", lambda message: None)
    out = list(h.run(None, "", 3, 32, 1, 2, "ngram", "", 4, None, lambda *a, **k: None))
    assert seen["source"].pair is pair and "through the running vLLM servers" in out[0]["status"]
    assert "stop here" in out[-1]["status"]


def test_measure_more_continues_the_sessions_last_run_until_decided(tmp_path, monkeypatch):
    """Without a run first, one line; after one, the same plan and items go back to the
    Runs layer with a budget, and the tab shows the answer and keeps the new items."""
    import gradio as gr

    import space.runs.traffic
    from space.ui.traffic_panel import TrafficSession, build_traffic_panel

    with gr.Blocks():
        panel = build_traffic_panel()
    h = TrafficHandlers(panel, EngineSpec(), Offer())
    (first,) = list(h.more(None, lambda *a, **k: None))
    assert "run the traffic first" in first[panel.status]
    seen = {}
    result = two_groups()

    def run_traffic(spec, plan, *, previous, until_decided, **_kw):
        seen.update(previous=previous, budget=until_decided, plan=plan)
        return result

    monkeypatch.setattr(space.runs.traffic, "run_traffic", run_traffic)
    monkeypatch.setattr(h, "show", lambda r, saved="": {"shown": r})
    last = TrafficSession(EngineSpec(method="ngram", k=4), "the plan", "t.jsonl", 32, 1, 1, [],
                          result.items[:2])
    *_, done = list(h.more(last, lambda *a, **k: None))
    assert seen["previous"] == result.items[:2] and seen["plan"] == "the plan"
    assert seen["budget"].max_prompts == 48 and seen["budget"].max_minutes == 10
    assert done["shown"] is result and done[panel.last].items == result.items
