"""vis/checklist.py: the checklist as HTML."""
from space.judge.checklist import ChecklistInputs, evaluate
from tests.helpers.checklists import BAD_DRAFT
from vis.checklist import checklist_html


def test_html_carries_verdict_and_marks_in_words():
    result = evaluate(ChecklistInputs(**BAD_DRAFT))
    html = checklist_html(result)
    assert 'data-verdict="not-worth-it"' in html
    assert html.count("<tr data-check=") == len(result.checks)
    assert 'data-check="measured speedup" data-passed="false"' in html
    assert "fail</td>" in html and "context</td>" in html   # words, not colour only
    assert "0.60x" in html and "&gt;= 1.10x" in html


def test_html_escapes_text():
    result = evaluate(ChecklistInputs(task_type="<script>x</script>"))
    assert "<script>" not in checklist_html(result)
