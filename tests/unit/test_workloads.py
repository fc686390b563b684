"""space/runs/workloads.py without an engine: requests, medians over prompts, and
which model pairs run here."""
from __future__ import annotations

import pytest

from space.runs import presets
from space.runs.workloads import PromptResult, WorkloadResult, pair_status, requests_for, summarize
from tests.helpers.traces import compare_with_repeats, timed_baseline, timed_run


def test_requests_cycle_prompts_for_concurrency():
    w = presets.get_workload("concurrency")
    reqs = requests_for(w, concurrency=4, max_tokens=24)
    ids = [i for i, _ in reqs]
    first = w.prompts[0].id
    assert ids[0] == f"{first}#1" and ids[3] == f"{first}#4" and len(ids) == 4
    assert [r.seed for _, r in reqs] == [0, 1, 2, 3]
    assert all(r.max_tokens == 24 and r.temperature == w.temperature for _, r in reqs)
    single = requests_for(presets.get_workload("code_editing"), temperature=0.5)
    assert [i for i, _ in single] == [p.id for p in presets.get_workload("code_editing").prompts]
    assert all(r.temperature == 0.5 for _, r in single)


def test_summarize_takes_medians_over_prompts():
    cmps = [compare_with_repeats(timed_baseline(), timed_run(), [0.010], [t]) for t in (0.005, 0.010, 0.020)]
    for c, s in zip(cmps, (2.0, 1.0, 0.5), strict=False):
        c.speedup = s
    r = WorkloadResult("w", cmps[0].speculative.config, 0.0, 48, 1, 1,
                       [PromptResult(f"p{i}", c) for i, c in enumerate(cmps)])
    summarize(r)
    assert r.speedup == 1.0 and r.speedup_spread == (0.5, 2.0)
    assert r.speculative_tpot_s == pytest.approx(0.010)
    assert r.throughput_speedup == pytest.approx(1.0)
    assert r.acceptance_rate == pytest.approx(0.75)  # pooled: 18 of 24 drafts
    assert len(r.rows()) == 3 and r.rows()[0]["prompt"] == "p0"
    back = WorkloadResult.from_dict(r.to_dict())
    assert back.speedup == r.speedup and back.items[1].compare.speedup == 1.0


def test_pair_status_on_cpu():
    pairs = {p.id: p for p in presets.load_model_pairs()}
    assert pair_status(pairs["cpu-ngram"], on_gpu=False).available
    suffix = pair_status(pairs["cpu-suffix"], on_gpu=False)
    assert not suffix.available and "arctic-inference" in suffix.reason
    for p in pairs.values():
        if p.needs_gpu:
            st = pair_status(p, on_gpu=False)
            assert not st.available and "GPU" in st.reason
