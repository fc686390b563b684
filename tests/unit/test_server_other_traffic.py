"""A server that served other requests during a run: sampled during the run less our
own, said in the status line, the checklist and the traffic answer, and the
time-derived lines and verdict undecided (issue 29)."""
from __future__ import annotations

import threading

from space.judge.checklist import evaluate
from space.judge.measure import compare_inputs
from space.records.trace import make_compare
from space.records.verdict import ACCEPTANCE_RATE, SPEEDUP, UNDECIDED
from space.server import compare
from space.server.build import Declared, build_trace
from tests.helpers.server_records import (
    INFO,
    NGRAM,
    PLAIN_INFO,
    REQ,
    SPEC_ACCEPTED,
    SPEC_CHUNKS,
    SPEC_DRAFTED,
    spec_decode,
    stream,
)
from vis.text import summary

BUSY = "the server was serving 3 other requests: timings are not comparable"


def _busy_compare(others: int):
    extra = {"other_requests": others, "other_traffic": others > 0}
    spec = build_trace(stream(SPEC_CHUNKS, spec_decode(SPEC_ACCEPTED, SPEC_DRAFTED)), INFO,
                       NGRAM, REQ, extra=extra)
    base = build_trace(stream([[t] for t in range(1, 12)], None, step_s=0.5), PLAIN_INFO,
                       Declared(), REQ)
    return make_compare([base], [spec])


def test_other_requests_make_time_lines_and_the_verdict_undecided():
    record = _busy_compare(3)
    assert record.speedup > 1.1  # on the clock a clear gain, which decides nothing here
    checklist = evaluate(compare_inputs(record, temperature=0.0))
    assert checklist.verdict == UNDECIDED
    line = checklist.check(SPEEDUP)
    assert line.passed is None and not line.decisive and BUSY in line.detail
    assert checklist.check(ACCEPTANCE_RATE).passed is None  # no draft cost through a server
    assert BUSY in summary(record)


def test_an_idle_server_decides_as_before():
    checklist = evaluate(compare_inputs(_busy_compare(0), temperature=0.0))
    assert checklist.verdict != UNDECIDED and "other request" not in summary(_busy_compare(0))


def test_samples_count_only_while_every_request_runs(monkeypatch):
    """Gauge 5 with our 2 requests running: 3 others. Before both have a first
    chunk, or after one finished, the gauge says nothing about others."""
    monkeypatch.setattr(compare, "SAMPLE_S", 0.01)
    monkeypatch.setattr(compare, "read_metrics", lambda server: "")
    gauge = iter([5.0] * 1000)
    read = threading.Event()

    def running(_text):
        read.set()
        return next(gauge)
    monkeypatch.setattr(compare, "requests_running", running)
    sampler = compare._Sampler(compare.Server("speculative", "http://s/v1"), 2)
    with sampler:
        sampler.started.add(0)
        assert not read.wait(0.1)  # one of two running: no reading at all
        sampler.started.add(1)
        assert read.wait(2.0)
        sampler.finished = True
    assert sampler.others and set(sampler.others) == {3.0}


def test_the_traffic_answer_says_so():
    from types import SimpleNamespace

    from space.judge.traffic import busy_requests

    items = [SimpleNamespace(compare=_busy_compare(n)) for n in (0, 3, 1)]
    assert busy_requests(SimpleNamespace(items=items)) == 3
