"""Fixtures for the pure view tests: fresh copies of the views' hand-made runs
(tests/helpers/traces.py), so a test may change its copy."""
from __future__ import annotations

import pytest

from space.records.trace import RunTrace
from tests.helpers.spans import parse_spans
from tests.helpers.traces import views_baseline, views_run


@pytest.fixture
def spec_trace() -> RunTrace:
    return views_run()


@pytest.fixture
def base_trace() -> RunTrace:
    return views_baseline()


@pytest.fixture
def spans():
    """parse_spans: HTML -> list of token spans (attributes + text)."""
    return parse_spans
