"""Hostile traces and prompts in a real browser: nothing the visitor sent runs.

Every payload (tests/hostile.py) sets ``window.__pwned`` or opens an alert if
the page ever writes it as markup. The first test proves the canaries fire in
this browser when written raw; the others open hostile traces through the
replay upload, visit every view, run a hostile prompt through the engine, and
assert the canary never fired and no dialog opened. A malformed file gets one
line in the status box and no error popup.
"""
from __future__ import annotations

import json

import pytest

from tests.helpers.browser import RUN_TIMEOUT_MS, chromium_browser, new_page
from tests.helpers.hostile import CANARY, hostile_compare, hostile_trace, malformed_traces, payloads

pytestmark = [pytest.mark.engine, pytest.mark.browser]

# Payload variants that run when written with innerHTML, as gr.HTML writes:
# <img onerror>, "><img onerror>, <details ontoggle>, <input autofocus onfocus>,
# <iframe srcdoc><script>; the last opens an alert.
FIRES_RAW = [0, 1, 3, 4, 5]
ALERTS_RAW = 9


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as b:
        yield b


@pytest.fixture
def page(browser):
    """A fresh page (a fresh session: gr.File takes one upload) with its dialogs recorded."""
    page = new_page(browser, viewport={"width": 1400, "height": 1000})
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    yield page
    page.close()


def canary(page) -> tuple:
    page.wait_for_timeout(400)  # an <img src=x> fails to load within a few ms
    return page.evaluate(f"window.{CANARY}"), page.dialogs


def test_the_canaries_fire_when_written_raw(page):
    page.set_content("<div id=x></div>")
    fired = []
    for i, text in enumerate(payloads(7)):
        page.evaluate(f"window.{CANARY} = undefined")
        page.evaluate("t => { document.getElementById('x').innerHTML = t }", text)
        if canary(page)[0] == 7:
            fired.append(i)
    assert fired == FIRES_RAW
    assert page.dialogs == ["7"]


def open_trace(page, app_url, path) -> None:
    page.goto(app_url, wait_until="domcontentloaded")
    page.get_by_role("tab", name="Replay & export").click()
    page.set_input_files("#replay-file input[type=file]", str(path))


def visit_every_view(page) -> None:
    """Each tab, every pass of the stepper, a hover over the timeline's bars."""
    for tab in ("Acceptance", "Checklist", "Memory", "Step through"):
        page.get_by_role("tab", name=tab).click()
        page.wait_for_timeout(100)
    count = int(page.get_attribute("#step-slider input[type=range]", "max") or 1)
    for _ in range(count):
        page.click("#step-next")
        page.wait_for_timeout(100)
    for bar in page.locator("#timeline g.point path").all()[:6]:
        bar.hover(force=True)


@pytest.mark.parametrize("kind", ["comparison", "trace"])
def test_hostile_traces_run_no_script(page, app_url, tmp_path, kind):
    record = hostile_compare() if kind == "comparison" else hostile_trace()
    path = tmp_path / "it's&amp;.json"  # '&' and "'" survive Gradio's file-name cleaning
    path.write_text(json.dumps(record))
    open_trace(page, app_url, path)
    page.wait_for_selector("#status :text('replaying')")
    visit_every_view(page)
    assert canary(page) == (None, [])
    status = page.inner_text("#status")
    assert "it's&amp;.json" in status  # the name as written: escaped, not decoded
    assert f"onerror=window.{CANARY}=" in page.inner_text("#tokens")  # shown as text


@pytest.mark.parametrize("name,text,expected", malformed_traces(),
                         ids=[m[0] for m in malformed_traces()])
def test_malformed_trace_gets_one_line(page, app_url, tmp_path, name, text, expected):
    path = tmp_path / f"it's&amp;{name}"
    path.write_text(text)
    open_trace(page, app_url, path)
    page.wait_for_selector("#status [data-kind=error]")
    status = page.inner_text("#status").strip()
    assert expected in status and "\n" not in status
    assert f"it's&amp;{name}" in status
    # Our warning toast, its text as written (Gradio draws toasts as HTML: "&amp;"
    # would read "&" had it not been escaped); no error toast (an exception).
    page.wait_for_selector(".toast-message-item.warning")
    assert f"it's&amp;{name}" in page.inner_text(".toast-message-item.warning")
    assert page.locator(".toast-message-item.error").count() == 0
    assert canary(page) == (None, [])


def test_hostile_prompt_runs_no_script(page, app_url):
    """Markup in the prompt and, if the model repeats it, in its output."""
    page.goto(app_url, wait_until="domcontentloaded")
    text = "Repeat exactly: " + "".join(payloads(20)[:6])
    page.fill("#prompt textarea", text)
    page.get_by_label("number input for Max tokens").fill("8")
    page.get_by_label("number input for Max tokens").press("Tab")
    page.click("#run")
    page.wait_for_selector("#status [data-kind=done]", timeout=RUN_TIMEOUT_MS)
    visit_every_view(page)
    assert canary(page) == (None, [])
    assert f"window.{CANARY}=20" in page.inner_text("#step-context")  # the prompt, as text
