"""The lesson's step-through: per step that emits tokens, what it did, the teacher's note,
every draft with its fate, why and the target's top 5 at it, what it emitted, and where
its time went."""
from __future__ import annotations

import html

from space.records.target_view import TargetView
from space.records.trace import ACCEPTED, CORRECTION, REJECTED, UNUSED, RunTrace, StepRecord
from vis.explain import chosen_token, draft_reason, explain_sentence, pct, token_repr, views_by_pos
from vis.lesson_svg import step_parts_words
from vis.server_notes import REJECTED_IDS, SENTENCES
from vis.stepper import step_sentence
from vis.tokens import CONTAINER_CLASS, draft_entries, step_entries, token_span, unreported_span

FATE_WORDS = {ACCEPTED: "kept", REJECTED: "dropped", UNUSED: "unused"}


def esc(value: object) -> str:
    """Text for HTML, quotes included (safe in attributes too)."""
    return html.escape(str(value), quote=True)


def top5_html(run: RunTrace, step: StepRecord, view: TargetView) -> str:
    """The target's top 5 at a verified draft: the drafted token marked kept or dropped
    (below the five when not among them), the target's own token chosen; ``<meter>``
    bars, so nothing from the trace becomes a style."""
    kept = view.draft_pos < step.num_accepted_tokens
    chosen = chosen_token(step) if view.draft_pos == step.num_accepted_tokens else None

    def row(token_id: int, p: float) -> str:
        roles = [r for r, hit in (("drafted-kept" if kept else "drafted-dropped",
                                   token_id == view.draft_token_id),
                                  ("chosen", token_id == chosen)) if hit]
        words = ", ".join(r.replace("-", ", ") for r in roles)
        return (f'<li data-role="{esc(" ".join(roles) or "other")}" data-token="{int(token_id)}">'
                f"<code>{esc(token_repr(run, token_id))}</code>"
                f'<meter min="0" max="1" value="{min(max(p, 0.0), 1.0):.4f}"></meter>'
                f"<span>{esc(pct(p))}</span><span>{esc(words)}</span></li>")

    rows = [row(t, p) for t, p in zip(view.top_token_ids, view.top_probs, strict=False)]
    if view.draft_token_id not in view.top_token_ids:
        rows.append("<li>\u22ee</li>" + row(view.draft_token_id, view.draft_prob))
    label = f"the target's top {len(view.top_token_ids)}"
    return f'<ol class="top5" aria-label="{esc(label)}">{"".join(rows)}</ol>'


def drafts_html(run: RunTrace, step: StepRecord) -> str:
    """Every draft of a verify step: the token, its fate and why, the target's top 5."""
    if not step.num_draft_tokens:
        return ""
    views = views_by_pos(step)
    rows = []
    for j, e in enumerate(draft_entries(step)):
        view, fate = views.get(j), e.status
        rows.append(f'<li class="lesson-draft" data-draft="{j + 1}" data-fate="{esc(fate)}">'
                    f'<span class="{CONTAINER_CLASS}">{token_span(run, e)}</span> '
                    f'<b class="fate-{esc(fate)}">{esc(FATE_WORDS.get(fate, fate))}</b> '
                    f"{esc(draft_reason(run, step, j).split(': ', 1)[-1])}"
                    f"{top5_html(run, step, view) if view else ''}</li>")
    n = step.num_unreported_draft_tokens  # a server's drafts without ids: counted only
    if n:
        fate = REJECTED if step.target_token_kind == CORRECTION else UNUSED
        rows.append(f'<li class="lesson-draft" data-fate="{esc(fate)}">'
                    f'<span class="{CONTAINER_CLASS}">{unreported_span(step.index, n, fate)}'
                    f'</span> <b class="fate-{esc(fate)}">{esc(FATE_WORDS[fate])}</b> '
                    f"{esc(SENTENCES[REJECTED_IDS])}</li>")
    return f'<ol class="lesson-drafts">{"".join(rows)}</ol>'


def step_section(run: RunTrace, i: int, position: int, count: int, note: str) -> str:
    """The section of ``run.steps[i]``, pass ``position`` (0-based) of ``count``."""
    step = run.steps[i]
    n = int(step.index)
    why = explain_sentence(run, step)
    parts = step_parts_words(step)
    drafts = drafts_html(run, step)
    emitted = "".join(token_span(run, e) for e in step_entries(step, step.output_offset)
                      if e.status != REJECTED) or "<em>nothing</em>"
    # a teacher's note is plain text: escaped; line breaks kept by the CSS
    note = (f'<aside class="lesson-note" data-note-step="{n}"><b>Teacher\'s note:</b> '
            f"{esc(note)}</aside>") if note else ""
    return (f'<section class="lesson-step" id="step-{n}" data-step="{n}" '
            f'data-pass="{position + 1}" aria-label="Pass {position + 1} of {count}, '
            f'engine step {n}">'
            f"<h3>Pass {position + 1} of {count} \u00b7 engine step {n} \u00b7 "
            f"{esc(step.kind)}</h3>"
            f'<p class="lesson-sentence">{esc(step_sentence(run, i))}</p>'
            + (f'<p class="lesson-why">{esc(why)}</p>' if why else "")
            + note + (f"<p><b>Drafts</b></p>{drafts}" if drafts else "")
            + f'<p><b>Emitted by this step</b></p><div class="{CONTAINER_CLASS}">'
            f'<div class="tok-body tok-chips">{emitted}</div></div>'
            + (f'<p class="lesson-parts">Where this step\'s time went: {esc(parts)}</p>'
               if parts else "")
            + "</section>")
