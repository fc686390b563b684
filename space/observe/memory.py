"""Memory readings (bytes; ``*_tokens`` are KV slots): the GPU (NVML), this process, the
host, each engine; and which GPU this is (``gpu_info``, for ``python -m space doctor``).
Standard library, optional psutil, pynvml lazily (so that ``benchmarks/gpu_check.py`` runs
on a bare GPU machine); readers never raise (no GPU: None).
"""
from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

try:  # optional: /proc is the fallback on Linux
    import psutil
except ImportError:  # pragma: no cover - psutil is in the venv
    psutil = None

log = logging.getLogger(__name__)

GiB = 1 << 30
MiB = 1 << 20


@dataclass
class GpuMemory:
    """One NVML reading of one GPU. ``used_bytes`` includes every process's
    CUDA context and allocations on the device, not only this process's."""

    index: int                      # NVML device index
    name: str
    total_bytes: int
    used_bytes: int
    free_bytes: int
    utilization_pct: float | None   # SM busy % over NVML's last sample period; None if unsupported


@dataclass
class SystemMemory:
    """Host memory. ``used_bytes`` is total - available (what other work
    cannot have), the same on both sources; psutil's own ``used`` differs."""

    total_bytes: int
    available_bytes: int
    used_bytes: int


@dataclass
class EngineMemory:
    """What one engine holds, from vLLM. ``weights_bytes``: role -> bytes, e.g. ``{'target':
    ..., 'draft': ...}``; a draft's KV shares the target's blocks (the capacity pays it)."""

    label: str                                   # 'baseline' | 'speculative'
    weights_bytes: dict[str, int] = field(default_factory=dict)
    kv_cache_reserved_bytes: int = 0             # the KV pool vLLM allocated at start-up
    kv_cache_used_bytes: int = 0                 # blocks held by requests now
    kv_cache_capacity_tokens: int = 0            # num_gpu_blocks x block_size
    block_size: int = 16                         # tokens per KV block

    @property
    def total_weights_bytes(self) -> int:
        return sum(self.weights_bytes.values())

    @property
    def total_bytes(self) -> int:
        """Weights plus the reserved KV pool (activations and graphs not counted)."""
        return self.total_weights_bytes + self.kv_cache_reserved_bytes

    @property
    def kv_bytes_per_token(self) -> float | None:
        if self.kv_cache_capacity_tokens <= 0:
            return None
        return self.kv_cache_reserved_bytes / self.kv_cache_capacity_tokens

    @property
    def kv_cache_usage_ratio(self) -> float:
        """Fraction of the KV pool in use, vLLM's ``kv_cache_usage`` (0..1)."""
        if self.kv_cache_reserved_bytes <= 0:
            return 0.0
        return self.kv_cache_used_bytes / self.kv_cache_reserved_bytes


@dataclass(frozen=True)
class EngineReading:
    """The engines' memory as last read: ``taken_s`` is ``time.monotonic()`` (None:
    never read); ``fresh`` is False when a run held the engines and this is the last."""

    engines: list[EngineMemory]
    taken_s: float | None
    fresh: bool

    def age_s(self, now: float | None = None) -> float | None:
        if self.taken_s is None:
            return None
        return (time.monotonic() if now is None else now) - self.taken_s


@dataclass(frozen=True)
class PoolBudget:
    """The engine pool's memory budget and what it holds now (the Memory tab)."""

    budget_bytes: int
    source: str                               # "--memory-budget-gb" or how the default was set
    held: tuple[tuple[str, int], ...] = ()    # (label, bytes), least recently used first

    @property
    def held_bytes(self) -> int:
        return sum(b for _, b in self.held)


class ReadingCache:
    """The last engine memory reading, so that readers never wait for a run: ``read``
    reads anew only if it gets the engines' lock at once; runs ``store`` one as they end."""

    def __init__(self) -> None:
        self._last = EngineReading([], None, False)

    def store(self, engines: list[EngineMemory]) -> EngineReading:
        self._last = EngineReading(list(engines), time.monotonic(), True)
        return self._last

    def read(self, lock, read_now: Callable[[], list[EngineMemory]]) -> EngineReading:
        if not lock.acquire(blocking=False):
            return dataclasses.replace(self._last, fresh=False)
        try:
            return self.store(read_now())
        finally:
            lock.release()


_nvml_lock = threading.Lock()
_nvml_tried = False
_nvml = None  # the pynvml module once nvmlInit() succeeded


def nvml_module():
    """pynvml after a single nvmlInit(), or None when there is no driver."""
    global _nvml_tried, _nvml
    with _nvml_lock:
        if not _nvml_tried:
            _nvml_tried = True
            try:
                import pynvml
                pynvml.nvmlInit()
                _nvml = pynvml
            except Exception as e:  # ImportError, NVMLError_LibraryNotFound, DriverNotLoaded, ...
                log.debug("NVML unavailable: %s", e)
        return _nvml


def _nvml_str(v) -> str:
    """Older nvidia-ml-py returns bytes."""
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def _device(index: int) -> tuple[Any, Any, str, Any] | None:
    """(pynvml, handle, name, memory info) of NVML device ``index``; None without it."""
    nvml = nvml_module()
    if nvml is None:
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        mem = nvml.nvmlDeviceGetMemoryInfo(handle)
        return nvml, handle, _nvml_str(nvml.nvmlDeviceGetName(handle)), mem
    except Exception as e:  # noqa: BLE001 - no such device, driver gone
        log.debug("NVML reading of GPU %d failed: %s", index, e)
        return None


def gpu_memory(index: int = 0) -> GpuMemory | None:
    """One GPU (NVML's ``index``, see ``nvml_index``); None without an NVIDIA GPU or driver."""
    if (device := _device(index)) is None:
        return None
    nvml, handle, name, mem = device
    # None where NVML does not give it (MIG slices)
    util = _try(lambda: float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
    return GpuMemory(index=index, name=name, total_bytes=int(mem.total),
                     used_bytes=int(mem.used), free_bytes=int(mem.free), utilization_pct=util)


def nvml_index(cuda_index: int = 0, visible: str | None = None) -> int:
    """NVML index of CUDA device ``cuda_index``: CUDA_VISIBLE_DEVICES='2,3' -> cuda:1 is 3.
    UUID or MIG entries are not resolved (the CUDA index comes back)."""
    if visible is None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if not visible:
        return cuda_index
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if cuda_index < len(entries) and entries[cuda_index].isdigit():
        return int(entries[cuda_index])
    return cuda_index


def gpu_info(cuda_index: int = 0) -> dict[str, Any] | None:
    """``{name, compute_capability, memory_bytes, driver, cuda}`` of CUDA device
    ``cuda_index``, or None without NVML. ``cuda``: the driver's highest CUDA ("12.8")."""
    if (device := _device(nvml_index(cuda_index))) is None:
        return None
    nvml, handle, name, mem = device
    return {"name": name,
            "compute_capability": _try(lambda: ".".join(
                map(str, nvml.nvmlDeviceGetCudaComputeCapability(handle)))),
            "memory_bytes": int(mem.total),
            "driver": _try(lambda: _nvml_str(nvml.nvmlSystemGetDriverVersion())),
            "cuda": _try(lambda: _cuda(nvml.nvmlSystemGetCudaDriverVersion()))}


def _try(read):
    try:
        return read()
    except Exception:  # noqa: BLE001 - one field NVML does not give
        return None


def _cuda(v: int) -> str:
    """NVML's 12080 -> '12.8'."""
    return f"{v // 1000}.{v % 1000 // 10}"


def process_memory() -> int:
    """Resident set size of this process in bytes (0 if it cannot be read)."""
    if psutil is not None:
        try:
            return int(psutil.Process().memory_info().rss)
        except Exception as e:  # pragma: no cover
            log.debug("psutil RSS failed: %s", e)
    try:
        with open("/proc/self/statm") as f:  # pages: size resident shared ...
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError) as e:
        log.debug("/proc/self/statm unreadable: %s", e)
        return 0


def _read_meminfo(path: str = "/proc/meminfo") -> dict[str, int]:
    """/proc/meminfo as bytes by key ('MemTotal: 16318412 kB' -> bytes)."""
    out: dict[str, int] = {}
    with open(path) as f:
        for line in f:
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                unit = 1024 if len(parts) > 1 and parts[1] == "kB" else 1
                out[key] = int(parts[0]) * unit
    return out


def system_memory() -> SystemMemory:
    """Host memory from psutil, or /proc/meminfo without it; zeros if neither."""
    if psutil is not None:
        vm = psutil.virtual_memory()
        total, avail = int(vm.total), int(vm.available)
    else:
        try:
            info = _read_meminfo()
            total = info.get("MemTotal", 0)
            avail = info.get("MemAvailable", info.get("MemFree", 0))
        except OSError as e:
            log.debug("/proc/meminfo unreadable: %s", e)
            total = avail = 0
    return SystemMemory(total_bytes=total, available_bytes=avail, used_bytes=total - avail)


def kv_tax_tokens(baseline: EngineMemory, speculative: EngineMemory) -> int:
    """KV-cache tokens the draft costs (its weights and its layers' KV per token both
    take from the pool): the tokens the baseline would hold in the speculative engine's
    footprint (which keeps it honest for different budgets), minus the speculative
    engine's capacity; 0 when a capacity is unknown, never negative."""
    per_token = baseline.kv_bytes_per_token
    if not per_token or speculative.kv_cache_capacity_tokens <= 0:
        return 0
    would_hold = (speculative.total_bytes - baseline.total_weights_bytes) / per_token
    return max(0, round(would_hold - speculative.kv_cache_capacity_tokens))


def fmt_bytes(n: float | None) -> str:
    """'1.50 GiB', '512.0 MiB', '12.0 KiB', '100 B'; '-' for None."""
    if n is None:
        return "-"
    sign, n = ("-" if n < 0 else ""), abs(n)
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1 << 10)):
        if n >= size:
            digits = 2 if unit == "GiB" else 1
            return f"{sign}{n / size:.{digits}f} {unit}"
    return f"{sign}{int(n)} B"
