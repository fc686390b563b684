"""The Traffic tab in Debian's chromium, on the real CPU engine: a visitor uploads
a small labelled file (one malformed line, one label that is a script), gets the
groups, the answer and the history link; a measured prompt opens in the token
view, and the link opens the run in the tab."""
from __future__ import annotations

import json
import re

import pytest

from tests.helpers.browser import RUN_TIMEOUT_MS

pytestmark = [pytest.mark.engine, pytest.mark.browser]
HOSTILE = "<img src=x onerror=window.__pwned=19>"
LINES = [{"prompt": "Fix the typo and output only the sentence: teh cat sat on teh mat.",
          "category": "edit", "max_tokens": 8},
         {"prompt": 3, "category": "edit"},
         {"prompt": "Name one colour.", "category": HOSTILE, "max_tokens": 8}]


def test_upload_run_answer_and_link(page, app_url, tmp_path):
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text("\n".join(json.dumps(x) for x in LINES) + "\n")
    page.goto(app_url, wait_until="domcontentloaded")
    page.get_by_role("tab", name="Traffic").click()
    page.set_input_files("#traffic-file input[type=file]", str(traffic))
    # Uploaded, not only named: the name shows while it still uploads, and Run clicked
    # then gets no file ("upload a traffic file first"); the download link comes after.
    page.wait_for_selector("#traffic-file a[download='traffic.jsonl']")
    page.click("#traffic-run")
    # Done, or a one-line error (fails at once, with the line, instead of at the ceiling)
    page.wait_for_selector("#traffic-status [data-kind=done], #traffic-status [data-kind=error]",
                           timeout=RUN_TIMEOUT_MS)
    status = page.inner_text("#traffic-status")
    assert "done: 2 prompts in 2 groups" in status, status
    run_id = re.search(r"saved as run #(\d+)", status)
    assert run_id, status
    groups = page.inner_text("#traffic-groups")
    assert "edit" in groups and HOSTILE in groups  # shown as text, never run
    answer = page.input_value("#traffic-answer textarea")
    assert "vllm serve" in answer and "speculative decoding: " in answer
    page.wait_for_selector("#traffic-plot svg.main-svg")
    assert page.evaluate("window.__pwned") is None

    # any measured prompt opens in the token view, from the run's own record
    page.click("#traffic-pick input")
    page.get_by_role("option", name="line 1 (edit)").click()
    page.click("#traffic-open")
    page.wait_for_selector("#status :text('traffic run, line 1 (edit): shown in every view')")
    assert page.locator("#tokens [data-status]").count() > 0

    page.goto(f"{app_url}?run={run_id.group(1)}", wait_until="domcontentloaded")
    page.wait_for_selector("#status :text('a traffic run, shown in the Traffic tab')")
    page.get_by_role("tab", name="Traffic").click()
    page.wait_for_selector("#traffic-plot svg.main-svg")
    assert "edit" in page.inner_text("#traffic-groups")
    assert page.evaluate("window.__pwned") is None
