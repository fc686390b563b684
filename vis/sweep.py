"""A sweep as a figure: speedup (with its spread and the crossover at 1x) and acceptance
against the swept variable."""
from __future__ import annotations

import math
from typing import Protocol

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vis.safe import plot_text


class Axis(Protocol):
    @property
    def label(self) -> str: ...      # axis title
    @property
    def log_axis(self) -> bool: ...  # log scale
    @property
    def integer(self) -> bool: ...   # ticks at the swept values


class SweepPlot(Protocol):
    """What the figure reads from a ``space.runs.sweep.SweepResult``."""

    variable: str
    table: pd.DataFrame
    crossover: float | None
    throughput_crossover: float | None

    @property
    def axis(self) -> Axis: ...


SPEEDUP_COLOR = "#0072B2"    # Okabe-Ito blue
ACCEPT_COLOR = "#009E73"     # Okabe-Ito bluish green, the token view's "accepted"
CROSS_COLOR = "#D55E00"      # Okabe-Ito vermillion
BASELINE_COLOR = "#444444"
THROUGHPUT_COLOR = "#CC79A7"  # Okabe-Ito reddish purple


def sweep_figure(result: SweepPlot, title: str | None = None) -> go.Figure:
    """Speedup (top) and acceptance (bottom); a concurrency sweep also draws the aggregate
    throughput speedup (all requests' tokens / the batch's wall time)."""
    variable, var = result.variable, result.axis
    table = result.table.sort_values("value")
    xs, speedups = table["value"].tolist(), table["speedup"].tolist()
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        row_heights=[0.62, 0.38],
                        subplot_titles=("speedup (baseline TPOT / speculative TPOT)",
                                        "acceptance rate (accepted / drafted)"))
    low, high = table["speedup_low"], table["speedup_high"]
    errors = None if low.isna().all() else {
        "type": "data", "symmetric": False, "array": (high - table["speedup"]).tolist(),
        "arrayminus": (table["speedup"] - low).tolist(), "color": SPEEDUP_COLOR, "thickness": 1.5}
    _line(fig, table, "speedup", variable, var.log_axis, result.crossover, "crossover",
          name="speedup (TPOT)", line={"color": SPEEDUP_COLOR, "width": 2.5}, marker={"size": 9},
          error_y=errors, customdata=[plot_text(v) for v in table["verdict"].fillna("")],
          hovertemplate=f"{variable} %{{x}}: %{{y:.2f}}x (%{{customdata}})<extra></extra>")
    if result.crossover is None and speedups:
        side = "above" if min(speedups) > 1.0 else "at or below" if max(speedups) <= 1.0 \
            else "on both sides of"
        fig.add_annotation(text=f"no crossover: TPOT speedup stays {side} 1 over this range",
                           x=0.01, y=0.98, xref="x domain", yref="y domain", xanchor="left",
                           yanchor="top", showarrow=False, font={"color": BASELINE_COLOR})
    heights = speedups + high.tolist()
    if variable == "concurrency":
        _line(fig, table, "throughput_speedup", variable, var.log_axis, result.throughput_crossover,
              "throughput crossover", name="throughput speedup (batch)",
              line={"color": THROUGHPUT_COLOR, "width": 2, "dash": "dot"},
              marker={"size": 8, "symbol": "diamond"},
              hovertemplate=(f"{variable} %{{x}}: aggregate tokens/s %{{y:.2f}}x of baseline"
                             "<extra></extra>"))
        heights += table["throughput_speedup"].tolist()
    fig.add_hline(y=1.0, line={"dash": "dash", "color": BASELINE_COLOR, "width": 1.5},
                  annotation_text="baseline (1x)", annotation_position="bottom right",
                  row=1, col=1)
    fig.add_trace(go.Scatter(
        x=xs, y=table["acceptance_rate"].tolist(), mode="lines+markers",
        name="acceptance rate", line={"color": ACCEPT_COLOR, "width": 2.5}, showlegend=False,
        marker={"size": 9, "symbol": "square"},
        customdata=table["mean_acceptance_length"].tolist(),
        hovertemplate=(f"{variable} %{{x}}: %{{y:.1%}} accepted, "
                       "%{customdata:.2f} tokens per verify step<extra></extra>"),
    ), row=2, col=1)
    _axes(fig, var, xs, heights)
    fig.update_layout(
        title={"text": plot_text(title or f"Sweep over {var.label}")}, height=560,
        margin={"l": 60, "r": 20, "t": 80, "b": 50}, template="plotly_white",
        showlegend=variable == "concurrency",  # two speedup lines to tell apart
        legend={"orientation": "h", "x": 0.99, "xanchor": "right", "y": 0.98,
                "yanchor": "top", "yref": "paper", "bgcolor": "rgba(255,255,255,0.8)"},
    )
    return fig


def _line(fig: go.Figure, table: pd.DataFrame, column: str, variable: str, log_axis: bool,
          cross: float | None, label: str, **trace: object) -> None:
    """A speedup line on the top plot and, marked ``label``, where it crosses 1."""
    fig.add_trace(go.Scatter(x=table["value"].tolist(), y=table[column].tolist(),
                             mode="lines+markers", **trace), row=1, col=1)
    if cross is None:
        return
    fig.add_vline(x=cross, line={"dash": "dot", "color": CROSS_COLOR, "width": 2})
    fig.add_trace(go.Scatter(
        x=[cross], y=[1.0], mode="markers", name=label, showlegend=False,
        marker={"symbol": "x", "size": 14, "color": CROSS_COLOR, "line": {"width": 2}},
        hovertemplate=f"{label}: speedup = 1 at {variable} \u2248 {cross:.3g}<extra></extra>",
    ), row=1, col=1)
    # plotly places annotations on a log axis by log10 of the value (shapes and traces not)
    fig.add_annotation(x=math.log10(cross) if log_axis else cross, y=1.0,
                       text=f"{label} \u2248 {cross:.3g}", showarrow=True, arrowhead=0,
                       ax=60, ay=-40, xanchor="left", font={"color": CROSS_COLOR},
                       row=1, col=1)


def _axes(fig: go.Figure, var: Axis, xs: list[float], heights: list[float]) -> None:
    xaxis: dict = {"title": {"text": var.label}}
    if var.log_axis and xs and min(xs) > 0:
        xaxis.update(type="log", tickvals=xs, ticktext=[f"{x:g}" for x in xs])
    elif var.integer:
        xaxis.update(tickvals=xs)
    fig.update_xaxes(**{k: v for k, v in xaxis.items() if k != "title"}, row=1, col=1)
    fig.update_xaxes(**xaxis, row=2, col=1)
    finite = [s for s in heights if s is not None and not math.isnan(s)]
    top = max(finite + [1.0]) * 1.15
    fig.update_yaxes(title={"text": "speedup"}, ticksuffix="x", rangemode="tozero",
                     range=[0, top], row=1, col=1)
    fig.update_yaxes(title={"text": "accepted"}, tickformat=".0%", range=[0, 1.05],
                     row=2, col=1)
