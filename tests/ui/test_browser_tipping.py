"""The tipping point in a real browser, from stored curves (tests/fixtures/tipping,
put in the app's data folder by conftest; nothing is measured): the Sweep tab's
curve with its break-even, and the Checklist tab's small curve with the
replayed workload's acceptance marked."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from space.engine.hardware import choose_dtype
from tests.helpers.browser import SHOTS

pytestmark = [pytest.mark.engine, pytest.mark.browser]

COMPARE = Path(__file__).resolve().parents[1] / "fixtures" / "compare-v1.json"


def _svg_text(page, selector: str) -> str:
    page.wait_for_selector(f"{selector} svg.main-svg")
    page.wait_for_timeout(500)  # let plotly finish its layout
    return page.inner_text(selector)


def test_curves_show_break_even_and_the_workload(page, app_url):
    page.goto(app_url, wait_until="domcontentloaded")
    page.get_by_role("tab", name="Sweep").click()
    assert "derived from measured step costs" in _svg_text(page, "#tipping-plot")  # ngram's
    page.click("#tipping-curve input")
    # The app's own dtype: under SPECLENS_DTYPE=float32 the stored curves are
    # there in bf16 too (for the replayed comparison below), one option each.
    dtype = choose_dtype().dtype
    page.get_by_role("option", name=re.compile(f"draft_model.*{dtype}")).click()
    page.wait_for_selector("#tipping-plot :text('synthetic')")
    sweep_text = _svg_text(page, "#tipping-plot")
    assert "break-even" in sweep_text and "measured, concurrency 4" in sweep_text
    assert "c=1" in sweep_text and "c=4" in sweep_text  # one curve per concurrency
    page.locator("#tipping-plot").screenshot(path=str(SHOTS / "tipping.png"))

    # A saved ngram k=4 comparison: the checklist gets the headroom line's curve
    page.get_by_role("tab", name="Replay & export").click()
    page.set_input_files("#replay-file input[type=file]", str(COMPARE))
    page.wait_for_selector("#status :text('replaying')")
    page.get_by_role("tab", name="Checklist").click()
    mini = _svg_text(page, "#tipping-mini")
    assert "break-even" in mini and "this workload" in mini
    assert page.locator("#tipping-mini .shapelayer path").count() >= 2  # 1x line + marker
