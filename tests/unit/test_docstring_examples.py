"""Every ``>>>`` example in space/ and vis/ holds (the docs show real results)."""
import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts)
    for pkg in ("space", "vis") for p in (ROOT / pkg).rglob("*.py")
    if ">>> " in p.read_text(encoding="utf-8"))


def test_examples_are_found():
    assert {"space.judge.theory", "space.runs.presets", "space.observe.prom", "vis.checklist"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
