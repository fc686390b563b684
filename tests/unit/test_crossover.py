"""space/judge/crossover.py: where a speedup line crosses 1, for sweeps (either way)
and tipping curves (rising only), on literal points."""
from __future__ import annotations

import math

import pytest

from space.judge.crossover import crossing


def test_a_sweep_crossing_is_interpolated_at_the_first_crossing_either_way():
    assert crossing([1, 2, 4, 8], [1.6, 1.3, 0.9, 0.7]).at == pytest.approx(3.5)
    # on a log axis, halfway between 1 and 4 is 2
    assert crossing([1, 4], [1.2, 0.8], log_axis=True).at == pytest.approx(2.0)
    assert crossing([1, 2, 3], [0.8, 1.0, 1.3]).at == 2.0       # exactly 1 at a point
    assert crossing([1, 2, 3], [1.0, 1.2, 1.3]).at == 1.0       # ... the first one
    assert crossing([3, 1, 2], [0.7, 1.5, 1.1]).at == pytest.approx(2.25)  # unsorted input
    assert crossing([1, 2], [1.4, 1.2]).at is None
    assert crossing([1, 2, 3], [1.2, math.nan, 0.8]).at == pytest.approx(2.0)
    assert crossing([1, 2, 3], [0.8, 1.2, 0.9]).at == pytest.approx(1.5)   # rising counts too


def test_the_gain_vanishes_at_the_first_point_at_or_below_one():
    assert crossing([1, 2, 4, 8, 16], [1.4, 1.2, 1.0, 0.9, 0.8]).first_not_faster == 4
    assert crossing([1, 2], [1.4, 1.2]).first_not_faster is None
    assert crossing([1, 2], [0.9, 0.8]).first_not_faster == 1   # slower from the start


@pytest.mark.parametrize("xs, ys, expected", [
    ([1.0, 1.8, 2.6, 3.4], [0.41, 0.74, 1.08, 1.40], 1.8 + 0.26 / 0.34 * 0.8),
    ([3.4, 1.0, 2.6], [1.4, 0.4, 0.6], 2.6 + 0.4 / 0.8 * 0.8),   # unsorted input
    ([1.0, 2.0, 3.0, 4.0], [0.5, 1.1, 0.95, 1.5], 1.0 + 0.5 / 0.6),  # a later dip is noise
    ([1.0, 2.0, 3.0, 4.0], [1.2, 0.9, 0.95, 1.5], 3.0 + 0.05 / 0.55),  # a fall does not count
    ([1.0, 2.0], [1.1, 1.3], None),          # faster at every measured point
    ([1.0, 2.0], [0.4, 0.9], None),          # never reaches 1
    ([1.0, 2.0, None], [0.4, float("nan"), 1.2], None),  # unmeasured points are skipped
])
def test_a_rising_only_crossing_is_the_tipping_curves_break_even(xs, ys, expected):
    got = crossing(xs, ys, rising_only=True).at
    assert got == (None if expected is None else pytest.approx(expected))
