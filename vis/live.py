"""The Live tab: per engine, TPOT, acceptance and KV-cache usage over time (seconds before
the snapshot), acceptance per draft position, and the device's memory."""
from __future__ import annotations

import html
from collections import Counter

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from space.observe.livestats import Snapshot

ENGINE_COLOR = {"baseline": "#0072B2", "speculative": "#D55E00"}  # Okabe-Ito
ENGINE_DASH = {"baseline": "dot", "speculative": "solid"}         # apart without colour
JOB_NAMES = {"compare": "comparisons", "trace": "traced runs", "sweep": "sweeps",
             "tipping": "tipping curves", "traffic": "traffic runs"}
GiB = float(1 << 30)


def _ago(t_s: float, snap: Snapshot) -> float:
    return round(t_s - snap.taken_s, 1)


def live_figure(snap: Snapshot) -> go.Figure:
    fig = make_subplots(rows=2, cols=2, horizontal_spacing=0.1, vertical_spacing=0.18,
                        subplot_titles=("TPOT per run (ms)", "Acceptance rate per run",
                                        "Acceptance per draft position (since start)",
                                        "KV-cache usage"))
    for engine in ("baseline", "speculative"):
        runs = [r for r in snap.runs if r.engine == engine]
        _over_time(fig, snap, engine, "TPOT", [(r.t_s, r.tpot_s * 1e3) for r in runs
                                               if r.tpot_s is not None], 1, 1)
        drafted = [(r.t_s, r.acceptance_rate) for r in runs if r.acceptance_rate is not None]
        if drafted:
            _over_time(fig, snap, engine, "acceptance", drafted, 1, 2)
        per_pos = snap.per_position.get(engine)
        if per_pos:
            fig.add_trace(go.Bar(x=list(range(len(per_pos))), y=per_pos,
                                 name=f"{engine} per position", legendgroup=engine,
                                 marker={"color": ENGINE_COLOR[engine]}), row=2, col=1)
        _over_time(fig, snap, engine, "KV cache",
                   [(p.t_s, p.usage_ratio) for p in snap.kv if p.engine == engine], 2, 2)
    fig.update_yaxes(rangemode="tozero", row=1, col=1)
    fig.update_yaxes(range=[0, 1.05], row=1, col=2)
    fig.update_yaxes(range=[0, 1.05], row=2, col=1)
    fig.update_yaxes(range=[0, 1.05], tickformat=".0%", row=2, col=2)
    for row, col in ((1, 1), (1, 2), (2, 2)):
        fig.update_xaxes(title={"text": "seconds ago"}, row=row, col=col)
    fig.update_xaxes(title={"text": "draft position"}, dtick=1, row=2, col=1)
    fig.update_layout(height=620, margin={"l": 10, "r": 10, "t": 40, "b": 40},
                      legend={"orientation": "h", "y": -0.12})
    return fig


def _over_time(fig: go.Figure, snap: Snapshot, engine: str, what: str,
               points: list[tuple[float, float]], row: int, col: int) -> None:
    """(time, value) points of one engine as a line over seconds before the snapshot."""
    fig.add_trace(go.Scatter(
        x=[_ago(t_s, snap) for t_s, _ in points], y=[y for _, y in points],
        mode="lines+markers", name=f"{engine} {what}", legendgroup=engine,
        line={"color": ENGINE_COLOR[engine], "dash": ENGINE_DASH[engine]}), row=row, col=col)


def live_summary_html(snap: Snapshot) -> str:
    """One line per engine's latest figures, the jobs that ended, and the device's memory."""
    parts = []
    for engine in ("baseline", "speculative"):
        runs = [r for r in snap.runs if r.engine == engine]
        last = runs[-1] if runs else None
        tpot = f"{last.tpot_s * 1e3:.1f} ms" if last and last.tpot_s is not None else "none yet"
        rate = (f", acceptance {last.acceptance_rate:.0%}"
                if last and last.acceptance_rate is not None else "")
        kv = snap.kv_now.get(engine)
        kv_text = f", KV cache {kv:.1%}" if kv is not None else ", KV cache: not built yet"
        parts.append(f"<li><b>{engine}</b>: {len(runs)} runs, last TPOT {tpot}{rate}{kv_text}"
                     "</li>")
    if snap.gpu is not None:
        g = snap.gpu
        device = (f"GPU {int(g.index)} ({html.escape(g.name)}): {g.used_bytes / GiB:.1f} of "
                  f"{g.total_bytes / GiB:.1f} GiB used (all processes)")
    elif snap.process_rss_bytes is not None:
        device = (f"no GPU: this process holds {snap.process_rss_bytes / GiB:.2f} GiB of host "
                  "memory (both engines' weights and KV caches)")
    else:
        device = "no GPU reading"
    jobs = ""
    if snap.jobs:  # 'jobs ended: 2 comparisons, 1 tipping curves; the last (tipping curves) 4 s ago'
        said = ", ".join(f"{n} {JOB_NAMES[k]}" for k, n in Counter(j.kind for j in snap.jobs).items())
        job = snap.jobs[-1]
        jobs = (f'<li data-jobs="{len(snap.jobs)}">jobs ended: {said}; the last '
                f"({JOB_NAMES[job.kind]}) {max(0.0, -_ago(job.t_s, snap)):.0f} s ago</li>")
    state = ("a measured run is going: this view refreshes at most every 5 s, from a cached "
             "reading" if snap.busy else "idle: refreshing every 2 s")
    return (f'<div class="speclens-live" data-busy="{str(snap.busy).lower()}">'
            f"<ul>{''.join(parts)}{jobs}<li>{device}</li></ul>"
            f"<small>{state}</small></div>")
