"""The k x concurrency sweep: one speedup line per k against concurrency (log axis),
a ring at each concurrency's chosen k ("k=0" where speculation loses), and its step anatomy."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from space.judge import costs
from space.judge.deploy import Choice
from vis.tipping import BASELINE_COLOR, COLORS, SYMBOLS

CHOICE_COLOR = "#000000"


def grid_figure(table: pd.DataFrame, choices: list[Choice], title: str | None = None) -> go.Figure:
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
