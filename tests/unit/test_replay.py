"""space/records/replay.py: a saved trace opens within bounds, and a larger one gets one line."""
from __future__ import annotations

import re

import pytest

from space.records import replay
from space.records.schema import TraceFormatError
from space.records.trace import dumps
from space.ui import views
from tests.helpers.traces import long_compare, ngram_run


def test_a_file_over_the_byte_limit_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:  # sparse: nothing is written, nothing would be read
        f.truncate(replay.MAX_TRACE_BYTES + 1)
    with pytest.raises(TraceFormatError, match=r"too large to replay: 16\.0 MB"):
        replay.read_record(big)


def test_a_record_over_the_step_limit_is_refused(tmp_path, monkeypatch):
    saved = tmp_path / "long.json"
    saved.write_text(dumps(long_compare(30)))
    again = replay.read_record(saved)
    assert len(again.baseline.steps) + len(again.speculative.steps) == 60
    monkeypatch.setattr(replay, "MAX_TRACE_STEPS", 59)
    with pytest.raises(TraceFormatError, match="60 engine steps, more than the 59"):
        replay.read_record(saved)


def test_bad_text_is_one_line(tmp_path):
    saved = tmp_path / "latin1.json"
    saved.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(TraceFormatError, match="not UTF-8 text"):
        replay.read_record(saved)


def test_the_token_view_of_a_long_run_draws_its_head_only():
    cmp = long_compare(views.TOKEN_VIEW_STEPS + 10)
    v = views.render(cmp)
    assert 'data-cut="2000"' in v.token_html and "of 2,010 engine steps" in v.token_html
    drawn = {int(s) for s in re.findall(r'data-step="(\d+)"', v.token_html)}
    assert max(drawn) == views.TOKEN_VIEW_STEPS - 1
    assert views.step_view(cmp, 2005) is not None  # the stepper reaches every step
    short = views.render(ngram_run())
    assert "data-cut" not in short.token_html


def test_the_clis_largest_compare_with_its_anatomy_fits_the_byte_bound(tmp_path):
    """8,192 tokens per engine, one token a step at worst (16,384 steps), every step
    with the nine timed parts a real one has: about 27 MB in the intervals of trace
    version 5, under the bound in the compact form."""
    cmp = long_compare(8192, anatomy=True)
    saved = tmp_path / "largest.json"
    saved.write_text(dumps(cmp))
    assert saved.stat().st_size <= replay.MAX_TRACE_BYTES
    again = replay.read_record(saved)
    assert len(again.baseline.steps) + len(again.speculative.steps) == 16_384
    step = again.speculative.steps[-1]
    assert step.anatomy is not None and len(step.anatomy.intervals) == 9
