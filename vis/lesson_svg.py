"""The lesson's timeline as inline SVG (plotly.js alone is 4.8 MB): vis/timeline.py's lanes
and colours, each step's timed parts in a band under its bar; speculative bars carry
``data-step`` (the script marks the current one), baseline bars ``data-base-step``."""
from __future__ import annotations

import html
import math

from space.common.paths import asset
from space.records.trace import DECODE, PREFILL, VERIFY, RunTrace, StepRecord
from vis.anatomy import GROUPS, OTHER_COLOR, OTHER_LABEL, group_seconds, has_anatomy
from vis.timeline import KIND_STYLE

WIDTH = 1000.0     # viewBox units; the SVG scales to the page's width
LEFT = 96.0        # lane labels
RIGHT = 70.0       # the finish labels
TOP = 24.0
LANE_H = 34.0      # one lane: the step bar, and the anatomy band under it when timed
BAR_H = 18.0
PART_H = 10.0
AXIS_H = 34.0
KIND_CLASS = {PREFILL: "k-prefill", VERIFY: "k-verify", DECODE: "k-decode"}
# vis.anatomy.GROUPS as classes p0..p4, "other" as p-other
PART_CLASS = {part: f"p{i}" for i, (_, parts, _, _) in enumerate(GROUPS) for part in parts}

SVG_CSS = "\n".join(
    [f".lesson-tl .{cls}{{fill:{KIND_STYLE[kind]['color']}}}" for kind, cls in KIND_CLASS.items()]
    + [".lesson-tl .k-other{fill:#999999}",
       f".lesson-tl .p-other{{fill:{OTHER_COLOR}}}"]
    + [f".lesson-tl .p{i}{{fill:{color}}}" for i, (_, _, color, _) in enumerate(GROUPS)]
    # the rules that no constant here decides
    + asset(__file__, "lesson_svg.css").splitlines())


def _nice_step(span_ms: float) -> float:
    """A tick spacing of 1, 2 or 5 times a power of ten: about 4 to 8 ticks.

        >>> _nice_step(1234.0), _nice_step(0.07)
        (200.0, 0.01)
    """
    if span_ms <= 0:
        return 1.0
    raw = span_ms / 8
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if raw <= m * power * (1 + 1e-9))


def _step_title(step: StepRecord) -> str:
    ms = step.duration_s * 1e3
    words = f"engine step {int(step.index)} \u00b7 {step.kind} \u00b7 {ms:.2f} ms"
    if step.kind == VERIFY:
        words += (f" \u00b7 {step.num_draft_tokens} drafts, {step.num_accepted_tokens} accepted,"
                  f" {len(step.emitted_token_ids)} emitted")
    elif step.emitted_token_ids:
        words += f" \u00b7 {len(step.emitted_token_ids)} emitted"
    return words


def _parts(step: StepRecord, x_of, y: float) -> list[str]:
    """The step's timed parts as rects in the band under its bar; "other" fills the band."""
    if step.anatomy is None:
        return []
    x0, x1 = x_of(step.start_s), x_of(step.end_s)
    out = [f'<rect class="p-other" x="{x0:.2f}" y="{y:.1f}" width="{max(x1 - x0, 0.3):.2f}" '
           f'height="{PART_H:.0f}"/>']
    for i in step.anatomy.intervals:
        a, b = x_of(i.start_s), x_of(i.end_s)
        if b - a < 0.05:  # under a twentieth of a unit: invisible, and bytes
            continue
        cls = PART_CLASS.get(i.part, "p-other")
        out.append(f'<rect class="{cls}" x="{a:.2f}" y="{y:.1f}" width="{b - a:.2f}" '
                   f'height="{PART_H:.0f}"/>')
    return out


def _lane(name: str, run: RunTrace, row: int, scale: float) -> list[str]:
    y = TOP + row * LANE_H
    attr = "data-step" if name == "speculative" else "data-base-step"

    def x_of(t_s: float) -> float:
        return LEFT + (t_s - run.arrival_s) * 1e3 * scale

    out = [f'<text x="{LEFT - 6:.0f}" y="{y + BAR_H - 5:.1f}" text-anchor="end">{name}</text>']
    for s in run.steps:
        x0, x1 = x_of(s.start_s), x_of(s.end_s)
        cls = KIND_CLASS.get(s.kind, "k-other")
        out.append(f'<rect class="st {cls}" x="{x0:.2f}" y="{y:.1f}" '
                   f'width="{max(x1 - x0, 0.3):.2f}" height="{BAR_H:.0f}" {attr}="{int(s.index)}">'
                   f"<title>{html.escape(_step_title(s))}</title></rect>")
        out.extend(_parts(s, x_of, y + BAR_H + 2))
    end = x_of(run.finish_s)
    return out + [f'<line class="finish" x1="{end:.2f}" x2="{end:.2f}" y1="{y - 4:.1f}" '
                  f'y2="{y + BAR_H + 4:.1f}"/>',
                  f'<text x="{end + 4:.2f}" y="{y + BAR_H - 5:.1f}">{run.e2e_s * 1e3:,.0f} ms</text>']


def _axis(span_ms: float, scale: float, y: float) -> list[str]:
    step = _nice_step(span_ms)
    out = [f'<line class="axis" x1="{LEFT:.0f}" x2="{LEFT + span_ms * scale:.2f}" '
           f'y1="{y:.1f}" y2="{y:.1f}"/>']
    n = int(span_ms / step + 1e-9)
    for i in range(n + 1):
        x = LEFT + i * step * scale
        out.append(f'<line class="axis" x1="{x:.2f}" x2="{x:.2f}" y1="{y:.1f}" y2="{y + 4:.1f}"/>')
        out.append(f'<text x="{x:.2f}" y="{y + 15:.1f}" text-anchor="middle">{i * step:g}</text>')
    out.append(f'<text x="{LEFT + span_ms * scale / 2:.1f}" y="{y + 29:.1f}" '
               'text-anchor="middle">time since arrival (ms)</text>')
    return out


def legend_html(anatomy: bool) -> str:
    """What the colours mean, as HTML swatches beside the SVG."""
    kinds = [(KIND_STYLE[k]["color"], k) for k in (PREFILL, VERIFY, DECODE)]
    parts = [(color, label) for label, _, color, _ in GROUPS] + [(OTHER_COLOR, OTHER_LABEL)]
    items = [("step kind", kinds)] + ([("part of the step (band under each bar)", parts)]
                                      if anatomy else [])
    return "".join(
        f'<p class="tl-legend"><b>{html.escape(head)}:</b> '
        + "".join(f'<span class="sw"><svg width="12" height="12" aria-hidden="true">'
                  f'<rect width="12" height="12" fill="{color}"/></svg> '
                  f"{html.escape(label)}</span>" for color, label in entries) + "</p>"
        for head, entries in items)


def timeline_svg(spec: RunTrace, baseline: RunTrace | None = None) -> str:
    """Both runs' engine steps as inline SVG; with a step anatomy, each step's parts under it."""
    lanes = [("speculative", spec)] + ([("baseline", baseline)] if baseline is not None else [])
    span_ms = max((run.e2e_s * 1e3 for _, run in lanes), default=0.0) or 1.0
    scale = (WIDTH - LEFT - RIGHT) / span_ms
    height = TOP + LANE_H * len(lanes) + AXIS_H
    # the band over the current step, at the axis' start: the script moves it
    body = [f'<rect id="tl-band" class="tl-band" x="{LEFT - 1:.2f}" y="{TOP - 8:.0f}" '
            f'width="3.00" height="{LANE_H * len(lanes):.1f}"/>']
    for row, (name, run) in enumerate(lanes):
        body.extend(_lane(name, run, row, scale))
    body.extend(_axis(span_ms, scale, TOP + LANE_H * len(lanes)))
    anatomy = any(has_anatomy(run) for _, run in lanes)
    label = ("Timeline: each engine step of the speculative run"
             + (" and of the baseline" if baseline is not None else "") + ", in ms since arrival")
    return (f'<figure class="lesson-tl"><svg viewBox="0 0 {WIDTH:.0f} {height:.0f}" '
            f'role="img" aria-label="{html.escape(label)}" preserveAspectRatio="xMinYMin meet">'
            f'{"".join(body)}</svg><figcaption>{legend_html(anatomy)}</figcaption></figure>')


def step_parts_words(step: StepRecord) -> str:
    """Where one step's time went, in words: 'forward 9.00 ms (75%), ...' ("" when untimed)."""
    if step.anatomy is None or step.duration_s <= 0:
        return ""
    return ", ".join(f"{label} {s * 1e3:.2f} ms ({s / step.duration_s:.0%})"
                     for label, s in group_seconds(step.anatomy, step.duration_s) if s > 0)
