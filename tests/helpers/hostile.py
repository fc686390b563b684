"""Hostile input shared by the escaping tests (unit, API and browser).

Every payload carries a canary: script that sets ``window.__pwned`` to a number
naming the field it came from (or opens an alert). Written unescaped into the
page, each would run: in element text, in an attribute ("> breaks out), after
a closing textarea/style, in an iframe, through Gradio's HTML template
(``${...}``) or Handlebars (``{{...}}``). A test that finds the canary unset
and no dialog opened has shown that nothing the visitor sent ran as code.

``hostile_compare()`` is a valid compare record (it passes the schema) with a
payload in every free-text field; ``malformed_traces()`` are files the schema
must refuse with one line.
"""
from __future__ import annotations

import copy
import json
from html.parser import HTMLParser

from space.judge.checklist import ChecklistInputs, evaluate
from space.records.run import RunConfig
from space.records.trace import (
    BONUS,
    CORRECTION,
    DECODE,
    PREFILL,
    VERIFY,
    RunTrace,
    StepRecord,
    make_compare,
)

CANARY = "__pwned"

# Field -> canary number, so a failure names the field whose payload ran.
FIELDS = {
    "prompt": 1, "text": 2, "token_text": 3, "config.model": 4, "config.model_path": 5,
    "config.method": 6, "config.draft_model": 7, "config.draft_path": 8, "config.dtype": 9,
    "config.device": 10, "speculative_config.method": 11, "speculative_config.k": 12,
    "finish_reason": 13, "check.detail": 15, "check.unit": 16,
    "check.value": 17, "check.threshold": 18, "baseline.token_text": 19, "prompt.run": 20,
    "memory": 21, "sweep": 22, "status": 23,
}


def payloads(n: int) -> list[str]:
    """Markup that runs ``window.__pwned = n`` (or alert(n)) wherever it is not escaped."""
    js = f"window.{CANARY}={n}"
    return [
        f"<img src=x onerror={js}>",
        f'"><img src=x onerror={js}>',
        f"'><svg onload={js}>",
        f"</textarea></style><details open ontoggle={js}>",
        f"</span></div><script>{js}</script><input autofocus onfocus={js}>",
        f'<iframe srcdoc="<script>parent.{CANARY}={n}</script>"></iframe>',
        f"<a href=javascript:{js}>link</a>",
        "${" + js + "}",                                  # a JS template literal
        "{{constructor.constructor('" + js + "')()}}",    # Handlebars
        f"<img src=x onerror=alert({n})>",                # a dialog, if it ran
    ]


def payload(field: str) -> str:
    return "".join(payloads(FIELDS[field]))


def _step(i, kind, t, sched, drafts=(), na=0, emitted=(), target=None, offset=0):
    return StepRecord(i, kind, t, t + 0.01, sched, list(drafts), na, list(emitted), target,
                      offset)


def _runs() -> tuple[RunTrace, RunTrace]:
    """A speculative run with every kind of token (a correction, a bonus, a decode
    step, a step cut by max_tokens, so the finish reason is shown) and a baseline
    whose output differs at token 2 (the divergence view)."""
    steps = [_step(0, PREFILL, 0.00, 3, emitted=[10]),
             _step(1, VERIFY, 0.01, 4, [11, 12, 13], 1, [11, 20], CORRECTION, 1),
             _step(2, VERIFY, 0.02, 3, [21, 22], 2, [21, 22, 23], BONUS, 3),
             _step(3, DECODE, 0.03, 1, emitted=[24], offset=6),
             _step(4, VERIFY, 0.04, 4, [25, 26, 27], 3, [25, 26], None, 7)]
    out = [10, 11, 20, 21, 22, 23, 24, 25, 26]
    spec = RunTrace(config=RunConfig(), prompt="", prompt_token_ids=[1, 2, 3], output_token_ids=out,
                    text="", arrival_s=0.0, first_token_s=0.01, finish_s=0.05,
                    finish_reason="length", steps=steps)
    base_out = [10, 11, 99, 98]
    base_steps = [_step(i, PREFILL if i == 0 else DECODE, 0.01 * i, 3 if i == 0 else 1,
                        emitted=[t], offset=i) for i, t in enumerate(base_out)]
    base = RunTrace(config=RunConfig(), prompt="", prompt_token_ids=[1, 2, 3], output_token_ids=base_out,
                    text="", arrival_s=0.0, first_token_s=0.01, finish_s=0.04,
                    finish_reason="length", steps=base_steps)
    return spec, base


def clean_compare() -> dict:
    """The compare record above as its JSON dict, with a checklist, no payloads."""
    spec, base = _runs()
    cmp = make_compare([base], [spec])
    cmp.checklist = evaluate(ChecklistInputs(method="ngram", k=3, speedup_median=1.5,
                                             speedup_spread=(1.4, 1.6)))
    return json.loads(json.dumps(cmp.to_dict()))


def _hostile_run(run: dict, token_field: str) -> None:
    run["prompt"] = "Rename x. " + payload("prompt")
    run["text"] = payload("text")
    run["finish_reason"] = payload("finish_reason")
    ids = {t for s in run["steps"] for t in s["emitted_token_ids"] + s["draft_token_ids"]}
    run["token_text"] = {str(t): f" t{t}" + payload(token_field) for t in sorted(ids)}
    for key in ("model", "model_path", "method", "draft_model", "draft_path", "dtype",
                "device"):
        run["config"][key] = payload(f"config.{key}")
    run["config"]["speculative_config"] = {
        "method": payload("speculative_config.method"),
        "num_speculative_tokens": payload("speculative_config.k")}


def hostile_compare() -> dict:
    """A compare record that passes the schema, with a payload in every free-text field."""
    d = clean_compare()
    _hostile_run(d["speculative"], "token_text")
    _hostile_run(d["baseline"], "baseline.token_text")
    for check in d["checklist"]["checks"]:  # names are a fixed set: the schema checks them
        check.update(detail=payload("check.detail"), unit=payload("check.unit"),
                     value=payload("check.value"), threshold=payload("check.threshold"))
    return d


def hostile_trace() -> dict:
    """The speculative run alone (a ``python -m space trace --json`` file)."""
    return copy.deepcopy(hostile_compare()["speculative"])


def malformed_traces() -> list[tuple[str, str, str]]:
    """(name, file text, what the one-line message must say) for files the
    schema must refuse; each carries a payload where a type check should stop it."""
    bad = payload("status")
    out = []
    d = clean_compare()
    d["speculative"]["steps"][0]["index"] = bad
    out.append(("index.json", json.dumps(d), "speculative.steps[0].index must be an integer"))
    run = clean_compare()["speculative"]
    run["steps"][1]["kind"] = bad
    out.append(("kind.json", json.dumps(run), "steps[1].kind must be one of"))
    run = clean_compare()["speculative"]
    run["token_text"] = {bad: "x"}
    out.append(("token-key.json", json.dumps(run), "token_text key"))
    run = clean_compare()["speculative"]
    run["steps"][2]["start_s"] = float("inf")
    out.append(("infinite.json", json.dumps(run), "steps[2].start_s must be a finite number"))
    run = clean_compare()["speculative"]
    run["token_text"]["10"] = "\ud800" + bad  # parses, but is not Unicode text
    out.append(("surrogate.json", json.dumps(run), "lone surrogate"))
    out.append(("markup.json", bad, "not valid JSON"))
    out.append(("nested.json", "[" * 100_000 + "]" * 100_000, "not a SpecLens trace"))
    return out


class MarkupCheck(HTMLParser):
    """What a browser would build from an HTML fragment: every element and
    attribute. ``problems`` lists anything a visitor's text could have made."""

    TAGS = {"div", "span", "p", "b", "em", "small", "br", "style", "table", "thead",
            "tbody", "tr", "th", "td", "code"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.TAGS:
            self.problems.append(f"element <{tag}>")
        for name, value in attrs:
            if name.startswith("on") or name in ("href", "src", "srcdoc", "style", "autofocus"):
                self.problems.append(f"attribute {name}={value!r} on <{tag}>")
            elif name in ("data-step", "data-out") and not (value or "").isdigit():
                self.problems.append(f"{name}={value!r} is not a number")


def markup_problems(fragment: str) -> list[str]:
    check = MarkupCheck()
    check.feed(fragment)
    check.close()
    return check.problems


def plot_problems(fig) -> list[str]:
    """Strings in a plotly figure that plotly would draw as markup from a visitor
    (an ``<a href>``, an ``<img>``, ...): only our own <b>, <br>, <extra> may appear."""
    allowed = ("<b>", "</b>", "<br>", "<extra>", "</extra>")
    found = []

    def walk(value, path):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{path}.{k}")
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")
        elif isinstance(value, str):
            rest = value
            for tag in allowed:
                rest = rest.replace(tag, "")
            if "<" in rest:
                found.append(f"{path}: {value[:80]!r}")

    walk(fig.to_plotly_json(), "fig")
    return found
