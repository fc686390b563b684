"""The page in a real browser: Debian chromium, headless, driven by Playwright.

Saves the README's screenshot (docs/screenshots/app.png) and one of the
stepper and of a replayed trace.
"""
from __future__ import annotations

import pandas as pd
import pytest

from space.records.schema import load
from tests.helpers.browser import RUN_TIMEOUT_MS, SHOTS

pytestmark = [pytest.mark.engine, pytest.mark.browser]



def test_run_shows_tokens_and_timeline(page, app_url, code_edit_prompt, tmp_path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(app_url, wait_until="domcontentloaded")
    page.fill("#prompt textarea", code_edit_prompt)
    page.click("#run")
    page.wait_for_selector("#status [data-kind=done]", timeout=RUN_TIMEOUT_MS)
    assert page.locator("#tokens [data-status=accepted]").count() > 0
    assert page.locator("#tokens [data-status=rejected]").count() > 0
    page.wait_for_selector("#timeline svg.main-svg")
    page.wait_for_timeout(500)  # let plotly finish its first layout
    page.screenshot(path=str(SHOTS / "app.png"), full_page=True)

    # Step through to the first step where the target rejected a draft.
    page.get_by_role("tab", name="Step through").click()
    for _ in range(60):
        if page.locator("#step-drafts [data-status=rejected]").count():
            break
        page.click("#step-next")
        page.wait_for_timeout(150)
    assert page.locator("#step-drafts [data-status=rejected]").count() > 0
    assert "wanted" in page.inner_text("#step-title")
    page.locator("#step-title").locator("xpath=ancestor::div[@role='tabpanel']").first \
        .screenshot(path=str(SHOTS / "stepper.png"))

    # Save the trace from the page and open it again: replay, nothing runs.
    page.get_by_role("tab", name="Replay & export").click()
    with page.expect_download() as dl:
        page.click("#download-json")
    saved = tmp_path / "trace.json"
    dl.value.save_as(saved)
    with page.expect_download() as dl_csv:
        page.click("#download-csv")
    steps_csv = tmp_path / "steps.csv"
    dl_csv.value.save_as(steps_csv)
    record = load(saved.read_text())
    counts = pd.read_csv(steps_csv)["run"].value_counts()
    assert counts["speculative"] == len(record.speculative.steps)
    assert counts["baseline"] == len(record.baseline.steps)
    tokens_before = page.inner_html("#tokens")
    page.set_input_files("#replay-file input[type=file]", str(saved))
    page.wait_for_selector("#status :text('replaying')")
    assert page.locator("#tokens [data-status=rejected]").count() > 0
    assert page.inner_html("#tokens").count("data-status") == tokens_before.count("data-status")
