"""A traffic run as figures and a table (pure: a run's summary in, plotly / DataFrame out).

The input is ``TrafficResult.summary()`` (or a saved one from the history): its
``groups`` and ``prompts`` rows and the traffic's figures, never the runs
themselves, so a run saved without its prompts draws the same.

Left: speedup per group (median over its prompts) with its spread (min to
max) as error bars, the baseline (1x) dashed; the bar's colour is the group's
verdict. Right: acceptance rate against speedup, one point per prompt,
coloured by group, so a group whose prompts scatter shows as a cloud; a prompt
whose runs verified no draft has no acceptance rate, and no point.
Visitor text (group names come from the file) goes through ``plot_text``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vis.safe import plot_text

# Okabe-Ito: distinguishable with colour-blindness; cycled for many groups
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#000000"]
VERDICT_COLOR = {"worth-it": "#009E73", "borderline": "#E69F00", "not-worth-it": "#D55E00"}
BASELINE_COLOR = "#444444"
TABLE_COLUMNS = {"group": "group", "requests": "requests in file", "prompts": "measured",
                 "acceptance_rate": "acceptance", "mean_acceptance_length": "tokens/step",
                 "speedup": "speedup", "speedup_low": "low", "speedup_high": "high",
                 "output_token_share": "share of output tokens", "verdict": "verdict"}
Summary = Mapping[str, Any]  # TrafficResult.summary()


def group_table(summary: Summary) -> pd.DataFrame:
    """One row per group, rounded for display (None where not measured)."""
    df = pd.DataFrame(list(summary["groups"]), columns=list(TABLE_COLUMNS))
    return df.round(3).astype(object).where(df.notna(), None).rename(columns=TABLE_COLUMNS)


def prompt_table(summary: Summary) -> pd.DataFrame:
    """One row per measured prompt, rounded for display."""
    df = pd.DataFrame(list(summary["prompts"]))
    return df.round(3).astype(object).where(df.notna(), None)


def traffic_figure(summary: Summary, title: str | None = None) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, column_widths=[0.45, 0.55], horizontal_spacing=0.12,
                        subplot_titles=("speedup per group (median, spread min-max)",
                                        "acceptance vs speedup, one point per prompt"))
    _group_bars(fig, summary["groups"])
    _prompt_points(fig, summary["groups"], summary["prompts"])
    for col in (1, 2):
        fig.add_hline(y=1.0, line={"dash": "dash", "color": BASELINE_COLOR, "width": 1.5},
                      row=1, col=col)
    ws = summary.get("weighted_speedup")
    head = title or (f"Your traffic: {ws:.2f}x weighted by output tokens "
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
    speedups = [g["speedup"] for g in groups]
    high = [(g["speedup_high"] - g["speedup"]) if g["speedup_high"] is not None else 0.0
            for g in groups]
    low = [(g["speedup"] - g["speedup_low"]) if g["speedup_low"] is not None else 0.0
           for g in groups]
    fig.add_trace(go.Bar(
        x=[plot_text(g["group"]) for g in groups], y=speedups, showlegend=False,
        name="speedup",
        marker={"color": [VERDICT_COLOR.get(g["verdict"] or "", BASELINE_COLOR)
                          for g in groups]},
        error_y={"type": "data", "symmetric": False, "array": high, "arrayminus": low,
                 "color": BASELINE_COLOR, "thickness": 1.5},
        customdata=[[g["prompts"], plot_text(g["verdict"] or "n/a"), g["output_token_share"]]
                    for g in groups],
        hovertemplate=("%{x}: %{y:.2f}x over %{customdata[0]} prompts, %{customdata[1]}; "
                       "%{customdata[2]:.0%} of output tokens<extra></extra>"),
    ), row=1, col=1)


def _prompt_points(fig: go.Figure, groups: list[Mapping[str, Any]],
                   prompts: list[Mapping[str, Any]]) -> None:
    for i, group in enumerate(g["group"] for g in groups):
        rows = [r for r in prompts if r["group"] == group]
        fig.add_trace(go.Scatter(
            x=[r["acceptance_rate"] for r in rows], y=[r["speedup"] for r in rows],
            mode="markers", name=plot_text(group),
            marker={"size": 10, "color": PALETTE[i % len(PALETTE)],
                    "line": {"width": 1, "color": "white"}},
            customdata=[r["line"] for r in rows],
            hovertemplate=(f"{plot_text(group)}, line %{{customdata}}: %{{x:.0%}} accepted, "
                           "%{y:.2f}x<extra></extra>"),
        ), row=1, col=2)
