"""Runs in a worker thread as a stream of events (space/ui/live.py)."""
from __future__ import annotations

import threading
import time

import gradio as gr
import pytest

from space.records.config import ConfigError, EngineSpec
from space.records.trace import make_compare
from space.ui.live import (
    HEARTBEAT_S,
    Done,
    Heartbeat,
    LiveCompare,
    LiveJob,
    MeasuredRun,
    Progress,
    Steps,
    follow,
)
from tests.helpers.traces import ngram_run, short_baseline


@pytest.fixture
def cmp():
    return make_compare([short_baseline()], [ngram_run()])


def test_live_compare_streams_then_finishes(cmp):
    def fake_compare(spec, req, repeats, on_step, progress, warmup, cancel=None,
                     on_repeat=None, explain=False, job=None):
        progress(0.0, "building")
        on_repeat(0, 1)
        for s in cmp.speculative.steps:
            on_step("r", s, {})
        return cmp

    events = list(LiveCompare(EngineSpec(), None, compare=fake_compare))
    assert isinstance(events[0], Progress) and isinstance(events[-1], Done)
    assert MeasuredRun(0, 1) in events  # a typed event, not a message to match
    steps = [e for e in events if isinstance(e, Steps)]
    assert steps and len(steps[-1].steps) == len(cmp.speculative.steps)
    assert events[-1].record is cmp


def test_live_compare_raises_the_runs_error():
    def failing(*a, **kw):
        raise ConfigError("the prompt is empty")

    with pytest.raises(ConfigError, match="empty"):
        list(LiveCompare(EngineSpec(), None, compare=failing))


def test_closing_the_stream_stops_the_work():
    """Gradio closes the handler's generator when its client leaves or presses Stop."""
    stopped = threading.Event()

    def work(_on_step, progress, cancel):
        progress(0.0, "running")
        if cancel.wait(10):  # the engine loop checks the token before each step
            stopped.set()

    events = iter(LiveJob(work))
    assert isinstance(next(events), Progress)
    events.close()
    # set only if the cancel token fired: without it the worker gives up after 10 s
    assert stopped.wait(30)


def test_a_quiet_worker_sends_heartbeats():
    """So the handler yields, and Gradio notices a client that left, during a baseline run."""
    out = list(LiveJob(lambda _s, _p, _c: time.sleep(2.5 * HEARTBEAT_S) or "ok"))
    assert sum(isinstance(e, Heartbeat) for e in out) >= 2
    assert isinstance(out[-1], Done) and out[-1].record == "ok"


def test_follow_yields_updates_and_returns_the_result():
    """A handler's side: shown events as updates, a skip per heartbeat, the result returned."""
    def work(_on_step, progress, _cancel):
        progress(0.5, "half")
        progress(1.0, "quiet now")  # the next event comes after two heartbeats
        time.sleep(2.5 * HEARTBEAT_S)
        return "ok"

    shown = follow(LiveJob(work), lambda ev: ev.message if ev.fraction < 1 else None, "the job")
    out = []
    with pytest.raises(StopIteration) as end:
        while True:
            out.append(next(shown))
    assert end.value.value == "ok"
    assert out[0] == "half" and "quiet now" not in out
    assert out.count(gr.skip()) >= 2 and len(out) == 1 + out.count(gr.skip())
