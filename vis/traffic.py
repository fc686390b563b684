"""A traffic run as figures and tables, drawn from ``TrafficResult.summary()`` alone (so a
run saved without its prompts draws the same): speedup per group with its 90 % interval,
coloured by verdict, and acceptance against speedup, one point per prompt."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vis.safe import plot_text

# Okabe-Ito, cycled for many groups
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#000000"]
VERDICT_COLOR = {"worth-it": "#009E73", "borderline": "#E69F00", "not-worth-it": "#D55E00",
                 "undecided": "#999999"}
BASELINE_COLOR = "#444444"
TABLE_COLUMNS = {"group": "group", "requests": "requests in file", "prompts": "measured",
                 "acceptance_rate": "acceptance", "mean_acceptance_length": "tokens/step",
                 "speedup_text": "speedup (ratio of totals, 90 % CI)", "speedup": "speedup",
                 "basis": "decided on", "e2e_speedup": "end-to-end",
                 "prediction_interval": "next prompts", "prompts_to_decide": "prompts to decide",
                 "predicted_speedup": "predicted from acceptance",
                 "speedup_low": "slowest prompt", "speedup_high": "fastest prompt",
                 "output_token_share": "share of output tokens", "verdict": "verdict"}
Summary = Mapping[str, Any]  # TrafficResult.summary()


def group_table(summary: Summary) -> pd.DataFrame:
    """One row per group, rounded for display (None where not measured)."""
    rows = [{**g, "prediction_interval": f"{iv[0]:.2f}-{iv[1]:.2f}x ({g.get('prediction_prompts')} prompts)"
             if (iv := g.get("prediction_interval")) else None} for g in summary["groups"]]
    return _shown(pd.DataFrame(rows, columns=list(TABLE_COLUMNS))).rename(columns=TABLE_COLUMNS)


def _shown(df: pd.DataFrame) -> pd.DataFrame:
    """Rounded for display, None where not measured."""
    return df.round(3).astype(object).where(df.notna(), None)


def _errors(g: Mapping[str, Any]) -> tuple[float, float]:
    """Error bars below and above the speedup: the group's interval, or the spread (min to
    max) of a summary saved before intervals."""
    ci = g.get("speedup_ci")
    lo, hi = (ci[0], ci[1]) if ci else (g.get("speedup_low"), g.get("speedup_high"))
    s = g["speedup"]
    return (max(s - lo, 0.0) if lo is not None else 0.0, max(hi - s, 0.0) if hi is not None else 0.0)


def prompt_table(summary: Summary) -> pd.DataFrame:
    """One row per measured prompt, rounded for display."""
    return _shown(pd.DataFrame(list(summary["prompts"])))


def traffic_figure(summary: Summary) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, column_widths=[0.45, 0.55], horizontal_spacing=0.12,
                        subplot_titles=("speedup per group (ratio of totals, 90 % CI)",
                                        "acceptance vs speedup, one point per prompt"))
    _group_bars(fig, summary["groups"])
    for i, group in enumerate(g["group"] for g in summary["groups"]):  # a point per prompt
        rows = [r for r in summary["prompts"] if r["group"] == group]
        fig.add_trace(go.Scatter(
            x=[r["acceptance_rate"] for r in rows], y=[r["speedup"] for r in rows],
            mode="markers", name=plot_text(group),
            marker={"size": 10, "color": PALETTE[i % len(PALETTE)],
                    "line": {"width": 1, "color": "white"}},
            customdata=[r["line"] for r in rows],
            hovertemplate=(f"{plot_text(group)}, line %{{customdata}}: %{{x:.0%}} accepted, "
                           "%{y:.2f}x<extra></extra>"),
        ), row=1, col=2)
    for col in (1, 2):
        fig.add_hline(y=1.0, line={"dash": "dash", "color": BASELINE_COLOR, "width": 1.5},
                      row=1, col=col)
    ws = summary.get("weighted_speedup")
    ci = summary.get("weighted_speedup_ci")
    ci_txt = f" (90 % CI {ci[0]:.2f}-{ci[1]:.2f})" if ci and ws is not None else ""
    head = (f"Your traffic: {ws:.2f}x{ci_txt} weighted by output tokens "
            f"({summary.get('weighting')}); {summary.get('gaining_share', 0):.0%} "
            "in groups that gain" if ws is not None else "Your traffic")
    fig.update_yaxes(title={"text": "speedup"}, ticksuffix="x", rangemode="tozero")
    fig.update_xaxes(title={"text": "acceptance rate (accepted / drafted)"}, tickformat=".0%",
                     range=[-0.02, 1.02], row=1, col=2)
    fig.update_layout(title={"text": plot_text(head)}, height=460, template="plotly_white",
                      margin={"l": 60, "r": 20, "t": 80, "b": 60},
                      legend={"title": {"text": "group"}})
    return fig


def _group_bars(fig: go.Figure, groups: list[Mapping[str, Any]]) -> None:
    errors = [_errors(g) for g in groups]
    fig.add_trace(go.Bar(
        x=[plot_text(g["group"]) for g in groups], y=[g["speedup"] for g in groups], showlegend=False,
        name="speedup",
        marker={"color": [VERDICT_COLOR.get(g["verdict"] or "", BASELINE_COLOR)
                          for g in groups]},
        error_y={"type": "data", "symmetric": False, "array": [hi for _, hi in errors],
                 "arrayminus": [lo for lo, _ in errors],
                 "color": BASELINE_COLOR, "thickness": 1.5},
        customdata=[[g["prompts"], plot_text(g["verdict"] or "n/a"), g["output_token_share"],
                     plot_text(g.get("speedup_text") or f"{g['speedup']:.2f}x")]
                    for g in groups],
        hovertemplate=("%{x}: %{customdata[3]}, %{customdata[1]}; "
                       "%{customdata[2]:.0%} of output tokens<extra></extra>"),
    ), row=1, col=1)
