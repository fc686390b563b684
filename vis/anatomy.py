"""Step anatomy views: where each engine step's milliseconds went. Runs recorded
before trace version 5 have none: the views say so instead of drawing zeros."""
from __future__ import annotations

from collections.abc import Callable
from html import escape

import numpy as np
import plotly.graph_objects as go

from space.common.paths import asset
from space.judge.costs import cost_rows
from space.records.anatomy import (
    BEFORE_ANATOMY,
    FORWARD,
    NOT_TIMED_STEP,
    OTHER,
    PROPOSER,
    RECORDING,
    REJECTION,
    SAMPLING,
    SCHEDULING,
    KindCosts,
    StepAnatomy,
    breakdown,
    kind_costs,
)
from space.records.run import IN_PROCESS, SERVER, Source
from space.records.trace import DECODE, RunTrace, StepRecord
from vis.safe import plot_text
from vis.server_notes import STEP_ANATOMY, why_html

# (label, parts, colour, pattern): Okabe-Ito plus patterns, apart without colour too.
GROUPS: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    ("forward", (FORWARD,), "#0072B2", ""),
    ("sampling / rejection", (SAMPLING, REJECTION), "#009E73", "/"),
    ("proposer", (PROPOSER,), "#E69F00", "x"),
    ("scheduling", (SCHEDULING,), "#CC79A7", "."),
    ("recording (SpecLens)", (RECORDING,), "#000000", "+"),
)
OTHER_LABEL, OTHER_COLOR = "other", "#BBBBBB"
HOVER = ("<b>%{y}</b> step %{customdata[0]} (%{customdata[1]})<br>"
         "%{customdata[2]}: %{customdata[3]:.2f} ms<extra></extra>")
_CSS = asset(__file__, "anatomy.css")

Lanes = list[tuple[str, RunTrace]]
Columns = tuple[list, list, list, list]  # lanes, starts (ms), widths (ms), hover data


def has_anatomy(run: RunTrace) -> bool:
    return any(s.anatomy is not None for s in run.steps)


def anatomy_bars(lanes: Lanes, ms: Callable[[RunTrace, float], float]) -> list[go.Bar]:
    """One bar trace per part group over an "other" bar per step (an untimed step: all
    "other"); ``ms(run, t_s)`` places a perf_counter time on the timeline's axis."""
    # columns, not a tuple per bar: 100,000 long-lived tuples would double the time in GC
    whole: Columns = ([], [], [], [])
    parts: dict[str, Columns] = {label: ([], [], [], []) for label, *_ in GROUPS}
    group_of = {p: label for label, ps, *_ in GROUPS for p in ps}
    for lane, run in lanes:
        for s in run.steps:
            other = s.duration_s if s.anatomy is None else breakdown(s.anatomy, s.duration_s)[OTHER]
            put(whole, lane, ms(run, s.start_s), s.duration_s * 1e3, [s.index, s.kind, OTHER, other * 1e3])
            for i in s.anatomy.intervals if s.anatomy is not None else ():
                width = (i.end_s - i.start_s) * 1e3
                put(parts[group_of[i.part]], lane, ms(run, i.start_s), width,
                    [s.index, s.kind, i.part, width])
    bars = [h_bars(OTHER_LABEL, OTHER_COLOR, "", whole)]
    bars += [h_bars(plot_text(label), color, pattern, parts[label])
             for label, _, color, pattern in GROUPS if parts[label][0]]
    return bars


def put(columns: Columns, lane: str, start: float, width: float, hover: list) -> None:
    ys, starts, widths, hovers = columns
    ys.append(lane)
    starts.append(start)
    widths.append(width)
    hovers.append(hover)


def h_bars(name: str, color: str, pattern: str, columns: Columns, hover: str = HOVER,
           edge: dict | None = None, **text: object) -> go.Bar:
    """Bars from their lanes, starts (ms), widths (ms) and hover data. numpy arrays: plotly
    checks a list element by element (a 20,000-step replay's timeline: 0.7 s with lists, 0.25 s)."""
    ys, bases, widths, custom = columns
    return go.Bar(
        orientation="h", y=np.array(ys, dtype=object), x=np.array(widths, dtype=float),
        base=np.array(bases, dtype=float), name=name,
        customdata=np.array(custom, dtype=object), hovertemplate=hover,
        marker={"color": color, "line": edge or {"width": 0}, "pattern": {"shape": pattern}}, **text)


def group_seconds(anatomy: StepAnatomy, duration_s: float) -> list[tuple[str, float]]:
    """(label, seconds) per part group, "other" last."""
    shares = breakdown(anatomy, duration_s)
    return [(label, sum(shares[p] for p in parts))
            for label, parts, *_ in GROUPS + ((OTHER_LABEL, (OTHER,), "", ""),)]


def step_breakdown_html(step: StepRecord, baseline: RunTrace | None = None, *,
                        source: Source = IN_PROCESS) -> str:
    """The step's parts in ms and share, beside the baseline's median decode step (by
    duration, among those with an anatomy)."""
    timed = sorted((s for s in (baseline.steps if baseline else []) if s.kind == DECODE
                    and s.anatomy is not None), key=lambda s: s.duration_s)
    ref = timed[(len(timed) - 1) // 2] if timed else None
    if step.anatomy is None and source == SERVER:
        return why_html(STEP_ANATOMY, "speclens-anatomy", "div")
    if step.anatomy is None:
        why = NOT_TIMED_STEP if ref is not None else BEFORE_ANATOMY
        return f'<div class="speclens-anatomy"><em>{escape(why)}</em></div>'

    mine = group_seconds(step.anatomy, step.duration_s)
    theirs = group_seconds(ref.anatomy, ref.duration_s) if ref and ref.anatomy else None
    head = f"<th>part</th><th>step {int(step.index)} ({escape(step.kind)}), ms</th><th>share</th>"
    total = f"<td><b>step</b></td><td><b>{step.duration_s * 1e3:.2f}</b></td><td></td>"
    if theirs is not None and ref is not None:
        head += f"<th>baseline decode step {int(ref.index)}, ms</th>"
        total += f"<td><b>{ref.duration_s * 1e3:.2f}</b></td>"
    rows = [f'<tr data-part="{escape(label)}"><td>{escape(label)}</td><td>{s * 1e3:.2f}</td>'
            + (f"<td>{s / step.duration_s:.0%}</td>" if step.duration_s > 0 else "<td>\u2014</td>")
            + (f"<td>{theirs[i][1] * 1e3:.2f}</td>" if theirs is not None else "") + "</tr>"
            for i, (label, s) in enumerate(mine)]
    n = step.anatomy.num_drafter_forwards
    forwards = f"<p>The drafter ran {int(n)} forward passes in this step.</p>" if n else ""
    return (f'<div class="speclens-anatomy"><style>{_CSS}</style><table><tr>{head}</tr>'
            f'{"".join(rows)}<tr>{total}</tr></table>{forwards}</div>')


def costs_table_html(speculative: RunTrace, baseline: RunTrace | None) -> str:
    """The medians table: what a decode step (the baseline's) and a verify step cost, part by part."""
    if not has_anatomy(speculative):
        return f'<div class="speclens-anatomy"><em>{escape(BEFORE_ANATOMY)}</em></div>'
    return costs_html(kind_costs([baseline] if baseline else [], [speculative]))


def costs_html(c: KindCosts, caption: str = "median per step") -> str:
    """Medians per step kind as a table (``space.judge.costs.cost_rows``)."""
    body = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in cost_rows(c))
    return (f'<div class="speclens-anatomy" data-anatomy="medians"><style>{_CSS}</style>'
            f"<table><tr><th>{escape(caption)}</th><th></th></tr>{body}</table></div>")
