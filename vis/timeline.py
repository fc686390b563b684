"""Timeline: engine steps of one or two runs, each from its own arrival, so the gap
between the finish marks is the end-to-end time speculation saved (or lost)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from space.records.anatomy import BEFORE_ANATOMY
from space.records.trace import DECODE, MERGED, PREFILL, VERIFY, RunTrace, StepRecord, chunk_groups
from vis.anatomy import Columns, Lanes, anatomy_bars, h_bars, has_anatomy, put
from vis.safe import plot_text
from vis.server_notes import STEP_ANATOMY, from_server, plot_lines

# Okabe-Ito colours plus a pattern, apart without colour too
KIND_STYLE = {
    PREFILL: {"color": "#E69F00", "pattern": "/"},
    VERIFY: {"color": "#009E73", "pattern": ""},
    DECODE: {"color": "#56B4E9", "pattern": "."},
}
OTHER_STYLE = {"color": "#999999", "pattern": "x"}  # a kind this module does not know yet
# steps a server sent in one chunk: one bar, no kind made up for it
MERGED_STYLE = {"color": "#BBBBBB", "pattern": "\\"}
MERGED_NAME = "merged chunk (several steps)"
FINISH_COLOR = "#444444"
CACHED_TEXT = "cached prefill"  # written on a prefill bar shortened by the prefix cache
CURRENT_COLOR = "#0072B2"  # the step the step-through shows (the token view's outline)
CURRENT_NAME = "current-step"
EDGE = {"width": 0.5, "color": "white"}  # a thin white edge keeps consecutive steps of one kind apart

HOVER = ("<b>%{y}</b> step %{customdata[0]} (%{customdata[1]})<br>"
         "start %{customdata[2]:.2f} ms, duration %{customdata[3]:.2f} ms<br>"
         "scheduled %{customdata[4]} tokens<br>"
         "proposed %{customdata[5]}, accepted %{customdata[6]}, emitted %{customdata[7]}"
         "<extra></extra>")


def _ms(run: RunTrace, t_s: float) -> float:
    return (t_s - run.arrival_s) * 1e3


def step_label(run: RunTrace, step: StepRecord) -> str:
    """The step's kind, with how much of the prompt the first prefill read from the prefix
    cache (it is short because of it) and the placeholder drafts."""
    notes = []
    first_prefill = next((s.index for s in run.steps if s.kind == PREFILL), None)
    if step.kind == PREFILL and run.num_cached_tokens and step.index == first_prefill:
        notes.append(f"cached: {run.num_cached_tokens} of {len(run.prompt_token_ids)} "
                     "prompt tokens from the prefix cache")
    if step.num_placeholder_draft_tokens:
        notes.append(f"{step.num_placeholder_draft_tokens} placeholder drafts, vLLM's padding")
    return f"{step.kind} ({'; '.join(notes)})" if notes else step.kind


def _add(columns: Columns, lane: str, run: RunTrace, group: list[StepRecord], label: str) -> None:
    """A bar over the window of the group's first step (a merged chunk's is the chunk's),
    its hover figures summed over the group."""
    start, dur = _ms(run, group[0].start_s), group[0].duration_s * 1e3
    put(columns, lane, start, dur, [int(group[0].index), plot_text(label), start, dur,
                                    sum(s.num_scheduled_tokens for s in group),
                                    sum(s.num_draft_tokens for s in group),
                                    sum(s.num_accepted_tokens for s in group),
                                    sum(len(s.emitted_token_ids) for s in group)])


def merged_label(group: list[StepRecord]) -> str:
    """'steps 3-5 arrived in one chunk: 2 verify, 1 decode'."""
    kinds = [s.kind for s in group]
    counts = ", ".join(f"{kinds.count(k)} {k}" for k in (PREFILL, VERIFY, DECODE) if k in kinds)
    return f"steps {group[0].index}-{group[-1].index} arrived in one chunk: {counts}"


def step_bars(lanes: Lanes, merged: bool = True) -> list[go.Bar]:
    """One trace per step kind, bars for every lane, so the legend has one entry per kind
    (known kinds in a fixed order, then others as they appear); with ``merged``, then one
    bar per merged chunk (``chunk_groups``) over the chunk's window."""
    by_kind: dict[str, tuple[Columns, list[str]]] = {}
    chunks: Columns = ([], [], [], [])
    for lane, run in lanes:
        for g in chunk_groups(run.steps):
            if g[0].placement == MERGED:
                if merged:
                    _add(chunks, lane, run, g, merged_label(g))
                continue
            columns, texts = by_kind.setdefault(g[0].kind, (([], [], [], []), []))
            label = step_label(run, g[0])
            texts.append(CACHED_TEXT if "prefix cache" in label else "")
            _add(columns, lane, run, g, label)
    known = [k for k in (PREFILL, VERIFY, DECODE) if k in by_kind]
    bars = []
    for kind in known + [k for k in by_kind if k not in known]:
        (columns, texts), style = by_kind[kind], KIND_STYLE.get(kind, OTHER_STYLE)
        bars.append(h_bars(plot_text(kind), style["color"], style["pattern"], columns, HOVER, EDGE,
                           text=np.array(texts, dtype=object), textposition="inside",
                           insidetextanchor="start"))
    if chunks[0]:
        bars.append(h_bars(MERGED_NAME, MERGED_STYLE["color"], MERGED_STYLE["pattern"], chunks,
                           HOVER, EDGE))
    return bars


def _finish_marks(fig: go.Figure, lanes: Lanes) -> None:
    """A tick and label at each run's finish, plus a dashed line across lanes."""
    for n, (lane, run) in enumerate(lanes):
        end = run.e2e_s * 1e3
        fig.add_trace(go.Scatter(
            x=[end], y=[lane], mode="markers+text", name="finish",
            legendgroup="finish", showlegend=n == 0,
            marker={"symbol": "line-ns-open", "size": 28, "color": FINISH_COLOR,
                    "line": {"width": 3, "color": FINISH_COLOR}},
            text=[f"{end:,.0f} ms"], textposition="middle right",
            hovertemplate=f"<b>{lane}</b> finished at %{{x:.1f}} ms<extra></extra>",
        ))
        fig.add_vline(x=end, line={"dash": "dash", "width": 1, "color": FINISH_COLOR})


def _title(spec: RunTrace, baseline: RunTrace | None) -> str:
    s_ms = spec.e2e_s * 1e3
    if baseline is None:
        return f"Speculative run: {s_ms:,.0f} ms end to end, {len(spec.steps)} steps"
    b_ms = baseline.e2e_s * 1e3
    diff = b_ms - s_ms
    verdict = f"{diff:,.0f} ms saved" if diff >= 0 else f"{-diff:,.0f} ms lost"
    ratio = f" ({b_ms / s_ms:.2f}x)" if s_ms > 0 else ""
    return (f"Speculative {s_ms:,.0f} ms ({len(spec.steps)} steps) vs baseline "
            f"{b_ms:,.0f} ms ({len(baseline.steps)} steps): {verdict}{ratio}")


def lay_out(fig: go.Figure, lanes: Lanes, title: str, note: str = "", legend: str = "step kind") -> go.Figure:
    """Lanes top to bottom on one ms axis; each line of ``note`` under the title adds 20 px."""
    lines = note.count("<br>")
    fig.update_layout(
        title={"text": title + note}, barmode="overlay", bargap=0.35,
        height=170 + 80 * len(lanes) + 20 * lines,
        margin={"l": 10, "r": 10, "t": 60 + 20 * lines, "b": 40}, legend={"title": {"text": legend}},
        xaxis={"title": {"text": "time since arrival (ms)"},
               "range": [0, 1.12 * max(run.e2e_s * 1e3 for _, run in lanes) or 1.0]},
        # plotly draws the first category at the bottom
        yaxis={"categoryorder": "array", "categoryarray": [lane for lane, _ in reversed(lanes)]},
    )
    return fig


def timeline_figure(spec: RunTrace, baseline: RunTrace | None = None,
                    current_step: int | None = None, anatomy: bool = False) -> go.Figure:
    """One bar per engine step, in ms since each run's arrival; ``current_step`` (a
    speculative ``StepRecord.index``) banded; ``anatomy``: each step as its timed parts
    (a run without them says so in the title and keeps one bar per step)."""
    lanes = [("speculative", spec)] + ([("baseline", baseline)] if baseline is not None else [])
    timed = any(has_anatomy(run) for _, run in lanes)
    wants_anatomy, anatomy = anatomy, anatomy and timed
    fig = go.Figure(anatomy_bars(lanes, _ms) if anatomy else step_bars(lanes))
    _finish_marks(fig, lanes)
    current = next((s for s in spec.steps if s.index == current_step), None)
    if current is not None:  # a band over the speculative step the step-through shows
        fig.add_vrect(x0=_ms(spec, current.start_s), x1=_ms(spec, current.end_s), name=CURRENT_NAME,
                      fillcolor=CURRENT_COLOR, opacity=0.25, line={"color": CURRENT_COLOR, "width": 2},
                      layer="above", annotation_text=f"step {current_step}",
                      annotation_position="top left")
    cached = [f"{lane} {run.num_cached_tokens}" for lane, run in lanes if run.num_cached_tokens]
    note = f"<br>prompt tokens from the prefix cache: {', '.join(cached)}" if cached else ""
    if wants_anatomy and not timed:
        note += (f"<br>{plot_lines(STEP_ANATOMY)}" if from_server(spec)
                 else f"<br>step anatomy: {BEFORE_ANATOMY}")
    return lay_out(fig, lanes, _title(spec, baseline), note,
                   "part of the step" if anatomy else "step kind")
