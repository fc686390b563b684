"""What each panel shows for a record, through ``vis/`` (no gradio); pure but for
``write_exports``. A record is a ``CompareRecord`` or a ``RunTrace`` (a lone
speculative run: no baseline lane or comparison)."""
from __future__ import annotations

import dataclasses
import html
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from space.observe.memory import EngineReading
from space.records import hooks
from space.records.run import RunConfig
from space.records.trace import CompareRecord, RunTrace, StepRecord, dumps
from space.ui import datadir
from vis import text
from vis.acceptance import acceptance_summary_html, accepted_histogram_figure, per_position_figure
from vis.anatomy import costs_table_html, has_anatomy, step_breakdown_html
from vis.checklist import checklist_html
from vis.compare import STEP_COLUMNS, compare_html, compare_table, steps_dataframe
from vis.explain import draft_probability_figure
from vis.stepper import describe_step, emitting_step_indices
from vis.timeline import timeline_figure
from vis.tokens import token_view_html

Record = CompareRecord | RunTrace

NO_RECORD = "<p><em>Run a prompt, or open a saved trace, to see this view.</em></p>"
LIVE_PLACEHOLDER = ("<p><em>The speculative run's tokens appear here as they are "
                    "generated.</em></p>")
NO_VERDICT = ('<p class="speclens-no-verdict">Run a comparison to get a verdict: '
              "this record has no checklist.</p>")
NO_BASELINE = ("<p>This is a single speculative run (saved by <code>python -m space trace"
               "</code>): there is no baseline run to compare with.</p>")
# The token views draw a run's first steps only: the page's HTML grows with every
# token drawn. The stepper, the timeline and the CSV have every step.
TOKEN_VIEW_STEPS = 2000


def runs(record: Record) -> tuple[RunTrace, RunTrace | None]:
    """(speculative run, baseline run or None)."""
    if isinstance(record, CompareRecord):
        return record.speculative, record.baseline
    return record, None


@dataclass
class RecordViews:
    token_html: str
    compare_html: str
    compare_table: pd.DataFrame | None
    timeline: Any            # plotly Figure
    acceptance_html: str
    per_position: Any        # plotly Figure
    histogram: Any           # plotly Figure
    checklist_html: str
    summary: str             # one line of plain text for the status box
    draft_probs: Any = None  # plotly Figure: the target's p of each verified draft


def render(record: Record) -> RecordViews:
    run, baseline = runs(record)
    cmp = record if isinstance(record, CompareRecord) else None
    first = emitting_step_indices(run)[:1]  # the step-through opens on it
    return RecordViews(
        token_html=cut_note(run) + token_view_html(head(run)),
        compare_html=missing_hooks_html(run) + (_compare_html(cmp) if cmp is not None
                                                else NO_BASELINE),
        # the metric as a column, values rounded for reading
        compare_table=compare_table(cmp).reset_index().round(3) if cmp is not None else None,
        timeline=timeline_figure(run, baseline, run.steps[first[0]].index if first else None),
        acceptance_html=acceptance_summary_html(run),
        per_position=per_position_figure(run),
        histogram=accepted_histogram_figure(run),
        # the step anatomy's medians, beside the prediction line that uses them
        checklist_html=(checklist_html(cmp.checklist) if cmp is not None and cmp.checklist
                        else NO_VERDICT) + (costs_table_html(run, baseline) if has_anatomy(run) else ""),
        summary=text.summary(record),
        draft_probs=draft_probability_figure(run),
    )


def missing_hooks_html(run: RunTrace) -> str:
    """The tracing hooks that did not attach for this run, one line each ('' when all did)."""
    lines = hooks.missing_lines(run.config)
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return f'<div class="speclens-missing-hooks"><p><b>Not traced here</b></p><ul>{items}</ul></div>'


def head(run: RunTrace) -> RunTrace:
    if len(run.steps) <= TOKEN_VIEW_STEPS:
        return run
    steps = run.steps[:TOKEN_VIEW_STEPS]
    n_out = steps[-1].output_offset + len(steps[-1].emitted_token_ids)
    return dataclasses.replace(run, steps=steps, output_token_ids=run.output_token_ids[:n_out])


def cut_note(run: RunTrace) -> str:
    if len(run.steps) <= TOKEN_VIEW_STEPS:
        return ""
    return (f'<p class="speclens-cut" data-cut="{TOKEN_VIEW_STEPS}"><em>The first '
            f"{TOKEN_VIEW_STEPS:,} of {len(run.steps):,} engine steps are drawn here; the "
            "stepper, the timeline and the steps CSV have all of them.</em></p>")


def _compare_html(cmp: CompareRecord) -> str:
    """compare_html, whose token lanes (drawn when outputs differ) show the runs' heads."""
    longest = max(cmp.baseline, cmp.speculative, key=lambda r: len(r.steps))
    if cmp.outputs_identical or len(longest.steps) <= TOKEN_VIEW_STEPS:
        return compare_html(cmp)
    cut = dataclasses.replace(cmp, baseline=head(cmp.baseline), speculative=head(cmp.speculative))
    return cut_note(longest) + compare_html(cut)


def live_token_html(steps: list[StepRecord], texts: dict[int, str]) -> str:
    """The token view of the steps streamed so far (a partial run)."""
    out = [t for s in steps for t in s.emitted_token_ids]
    t0 = steps[0].start_s if steps else 0.0
    t1 = steps[-1].end_s if steps else 0.0
    return token_view_html(RunTrace(
        config=RunConfig(), prompt="", prompt_token_ids=[], output_token_ids=out, text="",
        arrival_s=t0, first_token_s=t1, finish_s=t1, finish_reason=None, steps=list(steps),
        token_text=dict(texts)))


@dataclass
class StepView:
    position: int      # 0-based among the emitting steps
    count: int         # emitting steps in the run
    title_html: str
    context_html: str
    drafts_html: str
    emitted_html: str
    step: int | None = None  # the engine step shown


NO_STEP = StepView(0, 1, NO_RECORD, "", "", "")  # the stepper without a record


def step_view(record: Record | None, position: int | float | None) -> StepView | None:
    """The stepper at ``position`` (clamped) among the run's emitting steps."""
    if record is None:
        return None
    run, baseline = runs(record)
    indices = emitting_step_indices(run)
    if not indices:
        return None
    pos = min(max(int(position or 0), 0), len(indices) - 1)
    d = describe_step(run, indices[pos])
    step = run.steps[indices[pos]]
    # The slider counts the passes that emit tokens; the sentence names the engine step.
    title = (f'<p class="speclens-step" data-step="{int(step.index)}" '
             f'data-kind="{html.escape(step.kind)}" data-pass="{pos + 1}" '
             f'data-count="{len(indices)}"><b>Pass {pos + 1} of {len(indices)}.'
             f'</b> {html.escape(str(d["sentence"]))}</p>')
    if d["why"]:  # an explained run: the target's side
        title += f'<p class="speclens-why">{html.escape(str(d["why"]))}</p>'
    title += str(d["top5_html"])  # its top 5 where it disagreed, or why a server run has none
    title += ('<div class="speclens-step-anatomy"><p><b>Where this step\'s time went</b></p>'
              f"{step_breakdown_html(step, baseline, source=run.config.source)}</div>")
    return StepView(pos, len(indices), title, str(d["context_html"]), str(d["drafts_html"]),
                    str(d["emitted_html"]), step.index)


def shown_step(record: Record | None, slider: Any) -> int | None:
    """The engine step the step-through shows at slider ``value`` (1-based)."""
    sv = step_view(record, int(slider or 1) - 1)
    return None if sv is None else sv.step


def position_of_step(record: Record | None, step_index: int) -> int | None:
    """The step-through position (0-based) showing engine step ``step_index``: that
    step, or the next one that emits tokens (a prefill chunk emits none)."""
    if record is None:
        return None
    run, _ = runs(record)
    indices = emitting_step_indices(run)
    later = (pos for pos, i in enumerate(indices) if run.steps[i].index >= step_index)
    return next(later, len(indices) - 1 if indices else None)


def steps_csv_frame(record: Record) -> pd.DataFrame:
    """steps_dataframe of each run, with a leading ``run`` column."""
    run, baseline = runs(record)
    frames = [("speculative", run)] + ([("baseline", baseline)] if baseline else [])
    return pd.concat([steps_dataframe(r).assign(run=name) for name, r in frames],
                     ignore_index=True)[["run"] + STEP_COLUMNS]


def write_exports(record: Record, source: str | Path | None = None) -> tuple[str, str]:
    """Trace JSON and steps CSV in a fresh folder of the visitor's session; returns
    their paths. ``source``: the file ``record`` was replayed from, copied as it is
    (writing a long trace anew takes most of a replay's time)."""
    folder = datadir.export_folder("speclens-")
    kind = "compare" if isinstance(record, CompareRecord) else "trace"
    json_path = folder / f"speclens-{kind}.json"
    if source is not None:
        shutil.copyfile(source, json_path)
    else:
        json_path.write_text(dumps(record))
    csv_path = folder / "speclens-steps.csv"
    steps_csv_frame(record).to_csv(csv_path, index=False)
    return str(json_path), str(csv_path)


def reading_note(reading: EngineReading, now: float | None = None) -> str:
    """Says when the engine figures are not a fresh reading, and how old they are."""
    age = reading.age_s(now)
    if reading.fresh:
        return ""
    if age is None:
        return ('<p class="speclens-reading" data-fresh="0"><em>The engines are busy (being '
                "built, or running); their memory shows here once they are free.</em></p>")
    return (f'<p class="speclens-reading" data-fresh="0" data-age-s="{age:.0f}"><em>Engine '
            f"figures from {age:.0f} s ago: a run holds the engines now; Refresh after it "
            "ends for a new reading.</em></p>")
