"""The page in a real browser: Debian chromium, headless, driven by Playwright.

One run of the code edit prompt from the page (``ran``: explained, the page's
default) serves every test here: its token view and timeline, the step-through,
the downloads and their replay; the explained steps, played and linked; and the
run's link opened in other browser contexts, with the History and Live tabs.
The run page is only stepped through: replays and links open in pages of their own.

Saves the README's screenshot (docs/screenshots/app.png) and, for docs/page.md,
stepper.png, explain.png (a rejected step explained), history.png and live.png.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd
import pytest

from space.records.schema import load
from tests.helpers.browser import (
    HANG_MS,
    RUN_TIMEOUT_MS,
    SHOTS,
    chromium_browser,
    new_page,
    set_max_tokens,
)

pytestmark = [pytest.mark.engine, pytest.mark.browser]

VIEWPORT = {"width": 1400, "height": 1000}
# Enough for ngram drafts to be both accepted and rejected on the code edit
# prompt (conftest's code_edit_prompt), and for many passes to step through.
RUN_TOKENS = 32


@dataclass
class Ran:
    page: object            # the page that ran it, still showing the run
    run_id: str | None      # from the status box's link
    href: str | None
    tokens: list[str]       # the final token view (token_view), right after the run
    explain_default: bool   # the Explain checkbox as the page opened


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as b:
        yield b


@pytest.fixture(scope="module")
def ran(browser, app_url, code_edit_prompt) -> Ran:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = new_page(browser, viewport=VIEWPORT)
    page.goto(app_url, wait_until="domcontentloaded")
    page.fill("#prompt textarea", code_edit_prompt)
    explain_default = page.locator("#explain input[type=checkbox]").is_checked()
    set_max_tokens(page, RUN_TOKENS)
    page.click("#run")
    page.wait_for_selector("#status [data-kind=done]", timeout=RUN_TIMEOUT_MS)
    # The final token view (explained: the page's default) can draw a moment after
    # the status box; until then the last live-streamed view is still there.
    page.wait_for_selector("#tokens [data-explained]")
    link = page.locator("#status a.speclens-run-link")
    yield Ran(page, link.get_attribute("data-run"), link.get_attribute("href"),
              token_view(page), explain_default)
    page.context.close()


def token_view(page) -> list[str]:
    """Every token of the token view as the server wrote it: its attributes, sorted,
    and its text. Sorted, because a page that patched a live-streamed view into the
    final one keeps the attributes in another order; without the page's outline
    of the step-through's current step, which each page adds for the step it shows."""
    return page.eval_on_selector_all(
        "#tokens [data-status]",
        "els => els.map(e => { const c = e.cloneNode(true); c.classList.remove('tok-current');"
        " return [...c.attributes].map(a => a.name + '=' + JSON.stringify(a.value)).sort()"
        ".join(' ') + ' > ' + c.innerHTML; })")


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


def download_json(page, path) -> None:
    """The trace from the Replay & export tab's JSON button, saved at ``path``."""
    page.get_by_role("tab", name="Replay & export").click()
    with page.expect_download() as dl:
        page.click("#download-json")
    dl.value.save_as(path)


def test_run_shows_tokens_and_timeline(ran, browser, app_url, tmp_path):
    page = ran.page
    assert page.locator("#tokens [data-status=accepted]").count() > 0
    assert page.locator("#tokens [data-status=rejected]").count() > 0
    page.wait_for_selector("#timeline svg.main-svg")
    page.wait_for_timeout(500)  # let plotly finish its first layout (for the picture)
    page.screenshot(path=str(SHOTS / "app.png"), full_page=True)

    # Step through to the first step where the target rejected a draft.
    page.get_by_role("tab", name="Step through").click()
    page.wait_for_selector("#step-title .speclens-step")
    while not page.locator("#step-drafts [data-status=rejected]").count():
        now = shown(page)
        assert now["pass"] < now["count"], f"no rejected draft up to the last pass: {now}"
        page.click("#step-next")
        wait_moved(page, now)
    assert "wanted" in page.inner_text("#step-title")
    page.locator("#step-title").locator("xpath=ancestor::div[@role='tabpanel']").first \
        .screenshot(path=str(SHOTS / "stepper.png"))

    # Save the trace from the page and open it again: replay, nothing runs.
    saved = tmp_path / "trace.json"
    download_json(page, saved)
    with page.expect_download() as dl_csv:
        page.click("#download-csv")
    steps_csv = tmp_path / "steps.csv"
    dl_csv.value.save_as(steps_csv)
    record = load(saved.read_text())
    counts = pd.read_csv(steps_csv)["run"].value_counts()
    assert counts["speculative"] == len(record.speculative.steps)
    assert counts["baseline"] == len(record.baseline.steps)
    tokens_before = page.inner_html("#tokens")
    other = new_page(browser, viewport=VIEWPORT)
    other.goto(app_url, wait_until="domcontentloaded")
    other.get_by_role("tab", name="Replay & export").click()
    other.set_input_files("#replay-file input[type=file]", str(saved))
    other.wait_for_selector("#status :text('replaying')")
    assert other.locator("#tokens [data-status=rejected]").count() > 0
    assert other.inner_html("#tokens").count("data-status") == tokens_before.count("data-status")
    other.context.close()


def test_rejected_step_explained_played_and_linked(ran, browser, app_url, tmp_path):
    page = ran.page
    assert ran.explain_default  # Explain is on by default
    # A rejected token of another step than the one the step-through shows now (the
    # test above leaves it at a rejected step), so that the click has to move it.
    title = page.locator("#step-title .speclens-step")
    now = title.get_attribute("data-step") if title.count() else ""
    rejected = page.locator(
        f"#tokens [data-status=rejected][data-explained]:not([data-step='{now}'])").first
    assert re.search(r"target: .+ \d+% \u00b7 drafted .+ \d", rejected.get_attribute("title"))

    # Clicking a token opens the step-through at its step.
    step_of_token = int(rejected.get_attribute("data-step"))
    rejected.click()
    page.wait_for_function(
        f"() => document.querySelector('#step-title .speclens-step')?.dataset.step == "
        f"'{step_of_token}'")
    assert page.locator("#step-title .speclens-top5 [data-role~=drafted]").count() == 1
    # its tokens outlined
    assert page.locator(f"#tokens .tok-current[data-step='{step_of_token}']").count() > 0
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
    saved = tmp_path / "explained.json"
    download_json(page, saved)
    linked = new_page(browser, viewport=VIEWPORT)
    linked.goto(f"{app_url}#step={target}", wait_until="domcontentloaded")
    linked.get_by_role("tab", name="Replay & export").click()
    linked.set_input_files("#replay-file input[type=file]", str(saved))
    linked.wait_for_function(
        f"() => document.querySelector('#step-title .speclens-step')?.dataset.step == "
        f"'{target}'")
    assert linked.locator("#tokens [data-explained]").count() > 0  # explanations replay too
    linked.context.close()


def test_a_runs_link_opens_the_same_token_view_elsewhere(ran, browser, app_url):
    run_id = ran.run_id
    assert run_id and ran.href == f"?run={run_id}"
    assert len(ran.tokens) > 10 and any('data-status="accepted"' in t for t in ran.tokens)

    # Another browser context: no cookies, no state shared with the first.
    other = new_page(browser, viewport=VIEWPORT)
    other.goto(f"{app_url}?run={run_id}", wait_until="domcontentloaded")
    other.wait_for_selector(f"#status :text('run #{run_id}, run by')")
    assert token_view(other) == ran.tokens
    other.wait_for_selector("#timeline svg.main-svg")

    # The History tab lists it, newest first; the Live tab draws both engines.
    other.get_by_role("tab", name="History").click()
    other.wait_for_selector(f"#history-table tr[data-run='{run_id}']")
    other.click("#side-run")  # the two newest comparisons (this one twice if it is alone)
    other.wait_for_selector("#side-status [data-kind=done]")
    other.wait_for_selector("#side-timeline svg.main-svg")
    other.wait_for_timeout(500)  # plotly's first layout
    other.locator("#history-table").locator("xpath=ancestor::div[@role='tabpanel']").first \
        .screenshot(path=str(SHOTS / "history.png"))
    other.get_by_role("tab", name="Live").click()
    other.wait_for_selector("#live-summary .speclens-live")
    other.wait_for_selector("#live-figure svg.main-svg")
    other.wait_for_timeout(500)  # plotly's first layout
    assert "speculative" in other.inner_text("#live-summary")
    other.locator("#live-figure").locator("xpath=ancestor::div[@role='tabpanel']").first \
        .screenshot(path=str(SHOTS / "live.png"))
    other.context.close()
