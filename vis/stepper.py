"""Stepper: the steps that emit tokens, one at a time, in plain words, for teaching."""
from __future__ import annotations

from space.records.trace import (
    BONUS,
    CORRECTION,
    DECODE,
    PREFILL,
    REJECTED,
    VERIFY,
    RunTrace,
    StepRecord,
    chunk_groups,
)
from vis.explain import explain_sentence, ordinal, token_repr, top5_chart_html
from vis.tokens import draft_chips_html, step_entries, text_html, token_span, unplaced_steps, wrap

PROMPT_TAIL_CHARS = 120   # the end of the prompt is what the next tokens continue
OUTPUT_TAIL_CHARS = 600   # keep late steps readable: show the recent output only


def emitting_step_indices(run: RunTrace) -> list[int]:
    """Indices into ``run.steps`` of the steps that emit tokens (not the prefill chunks
    before the last)."""
    return [i for i, s in enumerate(run.steps) if s.emitted_token_ids]


def _qlist(run: RunTrace, ids: list[int]) -> str:
    return ", ".join(token_repr(run, t) for t in ids)


def _tail(text: str, n: int) -> str:
    return text if len(text) <= n else "\u2026" + text[-n:]


def _prefill_words(run: RunTrace, i: int) -> str:
    step = run.steps[i]
    n = len(run.prompt_token_ids)
    chunks = [j for j, s in enumerate(run.steps) if s.kind == PREFILL]
    chunk = f"chunk {chunks.index(i) + 1} of {len(chunks)}"
    if not step.emitted_token_ids:
        return (f"the target read {step.num_scheduled_tokens} tokens of the {n}-token prompt "
                f"({chunk}); no token comes out until the whole prompt is read.")
    first = token_repr(run, step.emitted_token_ids[0])
    if len(chunks) == 1:
        return f"the target read the {n}-token prompt and produced its first token {first}."
    return (f"the target read the last {step.num_scheduled_tokens} tokens of the {n}-token "
            f"prompt ({chunk}) and produced its first token {first}.")


def _proposed(run: RunTrace, step: StepRecord) -> str:
    """'the draft proposed 4 tokens: ' and the drafts, those a server did not name counted."""
    k, n = step.num_draft_tokens, step.num_unreported_draft_tokens
    head = f"the draft proposed {k} token{'s' if k != 1 else ''}"
    if not n:
        return f"{head}: {_qlist(run, step.draft_token_ids)}. "
    if not step.draft_token_ids:
        return f"{head}, whose ids the server does not report. "
    return (f"{head}: {_qlist(run, step.draft_token_ids)} and {n} more whose ids the server "
            "does not report. ")


def _verify_words(run: RunTrace, step: StepRecord) -> str:
    k, na = step.num_draft_tokens, step.num_accepted_tokens
    drafts, emitted = step.draft_token_ids, step.emitted_token_ids
    head = _proposed(run, step)
    kind = step.target_token_kind
    if kind == BONUS:
        which = "the draft" if k == 1 else f"all {k} drafts"
        return head + (f"The target accepted {which} and added the bonus token "
                       f"{token_repr(run, emitted[-1])}.")
    if kind == CORRECTION and na < k:
        accepted = _qlist(run, drafts[:na]) if na else "no draft"
        target = token_repr(run, emitted[-1])
        if na >= len(drafts):  # a server run: the rejected drafts have no ids
            rejected = f"{k - na} rejected draft{'s are' if k - na != 1 else ' is'}"
            return head + (f"The target accepted {accepted}; at the {ordinal(na + 1)} draft the "
                           f"target wanted {target} instead, so the {rejected} discarded and "
                           f"{target} is emitted.")
        return head + (f"The target accepted {accepted}; at {token_repr(run, drafts[na])} "
                       f"the target wanted {target} instead, so {_qlist(run, drafts[na:])} "
                       f"{'is' if len(drafts) - na == 1 else 'are'} discarded and {target} is emitted.")
    # Cut by max_tokens/EOS: only accepted drafts made it into the output.
    accepted = _qlist(run, emitted) if emitted else "nothing"
    reason = f" (finish reason: {run.finish_reason})" if run.finish_reason else ""
    return head + (f"The target accepted {accepted}, and the output ended there{reason}, "
                   "so the rest of this step is dropped.")


def _merged_words(run: RunTrace, step: StepRecord) -> str:
    group = next(g for g in chunk_groups(run.steps) if step in g)
    counted = (f"a verify step ({step.num_draft_tokens} drafted, "
               f"{step.num_accepted_tokens} accepted, by the server's counts)"
               if step.kind == VERIFY else f"a {step.kind} step")
    return (f"Engine step {step.index}: {counted}. The server sent steps "
            f"{group[0].index}-{group[-1].index} in one chunk and does not say which of "
            "its tokens each emitted.")


def step_sentence(run: RunTrace, i: int) -> str:
    """``run.steps[i]`` in plain words (plain text: escape it for HTML)."""
    step = run.steps[i]
    head = f"Engine step {step.index}: "
    if step.kind == PREFILL:
        return head + _prefill_words(run, i)
    if step.kind == DECODE or not step.num_draft_tokens:
        tok = _qlist(run, step.emitted_token_ids) or "nothing"
        return head + f"the proposer found nothing to propose; the target decoded {tok} on its own."
    return head + _verify_words(run, step)


def describe_step(run: RunTrace, i: int) -> dict[str, object]:
    """Everything the stepper shows for ``run.steps[i]``; ``sentence`` and ``why`` are
    plain text (escape them for HTML); ``why`` and ``top5_html`` are the target's side of
    an explained run (a server run's ``top5_html`` says why it has none)."""
    step = run.steps[i]
    offset = sum(len(s.emitted_token_ids) for s in run.steps[:i])
    unplaced = step.index in unplaced_steps(run)
    emitted = step_entries(step, offset, unplaced)
    so_far = "".join(run.token_str(t) for t in run.output_token_ids[:offset])
    context = (f'<span class="ctx-prompt" title="prompt, {len(run.prompt_token_ids)} tokens (end '
               f'shown)">{text_html(_tail(run.prompt, PROMPT_TAIL_CHARS))}</span>'
               # a break and a label keep a prompt ending in ``` apart from an answer starting with ```
               '\n<span class="tok-glyph" title="the model\'s answer starts here">\u2192 answer: </span>'
               f'<span class="ctx-output">{text_html(_tail(so_far, OUTPUT_TAIL_CHARS))}</span>'
               '<span class="tok-glyph" title="this step continues here">\u258c</span>')
    return {
        "step_index": step.index,
        "kind": step.kind,
        "output_offset": offset,
        "context_html": wrap(context),
        "drafts_html": draft_chips_html(run, step, unplaced),
        "emitted_html": wrap("".join(token_span(run, e) for e in emitted if e.status != REJECTED)
                             or "<em>nothing emitted in this step</em>", "tok-chips"),
        "sentence": _merged_words(run, step) if unplaced else step_sentence(run, i),
        "why": explain_sentence(run, step),
        "top5_html": top5_chart_html(run, step),
    }

