"""What GPU this is, through NVML, for ``python -m space doctor``; None without a driver."""
from __future__ import annotations

import logging
from typing import Any

from space.observe.memory import _nvml_module, _nvml_str, nvml_index

log = logging.getLogger(__name__)


def gpu_info(cuda_index: int = 0) -> dict[str, Any] | None:
    """``{name, compute_capability, memory_bytes, driver, cuda}`` of CUDA device
    ``cuda_index``, or None without NVML. ``cuda``: the driver's highest CUDA ("12.8")."""
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
    return {"name": _nvml_str(name),
            "compute_capability": _try(lambda: ".".join(
                map(str, nvml.nvmlDeviceGetCudaComputeCapability(handle)))),
            "memory_bytes": total,
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
