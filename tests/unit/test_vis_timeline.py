"""Timeline: one bar per engine step per lane, on ms since arrival."""
from __future__ import annotations

import pytest

from vis.timeline import timeline_figure


def _bars(fig):
    return [t for t in fig.data if t.type == "bar"]


def _lane_bars(fig, lane):
    """(step index, kind, start ms, duration ms) of every bar in one lane."""
    out = []
    for t in _bars(fig):
        for y, base, width, cd in zip(t.y, t.base, t.x, t.customdata, strict=False):
            if y == lane:
                out.append((cd[0], t.name, base, width))
    return sorted(out)


def test_one_bar_per_step_per_lane(spec_trace, base_trace):
    fig = timeline_figure(spec_trace, base_trace)
    assert len(_lane_bars(fig, "speculative")) == len(spec_trace.steps) == 7
    assert len(_lane_bars(fig, "baseline")) == len(base_trace.steps) == 11


def test_bars_are_ms_since_arrival_with_step_kind(spec_trace):
    bars = _lane_bars(timeline_figure(spec_trace), "speculative")
    assert [b[0] for b in bars] == [s.index for s in spec_trace.steps]
    assert [b[1] for b in bars] == [s.kind for s in spec_trace.steps]
    assert bars[0][2] == pytest.approx(2.0)     # 2 ms queued before the first step
    assert bars[3][3] == pytest.approx(12.0)    # the bonus step took 12 ms
    assert bars[-1][2] + bars[-1][3] == pytest.approx(spec_trace.e2e_s * 1e3)


def test_one_legend_entry_per_kind(spec_trace, base_trace):
    fig = timeline_figure(spec_trace, base_trace)
    assert [t.name for t in _bars(fig)] == ["prefill", "verify", "decode"]
    assert len({t.marker.color for t in _bars(fig)}) == 3


def test_hover_has_tokens_proposed_accepted_emitted(spec_trace):
    fig = timeline_figure(spec_trace)
    verify = next(t for t in _bars(fig) if t.name == "verify")
    assert "proposed" in verify.hovertemplate and "emitted" in verify.hovertemplate
    # step 2: 4 proposed, 1 accepted, 2 emitted
    row = next(cd for cd in verify.customdata if cd[0] == 2)
    assert list(row[5:]) == [4, 1, 2]


def test_finish_marks_and_title_show_time_saved(spec_trace, base_trace):
    fig = timeline_figure(spec_trace, base_trace)
    finish = [t for t in fig.data if t.name == "finish"]
    assert [t.y[0] for t in finish] == ["speculative", "baseline"]
    assert finish[0].x[0] == pytest.approx(72.0) and finish[1].x[0] == pytest.approx(100.0)
    assert len(fig.layout.shapes) == 2
    title = fig.layout.title.text
    assert "72 ms" in title and "100 ms" in title and "28 ms saved" in title


def test_without_baseline_only_one_lane(spec_trace):
    fig = timeline_figure(spec_trace)
    assert {y for t in fig.data for y in t.y} == {"speculative"}
    assert "baseline" not in fig.layout.title.text
