"""What GPU this is, through NVML: model, compute capability, memory, driver, CUDA.

For ``python -m space doctor``. Never raises: no NVIDIA driver is ``None``.
pynvml is imported lazily (``space.observe.memory._nvml_module``).
"""
from __future__ import annotations

import logging
from typing import Any

from space.observe.memory import _nvml_module, nvml_index

log = logging.getLogger(__name__)


def gpu_info(cuda_index: int = 0) -> dict[str, Any] | None:
    """``{name, compute_capability, memory_bytes, driver, cuda}`` of CUDA device
    ``cuda_index``, or None without NVML. ``cuda`` is the highest CUDA version
    the driver supports ("12.8"); a field NVML cannot give is None."""
    nvml = _nvml_module()
    if nvml is None:
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(nvml_index(cuda_index))
        name = nvml.nvmlDeviceGetName(handle)
        total = int(nvml.nvmlDeviceGetMemoryInfo(handle).total)
    except Exception as exc:  # noqa: BLE001 - no such device, driver gone
        log.debug("NVML: %s", exc)
        return None
    return {"name": name.decode(errors="replace") if isinstance(name, bytes) else str(name),
            "compute_capability": _try(lambda: ".".join(
                map(str, nvml.nvmlDeviceGetCudaComputeCapability(handle)))),
            "memory_bytes": total,
            "driver": _try(lambda: _text(nvml.nvmlSystemGetDriverVersion())),
            "cuda": _try(lambda: _cuda(nvml.nvmlSystemGetCudaDriverVersion()))}


def _try(read):
    try:
        return read()
    except Exception:  # noqa: BLE001 - one field NVML does not give
        return None


def _text(v) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def _cuda(v: int) -> str:
    """NVML's 12080 -> '12.8'."""
    return f"{v // 1000}.{v % 1000 // 10}"
