"""Debian's chromium, headless, as the browser tests drive it through Playwright."""
from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
RUN_TIMEOUT_MS = 180_000  # one baseline + speculative run from the page, CPU default
