"""Token view: the output as tokens, each marked with the way its step made it (its
status), by colour and by decoration. Rejected drafts, not in the output, are shown
struck through where the target turned them down: just before its correction."""
from __future__ import annotations

import html
from dataclasses import dataclass

from space.common.paths import asset
from space.records.trace import (
    ACCEPTED,
    BONUS,
    CORRECTION,
    DECODE,
    MERGED,
    PREFILL,
    REJECTED,
    UNREPORTED_DRAFTS,
    UNUSED,
    VERIFY,
    RunTrace,
    StepRecord,
    chunk_groups,
    tokens_certain,
)
from vis.explain import hover_note
from vis.server_notes import REJECTED_IDS, why_html

# step kinds, target token kinds and draft fates (the stepper alone shows UNUSED)
STATUSES = (PREFILL, ACCEPTED, REJECTED, CORRECTION, BONUS, DECODE)

STATUS_LABELS = {
    PREFILL: "prefill: first token, from reading the prompt",
    ACCEPTED: "accepted draft",
    REJECTED: "rejected draft (not in the output)",
    CORRECTION: "correction: the target's token in place of a rejected draft",
    BONUS: "bonus: the target's extra token after all drafts were accepted",
    DECODE: "decode: nothing was proposed; one token from the target alone",
    MERGED: "merged: the server sent several steps in one chunk; which emitted this "
            "token it does not say",
}

# a token's place in its step, for its hover text ({k}: the step's drafts)
PLACE_WORDS = {CORRECTION: "replaces a rejected draft of {k}", BONUS: "after all {k} drafts",
               MERGED: "arrived with other steps in one chunk"}

NEWLINE_GLYPH = "\u21b5"  # ↵, drawn before each real line break
EMPTY_GLYPH = "\u2205"    # ∅, so a token with empty text still has a visible box
CONTAINER_CLASS = "speclens-tokens"

# Scoped under the container class; Okabe-Ito colours, translucent tints so the text
# colour stays inherited in light and dark themes.
TOKEN_CSS = asset(__file__, "tokens.css")


@dataclass(frozen=True)
class TokenEntry:
    """One token as the views show it."""

    status: str                # one of STATUSES (or UNUSED in the stepper)
    token_id: int
    step: int                  # StepRecord.index of the step that produced it
    draft_pos: int | None      # 1-based position among the step's drafts; None for target tokens
    num_draft_tokens: int      # drafts verified in that step (k)
    output_index: int | None   # index in run.output_token_ids; None for rejected drafts


def draft_entries(step: StepRecord) -> list[TokenEntry]:
    """Every draft of the step with its fate (``StepRecord.draft_fates``)."""
    k = step.num_draft_tokens
    return [TokenEntry(fate, d, step.index, j + 1, k, None)
            for j, (d, fate) in enumerate(zip(step.draft_token_ids, step.draft_fates(), strict=True))]


def step_entries(step: StepRecord, output_offset: int, unplaced: bool = False) -> list[TokenEntry]:
    """The tokens of one step in display order: exactly ``step.emitted_token_ids`` (a
    step cut by max_tokens/EOS emits accepted drafts only), the rejected drafts just
    before the correction, only when there is one. E.g. drafts [a, b, c, d], 1
    accepted, emitted [a, X] -> accepted a, rejected b, c, d, correction X. All MERGED when
    ``unplaced`` (one of ``unplaced_steps``)."""
    if unplaced or step.kind != VERIFY:  # all of one status (MERGED: shown, not given a kind)
        status = MERGED if unplaced else PREFILL if step.kind == PREFILL else DECODE
        return [TokenEntry(status, t, step.index, None, 0, output_offset + j)
                for j, t in enumerate(step.emitted_token_ids)]
    fates, k = step.draft_fates(), step.num_draft_tokens
    # rejected only where the trace says correction: never guessed on a cut step
    rejected = [e for e in draft_entries(step) if e.status == REJECTED]
    # the target's own token: the trace's word, else the engine's rule (a file may leave
    # it out); a verify step without drafts shows as decode
    own = step.target_token_kind or step.own_token_kind() or DECODE
    out: list[TokenEntry] = []
    for j, tid in enumerate(step.emitted_token_ids):
        if j < len(fates) and fates[j] == ACCEPTED:  # fates: one per draft id
            out.append(TokenEntry(ACCEPTED, tid, step.index, j + 1, k, output_offset + j))
            continue
        out.extend(rejected)
        out.append(TokenEntry(own, tid, step.index, None, k, output_offset + j))
    return out


def unplaced_steps(run: RunTrace) -> set[int]:
    """Steps of a merged chunk whose tokens' steps the server does not tell."""
    return {s.index for g in chunk_groups(run.steps) if not tokens_certain(g) for s in g}


def token_entries(run: RunTrace) -> list[TokenEntry]:
    """All tokens of a run in display order; those of ``unplaced_steps`` MERGED."""
    out: list[TokenEntry] = []
    offset = 0
    unplaced = unplaced_steps(run)
    for step in run.steps:
        out.extend(step_entries(step, offset, step.index in unplaced))
        offset += len(step.emitted_token_ids)
    return out


def text_html(text: str) -> str:
    """Escaped model text, each newline shown as ↵ (unselectable: copying yields the
    model's text) before a real line break."""
    if text == "":
        return f'<span class="tok-glyph" aria-hidden="true">{EMPTY_GLYPH}</span>'
    mark = f'<span class="tok-glyph" aria-hidden="true">{NEWLINE_GLYPH}</span>\n'
    return mark.join(html.escape(part, quote=False) for part in text.split("\n"))


def entry_title(run: RunTrace, e: TokenEntry, note: str | None = None) -> str:
    """Hover text: step, status, place, id and text, then ``note`` (the target's view)."""
    parts = [f"step {e.step}", e.status]
    if e.draft_pos is not None:
        parts.append(f"draft {e.draft_pos}/{e.num_draft_tokens}")
    elif e.status in PLACE_WORDS:
        parts.append(PLACE_WORDS[e.status].format(k=e.num_draft_tokens))
    if e.output_index is not None:
        parts.append(f"output #{e.output_index}")
    parts += [f"id {e.token_id}", repr(run.token_str(e.token_id))]
    title = " \u00b7 ".join(parts)
    return f"{title}\n{note}" if note else title


def token_span(run: RunTrace, e: TokenEntry, highlight: bool = False,
               note: str | None = None) -> str:
    """One token's span; ``note`` goes into its title and marks it ``data-explained``.
    Every value escaped or an int: a replayed file is a visitor's."""
    status = html.escape(e.status, quote=True)
    cls = f"tok tok-{status}" + (" tok-diverge" if highlight else "")
    attrs = [f'class="{cls}"', f'data-status="{status}"', f'data-step="{int(e.step)}"']
    if e.output_index is not None:
        attrs.append(f'data-out="{int(e.output_index)}"')
    if highlight:
        attrs.append('data-diverge="1"')
    if note:
        attrs.append('data-explained="1"')
    attrs.append(f'title="{html.escape(entry_title(run, e, note), quote=True)}"')
    return f"<span {' '.join(attrs)}>{text_html(run.token_str(e.token_id))}</span>"


def unreported_span(step: int, n: int, fate: str = REJECTED) -> str:
    """Where a server run's drafts without ids were: ×n. ``fate``: REJECTED, or UNUSED
    (the stepper's drafts after a max_tokens/EOS cut)."""
    fate = html.escape(fate, quote=True)
    title = html.escape(f"step {int(step)} \u00b7 {int(n)} {fate} draft(s): "
                        f"{UNREPORTED_DRAFTS}", quote=True)
    return (f'<span class="tok tok-{fate} tok-unreported" data-step="{int(step)}" '
            f'title="{title}">\u00d7{int(n)}</span>')


def wrap(body: str, extra_class: str = "", header: str = "") -> str:
    """Rendered tokens in the container, with its own (scoped) ``<style>`` for a gr.HTML."""
    body_class = f"tok-body {extra_class}".strip()
    return (f'<div class="{CONTAINER_CLASS}"><style>{TOKEN_CSS}</style>{header}'
            f'<div class="{body_class}">{body}</div></div>')


def draft_chips_html(run: RunTrace, step: StepRecord, unplaced: bool = False) -> str:
    """The step's drafts as chips, the target's view in each hover text; counts if ``unplaced``."""
    if unplaced and step.num_draft_tokens:
        return wrap(f"<em>{int(step.num_draft_tokens)} drafts, {int(step.num_accepted_tokens)} "
                    f"accepted: {UNREPORTED_DRAFTS}</em>")
    if not step.num_draft_tokens:
        return wrap("<em>no drafts in this step</em>")
    spans = [token_span(run, e, note=hover_note(run, step, (e.draft_pos or 1) - 1))
             for e in draft_entries(step)]
    n = step.num_unreported_draft_tokens  # a server run's drafts without ids: one mark
    rejected = step.target_token_kind == CORRECTION  # else cut by max_tokens/EOS: unused
    if n:
        spans.append(unreported_span(step.index, n, REJECTED if rejected else UNUSED))
    return wrap("".join(spans), "tok-chips") + (why_html(REJECTED_IDS, "tok-note") if n and rejected else "")


def legend_html(merged: bool = False) -> str:
    """One sample per status, as in the token view; ``data-legend``, not ``data-status``,
    so counting ``data-status`` counts tokens only."""
    items = "".join(f'<span data-legend="{s}" title="{html.escape(STATUS_LABELS[s])}">'
                    f'<span class="tok tok-{s}">{s}</span></span>'
                    for s in STATUSES + ((MERGED,) if merged else ()))
    return f'<div class="tok-legend">{items}</div>'


def token_view_html(run: RunTrace, highlight_index: int | None = None,
                    show_legend: bool = True) -> str:
    """The run's output as styled tokens; ``highlight_index`` outlines that output token
    (``tok-diverge``), or the output's end when it equals the length."""
    notes = {}  # (step, status, draft_pos) -> the target's view of that draft or correction
    for step in run.steps:
        for e in step_entries(step, 0) if step.target_views else ():
            pos = e.draft_pos - 1 if e.draft_pos is not None else None
            note = hover_note(run, step, pos, e.status == CORRECTION)  # None: no view for it
            if note:
                notes[(e.step, e.status, e.draft_pos)] = note
    unreported = {s.index: s.num_unreported_draft_tokens for s in run.steps
                  if s.num_unreported_draft_tokens}
    spans = []
    entries = token_entries(run)
    for e in entries:
        if e.status == CORRECTION and unreported.get(e.step):
            spans.append(unreported_span(e.step, unreported[e.step]))
        spans.append(token_span(run, e, e.output_index is not None
                                and e.output_index == highlight_index,
                                notes.get((e.step, e.status, e.draft_pos))))
    if highlight_index is not None and highlight_index >= len(run.output_token_ids):
        spans.append('<span class="tok-end" data-diverge="1" title="the output ends here">'
                     '<span class="tok-glyph">\u27c2 end</span></span>')
    if not run.output_token_ids:
        spans.append("<em>no output tokens</em>")
    merged = any(e.status == MERGED for e in entries)
    legend = legend_html(merged) if show_legend else ""
    if show_legend and unreported:
        legend += why_html(REJECTED_IDS, "tok-note")  # beside the ×n marks
    return wrap("".join(spans), header=legend)
