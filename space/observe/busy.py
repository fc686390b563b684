"""Was the machine busy while a run measured? Other processes' share of the CPUs' time
(psutil) above ``BUSY_SHARE``, or of the GPU's SM time (NVML) above ``GPU_BUSY_SHARE``,
flags its timings (the same prompts gave 2.11x while other work ran, 1.26x alone).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from space.observe.memory import nvml_module

try:
    import psutil
except ImportError:  # pragma: no cover - psutil is in the venv
    psutil = None

# Other processes' share of the machine's CPU time above which timings are flagged:
# a quarter of the CPUs is a whole core on this 4-core-or-smaller class of box.
BUSY_SHARE = 0.25
# Other processes' mean share of the GPU's SM time above which timings are flagged:
# a kernel of another process delays each of ours, so a tenth is already felt.
GPU_BUSY_SHARE = 0.10


@dataclass
class Busy:
    other_cpu_s: float     # CPU seconds other processes used during the run
    wall_s: float
    cpus: int
    share: float           # other_cpu_s / (wall_s x cpus)
    gpu_share: float | None = None  # other processes' mean share of the GPU's SM time
    gpu_processes: int | None = None  # other processes NVML saw computing on the GPU

    @property
    def busy(self) -> bool:
        return self.share > BUSY_SHARE or (self.gpu_share or 0.0) > GPU_BUSY_SHARE

    def to_dict(self) -> dict:
        d: dict[str, float | int | bool | None] = {
            "other_cpu_s": round(self.other_cpu_s, 2), "wall_s": round(self.wall_s, 2),
            "cpus": self.cpus, "share": round(self.share, 4), "busy": self.busy}
        if self.gpu_share is not None:
            d |= {"gpu_share": round(self.gpu_share, 4), "gpu_processes": self.gpu_processes}
        return d


def _busy_s() -> float:
    t = psutil.cpu_times()
    return sum(getattr(t, f) for f in ("user", "nice", "system", "irq", "softirq", "steal")
               if hasattr(t, f))


def _own_s() -> float:
    t = psutil.Process().cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def gpu_others(nvml, handle, since_us: int, own: set[int]) -> tuple[float, int] | None:
    """(mean share of the GPU's SM time, number of processes) of the processes not in
    ``own`` since ``since_us`` (NVML's clock, µs): their SM samples (%) summed per period
    NVML sampled; no sample (NOT_FOUND) is an idle GPU: 0; None when NVML cannot say."""
    try:
        samples = nvml.nvmlDeviceGetProcessUtilization(handle, since_us)
    except Exception as exc:
        if getattr(nvml, "NVML_ERROR_NOT_FOUND", None) == getattr(exc, "value", "?"):
            return 0.0, 0
        return None
    periods = {s.timeStamp for s in samples}
    others = [s for s in samples if s.pid not in own]
    if not periods:
        return 0.0, 0
    share = sum(s.smUtil for s in others) / 100 / len(periods)
    return min(share, 1.0), len({s.pid for s in others if s.smUtil > 0})


class Meter:
    """``start()`` before the run, ``stop()`` after: what other processes used between
    (``gpu``: the NVML index of the GPU the run uses, if it uses one)."""

    def __init__(self, gpu: int | None = None) -> None:
        self._start: tuple[float, float, float] | None = None
        self._gpu = gpu
        self._gpu_since_us = 0

    def start(self) -> Meter:
        if psutil is not None:
            self._start = (time.monotonic(), _busy_s(), _own_s())
            self._gpu_since_us = int(time.time() * 1e6)  # NVML stamps samples in wall time
        return self

    def stop(self) -> Busy | None:
        """None without psutil or a start."""
        if psutil is None or self._start is None:
            return None
        t0, busy0, own0 = self._start
        wall = time.monotonic() - t0
        other = max((_busy_s() - busy0) - (_own_s() - own0), 0.0)
        cpus = os.cpu_count() or 1
        busy = Busy(other, wall, cpus, other / (wall * cpus) if wall > 0 else 0.0)
        nvml = None if self._gpu is None else nvml_module()
        if nvml is not None:
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(self._gpu)
            except Exception:
                return busy
            me = psutil.Process()
            own = {me.pid, *(c.pid for c in me.children(recursive=True))}
            gpu = gpu_others(nvml, handle, self._gpu_since_us, own)
            if gpu is not None:
                busy.gpu_share, busy.gpu_processes = gpu
        return busy
