"""Why the target kept or rejected each draft, in words and bars, from the target views
of an explained run; runs without them get ``None`` or empty output here."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from space.common.paths import asset
from space.records.target_view import TargetView
from space.records.trace import ACCEPTED, CORRECTION, UNUSED, VERIFY, RunTrace, StepRecord
from vis.acceptance import empty_figure
from vis.safe import plot_text
from vis.server_notes import TARGET_VIEW, from_server, plot_lines, why_html

ACCEPTED_COLOR = "#009E73"   # the token view's accepted
REJECTED_COLOR = "#D55E00"   # the token view's rejected

CHART_CSS = asset(__file__, "top5.css")


def pct(p: float) -> str:
    """'81%', '7%', '0.3%', '<0.1%': whole percents unless that would read 0."""
    if p >= 0.01 or p == 0:
        return f"{p:.0%}"
    return f"{p:.1%}" if p >= 0.001 else "<0.1%"


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def views_by_pos(step: StepRecord) -> dict[int, TargetView]:
    return {v.draft_pos: v for v in step.target_views}


def rejected_view(step: StepRecord) -> TargetView | None:
    if step.kind != VERIFY or step.target_token_kind != CORRECTION:
        return None
    return views_by_pos(step).get(step.num_accepted_tokens)


def chosen_token(step: StepRecord) -> int | None:
    """The correction: the target's own token at the first rejected draft."""
    if step.target_token_kind != CORRECTION or len(step.emitted_token_ids) <= step.num_accepted_tokens:
        return None
    return step.emitted_token_ids[step.num_accepted_tokens]


def prob_of(view: TargetView, token_id: int) -> float | None:
    if token_id == view.draft_token_id:
        return view.draft_prob
    return next((p for t, p in zip(view.top_token_ids, view.top_probs, strict=False) if t == token_id), None)


def sampled(run: RunTrace) -> bool:
    return run.explanation is not None and run.explanation.sampled


def token_repr(run: RunTrace, token_id: int) -> str:
    """The token's text quoted so whitespace shows: ' years', '\\n'."""
    return repr(run.token_str(token_id))


def _rule_words(view: TargetView, accepted: bool) -> str:
    a = view.acceptance_prob()
    q = "unknown" if view.draft_q is None else f"{view.draft_q:g}"
    rule = "n/a" if a is None else pct(a)
    return (f" Rule: p = {view.draft_prob:.3f}, q = {q} (drafts are greedy), accept with "
            f"probability min(1, p/q) = {rule}; it was {'accepted' if accepted else 'rejected'}.")


def explain_sentence(run: RunTrace, step: StepRecord) -> str | None:
    """The step from the target's side in plain words (None without target views), e.g.
    "The target agreed with the first 2 drafts; at the 3rd it gave 'rows' only 7%..."."""
    if step.kind != VERIFY or not step.target_views:
        return None
    views, na = views_by_pos(step), step.num_accepted_tokens
    agreed = [views[j] for j in range(na) if j in views]
    shares = ", ".join(pct(v.draft_prob) for v in agreed)
    rejected = rejected_view(step)
    if rejected is None:
        which = "the draft" if na == 1 else f"all {na} drafts"
        tail = f" (it gave {'them' if na > 1 else 'it'} {shares})" if agreed else ""
        text = f"The target agreed with {which}{tail}."
        if sampled(run) and agreed:
            text += _rule_words(agreed[-1], True)
        return text
    head = ("The target disagreed with the first draft: it" if na == 0 else
            f"The target agreed with the first {'draft' if na == 1 else f'{na} drafts'} "
            f"({shares}); at the {ordinal(na + 1)} it")
    chose, chosen = "", chosen_token(step)
    if chosen is not None:
        p = prob_of(rejected, chosen)
        chose = f" and chose {token_repr(run, chosen)} ({pct(p) if p is not None else 'outside its top 5'})"
    text = f"{head} gave {token_repr(run, rejected.draft_token_id)} only {pct(rejected.draft_prob)}{chose}."
    if sampled(run):
        text += _rule_words(rejected, False)
    return text


def draft_reason(run: RunTrace, step: StepRecord, j: int) -> str:
    """Why draft ``j`` (0-based) of a verify step was kept or dropped, in plain text, e.g.
    "dropped: the target gave it 7% and put ',' (81%) in its place"."""
    fate = step.draft_fates()[j]
    view = views_by_pos(step).get(j)
    na = step.num_accepted_tokens
    a = view.acceptance_prob() if view is not None else None
    rule = f"probability min(1, p/q) = {'n/a' if a is None else pct(a)}"
    if fate == ACCEPTED:
        if view is None:
            return "kept: the target agreed with it"
        if sampled(run):
            return f"kept: the target gave it {pct(view.draft_prob)}; a draft is accepted with {rule}"
        return f"kept: the target's likeliest token too ({pct(view.draft_prob)})"
    if fate == UNUSED:
        reason = f" (finish reason: {run.finish_reason})" if run.finish_reason else ""
        return f"unused: the output ended before it{reason}"
    if j > na:
        return (f"dropped: it came after the rejected {ordinal(na + 1)} draft "
                f"{token_repr(run, step.draft_token_ids[na])}, so the target never checked it")
    chosen = chosen_token(step)
    put = f" and put {token_repr(run, chosen)}" if chosen is not None else ""
    if view is None:
        return f"dropped: the target disagreed{put} in its place"
    p = prob_of(view, chosen) if chosen is not None else None
    share = f" ({pct(p)})" if p is not None else (" (outside its top 5)" if chosen is not None
                                                  else "")
    if sampled(run):
        return (f"dropped: the target gave it {pct(view.draft_prob)}, accepted only with {rule}, "
                f"and this time not{put}{share} in its place")
    return f"dropped: the target gave it {pct(view.draft_prob)}{put}{share} in its place"


def _bar_row(run: RunTrace, token_id: int, p: float, role: str) -> str:
    text = html.escape(token_repr(run, token_id))
    return (f'<div class="t5-row" data-role="{html.escape(role or "other")}" '
            f'data-token="{int(token_id)}" title="id {int(token_id)}">'
            f'<span class="t5-tok">{text}</span>'
            f'<span class="t5-bar"><span class="t5-fill" style="display:block;'
            f'width:{max(p, 0.0) * 100:.1f}%"></span></span>'
            f'<span class="t5-pct">{html.escape(pct(p))}</span><span>{role.replace(" ", ", ")}</span></div>')


def top5_chart_html(run: RunTrace, step: StepRecord) -> str:
    """The target's top 5 at the step's first rejected draft, drafted and chosen marked
    (the drafted token below the five when not among them); a server run's verify step
    says why it has none."""
    view = rejected_view(step)
    if view is None:
        server = from_server(run) and step.kind == VERIFY and step.num_draft_tokens
        return why_html(TARGET_VIEW, "speclens-why") if server else ""
    chosen = chosen_token(step)
    rows = [_bar_row(run, t, p, " ".join(r for r, hit in (("drafted", t == view.draft_token_id),
                                                          ("chosen", t == chosen)) if hit))
            for t, p in zip(view.top_token_ids, view.top_probs, strict=False)]
    if view.draft_token_id not in view.top_token_ids:
        rows.append('<div class="t5-gap">\u22ee</div>')
        rows.append(_bar_row(run, view.draft_token_id, view.draft_prob, "drafted"))
    pos = ordinal(view.draft_pos + 1)
    return (f'<div class="speclens-top5" data-step="{int(step.index)}"><style>{CHART_CSS}</style>'
            f"<p><b>What the target wanted at the {html.escape(pos)} draft</b> "
            f"(its top {len(view.top_token_ids)}):</p>{''.join(rows)}</div>")


def draft_probability_figure(run: RunTrace) -> go.Figure:
    """The target's probability of every verified draft, a strip per outcome."""
    groups: dict[str, list[tuple[float, str]]] = {"accepted": [], "rejected": []}
    for s in run.steps:
        for v in s.target_views:
            outcome = "accepted" if v.draft_pos < s.num_accepted_tokens else "rejected"
            label = plot_text(f"step {int(s.index)}: {run.token_str(v.draft_token_id)!r}")
            groups[outcome].append((v.draft_prob, label))
    title = "The target's probability of each verified draft"
    if not any(groups.values()):
        why = plot_lines(TARGET_VIEW) if from_server(run) else "no target views: run with explain on"
        return empty_figure(title, why, 260, 14)
    fig = go.Figure()
    for name, color in (("accepted", ACCEPTED_COLOR), ("rejected", REJECTED_COLOR)):
        pts = groups[name]
        fig.add_trace(go.Box(
            x=[p for p, _ in pts], name=f"{name} ({len(pts)})", orientation="h",
            boxpoints="all", jitter=0.5, pointpos=0, fillcolor="rgba(0,0,0,0)",
            line={"color": "rgba(0,0,0,0)"}, marker={"color": color, "size": 7},
            text=[t for _, t in pts], hovertemplate="%{text}<br>p = %{x:.1%}<extra></extra>"))
    fig.update_layout(title={"text": title}, height=260, showlegend=False,
                      margin={"l": 10, "r": 10, "t": 50, "b": 40},
                      xaxis={"title": {"text": "target probability of the drafted token"},
                             "range": [-0.02, 1.02], "tickformat": ".0%"})
    return fig


def hover_note(run: RunTrace, step: StepRecord, draft_pos: int | None,
               is_correction: bool = False) -> str | None:
    """Hover text for a draft token (0-based ``draft_pos``) or a step's correction, e.g.
    "target: 'rows' 81% · drafted ' rows' 7% · top 5: 'rows' 81%, ..."."""
    if is_correction:
        view, target = rejected_view(step), chosen_token(step)
    else:
        view = views_by_pos(step).get(draft_pos) if draft_pos is not None else None
        target = view.chosen_token_id if view else None
        if view and draft_pos == step.num_accepted_tokens:  # rejected: the target's own token
            target = chosen_token(step) or target
    if view is None or target is None:
        return None
    p_target = prob_of(view, target)
    tops = ", ".join(f"{token_repr(run, t)} {pct(p)}"
                     for t, p in zip(view.top_token_ids, view.top_probs, strict=False))
    return (f"target: {token_repr(run, target)} {pct(p_target) if p_target is not None else '?'} \u00b7 "
            f"drafted {token_repr(run, view.draft_token_id)} {pct(view.draft_prob)} \u00b7 top "
            f"{len(view.top_token_ids)}: {tops}")
