"""Lessons' records, and what a lesson may contain (vis/lesson.py).

``views_compare()`` is the views' explained run (every kind of token) beside its
baseline, with a verdict; ``problems(page)`` lists the markup in a lesson that
a visitor's text could have made.

Explained comparisons of any length, built without an engine (for lesson sizes):

``explained_compare(n_tokens)`` is what a page run with "Explain" on records,
as large as such a run gets: an ngram run (k=4) of random acceptances beside a
baseline of the same output, every verified draft with the target's top 5,
every step with a timed anatomy, and a checklist. Token texts are words of a
few letters, as a model's are.
"""
from __future__ import annotations

import random
from html.parser import HTMLParser

from space.judge.checklist import ChecklistInputs, evaluate
from space.records.target_view import Explanation, TargetView
from space.records.trace import CompareRecord, make_compare
from tests.helpers.checklists import GOOD_NGRAM
from tests.helpers.explained import make_explained
from tests.helpers.traces import (
    NGRAM,
    build_run,
    decode,
    prefill,
    step_anatomy,
    verify,
    views_baseline,
)
from vis.lesson import LESSON_JS

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
    spec, i = [prefill(output[0], ms=20.0)], 1
    views: list[list[TargetView]] = [[]]
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
        s.target_views = v
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


def views_compare() -> CompareRecord:
    """The views' explained run (every kind of token) beside its baseline, with a verdict."""
    cmp = make_compare([views_baseline()], [make_explained()])
    cmp.checklist = evaluate(ChecklistInputs(**GOOD_NGRAM))
    return cmp


class Page(HTMLParser):
    """Every element, attribute and text run of a page, as a browser would parse it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)

    def handle_endtag(self, tag):
        self._in_script = False


def parse(page: str) -> Page:
    p = Page()
    p.feed(page)
    p.close()
    return p


# What the lesson itself writes; anything else came from a trace.
TAGS = {"html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "dl", "dt",
        "dd", "div", "main", "span", "p", "b", "em", "small", "button", "section", "aside", "ol",
        "ul", "li", "code", "meter", "mark", "table", "thead", "tbody", "tr", "th", "td", "figure",
        "figcaption", "svg", "rect", "line", "text", "footer", "script"}


def problems(page: str) -> list[str]:
    """Markup a visitor's text could have made: unknown elements, handlers, links, styles,
    a second script, a data-step that is not a number."""
    p = parse(page)
    found = [f"{len(p.scripts)} scripts"] if p.scripts != [LESSON_JS] else []
    for tag, attrs in p.tags:
        if tag not in TAGS:
            found.append(f"element <{tag}>")
        for name, value in attrs.items():
            if name.startswith("on") or name in ("href", "src", "srcdoc", "style", "autofocus",
                                                 "action", "formaction", "xlink:href"):
                found.append(f"attribute {name}={value!r} on <{tag}>")
            if name in ("data-step", "data-base-step", "data-out", "data-pass",
                        "data-note-step") and not (value or "").isdigit():
                found.append(f"{name}={value!r}")
    return found
