"""A screenshot of an exported lesson in headless Chromium, opened from disk with
the network blocked (docs/lesson.md's picture).

    python -m space lesson compare.json -o lesson.html --notes notes.json
    python scripts/lesson_screenshot.py lesson.html docs/screenshots/lesson.png --step 31

Run it under the shared lock on a busy machine: it starts Chromium.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("lesson", type=Path)
    p.add_argument("png", type=Path)
    p.add_argument("--step", type=int, default=None,
                   help="open at this engine step (the lesson's #step=N address)")
    p.add_argument("--width", type=int, default=1300)
    p.add_argument("--height", type=int, default=1000)
    a = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": a.width, "height": a.height})
            context.route("**", lambda r: r.continue_() if r.request.url.startswith("file://")
                          else r.abort())
            page = context.new_page()
            at = "" if a.step is None else f"#step={a.step}"
            page.goto(a.lesson.resolve().as_uri() + at)
            a.png.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(a.png))
        finally:
            browser.close()
    print(f"wrote {a.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
