"""Token view: what a reader sees in the rendered HTML of views_run() (tests/helpers/traces.py)."""
from __future__ import annotations

import ast
import pathlib
from collections import Counter

from vis.tokens import STATUSES, legend_html, token_entries, token_view_html

# (status, text) in display order: rejected drafts sit right before their correction.
EXPECTED = [
    ("prefill", "He"),
    ("accepted", " is"), ("rejected", " 2"), ("rejected", " years"), ("rejected", " old"),
    ("correction", ","),
    ("accepted", "<b>"), ("accepted", " &"), ("accepted", "\n"), ("bonus", " ok"),
    ("rejected", "x"), ("correction", '"y'),
    ("decode", " fine"),
    ("accepted", "."), ("accepted", " end"),  # cut by max_tokens: no target token, '!' not shown
]


def test_tokens_in_display_order_with_rejected_before_correction(spec_trace, spans):
    got = [(s["data-status"], s["text"]) for s in spans(token_view_html(spec_trace))]
    assert got == EXPECTED


def test_status_counts(spec_trace, spans):
    counts = Counter(s["data-status"] for s in spans(token_view_html(spec_trace)))
    assert counts == {"prefill": 1, "accepted": 6, "rejected": 4, "correction": 2,
                      "bonus": 1, "decode": 1}


def test_output_tokens_spell_the_run_text(spec_trace, spans):
    shown = spans(token_view_html(spec_trace))
    assert "".join(s["text"] for s in shown if s["data-status"] != "rejected") == spec_trace.text
    outs = [int(s["data-out"]) for s in shown if s["data-status"] != "rejected"]
    assert outs == list(range(len(spec_trace.output_token_ids)))


def test_entries_match_output_ids(spec_trace):
    ids = [e.token_id for e in token_entries(spec_trace) if e.status != "rejected"]
    assert ids == spec_trace.output_token_ids


def test_model_text_is_escaped(spec_trace):
    html = token_view_html(spec_trace)
    assert "<b>" not in html  # the model's '<b>' must not become bold text
    assert "&lt;b&gt;" in html and " &amp;" in html
    # a quote inside a title attribute cannot end the attribute early
    assert '&#x27;&quot;y&#x27;' in html


def test_newline_shows_mark_then_real_break(spec_trace):
    html = token_view_html(spec_trace)
    assert '\u21b5</span>\n</span>' in html
    assert "white-space:pre-wrap" in html


def test_hover_gives_step_draft_position_id_and_repr(spec_trace, spans):
    shown = spans(token_view_html(spec_trace))
    years = next(s for s in shown if s["text"] == " years")
    assert years["data-step"] == "2"
    for part in ("step 2", "rejected", "draft 3/4", "id 13", "' years'"):
        assert part in years["title"]
    newline = next(s for s in shown if s["text"] == "\n")
    assert "'\\n'" in newline["title"] and "draft 3/3" in newline["title"]
    bonus = next(s for s in shown if s["data-status"] == "bonus")
    assert "after all 3 drafts" in bonus["title"]


def test_each_status_has_class_and_distinct_non_colour_cue(spec_trace, spans):
    html = token_view_html(spec_trace)
    for s in spans(html):
        assert f"tok-{s['data-status']}" in s["class"].split()
    assert "line-through" in html and "underline" in html and "dotted" in html
    assert '<style>' in html and 'class="speclens-tokens"' in html


def test_highlight_marks_one_output_token(spec_trace, spans):
    marked = [s for s in spans(token_view_html(spec_trace, highlight_index=7))
              if s.get("data-diverge") == "1"]
    assert len(marked) == 1 and marked[0]["data-out"] == "7" and "tok-diverge" in marked[0]["class"]


def test_highlight_past_the_end_marks_end_of_output(spec_trace, spans):
    html = token_view_html(spec_trace, highlight_index=len(spec_trace.output_token_ids))
    assert html.count('data-diverge="1"') == 1 and "tok-end" in html
    assert not any("data-diverge" in s for s in spans(html))


def test_legend_shows_every_status_without_counting_as_tokens(spec_trace, spans):
    legend = legend_html()
    for status in STATUSES:
        assert f'data-legend="{status}"' in legend and f"tok-{status}" in legend
    assert spans(legend) == []
    no_legend = token_view_html(spec_trace, show_legend=False)
    assert "data-legend" not in no_legend
    assert len(spans(no_legend)) == len(spans(token_view_html(spec_trace)))


def test_empty_run_renders(spec_trace, spans):
    spec_trace.steps, spec_trace.output_token_ids, spec_trace.text = [], [], ""
    html = token_view_html(spec_trace)
    assert spans(html) == [] and "no output tokens" in html


def test_vis_imports_neither_gradio_nor_vllm():
    vis_dir = pathlib.Path(__file__).resolve().parents[2] / "vis"
    for path in vis_dir.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert name.split(".")[0] not in {"gradio", "vllm", "torch"}, (path, name)
