"""The checklist's inputs only this machine knows: free memory, the draft's KV-cache
tax, and a cached tipping curve's break-even (the traces' figures: space.judge.measure)."""
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
    """Free memory now and the draft's KV-cache tax in tokens (``engines``: baseline,
    speculative ``TracedEngine``). Read with both engines loaded, so it understates a
    speculative-only deployment; a server's device ("unknown") reads nothing."""
    spare: int | None = None
    if device == "gpu":
        gpu = memory.gpu_memory(memory.nvml_index(0))
        spare = gpu.free_bytes if gpu else None
    elif device == "cpu":
        spare = memory.system_memory().available_bytes or None
    tax = None if engines is None else memory.kv_tax_tokens(engines[0].memory(), engines[1].memory())
    return {"spare_memory_bytes": spare, "draft_kv_tax_tokens": tax}


def curve_for(config: RunConfig) -> curves.TippingCurve | None:
    """This machine's cached curve for a run (none for synthetic or server runs)."""
    if config.synthetic or config.source == SERVER:
        return None
    return curve_cache.find_for_config(config, versions.public_vllm())


def headroom(curve: curves.TippingCurve | None, concurrency: int) -> dict[str, Any]:
    """Break-even inputs from a run's cached curve (``curve_for``) at its concurrency
    nearest ``concurrency``; {} when none is cached."""
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
    """Evaluate and store ``cmp.checklist`` (``engines`` None: no KV tax). Synthetic
    runs get none: their acceptance is not the workload's."""
    if cmp.speculative.config.synthetic:
        cmp.checklist = None
        return None
    context = context or Context()
    config = cmp.speculative.config
    curve = curve_for(config)
    cmp.checklist = evaluate(compare_inputs(cmp, cmp.speculative.request.temperature, context,
                                            memory_figures(engines, config.device),
                                            headroom(curve, context.concurrency)))
    cmp.tipping_curve = curve.to_dict() if curve else None
    return cmp.checklist
