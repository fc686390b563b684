"""Turn what the scheduler recorded into ``StepRecord``s (no vLLM import)."""
from __future__ import annotations

from space.records.trace import DECODE, PREFILL, VERIFY, StepKind, StepRecord


def build_steps(raws, times: list[tuple], first_index: int = 0) -> list[StepRecord]:
    """Join scheduler records with step times ``(start_s, end_s, propose_s[, anatomy])``.

    Example: drafts [12, 7, 9, 4], sampled [12, 30], kept [12, 30]
      -> VERIFY, num_accepted_tokens=1, emitted [12, 30], target_token_kind CORRECTION.
    When max_tokens or EOS stopped the request inside the step, ``kept`` is a
    prefix of ``sampled``; if the target's own token was cut, target_token_kind is None.
    """
    steps = []
    for i, (raw, step_times) in enumerate(zip(raws, times, strict=False)):
        t0, t1, propose_s = step_times[:3]
        drafts, sampled = raw.draft_token_ids, raw.sampled_token_ids
        kind: StepKind = (PREFILL if raw.num_computed_before < raw.num_prompt_tokens
                          else VERIFY if drafts else DECODE)
        # vLLM's count (scheduler.update_from_output): sampled - 1 (the target's own token),
        # on every step it verified slots, placeholders included (never accepted so far).
        verified = kind == VERIFY or raw.num_placeholder_drafts > 0
        step = StepRecord(
            index=first_index + i, kind=kind, start_s=t0, end_s=t1,
            num_scheduled_tokens=raw.num_scheduled_tokens, draft_token_ids=list(drafts),
            num_accepted_tokens=max(len(sampled) - 1, 0) if verified else 0,
            emitted_token_ids=list(raw.kept_token_ids), output_offset=raw.output_offset,
            propose_s=propose_s, num_placeholder_draft_tokens=raw.num_placeholder_drafts,
            placeholder_cause=raw.placeholder_cause,
            anatomy=step_times[3] if len(step_times) > 3 else None)
        step.target_token_kind = step.own_token_kind()
        steps.append(step)
    return steps


def token_texts(tokenizer, ids, cache: dict[int, str]) -> dict[int, str]:
    """Text of each token on its own (byte-level BPE pieces may be partial UTF-8); ids
    outside the vocabulary get none (``RunTrace.token_str`` shows ``<id>``).
    """
    size = len(tokenizer)
    for t in ids:
        if 0 <= t < size and t not in cache:
            cache[t] = tokenizer.decode([t], skip_special_tokens=False)
    return {t: cache[t] for t in ids if 0 <= t < size}
