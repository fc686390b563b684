"""The tipping-point curve: speedup against acceptance per concurrency (measured points,
the measured-cost model, the break-even, the workload's acceptance), the step anatomy
of the runs it was measured from, and the k x concurrency sweep in the same palette."""
from __future__ import annotations

from html import escape

import pandas as pd
import plotly.graph_objects as go

from space.judge import costs, theory
from space.judge.curves import MEASURED, TippingCurve
from space.judge.deploy import Choice
from vis.anatomy import costs_html  # the Checklist tab's table: the same figures

# Okabe-Ito, one per concurrency; symbols differ too
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "star")
BASELINE_COLOR = "#444444"
WORKLOAD_COLOR = "#000000"
CHOICE_COLOR = "#000000"
AXES = {"length": "mean acceptance length (tokens per verify step)",
        "rate": "acceptance rate (accepted / drafted)"}
SYNTHETIC_NOTE = ("points measured with forced (synthetic) acceptance: their timings are real,"
                  " their text is not the model's")


def _x(curve: TippingCurve, tau: float | None, axis: str) -> float | None:
    if tau is None or axis == "length":
        return tau
    return theory.acceptance_rate_from_length(tau, curve.k)


def tipping_figure(curve: TippingCurve, axis: str = "length",
                   workload_acceptance: float | None = None,
                   workload_concurrency: int | None = None, compact: bool = False) -> go.Figure:
    """Speedup against acceptance (``axis``: "length" or "rate"); ``workload_acceptance``,
    in that unit, draws the vertical marker."""
    if axis not in AXES:
        raise ValueError(f"axis must be one of {', '.join(AXES)}, got {axis!r}")
    fig = go.Figure()
    top = 1.0
    for i, c in enumerate(curve.concurrencies):
        color, symbol = COLORS[i % len(COLORS)], SYMBOLS[i % len(SYMBOLS)]
        top = max(top, _points(fig, curve, c, axis, color, symbol),
                  _model_line(fig, curve, c, axis, color))
        _break_even(fig, curve, c, axis, color, i, compact)
    fig.add_hline(y=1.0, line={"dash": "dash", "color": BASELINE_COLOR, "width": 1.5},
                  annotation_text="baseline (1x)", annotation_position="top left")
    if (x := workload_acceptance) is not None:
        value = f"{x:.0%}" if axis == "rate" else f"{x:.2f}"
        where = f" at concurrency {workload_concurrency}" if workload_concurrency else ""
        fig.add_vline(x=x, line={"color": WORKLOAD_COLOR, "width": 2, "dash": "solid"})
        fig.add_annotation(x=x, y=1.0, yref="paper", text=f"this workload: {value}{where}",
                           showarrow=False, xanchor="left", yanchor="top", xshift=4,
                           font={"color": WORKLOAD_COLOR}, bgcolor="rgba(255,255,255,0.85)")
    lo, hi = (1.0, curve.k + 1.0) if axis == "length" else (0.0, 1.0)
    pad = (hi - lo) * 0.03
    fig.update_xaxes(title={"text": AXES[axis]}, range=[lo - pad, hi + pad],
                     tickformat=".0%" if axis == "rate" else None)
    fig.update_yaxes(title={"text": "speedup (baseline TPOT / speculative TPOT)"},
                     ticksuffix="x", range=[0, top * 1.15], rangemode="tozero")
    kind = "measured" if curve.kind == MEASURED else curve.kind
    head = f"Where speculation pays: {curve.label} ({kind}, {curve.date[:10]})"
    sub = SYNTHETIC_NOTE if curve.kind == MEASURED else curve.note
    fig.update_layout(
        title={"text": head if compact else f"{head}<br><sup>{sub}</sup>",
               "font": {"size": 13 if compact else 16}},
        height=320 if compact else 520, template="plotly_white",
        margin={"l": 60, "r": 20, "t": 60 if compact else 90, "b": 50},
        legend={"orientation": "h", "x": 0.0, "y": -0.22 if not compact else -0.35},
        showlegend=True)
    return fig


def _points(fig, curve, c, axis, color, symbol) -> float:
    pts = curve.points_at(c)
    if not pts:
        return 1.0
    xs = [_x(curve, p.mean_acceptance_length, axis) for p in pts]
    ys = [p.speedup for p in pts]
    spread = all(p.speedup_low is not None for p in pts)
    fig.add_trace(go.Scatter(
        x=xs, y=ys, mode="markers", name=f"measured, concurrency {c}",
        marker={"color": color, "symbol": symbol, "size": 10},
        error_y=({"type": "data", "symmetric": False, "color": color, "thickness": 1.5,
                  "array": [p.speedup_high - p.speedup for p in pts],
                  "arrayminus": [p.speedup - p.speedup_low for p in pts]} if spread else None),
        customdata=[[p.asked_acceptance_length, p.acceptance_rate or 0.0] for p in pts],
        hovertemplate=("concurrency " + str(c) + ": %{y:.2f}x at %{x:.2f} (asked tau "
                       "%{customdata[0]:.2f}, rate %{customdata[1]:.0%})<extra></extra>")))
    return max([p.speedup_high or p.speedup for p in pts] + ys)


def _model_line(fig, curve, c, axis, color) -> float:
    costs = curve.costs_at(c)
    if costs is None:
        return 1.0
    taus = [1.0 + curve.k * i / 40 for i in range(41)]
    ys = [costs.speedup(t) for t in taus]
    fig.add_trace(go.Scatter(
        x=[_x(curve, t, axis) for t in taus], y=ys, mode="lines",
        name=f"model (measured step costs), concurrency {c}",
        line={"color": color, "width": 2, "dash": "dot" if curve.points else "solid"},
        hovertemplate=(f"model, concurrency {c}: %{{y:.2f}}x at %{{x:.2f}} (decode "
                       f"{costs.decode_step_s * 1e3:.1f} ms, verify "
                       f"{costs.verify_step_s * 1e3:.1f} ms)<extra></extra>")))
    return max(ys)


def _break_even(fig, curve, c, axis, color, i: int, compact: bool) -> None:
    tau, source = curve.break_even_length(c)
    x = _x(curve, tau, axis)
    if x is None:
        return
    text = (f"break-even {x:.0%}" if axis == "rate" else f"break-even {x:.2f}") + \
        f" (c={c}{', model' if source == 'model' else ''})"
    fig.add_trace(go.Scatter(
        x=[x], y=[1.0], mode="markers", name=f"break-even, concurrency {c}",
        showlegend=False, marker={"symbol": "x", "size": 15, "color": color,
                                  "line": {"width": 2, "color": color}},
        hovertemplate=f"{text}<extra></extra>"))
    fig.add_annotation(x=x, y=1.0, text=text, showarrow=True, arrowhead=0, ax=40,
                       ay=-40 - 28 * i, xanchor="left", font={"color": color,
                                                             "size": 11 if compact else 12},
                       bgcolor="rgba(255,255,255,0.85)")


def anatomy_html(curve: TippingCurve) -> str:
    """Medians per step kind at each concurrency, and in words what grows with k."""
    if curve.kind != MEASURED:
        return (f'<div class="speclens-anatomy"><em>{escape(curve.kind)}: no runs of its own '
                f"were timed; its step costs come from {escape(str(curve.source))}, whose "
                "anatomy that curve shows</em></div>")
    blocks = []
    for c in curve.step_costs:
        if c.anatomy is None or not costs.timed(c.anatomy):
            blocks.append(f"<p><em>concurrency {c.concurrency}: {escape(costs.NOT_TIMED)}"
                          "</em></p>")
            continue
        words = costs.grows_with_k(c.anatomy, curve.k, curve.method, curve.device)
        blocks.append(costs_html(c.anatomy, f"concurrency {c.concurrency}: median per step")
                      + f"<p>{escape(words)}</p>")
    return ('<div class="speclens-tipping-anatomy"><h4>Where a step\'s time goes in these '
            f"runs</h4>{''.join(blocks)}</div>")


def grid_figure(table: pd.DataFrame, choices: list[Choice], title: str | None = None) -> go.Figure:
    """The k x concurrency sweep: one speedup line per k against concurrency (log axis),
    a ring at each concurrency's chosen k ("k=0" where speculation loses)."""
    fig = go.Figure()
    ks = sorted(int(k) for k in table["k"].dropna().unique())
    for i, k in enumerate(ks):
        rows = table[table["k"] == k].sort_values("concurrency")
        fig.add_trace(go.Scatter(
            x=rows["concurrency"].tolist(), y=rows["speedup"].tolist(), mode="lines+markers",
            name=f"k={k}", line={"color": COLORS[i % len(COLORS)], "width": 2},
            marker={"symbol": SYMBOLS[i % len(SYMBOLS)], "size": 9},
            hovertemplate=f"k={k}, concurrency %{{x}}: %{{y:.2f}}x<extra></extra>"))
    chosen = []
    for c in choices:  # the ring: at the chosen k's point, or the best point when k = 0
        rows = table[table["concurrency"] == c.concurrency]
        chosen.append((c, float((rows[rows["k"] == c.k] if c.k else rows)["speedup"].max())))
    fig.add_trace(go.Scatter(
        x=[c.concurrency for c, _ in chosen], y=[s for _, s in chosen], mode="markers+text",
        name="chosen k", text=[f"k={c.k}" for c, _ in chosen], textposition="top center",
        marker={"symbol": "circle-open", "size": 20, "color": CHOICE_COLOR,
                "line": {"width": 2}},
        hovertemplate="concurrency %{x}: %{text}<extra></extra>"))
    fig.add_hline(y=1.0, line={"dash": "dash", "color": BASELINE_COLOR, "width": 1.5},
                  annotation_text="baseline (1x)", annotation_position="bottom right")
    cs = sorted(int(c) for c in table["concurrency"].dropna().unique())
    fig.update_xaxes(title={"text": "concurrent requests (batch size)"}, type="log",
                     tickvals=cs, ticktext=[str(c) for c in cs])
    top = max([1.0] + [float(s) for s in table["speedup"].dropna()]) * 1.2
    fig.update_yaxes(title={"text": "speedup (TPOT)"}, ticksuffix="x", range=[0, top])
    fig.update_layout(title={"text": title or "Best k per concurrency"}, height=460,
                      template="plotly_white", margin={"l": 60, "r": 20, "t": 70, "b": 50},
                      legend={"orientation": "h", "y": -0.2})
    return fig


def anatomy_markdown(grid: costs.GridCosts) -> str:
    """Medians per (k, concurrency) and, per concurrency, what grows with k, as Markdown."""
    if not any(costs.timed(kc) for _, _, kc in grid):
        return f"\n#### Where a step's time goes\n{costs.NOT_TIMED}.\n"
    head = ["k", "concurrency", *costs.COLUMNS]
    rows = [[str(k), str(c), *costs.cost_columns(kc)] for k, c, kc in sorted(grid)]
    table = "\n".join("| " + " | ".join(r) + " |" for r in [head, ["---"] * len(head), *rows])
    words = "\n\n".join(costs.grid_words(grid))
    return f"\n#### Where a step's time goes (medians per step)\n{table}\n\n{words}\n"
