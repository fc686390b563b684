"""Teaching in a real browser: an explained run stepped through, played, linked.

Saves docs/screenshots/explain.png (a rejected step explained) for docs/page.md.
"""
from __future__ import annotations

import re

import pytest

from tests.helpers.browser import HANG_MS, RUN_TIMEOUT_MS, SHOTS

pytestmark = [pytest.mark.engine, pytest.mark.browser]


def shown(page) -> dict[str, int]:
    """The step-through's engine step and pass, from its title's data attributes."""
    el = page.locator("#step-title .speclens-step")
    return {k: int(el.get_attribute(f"data-{k}")) for k in ("step", "pass", "count")}


def wait_moved(page, before: dict, key: str = "pass", delta: int = 1,
               timeout_ms: int = HANG_MS) -> dict:
    page.wait_for_function(
        "([k, v]) => { const t = document.querySelector('#step-title .speclens-step');"
        " return t && parseInt(t.dataset[k], 10) === v; }",
        arg=[key, before[key] + delta], timeout=timeout_ms)
    return shown(page)


def test_rejected_step_explained_played_and_linked(page, app_url, code_edit_prompt,
                                                   tmp_path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(app_url, wait_until="domcontentloaded")
    page.fill("#prompt textarea", code_edit_prompt)
    assert page.locator("#explain input[type=checkbox]").is_checked()  # on by default
    page.click("#run")
    page.wait_for_selector("#status [data-kind=done]", timeout=RUN_TIMEOUT_MS)
    rejected = page.locator("#tokens [data-status=rejected][data-explained]").first
    assert re.search(r"target: .+ \d+% \u00b7 drafted .+ \d", rejected.get_attribute("title"))

    # Clicking a token opens the step-through at its step.
    step_of_token = int(rejected.get_attribute("data-step"))
    rejected.click()
    page.wait_for_function(
        f"() => document.querySelector('#step-title .speclens-step')?.dataset.step == "
        f"'{step_of_token}'")
    assert page.locator("#step-title .speclens-top5 [data-role~=drafted]").count() == 1
    assert page.locator("#tokens .tok-current").count() > 0  # its tokens outlined
    assert page.url.endswith(f"#step={step_of_token}")
    page.locator("#step-title").locator("xpath=ancestor::div[@role='tabpanel']").first \
        .screenshot(path=str(SHOTS / "explain.png"))
    why = page.inner_text("#step-title .speclens-why")
    assert "The target" in why and "%" in why

    # Arrow keys step; the URL follows.
    page.locator("body").click(position={"x": 5, "y": 5})
    before = shown(page)
    if before["pass"] == before["count"]:
        page.keyboard.press("ArrowLeft")
        before = wait_moved(page, before, delta=-1)
    page.keyboard.press("ArrowRight")
    after = wait_moved(page, before)
    page.keyboard.press("ArrowLeft")
    assert wait_moved(page, after, delta=-1)["step"] == before["step"]
    assert page.url.endswith(f"#step={before['step']}")

    # Play three steps automatically at the fast speed, then pause.
    page.locator("#tokens [data-step]").first.click()  # back to the first pass
    page.wait_for_function("() => document.querySelector('#step-title .speclens-step')"
                           "?.dataset.pass == '1'")
    start = shown(page)
    assert start["count"] >= 4, start
    page.select_option("#speclens-speed", "400")
    page.click("#speclens-play")
    wait_moved(page, start, delta=3)
    page.click("#speclens-play")
    assert page.get_attribute("#speclens-play", "aria-pressed") == "false"

    # A link with #step=N opens a replayed run at that step.
    target = shown(page)["step"]
    page.get_by_role("tab", name="Replay & export").click()
    with page.expect_download() as dl:
        page.click("#download-json")
    saved = tmp_path / "explained.json"
    dl.value.save_as(saved)
    page.goto(f"{app_url}#step={target}", wait_until="domcontentloaded")
    page.get_by_role("tab", name="Replay & export").click()
    page.set_input_files("#replay-file input[type=file]", str(saved))
    page.wait_for_function(
        f"() => document.querySelector('#step-title .speclens-step')?.dataset.step == "
        f"'{target}'")
    assert page.locator("#tokens [data-explained]").count() > 0  # explanations replay too
