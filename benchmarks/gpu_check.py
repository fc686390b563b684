#!/usr/bin/env python
"""Check that space/observe/memory.py's NVML readings track real GPU allocations.

Allocates known amounts with torch (256 MiB, 1 GiB, 4 GiB by default), reads
NVML's device 'used' memory before and after each through
``space.observe.memory.gpu_memory()``, and checks the delta is within 2% of the
request. NVML's 'used' includes the CUDA context and every other process, so
only deltas are compared; torch's ``memory_reserved`` delta (the caching
allocator may round a request up) is printed beside it as a cross-check.

Needs only torch, pynvml and space/observe/memory.py (no vLLM, gradio, plotly).
Exit 0: every delta within tolerance; 1: one is not (or an allocation
failed); 2: nothing to check here (no torch, no CUDA device, no NVML).

    python benchmarks/gpu_check.py [--sizes-mib 256 1024 4096] [--device 0]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for space/
from space.observe.memory import GpuMemory, MiB, gpu_memory, nvml_index  # noqa: E402

TOLERANCE = 0.02


class Unavailable(Exception):
    """Nothing to check on this machine; the message says why (exit 2)."""


@dataclass
class Row:
    requested_bytes: int
    nvml_used_delta: int      # NVML 'used' after - before
    nvml_free_delta: int      # NVML 'free' after - before (should be -used delta)
    reserved_delta: int       # torch.cuda.memory_reserved after - before

    @property
    def error(self) -> float:
        """Relative error of NVML's delta against the request."""
        return (self.nvml_used_delta - self.requested_bytes) / self.requested_bytes

    @property
    def error_vs_reserved(self) -> float | None:
        if self.reserved_delta <= 0:
            return None
        return (self.nvml_used_delta - self.reserved_delta) / self.reserved_delta

    def ok(self, tolerance: float) -> bool:
        return abs(self.error) <= tolerance


@dataclass
class Probe:
    """What a check needs from the device; torch's in ``torch_probe``, fakes in tests."""

    read: Callable[[], GpuMemory]       # an NVML reading of the device under test
    reserved: Callable[[], int]         # torch.cuda.memory_reserved
    alloc: Callable[[int], Any]         # allocate and touch n bytes, synced; returns a handle
    release: Callable[[Any], None]      # drop the handle's memory and return it to the driver


def _settled(read: Callable[[], GpuMemory], tries: int = 20) -> GpuMemory:
    """A reading once two in a row agree: NVML can lag an allocation by a moment."""
    last = read()
    for _ in range(tries):
        time.sleep(0.01)
        now = read()
        if now.used_bytes == last.used_bytes:
            return now
        last = now
    return last


def measure(size: int, probe: Probe) -> Row:
    before, r0 = _settled(probe.read), probe.reserved()
    handle = probe.alloc(size)
    after, r1 = _settled(probe.read), probe.reserved()
    probe.release(handle)
    return Row(size, after.used_bytes - before.used_bytes,
               after.free_bytes - before.free_bytes, r1 - r0)


def _mib(n: float) -> str:
    return f"{n / MiB:,.1f} MiB"


def table(rows: list[Row], tolerance: float) -> str:
    head = ("requested", "NVML used delta", "NVML free delta", "torch reserved delta",
            "NVML vs requested", "NVML vs reserved", "ok")
    lines = [head]
    for r in rows:
        vs_res = r.error_vs_reserved
        lines.append((_mib(r.requested_bytes), _mib(r.nvml_used_delta), _mib(r.nvml_free_delta),
                      _mib(r.reserved_delta), f"{100 * r.error:+.2f}%",
                      "-" if vs_res is None else f"{100 * vs_res:+.2f}%",
                      "yes" if r.ok(tolerance) else "NO"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=False)) for line in lines)


def torch_probe(cuda_index: int) -> tuple[Probe, str]:
    """A probe over torch and NVML for cuda:<cuda_index>, or Unavailable."""
    try:
        import torch
    except ImportError:
        raise Unavailable("torch is not installed") from None
    if not torch.cuda.is_available():
        raise Unavailable(f"no CUDA device visible to torch {torch.__version__} "
                          "(CPU-only build or no NVIDIA driver)")
    index = nvml_index(cuda_index)
    if gpu_memory(index) is None:
        raise Unavailable(f"NVML cannot read GPU {index} (pynvml missing or no NVIDIA driver)")
    device = torch.device("cuda", cuda_index)
    # Warm up: the CUDA context and the fill kernel's module take device memory
    # on first use; that must happen before the first 'before' reading.
    torch.empty(1 << 20, dtype=torch.uint8, device=device).fill_(1)
    torch.cuda.synchronize(device)

    def alloc(n: int) -> list:
        t = torch.empty(n, dtype=torch.uint8, device=device)
        t.fill_(1)  # touch every byte
        torch.cuda.synchronize(device)
        return [t]  # a holder: release() drops the only reference

    def release(holder: list) -> None:
        holder.clear()
        torch.cuda.empty_cache()  # back to the driver, so the next 'before' is clean
        torch.cuda.synchronize(device)

    def read() -> GpuMemory:
        reading = gpu_memory(index)
        if reading is None:  # it read the device above: the driver went away mid-check
            raise RuntimeError(f"NVML stopped answering for GPU {index}")
        return reading

    probe = Probe(read=read, alloc=alloc, release=release,
                  reserved=lambda: torch.cuda.memory_reserved(device))
    return probe, f"torch {torch.__version__}, cuda:{cuda_index} = NVML {index}"


def run(sizes_mib: list[int], probe: Probe, tolerance: float, header: str = "") -> int:
    """Measure every size, print the table, return the exit code (0 or 1)."""
    gpu = probe.read()
    print(f"GPU {gpu.index} {gpu.name}: {_mib(gpu.used_bytes)} used of {_mib(gpu.total_bytes)}"
          f"{'; ' + header if header else ''}; tolerance {100 * tolerance:.1f}%")
    rows = []
    for mib in sizes_mib:
        try:
            rows.append(measure(mib * MiB, probe))
        except Exception as e:  # e.g. torch.cuda.OutOfMemoryError
            print(table(rows, tolerance))
            print(f"FAIL: allocating {mib} MiB failed: {type(e).__name__}: {e}")
            return 1
    print(table(rows, tolerance))
    bad = [r for r in rows if not r.ok(tolerance)]
    print("PASS: NVML deltas track the allocations" if not bad else
          f"FAIL: {len(bad)} of {len(rows)} deltas off by more than {100 * tolerance:.1f}%")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes-mib", type=int, nargs="+", default=[256, 1024, 4096])
    ap.add_argument("--device", type=int, default=0, help="CUDA device index (as torch sees it)")
    ap.add_argument("--tolerance", type=float, default=TOLERANCE, help="relative, 0.02 = 2%%")
    args = ap.parse_args(argv)
    try:
        probe, header = torch_probe(args.device)
    except Unavailable as e:
        print(f"gpu_check: nothing to check: {e}", file=sys.stderr)
        return 2
    return run(args.sizes_mib, probe, args.tolerance, header)


if __name__ == "__main__":
    sys.exit(main())
