"""space/ui/live_panel.py: the Live tab polls only while open, never takes the
engine lock, and sends nothing while a measured run serves the cache."""
from __future__ import annotations

import threading

import gradio as gr
import pytest

from space.observe.livestats import Activity, LiveSource, RunLog
from space.records.events import RunFinished
from space.runs import runner
from space.ui.live_panel import LiveHandlers, build_live_panel, kv_usage_now, measuring
from tests.helpers.traces import ngram_run


@pytest.fixture
def panel():
    with gr.Blocks():
        return build_live_panel()


def select(value: str) -> gr.SelectData:
    return gr.SelectData(None, {"value": value, "index": 0, "selected": True})


def test_the_timer_is_off_until_the_tab_is_open(panel):
    assert panel.timer.active is False
    h = LiveHandlers(panel, LiveSource(RunLog(), dict, lambda: None))
    opened = h.tab_selected(select("Live"))
    assert opened[panel.timer].active is True and panel.figure in opened
    closed = h.tab_selected(select("Acceptance"))
    assert closed == {panel.timer: closed[panel.timer]} and closed[panel.timer].active is False


def test_a_tick_never_waits_for_the_engine_lock(panel):
    log = RunLog()
    log(RunFinished(ngram_run()))
    h = LiveHandlers(panel, LiveSource(log, kv_usage_now, lambda: None))
    done = threading.Event()
    with runner.POOL.lock:  # a run holds the engines, from another thread's view:
        def watch():
            h.tick()
            kv_usage_now()
            done.set()

        threading.Thread(target=watch, daemon=True).start()
        assert done.wait(5), "the Live tab waited for the engine lock"


def test_while_measured_the_cached_tick_sends_only_the_timer(panel):
    activity = Activity()
    h = LiveHandlers(panel, LiveSource(RunLog(), dict, lambda: None, busy=activity))
    assert panel.summary in h.tick()
    with activity:
        cached = h.tick()
        assert list(cached) == [panel.timer] and cached[panel.timer].value == 5.0


def test_measuring_counts_a_run_while_it_runs():
    activity = Activity()
    seen = []

    def run(x):
        seen.append(activity())
        yield x

    assert list(measuring(run, activity)("a")) == ["a"]
    assert seen == [True] and not activity()
    assert measuring(lambda: activity(), activity)() is True
