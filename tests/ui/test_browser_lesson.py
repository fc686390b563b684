"""An exported lesson in Chromium, opened from disk with the network blocked: the
arrow keys step through it, one step is current everywhere at once, the marked
tokens are the trace's, a note shows at its step; a hostile lesson runs nothing.
No server, no engine: the lesson is written by the CLI from a saved comparison."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from space.cli.main import main
from space.records.schema import load
from space.records.trace import REJECTED, CompareRecord, dumps
from tests.helpers.browser import chromium_browser
from tests.helpers.hostile import CANARY, hostile_compare, payload
from tests.helpers.lessons import views_compare
from vis.stepper import emitting_step_indices
from vis.tokens import step_entries

pytestmark = pytest.mark.browser

NOTE = "here the draft guessed 'x'; the target wanted '\"y' <b>instead</b>"
NOTE_STEP = 4  # views_run: the 4th step that emits tokens (step 0 is a prefill chunk)


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as b:
        yield b


def export(tmp_path: Path, name: str, record: dict, notes: dict) -> Path:
    """Through the CLI, as a teacher would: the trace file and the notes file in, HTML out."""
    src, note_file, out = (tmp_path / f"{name}.json", tmp_path / f"{name}-notes.json",
                           tmp_path / f"{name}.html")
    src.write_text(json.dumps(record))
    note_file.write_text(json.dumps(notes))
    assert main(["lesson", str(src), "-o", str(out), "--notes", str(note_file)]) == 0
    return out


def open_offline(browser, path: Path):
    """A page whose every request but the file itself is aborted (and recorded)."""
    context = browser.new_context(viewport={"width": 1300, "height": 1000})
    blocked: list[str] = []

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**", route)
    page = context.new_page()
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.goto(path.as_uri())
    return context, page, blocked


CURRENT = """() => Array.from(document.querySelectorAll('[aria-current="step"]'))
                   .map((e) => [e.closest('#lesson-tokens') ? 'token'
                                : e.closest('#lesson-timeline') ? 'bar' : e.tagName,
                                e.dataset.step])"""
MARKED = """() => Array.from(document.querySelectorAll('#lesson-tokens [aria-current="step"]'))
                  .map((e) => { const c = e.cloneNode(true);
                                c.querySelectorAll('.tok-glyph').forEach((g) => g.remove());
                                return [e.dataset.status, c.textContent]; })"""


def test_a_lesson_steps_through_offline_with_the_arrow_keys(browser, tmp_path):
    record = json.loads(dumps(views_compare()))
    path = export(tmp_path, "lesson", record, {str(NOTE_STEP): NOTE})
    context, page, blocked = open_offline(browser, path)
    try:
        before = page.evaluate(CURRENT)
        kinds = {k for k, _ in before}
        assert {"token", "bar", "SECTION"} <= kinds
        start = {int(s) for _, s in before}
        assert len(start) == 1
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        after = page.evaluate(CURRENT)
        steps = {int(s) for _, s in after}
        assert steps == {start.pop() + 3} and {k for k, _ in after} == kinds
        # the token view marks exactly the step's tokens, as the trace file has them
        cmp = load(path.with_suffix(".json").read_text())
        assert isinstance(cmp, CompareRecord)
        run = cmp.speculative
        step = next(s for s in run.steps if s.index == NOTE_STEP)
        want = [[e.status, run.token_str(e.token_id)] for e in step_entries(step, step.output_offset)]
        assert page.evaluate(MARKED) == want and REJECTED in {s for s, _ in want}
        # the teacher's note shows at its step, as text
        note = page.locator(f'section[aria-current="step"] [data-note-step="{NOTE_STEP}"]')
        assert note.is_visible() and NOTE in note.inner_text()
        assert page.locator("section.lesson-step:visible").count() == 1
        positions = len(emitting_step_indices(run))
        assert page.inner_text("#lesson-pos").startswith(f"Pass 4 of {positions}")
        page.keyboard.press("ArrowLeft")
        assert {int(s) for _, s in page.evaluate(CURRENT)} == {NOTE_STEP - 1}
        assert not note.is_visible()
        assert blocked == [] and page.dialogs == []
    finally:
        context.close()


def test_a_hostile_lesson_runs_no_script_even_without_its_policy(browser, tmp_path):
    """The canary never fires: not in the lesson as exported, nor with its
    Content-Security-Policy removed (the escaping alone holds)."""
    path = export(tmp_path, "hostile", hostile_compare(), {"1": payload("prompt")})
    bare = tmp_path / "hostile-no-csp.html"
    text = path.read_text(encoding="utf-8")
    start = text.index('<meta http-equiv="Content-Security-Policy"')
    bare.write_text(text[:start] + text[text.index(">", start) + 1:], encoding="utf-8")
    for lesson in (path, bare):
        context, page, blocked = open_offline(browser, lesson)
        try:
            for key in ("ArrowRight", "ArrowRight", "End", "Home"):
                page.keyboard.press(key)
            page.click("#lesson-play")
            page.hover("#lesson-tokens .tok >> nth=0")
            page.wait_for_timeout(400)  # an <img src=x> fails to load within a few ms
            assert page.evaluate(f"window.{CANARY}") is None, lesson.name
            assert page.dialogs == [] and blocked == [], lesson.name
            assert page.locator('section[aria-current="step"]').count() == 1  # its own script ran
        finally:
            context.close()


def test_without_javascript_the_tokens_and_every_step_still_read(browser, tmp_path):
    path = export(tmp_path, "lesson", json.loads(dumps(views_compare())), {"2": "a note"})
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(path.as_uri())
        run = views_compare().speculative
        assert page.locator("#lesson-tokens [data-out]").count() == len(run.output_token_ids)
        assert page.locator("section.lesson-step:visible").count() == len(
            emitting_step_indices(run))
        assert page.locator("#lesson-controls").is_hidden()
        assert page.locator('[data-note-step="2"]').is_visible()
    finally:
        context.close()
