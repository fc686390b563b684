"""Hostile traces and prompts in a real browser: nothing the visitor sent runs.

Every payload (tests/hostile.py) sets ``window.__pwned`` or opens an alert if
the page ever writes it as markup. The first test proves the canaries fire in
this browser when written raw; the others open hostile traces through the
replay upload, visit every view, run a hostile prompt through the engine, and
assert the canary never fired and no dialog opened. A malformed file gets one
line in the status box and no error popup. The files of one test open one
after another in one page (the upload cleared between them, as a visitor would).
"""
from __future__ import annotations

import json
import re

import pytest

from tests.helpers.browser import RUN_TIMEOUT_MS, chromium_browser, new_page, set_max_tokens
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
    """A fresh page (a fresh session and canary) with its dialogs recorded."""
    page = new_page(browser, viewport={"width": 1400, "height": 1000})
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    yield page
    page.close()


def canary(page) -> tuple:
    page.wait_for_timeout(400)  # an <img src=x> fails to load within a few ms
    return page.evaluate(f"window.{CANARY}"), page.dialogs


def test_the_canaries_fire_when_written_raw(page):
    """Each payload, with a number of its own, written raw into an element of its own;
    the page records every number the canary is set to."""
    page.set_content("<div id=x></div>")
    page.evaluate(f"""() => {{ window.fired = [];
        Object.defineProperty(window, '{CANARY}', {{ get: () => undefined,
                                                       set: (n) => window.fired.push(n) }}); }}""")
    texts = [payloads(100 + i)[i] for i in range(len(payloads(0)))]
    with page.expect_event("dialog"):  # the alert's
        page.evaluate("ts => { for (const t of ts) { const d = document.createElement('div');"
                      " document.getElementById('x').appendChild(d); d.innerHTML = t; } }",
                      texts)
    page.wait_for_function("n => new Set(window.fired).size >= n", arg=len(FIRES_RAW))
    canary(page)  # and the others as long again to fire, as each had before
    fired = sorted({n - 100 for n in page.evaluate("window.fired")})
    assert fired == FIRES_RAW
    assert page.dialogs == [str(100 + ALERTS_RAW)]


def open_trace(page, path) -> None:
    """Open ``path`` through the replay upload of the Replay & export tab, clearing
    the file opened before."""
    page.get_by_role("tab", name="Replay & export").click()
    clear = page.locator("#replay-file button[aria-label=Clear]")
    if clear.count():
        clear.click()
    page.set_input_files("#replay-file input[type=file]", str(path))


def visit_every_view(page) -> None:
    """Each tab, every pass of the stepper, a hover over the timeline's bars."""
    for tab in ("Acceptance", "Checklist", "Memory", "Step through"):
        page.get_by_role("tab", name=tab).click()
        page.get_by_role("tab", name=tab, selected=True).wait_for()
    title = "#step-title .speclens-step"
    assert page.get_attribute(title, "data-pass") == "1"
    stepped = False
    while (p := int(page.get_attribute(title, "data-pass"))) < int(
            page.get_attribute(title, "data-count")):
        page.click("#step-next")
        page.wait_for_selector(f"{title}[data-pass='{p + 1}']")
        stepped = True
    if stepped:  # the timeline redraws with the step's band after the title changes (a
        # second event); a hover during that redraw found no visible bar (CI, once)
        band = re.compile(rf"^step {page.get_attribute(title, 'data-step')}$")
        page.locator("#timeline text.annotation-text", has_text=band).wait_for()
    for bar in page.locator("#timeline g.point path").all()[:6]:
        bar.wait_for(state="visible")
        bar.hover(force=True)


def test_hostile_traces_run_no_script(page, app_url, tmp_path):
    """A comparison, then a trace alone."""
    page.goto(app_url, wait_until="domcontentloaded")
    for kind, record in (("comparison", hostile_compare()), ("trace", hostile_trace())):
        name = f"it's&amp;{kind}.json"  # '&' and "'" survive Gradio's file-name cleaning
        path = tmp_path / name
        path.write_text(json.dumps(record))
        open_trace(page, path)
        page.wait_for_selector(f"#status :text('replaying the saved {kind}')")
        visit_every_view(page)
        assert canary(page) == (None, []), kind
        status = page.inner_text("#status")
        assert name in status, kind  # the name as written: escaped, not decoded
        assert f"onerror=window.{CANARY}=" in page.inner_text("#tokens"), kind  # shown as text


def test_malformed_traces_get_one_line(page, app_url, tmp_path):
    page.goto(app_url, wait_until="domcontentloaded")
    for name, text, expected in malformed_traces():
        shown = f"it's&amp;{name}"
        path = tmp_path / shown
        path.write_text(text)
        open_trace(page, path)
        page.locator("#status [data-kind=error]", has_text=shown).wait_for()
        status = page.inner_text("#status").strip()
        assert expected in status and "\n" not in status, (name, status)
        # Our warning toast, its text as written (Gradio draws toasts as HTML: "&amp;"
        # would read "&" had it not been escaped); no error toast (an exception).
        page.locator(".toast-message-item.warning", has_text=shown).wait_for()
        assert page.locator(".toast-message-item.error").count() == 0, name
        assert page.evaluate(f"window.{CANARY}") is None and page.dialogs == [], name
    assert canary(page) == (None, [])  # nor later, from any of them


def test_hostile_prompt_runs_no_script(page, app_url):
    """Markup in the prompt and, if the model repeats it, in its output."""
    page.goto(app_url, wait_until="domcontentloaded")
    text = "Repeat exactly: " + "".join(payloads(20)[:6])
    page.fill("#prompt textarea", text)
    set_max_tokens(page, 8)
    page.click("#run")
    page.wait_for_selector("#status [data-kind=done]", timeout=RUN_TIMEOUT_MS)
    visit_every_view(page)
    assert canary(page) == (None, [])
    assert f"window.{CANARY}=20" in page.inner_text("#step-context")  # the prompt, as text
