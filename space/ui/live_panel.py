"""The Live tab: both engines' in-process metrics, refreshed while the tab is selected;
during a measured run less often and nothing unchanged, so watching never skews it.
Nothing here takes the engine lock (``EnginePool.peek``)."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from space.observe import memory
from space.observe.livestats import Activity, LiveSource, RunLog
from space.runs import runner
from space.ui.status import QUICK
from vis.live import live_figure, live_summary_html

TAB = "Live"


@dataclass
class LivePanel:
    summary: gr.HTML
    figure: gr.Plot
    timer: gr.Timer


def build_live_panel() -> LivePanel:
    gr.Markdown("Both engines' figures from this server's own metrics (the same counts "
                "`/metrics` exports), refreshed every 2 s while this tab is open; during a "
                "measured run at most every 5 s, so watching does not slow it.")
    summary = gr.HTML("", elem_id="live-summary")
    figure = gr.Plot(label="Live", show_label=False, elem_id="live-figure")
    return LivePanel(summary, figure, gr.Timer(2.0, active=False))


def kv_usage_now() -> dict[str, float]:
    """{engine label: KV-cache usage} of the engines built so far; no lock."""
    return {("speculative" if e.spec.is_speculative else "baseline"):
            e.memory().kv_cache_usage_ratio for e in runner.POOL.peek()}


def live_source(log: RunLog, activity: Activity) -> LiveSource:
    return LiveSource(log, kv_usage_now, lambda: memory.gpu_memory(memory.nvml_index(0)),
                      memory.process_memory, busy=activity)


class LiveHandlers:
    def __init__(self, panel: LivePanel, source: LiveSource) -> None:
        self.panel, self.source = panel, source

    def tick(self) -> dict:
        snap, fresh = self.source.snapshot()
        p = self.panel
        timer = gr.Timer(self.source.interval_s(), active=True)
        if not fresh:  # the cached reading: nothing to redraw, nothing sent
            return {p.timer: timer}
        return {p.summary: live_summary_html(snap), p.figure: live_figure(snap), p.timer: timer}

    def tab_selected(self, evt: gr.SelectData) -> dict:
        """Tick now and keep ticking on the Live tab; stop on any other."""
        if evt.value != TAB:
            return {self.panel.timer: gr.Timer(active=False)}
        return self.tick()


def wire_live(tabs: gr.Tabs, p: LivePanel, h: LiveHandlers) -> None:
    outputs = [p.summary, p.figure, p.timer]
    p.timer.tick(h.tick, None, outputs, api_name="live", **QUICK)  # named: the tests read it
    tabs.select(h.tab_selected, None, outputs, **QUICK)


def measuring(fn: Callable, activity: Activity) -> Callable:
    """``fn`` (a Gradio handler) counted as a measured run while it runs."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen(*args, **kwargs):
            with activity:
                yield from fn(*args, **kwargs)
        return gen

    @functools.wraps(fn)
    def plain(*args, **kwargs):
        with activity:
            return fn(*args, **kwargs)
    return plain
