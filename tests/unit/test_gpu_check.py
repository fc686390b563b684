"""benchmarks/gpu_check.py: a clear exit 2 on a CPU machine; the pass/fail
logic against a fake device whose NVML deltas are known."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from space.observe.memory import GiB, GpuMemory, MiB

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"

_spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
gpu_check = importlib.util.module_from_spec(_spec)
sys.modules["gpu_check"] = gpu_check  # dataclasses look their module up there
_spec.loader.exec_module(gpu_check)  # benchmarks/ is a script folder, not a package


def test_exits_2_with_one_clear_line_without_a_gpu():
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                       timeout=120, cwd="/")
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("gpu_check: nothing to check: no CUDA device")


def test_imports_only_space_memory():
    # Top-level imports of the script: no torch until main(), none of the app's stack.
    code = ("import runpy, sys; runpy.run_path(sys.argv[1], run_name='gpu_check'); "
            "print(sorted(m for m in ('torch', 'vllm', 'gradio', 'plotly', 'prometheus_client', "
            "'fastapi', 'space.records.trace', 'space.observe.prom') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(SCRIPT)], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


class FakeDevice:
    """A GPU whose 'used' grows by the request x (1 + skew), plus a context."""

    def __init__(self, skew: float = 0.0, rounding: int = 0):
        self.used = 500 * MiB  # the CUDA context and other processes
        self.reserved = 0
        self.skew, self.rounding = skew, rounding

    def read(self) -> GpuMemory:
        return GpuMemory(0, "Fake GPU", 8 * GiB, self.used, 8 * GiB - self.used, None)

    def alloc(self, n: int) -> int:
        self.used += int(n * (1 + self.skew))
        self.reserved += n + self.rounding
        return n

    def release(self, n: int) -> None:
        self.used -= int(n * (1 + self.skew))
        self.reserved -= n + self.rounding

    def probe(self) -> "gpu_check.Probe":
        return gpu_check.Probe(read=self.read, reserved=lambda: self.reserved,
                               alloc=self.alloc, release=self.release)


@pytest.mark.parametrize("skew,code", [(0.0, 0), (0.015, 0), (-0.019, 0), (0.03, 1), (-0.05, 1)])
def test_pass_within_tolerance_fail_outside(skew, code, capsys):
    assert gpu_check.run([256, 1024], FakeDevice(skew).probe(), 0.02) == code
    out = capsys.readouterr().out
    assert ("PASS" if code == 0 else "FAIL") in out
    assert "256.0 MiB" in out and "1,024.0 MiB" in out


def test_table_prints_nvml_and_reserved_deltas(capsys):
    dev = FakeDevice(rounding=2 * MiB)  # the caching allocator rounded up by 2 MiB
    assert gpu_check.run([256], dev.probe(), 0.02) == 0
    out = capsys.readouterr().out
    row = out.splitlines()[2].split()
    # requested, NVML used delta, NVML free delta, torch reserved delta, errors, ok
    assert row[:8] == ["256.0", "MiB", "256.0", "MiB", "-256.0", "MiB", "258.0", "MiB"]
    assert row[8:] == ["+0.00%", "-0.78%", "yes"]
    assert dev.used == 500 * MiB and dev.reserved == 0  # released after measuring


def test_failed_allocation_is_a_failure(capsys):
    dev = FakeDevice()

    def oom(n):
        raise MemoryError("CUDA out of memory")

    probe = gpu_check.Probe(read=dev.read, reserved=lambda: 0, alloc=oom, release=dev.release)
    assert gpu_check.run([256], probe, 0.02) == 1
    assert "FAIL: allocating 256 MiB failed: MemoryError" in capsys.readouterr().out
