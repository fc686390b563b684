"""Memory view: what each engine holds, and the device beside it."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from space.observe.memory import (
    EngineMemory,
    GiB,
    GpuMemory,
    PoolBudget,
    SystemMemory,
    fmt_bytes,
    kv_tax_tokens,
)
from vis.safe import plot_text

# one colour per kind of segment, the same on every bar
_COLORS = {
    "target weights": "#1f77b4",
    "draft weights": "#ff7f0e",
    "KV cache used": "#2ca02c",
    "KV cache reserved, unused": "#b7e4b0",
    "GPU used (all processes)": "#7f7f7f",
    "GPU free": "#e0e0e0",
    "process RSS": "#9467bd",
    "host used, other processes": "#7f7f7f",
    "host available": "#e0e0e0",
}

Segments = dict[str, int]  # legend name -> bytes, bottom to top


def _weights_order(e: EngineMemory) -> list[str]:
    known = [r for r in ("target", "draft") if r in e.weights_bytes]
    return known + [r for r in e.weights_bytes if r not in known]


def engine_segments(e: EngineMemory) -> Segments:
    """Weights by role, then the KV pool (used, unused)."""
    used = min(e.kv_cache_used_bytes, e.kv_cache_reserved_bytes)
    return {**{f"{role} weights": int(e.weights_bytes[role]) for role in _weights_order(e)},
            "KV cache used": used, "KV cache reserved, unused": e.kv_cache_reserved_bytes - used}


def device_bars(gpu: GpuMemory | None, system: SystemMemory | None,
                process_rss: int | None) -> list[tuple[str, Segments]]:
    """The GPU's used/free bar, or on CPU this process's RSS within the host (none unread)."""
    if gpu is not None:
        return [(f"GPU {int(gpu.index)}<br>{plot_text(gpu.name)}",
                 {"GPU used (all processes)": gpu.used_bytes, "GPU free": gpu.free_bytes})]
    if system is None and process_rss is None:
        return []
    rss = process_rss or 0
    segs: Segments = {"process RSS": rss} if process_rss is not None else {}
    if system is not None:
        segs |= {"host used, other processes": max(0, system.used_bytes - rss),
                 "host available": system.available_bytes}
    return [("host (CPU)", segs)]


def memory_figure(engines: list[EngineMemory], gpu: GpuMemory | None,
                  system: SystemMemory | None, process_rss: int | None) -> go.Figure:
    """A stacked bar per engine and one for the device, in GiB."""
    bars = [(plot_text(e.label), engine_segments(e)) for e in engines] + device_bars(gpu, system, process_rss)
    fig = go.Figure()
    categories = [name for name, _ in bars]
    legend = list(dict.fromkeys(name for _, segs in bars for name in segs))  # first-seen order
    for name in legend:
        values = [segs.get(name) for _, segs in bars]
        fig.add_trace(go.Bar(
            name=plot_text(name), x=categories,
            y=[None if v is None else v / GiB for v in values],
            customdata=[fmt_bytes(v) for v in values],
            hovertemplate="%{x}<br>" + plot_text(name) + ": %{customdata}<extra></extra>",
            marker=dict(color=_COLORS.get(name)),
        ))
    fig.update_layout(barmode="stack", title="Memory: engines and device", yaxis_title="GiB",
                      legend_title_text="", margin=dict(t=50, b=40, l=50, r=10))
    if not bars:
        fig.add_annotation(text="no memory figures yet", showarrow=False,
                           xref="paper", yref="paper", x=0.5, y=0.5)
    return fig


def tax_sentence(engines: list[EngineMemory]) -> str:
    """One sentence on the draft's KV tax, in tokens (plain text)."""
    by_label = {e.label: e for e in engines}
    if "baseline" not in by_label or "speculative" not in by_label:
        return "KV tax: needs both a baseline and a speculative engine."
    base, spec = by_label["baseline"], by_label["speculative"]
    if base.kv_cache_capacity_tokens <= 0 or spec.kv_cache_capacity_tokens <= 0:
        return "KV tax: unknown until both engines report their KV cache."
    tax = kv_tax_tokens(base, spec)
    if tax == 0:
        return ("KV tax: none; the speculative engine holds as many KV tokens as the "
                "baseline would in the same memory (a proposer without weights, e.g. ngram).")
    pct = 100 * tax / base.kv_cache_capacity_tokens
    return (f"KV tax of the draft: {tax:,} tokens ({pct:.1f}% of the baseline's "
            f"{base.kv_cache_capacity_tokens:,}; {tax / spec.block_size:,.0f} blocks of "
            f"{spec.block_size}): its weights and its layers' KV take that room.")


def _engine_row(e: EngineMemory) -> str:
    per_token = e.kv_bytes_per_token
    weights = " + ".join(f"{role} {fmt_bytes(e.weights_bytes[role])}" for role in _weights_order(e))
    cells = [e.label, weights or "-", fmt_bytes(e.kv_cache_reserved_bytes),
             f"{fmt_bytes(e.kv_cache_used_bytes)} ({100 * e.kv_cache_usage_ratio:.1f}%)",
             f"{e.kv_cache_capacity_tokens:,}",
             fmt_bytes(per_token) if per_token is not None else "-"]
    return "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"


def device_sentence(gpu: GpuMemory | None, system: SystemMemory | None,
                    process_rss: int | None) -> str:
    if gpu is not None:
        util = f", {gpu.utilization_pct:.0f}% busy" if gpu.utilization_pct is not None else ""
        return (f"GPU {gpu.index} ({gpu.name}): {fmt_bytes(gpu.used_bytes)} used of "
                f"{fmt_bytes(gpu.total_bytes)}, {fmt_bytes(gpu.free_bytes)} free{util}.")
    parts = []
    if process_rss is not None:
        parts.append(f"process RSS {fmt_bytes(process_rss)}")
    if system is not None:
        parts.append(f"host {fmt_bytes(system.used_bytes)} used of {fmt_bytes(system.total_bytes)}"
                     f", {fmt_bytes(system.available_bytes)} available")
    return ("No GPU: " + "; ".join(parts) + ".") if parts else "No GPU or host reading."


def budget_sentence(budget: PoolBudget) -> str:
    held = ", ".join(f"{label} {fmt_bytes(b)}" for label, b in budget.held)
    what = (f"{len(budget.held)} engine{'s' * (len(budget.held) != 1)} hold "
            f"{fmt_bytes(budget.held_bytes)} ({held})" if budget.held else "no engine built yet")
    return (f"Engines' memory budget {fmt_bytes(budget.budget_bytes)} ({budget.source}): {what}; "
            "the least recently used close first to make room for a new one.")


def memory_html(engines: list[EngineMemory], gpu: GpuMemory | None,
                system: SystemMemory | None, process_rss: int | None,
                budget: PoolBudget | None = None) -> str:
    """A table of the engines, the draft's KV tax, the device and the pool's budget."""
    head = "".join(f"<th>{h}</th>" for h in
                   ("engine", "weights", "KV reserved", "KV used", "KV capacity (tokens)",
                    "KV per token"))
    rows = "".join(_engine_row(e) for e in engines)
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>" if engines else ""
    return (f'<div class="speclens-memory">{table}'
            f'<p class="kv-tax">{html.escape(tax_sentence(engines))}</p>'
            f'<p class="device">{html.escape(device_sentence(gpu, system, process_rss))}</p>'
            + (f'<p class="budget">{html.escape(budget_sentence(budget))}</p>' if budget else "")
            + "</div>")
