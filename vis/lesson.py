"""A lesson: one run as one self-contained HTML file, to step through anywhere
(docs/lesson.md). Its Content-Security-Policy allows only its own script, by hash, so
even a string that escaped its escaping could not run or fetch. The script
(vis/assets/lesson.js) marks the current step ``aria-current="step"`` in its section,
tokens and timeline."""
from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path
from string import Template

from space.common.paths import asset
from space.records.notes import StepNotes
from space.records.run import SERVER
from space.records.trace import CompareRecord, RunTrace
from vis.anatomy import costs_table_html, has_anatomy
from vis.checklist import checklist_html, format_value
from vis.compare import compare_table
from vis.lesson_steps import esc, step_section
from vis.lesson_svg import SVG_CSS, timeline_svg
from vis.stepper import emitting_step_indices
from vis.text import dtype_words, na
from vis.tokens import TOKEN_CSS, text_html, token_view_html

# above the page's 1,025 steps; 2,000 explained steps are about 16 MB (docs/lesson.md)
MAX_LESSON_STEPS = 2_048
NOT_EXPLAINED = ("This run was not explained: the trace holds no target probabilities "
                 "(run with --explain, or with \u201cExplain each verification\u201d on in the "
                 "page), so the drafts below show their fate without the target's top 5.")
# one line: the template's line breaks are for reading it only
PAGE = Template(asset(__file__, "lesson.html").replace("\n", ""))
LESSON_CSS = asset(__file__, "lesson.css")
LESSON_JS = asset(__file__, "lesson.js")


def script_hash(script: str) -> str:
    """The CSP source that allows exactly this inline script: 'sha256-<base64>'.

        >>> script_hash("")
        "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
    """
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


class LessonError(ValueError):
    """A record a lesson cannot be made of; the message is one line."""


@dataclass(frozen=True)
class LessonInfo:
    """What the trace does not say about itself: when, and from where."""

    exported_utc: str                 # "2026-12-04 16:10 UTC"
    measured_utc: str | None = None   # the history knows; a file not
    source: str = ""                  # "run history #12", "compare.json"


def _model(name: str | None) -> str:
    return Path(name).name if name else "\u2014"


def meta_rows(run: RunTrace, info: LessonInfo) -> list[tuple[str, str]]:
    c, r = run.config, run.request
    machine = (f"a vLLM {c.vllm_version or '?'} server (a server does not report its hardware)"
               if c.source == SERVER else f"{c.cpu_model or 'CPU not recorded'} ({c.device})")
    draft = (_model(c.draft_path or c.draft_model) if c.draft_model
             else "none: n-gram lookup in the text so far" if c.method == "ngram" else "\u2014")
    sampling = ", ".join(f"{name} {value}" for name, value in (
        ("temperature", r.temperature), ("top-p", r.top_p), ("seed", r.seed),
        ("max tokens", r.max_tokens)) if value is not None) or "not recorded"
    return [
        ("machine", machine),
        ("model pair", f"target {_model(c.model_path or c.model)}, draft {draft}"),
        ("method", c.method or "baseline (no speculation)"),
        ("k (drafts per step)", str(int(c.k))),
        ("dtype", dtype_words(c) or "not recorded"),
        ("vLLM", c.vllm_version or "not recorded"),
        ("sampling", sampling),
        ("run", f"{len(run.output_token_ids)} output tokens in {len(run.steps)} engine steps; "
                f"acceptance {na(run.acceptance_rate, '.1%')}, mean acceptance "
                f"length {na(run.mean_acceptance_length, '.2f')}"),
        ("measured", info.measured_utc or "not recorded in the trace"),
        ("exported", info.exported_utc + (f" from {info.source}" if info.source else "")),
    ]


def _ratio(value: float) -> str:
    return "\u2014" if value != value else f"{value:.2f}"  # NaN: a baseline figure of 0


def _baseline_html(record: RunTrace | CompareRecord) -> str:
    if not isinstance(record, CompareRecord):
        return ('<div class="lesson-baseline"><h2>Baseline</h2><p>This is a single speculative '
                "run: there is no baseline run to compare with.</p></div>")
    base, d = record.baseline, record.first_divergence
    text = text_html(base.text)
    if d is not None and not record.outputs_identical:  # the baseline's text from d marked
        head = "".join(base.token_str(t) for t in base.output_token_ids[:d])
        rest = "".join(base.token_str(t) for t in base.output_token_ids[d:])
        text = (f"{text_html(head) if head else ''}<mark data-diverge=\"{int(d)}\" title=\"from "
                f'here on the outputs differ">{text_html(rest) if rest else "(end)"}</mark>')
    rows = "".join(f"<tr><td>{esc(name)}</td><td>{row.baseline:,.2f}</td>"
                   f"<td>{row.speculative:,.2f}</td><td>{_ratio(row.ratio)}</td></tr>"
                   for name, row in compare_table(record).iterrows())
    same = ("identical" if record.outputs_identical else
            f"different from output token {int(record.first_divergence or 0)}")
    return ('<div class="lesson-baseline" id="lesson-baseline"><h2>Baseline beside it</h2>'
            f"<p><b>{record.speedup:.2f}x</b> TPOT speedup, <b>{record.e2e_speedup:.2f}x</b> end "
            f"to end (medians over the measured runs); outputs {same}.</p>"
            "<table><thead><tr><th></th><th>baseline</th><th>speculative</th>"
            f"<th>ratio</th></tr></thead><tbody>{rows}</tbody></table>"
            f"<p><b>The baseline's output</b> (one token per engine "
            f'step)</p><div class="base-text">{text}</div></div>')


def lesson_html(record: RunTrace | CompareRecord, notes: StepNotes | None = None,
                info: LessonInfo | None = None) -> str:
    """The lesson file's HTML for ``record``, with ``notes`` at their steps."""
    run, baseline = ((record.speculative, record.baseline) if isinstance(record, CompareRecord)
                     else (record, None))
    if (n := len(run.steps)) > MAX_LESSON_STEPS:
        raise LessonError(f"too long for a lesson: {n:,} engine steps; a lesson draws every "
                          f"step, at most {MAX_LESSON_STEPS:,}")
    notes = notes or StepNotes()
    info = info or LessonInfo(exported_utc="date not given")
    title = " ".join(run.prompt.split())[:80] or "a run"
    explained = any(s.target_views for s in run.steps)
    passes = emitting_step_indices(run)
    checklist = "<p>This record has no checklist: the verdict needs a comparison with a baseline.</p>"
    if isinstance(record, CompareRecord) and record.checklist is not None:
        lines = "".join(f"<li>{esc(c.name)}: {esc(format_value(c.value, c.unit))}</li>"
                        for c in record.checklist.checks if c.decisive)
        checklist = (checklist_html(record.checklist)
                     + (f"<p>Decided by:</p><ul>{lines}</ul>" if lines else ""))
    anatomy = (f"<p><b>Median step costs</b></p>{costs_table_html(run, baseline)}"
               if has_anatomy(run) else "")
    meta = "".join(f'<div data-meta="{esc(k)}"><dt>{esc(k)}</dt><dd>{esc(v)}</dd></div>'
                   for k, v in meta_rows(run, info))
    csp = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
           f"script-src {script_hash(LESSON_JS)}; base-uri 'none'; form-action 'none'")
    page = PAGE.substitute(
        csp=esc(csp), title=esc(title), css=LESSON_CSS + TOKEN_CSS + SVG_CSS,
        meta=f'<dl class="lesson-meta">{meta}</dl>', prompt=text_html(run.prompt),
        # the lesson has the token view's rules once, in its head
        tokens=token_view_html(run).replace(f"<style>{TOKEN_CSS}</style>", ""),
        passes=len(passes), steps="".join(step_section(run, i, p, len(passes), notes.get(run.steps[i].index))
                                          for p, i in enumerate(passes)),
        unexplained="" if explained else f'<p class="lesson-unexplained">{esc(NOT_EXPLAINED)}</p>',
        timeline=timeline_svg(run, baseline), anatomy=anatomy, baseline=_baseline_html(record),
        checklist=checklist, exported=esc(info.exported_utc), js=LESSON_JS)
    return f"<!DOCTYPE html>\n{page}\n"
