"""Debian's chromium, headless, as the browser tests drive it through Playwright."""
from __future__ import annotations

import contextlib
from pathlib import Path

from space.common import reaper

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"  # the docs' and README's
# Browser waits are for the page's own "done" state; this ceiling only guards
# against a hang. It is not a speed bound: a slow machine (float32 on 2 cores,
# beside other work) may take minutes for what takes seconds here.
HANG_MS = 600_000
RUN_TIMEOUT_MS = HANG_MS  # one baseline + speculative run from the page


@contextlib.contextmanager
def playwright_session():
    """``sync_playwright()`` whose driver, and every Chromium it launches, dies with
    this process, by SIGKILL too: a watchdog follows the driver's process tree
    (space/common/reaper.py). The driver is the one child Playwright starts."""
    import psutil
    from playwright.sync_api import sync_playwright

    me = psutil.Process()
    before = {c.pid for c in me.children()}
    with sync_playwright() as p:
        for child in me.children():
            if child.pid not in before:
                reaper.watch(child.pid)
        yield p


@contextlib.contextmanager
def chromium_browser():
    """Debian's headless Chromium through ``playwright_session`` (skips the test
    when it is missing); closed at the end of the block."""
    import pytest

    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian chromium is not installed at {CHROMIUM} "
                    "(bash scripts/setup.sh --test installs it)")
    with playwright_session() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def set_max_tokens(page, n: int) -> None:
    """Type ``n`` into the Max tokens slider's number box and wait until the slider
    holds it, so that the next run takes it."""
    from playwright.sync_api import expect

    box = page.get_by_label("number input for Max tokens")
    box.fill(str(n))
    box.press("Tab")
    expect(page.get_by_label("range slider for Max tokens")).to_have_value(str(n),
                                                                          timeout=HANG_MS)


def new_page(browser, **context_kwargs):
    """A page in a context of its own, whose waits time out only on a hang (HANG_MS)."""
    page = browser.new_context(**context_kwargs).new_page()
    page.set_default_timeout(HANG_MS)
    return page


@contextlib.contextmanager
def chromium_page(width: int = 1400, height: int = 1000):
    """A headless Debian chromium page (skips the test when chromium is missing)."""
    with chromium_browser() as browser:
        yield new_page(browser, viewport={"width": width, "height": height})
