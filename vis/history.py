"""The History tab's views: the saved runs, and two comparisons side by side. Every value
a visitor could have typed (a prompt in a title, a login name) is escaped."""
from __future__ import annotations

import html
import math
import time
from collections.abc import Callable, Sequence

import pandas as pd
import plotly.graph_objects as go

from space.common.paths import asset
from space.records.history import RunRow
from space.records.trace import CompareRecord, RunTrace
from vis import timeline

CSS = f"<style>{asset(__file__, 'history.css')}</style>"

SIDE_METRICS: list[tuple[str, Callable[[CompareRecord], object]]] = [
    ("method", lambda c: c.speculative.config.method),
    ("k", lambda c: c.speculative.config.k or None),
    ("speedup (TPOT)", lambda c: round(c.speedup, 3)),
    ("speculative TPOT ms", lambda c: round(c.speculative.tpot_s * 1e3, 2)),
    ("baseline TPOT ms", lambda c: round(c.baseline.tpot_s * 1e3, 2)),
    ("speculative TTFT ms", lambda c: round(c.speculative.ttft_s * 1e3, 1)),
    ("speculative tokens/s", lambda c: round(c.speculative.tokens_per_s, 1)),
    ("acceptance rate", lambda c: _round(c.speculative.acceptance_rate)),
    ("mean acceptance length", lambda c: _round(c.speculative.mean_acceptance_length)),
    ("per-position acceptance", lambda c: ", ".join(
        f"{x:.2f}" for x in c.speculative.per_position_acceptance) or "none"),
    ("output tokens", lambda c: len(c.speculative.output_token_ids)),
    ("outputs identical", lambda c: "yes" if c.outputs_identical else "no"),
    ("verdict", lambda c: c.checklist.verdict if c.checklist else "none"),
]


def _round(x: float | None) -> float | str:
    return "none" if x is None else round(x, 3)


def when(created_s: float) -> str:
    """UTC, to the minute.

        >>> when(0)
        '1970-01-01 00:00 UTC'
    """
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(created_s))


def who(user: str | None) -> str:
    return user if user else "a visitor (no logins)"


def _cell(value: object, numeric: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        text = ""
    elif isinstance(value, float):
        text = f"{value:.2f}"
    else:
        text = str(value)
    cls = ' class="num"' if numeric else ""
    return f"<td{cls}>{html.escape(text)}</td>"


def history_table_html(rows: Sequence[RunRow]) -> str:
    """Saved runs, newest first, each with its ``?run=<id>`` link."""
    if not rows:
        return '<p class="speclens-history-empty">No saved runs match.</p>'
    head = "".join(f"<th>{h}</th>" for h in (
        "run", "when", "who", "kind", "model", "method", "k", "temp.", "verdict", "speedup",
        "what"))
    body = []
    for r in rows:
        rid = int(r.id)
        link = (f'<td><a href="?run={rid}" target="_blank" rel="noopener" '
                f'data-run="{rid}">#{rid}</a></td>')
        body.append(
            f'<tr data-run="{rid}">{link}{_cell(when(r.created_s))}{_cell(who(r.user))}'
            f"{_cell(r.kind)}{_cell(r.model)}{_cell(r.method)}{_cell(r.k, True)}"
            f"{_cell(r.temperature, True)}{_cell(r.verdict)}"
            f"{_cell(None if r.speedup is None else f'{r.speedup:.2f}x', True)}"
            f"{_cell(r.title)}</tr>")
    return (f'{CSS}<table class="speclens-history"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def side_by_side_table(a: CompareRecord, b: CompareRecord, label_a: str,
                       label_b: str) -> pd.DataFrame:
    """One row per figure, one column per run (both as text: mixed kinds)."""
    return pd.DataFrame([{"metric": name, label_a: str(read(a)), label_b: str(read(b))}
                         for name, read in SIDE_METRICS])


def side_by_side_timeline(a: CompareRecord, b: CompareRecord, label_a: str,
                          label_b: str) -> go.Figure:
    """Both comparisons' steps on one time axis: A's speculative and baseline lanes above B's."""
    lanes: list[tuple[str, RunTrace]] = [
        (f"{label_a} speculative", a.speculative), (f"{label_a} baseline", a.baseline),
        (f"{label_b} speculative", b.speculative), (f"{label_b} baseline", b.baseline)]
    fig = go.Figure(timeline.step_bars(lanes, merged=False))
    timeline._finish_marks(fig, lanes)
    return timeline.lay_out(fig, lanes, f"{label_a}: {a.speedup:.2f}x, {label_b}: {b.speedup:.2f}x "
                            "(baseline TPOT / speculative TPOT)")
