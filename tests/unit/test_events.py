"""space/runs/events.py and its observers: order, a failing observer, what each hears."""
from __future__ import annotations

import logging

import pytest

from space.observe.prom import Metrics
from space.records.config import EngineSpec
from space.records.events import (
    Origin,
    RunFailed,
    RunFinished,
    RunStarted,
    SweepFinished,
    TippingMeasured,
    TrafficFinished,
    job_kind,
)
from space.records.history import History
from space.records.run import RequestRecord
from space.records.trace import make_compare
from space.runs.events import Job, Publisher, published
from space.runs.recorder import HistoryRecorder, Saved
from tests.helpers.traces import NGRAM_RUN_COUNTS, ngram_run, short_baseline

NGRAM = EngineSpec(method="ngram", k=4)


def value(metrics: Metrics, name: str, **labels) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    want = tuple(sorted(labels.items()))
    return next(s.value for fam in text_string_to_metric_families(metrics.render().decode())
                for s in fam.samples if s.name == name and tuple(sorted(s.labels.items())) == want)


def cmp():
    return make_compare([short_baseline()], [ngram_run()])


class Result:
    def __init__(self, d: dict) -> None:
        self.d = d

    def to_dict(self, keep_prompts: bool = True) -> dict:
        return self.d if keep_prompts else {**self.d, "prompts": []}


def test_observers_hear_every_event_in_the_order_registered():
    heard: list[tuple[str, str]] = []
    p = Publisher()
    for name in ("metrics", "live", "history"):
        p.subscribe(name, lambda ev, name=name: heard.append((name, type(ev).__name__)) or name)
    assert p.publish(RunStarted(NGRAM)) == {"metrics": "metrics", "live": "live",
                                            "history": "history"}
    p.publish(RunFinished(cmp()))
    assert heard == [("metrics", "RunStarted"), ("live", "RunStarted"), ("history", "RunStarted"),
                     ("metrics", "RunFinished"), ("live", "RunFinished"),
                     ("history", "RunFinished")]
    with pytest.raises(ValueError, match="registered already"):
        p.subscribe("live", print)


def test_a_failing_observer_is_logged_and_the_others_still_hear(caplog):
    heard = []

    def broken(_event):
        raise RuntimeError("disk full")

    p = Publisher()
    p.subscribe("first", heard.append)
    p.subscribe("broken", broken)
    p.subscribe("last", heard.append)
    with caplog.at_level(logging.ERROR, logger="space.runs.events"):
        replies = p.publish(RunFinished(cmp()))
    assert len(heard) == 2 and "broken" not in replies
    assert "the broken observer failed on RunFinished" in caplog.text


def test_a_run_returns_its_record_whatever_its_observers_do():
    p = Publisher()
    p.subscribe("broken", lambda _e: 1 / 0)
    record = cmp()
    assert published(Job(p), NGRAM, _req(), lambda: record) is record


def _req():
    from space.records.config import RequestSpec

    return RequestSpec(prompt="p", temperature=0.5)


def test_a_run_tells_its_start_and_its_end_or_its_failure():
    heard = []
    p = Publisher()
    p.subscribe("log", heard.append)
    job = Job(p, Origin("ada"))
    published(job, NGRAM, _req(), cmp)
    assert [type(e) for e in heard] == [RunStarted, RunFinished]
    assert heard[1].record is not None and heard[1].origin.user == "ada"
    with pytest.raises(ZeroDivisionError):
        published(job, NGRAM, _req(), lambda: 1 / 0)
    assert isinstance(heard[-1], RunFailed) and heard[-1].error == "ZeroDivisionError"
    from space.records.config import ConfigError

    def bad_input():
        raise ConfigError("the prompt is empty")

    with pytest.raises(ConfigError):
        published(job, NGRAM, _req(), bad_input)
    assert isinstance(heard[-1], RunStarted)  # the visitor's input: no failure counted


def test_a_job_keeps_the_replies_to_its_own_end_not_to_its_parts():
    p = Publisher()
    p.subscribe("history", lambda e: None if e.origin.part_of else type(e).__name__)
    job = Job(p, Origin("ada"))
    part = job.inside("sweep").inside("workload")
    assert part.origin == Origin("ada", "sweep") and part.replies is job.replies
    part.publish(RunFinished(cmp(), part.origin))
    assert job.replies == {}
    job.publish(SweepFinished(Result({}), "k", NGRAM, job.origin))
    assert job.replies == {"history": "SweepFinished"}


def test_job_kinds():
    assert job_kind(RunFinished(cmp())) == "compare"
    assert job_kind(RunFinished(ngram_run())) == "trace"
    assert job_kind(RunFinished(cmp(), Origin(part_of="sweep"))) is None
    assert job_kind(SweepFinished(Result({}), "k", NGRAM, Origin(part_of="sweep"))) is None
    assert job_kind(TippingMeasured(Result({}), "c", NGRAM)) == "tipping"
    assert job_kind(RunFailed(NGRAM, "E")) is None and job_kind(RunStarted(NGRAM)) is None


def test_metrics_as_an_observer():
    m = Metrics()
    m(RunStarted(EngineSpec(method="ngram", k=6)))  # positions 0..5 at zero before the run
    assert value(m, "speclens_spec_decode_num_accepted_tokens_per_pos_total",
                 engine="speculative", position="5") == 0
    m(RunFinished(cmp(), Origin(part_of="sweep")))  # a sweep's run counts as a run
    m(SweepFinished(Result({}), "k", NGRAM))
    m(TippingMeasured(Result({}), "c", NGRAM))
    m(RunFailed(NGRAM, "RuntimeError"))
    e = {"engine": "speculative"}
    assert value(m, "speclens_spec_decode_num_drafts_total", **e) == NGRAM_RUN_COUNTS["drafts"]
    assert value(m, "speclens_requests_total", engine="baseline", status="ok") == 1
    assert value(m, "speclens_requests_total", status="error", **e) == 1
    jobs = {k: value(m, "speclens_jobs_total", kind=k)
            for k in ("compare", "trace", "sweep", "tipping", "traffic")}
    assert jobs == {"compare": 0, "trace": 0, "sweep": 1, "tipping": 1, "traffic": 0}
    vllm = {"engine": "speculative", "model_name": "default"}
    assert value(m, "vllm:spec_decode_num_drafts_total", **vllm) == NGRAM_RUN_COUNTS["drafts"]


def test_the_history_saves_each_job_once_with_its_owner(tmp_path):
    history = History(tmp_path / "history.sqlite3")
    recorder = HistoryRecorder(history, private_traffic=True)
    assert recorder(RunFinished(cmp(), Origin("ada", "sweep"))) is None  # saved with it
    assert recorder(RunFinished(ngram_run())) is None  # the page saves comparisons
    sampled = cmp()
    sampled.speculative.request = RequestRecord(temperature=0.5)  # the record says how
    saved = recorder(RunFinished(sampled, Origin("ada")))
    curve = {"kind": "measured", "model": "m", "method": "draft_model", "k": 3,
             "points": [], "step_costs": []}
    tipping = recorder(TippingMeasured(Result(curve), "curve", NGRAM, Origin("bob")))
    traffic = recorder(TrafficFinished(Result({"source": "f.jsonl", "prompts": [{"p": 1}],
                                               "groups": []}), NGRAM))
    rows, total = history.runs()
    assert total == 3 and all(isinstance(s, Saved) for s in (saved, tipping, traffic))
    by_id = {r.id: r for r in rows}
    assert (by_id[saved.run_id].user, by_id[saved.run_id].temperature) == ("ada", 0.5)
    t = by_id[tipping.run_id]
    assert (t.kind, t.user, t.method, t.k) == ("tipping", "bob", "draft_model", 3)
    assert t.title == "tipping curve (measured) of draft_model k=3"
    assert '"prompts": []' in history.get(traffic.run_id)[1]  # --traffic-private


def test_a_history_that_cannot_save_says_why(tmp_path):
    class Full(History):
        def save(self, run, now_s=None):
            raise OSError("disk full")

    saved = HistoryRecorder(Full(tmp_path / "h.sqlite3"))(RunFinished(cmp()))
    assert saved == Saved(None, "OSError")


def test_the_cli_records_when_told_to(tmp_path):
    """``--record``: the process's runs (no job named) reach the data folder's history."""
    import argparse

    from space.cli.main import _parser
    from space.runs.recorder import record_to_history

    assert _parser().parse_args(["--record", "trace", "--prompt", "x"]).record
    assert not _parser().parse_args(["trace", "--prompt", "x"]).record
    p = Publisher()
    record_to_history(argparse.Namespace(data_dir=str(tmp_path)), p)
    published(Job(p), NGRAM, _req(), cmp)  # as runner.compare does for the CLI
    (row,), total = History(tmp_path / "history.sqlite3").runs()
    assert total == 1 and row.kind == "compare" and row.user is None
