"""space/observe/livestats.py and vis/live.py: the Live tab's readings, their caching
while a run is measured, and the figure drawn from them."""
from __future__ import annotations

import dataclasses

from space.observe.livestats import Activity, LiveSource, RunLog
from space.records.config import EngineSpec
from space.records.events import (
    Origin,
    RunFinished,
    RunStarted,
    SweepFinished,
    TippingMeasured,
)
from space.records.trace import make_compare
from tests.helpers.memory import h200
from tests.helpers.traces import NGRAM_RUN_COUNTS, ngram_run, short_baseline
from vis.live import live_figure, live_summary_html


class Result:
    def to_dict(self) -> dict:
        return {}


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def source(log: RunLog, busy: Activity, clock: Clock, reads: list) -> LiveSource:
    def kv():
        reads.append(clock.t)
        return {"baseline": 0.1, "speculative": 0.2}

    return LiveSource(log, kv, lambda: None, lambda: 3 << 30, busy=busy, clock=clock)


def test_the_run_log_hears_finished_runs_and_jobs():
    log = RunLog()
    log(RunStarted(EngineSpec()))  # nothing ended
    log(RunFinished(make_compare([short_baseline()], [ngram_run()])))
    log(RunFinished(ngram_run(), Origin(part_of="sweep")))  # a sweep's run: a run
    synthetic = ngram_run()
    synthetic.config = dataclasses.replace(synthetic.config, synthetic=True)
    log(RunFinished(synthetic))  # forced acceptance: not a run the engine serves
    runs, _, _ = log.recent()
    assert [r.engine for r in runs] == ["baseline", "speculative", "speculative"]
    assert runs[1].acceptance_rate == NGRAM_RUN_COUNTS["accepted"] / NGRAM_RUN_COUNTS["draft_tokens"]
    want = [n / NGRAM_RUN_COUNTS["drafts"] for n in NGRAM_RUN_COUNTS["per_pos"]]
    assert log.per_position() == {"speculative": want}  # the baseline drafts nothing
    log(SweepFinished(Result(), "k", EngineSpec()))
    log(TippingMeasured(Result(), "curve", EngineSpec()))
    assert [j.kind for j in log.recent()[2]] == ["compare", "trace", "sweep", "tipping"]


def test_idle_refreshes_every_2_s_busy_at_most_every_5_s_from_the_cache():
    log, busy, clock, reads = RunLog(), Activity(), Clock(), []
    src = source(log, busy, clock, reads)
    first, fresh = src.snapshot()
    assert fresh and src.interval_s() == 2.0 and first.kv_now == {"baseline": 0.1,
                                                                  "speculative": 0.2}
    clock.t += 2.0
    assert src.snapshot()[1]
    with busy:
        assert src.interval_s() == 5.0
        taken = src.snapshot()[0]  # the last idle reading is 2 s old: the cache serves
        for _ in range(4):
            clock.t += 1.0
            snap, fresh = src.snapshot()
            assert (snap, fresh) == (taken, False)
        clock.t += 1.0
        snap, fresh = src.snapshot()
        assert fresh and snap.busy
    assert reads == [1000.0, 1002.0, 1007.0]  # three readings in 7 s, one during the run
    assert [p.usage_ratio for p in log.recent()[1] if p.engine == "speculative"] == [0.2] * 3


def test_a_failing_reader_is_skipped():
    def broken():
        raise AttributeError("engine closed")

    src = LiveSource(RunLog(), broken, broken)
    snap, _ = src.snapshot()
    assert snap.kv_now == {} and snap.gpu is None


def test_figure_and_summary_from_a_snapshot():
    log = RunLog()
    log(RunFinished(make_compare([short_baseline()], [ngram_run()])))
    snap, _ = LiveSource(log, lambda: {"speculative": 0.25}, h200).snapshot()
    fig = live_figure(snap)
    names = {t.name for t in fig.data}
    assert {"baseline TPOT", "speculative TPOT", "speculative acceptance",
            "speculative per position", "speculative KV cache"} <= names
    bars = next(t for t in fig.data if t.name == "speculative per position")
    assert list(bars.y) == [n / 3 for n in NGRAM_RUN_COUNTS["per_pos"]]
    html = live_summary_html(snap)
    assert "GPU 0 (NVIDIA H200): 60.0 of 140.0 GiB used" in html
    assert "KV cache 25.0%" in html and 'data-busy="false"' in html
    assert "jobs ended: 1 comparisons" in html
    cpu, _ = LiveSource(log, dict, lambda: None, lambda: 3 << 30).snapshot()
    assert "no GPU: this process holds 3.00 GiB" in live_summary_html(cpu)
    assert "jobs ended" not in live_summary_html(dataclasses.replace(cpu, jobs=[]))
