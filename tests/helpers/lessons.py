"""Explained comparisons of any length, built without an engine (for lesson sizes).

``explained_compare(n_tokens)`` is what a page run with "Explain" on records,
as large as such a run gets: an ngram run (k=4) of random acceptances beside a
baseline of the same output, every verified draft with the target's top 5,
every step with a timed anatomy, and a checklist. Token texts are words of a
few letters, as a model's are.
"""
from __future__ import annotations

import random

from space.judge.checklist import ChecklistInputs, evaluate
from space.records.target_view import Explanation, TargetView
from space.records.trace import CompareRecord, make_compare
from tests.helpers.traces import NGRAM, build_run, decode, prefill, step_anatomy, verify

K = 4
WORDS = ("the", " value", " of", " x", " is", " returned", " when", " rows", " are", " empty",
         "\n", " def", " sum", "(", ")", ":", " 2", " years", " old", ",", ".", " and")


def _views(rnd: random.Random, drafts: list[int], accepted: int, correction: int | None,
           vocab: list[int]) -> list[TargetView]:
    """A view at each verified draft: the accepted ones and the first rejected one."""
    out = []
    for j in range(min(accepted + 1, len(drafts))):
        if j < accepted:  # greedy: the draft was the target's likeliest
            p = rnd.uniform(0.4, 0.99)
            others = rnd.sample([t for t in vocab if t != drafts[j]], 4)
            tops = [drafts[j], *others]
        else:             # rejected: the correction was the likeliest
            p = rnd.uniform(0.001, 0.2)
            others = rnd.sample([t for t in vocab if t not in (drafts[j], correction)], 3)
            tops = [correction if correction is not None else others[0], drafts[j], *others]
        if j < accepted:  # the draft first, then the rest in halves
            probs = [p] + [(1.0 - p) / 2 ** (i + 1) for i in range(4)]
        else:             # the correction first, the draft second, then smaller ones
            probs = [min(1.0 - p, 2 * p + 0.3), p] + [p / 2 ** (i + 1) for i in range(3)]
        out.append(TargetView(draft_pos=j, draft_token_id=drafts[j], draft_prob=p,
                              top_token_ids=tops[:5], top_probs=probs[:5]))
    return out


def explained_compare(n_tokens: int, seed: int = 0, anatomy: bool = True) -> CompareRecord:
    """An explained ngram comparison with ``n_tokens`` output tokens (see the module)."""
    rnd = random.Random(seed)
    vocab = list(range(1000, 1000 + len(WORDS) * 20))
    text = {t: WORDS[(t - 1000) % len(WORDS)] for t in vocab}
    output = [rnd.choice(vocab) for _ in range(n_tokens)]
    spec, views, i = [prefill(output[0], ms=20.0)], [None], 1
    while i < n_tokens:
        accepted = rnd.randrange(K + 1)
        take = output[i:i + accepted + 1]
        accepted = min(accepted, len(take))
        drafts = take[:accepted] + [rnd.choice(vocab) for _ in range(K - accepted)]
        correction = take[accepted] if accepted < len(take) and accepted < K else None
        spec.append(verify(drafts, accepted, take, ms=12.0))
        views.append(_views(rnd, drafts, accepted, correction, vocab))
        i += len(take)
    prompt = [rnd.choice(vocab) for _ in range(60)]
    base = build_run([prefill(output[0], ms=20.0)] + [decode(t, ms=9.0) for t in output[1:]],
                     prompt_ids=prompt, token_text=text)
    run = build_run(spec, prompt_ids=prompt, config={**NGRAM, "dtype": "float32",
                                                     "device": "cpu", "cpu_model": "a CPU"},
                    token_text=text)
    for s, v in zip(run.steps, views, strict=True):
        s.target_views = v or []
    run.explanation = Explanation(temperature=0.0, top_p=1.0, score_s=0.5,
                                  num_scored_tokens=len(prompt) + n_tokens)
    if anatomy:
        for s in base.steps:
            s.anatomy = step_anatomy(s)
        for s in run.steps:
            s.anatomy = step_anatomy(s, proposer_ms=0.5)
    cmp = make_compare([base], [run])
    cmp.checklist = evaluate(ChecklistInputs(method="ngram", k=K, speedup_median=cmp.speedup,
                                             speedup_spread=(cmp.speedup, cmp.speedup)))
    return cmp
