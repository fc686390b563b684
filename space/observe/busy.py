"""Was the machine busy while a run measured? CPU time other processes used (psutil).

Timings on a shared machine are not comparable: the same prompts measured twice
gave a traffic-weighted 2.11x while other work ran and 1.26x alone. The meter
reads the whole machine's busy CPU time and this process's own (with its
children) at the start and at the end; the difference is what other processes
used, as a share of the CPUs' wall time. Above ``BUSY_SHARE`` the run is flagged.
A GPU's other processes (NVML) are not read here.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

try:
    import psutil
except ImportError:  # pragma: no cover - psutil is in the venv
    psutil = None

# Other processes' share of the machine's CPU time above which timings are flagged:
# a quarter of the CPUs is a whole core on this 4-core-or-smaller class of box.
BUSY_SHARE = 0.25


@dataclass
class Busy:
    other_cpu_s: float     # CPU seconds other processes used during the run
    wall_s: float
    cpus: int
    share: float           # other_cpu_s / (wall_s x cpus)

    @property
    def busy(self) -> bool:
        return self.share > BUSY_SHARE

    def to_dict(self) -> dict:
        return {"other_cpu_s": round(self.other_cpu_s, 2), "wall_s": round(self.wall_s, 2),
                "cpus": self.cpus, "share": round(self.share, 4), "busy": self.busy}


def _busy_s() -> float:
    t = psutil.cpu_times()
    return sum(getattr(t, f) for f in ("user", "nice", "system", "irq", "softirq", "steal")
               if hasattr(t, f))


def _own_s() -> float:
    t = psutil.Process().cpu_times()
    return t.user + t.system + t.children_user + t.children_system


class Meter:
    """``start()`` before the run, ``stop()`` after: what other processes used between."""

    def __init__(self) -> None:
        self._start: tuple[float, float, float] | None = None

    def start(self) -> Meter:
        if psutil is not None:
            self._start = (time.monotonic(), _busy_s(), _own_s())
        return self

    def stop(self) -> Busy | None:
        """None without psutil or a start."""
        if psutil is None or self._start is None:
            return None
        t0, busy0, own0 = self._start
        wall = time.monotonic() - t0
        other = max((_busy_s() - busy0) - (_own_s() - own0), 0.0)
        cpus = os.cpu_count() or 1
        return Busy(other, wall, cpus, other / (wall * cpus) if wall > 0 else 0.0)
