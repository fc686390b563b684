"""Debian's chromium, headless, as the browser tests drive it through Playwright."""
from __future__ import annotations

import contextlib
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"  # the docs' and README's
RUN_TIMEOUT_MS = 180_000  # one baseline + speculative run from the page, CPU default


@contextlib.contextmanager
def chromium_page(width: int = 1400, height: int = 1000):
    """A headless Debian chromium page (skips the test when chromium is missing)."""
    import pytest

    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian chromium is not installed at {CHROMIUM} "
                    "(bash scripts/setup.sh --test installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()
