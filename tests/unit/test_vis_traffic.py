"""vis/traffic.py: the traffic figures and table from a hand-made result."""
from __future__ import annotations

import pytest

from space.judge.traffic import answer
from tests.helpers.traffic import item, two_groups
from vis.traffic import group_table, traffic_figure


def test_speedup_per_group_with_its_spread_and_one_point_per_prompt():
    fig = traffic_figure(two_groups().summary())
    bars, code, chat = fig.data
    # end-to-end ratios of totals (TTFT is over 20 % of these short requests)
    s = (0.16 / 9) / (0.09 / 10)
    assert list(bars.x) == ["code", "chat"]
    assert list(bars.y) == pytest.approx([s, (0.08 / 9) / 0.01])
    groups = two_groups().summary()["groups"]
    lo, hi = groups[0]["speedup_ci"]
    assert list(bars.error_y.array) == pytest.approx([hi - s, 0.0], abs=1e-3)  # one run: none
    assert list(bars.error_y.arrayminus) == pytest.approx([s - lo, 0.0], abs=1e-3)
    assert list(bars.marker.color) == ["#009E73", "#999999"]  # worth-it, undecided (one run)
    assert (code.name, list(code.customdata), list(code.y)) == ("code", [1, 3], [2.0, 1.6])
    assert list(code.x) == [0.75, 0.75] and chat.name == "chat"
    assert "25% in groups that gain" in fig.layout.title.text


def test_group_names_from_the_file_are_made_safe():
    fig = traffic_figure(answer("t", "how", [item("<b>x</b>", 1, 1.2)], {}, None,
                                repeats=1, max_tokens=8).summary())
    assert "<b>" not in str(fig.data[0].x) and "<b>" not in fig.data[1].name


def test_table_one_row_per_group():
    t = group_table(two_groups().summary())
    assert list(t["group"]) == ["code", "chat"]
    assert list(t["measured"]) == [2, 1] and list(t["share of output tokens"]) == [0.25, 0.75]
    assert t["slowest prompt"].tolist() == [1.6, None]
    assert t["speedup (ratio of totals, 90 % CI)"].tolist()[0].endswith(", 2 prompts)")
