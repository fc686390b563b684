"""The page renders a run through the servers in Chromium: the server's text in the
token view with its rejected drafts as counts, the status naming the servers' run,
and the sentences that say what a server does not report (vis/server_notes.py)."""
from __future__ import annotations

import pytest

from space.records.run import SERVER
from space.records.schema import load
from space.records.trace import CORRECTION
from space.ui.app import SERVERS_LINE, STOPPED
from space.ui.panels import SERVERS_NOTE
from tests.helpers.browser import RUN_TIMEOUT_MS, SHOTS, chromium_page
from vis.server_notes import REJECTED_IDS, SENTENCES, STEP_ANATOMY, TARGET_VIEW
from vis.tokens import EMPTY_GLYPH, NEWLINE_GLYPH

pytestmark = [pytest.mark.engine, pytest.mark.browser]

# the output tokens' text as the page draws it, glyphs for newlines and empty tokens left out
SHOWN_TEXT = ("() => Array.from(document.querySelectorAll('#tokens [data-out]'))"
              ".map((e) => e.textContent).join('')")


def test_page_renders_a_server_run(server_page, tmp_path):
    url, _ = server_page
    with chromium_page() as page:
        page.goto(url, wait_until="domcontentloaded")
        page.click("#run")  # the first sample: a code edit that rejects drafts early
        page.wait_for_selector("#status [data-kind=done]", timeout=RUN_TIMEOUT_MS)
        assert "through a vLLM" in page.inner_text("#status")
        assert "(unknown)" not in page.inner_text("#status")  # no device a server never told
        assert page.inner_text("#dtype-line") == SERVERS_LINE  # not this machine's dtype
        assert page.get_by_text(SERVERS_NOTE).count() == 1  # no engine is built here
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.wait_for_timeout(500)  # let plotly finish its first layout
        page.screenshot(path=str(SHOTS / "servers.png"), full_page=True)  # docs/servers.md

        page.get_by_role("tab", name="Replay & export").click()
        with page.expect_download() as dl:
            page.click("#download-json")
        dl.value.save_as(tmp_path / "trace.json")
        run = load((tmp_path / "trace.json").read_text()).speculative
        assert run.config.source == SERVER

        # the token view: the server's own text, its rejected drafts one mark a step
        shown = page.evaluate(SHOWN_TEXT).replace(NEWLINE_GLYPH, "").replace(EMPTY_GLYPH, "")
        assert shown == run.text
        marks = page.locator("#tokens .tok-unreported")
        rejected = [s for s in run.steps
                    if s.num_unreported_draft_tokens and s.target_token_kind == CORRECTION]
        assert rejected and marks.count() == len(rejected)
        assert marks.first.inner_text() == f"\u00d7{rejected[0].num_unreported_draft_tokens}"
        assert page.inner_text("#tokens [data-why=rejected-ids]") == SENTENCES[REJECTED_IDS]

        # the probability strip (Explain is on by default) says why it is empty
        page.get_by_role("tab", name="Acceptance").click()
        page.wait_for_selector("#draft-probs .annotation-text")
        assert "does not report the target's probabilities" in page.locator(
            "#draft-probs .annotation-text").first.text_content()  # an SVG <text>

        # the step-through, at the first step whose rejected drafts have no ids
        marks.first.click()
        page.wait_for_selector("#step-drafts .tok-unreported")
        assert page.inner_text("#step-drafts [data-why=rejected-ids]") == SENTENCES[REJECTED_IDS]
        title = page.inner_text("#step-title")
        assert "whose ids the server does not report" in title
        assert SENTENCES[TARGET_VIEW] in title and SENTENCES[STEP_ANATOMY] in title


def test_stop_says_so_in_the_status(server_page):
    """Stop closes the run's handler, which then writes nothing more: the click
    itself puts the one line in the status box (the servers are freed and the next
    run works: tests/server/test_stop_servers.py)."""
    url, _ = server_page
    with chromium_page() as page:
        page.goto(url, wait_until="domcontentloaded")
        page.fill("#prompt textarea", "Write the numbers from 1 to 500 separated by commas.")
        # the slider's most: the run must still be going when Stop is clicked
        # (32 tokens a batch end within a second on a fast machine)
        page.get_by_label("number input for Max tokens").fill("1024")
        page.get_by_label("number input for Max tokens").press("Tab")
        page.click("#run")
        page.wait_for_selector("#status :text('tokens, repeat')", timeout=RUN_TIMEOUT_MS)
        page.click("#stop")
        # the click writes the line itself: no run-length wait
        page.wait_for_selector(f"#status :text('{STOPPED[:40]}')", timeout=60_000)
