"""A run's link in a second browser, and the History and Live tabs, in Debian's
chromium. Saves docs/screenshots/history.png and live.png for docs/page.md."""
from __future__ import annotations

import pytest

from tests.helpers.browser import RUN_TIMEOUT_MS, SHOTS, chromium_browser, new_page

pytestmark = [pytest.mark.engine, pytest.mark.browser]

VIEWPORT = {"width": 1400, "height": 1000}


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as b:
        yield b


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


def test_a_runs_link_opens_the_same_token_view_elsewhere(browser, app_url, code_edit_prompt):
    SHOTS.mkdir(parents=True, exist_ok=True)
    first = new_page(browser, viewport=VIEWPORT)
    first.goto(app_url, wait_until="domcontentloaded")
    first.fill("#prompt textarea", code_edit_prompt)
    first.click("#run")
    first.wait_for_selector("#status [data-kind=done]", timeout=RUN_TIMEOUT_MS)
    # The final token view (explained: the page's default) can draw a moment after
    # the status box; until then the last live-streamed view is still there.
    first.wait_for_selector("#tokens [data-explained]")
    link = first.locator("#status a.speclens-run-link")
    run_id = link.get_attribute("data-run")
    assert run_id and link.get_attribute("href") == f"?run={run_id}"
    tokens = token_view(first)
    assert len(tokens) > 10 and any('data-status="accepted"' in t for t in tokens)

    # Another browser context: no cookies, no state shared with the first.
    other = new_page(browser, viewport=VIEWPORT)
    other.goto(f"{app_url}?run={run_id}", wait_until="domcontentloaded")
    other.wait_for_selector(f"#status :text('run #{run_id}, run by')")
    assert token_view(other) == tokens
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
