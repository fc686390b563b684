"""The checklist's inputs that only the machine knows: free memory with the
engines loaded, the draft's KV-cache tax, and the break-even of a tipping
curve cached on this machine. The traces' own figures are space.judge.measure's.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from space.common import versions
from space.judge import curves
from space.judge.checklist import evaluate
from space.judge.measure import Context, compare_inputs
from space.observe import memory
from space.records.run import SERVER, RunConfig
from space.records.trace import CompareRecord
from space.records.verdict import Checklist
from space.runs import curve_cache


def memory_figures(engines: Sequence[Any] | None, device: str) -> dict[str, int | None]:
    """Free memory now (engines loaded) and the draft's KV-cache tax in tokens.

    ``engines`` is (baseline, speculative), objects with ``memory()`` returning
    ``space.observe.memory.EngineMemory`` (``TracedEngine``). Free memory is the GPU's
    (NVML) on a GPU box, the host's available memory on CPU; it is measured
    with both engines loaded, so it understates what a speculative-only
    deployment would have left. A server's device ("unknown") is not this
    machine: nothing is read for it.
    """
    spare: int | None = None
    if device == "gpu":
        gpu = memory.gpu_memory(memory.nvml_index(0))
        spare = gpu.free_bytes if gpu else None
    elif device == "cpu":
        spare = memory.system_memory().available_bytes or None
    tax = None
    if engines is not None:
        base, spec = engines
        tax = memory.kv_tax_tokens(base.memory(), spec.memory())
    return {"spare_memory_bytes": spare, "draft_kv_tax_tokens": tax}


def curve_for(config: RunConfig) -> curves.TippingCurve | None:
    """This machine's cached tipping curve for a run's pair and k (none for synthetic
    runs, nor for a server's: this machine's curves are not the servers' hardware)."""
    if config.synthetic or config.source == SERVER:
        return None
    return curve_cache.find_for_config(config, versions.public_vllm())


def headroom(config: RunConfig, concurrency: int) -> dict[str, Any]:
    """The checklist's break-even inputs from the cached curve, read at the curve's
    concurrency nearest to ``concurrency``; {} when no curve is cached."""
    curve = curve_for(config)
    if curve is None or not curve.concurrencies:
        return {}
    c = min(curve.concurrencies, key=lambda x: (abs(x - concurrency), x))
    rate, source = curve.break_even_rate(c)
    if rate is None:
        return {}
    kind = "measured curve" if curve.kind == curves.MEASURED else "curve " + curve.kind
    how = "interpolated" if source == curves.MEASURED else "model"
    return {"break_even_acceptance_rate": rate, "break_even_concurrency": c,
            "break_even_source": f"{kind}, {how}, {curve.date[:10]}"}


def attach_checklist(cmp: CompareRecord, engines: Sequence[Any] | None,
                     context: Context | None = None) -> Checklist | None:
    """Evaluate the checklist for ``cmp`` and store it in ``cmp.checklist``.

    ``engines``: (baseline, speculative) ``TracedEngine``s, for the memory
    lines (None skips the KV tax). The temperature is the run's own (its request).
    Runs with forced (synthetic) acceptance get none: their acceptance is not
    the workload's.
    """
    if cmp.speculative.config.synthetic:
        cmp.checklist = None
        return None
    context = context or Context()
    device = cmp.speculative.config.device
    inputs = compare_inputs(cmp, cmp.speculative.request.temperature, context,
                            memory_figures(engines, device),
                            headroom(cmp.speculative.config, context.concurrency))
    result = evaluate(inputs)
    cmp.checklist = result
    curve = curve_for(cmp.speculative.config)
    cmp.tipping_curve = curve.to_dict() if curve else None
    return result
