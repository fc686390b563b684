"""space/observe/memory.py: the readers (NVML, this process, the host) and the pure helpers."""
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from space.observe import memory
from space.observe.memory import (
    EngineMemory,
    GiB,
    MiB,
    fmt_bytes,
    kv_tax_tokens,
    nvml_index,
)
from tests.helpers.memory import engines

ROOT = Path(__file__).resolve().parents[2]


# --- NVML -------------------------------------------------------------------

@pytest.fixture
def fresh_nvml(monkeypatch):
    """Forget any earlier nvmlInit so the next reading imports pynvml anew."""
    monkeypatch.setattr(memory, "_nvml_tried", False)
    monkeypatch.setattr(memory, "_nvml", None)


def fake_pynvml(init_error=None, handle_error=None):
    m = types.ModuleType("pynvml")
    m.init_calls = 0

    def init():
        m.init_calls += 1
        if init_error:
            raise init_error

    def handle(i):
        if handle_error:
            raise handle_error
        return ("handle", i)

    def no_util(h):
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    m.nvmlInit = init
    m.nvmlDeviceGetHandleByIndex = handle
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=100, used=30, free=70)
    m.nvmlDeviceGetName = lambda h: b"NVIDIA H200"  # older nvidia-ml-py returns bytes
    m.nvmlDeviceGetUtilizationRates = no_util
    return m


def _nvml_works() -> bool:
    """Whether this machine has an NVIDIA driver that NVML can open."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no pynvml, no libnvidia-ml, no driver
        return False
    pynvml.nvmlShutdown()
    return True


NVML_WORKS = _nvml_works()


@pytest.mark.skipif(NVML_WORKS, reason="NVML reads a GPU on this machine")
def test_gpu_memory_is_none_without_a_driver(fresh_nvml):
    # pynvml without libnvidia-ml (or no driver): None, and no exception.
    assert memory.gpu_memory() is None
    assert memory.gpu_memory(3) is None


@pytest.mark.skipif(not NVML_WORKS, reason="no NVIDIA driver here")
def test_gpu_memory_reads_this_machines_gpu(fresh_nvml):
    g = memory.gpu_memory(0)
    assert g is not None and g.index == 0 and g.name
    assert g.total_bytes > 0 and 0 <= g.used_bytes <= g.total_bytes
    assert 0 <= g.free_bytes <= g.total_bytes


def test_gpu_memory_reads_nvml_and_inits_once(fresh_nvml, monkeypatch):
    fake = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    g = memory.gpu_memory(1)
    assert g == memory.GpuMemory(index=1, name="NVIDIA H200", total_bytes=100, used_bytes=30,
                                 free_bytes=70, utilization_pct=None)
    memory.gpu_memory(0)
    assert fake.init_calls == 1


@pytest.mark.parametrize("kw", [{"init_error": RuntimeError("driver not loaded")},
                                {"handle_error": RuntimeError("invalid argument")}])
def test_gpu_memory_never_raises(fresh_nvml, monkeypatch, kw):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(**kw))
    assert memory.gpu_memory(7) is None


@pytest.mark.parametrize("visible,cuda,expected", [
    (None, 1, 1), ("", 0, 0), ("2,3", 1, 3), ("3", 0, 3),
    ("GPU-8a1b,GPU-77", 1, 1),  # UUIDs are not resolved
])
def test_nvml_index(visible, cuda, expected, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert nvml_index(cuda, visible) == expected


# --- host -------------------------------------------------------------------

def test_process_memory_psutil_and_proc_agree(monkeypatch):
    with_psutil = memory.process_memory()
    monkeypatch.setattr(memory, "psutil", None)
    from_proc = memory.process_memory()
    assert with_psutil > 10 * MiB
    assert abs(with_psutil - from_proc) < 64 * MiB  # two readings of a live process


def test_system_memory_psutil_and_proc_agree(monkeypatch):
    a = memory.system_memory()
    monkeypatch.setattr(memory, "psutil", None)
    b = memory.system_memory()
    assert a.total_bytes == b.total_bytes > 0  # both are MemTotal
    for s in (a, b):
        assert 0 < s.available_bytes <= s.total_bytes
        assert s.used_bytes == s.total_bytes - s.available_bytes


def test_read_meminfo(tmp_path):
    p = tmp_path / "meminfo"
    p.write_text("MemTotal:       16318412 kB\nMemAvailable:    8000000 kB\nHugePages_Total:       0\n")
    assert memory._read_meminfo(str(p)) == {"MemTotal": 16318412 * 1024,
                                             "MemAvailable": 8000000 * 1024,
                                             "HugePages_Total": 0}


# --- pure helpers -------------------------------------------------------------

def test_kv_tax_worked_example():
    base, spec = engines()
    assert base.kv_bytes_per_token == 32 * 1024
    assert spec.kv_bytes_per_token == 48 * 1024  # the draft's layers add 16 KiB/token
    assert kv_tax_tokens(base, spec) == 32768 - 16384


def test_kv_tax_normalises_different_budgets():
    # Same per-token figures, but the baseline was given 2 GiB of KV instead of 1:
    # in the speculative engine's 3 GiB it would still hold 32768 tokens.
    base = EngineMemory("baseline", {"target": 2 * GiB}, 2 * GiB, 0, 65536)
    _, spec = engines()
    assert kv_tax_tokens(base, spec) == 16384


def test_kv_tax_zero_for_ngram_and_unknown():
    base, _ = engines()
    ngram = EngineMemory("speculative", {"target": 2 * GiB}, GiB, 0, 32768)
    assert kv_tax_tokens(base, ngram) == 0
    assert kv_tax_tokens(EngineMemory("baseline"), ngram) == 0  # no KV figures yet


def test_engine_memory_properties():
    base, spec = engines()
    assert spec.total_weights_bytes == 2 * GiB + GiB // 4
    assert spec.total_bytes == 3 * GiB
    assert base.kv_cache_usage_ratio == 0.25
    assert EngineMemory("baseline").kv_cache_usage_ratio == 0.0
    assert EngineMemory("baseline").kv_bytes_per_token is None


@pytest.mark.parametrize("n,text", [(None, "-"), (100, "100 B"), (12 * 1024, "12.0 KiB"),
                                    (512 * MiB, "512.0 MiB"), (1.5 * GiB, "1.50 GiB"),
                                    (-2 * MiB, "-2.0 MiB")])
def test_fmt_bytes(n, text):
    assert fmt_bytes(n) == text


def test_memory_module_imports_nothing_heavy():
    # gpu_check.py must run with only torch + pynvml: space.observe.memory pulls in none of these.
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import space.observe.memory; "
            "print(sorted(m for m in ('torch', 'pynvml', 'vllm', 'gradio', 'plotly', "
            "'prometheus_client', 'fastapi', 'space.records.trace') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_reading_never_waits_for_a_run():
    """The memory panel and page loads read through the cache: while a run holds the
    engines' lock they get the last reading at once, marked not fresh, with its age."""
    cache, lock = memory.ReadingCache(), threading.RLock()
    first = cache.read(lock, lambda: engines())
    assert first.fresh and first.engines == engines()
    held, release = threading.Event(), threading.Event()

    def run():
        with lock:
            held.set()
            release.wait(10)

    worker = threading.Thread(target=run)
    worker.start()
    try:
        assert held.wait(5)
        t0 = time.monotonic()
        busy = cache.read(lock, lambda: pytest.fail("read while a run holds the engines"))
        assert time.monotonic() - t0 < 0.1
        assert not busy.fresh and busy.engines == first.engines
        assert busy.age_s(first.taken_s + 12.0) == pytest.approx(12.0)
    finally:
        release.set()
        worker.join()
    assert cache.read(lock, lambda: []).fresh  # free again: read anew


def test_never_read_has_no_age():
    reading = memory.ReadingCache().read(threading.Lock(), lambda: [])
    assert reading.fresh and reading.age_s() is not None
    assert memory.EngineReading([], None, False).age_s() is None
