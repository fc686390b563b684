"""Nothing a visitor sends is written as markup: every view of a hostile record
(a payload in every free-text field, tests/hostile.py) is checked element by
element, and every plotly figure string by string. Pure, no server."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from space.observe.memory import EngineMemory, GiB, GpuMemory
from space.records.schema import TraceFormatError, load
from space.records.trace import CompareRecord
from space.runs import sweep
from space.ui import views
from space.ui.status import status_html
from tests.helpers.hostile import (
    CANARY,
    hostile_compare,
    hostile_trace,
    malformed_traces,
    markup_problems,
    payload,
    plot_problems,
)
from vis.memory import memory_figure, memory_html
from vis.sweep import sweep_figure


@pytest.fixture(scope="module")
def record() -> CompareRecord:
    rec = load(json.dumps(hostile_compare()))
    assert isinstance(rec, CompareRecord)
    return rec


def fragments(record) -> dict[str, str]:
    """Every HTML fragment the page shows for a record, the stepper at each step."""
    v = views.render(record)
    out = {"tokens": v.token_html, "compare": v.compare_html,
           "acceptance": v.acceptance_html, "checklist": v.checklist_html,
           "status": status_html(v.summary, "done")}
    first = views.step_view(record, 0)
    for pos in range(first.count):
        sv = views.step_view(record, pos)
        for name in ("title_html", "context_html", "drafts_html", "emitted_html"):
            out[f"step {pos} {name}"] = getattr(sv, name)
    return out


def test_the_checker_sees_unescaped_markup():
    """The check below can fail: the payload written raw is caught everywhere."""
    raw = payload("prompt")
    assert markup_problems(f"<p>{raw}</p>")
    assert markup_problems(f'<span title="{raw}">x</span>')
    assert markup_problems('<span data-step="1"><img src=x></span>')


def test_every_view_of_a_hostile_compare_escapes_it(record):
    shown = fragments(record)
    assert len(shown) > 10
    for name, fragment in shown.items():
        assert markup_problems(fragment) == [], name
    # The payloads are shown as text, not dropped: a reader sees what the file holds.
    assert "&lt;img src=x onerror=window.__pwned=3&gt;" in shown["tokens"]
    assert "window.__pwned=13" in shown["step 4 title_html"]  # the finish reason
    assert "window.__pwned=15" in shown["checklist"]
    assert "window.__pwned=2" in shown["compare"] or "differ" in shown["compare"]


def test_a_single_hostile_trace_and_the_live_view(record):
    run = load(json.dumps(hostile_trace()))
    for name, fragment in fragments(run).items():
        assert markup_problems(fragment) == [], name
    live = views.live_token_html(record.speculative.steps[:3], record.speculative.token_text)
    assert markup_problems(live) == [] and CANARY in live


def test_figures_carry_no_markup_from_the_file(record):
    v = views.render(record)
    for name in ("timeline", "per_position", "histogram"):
        assert plot_problems(getattr(v, name)) == [], name


def test_memory_and_sweep_figures_escape_their_labels():
    bad = payload("memory")
    engine = EngineMemory(bad, {"target": GiB, bad: GiB}, GiB, 0, 1024, 16)
    gpu = GpuMemory(0, bad, 8 * GiB, GiB, 7 * GiB, None)
    fig, table = memory_figure([engine], gpu, None, None), memory_html([engine], gpu, None, None)
    assert plot_problems(fig) == [] and plot_problems(memory_figure([engine], gpu, None, 1)) == []
    assert markup_problems(table) == []
    table = pd.DataFrame({"variable": "k", "value": [1, 2], "speedup": [1.2, 0.9],
                          "speedup_low": [1.1, 0.8], "speedup_high": [1.3, 1.0],
                          "acceptance_rate": [0.5, 0.4], "mean_acceptance_length": [1.5, 1.4],
                          "throughput_speedup": [1.1, 0.9],
                          "verdict": [payload("sweep"), None]}, columns=sweep.COLUMNS)
    result = sweep.SweepResult("w", "k", table, crossover=1.5, gain_vanishes_at=2)
    assert plot_problems(sweep_figure(result, title=payload("sweep"))) == []


def test_status_box_escapes_message_and_kind():
    bad = payload("status")
    assert markup_problems(status_html(bad, bad)) == []


@pytest.mark.parametrize("name,text,expected", malformed_traces(),
                         ids=[m[0] for m in malformed_traces()])
def test_malformed_files_get_one_line(name, text, expected):
    with pytest.raises(TraceFormatError) as err:
        load(text)
    message = str(err.value)
    assert expected in message and "\n" not in message and len(message) < 500
    assert markup_problems(status_html(f"{name}: {message}", "error")) == []


def test_views_fail_closed_on_a_record_that_skipped_the_schema():
    """Defence in depth: records built in Python skip ``load``'s checks. An index
    that is not a number is refused where it is written, never put in an attribute,
    and a kind the views do not know reaches plotly escaped."""
    run = load(json.dumps(hostile_trace()))
    run.steps[1].index = payload("status")
    with pytest.raises(ValueError):
        views.render(run)
    run = load(json.dumps(hostile_trace()))
    run.steps[1].kind = payload("status")
    assert plot_problems(views.render(run).timeline) == []
