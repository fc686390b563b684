"""Step anatomy records (space/records/anatomy.py): the breakdown, the truth checks, the
schema that refuses files breaking them, and the medians per step kind."""
from __future__ import annotations

import json
import random

import pytest

from space.records.anatomy import (
    FORWARD,
    OTHER,
    PROPOSER,
    REJECTION,
    SCHEDULING,
    PartInterval,
    StepAnatomy,
    breakdown,
    from_json,
    kind_costs,
    problems,
    to_json,
)
from space.records.schema import TraceFormatError, load
from space.records.trace import dumps
from tests.helpers.traces import with_anatomy


def _anatomy(*parts: tuple[str, float, float], forwards: int = 0) -> StepAnatomy:
    return StepAnatomy([PartInterval(p, a, b) for p, a, b in parts], forwards)  # type: ignore[arg-type]


def test_breakdown_puts_the_remainder_in_other():
    a = _anatomy((SCHEDULING, 1.000, 1.001), (FORWARD, 1.002, 1.032), (REJECTION, 1.033, 1.035),
                 (PROPOSER, 1.036, 1.040))
    b = breakdown(a, 0.050)
    assert b[FORWARD] == pytest.approx(0.030) and b[PROPOSER] == pytest.approx(0.004)
    assert b[OTHER] == pytest.approx(0.050 - 0.037)
    assert sum(b.values()) == pytest.approx(0.050)


@pytest.mark.parametrize("parts, expected", [
    (((FORWARD, 1.0, 1.2), (PROPOSER, 1.1, 1.3)), "overlaps"),
    (((FORWARD, 0.9, 1.2),), "before the step"),
    (((FORWARD, 1.0, 2.5),), "ends after the step"),
    (((FORWARD, 1.2, 1.1),), "ends before it starts"),
])
def test_problems_name_what_breaks_the_truth(parts, expected):
    found = problems(_anatomy(*parts), 1.0, 2.0)
    assert any(expected in p for p in found), found


def test_adjacent_parts_inside_the_step_are_fine():
    a = _anatomy((SCHEDULING, 1.0, 1.1), (FORWARD, 1.1, 1.5), (PROPOSER, 1.5, 2.0))
    assert problems(a, 1.0, 2.0) == []
    assert breakdown(a, 1.0)[OTHER] == pytest.approx(0.0)


def test_anatomy_round_trips_through_json_to_the_microsecond():
    run = with_anatomy()
    again = load(dumps(run))
    for s, t in zip(run.steps, again.steps, strict=True):
        assert s.anatomy is not None and t.anatomy is not None
        assert [i.part for i in t.anatomy.intervals] == [i.part for i in s.anatomy.intervals]
        for i, j in zip(s.anatomy.intervals, t.anatomy.intervals, strict=True):
            assert j.start_s == pytest.approx(i.start_s, abs=1e-6)
            assert j.end_s == pytest.approx(i.end_s, abs=1e-6)
        assert problems(t.anatomy, t.start_s, t.end_s) == []


def test_files_store_offsets_in_whole_microseconds():
    d = json.loads(dumps(with_anatomy()))
    a = d["steps"][1]["anatomy"]  # a verify step: 0.2 ms scheduling, then its 9 ms forward
    assert a["parts"][:3] == [SCHEDULING, FORWARD, REJECTION]
    assert a["start_us"][:3] == [0, 200, 9200] and a["end_us"][:3] == [200, 9200, 10200]
    assert "intervals" not in a


def test_flooring_keeps_the_truth_of_parts_that_touch_each_other_and_the_step_end():
    rnd = random.Random(7)
    for _ in range(300):
        start = rnd.uniform(1, 5000)
        cuts = sorted(start + rnd.uniform(0, 0.05) for _ in range(6))
        end = cuts[-1]  # the last part ends exactly with the step
        a = StepAnatomy([PartInterval(FORWARD, x, y) for x, y in zip(cuts, cuts[1:], strict=False)])
        again = from_json(to_json(a, start), start, end)
        assert problems(again, start, end) == []
        assert breakdown(again, end - start)[OTHER] >= 0


def _old_form(d: dict, run) -> dict:
    """``d`` with every anatomy as trace version 5 wrote it (perf_counter intervals)."""
    for s, rec in zip(d["steps"], run.steps, strict=True):
        s["anatomy"] = {"intervals": [{"part": i.part, "start_s": i.start_s, "end_s": i.end_s}
                                      for i in rec.anatomy.intervals], "num_drafter_forwards": 0}
    return d


def test_intervals_written_before_the_compact_form_still_load_exactly():
    run = with_anatomy()
    again = load(json.dumps(_old_form(json.loads(dumps(run)), run)))
    assert [s.anatomy for s in again.steps] == [s.anatomy for s in run.steps]


@pytest.mark.parametrize("mutate, expected", [
    (lambda a: a["parts"].__setitem__(0, "<script>"), "parts[0] must be one of"),
    (lambda a: a["start_us"].__setitem__(0, "soon"), "start_us[0] must be an integer"),
    (lambda a: a["start_us"].__setitem__(0, -5), "start_us[0] must be an integer"),
    (lambda a: a["parts"].append(FORWARD), "parts must be as long as start_us and end_us"),
    (lambda a: a["start_us"].__setitem__(1, 100), "in time order, not overlapping, inside"),
    (lambda a: a["end_us"].__setitem__(-1, 10**9), "in time order, not overlapping, inside"),
    (lambda a: a.update(intervals=[]), "either intervals or parts, start_us and end_us"),
    (lambda a: [a.pop(k) for k in ("parts", "start_us", "end_us")], "either intervals or parts"),
])
def test_schema_refuses_an_anatomy_that_lies(mutate, expected):
    d = json.loads(dumps(with_anatomy()))
    mutate(d["steps"][2]["anatomy"])
    with pytest.raises(TraceFormatError) as err:
        load(json.dumps(d))
    assert expected in str(err.value) and "steps[2].anatomy" in str(err.value)


@pytest.mark.parametrize("mutate, expected", [
    (lambda i: i[0].update(part="<script>"), "intervals[0].part must be one of"),
    (lambda i: i[0].update(start_s="soon"), "intervals[0].start_s must be a finite number"),
    (lambda i: i.append(dict(i[0])), "in time order, not overlapping, inside the step"),
    (lambda i: i[-1].update(end_s=1e9), "in time order, not overlapping, inside the step"),
])
def test_schema_refuses_old_intervals_that_lie(mutate, expected):
    run = with_anatomy()
    d = _old_form(json.loads(dumps(run)), run)
    mutate(d["steps"][2]["anatomy"]["intervals"])
    with pytest.raises(TraceFormatError) as err:
        load(json.dumps(d))
    assert expected in str(err.value) and "steps[2].anatomy" in str(err.value)


def test_kind_costs_are_medians_per_step_kind():
    spec, base = with_anatomy(), with_anatomy(baseline=True)
    costs = kind_costs([base], [spec])
    assert costs.decode_forward_s == pytest.approx(0.006)
    assert costs.verify_forward_s == pytest.approx(0.009)
    assert costs.forward_ratio == pytest.approx(1.5)
    assert costs.rejection_s == pytest.approx(0.001)
    assert costs.proposer_s == pytest.approx(0.0005)
    assert costs.draft_cost_ratio == pytest.approx(0.0005 / 0.010)
    assert costs.verify_tokens == 5


def test_kind_costs_without_anatomy_are_unknown():
    from tests.helpers.traces import ngram_run, short_baseline

    costs = kind_costs([short_baseline()], [ngram_run()])
    assert costs.verify_forward_s is None and costs.forward_ratio is None
    assert costs.draft_cost_ratio is None


def test_build_steps_carries_each_steps_anatomy():
    from types import SimpleNamespace

    from space.engine.build import build_steps

    raw = SimpleNamespace(num_scheduled_tokens=1, num_computed_before=10, num_prompt_tokens=5,
                          draft_token_ids=[], sampled_token_ids=[7], kept_token_ids=[7],
                          output_offset=3, num_placeholder_drafts=0, placeholder_cause=None)
    a = _anatomy((FORWARD, 1.01, 1.05))
    with_times, without = build_steps([raw, raw], [(1.0, 1.1, 0.0, a), (1.1, 1.2, 0.0)])
    assert with_times.anatomy is a and without.anatomy is None
