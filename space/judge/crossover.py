"""Where a measured speedup line crosses 1, for sweeps and tipping curves (pure)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Crossing:
    at: float | None                # the first x where the line reaches 1, interpolated
    first_not_faster: float | None  # the first measured x whose speedup is at most 1


def crossing(xs: Sequence[float | None], speedups: Sequence[float | None], *,
             rising_only: bool = False, log_axis: bool = False) -> Crossing:
    """Where the speedup line crosses 1, and the first point that is no faster.

    ``rising_only``: only a crossing from below 1 counts, for lines that can only
    rise (a tipping curve: more acceptance never makes speculation slower, so a
    later dip is noise). Otherwise the first crossing either way counts (a sweep).
    Unmeasured points (x or speedup None, speedup NaN) are skipped; between neighbours
    on either side of 1 the crossing is interpolated linearly (in log x on a log axis);
    a point at exactly 1 is the crossing itself.
    """
    pts = sorted((x, s) for x, s in zip(xs, speedups, strict=True)
                 if x is not None and s is not None and not math.isnan(s))
    first = next((x for x, s in pts if s <= 1.0), None)
    if pts and pts[0][1] == 1.0:
        return Crossing(float(pts[0][0]), first)
    for (x0, s0), (x1, s1) in zip(pts, pts[1:], strict=False):
        if s0 < 1.0 <= s1 or (not rising_only and s0 > 1.0 >= s1):
            t = (1.0 - s0) / (s1 - s0)
            at = (math.exp(math.log(x0) + t * (math.log(x1) - math.log(x0))) if log_axis and x0 > 0
                  else x0 + t * (x1 - x0))
            return Crossing(round(at, 12), first)  # 2.2, not 2.2000000000000006
    return Crossing(None, first)
