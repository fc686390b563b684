"""Acceptance: how much of what the proposer drafted the target kept (RunTrace's
figures, vLLM's definitions: docs/metrics.md)."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from space.records.counts import MAX_POSITIONS
from space.records.trace import VERIFY, RunTrace

BAR_COLOR = "#009E73"  # Okabe-Ito bluish green, the token view's "accepted"
NO_DRAFTS = "no drafts"
MARGIN = {"l": 10, "r": 10, "t": 50, "b": 40}


def acceptance_summary_html(run: RunTrace) -> str:
    """The rate, the mean acceptance length and their counts; vLLM's own beside them
    when vLLM counted drafts no proposer made."""
    if run.acceptance_rate is None:
        reason = ("the proposer found nothing to propose" if run.speculative
                  else "this run does not use speculative decoding")
        summary = (f"<p><b>{NO_DRAFTS.capitalize()}</b>: "
                   f"{html.escape(reason)}, so there is no acceptance rate.</p>")
    else:
        k = len(run.num_accepted_tokens_per_pos)  # the most drafts any verify step had
        summary = (f"<p>Acceptance rate <b>{run.acceptance_rate:.1%}</b>: {run.num_accepted_tokens} "
                   f"of {run.num_draft_tokens} drafted tokens accepted over {run.num_drafts} verify "
                   f"steps.<br>Mean acceptance length <b>{run.mean_acceptance_length:.2f}</b> tokens "
                   f"per verify step (at most {k + 1}: {k} drafts plus the target's own token).</p>")
    diff = run.draft_count_difference
    if diff is not None:
        # placeholders are never accepted: vLLM's rate has the same numerator
        vllm_rate = (f"{run.num_accepted_tokens / diff.vllm_num_draft_tokens:.1%}"
                     if diff.vllm_num_draft_tokens else "n/a")
        ours = f"{run.acceptance_rate:.1%}" if run.acceptance_rate is not None else "n/a"
        summary += ('<p class="speclens-vllm-difference" data-vllm-draft-tokens='
                    f'"{diff.vllm_num_draft_tokens}"><b>vLLM\'s own counters differ</b>: '
                    f"vLLM {diff.vllm_num_draft_tokens} drafted tokens over {diff.vllm_num_drafts} "
                    f"spec steps (acceptance rate {vllm_rate}); SpecLens {diff.num_draft_tokens} over "
                    f"{diff.num_drafts} verify steps ({ours}). {html.escape(diff.reason)}</p>")
    return f'<div class="speclens-acceptance">{summary}</div>'


def empty_figure(title: str, why: str = NO_DRAFTS, height: int = 300, size: int = 16) -> go.Figure:
    """No axes, ``why`` in their place."""
    fig = go.Figure()
    fig.add_annotation(text=why, showarrow=False, x=0.5, y=0.5,
                       xref="paper", yref="paper", font={"size": size})
    fig.update_layout(title={"text": title}, height=height,
                      xaxis={"visible": False}, yaxis={"visible": False})
    return fig


def per_position_figure(run: RunTrace) -> go.Figure:
    """One bar per draft position: fraction of verify steps that accepted it."""
    title = "Acceptance by draft position"
    fracs = run.per_position_acceptance
    if not fracs:
        return empty_figure(title)
    fig = go.Figure(go.Bar(
        x=list(range(1, len(fracs) + 1)), y=fracs, marker={"color": BAR_COLOR}, name="accepted",
        text=[f"{f:.0%}" for f in fracs], textposition="outside",
        customdata=run.num_accepted_tokens_per_pos,
        hovertemplate=("draft position %{x}: accepted in %{customdata} of "
                       f"{run.num_drafts} verify steps (%{{y:.1%}})<extra></extra>")))
    fig.update_layout(
        title={"text": f"{title} ({run.num_drafts} verify steps)"}, height=300, margin=MARGIN,
        xaxis={"title": {"text": "draft position"}, "dtick": 1},
        yaxis={"title": {"text": "accepted"}, "range": [0, 1.1], "tickformat": ".0%"})
    return fig


def accepted_histogram_figure(run: RunTrace) -> go.Figure:
    """Verify steps by accepted drafts; bars, not go.Histogram, so empty bins show as 0."""
    title = "Accepted drafts per verify step"
    if not run.num_drafts:
        return empty_figure(title)
    # counts[n]: verify steps that accepted exactly n drafts, n = 0..k (k at most
    # MAX_POSITIONS: a hostile file's 2**31 drafts would be a 16 GB list)
    verify = [s for s in run.steps if s.kind == VERIFY]
    k = min(max((s.num_draft_tokens for s in verify), default=0), MAX_POSITIONS)
    counts = [0] * (k + 1)
    for s in verify:
        counts[min(s.num_accepted_tokens, k)] += 1
    fig = go.Figure(go.Bar(
        x=list(range(k + 1)), y=counts, marker={"color": BAR_COLOR}, name="verify steps",
        text=counts, textposition="outside",
        hovertemplate="%{y} verify steps accepted %{x} drafts<extra></extra>"))
    mean_accepted = run.num_accepted_tokens / run.num_drafts
    fig.add_vline(x=mean_accepted, line={"dash": "dash", "width": 2, "color": "#444444"},
                  annotation_text=f"mean {mean_accepted:.2f}", annotation_position="top")
    fig.update_layout(
        title={"text": f"{title} ({run.num_drafts} steps; {k} = all drafts accepted)"},
        height=300, margin=MARGIN,
        xaxis={"title": {"text": "drafts accepted"}, "dtick": 1, "range": [-0.6, k + 0.6]},
        yaxis={"title": {"text": "verify steps"}, "range": [0, max(counts) * 1.2 + 0.5]})
    return fig
