"""SpecCounts: one mechanism for run-level counts, from steps or vLLM's metrics."""
from __future__ import annotations

from space.records.counts import SpecCounts


def test_per_step_arrays_and_the_summary_give_the_same_counts():
    """At detailed the arrays; at summary the totals and the histogram
    (histogram[j]: verify steps that accepted j drafts)."""
    detailed = {"num_spec_steps": 3, "num_draft_tokens": 12, "num_accepted_draft_tokens": 5,
                "per_step_accepted": [4, 1, 0], "per_step_drafted": [4, 4, 4],
                "acceptance_histogram": [1, 1, 0, 0, 1]}
    summary = {k: v for k, v in detailed.items() if not k.startswith("per_step")}
    assert SpecCounts.from_vllm_metrics(detailed) == SpecCounts.from_vllm_metrics(summary) \
        == SpecCounts(3, 12, 5, (2, 1, 1, 1))
    c = SpecCounts.from_per_step([4, 1, 0], [4, 4, 4])
    assert (c.acceptance_rate, c.mean_acceptance_length) == (5 / 12, 1 + 5 / 3)


def test_no_metrics_no_counts():
    assert SpecCounts.from_vllm_metrics(None) is None
    assert SpecCounts.from_vllm_metrics({"num_spec_steps": "3"}) is None
    none = SpecCounts.from_per_step([], [])
    assert none.acceptance_rate is None and none.mean_acceptance_length is None
    assert none.per_position_acceptance == []
