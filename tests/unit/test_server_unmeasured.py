"""Through a server the draft cost, hardware and dtype are not measured: None end to
end, said in words, deciding nothing (issue 29)."""
from __future__ import annotations

from space.judge.checklist import evaluate
from space.judge.measure import compare_inputs, draft_cost
from space.records.verdict import ALPHA_VS_COST, HARDWARE
from tests.helpers.server_records import server_compare, server_run


def test_a_servers_draft_cost_is_none_not_zero():
    assert draft_cost([server_run()], "ngram", 4) == {"proposer_share": None,
                                                      "draft_step_s": None}


def test_the_checklist_says_not_measured_through_a_server():
    inputs = compare_inputs(server_compare(), temperature=0.0)
    assert inputs.proposer_share is None and inputs.source == "server"
    checklist = evaluate(inputs)
    line = checklist.check(ALPHA_VS_COST)
    assert line.passed is None and line.threshold is None and not line.decisive
    assert "not measured through a server" in line.detail
    hw = checklist.check(HARDWARE)
    assert hw.value is None and "hardware and dtype are theirs" in hw.detail
