"""``python -m space doctor``: what works on this machine, proved by one short compare
of the default pair, checked as every trace must be (``space.records.doctor``)."""
from __future__ import annotations

import datetime
import importlib.util
import logging
import os
import platform
import time
import urllib.error
import urllib.request

from space.common import versions
from space.common.progress import Progress
from space.engine import hardware
from space.engine.pool import EnginePool
from space.observe.memory import gpu_info, gpu_memory, nvml_index
from space.records import doctor as rec
from space.records.config import EngineSpec, RequestSpec
from space.records.doctor import DoctorReport, MethodState
from space.runs import presets, runner

log = logging.getLogger(__name__)
DEFAULT_PAIR = "cpu-ngram"
# Code with names to repeat: ngram finds drafts in it from the first steps.
PROMPT = ("Rewrite this Python function with the variable x renamed to total. "
          "Output only the code.\n\n```python\ndef add(a, b):\n    x = a + b\n"
          "    print(x)\n    return x\n```")
MAX_TOKENS = 32
HUB_TIMEOUT_S = 3.0


def run(spec: EngineSpec | None = None, pool: EnginePool | None = None,
        max_tokens: int = MAX_TOKENS, progress: Progress | None = None,
        hub_timeout_s: float = HUB_TIMEOUT_S) -> DoctorReport:
    """The report. ``pool``: engines to reuse (the tests'); by default the process's,
    empty at the CLI's start, so NVML sees the engines' whole memory arrive."""
    t0 = time.perf_counter()
    spec = hardware.resolve_spec(spec or presets.get_model_pair(DEFAULT_PAIR).engine_spec())
    pool = pool or runner.POOL
    gpu = hardware.on_gpu()
    fresh = not pool.current()
    before = gpu_memory(nvml_index()) if gpu and fresh else None
    req = RequestSpec(prompt=PROMPT, max_tokens=max_tokens)
    cmp = runner.compare(spec, req, repeats=1, pool=pool, progress=progress, warmup=False)
    engines = [pool.baseline(spec), pool.speculative(spec)]
    after = gpu_memory(nvml_index()) if before is not None else None
    why_not = None if before is not None else (
        "skipped: no GPU (NVML reads a GPU's memory; this machine runs on CPU)" if not gpu
        else "skipped: engines were already built in this process before the first reading"
        if not fresh else "skipped: NVML gave no reading (pynvml missing or no driver)")
    dtype = hardware.explain(str(spec.dtype), spec.model)
    states = engines[1].hooks
    base_gone = [h for h in engines[0].hooks if not h.attached]
    checks = [rec.hooks_check(states + base_gone),
              rec.counts_check(cmp.speculative),
              rec.forward_check([cmp.baseline, cmp.speculative]),
              rec.memory_check(None if after is None or before is None
                               else after.used_bytes - before.used_bytes,
                               sum(e.memory().total_bytes for e in engines),
                               why_not)]
    return DoctorReport(
        machine=machine(), vllm=vllm_build(), dtype={"value": dtype.dtype, "reason": dtype.reason},
        hooks=states, checks=checks, methods=methods(gpu, hub_timeout_s),
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        elapsed_s=round(time.perf_counter() - t0, 1))


def machine() -> dict:
    """The GPU through NVML, or the CPU with its bf16 units."""
    gpu = gpu_info() if hardware.on_gpu() else None
    return {"device": "gpu" if gpu else "cpu", "gpu": gpu,
            "cpu": {"model": hardware.cpu_model(),
                    "bf16_units": list(hardware.cpu_bf16_flags()),
                    "cores": os.cpu_count()},
            "platform": platform.platform(), "python": platform.python_version()}


def vllm_build() -> dict:
    """The installed vLLM against the pins (``space.common.versions.TESTED``)."""
    found = versions.installed_vllm()
    warning = versions.check_vllm_version()
    dist, version = found if found else (None, None)
    return {"distribution": dist, "version": version,
            "build": version.split("+", 1)[1] if version and "+" in version else None,
            "tested": dict(versions.TESTED), "is_tested": warning is None, "warning": warning}


def methods(gpu: bool, hub_timeout_s: float = HUB_TIMEOUT_S) -> list[MethodState]:
    """Which speculative methods can run here, and why not."""
    arctic = importlib.util.find_spec("arctic_inference") is not None
    head, where = eagle3_head(hub_timeout_s)
    return [MethodState("draft_model", True, "built into vLLM"),
            MethodState("ngram", True, "built into vLLM (prompt lookup)"),
            MethodState("suffix", arctic, "arctic-inference is importable" if arctic else
                        "arctic-inference is not installed (pip install arctic-inference)"),
            MethodState("eagle3", gpu and where in ("in the local hub cache", "reachable on the hub"),
                        ("" if gpu else "needs a CUDA GPU; ") + f"head {head}: {where}")]


def eagle3_head(timeout_s: float) -> tuple[str, str]:
    """The presets' first EAGLE-3 head and where it is (never waits past ``timeout_s``)."""
    from space.engine.models import cached_hub_model

    heads = [p.draft for p in presets.load_model_pairs() if p.method == "eagle3" and p.draft]
    cached = next((h for h in heads if cached_hub_model(h) is not None), None)
    if cached:
        return cached, "in the local hub cache"
    head = heads[0] if heads else "(no eagle3 preset)"
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return head, "offline (HF_HUB_OFFLINE is set) and not in the local hub cache"
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        probe = urllib.request.Request(f"{endpoint}/api/models/{head}", method="HEAD")
        with urllib.request.urlopen(probe, timeout=timeout_s):  # noqa: S310 - a fixed https URL
            return head, "reachable on the hub"
    except urllib.error.HTTPError as exc:  # the hub answered: gated (401/403) or gone (404)
        return head, f"the hub answered {exc.code} (gated: set HF_TOKEN)"
    except (OSError, ValueError):
        return head, f"offline (the hub did not answer within {timeout_s:g} s)"
