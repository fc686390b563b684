"""Hand-made memory records."""
from __future__ import annotations

from space.observe.memory import EngineMemory, GiB, GpuMemory


def engines() -> list[EngineMemory]:
    """The worked example of space.observe.memory.kv_tax_tokens: the tax is 16384 tokens."""
    base = EngineMemory("baseline", {"target": 2 * GiB}, GiB, GiB // 4, 32768, 16)
    spec = EngineMemory("speculative", {"target": 2 * GiB, "draft": GiB // 4}, 3 * GiB // 4, 0,
                        16384, 16)
    return [base, spec]


def h200() -> GpuMemory:
    return GpuMemory(0, "NVIDIA H200", 140 * GiB, 60 * GiB, 80 * GiB, 37.0)
