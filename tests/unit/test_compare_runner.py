"""The page's fake engine (tests/helpers/page.py) and the real runner are both a
``space.runs.runner.CompareRunner``: mypy checks the real one; this checks the fake
(mypy does not read the tests), so that the two cannot drift apart."""
from __future__ import annotations

import inspect

import pytest

from space.runs import runner
from space.runs.runner import CompareRunner
from tests.helpers.page import fake_compare

CALL = inspect.signature(CompareRunner.__call__)
WANTED = [p for name, p in CALL.parameters.items() if name != "self"]


@pytest.mark.parametrize("fn", [fake_compare, runner.compare], ids=["fake", "real"])
def test_it_takes_every_argument_the_page_passes_with_the_protocols_types(fn):
    got = inspect.signature(fn)
    for p in WANTED:
        q = got.parameters.get(p.name)
        assert q is not None, f"{fn.__name__} lacks {p.name}"
        assert q.annotation == p.annotation, (p.name, q.annotation, p.annotation)
        if p.kind is p.KEYWORD_ONLY:
            assert q.kind in (q.POSITIONAL_OR_KEYWORD, q.KEYWORD_ONLY), p.name
    assert got.return_annotation == CALL.return_annotation
    # nothing more is required: the page passes no other argument
    extra = [n for n, q in got.parameters.items()
             if n not in CALL.parameters and q.default is q.empty]
    assert extra == []
