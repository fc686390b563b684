"""Acceptance summary and charts.

views_run() (tests/helpers/traces.py) has 4 verify steps: k=4 accepting 1, k=3 accepting 3,
k=1 accepting 0, k=3 accepting 3 (cut) -> 7 of 11 drafts accepted.
"""
from __future__ import annotations

import pytest

from vis.acceptance import acceptance_summary_html, accepted_histogram_figure, per_position_figure


def test_summary_shows_vllm_metrics(spec_trace):
    html = acceptance_summary_html(spec_trace)
    assert "63.6%" in html                       # 7 / 11
    assert "7 of 11" in html and "4 verify steps" in html
    assert "2.75" in html                        # 1 + 7 / 4


def test_summary_without_drafts(base_trace):
    assert "no drafts" in acceptance_summary_html(base_trace).lower()


def test_per_position_bars_equal_trace_figures(spec_trace):
    bar = per_position_figure(spec_trace).data[0]
    assert list(bar.x) == [1, 2, 3, 4]
    assert list(bar.y) == pytest.approx(spec_trace.per_position_acceptance)
    assert list(bar.y) == pytest.approx([0.75, 0.5, 0.5, 0.0])


def test_histogram_counts_every_bin(spec_trace):
    bar = accepted_histogram_figure(spec_trace).data[0]
    assert list(bar.x) == [0, 1, 2, 3, 4]
    assert list(bar.y) == [1, 1, 0, 2, 0]
    assert sum(bar.y) == spec_trace.num_drafts


@pytest.mark.parametrize("make", [per_position_figure, accepted_histogram_figure])
def test_figures_without_drafts_say_so(base_trace, make):
    fig = make(base_trace)
    assert len(fig.data) == 0
    assert any("no drafts" in a.text for a in fig.layout.annotations)
