"""Plain-text descriptions of records (vis/text.py)."""
from __future__ import annotations

import dataclasses

import pytest

from space.records.trace import make_compare
from tests.helpers.traces import ngram_run, run_config, short_baseline
from vis import text


@pytest.fixture
def cmp():
    return make_compare([short_baseline()], [ngram_run()])


def test_summary_names_the_config(cmp):
    cmp.speculative = dataclasses.replace(cmp.speculative, config=run_config({
        "speculative_config": {"method": "ngram", "num_speculative_tokens": 4},
        "model_path": "/c/SmolLM2-135M-Instruct", "device": "cpu"}))
    assert text.summary(cmp).startswith("ngram, k=4, on SmolLM2-135M-Instruct (cpu)")

